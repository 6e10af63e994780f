import Dispatch
import ENAgent
import ENBus
import ENCore
import ENStore
import Foundation

/// The daemon's D-Bus API: `org.enagent.ExposureNotification1` on the object of the same path.
/// Anyone may read the properties; changing state, retrieving keys and detecting take root, the
/// daemon's own user or a member of the group `enagent` (the bus policy says the same).
enum ExposureNotificationService {
    static let busName = "org.enagent.ExposureNotification1"
    static let interfaceName = "org.enagent.ExposureNotification1"
    static let path = "/org/enagent/ExposureNotification1"
    static let privilegedGroup = "enagent"
    static let version = "0.5.0"

    /// The named errors, `org.enagent.ExposureNotification1.Error.*`.
    enum Failure: String {
        case notAuthorized = "NotAuthorized"
        case confirmationRequired = "ConfirmationRequired"
        case invalidArguments = "InvalidArguments"
        case keyFileRejected = "KeyFileRejected"
        case configurationInvalid = "ConfigurationInvalid"
        case notAvailable = "NotAvailable"
        case failed = "Failed"

        func error(_ message: String) -> DBusError { DBusError(name: "\(interfaceName).Error.\(rawValue)", message: message) }
    }

    private static let mainQueueKey = DispatchSpecificKey<Bool>()
    /// Detections run one at a time, off the bus: the properties stay readable meanwhile.
    private static let detectionQueue = DispatchQueue(label: "enagent.detection")

