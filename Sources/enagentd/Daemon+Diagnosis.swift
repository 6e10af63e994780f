import Dispatch
import ENCore
import ENStore

/// After a positive diagnosis: the keys that may be shared, what became of an upload; and the
/// erasure of everything kept.
extension Daemon {
    /// Keys whose validity has ended, within the retention window: today's key is released only
    /// once it has rolled, because it is still on the air.
    func releasableKeys() throws -> [TemporaryExposureKey] {
        guard let now = ENIntervalNumber(unixSeconds: clock.now) else { return [] }
        return try store.temporaryExposureKeys(validAfter: retention.cutoff(now: clock.now))
            .filter { $0.rollingEndIntervalNumber <= UInt64(now.rawValue) }
    }

    /// Records what became of an upload. Nothing of it goes to the journal, which more people
    /// read than may learn of a positive test: `enctl test-result list` shows it.
    func uploadFinished(testResultId: String, _ result: UploadResult) throws {
        dispatchPrecondition(condition: .onQueue(queue))
        try store.finishUpload(testResultId: testResultId, result, at: clock.now)
        checkReminders()
    }

    /// Erases keys, sightings and results; a running agent starts again with a fresh key.
    func resetData() throws {
        dispatchPrecondition(condition: .onQueue(queue))
        let wasRunning = my.running != nil
        if wasRunning { stopRunning() }
        try store.eraseAllData()
        my.upkeep = nil  // its key schedule holds the erased key
        logger.info("all keys, sightings and exposure results erased")
        apply(changed: [.sightings, .detection])
    }
}
