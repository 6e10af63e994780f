/// How many method calls each sender may make: a token bucket per unique bus name. A caller
/// that floods the service is refused cheaply, before its call is decoded, so that the others'
/// calls queued behind the flood are answered soon.
public struct CallBudget: Sendable {
    /// Calls a sender may make at once...
    public let burst: Double
    /// ...and per second after that.
    public let perSecond: Double
    private var buckets = [String: (tokens: Double, at: Double)]()

    public init(burst: Int, perSecond: Int) {
        self.burst = Double(burst)
        self.perSecond = Double(perSecond)
    }

    /// Whether `sender` may make a call at `now` (seconds on any steady clock); takes one token.
    public mutating func allows(_ sender: String, now: Double) -> Bool {
        // Senders whose buckets have refilled are forgotten, so that the table stays small.
        if buckets.count > 1_000 { buckets = buckets.filter { $0.value.tokens + (now - $0.value.at) * perSecond < burst } }
        var bucket = buckets[sender] ?? (burst, now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.at) * perSecond)
        bucket.at = now
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        buckets[sender] = bucket
        return allowed
    }
}