    static func object(daemon: Daemon, bus: DBusConnection) -> ExportedObject {
        DispatchQueue.main.setSpecific(key: mainQueueKey, value: true)
        let privileged = { @Sendable (call: DBusMessage) throws(DBusError) in try authorise(call, on: bus) }
        let properties: [DBusProperty] = [
            DBusProperty("Enabled", "b") { .boolean((try? onMain { daemon.enabled }) ?? false) },
            DBusProperty("Status", "s") { .string((try? onMain { daemon.status.rawValue }) ?? "") },
            DBusProperty("PausedUntil", "t") { .uint64(UInt64((try? onMain { daemon.pausedUntil }) ?? 0)) },
            DBusProperty("Adapter", "s") { .string((try? onMain { daemon.adapterName }) ?? "") },
            DBusProperty("Advertising", "b") { .boolean((try? onMain { daemon.radioState.advertising }) ?? false) },
            DBusProperty("Scanning", "b") { .boolean((try? onMain { daemon.radioState.scanning }) ?? false) },
            DBusProperty("LastDetection", "t") { .uint64(UInt64((try? daemon.store.lastSuccessfulDetection()) ?? nil ?? 0)) },
            DBusProperty("LastDetectionError", "s") { .string((try? daemon.store.lastDetection())??.error ?? "") },
            DBusProperty("SightingsStored", "t") { .uint64(UInt64((try? daemon.store.sightingCount()) ?? 0)) },
            DBusProperty("Reminders", "as") { .strings((try? onMain { daemon.reminders.map(\.rawValue) }) ?? []) },
            DBusProperty("LatestExposureDay", "t") { .uint64(UInt64((try? onMain { daemon.latestExposureDay }) ?? 0)) },
            DBusProperty("Version", "s") { .string(version) },
        ]
        let methods: [DBusMethod] = [
            DBusMethod("SetEnabled", in: [DBusArgument("enabled", "b")]) { call throws(DBusError) in
                try privileged(call)
                let enabled = call.arguments.first?.bool ?? false
                try onMain { try daemon.setEnabled(enabled) }
                return []
            },
            DBusMethod("Pause", in: [DBusArgument("seconds", "t")]) { call throws(DBusError) in
                try privileged(call)
                // Longer than a year is a year (Daemon.pause): any uint64 above zero is a pause.
                guard case .uint64(let seconds)? = call.arguments.first?.unwrapped, seconds > 0 else {
                    throw Failure.invalidArguments.error("pause for at least one second")
                }
                try onMain { try daemon.pause(seconds: seconds) }
                return []
            },
            DBusMethod("Resume") { call throws(DBusError) in
                try privileged(call)
                try onMain { try daemon.resume() }
                return []
            },
            DBusMethod("GetTemporaryExposureKeyHistory", in: [DBusArgument("confirmed", "b")], out: [DBusArgument("keys", "a(ayuuu)")]) {
                call throws(DBusError) in
                try privileged(call)
                guard call.arguments.first?.bool == true else {
                    throw Failure.confirmationRequired.error("sharing keys needs the person's confirmation for every request; pass true once they agreed")
                }
                let keys = try onMain { try daemon.releasableKeys() }
                return [.array(elementSignature: "(ayuuu)", keys.map { key in
                    .structure([.bytes(key.keyData.bytes), .uint32(key.rollingStartIntervalNumber.rawValue), .uint32(key.rollingPeriod),
                                .uint32(UInt32(key.transmissionRiskLevel))])
                })]
            },
            DBusMethod("DetectExposures", in: [DBusArgument("key_files", "ah"), DBusArgument("configuration", "s")],
                       out: [DBusArgument("summary", "a{sv}")], queue: detectionQueue) { call throws(DBusError) in
                let arguments = call.arguments
                let descriptors = arguments.first?.elements?.compactMap { value -> Int32? in
                    if case .unixFD(let descriptor) = value { return descriptor }
                    return nil
                } ?? []
                defer { descriptors.forEach { close($0) } }
                try privileged(call)
                guard !descriptors.isEmpty else { throw Failure.invalidArguments.error("give at least one key file") }
                let limits = daemon.detection.limits
                var total = 0
                let files = try descriptors.enumerated().map { index, descriptor throws(DBusError) in
                    let name = "key file \(index + 1)"
                    let left = limits.maximumTotalSize - total
                    let data = try left < limits.maximumFileSize
                        ? KeyFileDescriptor.read(descriptor, limit: left, limitName: "the \(limits.maximumTotalSize >> 20) MiB all key files of one call may have together", name: name)
                        : KeyFileDescriptor.read(descriptor, limit: limits.maximumFileSize, limitName: "the limit of \(limits.maximumFileSize >> 20) MiB per key file", name: name)
                    total += data.count
                    return (name: name, data: data)
                }
                let outcome: DetectionOutcome
                do {
                    outcome = try daemon.detection.detect(files: files, configurationJSON: arguments.dropFirst().first?.string ?? "")
                } catch {
                    DispatchQueue.main.async { daemon.onChange?(["LastDetection", "LastDetectionError"]) }
                    throw dbusError(error as? DetectionError ?? .store("\(error)"))
                }
                let newWindows = UInt32(outcome.newWindows.count)
                DispatchQueue.main.async {
                    daemon.onChange?(["LastDetection", "LastDetectionError"])
                    daemon.checkReminders()
                    // On the main queue, like everything of the daemon's (this method runs on the detection queue).
                    if newWindows > 0 {
                        try? daemon.serviceObject?.emit(interface: interfaceName, signal: "ExposureDetected", [.uint32(newWindows)])
                    }
                }
                return [.properties([
                    "KeyFilesProcessed": .uint32(UInt32(outcome.keyFilesProcessed)), "KeyFilesSkipped": .uint32(UInt32(outcome.keyFilesSkipped)),
                    "KeysChecked": .uint64(UInt64(outcome.keysChecked)), "MatchedKeys": .uint32(UInt32(outcome.matchedKeyCount)),
                    "NewExposureWindows": .uint32(UInt32(outcome.newWindows.count)),
                ])]
            },
            DBusMethod("GetExposureWindows", out: [DBusArgument("windows", "a(tuuua(iiu))")]) { call throws(DBusError) in
                try privileged(call)
                let windows = try onMain { try daemon.store.exposureWindows() }
                return [.array(elementSignature: "(tuuua(iiu))", windows.map { window in
                    .structure([.uint64(UInt64(window.date)), .uint32(UInt32(window.reportType.rawValue)),
                                .uint32(UInt32(window.infectiousness.rawValue)), .uint32(UInt32(window.calibrationConfidence)),
                                .array(elementSignature: "(iiu)", window.scanInstances.map { scan in
                                    .structure([.int32(Int32(scan.minAttenuation ?? -1)), .int32(Int32(scan.typicalAttenuation ?? -1)),
                                                .uint32(UInt32(scan.secondsSinceLastScan))])
                                })])
                })]
            },
            DBusMethod("GetDailySummaries", in: [DBusArgument("configuration", "s")], out: [DBusArgument("summaries", "a(tddd)")]) {
                call throws(DBusError) in
                try privileged(call)
                let configuration = try configurationArgument(call.arguments.first?.string ?? "")
                let windows = try onMain { try daemon.store.exposureWindows() }
                let summaries = configuration.v2.dailySummaries(of: windows, now: daemon.clock.now)
                return [.array(elementSignature: "(tddd)", summaries.map {
                    .structure([.uint64(UInt64($0.date)), .double($0.maximumScore), .double($0.scoreSum), .double($0.weightedDurationSum)])
                })]
            },
            DBusMethod("GetExposureInfo", out: [DBusArgument("exposures", "a(tuiauuuu)")]) { call throws(DBusError) in
                try privileged(call)
                let stored = try onMain { try daemon.store.setting(ExposureDetection.configurationSetting) }
                guard let v1 = try configurationArgument(stored ?? "").v1 else {
                    throw Failure.notAvailable.error("the last detection had no v1 configuration (minimumRiskScore and its level values)")
                }
                let windows = try onMain { try daemon.store.exposureWindows() }
                return [.array(elementSignature: "(tuiauuuu)", v1.exposureInfos(of: windows, now: daemon.clock.now).map { info in
                    .structure([.uint64(UInt64(info.date)), .uint32(UInt32(info.durationMinutes)), .int32(Int32(info.attenuationValue ?? -1)),
                                .array(elementSignature: "u", info.attenuationDurationsMinutes.map { .uint32(UInt32($0)) }),
                                .uint32(UInt32(info.transmissionRiskLevel)), .uint32(UInt32(info.totalRiskScore)),
                                .uint32(UInt32(info.daysSinceExposure))])
                })]
            },
            DBusMethod("AddTestResult", in: [DBusArgument("test_date", "t"), DBusArgument("method", "s"), DBusArgument("detail", "s"),
                                             DBusArgument("verification_token", "s")], out: [DBusArgument("id", "s")]) { call throws(DBusError) in
                try privileged(call)
                let arguments = call.arguments
                guard let date = arguments[0].integer, let method = arguments[1].string, VerificationMethod(rawValue: method) != nil else {
                    throw Failure.invalidArguments.error("the method is one of \(VerificationMethod.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                let detail = arguments[2].string ?? "", token = arguments[3].string ?? ""
                let result = TestResult(id: UUID().uuidString.lowercased(), testDate: date, verificationMethod: method,
                                        verificationDetail: detail.isEmpty ? nil : detail, recordedAt: daemon.clock.now,
                                        verificationToken: token.isEmpty ? nil : token)
                try onMain { try daemon.store.recordTestResult(result) }
                return [.string(result.id)]
            },
            DBusMethod("GetTestResults", out: [DBusArgument("results", "a(stssttbs)")]) { call throws(DBusError) in
                try privileged(call)
                let results = try onMain { try daemon.store.testResults() }
                return [.array(elementSignature: "(stssttbs)", results.map {
                    .structure([.string($0.id), .uint64(UInt64($0.testDate)), .string($0.verificationMethod), .string($0.verificationDetail ?? ""),
                                .uint64(UInt64($0.recordedAt)), .uint64(UInt64($0.sharedAt ?? 0)), .boolean($0.uploadPending),
                                .string($0.verificationToken ?? "")])
                })]
            },
            DBusMethod("QueueUpload", in: [DBusArgument("test_result_id", "s"), DBusArgument("url", "s"), DBusArgument("body", "s")]) {
                call throws(DBusError) in
                try privileged(call)
                let arguments = call.arguments.map { $0.string ?? "" }
                try onMain {
                    guard try daemon.store.testResults().contains(where: { $0.id == arguments[0] }) else {
                        throw Failure.invalidArguments.error("no test result \(arguments[0])")
                    }
                    try daemon.store.queueUpload(testResultId: arguments[0], url: arguments[1], body: arguments[2], at: daemon.clock.now)
                }
                return []
            },
            DBusMethod("GetPendingUploads", out: [DBusArgument("uploads", "a(sss)")]) { call throws(DBusError) in
                try privileged(call)
                let uploads = try onMain { try daemon.store.pendingUploads() }
                return [.array(elementSignature: "(sss)", uploads.map { .structure([.string($0.testResultId), .string($0.url), .string($0.body)]) })]
            },
            DBusMethod("FinishUpload", in: [DBusArgument("test_result_id", "s"), DBusArgument("error", "s")]) { call throws(DBusError) in
                try privileged(call)
                let arguments = call.arguments.map { $0.string ?? "" }
                try onMain {
                    try daemon.store.finishUpload(testResultId: arguments[0], error: arguments[1].isEmpty ? nil : arguments[1], at: daemon.clock.now)
                }
                return []
            },
            DBusMethod("ResetData") { call throws(DBusError) in
                try privileged(call)
                try onMain { try daemon.resetData() }
                return []
            },
        ]
        return ExportedObject(path: path, interfaces: [DBusInterface(interfaceName, methods: methods, properties: properties,
                                                                    signals: [DBusSignal("ExposureDetected", [DBusArgument("new_windows", "u")])])])
    }

    /// Runs `body` on the main queue, where the daemon's state lives. Property reads also come
    /// from the main queue itself (PropertiesChanged), which must not wait for itself.
    /// (Under dispatchMain the main queue runs on worker threads, so Thread.isMainThread cannot tell.)
    private static func onMain<T>(_ body: () throws -> T) throws(DBusError) -> T {
        do {
            return try DispatchQueue.getSpecific(key: mainQueueKey) != nil ? body() : DispatchQueue.main.sync(execute: body)
        } catch let error as DBusError { throw error } catch {
            throw Failure.failed.error("\(error)")
        }
    }

    /// Refuses callers who are neither root, nor the daemon's user, nor in the group `enagent`.
    private static func authorise(_ call: DBusMessage, on bus: DBusConnection) throws(DBusError) {
        guard let sender = call.sender else { throw Failure.notAuthorized.error("the caller is unknown") }
        let uid = try bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                               member: "GetConnectionUnixUser", [.string(sender)]).first?.integer
        guard let uid, CallerAuthorisation.mayControl(uid: uid_t(uid), group: privilegedGroup) else {
            throw Failure.notAuthorized.error("only root and members of the group \(privilegedGroup) may do this; ask an administrator to add you")
        }
    }

    private static func dbusError(_ error: DetectionError) -> DBusError {
        switch error {
        case .badConfiguration: return Failure.configurationInvalid.error(error.description)
        case .badKeyFile, .unverified: return Failure.keyFileRejected.error(error.description)
        case .store: return Failure.failed.error(error.description)
        }
    }

    private static func configurationArgument(_ json: String) throws(DBusError) -> ExposureConfiguration {
        do { return try ExposureDetection.configuration(json) } catch { throw Failure.configurationInvalid.error(error.description) }
    }
}
