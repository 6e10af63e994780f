import Dispatch
import ENCore
import ENStore
import ENSystemd

/// Advertises the device's rotating identifier, scans on a schedule and records what it hears.
///
/// Runs on its serial queue, which it shares with its radio (it calls the radio there, and the
/// radio hands it what it hears there); `report(_:)` may be called from any thread. Its mutable
/// state and the key schedule live in `onQueue`, bound to that queue. Sightings are written on a
/// queue of their own (`SightingWriter`).
public final class RadioAgent: RadioListener {
    private let queue: DispatchQueue
    private let radio: any Radio
    private let store: any RadioAgentStore
    private let writer: SightingWriter
    private let clock: any AgentClock
    private let schedule: RadioSchedule
    private let metadata: Metadata
    private let logger: Logger
    private let onQueue: QueueBound<Confined>

    /// What the agent changes as it runs, on `queue` only: the key schedule, the advertiser's and
    /// the scan's states, and one part for each concern of theirs.
    private struct Confined {
        let keys: KeySchedule
        /// Where the advertisement is; `.idle` while the agent is not running.
        let advertiser: Advertiser
        let scan: Scanner
        var rotation = Rotation()
        var cycle = ScanCycle()
        var backlog = StoreBacklog()
        var recoveryPending = false
        /// The state `onChange` last heard.
        var published = RadioState()
    }

    /// What the rotations of the identifier keep between them.
    private struct Rotation {
        var timer: (any DispatchSourceTimer)?
        var lastOnAir = LastOnAir.unread
        /// The RPI of a key rolled for an advertisement the radio then refused (bluetoothd offers an
        /// adapter before it powers it on): it never went on the air, so the retry in the same
        /// interval uses it instead of spending another of the day's keys.
        var rolledButNotAired: RollingProximityIdentifier?
        /// The device's own last RPIs, so that it never records itself even just after a rotation.
        var ownIdentifiers = [RollingProximityIdentifier]()
        /// The radio's last refusal of an advertisement, until one is accepted (`logRefusal`).
        var lastRefusal: String?
        /// The radio's loss was logged since the last advertisement: an outage is logged once.
        var lossLogged = false
    }

    /// The interval whose RPI was last put on the air, as the store keeps it across restarts.
    /// Until the store has said, nothing is advertised: both guards against an identifier going
    /// on the air twice (the clock gone back, a restart within the interval) compare with it.
    private enum LastOnAir: Equatable {
        case unread
        case never
        case interval(ENIntervalNumber)

        init(_ interval: ENIntervalNumber?) { self = interval.map(Self.interval) ?? .never }

        /// The interval; nil while unread or when none was on the air.
        var interval: ENIntervalNumber? { if case .interval(let interval) = self { interval } else { nil } }
    }

    /// The scan schedule's cycle.
    private struct ScanCycle {
        var timer: (any DispatchSourceTimer)?
        /// The first reception since the radio was last asked for what may start the scan (a
        /// start, or the advertisement a scan waits for): the scan ran by then.
        var firstHeardSinceAsked: Int64?
        /// When the scan of the current cycle first ran; nil while none has.
        var startedAt: Int64?
        /// Sightings started in the current scan, and the receptions refused beyond
        /// `maximumSightingsPerScan` (of identifiers without a sighting of this scan to join).
        var sightings = 0
        var dropped = 0
        /// The radio's last refusal of a scan, until one starts (`logRefusal`).
        var lastRefusal: String?
    }

    /// What the writer has not been handed yet, and what the store's last answers were.
    private struct StoreBacklog {
        /// What the radio heard since the last hand-over to the writer: each identifier's
        /// receptions of a scan merged into one sighting (`MergedSightings`).
        var pending = MergedSightings()
        /// The scans that ended since the last hand-over: the store keeps every scan, also one
        /// that heard nothing, since detection weighs a sighting by the time since the scan
        /// before its own.
        var endedScans = [ClosedRange<Int64>]()
        /// The last write to the store failed (a full disk): nothing is advertised, since neither a
        /// new key nor the interval on the air could be kept, and sightings wait in memory.
        var storeFailing = false
        /// The store refused sightings, the disk below its reserve (`DiskReserve`): they wait in
        /// memory, and the advertisement goes on, its key and interval written in the reserve.
        var waitsForDisk = false
    }

