import ArgumentParser
import ENAPI
import ENBus
import ENCore
import FoundationEssentials

/// `enctl share`: upload the device's keys after a positive test.
struct Share: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Share this device's keys with the health authority after a positive test.",
        discussion: """
            Takes the most recent unshared test result (or --test-result), asks you to confirm, \
            gets the keys of the last 14 days from enagentd (today's once it has rolled), has \
            the verification server certify an HMAC of exactly those keys (for a result verified \
            by code), and publishes keys, HMAC key and certificate to publish-url of \
            key-server.conf. The upload is kept by enagentd before it is sent: if the server \
            cannot be reached it stays pending and 'enctl share --pending' (which the timer runs \
            before each detection) sends it later; once the server accepted it, it is never sent \
            again.
            """)

    @Option(help: ArgumentHelp("The test result to share (default: the most recent unshared one).", valueName: "id"), transform: ArgumentValue.text)
    var testResult: String?

    @OptionGroup var server: ServerConfigurationOption

    @Flag(help: "Share without asking.")
    var yes = false

    @Flag(help: "Only send the uploads enagentd keeps pending (exit status 1 when one fails again).")
    var pending = false

    func validate() throws {
        guard !pending || testResult == nil else { throw ValidationError("--pending sends every pending upload; it takes no --test-result.") }
    }

    func run() throws {
        let client = try DaemonClient()
        if pending { return try sendPending(client) }
        let configuration = try server.load()
        guard let publishURL = configuration.publishURL, let authority = configuration.healthAuthority else {
            throw CommandError("\(server.serverConfig) needs publish-url and health-authority to share keys")
        }
        let results = try StoredTestResult.all(client)
        // By default the most recent result whose keys the server did not refuse: unshared, or
        // shared before and now with a key that has rolled since (a revision).
        let chosen: StoredTestResult? = if let testResult { results.first { $0.id == testResult } } else { results.first { $0.uploadFailure.isEmpty } ?? results.first }
        guard let result = chosen else {
            throw CommandError(testResult.map { "no test result \($0) ('enctl test-result list')" }
                               ?? "no test result to share: record one first with 'enctl test-result add'")
        }
        guard result.uploadFailure.isEmpty else {
            throw CommandError("the key server refused the keys of test result \(result.id) for good (\(result.uploadFailure)); "
                               + "record the test again with a new code ('enctl test-result add --code') to share")
        }
        if !result.uploadPending {
            let keys = try DaemonKeys.history(client).filter { !result.sharedKeys.contains($0.keyData) }
            guard !keys.isEmpty else {
                throw CommandError(result.sharedAt > 0
                    ? "every key of test result \(result.id) was shared already; today's key is shared once it has rolled, tomorrow"
                    : "there are no keys to share yet (today's key is shared once it has rolled, tomorrow)")
            }
            let question = result.sharedAt > 0
                ? "Share your \(keys.count) exposure key(s) since the last upload with \(publishURL.host ?? publishURL.absoluteString)?"
                : "Share your exposure keys of the last 14 days with \(publishURL.host ?? publishURL.absoluteString)?"
            guard yes || Confirmation.ask(question) else { throw CommandError("nothing shared") }
            let secret = (0..<16).map { _ in UInt8.random(in: 0...255) }
            var certificate = ""
            if result.method == VerificationMethod.verificationCode.rawValue {
                certificate = try VerificationServer(configuration).certificate(token: result.token, hmac: ExposureKeyHMAC.code(secret: secret, keys: keys))
            }
            let body: [String: JSONValue] = [
                "temporaryExposureKeys": .array(keys.map {
                    .object(["key": .string(Data($0.keyData.bytes).base64EncodedString()),
                             "rollingStartNumber": .integer(Int64($0.rollingStartIntervalNumber.rawValue)),
                             "rollingPeriod": .integer(Int64($0.rollingPeriod)), "transmissionRisk": .integer(Int64($0.transmissionRiskLevel))])
                }),
                "healthAuthorityID": .string(authority), "verificationPayload": .string(certificate),
                "hmacKey": .string(Data(secret).base64EncodedString()), "revisionToken": .string(result.revisionToken),
            ]
            let json = String(decoding: try Padding.body(body, for: .publish), as: UTF8.self)
            try client.call(DaemonClient.API.Methods.queueUpload,
                            QueuedUpload(testResultId: result.id, url: publishURL.absoluteString, body: json, keys: keys.map(\.keyData.bytes)))
        }
        let outcome = try UploadSender.send(client, only: result.id)
        if let refusal = outcome.refused.first {
            throw CommandError("the key server refused the upload for good (\(refusal)); it will not be sent again")
        }
        guard outcome.retrying.isEmpty else {
            throw CommandError("the key server did not take the upload (\(outcome.retrying.joined(separator: "; "))); it is kept and sent again by 'enctl share --pending' (the timer)")
        }
        print("Your keys were shared. Thank you for helping others stay safe.")
    }

    private func sendPending(_ client: DaemonClient) throws {
        let uploads = try UploadSender.send(client)
        // Decoys whether or not anything real went out (key-server.conf: chaff); no configuration
        // file, no decoys. One that cannot be used is said, but does not fail what was sent.
        if FileManager.default.fileExists(atPath: server.serverConfig) {
            do {
                if Chaff.maybeSend(try server.load()) { StandardStream.error.write("enctl: decoy requests sent (chaff)\n") }
            } catch {
                StandardStream.error.write("enctl: no decoy requests (chaff): \(error)\n")
            }
        }
        let attempted = uploads.sent.count + uploads.retrying.count + uploads.refused.count
        print(attempted == 0 ? "No pending uploads due." : "\(uploads.sent.count) pending key upload(s) sent.")
        let failures = uploads.retrying.map { "\($0); it stays queued" } + uploads.refused.map { "\($0); refused for good, not sent again" }
        guard failures.isEmpty else { throw CommandError("\(failures.count) pending key upload(s) failed: \(failures.joined(separator: "; "))") }
    }
}

