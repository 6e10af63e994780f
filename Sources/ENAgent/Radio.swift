import ENCore

/// What the agent needs from a Bluetooth LE radio (BlueZ in the daemon).
public protocol Radio: AnyObject, Sendable {
    /// Broadcasts the service data (RPI ‖ AEM) as a fresh advertisement, replacing the previous
    /// one, so that the address changes together with the RPI. `serviceData` is given the TX
    /// power the controller advertises at (the level it selected for the advertisement, or its
    /// advertising channel's when it does not say; nil when neither is known), which the metadata
    /// must carry. When it throws, nothing of this advertisement went on the air, and, unless it
    /// put the advertisement off (`RadioPostponement`), its `activity` says why
    /// (`RadioActivity.advertisingProblem`). A scan that waited for the advertisement
    /// (`startScanning`) starts with it.
    func advertise(_ serviceData: (_ selectedTransmitPower: Int8?) throws -> [UInt8]) throws
    /// Takes the advertisement off the air; when it throws, it may still be on the air.
    func stopAdvertising() throws
    /// Starts a scan for EN advertisers; reports arrive through the handler given to the agent.
    /// It may wait for the advertisement to be on the air (an active scan without it could go out
    /// from the adapter's public address): it then starts with an advertisement that `advertise`
    /// puts on the air. `activity` says which. A scan put off (`RadioPostponement`) did not start,
    /// and is asked for again shortly; a scan refused otherwise, `activity` says why (`scanProblem`).
    func startScanning() throws
    /// Ends the scan and forgets the advertisers seen, so the next scan reports them again.
    func stopScanning() throws
    /// How long a scan may run before the agent ends it and starts it anew (nil: unbounded), so
    /// that only the agent starts it: the kernel ends an active scan (bluetoothd's discovery)
    /// after 10.24 s, and bluetoothd starts it again by itself, without `startScanning`'s check.
    var longestScanSeconds: Double? { get }
    /// What the radio is doing now, read on its queue: the radio alone knows it, and tells its
    /// listener each time it changes (`RadioListener.radioChanged`).
    var activity: RadioActivity { get }
}

/// What the radio is doing, as it publishes it (`Radio.activity`): where its advertisement is, why
/// it has none, what its scan does, and the adapter it uses. The agent derives the status from it
/// and from its own reasons to hold off (`RadioState`); nothing else keeps a copy.
public struct RadioActivity: Sendable, Equatable {
    public enum Advertisement: Sendable, Equatable {
        case none
        /// Being put into the kernel: nothing of it on the air yet.
        case adding
        case onAir
        /// On the air, but the adapter turned unfit for it: it is being withdrawn.
        case unfit
    }

    public enum Scan: Sendable, Equatable {
        case idle
        /// Asked for, held until the advertisement is on the air (an active scan's random address).
        case waitingForAdvertisement
        /// Asked for, not yet shown to run (bluetoothd answered, the kernel has not said).
        case starting
        case running
        /// Stopped for a moment while a BT 4.x controller takes the advertisement's new address.
        case paused
    }

    public var advertisement: Advertisement
    /// Why the radio has no advertisement on the air, as it last found: it refused the last one
    /// (`problem(of:)`), the adapter turned unfit for it, or the radio went away (`.bluetoothOff`).
    /// Nil once an advertisement goes on the air; a scan that starts disproves a problem that
    /// stops scans too (`AgentStatus.Entry.scansThrough`): the radio works, and the next refusal
    /// says anew what is wrong.
    public var advertisingProblem: AgentStatus?
    public var scan: Scan
    /// Why the radio refused the last scan asked of it (`problem(of:)`); nil once one starts.
    public var scanProblem: AgentStatus?
    /// The adapter in use, when one is known.
    public var adapter: AdapterIdentity?

    public init(advertisement: Advertisement = .none, advertisingProblem: AgentStatus? = nil, scan: Scan = .idle, scanProblem: AgentStatus? = nil,
                adapter: AdapterIdentity? = nil) {
        self.advertisement = advertisement
        self.advertisingProblem = advertisingProblem
        self.scan = scan
        self.scanProblem = scanProblem
        self.adapter = adapter
    }

    /// What a radio's refusal means for the status: anything but a known problem (bluetoothd
    /// missing from the bus, say) counts as Bluetooth being off.
    public static func problem(of error: any Error) -> AgentStatus {
        (error as? any RadioProblemError)?.problem ?? .bluetoothOff
    }

    /// The problem after a scan started: one that stops scans too is disproved.
    public static func problemAfterAScanStarted(_ problem: AgentStatus?) -> AgentStatus? {
        problem?.entry.scansThrough == false ? nil : problem
    }
}

/// An advertisement or a scan the radio put off without touching the air: the advertisement on the
/// air (if any) stays as it was, and the agent tries again shortly, with no change of status.
public protocol RadioPostponement: Error {}

/// What a radio tells the agent as it happens (`RadioAgent`; a recorder in tests).
public protocol RadioListener: AnyObject, Sendable {
    func report(_ report: RadioReport)
    /// The radio's `activity` changed; told on the radio's queue, also in the middle of a call.
    func radioChanged()
    /// The radio went away; its `activity` says so (`advertisingProblem`) by the time this is told.
    func radioLost()
    func radioReturned()
    func advertisementRemoved()
    /// The advertisement on the air must come off at once; `activity` says why (`advertisingProblem`).
    func adapterUnfitForAdvertising(_ problem: AgentStatus, because reason: String)
    /// The scan ended without the agent asking: another program removed its monitor (bluetoothd
    /// removes them all as it starts), or a pause for an advertisement could not resume it.
    func scanStopped()
}

