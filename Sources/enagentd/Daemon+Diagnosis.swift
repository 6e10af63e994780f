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

    /// Records what became of an upload, and says so in the journal (never the keys).
    func uploadFinished(testResultId: String, _ result: UploadResult) throws {
        dispatchPrecondition(condition: .onQueue(queue))
        try store.finishUpload(testResultId: testResultId, result, at: clock.now)
        checkReminders()
        switch result {
        case .accepted(_, let note):
            logger.info("the key server accepted the keys of test result \(testResultId)" + (note.map { " (\($0))" } ?? ""))
        case .retry(let reason, let retryAt):
            logger.warning("the key server did not take the keys of test result \(testResultId) for now (\(reason)); next attempt at \(retryAt) (unix time)")
        case .refused(let reason):
            logger.error("the key server refused the keys of test result \(testResultId) for good (\(reason)); the upload will not be sent again")
        }
    }

    /// Erases keys, sightings and results; a running agent starts again with a fresh key.
    func resetData() throws {
        dispatchPrecondition(condition: .onQueue(queue))
        let wasRunning = my.upkeepTimer != nil
        if wasRunning { stopRunning() }
        try store.eraseAllData()
        my.upkeep = nil  // its key schedule holds the erased key
        logger.info("all keys, sightings and exposure results erased")
        apply(changed: [P.sightingsStored.name, P.lastDetection.name, P.lastDetectionError.name])
    }
}
