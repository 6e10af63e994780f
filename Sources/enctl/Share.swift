import ArgumentParser
import ENAPI
import ENBus
import ENCore
import ENSystemd
import FoundationEssentials
import Glibc

/// `enctl share`: upload the device's keys after a positive test.
struct Share: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Share this device's keys with the health authority after a positive test.",
        discussion: """
            Takes the most recent unshared test result (or --test-result), asks you to confirm, \
            gets from enagentd the keys valid during the last 14 days (today's once it has \
            rolled; the most recent 14 keys, the most a key server takes in one upload) and has \
            enagentd keep the upload. Then, for a result verified by code, it has the \
            verification server certify an HMAC of exactly those keys (which spends the \
            result's verification: one code certifies one upload) and publishes keys, HMAC key \
            and certificate to publish-url of key-server.conf. When the key server cannot take \
            them now, enctl tries again while the certificate is valid (15 minutes); after \
            that the upload stays pending.

            A NEW CODE: when the verification is used up (the certificate of a first upload \
            expired before the keys went through, or keys rolled since the last upload), enctl \
            keeps the keys and says so: ask your health authority for a new verification code \
            and run 'enctl share --code CODE'. A result verified by a SMART Health Card has no \
            certificate: it is shared only when key-server.conf says \
            'publish-without-certificate = yes'. 'enctl share --pending' (the timer runs it) \
            sends the pending uploads that need no new code. Exit status 1 when nothing was \
            shared.
            """)

    @Option(help: ArgumentHelp("The test result to share (default: the most recent unshared one).", valueName: "id"), transform: ArgumentValue.text)
    var testResult: String?

    @Option(help: ArgumentHelp("A new verification code from the health authority, for a result whose verification is used up.", valueName: "code"))
    var code: String?

    @OptionGroup var server: ServerConfigurationOption

    @Flag(help: "Share without asking.")
    var yes = false

    @Flag(help: "Only send the uploads enagentd keeps pending that are due (exit status 1 when one fails again). When the output is the journal (JOURNAL_STREAM, as under the timer's unit) it writes nothing of them and exits 0.")
    var pending = false

    func validate() throws {
        guard !pending || (testResult == nil && code == nil) else {
            throw ValidationError("--pending sends every pending upload; it takes no --test-result or --code.")
        }
        if let code { try VerificationServer.checkCode(code, option: "--code") }
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
        guard var result = chosen else {
            throw CommandError(testResult.map { "no test result \($0) ('enctl test-result list')" }
                               ?? "no test result to share: record one first with 'enctl test-result add'")
        }
        guard result.uploadFailure.isEmpty else {
            throw CommandError("the key server refused the keys of test result \(result.id) for good (\(result.uploadFailure)); "
                               + "record the test again with a new code ('enctl test-result add --code') to share")
        }
        var request: PublishRequest?, leftOut = 0
        if !result.uploadPending {
            let history = try DaemonKeys.history(client).filter { !result.sharedKeys.contains($0.keyData) }
            let keys: [TemporaryExposureKey]
            (keys, leftOut) = PublishRequest.shareable(history, now: UploadSender.now)
            guard !keys.isEmpty else {
                throw CommandError(result.sharedAt > 0
                    ? "every key of test result \(result.id) was shared already; today's key is shared once it has rolled, tomorrow"
                    : "there are no keys to share yet (today's key is shared once it has rolled, tomorrow)")
            }
            request = PublishRequest(keys: keys, healthAuthority: authority, revisionToken: result.revisionToken)
        }
        if result.verifiedByCode {
            guard code != nil || !result.token.isEmpty || result.uploadPending else {
                throw CommandError(Self.newCodeNeeded(result.id, because: "its verification was used for an earlier upload"))
            }
        } else {
            guard code == nil else { throw CommandError("--code renews a verification by code; test result \(result.id) was verified by a SMART Health Card") }
            guard configuration.publishWithoutCertificate else { throw CommandError(Self.cardNotAccepted(result.id, server.serverConfig)) }
        }
        if let request {
            let host = publishURL.host ?? publishURL.absoluteString
            let question = result.sharedAt > 0
                ? "Share your \(request.keys.count) exposure key(s) since the last upload with \(host)?"
                : "Share your \(request.keys.count) exposure key(s) of the last 14 days with \(host)?"
            guard yes || Confirmation.ask(question) else { throw CommandError("nothing shared") }
            if leftOut > 0 {
                StandardStream.error.write("enctl: \(leftOut) older key(s) of the last 14 days are not shared: one upload carries at most \(PublishRequest.maximumKeys)\n")
            }
            try client.call(DaemonClient.API.Methods.queueUpload,
                            QueuedUpload(testResultId: result.id, url: publishURL.absoluteString,
                                         body: String(decoding: try request.body(certificate: ""), as: UTF8.self),
                                         keys: request.keys.map(\.keyData.bytes)))
        }
        if let code {
            // After the keys are kept: a code that does not verify loses nothing.
            result.token = try VerificationServer(configuration).verify(code: code).token
            try client.call(DaemonClient.API.Methods.setVerificationToken, VerificationTokenUpdate(testResultId: result.id, verificationToken: result.token))
        }
        guard let upload = try client.call(DaemonClient.API.Methods.getPendingUploads).uploads.first(where: { $0.testResultId == result.id }) else {
            throw CommandError("enagentd keeps no upload of test result \(result.id)")
        }
        switch try UploadSender(client: client, configuration: configuration, configurationPath: server.serverConfig).send(upload, of: result) {
        case .shared(let note):
            if !note.isEmpty { StandardStream.error.write("enctl: \(note)\n") }
            print("Your keys were shared. Thank you for helping others stay safe.")
        case .pending(let reason, let certificateSpent):
            throw CommandError("the upload is kept (\(reason)): "
                               + (certificateSpent ? "its verification is spent, so sending it again needs a new code from your health authority ('enctl share --code CODE')"
                                                   : "'enctl share --pending' (the timer) sends it again"))
        case .notSent(let reason), .kept(let reason): throw CommandError(reason)
        case .refused(let reason): throw CommandError("the key server refused the upload for good (\(reason)); it will not be sent again")
        }
    }

    static func newCodeNeeded(_ id: String, because reason: String) -> String {
        "test result \(id) needs a new verification code (\(reason)); its keys are kept: ask your health authority for a new code "
            + "and run 'enctl share --code CODE'"
    }

    static func cardNotAccepted(_ id: String, _ configurationPath: String) -> String {
        "test result \(id) was verified by a SMART Health Card, which gives no verification certificate; a key server takes keys without one "
            + "only when its health authority allows it, and \(configurationPath) does not say so (publish-without-certificate = yes). "
            + "Ask your health authority for a verification code and record the test with 'enctl test-result add --code'"
    }

    /// Under a unit (the timer's) the output is the journal, which groups adm and systemd-journal
    /// read: whether anything was sent or failed would tell of a positive test, so nothing of it
    /// is written there and the exit status is 0; `enctl test-result list` shows what became of each.
    private func sendPending(_ client: DaemonClient) throws {
        let report = !JournalLog.outputReachesJournal
        // The configuration reaches the verification server and says whether a card's upload may
        // go; a configuration that cannot be read sends only what needs neither.
        var configuration: KeyServerConfiguration?
        if FileManager.default.fileExists(atPath: server.serverConfig) {
            do { configuration = try server.load() } catch { StandardStream.error.write("enctl: \(error)\n") }
        }
        let now = UploadSender.now
        let results = try StoredTestResult.all(client)
        let due = try client.call(DaemonClient.API.Methods.getPendingUploads).uploads.filter { $0.nextAttemptAt <= UInt64(max(0, now)) }
        let sender = UploadSender(client: client, configuration: configuration, configurationPath: server.serverConfig, report: report)
        var sent = 0, failures = [String]()
        for upload in due {
            guard let result = results.first(where: { $0.id == upload.testResultId }) else { continue }
            let outcome: UploadSender.Outcome
            do { outcome = try sender.send(upload, of: result) } catch {
                failures.append("test result \(result.id): \(error)")  // the next upload goes all the same
                continue
            }
            switch outcome {
            case .shared(let note):
                sent += 1
                if report && !note.isEmpty { StandardStream.error.write("enctl: test result \(result.id): \(note)\n") }
            case .pending(let reason, _): failures.append("\(reason); it stays queued")
            case .notSent(let reason), .kept(let reason): failures.append(reason)
            case .refused(let reason): failures.append("\(reason); refused for good, not sent again")
            }
        }
        // Decoys whether or not anything real went out (key-server.conf: chaff); no configuration
        // file, no decoys.
        if let configuration, Chaff.maybeSend(configuration) { StandardStream.error.write("enctl: decoy requests sent (chaff)\n") }
        guard report else { return }
        print(due.isEmpty ? "No pending uploads due." : "\(sent) pending key upload(s) sent.")
        guard failures.isEmpty else { throw CommandError("\(failures.count) pending key upload(s) not sent: \(failures.joined(separator: "; "))") }
    }
}

