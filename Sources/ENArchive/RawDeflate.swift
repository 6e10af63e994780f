import CENZlib

/// Raw DEFLATE (no zlib header), as zip entries and the payload of a SMART Health Card carry it,
/// inflated with a bound on the output so a small input cannot expand into gigabytes, and
/// deflated for the zip archives we write.
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
        let inflater = try Inflater()
        var output = Output()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var consumed = 0
        while true {
            let step = try chunk.withMutableBytes { buffer throws(Failure) in
                try inflater.inflate(UnsafeRawBufferPointer(rebasing: input[consumed...]), into: buffer, inputEnds: true)
            }
            consumed += step.consumed
            guard output.count + step.produced <= limit else { throw .tooLarge(limit: limit) }
            output.append(contentsOf: chunk[..<step.produced])
            if step.finished { return output }
        }
    }

    /// Raw DEFLATE inflated a piece at a time: compressed bytes in as they are read, inflated bytes
    /// out into the caller's buffer, so that neither side is ever held whole. zlib's state is
    /// about 40 KB (its 32 KB window among it). Not Sendable: one thread uses it at a time.
    public final class Inflater {
        private var stream = z_stream()

        public init() throws(Failure) {
            // Negative window bits: raw DEFLATE.
            guard inflateInit2_(&stream, -15, CENZLIB_VERSION, CENZLIB_STREAM_SIZE) == Z_OK else { throw .corrupt }
        }

        deinit { inflateEnd(&stream) }

        /// Inflates from `input` into `output` until one of them runs out or the stream ends, and
        /// says how many bytes each side took and whether the stream ended. `inputEnds`: nothing
        /// follows `input`, so a stream that needs more is cut short (`corrupt`).
        public func inflate(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
                            inputEnds: Bool) throws(Failure) -> (consumed: Int, produced: Int, finished: Bool) {
            // avail_in and avail_out are 32 bits: larger buffers go in a slice at a time, over calls.
            let inputCount = min(input.count, Int(UInt32.max)), outputCount = min(output.count, Int(UInt32.max))
            // zlib never writes through next_in; its declaration is merely not const.
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.avail_in = UInt32(inputCount)
            stream.next_out = output.baseAddress?.assumingMemoryBound(to: Bytef.self)
            stream.avail_out = UInt32(outputCount)
            let status = CENZlib.inflate(&stream, Z_NO_FLUSH)
            let consumed = inputCount - Int(stream.avail_in), produced = outputCount - Int(stream.avail_out)
            stream.next_in = nil
            stream.next_out = nil
            if status == Z_STREAM_END { return (consumed, produced, true) }
            // Z_BUF_ERROR: no progress was possible this time, for want of input or of output space.
            guard status == Z_OK || status == Z_BUF_ERROR else { throw .corrupt }
            // With room left for output, zlib stopped for want of input: there is none to come.
            if inputEnds && consumed == input.count && produced < output.count { throw .corrupt }
            return (consumed, produced, false)
        }
    }

    /// `input` as raw DEFLATE at zlib's default level: the same input gives the same bytes (with
    /// the same zlib).
    public static func deflate(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        var stream = z_stream()
        // Negative window bits: raw DEFLATE. With these constant parameters zlib fails only when
        // it cannot allocate its state, which Swift's own allocations treat as fatal as well.
        let setUp = deflateInit2_(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, CENZLIB_VERSION, CENZLIB_STREAM_SIZE)
        guard setUp == Z_OK else { fatalError("zlib could not start a deflate stream (status \(setUp): out of memory)") }
        defer { deflateEnd(&stream) }
        var output = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
        var remaining = input.count
        while true {
            stream.feed(&remaining)
            let status = chunk.withUnsafeMutableBufferPointer { buffer -> Int32 in
                stream.next_out = buffer.baseAddress
                stream.avail_out = UInt32(buffer.count)
                return CENZlib.deflate(&stream, remaining == 0 ? Z_FINISH : Z_NO_FLUSH)
            }
            output.append(contentsOf: chunk[..<(chunk.count - Int(stream.avail_out))])
            if status == Z_STREAM_END { return output }
            // Each call has fresh output space, so zlib always makes progress: anything but
            // Z_OK would be a misused stream.
            precondition(status == Z_OK, "deflate returned \(status)")
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

extension z_stream {
    /// avail_in is 32 bits: a larger input goes in in slices, the next one once zlib took the last.
    fileprivate mutating func feed(_ remaining: inout Int) {
        guard avail_in == 0 && remaining > 0 else { return }
        avail_in = UInt32(min(remaining, Int(UInt32.max)))
        remaining -= Int(avail_in)
    }
}
