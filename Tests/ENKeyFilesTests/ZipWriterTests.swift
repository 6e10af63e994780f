import ENArchive
import ENCore
import ENKeyFileWriter
@testable import ENKeyFiles
import Foundation
import Testing
import TestSupport

/// The archives we write, read back by our own reader and by another implementation's.
@Suite struct ZipWriterTests {
    @Test func aSignedKeyExportReadsBackInOurReaderAndPythonsZipfile() throws {
        let writer = KeyExportWriter(region: "DE", startTimestamp: 100, endTimestamp: 200,
                                     signer: (try P256PrivateKey(), SignatureInfo(keyId: "262", keyVersion: "v2")))
        let keys = try KeyExportWriterTests.randomKeys(300)
        let zip = try writer.zip(keys: keys)

        let ours = try ZipArchive(zip, maximumEntries: 2)
        #expect(ours.entries.map(\.name) == ["export.bin", "export.sig"])
        #expect(ours.entries.allSatisfy { $0.method == ZipWriter.Method.deflated.rawValue })
        let exportBinEntry = try #require(ours["export.bin"])
        #expect(exportBinEntry.compressedSize < exportBinEntry.uncompressedSize)
        #expect(try ours.extract(exportBinEntry, limit: 1 << 20) == writer.exportBin(keys: keys))

        let theirs = try PythonZipfile.read(zip)
        #expect(theirs.keys.sorted() == ["export.bin", "export.sig"])
        for (name, entry) in theirs {
            let ourEntry = try #require(ours[name])
            let extracted = try ours.extract(ourEntry, limit: 1 << 20)
            #expect(entry.contents == extracted, "\(name)")
            #expect(entry.method == 8 && entry.modified == "1980-01-01 00:00:00" && entry.mode == 0o100644, "\(name)")
        }
    }

    @Test func storedDeflatedEmptyAndLargeEntriesReadBack() throws {
        var random = SystemRandomNumberGenerator()
        let entries: [(String, Data, ZipWriter.Method)] = [
            ("empty", Data(), .deflated),
            ("stored", Data("stored as it is".utf8), .stored),
            // Incompressible and larger than one 64 KiB output chunk of the deflater.
            ("random", Data((0..<200_000).map { _ in UInt8.random(in: 0...255, using: &random) }), .deflated),
            ("zeros", Data(count: 1 << 20), .deflated),
            ("naïve café", Data("UTF-8 names".utf8), .deflated),
        ]
        var writer = ZipWriter()
        for (name, contents, method) in entries { try writer.add(name, contents, method: method) }
        let zip = try writer.archive()

        let ours = try ZipArchive(zip, maximumEntries: entries.count)
        let theirs = try PythonZipfile.read(zip)
        for (name, contents, method) in entries {
            let entry = try #require(ours[name])
            #expect(entry.method == method.rawValue, "\(name)")
            #expect(try ours.extract(entry, limit: 1 << 21) == contents, "\(name)")
            #expect(theirs[name]?.contents == contents, "\(name)")
        }
    }

    @Test func theSameEntriesGiveTheSameBytes() throws {
        let writer = KeyExportWriter(region: "US", startTimestamp: 1, endTimestamp: 2)
        let keys = try KeyExportWriterTests.randomKeys(20)
        #expect(try writer.zip(keys: keys) == writer.zip(keys: keys))
    }

    @Test func whatAZipWithoutZIP64CannotRecordIsRefused() throws {
        var writer = ZipWriter()
        #expect(throws: ZipWriter.Failure.self) { try writer.add(String(repeating: "n", count: 0x1_0000), Data()) }
        #expect(throws: Never.self) { try writer.add(String(repeating: "n", count: 0xFFFF), Data()) }
    }
}

/// Python's zipfile, another implementation than ours, reading an archive: each entry's
/// contents (checked against its CRC-32 by zipfile), method, time and Unix mode.
enum PythonZipfile {
    struct Entry: Decodable {
        let contents: Data
        let method: Int
        let modified: String
        let mode: Int
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let script = """
        import base64, json, sys, zipfile
        with zipfile.ZipFile(sys.argv[1]) as archive:
            json.dump({info.filename: {
                "contents": base64.b64encode(archive.read(info)).decode(),
                "method": info.compress_type,
                "modified": "%04d-%02d-%02d %02d:%02d:%02d" % info.date_time,
                "mode": info.external_attr >> 16,
            } for info in archive.infolist()}, sys.stdout)
        """

    static func read(_ archive: Data) throws -> [String: Entry] {
        let directory = TemporaryDirectory()
        let path = directory.file("archive.zip")
        try archive.write(to: URL(fileURLWithPath: path))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, path]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let json = output.fileHandleForReading.readDataToEndOfFile()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure(description: "python3's zipfile refused the archive: \(message)") }
        return try JSONDecoder().decode([String: Entry].self, from: json)
    }
}