    private var my: Confined {
        get { onQueue.value }
        _modify { yield &onQueue.value }
    }

    /// The radio's state as the status shows it, derived from what the radio does and the
    /// agent's own states; `onChange` hears of it once each piece of work on the queue is done
    /// (`changing`).
    private var state: RadioState {
        RadioState(activity: radio.activity, advertiser: my.advertiser.state, scan: my.scan.state, storeFailing: my.backlog.storeFailing,
                   sightingsWaitForDisk: my.backlog.waitsForDisk)
    }
    private let onChange: (@Sendable (RadioState) -> Void)?

    private var running: Bool { my.advertiser.state != .idle }
    private var onAir: Bool { my.advertiser.state.isOnAir }

    /// Runs `body` (on the queue) and tells `onChange` of the state it leaves, if that differs: the
    /// steps in between are no status (a recovery whose rotation waits for a later interval, then
    /// whose scan finds no adapter, is `no-adapter`, never `waiting-for-interval` for a moment).
    private func changing<T>(_ body: () throws -> T) rethrows -> T {
        defer { publish(state) }
        return try body()
    }

    /// Tells `onChange` of `shown`, unless it is what it heard last.
    private func publish(_ shown: RadioState) {
        guard shown != my.published else { return }
        my.published = shown
        onChange?(shown)
    }

    private func async(_ body: @escaping @Sendable () -> Void) {
        queue.async { [self] in changing(body) }
    }

    /// Sightings started in one scan at most: the store grows by at most this many rows per
    /// scan, whatever the air carries; receptions of identifiers beyond are counted and dropped,
    /// those of an identifier with a sighting of the scan join it. A sighting is an identifier's
    /// receptions within 25.5 s (Google's scan cycle, a new one at most every `shortestPauseSeconds`),
    /// so `crowdRecordedWhole` advertisers make as many sightings in the standard 4-second scan and
    /// 12 times as many in the longest enagent.conf allows (300 s, continuous): all of them are
    /// recorded in any scan. Memory: a sighting in the buffer takes about 190 bytes and 3 a
    /// reception, so a scan at the bound (12,000) holds about 2.8 MB at 15 receptions each, and at
    /// most about 11.5 MB (255 receptions each, `SightingRecord.maximumReceptions`).
    public static let maximumSightingsPerScan = crowdRecordedWhole
        * (ScanIntervalSeconds.range.upperBound / RadioSchedule.shortestPauseSeconds + 1)
    /// The advertisers around one scan that it records whole (issue 56).
    public static let crowdRecordedWhole = 1_000
    /// While the store cannot be written, try again this often.
    static let storeRetrySeconds = 10.0
    /// Own RPIs remembered, so that the device never records itself even just after a rotation.
    static let ownIdentifierMemory = 4
    /// After the radio refused, try again this soon (bluetoothd may be restarting).
    static let retrySeconds = 1.0
    /// While another write holds the store, a rotation tries again this soon.
    static let busyStoreRetrySeconds = 0.1
    /// The scan's pause when the agent steps aside for another program's advertisement on a
    /// legacy controller: longer than the kernel's turn of 2 s (`adapterUnfitForAdvertising`).
    static let sharedAdapterScanPause = 2.5
    /// A recovery waits this long for the rest of the radio's return to arrive.
    static let recoveryDelay = DispatchTimeInterval.milliseconds(300)
    /// How often a wait caused by the clock going back looks at the clock again.
    static let steppedClockRecheckSeconds = 60.0

    /// `queue`: the radio's (a radio bound to a queue is called on that one only).
    public init(radio: any Radio, keys: KeySchedule, store: any RadioAgentStore, clock: any AgentClock, schedule: RadioSchedule, metadata: Metadata,
                logger: Logger, queue: DispatchQueue = DispatchQueue(label: "enagent.radio"), onChange: (@Sendable (RadioState) -> Void)? = nil) {
        self.onChange = onChange
        self.queue = queue
        onQueue = QueueBound(Confined(keys: keys, advertiser: Advertiser(logger: logger), scan: Scanner(logger: logger)), queue: queue)
        self.radio = radio
        self.store = store
        writer = SightingWriter(store: store)
        self.clock = clock
        self.schedule = schedule
        self.metadata = metadata
        self.logger = logger
        queue.setSpecific(key: Self.agentQueue, value: ObjectIdentifier(self))
    }

