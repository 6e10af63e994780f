import ENCore

/// When a key upload the server refused for now is sent again: 15 minutes after the first
/// failure, doubling with each one, at most a day; a server's Retry-After wins (at most a day,
/// so that a confused server cannot hold the upload back for good).
public enum UploadBackoff {
    public static let first: Int64 = 15 * 60
    public static let longest: Int64 = UTCDay.seconds

    /// The time of the next attempt after `failures` failed attempts (the one just now included).
    public static func nextAttempt(now: Int64, failures: Int, retryAfter: Int64?) -> Int64 {
        if let retryAfter, retryAfter > 0 { return now + min(retryAfter, longest) }
        let doublings = min(max(failures - 1, 0), 16)
        return now + min(first << Int64(doublings), longest)
    }
}
