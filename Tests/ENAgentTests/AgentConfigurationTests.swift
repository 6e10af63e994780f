import ENAgent
import ENCore
import ENStore
import Foundation
import TestSupport
import Testing

@Suite struct AgentConfigurationTests {
    @Test func readsEveryKeyWithCommentsAndBlankLines() throws {
        let configuration = try AgentConfiguration(text: """
            # enagent on the kitchen Pi
            state-directory = /srv/enagent   # on the SSD
            retention-days = 14

            radio = yes
            adapter = hci1
            power-on = no
            tx-power = -8
            rotation-seconds = 600 - 1200
            scan-seconds = 4
            scan-interval-seconds = 240
            require-synchronised-clock = no
            rssi-correction = -7
            rssi-correction.00:1a:7d:da:71:13 = 4   # the USB dongle
            rssi-correction.B8:27:EB:00:00:01 = -12
            """, path: "enagent.conf")
        var expected = AgentConfiguration()
        expected.stateDirectory = "/srv/enagent"
        expected.retentionDays = 14
        expected.radio = true
        expected.adapter = .name("hci1")
        expected.powerOn = false
        expected.txPower = -8
        expected.rotationSeconds = 600...1200
        expected.scanSeconds = 4
        expected.scanIntervalSeconds = 240
        expected.requireSynchronisedClock = false
        expected.rssiCorrection = -7
        expected.rssiCorrectionByAdapter = [BluetoothAddress("00:1A:7D:DA:71:13")!: 4, BluetoothAddress("B8:27:EB:00:00:01")!: -12]
        #expect(configuration == expected)
        #expect(configuration.rssiCorrections == RssiCorrections(defaultCorrection: -7, byAdapter: expected.rssiCorrectionByAdapter))
        #expect(try AgentConfiguration(text: "", path: "empty") == AgentConfiguration())
        #expect(try AgentConfiguration(text: "adapter = 00:1a:7d:da:71:13", path: "enagent.conf").adapter == .address(BluetoothAddress("00:1A:7D:DA:71:13")!))
    }

    /// Two controllers whose kernel order swaps (a reboot, a replug): the address finds the same
    /// controller under either name, where the name finds the other one.
    @Test func anAdapterNamedByAddressIsFoundWhicheverNameTheKernelGaveIt() throws {
        let dongle = "00:1A:7D:DA:71:13", builtIn = "B8:27:EB:00:00:01"
        let before = [(name: "hci0", address: builtIn), (name: "hci1", address: dongle)]
        let after = [(name: "hci0", address: dongle), (name: "hci1", address: builtIn)]
        let byAddress = try #require(AdapterChoice(dongle.lowercased()))
        #expect(byAddress.resolve(among: before) == "hci1" && byAddress.resolve(among: after) == "hci0")
        let byName = try #require(AdapterChoice("hci1"))
        #expect(byName.resolve(among: before) == "hci1" && byName.resolve(among: after) == "hci1", "the name follows the kernel's order")
        #expect(byAddress.resolve(among: [(name: "hci0", address: builtIn)]) == nil, "the dongle unplugged: no adapter, not another")
        #expect(byAddress.resolve(among: [(name: "hci0", address: "")]) == nil, "an address BlueZ has not given yet is no match")
        for text in ["hci", "hci01", "hci-1", "wlan0", "00:1A:7D:DA:71", "00-1A-7D-DA-71-13", ""] {
            #expect(AdapterChoice(text) == nil, "\(text)")
        }
    }