    /// Starts advertising and scanning.
    public func start() {
        queue.sync { changing {
            rotate()  // which leaves the advertiser in a running state, whatever happens
            scanCycle()
        } }
    }

    /// Stops the radio at once and writes the sightings still pending; returns once they are
    /// written (or refused).
    public func stop() {
        queue.sync { changing {
            my.rotation.timer?.cancel()
            my.cycle.timer?.cancel()
            enter(.idle, because: "the agent stopped")
            endScan(because: "the agent stopped")
        } }
        writer.drain()
    }

    /// The radio went away (bluetoothd stopped, the adapter vanished): it took the advertisement
    /// and the scan with it. A stopped agent has nothing on the air and stays stopped.
    public func radioLost() {
        async { [self] in
            guard running else { return }
            // Once per outage: it lasts until the next advertisement.
            if !my.rotation.lossLogged && my.advertiser.state != .asleep {
                logger.notice("radio lost: the adapter went away or was switched off", event: .radioLost)
                my.rotation.lossLogged = true
            }
            // The kernel keeps an instance across a power cycle and enables it again at power-on, on
            // a legacy controller from a fresh address: the RPI on the air before the loss would go
            // out from a second address. The agent's return brings a new RPI instead (`enter`
            // takes the advertisement off); the radio's activity says why there is none.
            enter(.offAir, because: "the adapter went away or was switched off")
            // A scan that waits for the advertisement waits on: the recovery starts the scan anew.
            if radio.activity.scan != .waitingForAdvertisement { enterScan(.stopped, because: "the radio went away") }
        }
    }

    /// Advertises and scans afresh (the radio came back, e.g. after bluetoothd restarted). Calls
    /// that arrive together (bluetoothd and its adapters appear within moments) make one recovery;
    /// one with no loss before it only scans anew.
    public func radioReturned() {
        async { [self] in
            guard running, !my.recoveryPending else { return }
            my.recoveryPending = true
            queue.asyncAfter(deadline: .now() + Self.recoveryDelay) { [self] in changing {
                my.recoveryPending = false
                guard running else { return }
                // A return without a loss (an adapter reporting itself powered) leaves the
                // advertisement on the air as it is.
                if !onAir {
                    logger.notice("radio available again: advertising and scanning anew", event: .radioBack)
                    rotate()
                }
                enterScan(.stopped, because: "the radio returned")
                scanCycle()
            } }
        }
    }

    /// The machine is about to sleep (systemd-logind's PrepareForSleep): the advertisement comes
    /// off the air first, since at resume the kernel enables the instance it kept again, from a new
    /// address and hours past its interval, before any program runs. The scan ends, its sightings
    /// are written, and the wake-up (`radioReturned`) brings a fresh identifier. `done` runs once
    /// all that is done, whatever happened (it lets the machine sleep).
    public func prepareForSleep(then done: @escaping @Sendable () -> Void) {
        async { [self] in
            guard running else { return done() }
            my.rotation.timer?.cancel()
            my.cycle.timer?.cancel()
            // The advertisement first (`enter` takes it off): logind's delay may be short.
            enter(.asleep, because: "the system is going to sleep")
            endScan(because: "the system is going to sleep")
            logger.info("the system is going to sleep: advertisement and scan stopped until it wakes")
            writer.afterWrites(done)
        }
    }

    /// Another program removed the advertisement (bluetoothd removes every instance as it starts,
    /// also one the agent's recovery put out while it was starting): a fresh one, as after a loss.
    public func advertisementRemoved() {
        async { [self] in
            guard onAir else { return }
            logger.notice("the advertisement was removed by another program (bluetoothd removes them all as it starts): advertising anew")
            // Not a loss of the radio: one that follows (the adapter switched off) is logged as such.
            enter(.offAir, because: "another program removed the advertisement")
            scheduleRotation(in: Self.retrySeconds / 4)
        }
    }

