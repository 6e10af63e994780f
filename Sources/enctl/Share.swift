import ArgumentParser
import ENAPI
import ENBus
import ENCore
import Foundation

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

    @Option(help: ArgumentHelp("The test result to share (default: the most recent unshared one).", valueName: "id"))
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
        let chosen: StoredTestResult? = if let testResult { results.first { $0.id == testResult } } else { results.first { $0.sharedAt == 0 } }
        guard let result = chosen else {
            throw CommandError(testResult.map { "no test result \($0) ('enctl test-result list')" }
                               ?? "no unshared test result: record one first with 'enctl test-result add'")
        }
        guard result.sharedAt == 0 else { throw CommandError("test result \(result.id) was shared already") }
        if !result.uploadPending {
            guard yes || Confirmation.ask("Share your exposure keys of the last 14 days with \(publishURL.host ?? publishURL.absoluteString)?") else {
                throw CommandError("nothing shared")
            }
            let keys = try DaemonKeys.history(client)
            guard !keys.isEmpty else { throw CommandError("there are no keys to share yet (today's key is shared once it has rolled, tomorrow)") }
            let secret = (0..<16).map { _ in UInt8.random(in: 0...255) }
            var certificate = ""
            if result.method == VerificationMethod.verificationCode.rawValue {
                certificate = try VerificationServer(configuration).certificate(token: result.token, hmac: ExposureKeyHMAC.code(secret: secret, keys: keys))
            }
            let body: [String: Any] = [
                "temporaryExposureKeys": keys.map {
                    ["key": Data($0.keyData.bytes).base64EncodedString(), "rollingStartNumber": $0.rollingStartIntervalNumber.rawValue,
                     "rollingPeriod": $0.rollingPeriod, "transmissionRisk": $0.transmissionRiskLevel]
                },
                "healthAuthorityID": authority, "verificationPayload": certificate, "hmacKey": Data(secret).base64EncodedString(),
                "revisionToken": "", "padding": Padding.random(),
            ]
            let json = String(decoding: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]), as: UTF8.self)
            try client.call(DaemonClient.API.Methods.queueUpload, QueuedUpload(testResultId: result.id, url: publishURL.absoluteString, body: json))
        }
        let outcome = try PendingUploads.send(client, only: result.id)
        guard outcome.failed.isEmpty else {
            throw CommandError("the key server did not take the upload (\(outcome.failed.joined(separator: "; "))); it is kept and sent again by 'enctl share --pending' (the timer)")
        }
        print("Your keys were shared. Thank you for helping others stay safe.")
    }

    private func sendPending(_ client: DaemonClient) throws {
        let uploads = try PendingUploads.send(client)
        print(uploads.sent.isEmpty && uploads.failed.isEmpty ? "No pending uploads." : "\(uploads.sent.count) pending key upload(s) sent.")
        guard uploads.failed.isEmpty else {
            throw CommandError("\(uploads.failed.count) pending key upload(s) failed again (\(uploads.failed.joined(separator: "; "))); they stay queued")
        }
    }
}

/// The daemon's key history, with confirmation already given by the person.
enum DaemonKeys {
    static func history(_ client: DaemonClient) throws -> [TemporaryExposureKey] {
        try client.call(DaemonClient.API.Methods.getTemporaryExposureKeyHistory, KeyHistoryRequest(confirmed: true)).keys
    }
}

/// Uploads enagentd keeps until a key server accepted them.
enum PendingUploads {
    /// Sends the pending uploads (or only `id`'s); returns what was sent and what failed, with the reason.
    static func send(_ client: DaemonClient, only id: String? = nil) throws -> (sent: [String], failed: [String]) {
        let pending = try client.call(DaemonClient.API.Methods.getPendingUploads).uploads.filter { id == nil || $0.testResultId == id }
        var sent = [String](), failed = [String]()
        for upload in pending {
            let error: String
            if let url = URL(string: upload.url) {
                do {
                    let (status, data) = try Download.post(Data(upload.body.utf8), to: url)
                    let answer = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
                    let refusal = answer["error"] as? String ?? ""
                    error = status == 200 && refusal.isEmpty ? "" : (refusal.isEmpty ? "HTTP \(status)" : "HTTP \(status): \(refusal)")
                } catch {
                    let reason = "\(error)"
                    try client.call(DaemonClient.API.Methods.finishUpload, UploadOutcome(testResultId: upload.testResultId, error: reason))
                    failed.append(reason)
                    continue
                }
            } else {
                error = "bad URL \(upload.url)"
            }
            try client.call(DaemonClient.API.Methods.finishUpload, UploadOutcome(testResultId: upload.testResultId, error: error))
            if error.isEmpty { sent.append(upload.testResultId) } else { failed.append(error) }
        }
        return (sent, failed)
    }
}
