import ArgumentParser
import ENCore
import FoundationEssentials

struct Derive: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Derive the RPIs (and AEMs) that a Temporary Exposure Key broadcasts.",
        discussion: """
            Computes, from a TEK, the Rolling Proximity Identifier of each interval from --interval \
            on, and with --metadata also the Associated Encrypted Metadata. Use it to check what a \
            device should be broadcasting, or whether a sighting belongs to a published key.

            Example, the official test vector's first three intervals:
              enctl derive --tek 75c734c6dd1a782de7a965da5eb93125 \\
                  --interval 2642976 --count 3 --metadata 40080000
            """)

    @Option(help: ArgumentHelp("The Temporary Exposure Key: 32 hexadecimal digits.", valueName: "hex"),
            transform: ArgumentValue.bytes16)
    var tek: Bytes16

    @Option(parsing: .unconditional,
            help: ArgumentHelp("The first EN interval number (unix seconds / 600), 0...4294967295.", valueName: "n"),
            transform: ArgumentValue.intervalNumber)
    var interval: ENIntervalNumber

    @Option(parsing: .unconditional,
            help: ArgumentHelp("How many consecutive intervals to derive (1...\(Self.maximumCount)).", valueName: "k"),
            transform: ArgumentValue.integer)
    var count: Int = 1

    @Option(help: ArgumentHelp("Metadata to encrypt into the AEM: 8 hexadecimal digits, e.g. 40080000 (v1.0, +8 dBm).", valueName: "hex"),
            transform: ArgumentValue.metadata)
    var metadata: Metadata?

    @OptionGroup var output: JSONOutput

    static let maximumCount = 1_000_000

    func validate() throws {
        guard (1...Self.maximumCount).contains(count) else {
            throw ValidationError("--count must be between 1 and \(Self.maximumCount), not \(count).")
        }
        guard interval.advanced(by: Int64(count - 1)) != nil else {
            throw ValidationError("Intervals \(interval) to \(Int64(interval.rawValue) + Int64(count) - 1) run past the last EN interval number, \(UInt32.max).")
        }
    }

    struct Row: Encodable {
        let interval: UInt32
        let rpi: String
        let aem: String?
    }

    func run() throws {
        let crypto = try ExposureCrypto()
        let rpis = try crypto.rollingProximityIdentifiers(key: crypto.rollingProximityIdentifierKey(for: tek), from: interval, count: count)
        let aemk = metadata.map { _ in crypto.associatedEncryptedMetadataKey(for: tek) }
        let rows = try rpis.enumerated().map { offset, rpi in
            Row(interval: interval.rawValue + UInt32(offset), rpi: rpi.hex,
                aem: try metadata.map { try crypto.encryptMetadata($0, key: aemk!, rpi: rpi).hex })
        }
        if output.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(rows), as: UTF8.self))
        } else {
            printTable(rows)
        }
    }

    private func printTable(_ rows: [Row]) {
        var table = [["INTERVAL", "START (UTC)", "RPI"] + (metadata == nil ? [] : ["AEM"])]
        for row in rows {
            let start = Date(timeIntervalSince1970: TimeInterval(ENIntervalNumber(row.interval).unixSeconds))
            table.append(["\(row.interval)", start.formatted(Self.utcMinutes), row.rpi] + (row.aem.map { [$0] } ?? []))
        }
        printColumns(table)
    }

    private static let utcMinutes = Date.ISO8601FormatStyle(timeZone: .gmt)
        .year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false).timeSeparator(.colon)
}
