import ENAgent
import ENCore
import ENStore
import Foundation
import ENSystemd
import TestSupport
import Testing

/// The state directory on a small filesystem that fills up while the agent runs: to the last
/// page, or below the disk reserve (a real tmpfs, read with statvfs).
@Suite struct FullDiskTests {
    let clock = SimulatedClock(1_700_006_400 + 120)
    /// Continuous one-second scans, so that sightings are written every second.
    let schedule = RadioSchedule(rotationSeconds: 600...1_200, scanSeconds: 1, scanIntervalSeconds: 1)

    func others(_ count: Int, from first: UInt8) -> [RadioReport] {
        (0..<count).map { index in
            RadioReport(serviceData: [first, UInt8(index)] + [UInt8](repeating: 7, count: 18), rssi: -60, adapter: "hci0")
        }
    }

    /// An agent running on `store` that has stored the sightings of ten phones.
    func runningWithTenSightings(on store: AgentStore) throws -> (agent: RadioAgent, radio: RecordingRadio, states: StateLog) {
        let radio = RecordingRadio()
        let states = StateLog()
        let agent = RadioAgent(radio: radio, keys: try KeySchedule(store: store, clock: clock), store: store, clock: clock,
                               schedule: schedule, metadata: Metadata(transmitPower: -4), logger: Logger(label: "test"), onChange: states.append)
        agent.start()
        others(10, from: 1).forEach(agent.report)
        #expect(try eventually(5) { try store.sightingCount() == 10 })
        return (agent, radio, states)
    }

    /// A new day, which needs a new key, comes with the radio lost and back; twenty more phones are heard.
    func nextDayHearingTwentyMore(_ agent: RadioAgent) {
        clock.advance(by: 86_400)
        agent.radioLost()
        agent.radioReturned()
        others(20, from: 2).forEach(agent.report)
    }

    @Test func aFullDiskStopsAdvertisingKeepsSightingsAndLosesNothingThenResumes() throws {
        let disk = try SmallFilesystem(kibibytes: 1_024)
        let store = try AgentStore(path: disk.path + "/enagent.db")
        let (agent, radio, states) = try runningWithTenSightings(on: store)
        defer { agent.stop() }
        let keysBefore = try store.temporaryExposureKeys(validAfter: 0)

        disk.fill()
        // A new day needs a new key, which cannot be stored: nothing may go out under it.
        nextDayHearingTwentyMore(agent)
        #expect(eventually(5) { states.last?.problem == .storeUnwritable }, "the status says so")
        Thread.sleep(forTimeInterval: 1.5)  // at least one more failed write of sightings
        #expect(radio.serviceData.count == 1, "no identifier from a key that could not be stored")
        #expect(states.last?.advertising == false)
        #expect(AgentStatus.of(consent: ConsentEvent(granted: true, recordedAt: 0), pausedUntil: nil, now: clock.now, clockTrusted: true,
                               radioProblem: .storeUnwritable) == .storeUnwritable, "enctl status: store-unwritable")
        #expect(try store.temporaryExposureKeys(validAfter: 0) == keysBefore, "the stored keys are intact")
        #expect(try store.sightingCount() == 10, "what was stored stays; the rest waits in memory")

        disk.free()
        #expect(try eventually(5) { try store.sightingCount() == 30 }, "the sightings held in memory are written")
        #expect(eventually(5) { radio.serviceData.count == 2 }, "advertising resumes by itself")
        #expect(eventually(5) { states.last?.problem == nil })
        let keys = try store.temporaryExposureKeys(validAfter: 0)
        let today = try #require(ENIntervalNumber(unixSeconds: clock.now))
        let todaysKey = try #require(keys.last { $0.rollingStartIntervalNumber == today.rollingPeriodStart })
        let crypto = try ExposureCrypto()
        let rpi = try crypto.rollingProximityIdentifier(key: crypto.rollingProximityIdentifierKey(for: todaysKey.keyData), interval: today)
        #expect(radio.serviceData.last.map { Array($0.prefix(16)) } == rpi.bytes, "the identifier comes from the stored key")
        agent.stop()
        #expect(try AgentStore(path: disk.path + "/enagent.db").sightingCount() == 30, "the database opens again (its quick_check passes)")
    }

    /// A crowd fills the disk with sightings: below the reserve they wait in memory, while the keys
    /// still get written and the advertisement goes on (issue 56).
    @Test func belowTheReserveSightingsWaitAndAdvertisingGoesOn() throws {
        let disk = try SmallFilesystem(kibibytes: 8 * 1_024)
        let store = try AgentStore(path: disk.path + "/enagent.db", diskReserve: DiskReserve(mebibytes: 4))
        let (agent, radio, states) = try runningWithTenSightings(on: store)
        defer { agent.stop() }

        disk.fill(leaving: 2 << 20)
        // A new day's key is written in the reserve, and goes on the air.
        nextDayHearingTwentyMore(agent)
        #expect(eventually(5) { states.last?.problem == .diskLow }, "the status says so")
        #expect(eventually(5) { radio.serviceData.count == 2 }, "a new identifier from the new day's key")
        #expect(states.last?.advertising == true && states.last?.scanning == true)
        let today = try #require(ENIntervalNumber(unixSeconds: clock.now))
        #expect(try store.temporaryExposureKeys(validAfter: 0).contains { $0.rollingStartIntervalNumber == today.rollingPeriodStart }, "the key is stored")
        Thread.sleep(forTimeInterval: 1.5)  // at least one more refused write of sightings
        #expect(try store.sightingCount() == 10, "sightings wait in memory")
        #expect(AgentStatus.diskLow.entry.line(StatusDetails(radioOff: false, pauseEnd: nil, adapter: "hci0", configuredAdapter: nil, advertisingResumesAt: nil,
                                                             storePath: store.path, storeReadError: nil, storeRetrySeconds: 10)).hasPrefix("disk-low: advertising and scanning"))

        disk.free()
        #expect(try eventually(5) { try store.sightingCount() == 30 }, "the sightings held in memory are written")
        #expect(eventually(5) { states.last?.problem == nil })
    }
}
