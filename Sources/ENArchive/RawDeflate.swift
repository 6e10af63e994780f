import CENZlib

/// Raw DEFLATE (no zlib header), as zip entries and the payload of a SMART Health Card carry it,
/// inflated with a bound on the output so a small input cannot expand into gigabytes.
public enum RawDeflate {
    public enum Failure: Error, Equatable {
        case corrupt
        case tooLarge(limit: Int)
    }

    /// `bytes` as raw DEFLATE without compression (stored blocks of at most 65535 bytes), which
    /// every inflater reads: for writing SMART Health Cards in tests and fuzzers.
    public static func stored(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let bytes = Array(bytes)
        var output = [UInt8](), offset = 0
        repeat {
            let length = min(bytes.count - offset, 0xFFFF)
            let final: UInt8 = offset + length == bytes.count ? 1 : 0
            output += [final, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            output += bytes[offset..<offset + length]
            offset += length
        } while offset < bytes.count
        return output
    }

    public static func inflate(_ input: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        let result = input.withUnsafeBytes { bytes in Result { () throws(Failure) in try inflate(bytes, limit: limit, as: [UInt8].self) } }
        return try result.get()
    }

    /// Inflates `input` into `Output` (`[UInt8]` or `Data`), refusing more than `limit` bytes.
    public static func inflate<Output: RangeReplaceableCollection<UInt8>>(
        _ input: UnsafeRawBufferPointer, limit: Int, as _: Output.Type = Output.self
    ) throws(Failure) -> Output {
        var stream = z_stream()
        // Negative window bits: raw DEFLATE.
        guard inflateInit2_(&stream, -15, CENZLIB_VERSION, CENZLIB_STREAM_SIZE) == Z_OK else { throw .corrupt }
        defer { inflateEnd(&stream) }
        var output = Output()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        // zlib never writes through next_in; its declaration is merely not const.
        stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
        var remaining = input.count
        while true {
            // avail_in is 32 bits: feed a larger input in slices.
            if stream.avail_in == 0 && remaining > 0 {
                stream.avail_in = UInt32(min(remaining, Int(UInt32.max)))
                remaining -= Int(stream.avail_in)
            }
            let status = chunk.withUnsafeMutableBufferPointer { buffer -> Int32 in
                stream.next_out = buffer.baseAddress
                stream.avail_out = UInt32(buffer.count)
                return CENZlib.inflate(&stream, Z_NO_FLUSH)
            }
            let produced = chunk.count - Int(stream.avail_out)
            guard output.count + produced <= limit else { throw .tooLarge(limit: limit) }
            output.append(contentsOf: chunk[..<produced])
            if status == Z_STREAM_END { return output }
            guard status == Z_OK, produced > 0 || stream.avail_in > 0 || remaining > 0 else { throw .corrupt }
        }
    }

    /// The CRC-32 a zip entry declares for its inflated bytes.
    public static func crc32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: uLong = 0
        var offset = 0
        while offset < bytes.count {
            let length = min(bytes.count - offset, 1 << 30)
            crc = CENZlib.crc32(crc, bytes.baseAddress!.advanced(by: offset).assumingMemoryBound(to: Bytef.self), uInt(length))
            offset += length
        }
        return UInt32(truncatingIfNeeded: crc)
    }
}