/// One reception of EN service data, as the radio passes it on.
public struct RadioReport: Sendable, Equatable {
    public var serviceData: [UInt8]
    /// dBm as reported; 127 means not available.
    public var rssi: Int16?
    public var adapter: String
    /// The adapter's address, when the radio knows it.
    public var adapterAddress: BluetoothAddress?

    public init(serviceData: [UInt8], rssi: Int16?, adapter: String, adapterAddress: BluetoothAddress? = nil) {
        self.serviceData = serviceData
        self.rssi = rssi
        self.adapter = adapter
        self.adapterAddress = adapterAddress
    }
}

/// An adapter as sightings, the status and the properties name it: its name ("" when none is
/// known), and its address once the radio has one that parses.
public struct AdapterIdentity: Equatable, Sendable {
    public var name: String
    public var address: BluetoothAddress?

    public init(name: String = "", address: BluetoothAddress? = nil) {
        self.name = name
        self.address = address
    }
}

/// When the agent rotates its identifier and scans.
public struct RadioSchedule: Sendable, Equatable {
    /// A rotation happens at a random moment in this range after the previous one (and at each new TEK).
    public var rotationSeconds: ClosedRange<Int>
    /// A scan lasts this long...
    public var scanSeconds: Int
    /// ...and starts this long after the previous one started; equal to `scanSeconds` scans without pause.
    public var scanIntervalSeconds: Int

    /// Google's schedule: rotation every 10–20 minutes, a 4-second scan every ≤ 5 minutes.
    public static let standard = RadioSchedule(rotationSeconds: RotationSeconds.standard, scanSeconds: ScanSeconds.standard,
                                               scanIntervalSeconds: ScanIntervalSeconds.standard)

    /// The shortest pause between two scans, on the agent's clock: Google's matching takes
    /// sightings up to 25.5 s apart for one scan (`KeyExposureEvaluator.sightingInTheSameScanInstance`,
    /// 1.5 × (4 + 13) s; `ExposureWindowing.sameScanSeconds` in whole seconds), so a device seen in
    /// scans closer than that would count as seen in one, weighed as one phone's scan, and a long
    /// encounter would count minutes where a phone counts its whole length.
    public static let shortestPauseSeconds = Int(ExposureWindowing.sameScanSeconds) + 1

    /// The pause between two scans, on a clock `timeScale` times faster than real time.
    public func pauseSeconds(timeScale: Int) -> Int { (scanIntervalSeconds - scanSeconds) * timeScale }

    /// What is wrong with this schedule for enagentd on a clock `timeScale` times faster than real
    /// time, beyond each setting's own range: a scan within its interval, and scans apart.
    public func check(timeScale: Int = 1) throws(AgentConfiguration.InvalidValue) {
        guard scanSeconds <= scanIntervalSeconds else {
            throw AgentConfiguration.InvalidValue(reason: "\(ScanSeconds.key) must be at most \(ScanIntervalSeconds.key) (here \(scanSeconds) and \(scanIntervalSeconds)).")
        }
        guard pauseSeconds(timeScale: timeScale) >= Self.shortestPauseSeconds else {
            throw AgentConfiguration.InvalidValue(reason: "\(ScanIntervalSeconds.key) must be at least \(ScanSeconds.key) + \(Self.shortestPauseSeconds) "
                                                  + "(here \(scanIntervalSeconds) and \(scanSeconds)): detection, as Google's matching, takes "
                                                  + "sightings up to 25.5 s apart for one scan, so closer scans would weigh an encounter as a phone's single scan.")
        }
    }

    public init(rotationSeconds: ClosedRange<Int>, scanSeconds: Int, scanIntervalSeconds: Int) {
        self.rotationSeconds = rotationSeconds
        self.scanSeconds = scanSeconds
        self.scanIntervalSeconds = scanIntervalSeconds
    }
}

/// What the radio is doing, for the agent's status and the D-Bus properties: a value the agent
/// derives from the radio's activity and its own reasons to hold off
/// (`init(activity:advertiser:scan:storeFailing:sightingsWaitForDisk:)`).
public struct RadioState: Sendable, Equatable {
    public let advertising: Bool
    public let scanning: Bool
    /// Why it cannot, when it cannot: the status it makes.
    public let problem: AgentStatus?
    /// When the next fresh identifier may go on the air (unix time), while the problem is
    /// `waitingForInterval`: the current interval's identifier was on the air already.
    public let advertisingResumesAt: Int64?
    /// The adapter the radio uses, when it knows one.
    public let adapter: AdapterIdentity?

    public init(advertising: Bool = false, scanning: Bool = false, problem: AgentStatus? = nil, advertisingResumesAt: Int64? = nil,
                adapter: AdapterIdentity? = nil) {
        self.advertising = advertising
        self.scanning = scanning
        self.problem = problem
        self.advertisingResumesAt = advertisingResumesAt
        self.adapter = adapter
    }

    /// The same state with its scan no longer running.
    var withScanEnded: RadioState {
        RadioState(advertising: advertising, scanning: false, problem: problem, advertisingResumesAt: advertisingResumesAt, adapter: adapter)
    }
}
