import ENArchive
@testable import ENKeyFiles
import Foundation
import Testing

/// The zip reader that key files from strangers go through: every structural lie is an error that
/// names it, never a trap (a trap here took the daemon down).
@Suite struct ZipArchiveTests {
    static let realFiles = ["en-internals-sample.zip", "en-server-example.zip", "legacy-signature-info-sample.zip"]

    func failure(_ data: Data, maximumEntries: Int = 16) -> ZipArchive.Failure? {
        do {
            let archive = try ZipArchive(data, maximumEntries: maximumEntries)
            for entry in archive.entries { _ = try archive.extract(entry, limit: 1 << 20) }
            return nil
        } catch {
            return error
        }
    }

    func patch(_ data: inout Data, at offset: Int, _ value: UInt32, bytes: Int = 4) {
        for index in 0..<bytes { data[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    func offset(of signature: [UInt8], in data: Data) throws -> Int {
        try #require(data.firstRange(of: Data(signature))).lowerBound
    }

    @Test func realExportFilesReadAsPythonsZipfileReadsThem() throws {
        for name in Self.realFiles {
            let data = try Fixture.data(name)
            let ours = try ZipArchive(data, maximumEntries: 16)
            let theirs = try PythonZipfile.read(data)
            #expect(ours.entries.map(\.name).sorted() == theirs.keys.sorted(), "\(name)")
            for (path, entry) in theirs {
                #expect(try ours.extract(try #require(ours[path]), limit: 1 << 24) == entry.contents, "\(name): \(path)")
            }
        }
    }

    /// Each byte of a real archive's headers changed in three ways, and the archive cut at every
    /// length: each gives an archive or a named failure (a trap would end this test run).
    @Test func everyDamagedHeaderByteAndEveryCutIsAnErrorNotATrap() throws {
        var refused = 0, read = 0
        for name in Self.realFiles {
            let original = try Fixture.data(name)
            let directory = try offset(of: [0x50, 0x4b, 0x01, 0x02], in: original)
            let headerBytes = Array(0..<64) + Array(directory..<original.count)
            for index in headerBytes {
                for change in [{ (_: UInt8) in UInt8(0) }, { _ in 0xFF }, { $0 ^ 0x80 }] {
                    var damaged = original
                    damaged[index] = change(damaged[index])
                    if failure(damaged) == nil { read += 1 } else { refused += 1 }
                }
            }
            for length in 0..<original.count where failure(original.prefix(length)) == nil {
                Issue.record("\(name) cut to \(length) bytes was read")
            }
        }
        #expect(refused > 1_000 && read > 0, "\(refused) refused, \(read) read")
    }

    @Test func anOffsetPastTheEndIsNamed() throws {
        var data = try zipArchive([("export.bin", Data(repeating: 1, count: 100))])
        let directory = try offset(of: [0x50, 0x4b, 0x01, 0x02], in: data)
        patch(&data, at: directory + 42, 0xFFFF_FF00)
        #expect(failure(data) == .malformed("export.bin: no local header at 4294967040"))

        var sized = try zipArchive([("export.bin", Data(repeating: 1, count: 100))], method: .stored)
        patch(&sized, at: try offset(of: [0x50, 0x4b, 0x01, 0x02], in: sized) + 20, 0x7FFF_FFFF)
        guard case .malformed(let reason) = failure(sized) else { Issue.record("read an entry past the end"); return }
        #expect(reason.contains("run past the entries' end"))

        var directoryPastEnd = try zipArchive([("export.bin", Data(repeating: 1, count: 10))])
        patch(&directoryPastEnd, at: try offset(of: [0x50, 0x4b, 0x05, 0x06], in: directoryPastEnd) + 16, 0xFFFF_0000)
        guard case .malformed(let outside) = failure(directoryPastEnd) else { Issue.record("read a directory past the end"); return }
        #expect(outside.contains("lies outside the archive"))
    }

    /// Two readers could pick different copies of export.bin: one checks a signature, the other
    /// matches keys. An archive with a name twice is refused.
    @Test func aDuplicateEntryIsRefused() throws {
        let data = try zipArchive([("export.bin", Data([1])), ("export.bin", Data([2]))])
        #expect(failure(data) == .duplicateEntry("export.bin"))
    }

    @Test func tooManyEntriesAreRefusedBeforeReadingThem() throws {
        let data = try zipArchive((0..<100).map { ("entry\($0)", Data([UInt8($0)])) }, method: .stored)
        #expect(failure(data) == .tooManyEntries(count: 100, limit: 16))
        #expect(failure(data, maximumEntries: 100) == nil)
        var refusal: KeyFileError?
        do { _ = try KeyExport(contentsOf: data) } catch { refusal = error }
        #expect(refusal?.description == "not a zip archive (the archive has 100 entries, more than the 16 a key file may have)")
    }

    @Test func aWrongChecksumAnEncryptedEntryAnUnknownMethodAndZIP64AreNamed() throws {
        let original = try zipArchive([("export.bin", Data(repeating: 7, count: 500))])
        let local = try offset(of: [0x50, 0x4b, 0x03, 0x04], in: original)
        let central = try offset(of: [0x50, 0x4b, 0x01, 0x02], in: original)

        var checksum = original
        patch(&checksum, at: central + 16, 0x1234_5678)
        guard case .corruptEntry("export.bin", let reason) = failure(checksum) else { Issue.record("accepted a wrong CRC"); return }
        #expect(reason.contains("CRC-32") && reason.contains("0x12345678"))

        var encrypted = original
        patch(&encrypted, at: central + 8, 1, bytes: 2)
        #expect(failure(encrypted) == .unsupported("an encrypted entry (export.bin)"))

        var method = original
        patch(&method, at: central + 10, 12, bytes: 2)
        #expect(failure(method) == .unsupported("compression method 12 (export.bin)"))

        var zip64 = original
        patch(&zip64, at: central + 24, 0xFFFF_FFFF)
        #expect(failure(zip64) == .unsupported("ZIP64"))

        var renamed = original
        renamed[local + 30] = UInt8(ascii: "X")
        #expect(failure(renamed) == .malformed("export.bin: the local header names another entry"))
    }

    @Test func anEntryThatDeclaresTooMuchIsRefusedBeforeInflating() throws {
        let data = try zipArchive([("export.bin", Data(count: 2 << 20))])
        let archive = try ZipArchive(data, maximumEntries: 2)
        #expect(throws: ZipArchive.Failure.entryTooLarge(name: "export.bin", declaredBytes: 2 << 20, limit: 1 << 20)) {
            try archive.extract(try #require(archive["export.bin"]), limit: 1 << 20)
        }
    }

    @Test func notAZipIsNamed() {
        #expect(failure(Data("hello".utf8)) == .malformed("5 bytes are too few for a zip archive"))
        #expect(failure(Data(repeating: 0x41, count: 1000)) == .malformed("no end of central directory record: not a zip archive, or cut short"))
    }
}
