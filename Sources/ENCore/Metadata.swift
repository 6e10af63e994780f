/// The 4 bytes of metadata that travel encrypted in the AEM (protocol.md §1).
public struct Metadata: Hashable, Sendable {
    public var majorVersion: UInt8
    public var minorVersion: UInt8
    /// The advertised transmit power in dBm.
    public var transmitPower: Int8
    /// Calibration confidence 0...3; carried from version 1.1 on, nil before.
    public var calibrationConfidence: UInt8?

    public init(majorVersion: UInt8 = 1, minorVersion: UInt8 = 0, transmitPower: Int8, calibrationConfidence: UInt8? = nil) {
        precondition(majorVersion < 4 && minorVersion < 4, "metadata versions are 2-bit numbers")
        precondition(calibrationConfidence.map { $0 < 4 } ?? true, "calibration confidence is a 2-bit number")
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.transmitPower = transmitPower
        self.calibrationConfidence = calibrationConfidence
    }

    /// Decodes the 4 plaintext bytes; the reserved bytes 2 and 3 are ignored as the spec asks.
    public init?(bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        guard bytes.count == 4 else { return nil }
        majorVersion = bytes[0] >> 6
        minorVersion = (bytes[0] >> 4) & 0x3
        transmitPower = Int8(bitPattern: bytes[1])
        let carriesConfidence = majorVersion > 1 || (majorVersion == 1 && minorVersion >= 1)
        calibrationConfidence = carriesConfidence ? (bytes[0] >> 2) & 0x3 : nil
    }

    public var bytes: [UInt8] {
        let version = majorVersion << 6 | minorVersion << 4 | (calibrationConfidence ?? 0) << 2
        return [version, UInt8(bitPattern: transmitPower), 0, 0]
    }
}

/// Associated Encrypted Metadata: the 4 encrypted metadata bytes broadcast after the RPI.
public struct AssociatedEncryptedMetadata: Hashable, Sendable {
    /// The 4 bytes, byte 0 most significant.
    public var rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 4 else { return nil }
        rawValue = bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    public init(hex: String) throws(HexError) {
        self.init(bytes: try [UInt8](hex: hex, byteCount: 4))!
    }

    public var bytes: [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: rawValue >> $0) } }
    public var hex: String { bytes.hexString }
}
