/// A person granting or withdrawing consent to run Exposure Notification.
public struct ConsentEvent: Sendable, Equatable {
    public var granted: Bool
    /// Unix seconds.
    public var recordedAt: Int64

    public init(granted: Bool, recordedAt: Int64) {
        self.granted = granted
        self.recordedAt = recordedAt
    }
}
