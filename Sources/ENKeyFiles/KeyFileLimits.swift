/// Bounds on what a key file may make the agent read and inflate.
public struct KeyFileLimits: Sendable, Equatable {
    /// The largest .zip (or bare export.bin) accepted.
    public var maximumFileSize: Int
    /// The largest inflated export.bin or export.sig.
    public var maximumEntrySize: Int
    /// The largest inflated-to-compressed ratio of an entry. Key data is random and barely
    /// compresses, so a real export is close to 1; a zip bomb is in the hundreds or more.
    public var maximumCompressionRatio: Int
    /// The key files of one detection call (or one batch of a session) together (they stream, so
    /// this bounds the work a caller can hand over, not memory): two weeks of a large country's
    /// keys are about 40 MB.
    public var maximumTotalSize = 128 << 20
    /// The largest inflated export.sig: one signature is about 200 bytes, and a file has at most
    /// `KeyExport.maximumSignatures` (a list of more, up to this size, is refused saying so).
    /// Read whole, unlike export.bin, which streams.
    public var maximumSignatureListSize = 1 << 20

    /// Room for a million keys (about 30 MB) in one file.
    public static let standard = KeyFileLimits(maximumFileSize: 64 << 20, maximumEntrySize: 64 << 20, maximumCompressionRatio: 20)

    public init(maximumFileSize: Int, maximumEntrySize: Int, maximumCompressionRatio: Int) {
        self.maximumFileSize = maximumFileSize
        self.maximumEntrySize = maximumEntrySize
        self.maximumCompressionRatio = maximumCompressionRatio
    }
}