    @Test(arguments: [
        ("scan-seconds = 0", 1, "scan-seconds must be a whole number from 1 to 300"),
        ("\n\nretention-days = many", 3, "retention-days must be a whole number from 1 to 365"),
        ("radio = maybe", 1, "radio must be yes or no"),
        ("adapter = wlan0", 1, "adapter must be a name such as hci0 or, better, the controller's address such as 00:1A:7D:DA:71:13"),
        ("adapter = 00:1A:7D:DA:71", 1, "adapter must be a name such as hci0"),
        ("state-directory = relative/path", 1, "state-directory must be an absolute path"),
        ("rotation-seconds = 1200-600", 1, "rotation-seconds must be MIN-MAX"),
        ("tx-power = 40", 1, "tx-power must be a whole number from -127 to 20"),
        ("rssi-correction = 101", 1, #"rssi-correction must be a whole number from -100 to 100, not "101""#),
        ("rssi-correction.00:1A:7D:DA:71:13 = -101", 1, #"rssi-correction.00:1A:7D:DA:71:13 must be a whole number from -100 to 100, not "-101""#),
        ("rssi-correction.00:1A:7D:DA:71:13 = 3 dB", 1, #"rssi-correction.00:1A:7D:DA:71:13 must be a whole number from -100 to 100, not "3 dB""#),
        ("rssi-correction.hci1 = 3", 1,
         #"rssi-correction.hci1 = 3: "hci1" is not an adapter's address such as 00:1A:7D:DA:71:13 (btmgmt info shows it)"#),
        ("rssi-correction.00:1A:7D:DA:71 = 3", 1, #"rssi-correction.00:1A:7D:DA:71 = 3: "00:1A:7D:DA:71" is not an adapter's address"#),
        ("rssi-correction. = 3", 1, #"rssi-correction. = 3: "" is not an adapter's address"#),
        ("scan-second = 4", 1, "unknown key \"scan-second\""),
        ("just words", 1, "expected key = value"),
    ])
    func refusesBadLinesNamingThem(text: String, line: Int, reason: String) {
        expectError({ try AgentConfiguration(text: text, path: "enagent.conf") }) { error in
            guard let error = error as? AgentConfiguration.Error else { return false }
            return error.line == line && error.reason.hasPrefix(reason) && error.description.hasPrefix("enagent.conf:\(line): ")
        }
    }

    /// etc/enagent.conf documents every key with its default (and an adapter's correction and
    /// passive-scan, which has none, with an example): uncommented, it must parse to the defaults.
    @Test func theShippedExampleListsEveryKeyWithItsDefault() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("etc/enagent.conf")
        let text = try String(contentsOf: example, encoding: .utf8)
        let settings = text.split(separator: "\n").filter { $0.hasPrefix("#") && $0.contains(" = ") }.map { $0.dropFirst() }
        let configuration = try AgentConfiguration(text: settings.joined(separator: "\n"), path: example.path)
        let documented = settings.compactMap { $0.split(separator: " ").first.map(String.init) }.map { key in
            key.hasPrefix(AgentConfiguration.adapterCorrectionPrefix) ? AgentConfiguration.adapterCorrectionPrefix + "ADDRESS" : key
        }
        #expect(Set(documented) == Set(AgentConfiguration.keys))
        #expect(configuration.stateDirectory == "/var/lib/enagent")
        #expect(configuration.retentionDays == RetentionDays.standard)
        #expect(configuration.diskReserveMebibytes == DiskReserveMebibytes.standard)
        #expect(configuration.radio == true && configuration.powerOn == false && configuration.txPower == TxPower.standard)
        #expect(configuration.rotationSeconds == RotationSeconds.standard)
        #expect(configuration.scanSeconds == ScanSeconds.standard)
        #expect(configuration.scanIntervalSeconds == ScanIntervalSeconds.standard)
        #expect(configuration.requireSynchronisedClock == true)
        #expect(configuration.trustedKeysDirectory == "/etc/enagent/trusted-keys")
        #expect(configuration.rssiCorrection == 0)
        #expect(configuration.rssiCorrectionByAdapter.count == 1, "the example of an adapter's own correction")
        #expect(configuration.passiveScan == false, "the example, which forces the safe mode: unset, the kernel's version decides")
    }

    /// Each setting takes its default as written and each end of its range, and refuses one past
    /// either end, naming the range.
    @Test func eachSettingTakesItsRangeAndItsDefaultAndNothingBeyond() throws {
        func check<S: BoundedSetting>(_ setting: S.Type) throws where S.Value: Equatable {
            #expect(try S.value(S.standardText) == S.standard && S.range.contains(S.standard), "\(S.key)")
            #expect(try S.value("\(S.range.lowerBound)") == S.range.lowerBound && S.value("\(S.range.upperBound)") == S.range.upperBound)
            for beyond in [Int(S.range.lowerBound) - 1, Int(S.range.upperBound) + 1] {
                expectError({ try S.value("\(beyond)") }) { error in
                    "\(error)" == "must be a whole number from \(S.range.lowerBound) to \(S.range.upperBound), not \"\(beyond)\""
                }
            }
        }
        try check(ScanSeconds.self)
        try check(ScanIntervalSeconds.self)
        try check(RetentionDays.self)
        try check(DiskReserveMebibytes.self)
        try check(TxPower.self)
        #expect(try RotationSeconds.value(RotationSeconds.standardText) == RotationSeconds.standard)
        #expect(RadioSchedule.standard == RadioSchedule(rotationSeconds: RotationSeconds.standard, scanSeconds: ScanSeconds.standard,
                                                        scanIntervalSeconds: ScanIntervalSeconds.standard))
        #expect(RetentionPolicy(days: RetentionDays.standard) == .protocolDefault)
    }

    /// Google's schedule: a 4-second scan every 5 minutes (the v1 detection's scan interval, which
    /// bounds the setting), a new identifier every 10 to 20 minutes; the schedule passes its check.
    @Test func theDefaultsAreGooglesSchedule() throws {
        #expect(ScanSeconds.standard == 4 && ScanIntervalSeconds.standard == 300 && RotationSeconds.standard == 600...1_200)
        #expect(ScanIntervalSeconds.range.upperBound == Int(ExposureConfigurationV1.scanInterval))
        try RadioSchedule.standard.check()
    }

    /// Beyond each setting's own range: a scan within its interval, and scans apart by more than
    /// Google's matching takes for one scan (on the agent's clock).
    @Test(arguments: [(30, 20, 1), (4, 29, 1), (4, 10, 3)])
    func aScheduleWhoseScansAreNotApartIsRefused(scan: Int, interval: Int, timeScale: Int) {
        let schedule = RadioSchedule(rotationSeconds: RotationSeconds.standard, scanSeconds: scan, scanIntervalSeconds: interval)
        expectError({ try schedule.check(timeScale: timeScale) }) { error in
            "\(error)".hasPrefix(scan > interval ? "scan-seconds must be at most scan-interval-seconds" : "scan-interval-seconds must be at least scan-seconds + 26")
        }
    }
}