    /// The radio's scan ended without the agent (its monitor removed by another program, or a
    /// pause for an advertisement that could not resume it): a new scan cycle starts at once. A
    /// radio that scans again by the time the word is taken runs a later scan, which the agent
    /// started meanwhile: in the RootCanal crowd's faults (2026-11-30 12:53) the end of
    /// bluetoothd's discovery was told while the next start waited 10 s on bluetoothd, and taken
    /// after that start had put a passive scan on; it ended that scan's record at the old scan's
    /// end and started another, and the 306 sightings heard between lay outside every recorded scan.
    public func scanStopped() {
        // The record ends when the scan did: the radio may tell of it in the middle of a call.
        let time = clock.now
        async { [self] in
            guard running, my.scan.state == .started, radio.activity.scan != .running else { return }
            enterScan(.stopped, because: "the radio's scan ended without the agent", endedAt: time)
            scanCycle()
        }
    }

    /// What the radio does changed (`Radio.activity`): the status follows, and a scan the radio
    /// started by itself (one that waited for the kernel's word, or resumed after a pause) begins
    /// the cycle's record. A scan that stops running is shown at once, also in the middle of the
    /// agent's call: the call may wait on bluetoothd (10 s when it stalls), and the status must not
    /// say Scanning meanwhile (the RootCanal crowd's status polls caught it). The rest is shown
    /// when the work in hand is done.
    public func radioChanged() {
        if DispatchQueue.getSpecific(key: Self.agentQueue) == ObjectIdentifier(self), my.published.scanning, radio.activity.scan != .running {
            publish(my.published.withScanEnded)
        }
        async { [self] in noteScanRunning() }
    }

    /// The wall clock was stepped (the daemon's upkeep noticed): an identifier for the time it
    /// reads now, or the wait for a later interval, at once rather than at the next rotation.
    /// Nothing changes while it still reads the interval on the air.
    public func clockStepped() {
        async { [self] in
            guard running, ENIntervalNumber(unixSeconds: clock.now) != my.rotation.lastOnAir.interval else { return }
            rotate()
        }
    }

    /// The adapter advertising changed so that the advertisement must come off the air at once,
    /// before anything else (`problem` says why): it turned connectable, which puts the
    /// advertisement in connectable PDUs (from the adapter's own address on a legacy controller),
    /// or another program added an advertisement to a legacy adapter, whose set the kernel then
    /// lends in turns, from a new address each turn. The rotation tries every second until the
    /// adapter is fit again (a new RPI then).
    public func adapterUnfitForAdvertising(_ problem: AgentStatus, because reason: String) {
        async { [self] in
            guard onAir else { return }
            enter(.offAir, because: reason)
            logger.warning("\(reason): the advertisement taken off the air")
            scheduleRotation(in: Self.retrySeconds)
            if problem.entry.scanYieldsToOthers && my.scan.state == .started && radio.activity.scan == .running {
                // The kernel puts the other advertisement on the one set from a new random
                // address, which the controller refuses while a scan runs, and tries again every
                // 2 s: the scan waits for one such turn (the lab saw the other kept off for 4 s).
                my.cycle.timer?.cancel()
                endScan(because: "another program's advertisement needs the adapter's set")
                my.cycle.timer = timer(after: Self.sharedAdapterScanPause) { [self] in scanCycle() }
            }
        }
    }

    /// Answers once the agent's queue has run everything before, and the writes handed over
    /// are done: a wedged queue or a hung write never answers, which is what the watchdog is for.
    public var isResponsive: Bool {
        queue.sync {}
        writer.drain()
        return true
    }

    /// Takes one reception from the radio: at once on the agent's queue, where the radio hands
    /// its receptions over (a crowd's thousands a second, each a block of its own, queued the
    /// timers of rotation and scan minutes behind them in the RootCanal crowd lab), else on it.
    public func report(_ report: RadioReport) {
        let time = clock.now
        guard DispatchQueue.getSpecific(key: Self.agentQueue) == ObjectIdentifier(self) else {
            return async { [self] in take(report, at: time) }
        }
        take(report, at: time)
    }

    /// Marks the agent's queue with the agent, so that `report` knows when it runs there. Made
    /// once and never changed; Dispatch on Linux does not mark its keys Sendable.
    nonisolated(unsafe) private static let agentQueue = DispatchSpecificKey<ObjectIdentifier>()

