/// The EN protocol's clock: the number of 10-minute intervals since the Unix epoch, as a uint32.
public struct ENIntervalNumber: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public static let secondsPerInterval: Int64 = 600
    /// Intervals in one TEK's life (24 h); keys start at multiples of it (UTC midnight).
    public static let tekRollingPeriod: UInt32 = 144

    public var rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// The interval containing `unixSeconds`, or nil for a time the uint32 cannot hold.
    public init?(unixSeconds: Int64) {
        guard unixSeconds >= 0, let value = UInt32(exactly: unixSeconds / Self.secondsPerInterval) else { return nil }
        rawValue = value
    }

    /// The first second of the interval.
    public var unixSeconds: Int64 { Int64(rawValue) * Self.secondsPerInterval }

    /// The start of the TEK rolling period (UTC day) this interval falls in.
    public var rollingPeriodStart: ENIntervalNumber {
        ENIntervalNumber(rawValue - rawValue % Self.tekRollingPeriod)
    }

    /// The interval `count` intervals later, or nil past the end of the uint32 range.
    public func advanced(by count: Int64) -> ENIntervalNumber? {
        UInt32(exactly: Int64(rawValue) + count).map { ENIntervalNumber($0) }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { String(rawValue) }
}
