import ENArchive
import ENCore
import FoundationEssentials
import Glibc

/// A key file's bytes: in memory, or in an open file read a piece at a time (`pread`), so that a
/// detection never holds a whole file. Sendable: nothing changes after init, and `pread` keeps
/// no file position.
public final class KeyFileContents: ZipSource {
    public let size: UInt64
    private let storage: Storage

    private enum Storage {
        case data(Data)
        case descriptor(Int32, closes: Bool)
    }

    public init(_ data: Data) {
        size = UInt64(data.count)
        storage = .data(data)
    }

    /// The first `size` bytes of the regular file open at `descriptor` (what fstat said when it
    /// was checked: bytes it gains later are not read). `closes`: the descriptor is this
    /// object's, closed with it.
    public init(descriptor: Int32, size: Int, closes: Bool) {
        self.size = UInt64(size)
        storage = .descriptor(descriptor, closes: closes)
    }

    deinit {
        if case .descriptor(let descriptor, true) = storage { close(descriptor) }
    }

    public func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws(ZipArchive.Failure) {
        switch storage {
        case .data(let data):
            try data.read(at: offset, into: buffer)
        case .descriptor(let descriptor, _):
            var done = 0
            while done < buffer.count {
                let count = pread(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
                if count > 0 { done += count; continue }
                if count < 0 && errno == EINTR { continue }
                throw .unreadable(count == 0 ? "it is shorter than the \(size) bytes it had when it was opened: it changed while it was read"
                                             : String(cString: strerror(errno)))
            }
        }
    }

    /// The file's first bytes (at most `count`).
    func prefix(_ count: Int) throws(KeyFileError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Int(min(UInt64(count), size)))
        do { try bytes.withMutableBytes { buffer throws(ZipArchive.Failure) in try read(at: 0, into: buffer) } } catch { throw ZipEntries.refusal(error) }
        return bytes
    }

    /// SHA-256 of the whole file, read `KeyFileStream.chunkSize` bytes at a time: what recognises
    /// a file processed before, whatever its name.
    public func sha256() throws(KeyFileError) -> [UInt8] {
        let hasher = SHA256.Hasher()
        var chunk = [UInt8](repeating: 0, count: KeyFileStream.chunkSize), offset: UInt64 = 0
        while offset < size {
            let count = Int(min(UInt64(chunk.count), size - offset))
            do {
                try chunk.withMutableBytes { buffer throws(ZipArchive.Failure) in
                    try read(at: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]))
                    hasher.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                }
            } catch {
                throw ZipEntries.refusal(error)
            }
            offset += UInt64(count)
        }
        return hasher.finalize()
    }
}

/// A key file read as a stream: the zip's structure and export.sig when it opens, then export.bin
/// inflated a chunk at a time, its SHA-256 computed and its fields read as the bytes come, a key
/// at a time. Memory stays at a chunk of the file, a chunk of export.bin and the longest field
/// (`maximumFieldSize`), however many keys the file has.
///
/// The file is only good once `next()` returned nil: the checks that need the whole of
/// export.bin (its size and CRC-32, the header fields after the last key, the signature over it)
/// come at the end, so whoever uses keys before then must be ready to drop them. Every refusal is
/// the `KeyFileError` that reading the file whole (`KeyExport`) gives, as `KeyExport` reads
/// through this. Not Sendable: one thread reads it at a time.
public final class KeyFileStream {
    /// Bytes read from the file, and from export.bin, at a time.
    public static let chunkSize = 1 << 16
    /// The longest field of export.bin held whole: a key, the region, a signature's info (each a
    /// few dozen bytes in real files). An unknown field streams by unheld, whatever its length.
    public static let maximumFieldSize = 1 << 16

    private enum Source {
        case entry(ZipArchive.EntryReader)
        /// A bare export.bin: the file's bytes from `next` to its end.
        case file(KeyFileContents, next: UInt64)
    }

    private var source: Source
    private let chunkSize: Int
    /// export.bin's bytes read but not yet taken: `start..<filled` of `buffer`, which begins at
    /// byte `origin` of export.bin.
    private var buffer: [UInt8]
    private var start = 0, filled = 0, origin = 0
    private var sourceEnded = false
    /// Bytes of a field too long to hold that are still to stream by, and how to word it being cut short.
    private var skipping = 0, skipped: SkippedField?
    private let hasher = SHA256.Hasher()
    private var header = KeyFileSummary()