    /// A reception heard at `time`, on the queue: it changes no state the status shows.
    private func take(_ report: RadioReport, at time: Int64) {
        guard report.serviceData.count == 20 else {
            logger.debug("ignoring FD6F service data of \(report.serviceData.count) bytes (expected 20)", metadata: ["adapter": "\(report.adapter)"])
            return
        }
        let rpi = report.serviceData.withUnsafeBytes { Bytes16($0) }
        guard !my.rotation.ownIdentifiers.contains(rpi) else { return }
        if my.cycle.startedAt == nil && my.cycle.firstHeardSinceAsked == nil { my.cycle.firstHeardSinceAsked = time }
        let sighting = Sighting(rpi: rpi, aem: AssociatedEncryptedMetadata(bytes: report.serviceData[16...])!,
                                rssi: report.rssi.flatMap(Sighting.rssi(reported:)), time: time, adapter: report.adapter,
                                adapterAddress: report.adapterAddress)
        guard !my.backlog.pending.merge(sighting) else { return }
        guard my.cycle.sightings < Self.maximumSightingsPerScan else {
            my.cycle.dropped += 1
            return
        }
        my.cycle.sightings += 1
        my.backlog.pending.start(sighting)
    }

    // MARK: On the queue

    /// Scans on, but advertises nothing until `time` (unix seconds), and says so.
    private func waitForLaterInterval(until time: Int64, because reason: String) {
        enter(.waitingForInterval(resumesAt: time), because: reason)
        logger.notice("not advertising until \(time) (unix time): \(reason)")
    }

    /// Reads the last interval on the air from the store, unless it did already; says so and
    /// returns false when it cannot (the rotation tries again later).
    private func readAdvertisedInterval() -> Bool {
        guard my.rotation.lastOnAir == .unread else { return true }
        do {
            my.rotation.lastOnAir = LastOnAir(try store.value(StoreSettings.advertisedInterval).map { ENIntervalNumber($0) })
            return true
        } catch {
            if my.advertiser.state != .storeRefused(.lastIntervalUnknown) {
                logger.error("not advertising: cannot tell which interval's identifier was last on the air, and without it one could go out twice; "
                             + "trying again every \(Int(Self.storeRetrySeconds)) s: \(error)")
            }
            enter(.storeRefused(.lastIntervalUnknown), because: "the store cannot say which interval was last on the air")
            return false
        }
    }

