import ENCore

/// How long the agent keeps keys, sightings and exposure records (the protocol says 14 days).
public struct RetentionPolicy: Sendable, Equatable {
    public static let protocolDefault = RetentionPolicy(days: 14)

    public var days: Int

    public init(days: Int) {
        precondition(days > 0, "retention must be at least one day")
        self.days = days
    }

    /// The first second that is still kept at `now`.
    public func cutoff(now: Int64) -> Int64 { max(0, now - Int64(days) * UTCDay.seconds) }
}

/// What one retention pass deleted.
public struct RetentionReport: Sendable, Equatable {
    public var temporaryExposureKeys: Int
    public var sightings: Int
    public var exposureWindows: Int
    /// Matched keys whose v1 record went (with its sightings).
    public var v1Keys = 0

    public var isEmpty: Bool { temporaryExposureKeys == 0 && sightings == 0 && exposureWindows == 0 && v1Keys == 0 }
}