/// The daemon's key history, with confirmation already given by the person.
enum DaemonKeys {
    static func history(_ client: DaemonClient) throws -> [TemporaryExposureKey] {
        try client.call(DaemonClient.API.Methods.getTemporaryExposureKeyHistory, KeyHistoryRequest(confirmed: true)).keys
    }
}

/// Sends one upload enagentd keeps: for a result verified by code with a certificate asked for
/// right before, never sent once expired, and tried again while it is valid; and tells enagentd
/// what became of it.
struct UploadSender {
    let client: DaemonClient
    /// nil when there is no key-server.conf (a card's upload and a certificate then wait).
    let configuration: KeyServerConfiguration?
    let configurationPath: String
    /// Whether to say on stderr that an attempt is repeated (not where the journal reads it).
    var report = true

    enum Outcome {
        /// Accepted; `note` says what the server dropped, or why the keys count as shared.
        case shared(note: String)
        /// Not taken for now; enagentd keeps it with its next attempt's time. `certificateSpent`:
        /// a code's verification went into the attempt, so only a new code sends it.
        case pending(String, certificateSpent: Bool)
        /// Not sent, and nothing recorded: the message says what is needed.
        case notSent(String)
        /// Kept, since a setting is wrong: the message says what answered and which setting.
        case kept(String)
        case refused(String)
    }