    private func rotate() {
        guard readAdvertisedInterval() else { return scheduleRotation(in: Self.storeRetrySeconds) }
        let now = clock.now
        // No later than the start of the next TEK, which brings a new identifier at once.
        let nextKey = (ENIntervalNumber(unixSeconds: now)?.rollingPeriodStart.unixSeconds ?? now) + UTCDay.seconds
        let untilNextKey = clock.realSeconds(until: nextKey)
        var nextIn = min(Double(Int.random(in: schedule.rotationSeconds)), untilNextKey)
        let previouslyAdvertised = my.rotation.lastOnAir.interval
        do {
            // The clock went back (a step, or a restart under an earlier time): this interval's
            // identifier may have been on the air, and a second key for a day that has one would
            // be published beside it. Nothing goes out until the clock is past the last interval
            // on the air; the wait is rechecked every minute in case the clock steps forward again.
            if let interval = ENIntervalNumber(unixSeconds: now), let last = my.rotation.lastOnAir.interval, interval < last {
                let resumesAt = last.unixSeconds + ENIntervalNumber.secondsPerInterval
                waitForLaterInterval(until: resumesAt, because: "the clock reads \(now), before the last interval on the air (\(last))")
                return scheduleRotation(in: min(clock.realSeconds(until: resumesAt), Self.steppedClockRecheckSeconds))
            }
            var broadcast = try my.keys.broadcast(metadata: metadata, at: now)
            // An RPI that went on the air before (before a restart of this agent or of bluetoothd)
            // came from an address that is gone: a new address must come with a new RPI. A fresh
            // key for the rest of the day gives one at once; past the day's limit of keys, the
            // next interval brings one.
            let repeated = broadcast.interval == my.rotation.lastOnAir.interval && broadcast.rpi != my.rotation.rolledButNotAired
            let rolled = try repeated && my.keys.rollKey(at: now) != nil
            if repeated && !rolled {
                let resumesAt = broadcast.interval.unixSeconds + ENIntervalNumber.secondsPerInterval
                nextIn = min(clock.realSeconds(until: resumesAt), untilNextKey)
                waitForLaterInterval(until: resumesAt, because: "this interval's identifier was on the air before the restart and the day has \(KeySchedule.maximumKeysPerDay) keys already")
            } else {
                if rolled {
                    broadcast = try my.keys.broadcast(metadata: metadata, at: now)
                    my.rotation.rolledButNotAired = broadcast.rpi
                    logger.info("rolled to a fresh key for the rest of the day: this interval's identifier was on the air before the restart")
                }
                // Not waiting for another write (a scan's sightings): the radio's events wait with
                // this queue, and in the RootCanal crowd an adapter turned connectable went unheeded
                // for 2.3 s while a rotation waited for the store.
                guard try store.setUnlessBusy(StoreSettings.advertisedInterval, to: broadcast.interval.rawValue) else {
                    logger.debug("the rotation waits for the store, which another write holds")
                    return scheduleRotation(in: Self.busyStoreRetrySeconds)
                }
                my.rotation.lastOnAir = .interval(broadcast.interval)
                var advertised = broadcast, sent = metadata
                my.cycle.firstHeardSinceAsked = nil
                try radio.advertise { [self] selectedPower in
                    // The metadata carries the TX power the controller chose for this advertisement.
                    if let selectedPower, selectedPower != sent.transmitPower {
                        sent.transmitPower = selectedPower
                        advertised = try my.keys.broadcast(metadata: sent, at: now)
                    }
                    return advertised.serviceData
                }
                enter(.onAir(interval: advertised.interval), because: rolled ? "a fresh key's identifier" : "a new identifier")
                noteScanRunning()
                my.rotation.lastRefusal = nil
                my.rotation.lossLogged = false
                my.rotation.rolledButNotAired = nil
                my.backlog.storeFailing = false
                my.rotation.ownIdentifiers.append(advertised.rpi)
                my.rotation.ownIdentifiers = Array(my.rotation.ownIdentifiers.suffix(Self.ownIdentifierMemory))
                logger.info("advertising a new identifier", metadata: ["interval": "\(advertised.interval)",
                                                                      "tx-power": "\(sent.transmitPower) dBm"])
            }
        } catch {
            // A radio that refused put nothing on the air: this interval's RPI may still go out.
            // Unless the store forgets it again: then it counts as on the air, which costs at
            // most a fresh key, where forgetting it in memory only would let it out twice after a restart.
            if let attempted = my.rotation.lastOnAir.interval, attempted != previouslyAdvertised {
                do {
                    try store.set(StoreSettings.advertisedInterval, to: previouslyAdvertised?.rawValue)
                    my.rotation.lastOnAir = LastOnAir(previouslyAdvertised)
                } catch {
                    logger.error("cannot undo noting interval \(attempted) as on the air, so it counts as used: \(error)")
                }
            }
            if let error = error as? StoreError {
                storeFailed(error, doing: "store the key or the interval on the air, so not advertising")
                enter(.storeRefused(.storeUnwritable), because: "the store cannot keep the key or the interval on the air")
                nextIn = Self.storeRetrySeconds
            } else if error is any RadioPostponement {
                // The radio left the air as it was, and so the status: the previous identifier stays on.
                logOnce("\(error)", at: .info, last: \.rotation.lastRefusal)
                nextIn = Self.retrySeconds
            } else {
                // The radio's activity says why.
                enter(.offAir, because: "the radio refused the advertisement")
                logRefusal(error, cannot: "advertise", last: \.rotation.lastRefusal)
                nextIn = Self.retrySeconds
            }
        }
        scheduleRotation(in: nextIn)
    }

    /// Moves the advertiser to `new`, with the entry action every state but on-air shares: the
    /// advertisement comes off the air as the agent leaves on-air, so that what the status does
    /// not show as advertising is not on the air.
    private func enter(_ new: AdvertiserState, because reason: @autoclosure () -> String) {
        if onAir && !new.isOnAir { stopAdvertising() }
        my.advertiser.enter(new, because: reason())
    }

    /// Moves the scan to `new`. A cycle's scan is one scan of the device's from the moment it first
    /// runs (`noteScanRunning`) to the moment it stops, its pieces (`continuesCycle`) and a wait for
    /// the advertisement within it included.
    private func enterScan(_ new: ScanState, because reason: @autoclosure () -> String, continuesCycle: Bool = false, endedAt: Int64? = nil) {
        if new != .started && !continuesCycle { endScanRecord(continuing: false, at: endedAt) }
        my.scan.enter(new, because: reason())
    }

