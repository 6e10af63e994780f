import Dispatch
import ENAgent
import ENCore

/// What to remind the person of (Reminder), checked every minute.
extension Daemon {
    /// The latest day of increased risk in the latest verdict: the only exposure that alarms.
    var latestExposureDay: Int64? { get throws { try store.latestRiskAssessment()?.verdict.latestIncreasedRiskDay } }

    /// Checks now, before it returns, and then every minute what to remind the person of; a
    /// reminder that reveals no health goes to the journal when it arises and once a day while it lasts.
    func startReminders() {
        checkReminders()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .seconds(60), repeating: .seconds(60))
        timer.setEventHandler { [weak self] in self?.checkReminders() }
        timer.resume()
        my.reminders.timer = timer
    }

    func checkReminders() {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = clock.now
        let exposureDay: Int64?, due: [Reminder]
        do {
            exposureDay = try latestExposureDay
            let consent = try consent
            due = Reminder.due(now: now, enabledSince: consent?.granted == true ? consent?.recordedAt : nil,
                               lastSuccessfulDetection: try store.lastSuccessfulDetection(), latestExposureDay: exposureDay,
                               uploadRefused: try store.testResults().first.map { $0.uploadFailure != nil } ?? false)
        } catch {
            return logger.error("cannot check reminders: \(error)")
        }
        for reminder in due where now - (my.reminders.remindedAt[reminder] ?? .min / 2) >= UTCDay.seconds {
            if let message = reminder.journalMessage { logger.warning("\(message)") }
            my.reminders.remindedAt[reminder] = now
        }
        my.reminders.remindedAt = my.reminders.remindedAt.filter { due.contains($0.key) }
        if due != my.reminders.due {
            // PropertiesChanged reaches every listener: a change of the health reminders alone is
            // not announced, or its moment would tell that an exposure or a refusal came.
            let announced = due.filter { !$0.revealsHealth } != my.reminders.due.filter { !$0.revealsHealth }
            my.reminders.due = due
            if announced { my.announcer.onChange?([.reminders]) }
        }
    }
}