    /// A certificate is not sent with less than this left (a transfer, a clock a little ahead).
    static let certificateMargin: Int64 = 30
    /// Seconds between attempts while a certificate is valid (the server's Retry-After wins).
    static let retryDelays: [Int64] = [2, 4, 8, 16, 32, 60]

    func send(_ upload: PendingUploadRecord, of result: StoredTestResult) throws -> Outcome {
        var request = try PublishRequest(body: upload.body)
        // Today's health-authority and publish-url, so that an upload kept for a wrong one goes
        // once it is fixed.
        if let authority = configuration?.healthAuthority { request.healthAuthority = authority }
        guard let url = configuration?.publishURL ?? URL(string: upload.url) else {
            return .notSent("test result \(result.id): no publish-url in \(configurationPath) to send its keys to")
        }
        var certificate: VerificationServer.Certificate?
        if result.verifiedByCode {
            guard !result.token.isEmpty else { return .notSent(Share.newCodeNeeded(result.id, because: "its verification was used for an earlier attempt")) }
            guard let configuration else { return .notSent("test result \(result.id): no \(configurationPath) to reach the verification server") }
            // The token certifies one upload: spent only once the key server is known to answer.
            if let problem = try keyServerProblem(at: url, healthAuthority: request.healthAuthority) {
                let kept = keptForWrongSetting(url, answered: problem.answered, setting: problem.setting, certificateSpent: false)
                return try finish(upload, .retry, kept, outcome: .kept(kept))
            }
            let verifier = try VerificationServer(configuration)
            do throws(VerificationServer.Failure) {
                certificate = try verifier.certificate(token: result.token, hmac: request.keysHMAC, now: Self.now)
            } catch .tokenSpent(let reason) {
                try spendToken(of: result)
                return .notSent(Share.newCodeNeeded(result.id, because: reason))
            } catch .unavailable(let reason, let retryAfter) {
                return try finish(upload, .retry, "no verification certificate: \(reason)", retryAfter: retryAfter,
                                  outcome: .pending("the verification server cannot answer now: \(reason)", certificateSpent: false))
            } catch {
                return .notSent("test result \(result.id): \(error)")
            }
            try spendToken(of: result)
        } else if !(configuration?.publishWithoutCertificate ?? false) {
            return .notSent(Share.cardNotAccepted(result.id, configurationPath))
        }
        let body = try request.body(certificate: certificate?.jwt ?? "")
        var attempts = 0
        while true {
            let verdict: PublishVerdict
            do {
                verdict = PublishVerdict(try Download.post(body, to: url), earlierAttempt: upload.attempts > 0 || attempts > 0)
            } catch {
                // No answer (DNS, TLS, a refused connection): the network, or publish-url.
                verdict = .retry(reason: "no answer: \(error); check publish-url in \(configurationPath) and the network", retryAfter: nil)
            }
            attempts += 1
            switch verdict {
            case .accepted(let revisionToken, let note):
                return try finish(upload, .accepted, note, revisionToken: revisionToken, outcome: .shared(note: note))
            case .refused(let reason):
                return try finish(upload, .refused, reason, outcome: .refused(reason))
            case .certificateRefused(let reason) where certificate == nil:
                let refusal = "\(reason): this key server takes no keys without a verification certificate"
                return try finish(upload, .refused, refusal, outcome: .refused(refusal))
            case .certificateRefused(let reason):
                return try finish(upload, .retry, reason, outcome: .notSent(Share.newCodeNeeded(result.id, because: "the key server refused its certificate: \(reason)")))
            case .misdirected(let reason, let setting):
                let kept = keptForWrongSetting(url, answered: reason, setting: setting, certificateSpent: certificate != nil)
                return try finish(upload, .retry, kept, outcome: .kept(kept))
            case .retry(let reason, let retryAfter):
                let delay = retryAfter ?? Self.retryDelays[min(attempts, Self.retryDelays.count) - 1]
                guard let certificate, Self.now + delay + Self.certificateMargin < certificate.expiresAt else {
                    return try finish(upload, .retry, reason, retryAfter: retryAfter,
                                      outcome: .pending("the key server did not take it: \(reason)", certificateSpent: certificate != nil))
                }
                if report { StandardStream.error.write("enctl: the key server did not take the upload (\(reason)); trying again in \(delay) s, while the certificate is valid\n") }
                sleep(UInt32(delay))
            }
        }
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    /// What is wrong with `url` as the key server, by a publish without keys or certificate,
    /// padded as a real one: the key server answers it with its own code
    /// (health_authority_verification_certificate_invalid, or bad_request for no keys where it
    /// takes keys without a certificate), never saving anything; nil when it does.
    private func keyServerProblem(at url: URL, healthAuthority: String) throws -> (answered: String, setting: String)? {
        let probe = try PublishRequest(keys: [], healthAuthority: healthAuthority, revisionToken: "").body(certificate: "")
        do {
            guard case .misdirected(let reason, let setting) = PublishVerdict(try Download.post(probe, to: url), earlierAttempt: false) else { return nil }
            return (reason, setting)
        } catch {
            return ("nothing (\(error); is the network up?)", "publish-url")
        }
    }

    /// What answered, the setting to check, and what sends the kept keys once it is right.
    private func keptForWrongSetting(_ url: URL, answered: String, setting: String, certificateSpent: Bool) -> String {
        "\(url.absoluteString) answered \(answered): check \(setting) in \(configurationPath); the keys are kept, and "
            + (certificateSpent ? "as their verification is spent, 'enctl share --code CODE' with a new code from your health authority sends them once it is right"
                                : "'enctl share' sends them once it is right")
    }

    /// A token gives one certificate: forgotten once the server has spent it.
    private func spendToken(of result: StoredTestResult) throws {
        try client.call(DaemonClient.API.Methods.setVerificationToken, VerificationTokenUpdate(testResultId: result.id, verificationToken: ""))
    }

    private func finish(_ upload: PendingUploadRecord, _ kind: UploadOutcome.Kind, _ reason: String, revisionToken: String = "",
                        retryAfter: Int64? = nil, outcome: Outcome) throws -> Outcome {
        try client.call(DaemonClient.API.Methods.finishUpload,
                        UploadOutcome(testResultId: upload.testResultId, outcome: kind, reason: reason, revisionToken: revisionToken,
                                      retryAfter: UInt64(max(0, retryAfter ?? 0))))
        return outcome
    }
}