    /// Opens a key file (a zip archive with export.bin and export.sig, or a bare export.bin):
    /// checks the archive's structure and the entries' declared sizes, reads and parses export.sig
    /// and checks export.bin's header. `chunkSize` is for tests, which cut the file into tiny pieces.
    public convenience init(_ file: KeyFileContents, limits: KeyFileLimits = .standard, chunkSize: Int = KeyFileStream.chunkSize) throws(KeyFileError) {
        guard file.size <= UInt64(limits.maximumFileSize) else { throw .tooLarge(bytes: Int(clamping: file.size), limit: limits.maximumFileSize) }
        if try file.prefix(KeyExport.header.count) == KeyExport.header {
            try self.init(source: .file(file, next: 0), signatureList: nil, chunkSize: chunkSize)
        } else {
            let entries = try ZipEntries(file, limits: limits)
            let signatureList = try entries.readIfPresent("export.sig", limit: limits.maximumSignatureListSize)
            try self.init(source: .entry(try entries.reader("export.bin", chunkSize: chunkSize)), signatureList: signatureList, chunkSize: chunkSize)
        }
    }

    /// export.bin and export.sig apart (the format's two entries, as the fuzzer and tests give them).
    public convenience init(exportBin: Data, signatureList: Data?, chunkSize: Int = KeyFileStream.chunkSize) throws(KeyFileError) {
        try self.init(source: .file(KeyFileContents(exportBin), next: 0), signatureList: signatureList, chunkSize: chunkSize)
    }

    private init(source: Source, signatureList: Data?, chunkSize: Int) throws(KeyFileError) {
        self.source = source
        self.chunkSize = max(1, chunkSize)
        buffer = [UInt8](repeating: 0, count: self.chunkSize + Self.maximumFieldSize)
        while filled < KeyExport.header.count, try refill() {}
        guard filled >= KeyExport.header.count, buffer[..<KeyExport.header.count].elementsEqual(KeyExport.header) else { throw .badHeader }
        start = KeyExport.header.count
        header.signatures = try signatureList.map(KeyExport.parseSignatures)
    }

    /// The bytes this stream holds for export.bin, whatever the file's size: what the tests check stays bounded.
    public var bufferCapacity: Int {
        var capacity = buffer.capacity
        if case .entry(let reader) = source { capacity += reader.bufferCapacity }
        return capacity
    }

    /// The next key, in file order, and whether it came from revised_keys; nil at the end of the
    /// file, once every check of the whole file passed (then `summary` says what it held).
    public func next() throws(KeyFileError) -> (key: DiagnosisKey, isRevision: Bool)? {
        while true {
            if skipping > 0 {
                let passed = min(skipping, filled - start)
                start += passed
                skipping -= passed
                if skipping > 0, try !refill(), let field = skipped {
                    // As the whole file's reading words it: the length against what export.bin has left.
                    let left = origin + filled - field.contents
                    throw .malformedExport("\(ProtobufError("field \(field.number) claims \(field.end - field.contents) bytes but only \(left) remain", at: field.lengthOffset))")
                }
                continue
            }
            if start == filled {
                if sourceEnded { return nil }
                _ = try refill()
                continue
            }
            let last = sourceEnded
            let step = buffer.withUnsafeBytes { bytes -> Step in
                var wire = ProtobufWire(bytes, in: start..<filled, isLastPiece: last)
                do {
                    guard let field = try wire.next() else { return .header }
                    start = wire.offset
                    return try take(field, in: bytes).map(Step.key) ?? .header
                } catch let error as KeyFileError {
                    return .refused(error)
                } catch let error as ProtobufError {
                    if let unfinished = error.unfinished { return .unfinished(unfinished) }
                    return .refused(.malformedExport("\(error.moved(by: origin))"))
                } catch {
                    return .refused(.malformedExport("\(error)"))
                }
            }
            switch step {
            case .key(let key): return key
            case .header: continue
            case .unfinished(let field): try readOn(field)
            case .refused(let error): throw error
            }
        }
    }

    /// What reading one field of export.bin came to.
    private enum Step {
        case key((key: DiagnosisKey, isRevision: Bool))
        case header
        /// The field goes on past the bytes read.
        case unfinished(ProtobufError.Unfinished)
        case refused(KeyFileError)
    }

    /// Up to `limit` keys appended to `keys`; false at the end of the file (after its checks passed).
    public func nextKeys(_ limit: Int, into keys: inout [DiagnosisKey]) throws(KeyFileError) -> Bool {
        var taken = 0
        while taken < limit {
            taken += takePlainKeys(limit - taken, into: &keys)
            guard taken < limit else { break }
            guard let (key, _) = try next() else { return false }
            keys.append(key)
            taken += 1
        }
        return true
    }

