import ENArchive
import ENCore
import ENKeyFileWriter
@testable import ENKeyFiles
import Foundation
import TestSupport
import Testing

/// A key file read as a stream (`KeyFileStream`) in pieces of any size, and a detection over
/// streamed files that a check at a file's end refuses whole.
@Suite struct KeyFileStreamTests {
    static let signer = try! P256PrivateKey()
    static var writer: KeyExportWriter {
        KeyExportWriter(region: "US", startTimestamp: 10, endTimestamp: 20, signer: (signer, SignatureInfo(keyId: "k", keyVersion: "1")))
    }
    static let trusted = [TrustedKey(publicKey: signer.publicKey)]

    /// A signed zip of `keys` whose export.bin ends with what servers put first (a region, here
    /// after the keys: fields may come in any order) and an unknown field longer than the stream
    /// holds, so that fields straddle every boundary of the pieces read.
    static func file(_ keys: [DiagnosisKey], method: ZipWriter.Method = .deflated) throws -> Data {
        var bin = writer.exportBin(keys: keys)
        bin += Data([0x1a, 0x02] + Array("DE".utf8))
        let unknown = 3 * KeyFileStream.maximumFieldSize
        bin += Data([0xfa, 0x01] + varint(unknown) + (0..<unknown).map { _ in UInt8.random(in: 0 ... .max) })  // field 31, length-delimited
        return try zipArchive([("export.bin", bin), ("export.sig", try writer.signatureList(for: bin))], method: method)
    }

    static func varint(_ value: Int) -> [UInt8] {
        var value = UInt64(value), bytes = [UInt8]()
        while value >= 0x80 { bytes.append(UInt8(value & 0x7f) | 0x80); value >>= 7 }
        return bytes + [UInt8(value)]
    }

    static func read(_ file: Data, chunkSize: Int) throws -> (keys: [DiagnosisKey], summary: KeyFileSummary) {
        let stream = try KeyFileStream(KeyFileContents(file), chunkSize: chunkSize)
        var keys = [DiagnosisKey]()
        while let (key, _) = try stream.next() { keys.append(key) }
        return (keys, stream.summary)
    }

    /// The same read `batch` keys at a time, as the detection reads them (`nextKeys`, whose
    /// plain keys skip `next`).
    static func read(_ file: Data, chunkSize: Int, batch: Int) throws -> (keys: [DiagnosisKey], summary: KeyFileSummary) {
        let stream = try KeyFileStream(KeyFileContents(file), chunkSize: chunkSize)
        var keys = [DiagnosisKey]()
        while try stream.nextKeys(batch, into: &keys) {}
        return (keys, stream.summary)
    }

    @Test(arguments: [ZipWriter.Method.deflated, .stored])
    func keysStraddlingEveryChunkBoundaryReadTheSame(method: ZipWriter.Method) throws {
        let keys = try KeyExportWriterTests.randomKeys(300)
        let file = try Self.file(keys, method: method)
        let whole = try KeyExport(contentsOf: file)
        var wholeKeys = [DiagnosisKey]()
        try whole.forEachKey { key, _ in wholeKeys.append(key) }
        #expect(wholeKeys == keys)
        #expect(whole.region == "DE" && whole.keyCount == 300 && whole.signatureStatus(trustedKeys: Self.trusted) == .verified)
        // A key message is about 30 bytes: pieces of 1 to 37 bytes cut each one at every place.
        for chunkSize in Array(1...37) + [64, 1_000, 4_096] {
            for (read, summary) in [try Self.read(file, chunkSize: chunkSize), try Self.read(file, chunkSize: chunkSize, batch: 7)] {
                #expect(read == keys, "pieces of \(chunkSize) bytes")
                #expect(summary.region == "DE" && summary.startTimestamp == 10 && summary.endTimestamp == 20 && summary.keyCount == 300)
                #expect(summary.exportBinSHA256 == whole.exportBinSHA256, "pieces of \(chunkSize) bytes")
                #expect(summary.signatureStatus(trustedKeys: Self.trusted) == .verified)
            }
        }
    }

