import ENCore
import ENKeyFileWriter
import ENKeyFiles
import ENStore
import Foundation
import TestSupport
import Testing

@Suite struct DetectCommandTests {
    let directory = TemporaryDirectory()

    /// A JSON Lines sighting of `key`'s RPI at `time`, broadcast at -10 dBm and received at -70.
    /// A JSON Lines sighting of `key` at `time`, with its device's previous scan when known.
    func sightingLine(of key: TemporaryExposureKey, at time: Int64, previousScanTime: Int64? = nil) throws -> String {
        let sighting = try Broadcaster(key: DiagnosisKey(key: key)).sighting(at: time, rssi: -70)
        let previous = previousScanTime.map { #","previousScanTime":\#($0)"# } ?? ""
        return #"{"rpi":"\#(sighting.rpi.hex)","aem":"\#(sighting.aem.hex)","rssi":-70,"time":\#(time)\#(previous)}"#
    }

    func write(_ text: String, to name: String) throws -> String {
        try text.write(toFile: directory.file(name), atomically: true, encoding: .utf8)
        return directory.file(name)
    }

    func json(_ result: Command.Result) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any], "stderr: \(result.standardError)")
    }

    @Test func findsTheServerExamplesKeyInItsRealSignedFile() throws {
        // The second key of en-server-example.zip: K2MFOsSDI43hdhaehh89zQ==, start 2649866, period 114.
        let key = TemporaryExposureKey(keyData: Bytes16(bytes: Data(base64Encoded: "K2MFOsSDI43hdhaehh89zQ==")!)!,
                                       rollingStartIntervalNumber: ENIntervalNumber(2_649_866), rollingPeriod: 114)
        let met = Int64(2_649_900) * 600
        // The first scan's predecessor is unknown (120 s); each later one's is the scan a minute before.
        let lines = try [0, 60, 120, 180].map { try sightingLine(of: key, at: met + $0, previousScanTime: $0 == 0 ? nil : met + $0 - 60) }
        let sightings = try write(lines.joined(separator: "\n") + "\n", to: "sightings.jsonl")
        let fixtures = KeysInspectCommandTests.fixtures
        let result = try Command.enctl("detect", "offline", "--sightings", sightings, "--keys", "\(fixtures)/en-server-example.zip",
                                       "--public-key", "\(fixtures)/en-server-example.public.pem", "--now", "\(met + 86_400)", "--json")
        #expect(result.status == 0)
        let report = try json(result)
        #expect(report["matchedKeyCount"] as? Int == 1)
        #expect(report["keysChecked"] as? Int == 2)
        let windows = try #require(report["exposureWindows"] as? [[String: Any]])
        #expect(windows.count == 1)
        let matched = windows.first?["key"] as? [String: Any]
        #expect(matched?["tek"] as? String == key.keyData.hex)
        #expect(matched?["rollingStartIntervalNumber"] as? Int == 2_649_866)
        #expect(windows.first?["date"] as? String == "2020-05-20")
        let scans = try #require(windows.first?["scanInstances"] as? [[String: Any]])
        #expect(scans.map { $0["typicalAttenuation"] as? Int } == [60, 60, 60, 60])
        #expect(scans.map { $0["secondsSinceLastScan"] as? Int } == [120, 60, 60, 60])
        let days = try #require(report["dailySummaries"] as? [[String: Any]])
        #expect(days.map { $0["date"] as? String } == ["2020-05-20"])
        #expect(days.first?["scoreSum"] as? Double == 300)
    }

    @Test func scoresV1FromADatabaseAndOwnSignedFiles() throws {
        let signer = try P256PrivateKey()
        let publicKey = try write(signer.publicKey.pem, to: "authority.pem")
        let start = ENIntervalNumber(2_900_016)
        let exposed = DiagnosisKey(key: TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(),
                                                             rollingStartIntervalNumber: start, transmissionRiskLevel: 5))
        let others = try (0..<50).map { _ in DiagnosisKey(key: TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(), rollingStartIntervalNumber: start)) }
        let writer = KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
        let first = directory.file("a.zip"), second = directory.file("b.zip")
        try writer.zip(keys: others).write(to: URL(fileURLWithPath: first))
        try writer.zip(keys: [exposed]).write(to: URL(fileURLWithPath: second))

        let store = try AgentStore(path: directory.file("enagent.db"))
        let met = start.unixSeconds + 3_600
        let recorded = try (0..<5).map { try Broadcaster(key: exposed).sighting(at: met + Int64($0) * 60, rssi: -70) }
        try store.record(recorded)
        let config = try write(#"{"minimumRiskScore":1,"attenuationLevelValues":[1,2,3,4,5,6,7,8],"durationLevelValues":[1,2,3,4,5,6,7,8],"daysSinceLastExposureLevelValues":[1,2,3,4,5,6,7,8],"transmissionRiskLevelValues":[1,2,3,4,5,6,7,8],"attenuationDurationThresholds":[50,74]}"#, to: "config.json")
        let result = try Command.enctl("detect", "offline", "--db", directory.file("enagent.db"), "--keys", first, "--keys", second,
                                       "--public-key", publicKey, "--config", config, "--now", "\(met + 2 * 86_400)", "--json")
        let report = try json(result)
        #expect(report["keysChecked"] as? Int == 51 && report["matchedKeyCount"] as? Int == 1)
        let v1 = try #require(report["v1"] as? [String: Any])
        let info = try #require((v1["exposureInfos"] as? [[String: Any]])?.first)
        // 60 dB → level 3; 2 days → 7; 10 minutes (5 scans whose previous scans the database
        // does not know: 120 s each) → 3; risk 5 → 5.
        #expect(info["totalRiskScore"] as? Int == 3 * 7 * 3 * 5)
        #expect(info["durationMinutes"] as? Int == 10)
        #expect((v1["summary"] as? [String: Any])?["matchedKeyCount"] as? Int == 1)

        let text = try Command.enctl("detect", "offline", "--db", directory.file("enagent.db"), "--keys", second, "--public-key", publicKey)
        #expect(text.status == 0)
        #expect(text.standardOutput.contains("1 key matched, 1 exposure window."))
        #expect(text.standardOutput.contains("EXPOSURE WINDOWS"))
    }

    @Test func aFileThatDoesNotVerifyStopsTheCommandAndIsNamed() throws {
        let signer = try P256PrivateKey(), stranger = try P256PrivateKey()
        let writer = KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "1", keyVersion: "1")))
        let good = directory.file("good.zip"), unsigned = directory.file("unsigned.zip")
        try writer.zip(keys: []).write(to: URL(fileURLWithPath: good))
        try KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1).zip(keys: []).write(to: URL(fileURLWithPath: unsigned))
        let sightings = try write("", to: "empty.jsonl")
        let strangerKey = try write(stranger.publicKey.pem, to: "stranger.pem"), signerKey = try write(signer.publicKey.pem, to: "signer.pem")

        let wrongKey = try Command.enctl("detect", "offline", "--sightings", sightings, "--keys", good, "--public-key", strangerKey)
        #expect(wrongKey.status == 1 && wrongKey.standardError.contains("\(good): the signature is invalid"))
        let mixed = try Command.enctl("detect", "offline", "--sightings", sightings, "--keys", good, "--keys", unsigned, "--public-key", signerKey)
        #expect(mixed.status == 1 && mixed.standardError.contains("\(unsigned): the signature is unsigned"))
        let noKey = try Command.enctl("detect", "offline", "--sightings", sightings, "--keys", unsigned)
        #expect(noKey.status == 64 && noKey.standardError.contains("--public-key"))
        let insecure = try Command.enctl("detect", "offline", "--sightings", sightings, "--keys", unsigned, "--insecure-skip-verify", "--json")
        #expect(insecure.status == 0)
        #expect(try (json(insecure)["files"] as? [[String: Any]])?.first?["signature"] as? String == "unsigned")
        #expect(try json(insecure)["matchedKeyCount"] as? Int == 0)
    }

    /// `--rssi-correction ADDRESS=dB` calibrates the sightings of that adapter only, from a JSON
    /// Lines file and from an agent database alike; the plain dB is for the others, and for those
    /// of an unknown adapter. One phone heard at the same RSSI makes three attenuations.
    @Test func eachAdaptersSightingsGetItsOwnCorrection() throws {
        let signer = try P256PrivateKey()
        let publicKey = try write(signer.publicKey.pem, to: "authority.pem")
        let exposed = try Broadcaster(start: 2_900_016)
        let keys = directory.file("export.zip")
        try KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
            .zip(keys: [exposed.key]).write(to: URL(fileURLWithPath: keys))
        let dongle = "00:1A:7D:DA:71:13", builtIn = "B8:27:EB:00:00:01"
        let sightings = [
            try exposed.sighting(at: exposed.start + 600, rssi: -60, adapterAddress: BluetoothAddress(dongle)),
            try exposed.sighting(at: exposed.start + 660, rssi: -60, adapterAddress: BluetoothAddress(builtIn)),
            try exposed.sighting(at: exposed.start + 720, rssi: -60),
        ]
        let lines = sightings.map { sighting in
            #"{"rpi":"\#(sighting.rpi.hex)","aem":"\#(sighting.aem.hex)","rssi":-60,"time":\#(sighting.time)"#
                + (sighting.adapterAddress.map { #","adapterAddress":"\#($0)""# } ?? "") + "}"
        }
        let jsonLines = try write(lines.joined(separator: "\n"), to: "sightings.jsonl")
        try AgentStore(path: directory.file("enagent.db")).record(sightings)
        for source in [["--sightings", jsonLines], ["--db", directory.file("enagent.db")]] {
            let result = try Command.enctl(["detect", "offline"] + source + ["--keys", keys, "--public-key", publicKey, "--rssi-correction", "-2",
                                            "--rssi-correction", "\(dongle)=5", "--rssi-correction", "\(builtIn.lowercased())=-8", "--json"])
            let report = try json(result)
            let windows = try #require(report["exposureWindows"] as? [[String: Any]])
            let scans = windows.flatMap { $0["scanInstances"] as? [[String: Any]] ?? [] }
            // TX power -10: -10 - (-60 + 5) = 45, -10 - (-60 - 8) = 58, and the default -10 - (-60 - 2) = 52.
            #expect(scans.map { $0["minAttenuation"] as? Int } == [45, 58, 52], "\(source)")
        }
    }

    @Test(arguments: [
        (["--rssi-correction", "hci0=3"], #""hci0=3": "hci0" is not an adapter's address such as 00:1A:7D:DA:71:13"#),
        (["--rssi-correction", "00:1A:7D:DA:71:13=loud"], #""00:1A:7D:DA:71:13=loud": the correction must be a whole number from -100 to 100"#),
        (["--rssi-correction", "-101"], #""-101": the correction must be a whole number from -100 to 100"#),
    ] as [([String], String)])
    func badRssiCorrectionsAreNamed(arguments: [String], message: String) throws {
        let sightings = try write("", to: "empty.jsonl"), keys = try write("", to: "k.zip")
        let result = try Command.enctl(["detect", "offline", "--sightings", sightings, "--keys", keys, "--insecure-skip-verify"] + arguments)
        #expect(result.status == 64)
        #expect(result.standardError.contains(message), "stderr: \(result.standardError)")
    }

    @Test(arguments: [
        (#"{"rpi":"00","aem":"00000000","rssi":-60,"time":1}"#, "sightings.jsonl:2: expected 16 bytes"),
        (#"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"00000000","rssi":-600,"time":1}"#, "sightings.jsonl:2: rssi -600 is outside"),
        (#"not json"#, "sightings.jsonl:2: expected {"),
    ])
    func badSightingLinesAreNamedByLine(line: String, message: String) throws {
        let sightings = try write(#"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"00000000","rssi":127,"time":1}"# + "\n" + line, to: "sightings.jsonl")
        let keys = directory.file("k.zip")
        try KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1).zip(keys: []).write(to: URL(fileURLWithPath: keys))
        let result = try Command.enctl("detect", "offline", "--sightings", sightings, "--keys", keys, "--insecure-skip-verify")
        #expect(result.status == 1)
        #expect(result.standardError.contains(message), "stderr: \(result.standardError)")
    }

    /// Lines read in chunks of 4 MiB, each cut into runs parsed at once: every line counts, and
    /// the first bad line in the file is the one named, whichever run or chunk it falls in.
    @Test func largeSightingFilesAreReadWholeAndTheirFirstBadLineNamed() throws {
        let keys = directory.file("k.zip")
        try KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1).zip(keys: []).write(to: URL(fileURLWithPath: keys))
        // About 85 bytes a line: 120,000 lines are some 10 MB, three chunks.
        let lines = (0..<120_000).map { n in
            #"{"rpi":"\#(String(format: "%032x", n))","aem":"00000000","rssi":-60,"time":\#(1_700_000_000 + n)}"#
        }
        let good = try write(lines.joined(separator: "\n"), to: "good.jsonl")
        let counted = try Command.enctl("detect", "offline", "--sightings", good, "--keys", keys, "--insecure-skip-verify", "--json")
        #expect(counted.status == 0, "\(counted.standardError)")
        #expect(counted.standardOutput.contains(#""sightingCount" : 120000"#), "every line counted, the last without its newline")
        var bad = lines
        bad[90_000] = "not json"
        bad[70_000] = #"{"rpi":"00","aem":"00000000","rssi":-60,"time":1}"#
        bad[110_000] = "not json"
        let refused = try Command.enctl("detect", "offline", "--sightings", try write(bad.joined(separator: "\n") + "\n", to: "bad.jsonl"),
                                        "--keys", keys, "--insecure-skip-verify")
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("bad.jsonl:70001: expected 16 bytes"), "\(refused.standardError)")
    }

    @Test func invalidConfigurationAndMissingDatabaseAreClearErrors() throws {
        let keys = directory.file("k.zip")
        try KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1).zip(keys: []).write(to: URL(fileURLWithPath: keys))
        let config = try write(#"{"attenuationLevelValues":[1,2]}"#, to: "bad.json")
        let sightings = try write("", to: "s.jsonl")
        let badConfig = try Command.enctl("detect", "offline", "--sightings", sightings, "--keys", keys, "--insecure-skip-verify", "--config", config)
        #expect(badConfig.status == 1 && badConfig.standardError.contains("\"attenuationLevelValues\" must be a list of 8"))
        let noDatabase = try Command.enctl("detect", "offline", "--db", directory.file("none.db"), "--keys", keys, "--insecure-skip-verify")
        #expect(noDatabase.status == 64 && noDatabase.standardError.contains("'--db <path>': no such file"), "\(noDatabase.standardError)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("none.db")), "a missing database is not created")
        let daemon = try Command.enctl("detect", "--sightings", sightings, keys)
        #expect(daemon.status == 64 && daemon.standardError.contains("Unknown option '--sightings'"), "the daemon uses its own sightings: \(daemon.standardError)")
    }
}

/// Files strangers hand over, each refused by name within a bound of time and memory.
extension DetectCommandTests {
    /// A sparse file of `bytes` zero bytes: no disk, no newline.
    func sparse(_ name: String, bytes: Int) -> String {
        let path = directory.file(name)
        let descriptor = open(path, O_RDWR | O_CREAT, 0o600)
        ftruncate(descriptor, off_t(bytes))
        close(descriptor)
        return path
    }

    /// A terabyte without a newline (sparse: no disk): read to its end it would take hours, so a
    /// bound of 30 s tells the first chunk from the whole file even on a loaded host.
    @Test func aTerabyteSightingsLineIsRefusedAfterItsFirstChunk() throws {
        let sightings = sparse("one-line.jsonl", bytes: 1 << 40)
        let fixtures = KeysInspectCommandTests.fixtures
        let started = Date()
        let result = try Command.enctl("detect", "offline", "--sightings", sightings, "--keys", "\(fixtures)/en-server-example.zip",
                                       "--public-key", "\(fixtures)/en-server-example.public.pem")
        #expect(result.status == 1)
        #expect(result.standardError.contains("\(sightings):1: a line longer than 4096 bytes"), "\(result.standardError)")
        #expect(Date().timeIntervalSince(started) < 30, "it stops after the first chunk (4 MiB), not at the end of the terabyte")
    }

    @Test func devicesHugeCardsAndHugeConfigurationsAreRefusedUnread() throws {
        let fixtures = KeysInspectCommandTests.fixtures
        let zero = try Command.enctl("keys", "inspect", "/dev/zero")
        #expect(zero.status == 1 && zero.standardError.contains("/dev/zero: not a regular file"), "\(zero.standardError)")

        let card = sparse("card.smart-health-card", bytes: 10 << 20)
        let jwks = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../ENDiagnosisTests/Fixtures/example-issuer-jwks.json").path
        let checked = try Command.enctl("test-result", "verify", card, "--issuer-keys", jwks)
        #expect(checked.status == 1 && checked.standardError.contains("10485760 bytes, more than the 1 MiB a health card may have"),
                "\(checked.standardError)")

        let configuration = sparse("configuration.json", bytes: 2 << 20)
        let sightings = try write("", to: "none.jsonl")
        let configured = try Command.enctl("detect", "offline", "--sightings", sightings, "--keys", "\(fixtures)/en-server-example.zip",
                                           "--public-key", "\(fixtures)/en-server-example.public.pem", "--config", configuration)
        #expect(configured.status == 1 && configured.standardError.contains("2097152 bytes, more than 1 MiB: not an exposure configuration"),
                "\(configured.standardError)")
    }
}
