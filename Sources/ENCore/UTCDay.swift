/// A UTC calendar day: exposure windows, daily summaries and key validity are counted in these
/// (protocol.md §3), and an `Int64` "date" elsewhere in the API is the Unix time of one's midnight.
public struct UTCDay: Hashable, Comparable, Sendable, Strideable, CustomStringConvertible {
    public static let seconds: Int64 = 86_400

    /// Days since 1970-01-01.
    public let number: Int64

    public init(number: Int64) { self.number = number }

    /// The day that holds `unixSeconds` (rounding down, also before 1970).
    public init(containing unixSeconds: Int64) {
        number = unixSeconds >= 0 ? unixSeconds / Self.seconds : -((-unixSeconds + Self.seconds - 1) / Self.seconds)
    }

    /// Unix seconds of its midnight.
    public var start: Int64 { number * Self.seconds }
    /// Unix seconds of the next day's midnight.
    public var end: Int64 { start + Self.seconds }

    public static func < (left: Self, right: Self) -> Bool { left.number < right.number }
    public func distance(to other: Self) -> Int64 { other.number - number }
    public func advanced(by days: Int64) -> Self { Self(number: number + days) }

    public var description: String { "day \(number) (\(start))" }
}