    @Test func aFieldCutShortIsRefusedAsReadingItWholeRefusesIt() throws {
        let bin = Self.writer.exportBin(keys: try KeyExportWriterTests.randomKeys(3))
        // Cut inside the unknown field that streams by unheld, and inside the last key.
        let long = bin + Data([0xfa, 0x01] + Self.varint(200_000) + [UInt8](repeating: 0, count: 100_000))
        let expected = KeyFileError.malformedExport("field 31 claims 200000 bytes but only 100000 remain (at byte \(bin.count + 2))")
        for chunkSize in [1, 7, KeyFileStream.chunkSize] {
            #expect(throws: expected) {
                let stream = try KeyFileStream(exportBin: long, signatureList: nil, chunkSize: chunkSize)
                while try stream.next() != nil {}
            }
        }
        #expect(throws: KeyFileError.self) { try KeyExport(exportBin: bin.dropLast(3), signatureList: nil) }
    }

    /// The stream holds a chunk of the file, a chunk of export.bin and the longest field, however
    /// many keys the file has.
    @Test func theBuffersStayBoundedOverAHundredThousandKeys() throws {
        let keys = try (0..<100_000).map { index in
            DiagnosisKey(key: TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(),
                                                   rollingStartIntervalNumber: ENIntervalNumber(2_700_000 + UInt32(index % 14) * 144)),
                         reportType: .confirmedTest)
        }
        let file = try Self.writer.zip(keys: keys)
        // Arrays round their capacity up a little.
        let bound = 2 * KeyFileStream.chunkSize + KeyFileStream.maximumFieldSize + 1_024
        #expect(file.count > 8 * bound, "the file is much larger than the stream's buffers")
        let stream = try KeyFileStream(KeyFileContents(file))
        var count = 0, largest = stream.bufferCapacity
        while try stream.next() != nil {
            count += 1
            largest = max(largest, stream.bufferCapacity)
        }
        #expect(count == 100_000)
        #expect(largest <= bound, "the stream held \(largest) bytes")
        #expect(stream.summary.signatureStatus(trustedKeys: Self.trusted) == .verified)
    }

    // MARK: A detection over streamed files

    /// A detection that matches a sighting of `keys[1]`, with `files` checked against the trusted
    /// key; `readAhead` batches read ahead first.
    func detect(_ files: [(name: String, data: Data)], exposing key: DiagnosisKey, readAhead: Int = 0) throws -> DetectionResult {
        let sighting = try Broadcaster(key: key, metadata: Metadata(transmitPower: -8))
            .sighting(at: key.key.rollingStartIntervalNumber.unixSeconds + 60, rssi: -65)
        let trusted = Self.trusted
        let keys = ExposureDetector.Keys(files.map { name, data in
            ExposureDetector.File(name: name, open: { try KeyFileStream(KeyFileContents(data)) }) { summary in
                let status = summary.signatureStatus(trustedKeys: trusted)
                guard status == .verified else { throw Unverified(name: name, status: status) }
            }
        })
        var asked = 0
        keys.readAhead { asked += 1; return asked <= readAhead }
        return try ExposureDetector(index: SightingIndex([sighting]), threads: 2).detect(keys)
    }

    struct Unverified: Error, Equatable {
        let name: String
        let status: SignatureStatus
    }

    /// Keys of more batches than one, each of a report type the matcher takes.
    static func confirmedKeys(_ count: Int) throws -> [DiagnosisKey] {
        try KeyExportWriterTests.randomKeys(count).map { key in
            var key = key
            key.reportType = .confirmedTest
            return key
        }
    }

    @Test func aGoodFileMatches() throws {
        let keys = try Self.confirmedKeys(20_000)
        let result = try detect([("good", try Self.writer.zip(keys: keys))], exposing: keys[1])
        #expect(result.matches.map(\.key) == [keys[1]])
        #expect(result.keysChecked == 20_000 && result.files.map(\.keyCount) == [20_000])
    }

    /// Batches read ahead (while enctl's sightings are read) are matched as those the workers
    /// read: every key counted once, a key's newest publication winning across files.
    @Test(arguments: [1, 3, 100])
    func keysReadAheadMatchAsTheOthers(batches: Int) throws {
        let keys = try Self.confirmedKeys(3 * ExposureDetector.batchSize)
        var revoked = keys[1]
        revoked.reportType = .revoked
        let files = [("first", try Self.writer.zip(keys: keys)), ("second", try Self.writer.zip(keys: [keys[5], revoked]))]
        let plain = try detect(files, exposing: keys[1])
        let readAhead = try detect(files, exposing: keys[1], readAhead: batches)
        #expect(plain.matches.isEmpty && plain.revokedKeys == [keys[1].key.identity] && plain.keysChecked == keys.count + 2)
        #expect(readAhead.matches.isEmpty && readAhead.revokedKeys == plain.revokedKeys && readAhead.keysChecked == plain.keysChecked)
        #expect(try detect(Array(files.prefix(1)), exposing: keys[1], readAhead: batches).matches.map(\.key) == [keys[1]])
    }

    /// A worker's batch is matched day by day: every key once, the days in order, whether the
    /// keys span a fortnight (counted into days) or centuries (sorted).
    @Test(arguments: [14, 1 << 20])
    func aBatchIsMatchedDayByDay(days: Int) throws {
        let keys = try KeyExportWriterTests.randomKeys(1_000).map { key -> DiagnosisKey in
            var key = key
            key.key.rollingStartIntervalNumber = ENIntervalNumber(UInt32(2_700_000 + Int.random(in: 0..<days) * 144 + Int.random(in: 0..<144)))
            return key
        }
        let order = ExposureDetector.dayOrder(keys)
        let days = order.map { keys[$0].key.rollingStartIntervalNumber.rawValue / 144 }
        #expect(order.sorted() == Array(keys.indices) && days == days.sorted())
        #expect(ExposureDetector.dayOrder([]).isEmpty)
    }

    @Test func aBadSignatureFailsTheDetectionWithNothingReported() throws {
        let keys = try Self.confirmedKeys(20_000)
        let stranger = KeyExportWriter(region: "US", startTimestamp: 10, endTimestamp: 20,
                                       signer: (try P256PrivateKey(), SignatureInfo(keyId: "k", keyVersion: "1")))
        #expect(throws: Unverified(name: "forged", status: .invalid)) {
            try detect([("good", try Self.writer.zip(keys: [keys[2]])), ("forged", try stranger.zip(keys: keys))], exposing: keys[1])
        }
    }

    @Test func aTruncatedZipIsRefusedNamingTheFile() throws {
        let keys = try Self.confirmedKeys(100)
        let file = try Self.writer.zip(keys: keys)
        let error = expectError(KeyFileRefusal.self) { try detect([("cut", file.prefix(file.count - 30))], exposing: keys[1]) }
        #expect(error?.name == "cut")
        guard case .notAZipArchive = error?.error else { Issue.record("\(String(describing: error))"); return }
    }

    /// The last of 40,000 keys is invalid, and another file's export.bin fails its CRC-32: both
    /// come to light only after batches of the file were matched, and refuse the detection.
    @Test func aCheckLateInTheFileFailsTheDetection() throws {
        var keys = try Self.confirmedKeys(40_000).map { key -> ExportProto.TemporaryExposureKey in
            var message = ExportProto.TemporaryExposureKey()
            message.keyData = key.key.keyData.bytes
            message.rollingStartIntervalNumber = Int32(key.key.rollingStartIntervalNumber.rawValue)
            message.reportType = key.reportType
            return message
        }
        keys[39_999].keyData = Array(repeating: 7, count: 15)
        var export = ExportProto.TemporaryExposureKeyExport()
        export.region = "US"
        export.keys = keys
        let bin = Data(KeyExport.header + export.serializedBytes())
        let late = try zipArchive([("export.bin", bin), ("export.sig", try Self.writer.signatureList(for: bin))])
        let exposed = try KeyExport.decodedKey(Data(keys[1].serializedBytes()))
        for readAhead in [0, ExposureDetector.readAheadBatches] {
            #expect(throws: KeyFileRefusal(name: "late", error: .invalidKey(index: 39_999, reason: "key data is 15 bytes, not 16"))) {
                try detect([("late", late)], exposing: exposed, readAhead: readAhead)
            }
        }

        // The CRC-32 of export.bin in the central directory, changed: found once it is all inflated.
        let good = try Self.writer.zip(keys: try Self.confirmedKeys(40_000))
        var damaged = good
        let directory = try #require(damaged.range(of: Data([0x50, 0x4b, 0x01, 0x02])))
        damaged[directory.lowerBound + 16] ^= 0xff
        let error = expectError(KeyFileRefusal.self) { try detect([("crc", damaged)], exposing: exposed) }
        #expect(error?.name == "crc")
        guard case .corruptEntry(name: "export.bin", let reason) = error?.error, reason.contains("CRC-32") else {
            Issue.record("\(String(describing: error))")
            return
        }
    }
}
