import ENCore
import ENKeyFileWriter
import ENKeyFiles
import ENStore
import Foundation

/// Generated inputs for whole-process detection, over the last 14 days (so that the daemon's
/// retention keeps every sighting): three signed exports (100,000, 500,000 and 1,000,000 keys in
/// full size, each the first keys of the next), sightings as JSON Lines (100,000; the same in a
/// small agent database, for the daemon) and in an agent database (4,000,000: 14 days of a busy
/// place). In both, `sizes.exposedKeys` of the keys were seen 10 times each; the other sightings
/// are random RPIs.
struct DetectionData {
    let sizes: BenchSizes
    let publicKey: String
    let smallExport: String
    let largeExport: String
    let fewerExport: String
    let jsonLines: String
    /// The JSON Lines' sightings in an agent database.
    let smallDatabase: String
    let database: String

    /// The files' places in `directory`.
    init(in directory: String, sizes: BenchSizes) {
        self.sizes = sizes
        publicKey = directory + "/public.pem"
        smallExport = directory + "/export-small.zip"
        largeExport = directory + "/export-large.zip"
        fewerExport = directory + "/export-fewer.zip"
        jsonLines = directory + "/sightings.jsonl"
        smallDatabase = directory + "/small-state/enagent.db"
        database = directory + "/state/enagent.db"
    }

    static func generate(in directory: String, sizes: BenchSizes) throws {
        let data = DetectionData(in: directory, sizes: sizes)
        let now = Int64(Date().timeIntervalSince1970)
        let today = ENIntervalNumber(unixSeconds: now)!.rollingPeriodStart.rawValue
        let firstDay = today - 13 * 144
        let keys = try (0..<sizes.largeExportKeys).map { index in
            DiagnosisKey(key: TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(),
                                                   rollingStartIntervalNumber: ENIntervalNumber(firstDay + UInt32(index % 13) * 144)),
                         reportType: .confirmedTest)
        }
        let signer = try P256PrivateKey()
        try signer.publicKey.pem.write(toFile: data.publicKey, atomically: true, encoding: .utf8)
        let writer = KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "bench", keyVersion: "1")))
        try writer.zip(keys: Array(keys.prefix(sizes.smallExportKeys))).write(to: URL(fileURLWithPath: data.smallExport))
        try writer.zip(keys: keys).write(to: URL(fileURLWithPath: data.largeExport))
        try writer.zip(keys: Array(keys.prefix(sizes.fewerExportKeys))).write(to: URL(fileURLWithPath: data.fewerExport))

        let exposed = try sightings(of: keys.prefix(sizes.exposedKeys))
        let window = Int64(firstDay) * 600..<now
        let small = exposed + randomSightings(sizes.jsonLinesSightings - exposed.count, in: window)
        var text = ""
        for sighting in small {
            text += #"{"rpi":"\#(sighting.rpi.hex)","aem":"\#(sighting.aem.hex)","rssi":\#(sighting.rssi!),"time":\#(sighting.time)}"# + "\n"
        }
        try text.write(toFile: data.jsonLines, atomically: true, encoding: .utf8)

        for state in [directory + "/state", directory + "/small-state"] {
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        }
        try AgentStore(path: data.smallDatabase).record(small)
        let store = try AgentStore(path: data.database)
        try store.record(exposed)
        for recorded in stride(from: exposed.count, to: sizes.databaseSightings, by: 100_000) {
            try store.record(randomSightings(min(100_000, sizes.databaseSightings - recorded), in: window))
        }
    }

    /// What a device near each key's owner recorded: ten sightings in the key's day.
    private static func sightings(of keys: ArraySlice<DiagnosisKey>) throws -> [Sighting] {
        let crypto = try ExposureCrypto()
        return try keys.flatMap { key in
            let rpis = try crypto.rollingProximityIdentifiers(key: crypto.rollingProximityIdentifierKey(for: key.key.keyData),
                                                              from: key.key.rollingStartIntervalNumber, count: 144)
            let aemk = crypto.associatedEncryptedMetadataKey(for: key.key.keyData)
            return try (10..<20).map { interval in
                Sighting(rpi: rpis[interval], aem: try crypto.encryptMetadata(Metadata(transmitPower: -5), key: aemk, rpi: rpis[interval]),
                         rssi: -70, time: key.key.rollingStartIntervalNumber.unixSeconds + Int64(interval) * 600, adapter: "hci0")
            }
        }
    }

    private static func randomSightings(_ count: Int, in window: Range<Int64>) -> [Sighting] {
        (0..<count).map { _ in
            Sighting(rpi: Bytes16(high: .random(in: .min ... .max), low: .random(in: .min ... .max)),
                     aem: AssociatedEncryptedMetadata(rawValue: .random(in: 0 ... .max)), rssi: -80, time: .random(in: window), adapter: "hci0")
        }
    }
}
