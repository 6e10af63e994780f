import ENAgent
import Testing

struct ReminderTests {
    let day: Int64 = 86_400
    let now: Int64 = 1_795_000_000

    @Test func detectionIsOverdueADayAfterTheLastSuccessOrTheEnabling() {
        #expect(Reminder.due(now: now, enabledSince: nil, lastSuccessfulDetection: nil, latestExposureDay: nil, uploadRefused: true) == [.uploadRefused])
        #expect(Reminder.due(now: now, enabledSince: nil, lastSuccessfulDetection: nil, latestExposureDay: nil).isEmpty, "not enabled")
        #expect(Reminder.due(now: now, enabledSince: now - 3_600, lastSuccessfulDetection: nil, latestExposureDay: nil).isEmpty)
        #expect(Reminder.due(now: now, enabledSince: now - 2 * day, lastSuccessfulDetection: nil, latestExposureDay: nil) == [.detectionOverdue])
        #expect(Reminder.due(now: now, enabledSince: now - 2 * day, lastSuccessfulDetection: now - 600, latestExposureDay: nil).isEmpty)
        #expect(Reminder.due(now: now, enabledSince: now - 9 * day, lastSuccessfulDetection: now - day - 1, latestExposureDay: nil) == [.detectionOverdue])
    }

    @Test func anExposureIsRecalledForFourteenDays() {
        let midnight = now / day * day
        #expect(Reminder.due(now: now, enabledSince: nil, lastSuccessfulDetection: nil, latestExposureDay: midnight - 14 * day) == [.recentExposure])
        #expect(Reminder.due(now: now, enabledSince: nil, lastSuccessfulDetection: nil, latestExposureDay: midnight - 15 * day).isEmpty)
    }
}
