import CENZlib

/// Inflates raw DEFLATE (no zlib header), as the payload of a SMART Health Card is, refusing
/// output beyond `limit` bytes so a small card cannot expand into gigabytes.
enum RawDeflate {
    enum Failure: Error, Equatable {
        case corrupt
        case tooLarge(limit: Int)
    }

    static func inflate(_ input: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        // Negative window bits: raw DEFLATE.
        guard inflateInit2_(&stream, -15, CENZLIB_VERSION, CENZLIB_STREAM_SIZE) == Z_OK else { throw .corrupt }
        defer { inflateEnd(&stream) }
        var output = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 16_384)
        var input = input
        return try input.withUnsafeMutableBufferPointer { source throws(Failure) -> [UInt8] in
            stream.next_in = source.baseAddress
            stream.avail_in = UInt32(source.count)
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { buffer -> Int32 in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = UInt32(buffer.count)
                    return CENZlib.inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                guard output.count + produced <= limit else { throw .tooLarge(limit: limit) }
                output += chunk[..<produced]
                if status == Z_STREAM_END { return output }
                guard status == Z_OK, produced > 0 || stream.avail_in > 0 else { throw .corrupt }
            }
        }
    }
}