    /// The keys from here on as servers write them, up to `limit`, appended to `keys`, and their
    /// count: keys (field 7) whose message lies whole in the buffer, with a one-byte length (a
    /// plain key takes at most 41 bytes), that `KeyExport.scannedKey` reads. They are most of a
    /// file's fields, and `next`, which reads any field, spends more on each than the key's own
    /// reading; it takes what this stops at.
    private func takePlainKeys(_ limit: Int, into keys: inout [DiagnosisKey]) -> Int {
        guard skipping == 0 else { return 0 }
        var at = start, taken = 0
        buffer.withUnsafeBytes { bytes in
            while taken < limit, filled - at >= 2, bytes[at] == 0x3A, bytes[at + 1] < 0x80 {
                let length = Int(bytes[at + 1]), contents = at + 2
                guard filled - contents >= length, let key = KeyExport.scannedKey(UnsafeRawBufferPointer(rebasing: bytes[contents..<contents + length]))
                else { break }
                keys.append(key)
                taken += 1
                at = contents + length
            }
        }
        start = at
        header.keyCount += taken
        return taken
    }

    /// What the file held, once `next()` returned nil.
    public var summary: KeyFileSummary {
        precondition(sourceEnded && start == filled && skipping == 0, "the summary of a key file read only in part")
        return header
    }

    /// Past a field cut off by the end of the bytes read: more bytes, or the field streamed by
    /// when it is too long to hold and nothing reads it.
    private func readOn(_ field: ProtobufError.Unfinished) throws(KeyFileError) {
        if let number = field.field, let end = field.end, let lengthOffset = field.lengthOffset, let contents = field.contentStart,
           ![3, 6, 7, 8].contains(number) {
            skipping = end - start
            skipped = SkippedField(number: number, lengthOffset: origin + lengthOffset, contents: origin + contents, end: origin + end)
            return
        }
        guard filled - start < Self.maximumFieldSize else {
            let number = field.field.map { "field \($0)" } ?? "a field"
            throw .malformedExport("\(number) at byte \(origin + start) is longer than the \(Self.maximumFieldSize) bytes a key, the region or a signature's info may take")
        }
        _ = try refill()
    }

    /// An unknown field too long to hold, streaming by; offsets in export.bin.
    private struct SkippedField {
        let number, lengthOffset, contents, end: Int
    }

    /// Reads the next piece of export.bin behind what the buffer holds; false at its end.
    private func refill() throws(KeyFileError) -> Bool {
        guard !sourceEnded else { return false }
        if start > 0 {
            buffer.withUnsafeMutableBytes { bytes in
                bytes.baseAddress!.copyMemory(from: bytes.baseAddress! + start, byteCount: filled - start)
            }
            origin += start
            filled -= start
            start = 0
        }
        let room = min(chunkSize, buffer.count - filled)
        precondition(room > 0, "the buffer holds more than its longest field")
        let count: Int
        switch source {
        case .entry(var reader):
            let read = buffer.withMutableBytes { bytes in
                Result { () throws(ZipArchive.Failure) in try reader.read(into: UnsafeMutableRawBufferPointer(rebasing: bytes[filled..<filled + room])) }
            }
            source = .entry(reader)
            do { count = try read.get() } catch { throw ZipEntries.refusal(error) }
        case .file(let file, let next):
            count = Int(min(UInt64(room), file.size - next))
            do {
                try buffer.withMutableBytes { bytes throws(ZipArchive.Failure) in
                    try file.read(at: next, into: UnsafeMutableRawBufferPointer(rebasing: bytes[filled..<filled + count]))
                }
            } catch {
                throw ZipEntries.refusal(error)
            }
            source = .file(file, next: next + UInt64(count))
        }
        buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[filled..<filled + count])) }
        filled += count
        if count == 0 {
            sourceEnded = true
            header.exportBinSHA256 = hasher.finalize()
        }
        return count > 0
    }

    /// One whole field of export.bin: a key to hand out, or a header field kept for the summary.
    private func take(_ field: ProtobufField, in bytes: UnsafeRawBufferPointer) throws -> (key: DiagnosisKey, isRevision: Bool)? {
        do {
            switch field.number {
            case 1: header.startTimestamp = try field.fixed64("start_timestamp")
            case 2: header.endTimestamp = try field.fixed64("end_timestamp")
            case 3: header.region = try field.string("region", in: bytes)
            case 4: header.batchNumber = Int(try field.int32("batch_num"))
            case 5: header.batchSize = Int(try field.int32("batch_size"))
            case 6: header.signatureInfos.append(SignatureInfo(try field.message("signature_infos", in: bytes) as ExportProto.SignatureInfo))
            case 7:
                defer { header.keyCount += 1 }
                return (try KeyExport.decodeKey(in: bytes, try field.contents("keys"), index: header.keyCount, origin: origin), false)
            case 8:
                defer { header.revisedKeyCount += 1 }
                let index = header.keyCount + header.revisedKeyCount
                return (try KeyExport.decodeKey(in: bytes, try field.contents("revised_keys"), index: index, origin: origin), true)
            default:
                break  // Unknown fields from a newer format version are skipped.
            }
        } catch let error as ProtobufError {
            throw KeyFileError.malformedExport("\(error.moved(by: origin))")
        }
        return nil
    }
}