/// The daemon's key history, with confirmation already given by the person.
enum DaemonKeys {
    static func history(_ client: DaemonClient) throws -> [TemporaryExposureKey] {
        try client.call(DaemonClient.API.Methods.getTemporaryExposureKeyHistory, KeyHistoryRequest(confirmed: true)).keys
    }
}

/// Uploads enagentd keeps until the key server accepted or refused them for good.
enum UploadSender {
    /// Sends the pending uploads that are due (or `id`'s, whenever it is due) and tells enagentd
    /// what became of each: accepted, to be retried (5xx, 408, 429 with its Retry-After, no
    /// network) or refused for good (another 4xx, or an error the server reports with 200).
    static func send(_ client: DaemonClient, only id: String? = nil, now: Int64 = Int64(Date().timeIntervalSince1970))
        throws -> (sent: [String], retrying: [String], refused: [String]) {
        let pending = try client.call(DaemonClient.API.Methods.getPendingUploads).uploads
            .filter { id == nil ? $0.nextAttemptAt <= UInt64(max(0, now)) : $0.testResultId == id }
        var sent = [String](), retrying = [String](), refused = [String]()
        for upload in pending {
            let outcome = attempt(upload)
            try client.call(DaemonClient.API.Methods.finishUpload, outcome)
            switch UploadOutcome.Kind(rawValue: outcome.outcome) {
            case .accepted?: sent.append(upload.testResultId)
            case .retry?: retrying.append(outcome.reason)
            default: refused.append(outcome.reason)
            }
        }
        return (sent, retrying, refused)
    }

    static func attempt(_ upload: PendingUploadRecord) -> UploadOutcome {
        guard let url = URL(string: upload.url) else { return UploadOutcome(testResultId: upload.testResultId, outcome: .refused, reason: "bad URL \(upload.url)") }
        let answer: Download.Answer
        do { answer = try Download.post(Data(upload.body.utf8), to: url) } catch {
            return UploadOutcome(testResultId: upload.testResultId, outcome: .retry, reason: "\(error)")
        }
        let json = JSONValue(parsing: answer.body)
        let error = [json?["error"]?.string, json?["code"]?.string.map { "[\($0)]" }].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
        if answer.status == 200 && error.isEmpty {
            return UploadOutcome(testResultId: upload.testResultId, outcome: .accepted, revisionToken: json?["revisionToken"]?.string ?? "")
        }
        let reason = "HTTP \(answer.status)" + (error.isEmpty ? "" : ": \(error)")
        let temporary = answer.status == 408 || answer.status == 429 || (500...599).contains(answer.status)
        return UploadOutcome(testResultId: upload.testResultId, outcome: temporary ? .retry : .refused, reason: reason,
                             retryAfter: UInt64(max(0, answer.retryAfter ?? 0)))
    }
}
