import ENCore

/// What the agent reminds the person of, in `enctl status` and the journal.
public enum Reminder: String, Sendable, CaseIterable {
    /// No detection succeeded for a day: key files may be piling up unmatched.
    case detectionOverdue = "detection-overdue"
    /// An exposure within the last 14 days.
    case recentExposure = "recent-exposure"
    /// The key server refused a test result's keys for good: they were not shared.
    case uploadRefused = "upload-refused"

    /// Whether the reminder tells that the person was exposed or tested positive: one with no
    /// journal line. Those are for root and the group enagent only (GetHealthStatus), never in the
    /// Reminders property that anyone may read.
    public var revealsHealth: Bool { journalMessage == nil }

    public static let detectionOverdueSeconds = UTCDay.seconds
    public static let exposureReminderSeconds = 14 * UTCDay.seconds

    /// The reminders due at `now`. The detection clock starts when the agent was enabled.
    public static func due(now: Int64, enabledSince: Int64?, lastSuccessfulDetection: Int64?, latestExposureDay: Int64?,
                           uploadRefused: Bool = false) -> [Reminder] {
        var due = [Reminder]()
        if let enabledSince, now - max(enabledSince, lastSuccessfulDetection ?? 0) > detectionOverdueSeconds { due.append(.detectionOverdue) }
        if let day = latestExposureDay, now - day < exposureReminderSeconds + UTCDay.seconds { due.append(.recentExposure) }
        if uploadRefused { due.append(.uploadRefused) }
        return due
    }

    /// The journal line for this reminder; none for one that reveals health, since the journal
    /// is readable by more than root and the group enagent (groups adm, systemd-journal). A new
    /// reminder must say which it is here.
    public var journalMessage: String? {
        switch self {
        case .detectionOverdue:
            return "no exposure detection has succeeded for more than 24 hours: check 'systemctl status enagent-detect.timer' and 'enctl status'"
        case .recentExposure, .uploadRefused:
            return nil
        }
    }
}