    /// Begins the cycle's record once the scan the agent wants first runs: now, or at the first
    /// reception since the radio was asked, if earlier. A controller reports what it hears as soon
    /// as its scan is enabled, before the radio returns (RootCanal's first reports came 0.0–0.2 s
    /// after the enable, while BlueZRadio waited for the kernel's Discovering event), so no
    /// sighting falls before its scan; and a call that waited on bluetoothd does not count as
    /// scan time (the RootCanal crowd's record of one of b's scans began 10.1 s before the scan
    /// did, when it began at the ask).
    private func noteScanRunning() {
        guard my.scan.state == .started, my.cycle.startedAt == nil, radio.activity.scan == .running else { return }
        let now = clock.now
        my.cycle.startedAt = min(now, my.cycle.firstHeardSinceAsked ?? now)
        logger.debug("scan: the radio runs it (a scan cycle)")
    }

    /// Notes the scan recorded so far as ended now, or at `endedAt` (its cycle is over); a
    /// continuous scan, which runs on into the next cycle, starts that cycle's record at once. The
    /// next scan's receptions start sightings of their own.
    private func endScanRecord(continuing: Bool, at endedAt: Int64? = nil) {
        my.backlog.pending.closeAll()
        guard let started = my.cycle.startedAt else { return }
        let now = clock.now
        my.backlog.endedScans.append(started...max(started, endedAt ?? now))
        my.cycle.startedAt = continuing ? now : nil
    }

    /// Stopping cannot be undone or usefully retried here: a radio that fails to stop is logged.
    private func stopAdvertising() {
        do { try radio.stopAdvertising() } catch { logger.error("cannot take the advertisement off the air, so its identifier may still go out: \(error)") }
    }

    /// Ends the scan running, if any, and writes what it heard; a piece of a longer scan
    /// (`continuesCycle`) leaves it for the scan's end, so that the next piece's receptions join
    /// their identifiers' sightings.
    private func endScan(because reason: @autoclosure () -> String, continuesCycle: Bool = false) {
        if my.scan.state == .started { stopScanning() }
        enterScan(.stopped, because: reason(), continuesCycle: continuesCycle)
        if !continuesCycle { flush() }
    }

    private func stopScanning() {
        do { try radio.stopScanning() } catch { logger.warning("cannot end the scan (the next may miss advertisers seen in this one): \(error)") }
    }

    private func scheduleRotation(in seconds: Double) {
        my.rotation.timer?.cancel()
        my.rotation.timer = timer(after: max(0.05, seconds)) { [self] in rotate() }
    }

    private func scanCycle() {
        my.cycle.timer?.cancel()
        if my.cycle.dropped > 0 {
            logger.warning("a crowd: \(my.cycle.dropped) receptions beyond the \(Self.maximumSightingsPerScan) sightings kept per scan were dropped")
        }
        my.cycle.sightings = 0
        my.cycle.dropped = 0
        guard beginScan() else { return }
        let continuous = schedule.scanSeconds >= schedule.scanIntervalSeconds
        scan(for: Double(continuous ? schedule.scanIntervalSeconds : schedule.scanSeconds), continuous: continuous)
    }

    /// Starts the radio's scan unless one runs or waits; false when the radio refused it, and a
    /// new cycle is due after `retrySeconds`.
    private func beginScan() -> Bool {
        do {
            if my.scan.state != .started {
                my.cycle.firstHeardSinceAsked = nil
                try radio.startScanning()
                enterScan(.started, because: "a scan cycle")
                noteScanRunning()
            }
            my.cycle.lastRefusal = nil
            return true
        } catch let error as any RadioPostponement {
            // Nothing changed on the radio, nor in the status: the scan is asked for again shortly.
            logOnce("\(error)", at: .info, last: \.cycle.lastRefusal)
            my.cycle.timer = timer(after: Self.retrySeconds) { [self] in scanCycle() }
            return false
        } catch {
            // Shown until a scan starts, over what holds the advertisement back (`RadioState`).
            // The radio's activity says why.
            enterScan(.refused, because: "the radio refused the scan")
            logRefusal(error, cannot: "scan", last: \.cycle.lastRefusal)
            my.cycle.timer = timer(after: Self.retrySeconds) { [self] in scanCycle() }
            return false
        }
    }

    /// Lets the scan run `seconds`, in pieces no longer than the radio allows, each one started
    /// by the radio afresh (`Radio.longestScanSeconds`); a continuous scan is only flushed at the
    /// end of its cycle when it has no such bound.
    private func scan(for seconds: Double, continuous: Bool) {
        if let longest = radio.longestScanSeconds, seconds > longest {
            my.cycle.timer = timer(after: longest) { [self] in
                endScan(because: "a piece of the scan is over", continuesCycle: true)
                guard beginScan() else { return }
                scan(for: seconds - longest, continuous: continuous)
            }
            return
        }
        my.cycle.timer = timer(after: seconds) { [self] in
            if continuous && radio.longestScanSeconds == nil {
                endScanRecord(continuing: true)
                flush()
            } else {
                endScan(because: "the scan's time is over")
            }
            let pause = continuous ? 0 : schedule.scanIntervalSeconds - schedule.scanSeconds
            my.cycle.timer = timer(after: Double(pause)) { [self] in scanCycle() }
        }
    }

    /// Hands the sightings waiting and the scans ended to the writer; sightings go with the scan
    /// they were heard in as far as it went, so that none is stored without it.
    private func flush() {
        guard !my.backlog.pending.isEmpty || !my.backlog.endedScans.isEmpty else { return }
        let running = my.backlog.pending.isEmpty ? nil : my.cycle.startedAt.map { $0...max($0, clock.now) }
        writer.write(my.backlog.pending, scans: my.backlog.endedScans + (running.map { [$0] } ?? [])) { [self] outcome in
            async { [self] in stored(outcome) }
        }
        my.backlog.pending.removeAll()
        my.backlog.endedScans.removeAll()
    }

    /// Takes the writer's word on a write: the status and the journal follow the store.
    private func stored(_ outcome: SightingWriter.Outcome) {
        switch outcome {
        case .written(let sightings, let scans, let dropped):
            logger.debug("stored \(sightings) sightings and \(scans) ended scans")
            if dropped > 0 { logger.warning("\(dropped) sightings were dropped while the database could not take them") }
            if my.backlog.waitsForDisk {
                my.backlog.waitsForDisk = false
                logger.notice("the disk has room above its reserve again: sightings are written")
            }
            if my.backlog.storeFailing {
                my.backlog.storeFailing = false
                logger.notice("the database can be written again")
                if running && !onAir { rotate() }
            }
        case .refused(.belowDiskReserve(let path, let free, let reserve), let held):
            if !my.backlog.waitsForDisk {
                logger.warning("\(StoreError.belowDiskReserve(path: path, free: free, reserve: reserve)) Keeping \(held) sightings in memory "
                               + "(at most \(SightingWriter.maximumHeld)); advertising goes on.")
                my.backlog.waitsForDisk = true
            }
        case .refused(let error, let held):
            storeFailed(error, doing: "store \(held) sightings, keeping them in memory (at most \(SightingWriter.maximumHeld))")
        }
    }

    /// Logs a refusal of the radio's, which is retried every second: the same refusal as the last
    /// (an adapter connectable or blocked for hours) goes to the journal once, then at debug level.
    private func logRefusal(_ error: any Error, cannot what: String, last: WritableKeyPath<Confined, String?>) {
        logOnce("cannot \(what): \(error)", at: .error, last: last)
    }

    /// Logs `message` at `level` when it differs from the last one kept at `last`, else as "still …"
    /// at debug level: a retry every second does not fill the journal.
    private func logOnce(_ message: String, at level: LogLevel, last: WritableKeyPath<Confined, String?>) {
        if message != my[keyPath: last] { logger.log(level, message) } else { logger.debug("still \(message)") }
        my[keyPath: last] = message
    }

    /// Marks the store as failing; logs the first failure only, so a full disk does not fill the journal too.
    private func storeFailed(_ error: StoreError, doing what: String) {
        if !my.backlog.storeFailing {
            logger.error("cannot \(what): \(error)", event: error.isFull ? .storeFull : nil)
        } else {
            logger.debug("still cannot \(what): \(error)")
        }
        my.backlog.storeFailing = true
    }

    private func timer(after seconds: Double, _ action: @escaping () -> Void) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + seconds)
        timer.setEventHandler { [weak self] in
            guard let self, running else { return }
            changing(action)
        }
        timer.resume()
        return timer
    }
}
