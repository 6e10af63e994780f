import ENAgent
import ENCore
@testable import ENStore
import Foundation
import TestSupport
import Testing

/// Recording a positive test and sharing keys, against loopback servers that behave as Google's
/// verification and key servers do (Servers/health_authority.py and the files it names).
@Suite struct DiagnosisTests {
    let directory = TemporaryDirectory()
    static let project = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The health authority's servers on a free loopback port, with health_authority.py's
    /// `options` (faults, lifetimes, limits).
    final class HealthAuthority {
        let server: LoopbackServer
        let log: String
        var base: String { server.url }

        init(log: String, _ options: String...) throws {
            self.log = log
            let script = DiagnosisTests.project.appendingPathComponent("Tests/CommandTests/Servers/health_authority.py").path
            server = try LoopbackServer("/usr/bin/python3") { [script, String($0), log] + options }
        }

        /// A key-server.conf for these servers, with `more` lines.
        func configuration(in directory: TemporaryDirectory, _ more: String = "", authority: String = "test-authority") throws -> String {
            let file = directory.file("key-server.conf")
            try """
                url = \(base)
                publish-url = \(base)v1/publish
                health-authority = \(authority)
                verification-url = \(base)
                verification-api-key = test-api-key
                \(more)
                """.write(toFile: file, atomically: true, encoding: .utf8)
            chmod(file, 0o640)  // it holds the API key
            return file
        }

        /// Every POST the servers received: path, size, whether it was a decoy, the status answered.
        func requests() throws -> [(path: String, size: Int, chaff: Bool, status: Int)] {
            guard let text = try? String(contentsOfFile: log + ".requests", encoding: .utf8) else { return [] }
            return try text.split(separator: "\n").map {
                let request = try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
                return (request["path"] as? String ?? "", request["size"] as? Int ?? 0, request["chaff"] as? Bool ?? false, request["status"] as? Int ?? 0)
            }
        }

        /// Every publish that carried keys: its keys, status, code, error, revisionToken,
        /// verificationPayload, members, whether its answer was dropped and when it arrived. (enctl
        /// checks publish-url with a publish without keys before it spends a verification token.)
        func publishes() throws -> [[String: Any]] {
            guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return [] }
            return try text.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
                .filter { ($0["keys"] as? [Any] ?? []).count > 0 || ($0["members"] as? [Any] ?? []).isEmpty }
        }
    }

    func results(_ service: ServiceTests.Service) throws -> [[String: Any]] {
        let result = try service.enctl("test-result", "list", "--json")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [[String: Any]], "\(result.standardError)")
    }

    static func base64(_ key: TemporaryExposureKey) -> String { Data(key.keyData.bytes).base64EncodedString() }

    /// The `exp` of a certificate (an ES256 JWT) as the key server reads it.
    static func expiry(_ certificate: String) throws -> Double {
        var payload = String(try #require(certificate.split(separator: ".").dropFirst().first))
        payload = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        let json = try #require(Data(base64Encoded: payload))
        let claims = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        return try #require(claims["exp"] as? Double)
    }

    /// A code is good once and its token certifies one upload: a failed publish is tried again
    /// at once with the same certificate; a key that rolled after the upload needs a new code,
    /// with which it goes alone, carrying the key server's revision token.
    @Test func aCodeCertifiesOneUploadAndALaterKeyNeedsANewCode() throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        let yesterday = try service.insertRolledKey()
        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"), "--publish-faults", "500")
        let configuration = try authority.configuration(in: directory)

        let wrong = try service.enctl("test-result", "add", "--code", "00000000", "--server-config", configuration)
        #expect(wrong.status == 1 && wrong.standardError.contains("the verification code is not valid"), "\(wrong.standardError)")
        let added = try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration)
        #expect(added.status == 0, "\(added.standardError)")
        let recorded = try results(service)
        #expect(recorded.count == 1 && recorded.first?["method"] as? String == "verification-code")
        #expect(recorded.first?["testDate"] as? Int == 1_794_960_000, "2026-11-18, from the verification server")
        let reused = try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration)
        #expect(reused.status == 1 && reused.standardError.contains("used before"), "a code is good once: \(reused.standardError)")

        let shared = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(shared.status == 0, "\(shared.standardError)")
        #expect(shared.standardError.contains("trying again in 2 s, while the certificate is valid"), "\(shared.standardError)")
        let store = try AgentStore(path: service.state + "/enagent.db")
        let result = try #require(try store.testResults().first)
        #expect(result.sharedAt != nil && !result.uploadPending && result.verificationToken == nil, "shared, the spent token forgotten")
        let again = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(again.status == 1 && again.standardError.contains("was shared already"), "\(again.standardError)")

        let later = try service.insertRolledKey(daysAgo: 2)
        let spent = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(spent.status == 1 && spent.standardError.contains("needs a new verification code") && spent.standardError.contains("enctl share --code CODE"),
                "\(spent.standardError)")
        #expect(try authority.requests().filter { $0.path == "/api/certificate" }.count == 1, "a spent token is not sent again")
        let badCode = try service.enctl("share", "--yes", "--code", "1234-5678", "--server-config", configuration)
        #expect(badCode.status == 64 && badCode.standardError.contains("--code takes the letters and digits"), "\(badCode.standardError)")
        let revision = try service.enctl("share", "--yes", "--code", "23456789", "--server-config", configuration)
        #expect(revision.status == 0, "\(revision.standardError)")

        let publishes = try authority.publishes()
        try #require(publishes.map { $0["status"] as? Int } == [500, 200, 200], "one failed attempt, two accepted, nothing sent twice")
        let sentKeys = publishes.map { ($0["keys"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String } }
        #expect(sentKeys[1] == [Self.base64(yesterday)], "today's key is not shared")
        #expect(sentKeys[2] == [Self.base64(later)], "the revision carries only the new key")
        #expect(publishes[0]["verificationPayload"] as? String == publishes[1]["verificationPayload"] as? String, "the retry's certificate is the first's")
        #expect(publishes[2]["verificationPayload"] as? String != publishes[1]["verificationPayload"] as? String, "a new certificate for the new code")
        #expect(publishes.map { $0["revisionToken"] as? String } == ["", "", result.revisionToken], "the key server's token goes with the revision")
        #expect(!(result.revisionToken ?? "").isEmpty)
        #expect(try authority.requests().allSatisfy { !$0.chaff }, "no decoys unless key-server.conf says chaff")
    }

    /// A certificate lives 15 minutes (here 35 s): attempts stop while it is valid, the upload
    /// stays pending and nothing is refused; the timer sends no expired certificate but says a
    /// new code is needed, and `enctl share --code` shares the kept keys.
    @Test func anExpiredCertificateIsNeverSentAndANewCodeSharesTheKeptKeys() throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        let key = try service.insertRolledKey()
        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"), "--certificate-seconds", "35", "--publish-faults", "503,503")
        let configuration = try authority.configuration(in: directory)
        #expect(try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration).status == 0)

        let failed = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(failed.status == 1 && failed.standardError.contains("its verification is spent, so sending it again needs a new code"), "\(failed.standardError)")
        #expect(try results(service).first?["uploadPending"] as? Bool == true)
        #expect(try service.enctl("test-result", "list").standardOutput.contains("pending: needs a new code"))
        let store = try AgentStore(path: service.state + "/enagent.db")
        try store.write { try $0.execute("UPDATE pending_upload SET next_attempt_at = 0") }  // due for the timer
        let timer = try service.enctl("share", "--pending", "--server-config", configuration)
        #expect(timer.status == 1 && timer.standardError.contains("needs a new verification code"), "\(timer.standardError)")
        #expect(try authority.publishes().count == 2, "the timer sent nothing")

        let renewed = try service.enctl("share", "--code", "23456789", "--server-config", configuration)
        #expect(renewed.status == 0, "\(renewed.standardError)")
        let publishes = try authority.publishes()
        #expect(publishes.map { $0["status"] as? Int } == [503, 503, 200])
        for publish in publishes {
            let certificate = try #require(publish["verificationPayload"] as? String)
            #expect(try #require(publish["at"] as? Double) < (try Self.expiry(certificate)), "no certificate sent after its exp")
        }
        #expect(publishes.allSatisfy { ($0["keys"] as? [[String: Any]])?.compactMap { $0["key"] as? String } == [Self.base64(key)] })
        let result = try #require(try store.testResults().first)
        #expect(result.uploadFailure == nil && result.sharedAt != nil, "never refused, shared in the end")
    }

    /// Only keys of the last 14 days go, never more than 14, whatever retention-days keeps; a
    /// server that drops some (a shorter MAX_INTERVAL_AGE_ON_PUBLISH) answers partial_failure,
    /// which is a share, with the dropped keys said in the output and the journal.
    @Test func fourteenDaysAtMostFourteenKeysAndAPartialFailureIsAShare() throws {
        let service = try ServiceTests.Service(in: directory, configuration: "retention-days = 30\n")
        #expect(try service.enctl("enable").status == 0)
        let keys = try (1...20).map { try service.insertRolledKey(daysAgo: UInt32($0)) }
        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"), "--max-age-hours", "120")
        let configuration = try authority.configuration(in: directory)
        #expect(try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration).status == 0)

        let shared = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(shared.status == 0, "\(shared.standardError)")
        // The server's rule (exposure_model.go:TransformExposureKey): a key that ended before now - 120 h.
        let oldest = (Int64(Date().timeIntervalSince1970) - 120 * 3_600) / 600
        let dropped = keys.prefix(14).filter { Int64($0.rollingEndIntervalNumber) < oldest }.count
        #expect(dropped >= 8)
        #expect(shared.standardError.contains("the key server dropped \(dropped) key(s): key"), "\(shared.standardError)")
        #expect(shared.standardError.contains("key expires before minimum window"), "\(shared.standardError)")
        let publish = try #require(try authority.publishes().first)
        #expect(publish["code"] as? String == "partial_failure")
        let sent = Set((publish["keys"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String })
        #expect(sent == Set(keys.prefix(14).map(Self.base64)), "the 14 most recent days, not the 20 kept")
        let result = try #require(try AgentStore(path: service.state + "/enagent.db").testResults().first)
        #expect(result.sharedAt != nil && result.uploadFailure == nil && !(result.revisionToken ?? "").isEmpty, "a share, its token kept")
        service.daemon.terminate()
        _ = service.daemon.waitForExit()
        #expect(!service.daemon.standardError().contains("key server"), "the journal learns nothing of the upload")
    }

    /// Three keys a day (the agent's rolls) over six days are 18 keys: the most recent 14 go.
    @Test func aPublishCarriesAtMostFourteenKeys() throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        let store = try AgentStore(path: service.state + "/enagent.db")
        var starts = [UInt32]()
        for daysAgo in UInt32(1)...6 {
            let first = try service.insertRolledKey(daysAgo: daysAgo)
            for roll in 1...2 {
                let fresh = TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(), rollingStartIntervalNumber: first.rollingStartIntervalNumber)
                let end = ENIntervalNumber(first.rollingStartIntervalNumber.rawValue + UInt32(40 * roll))
                #expect(try store.rollTemporaryExposureKey(endingAfter: end, to: fresh, createdAt: end.unixSeconds, limit: 3) != nil)
            }
            starts.append(first.rollingStartIntervalNumber.rawValue)
        }
        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"))
        let configuration = try authority.configuration(in: directory)
        #expect(try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration).status == 0)
        let shared = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(shared.status == 0, "\(shared.standardError)")
        #expect(shared.standardError.contains("4 older key(s) of the last 14 days are not shared"), "\(shared.standardError)")
        let publish = try #require(try authority.publishes().first)
        let sentStarts = (publish["keys"] as? [[String: Any]] ?? []).compactMap { $0["rollingStartNumber"] as? Int }
        #expect(publish["status"] as? Int == 200)
        #expect(starts.map { start in sentStarts.filter { $0 == Int(start) }.count } == [3, 3, 3, 3, 2, 0], "the oldest left out: \(sentStarts)")
    }

    /// The server's code decides, not its status: internal_error (a 400) and
    /// unable_to_load_health_authority are tried again; a lost answer whose keys were saved
    /// meets missing_revision_token, and the keys count as shared.
    @Test(arguments: [["internal_error", "unable_to_load"], ["drop_after_save"]])
    func retryableCodesAndALostAnswer(faults: [String]) throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        _ = try service.insertRolledKey()
        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"), "--publish-faults", faults.joined(separator: ","))
        let configuration = try authority.configuration(in: directory)
        #expect(try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration).status == 0)
        let shared = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(shared.status == 0, "\(shared.standardError)")
        let publishes = try authority.publishes()
        if faults == ["drop_after_save"] {
            #expect(publishes.map { $0["code"] as? String } == ["", "missing_revision_token"] && publishes.first?["dropped"] as? Bool == true)
            #expect(shared.standardError.contains("the key server had the keys already"), "\(shared.standardError)")
        } else {
            #expect(publishes.map { $0["code"] as? String } == ["internal_error", "unable_to_load_health_authority", ""])
            #expect(publishes.map { $0["status"] as? Int } == [400, 500, 200])
        }
        let result = try #require(try AgentStore(path: service.state + "/enagent.db").testResults().first)
        #expect(result.sharedAt != nil && result.uploadFailure == nil && !result.uploadPending)
    }

    /// A verification server that gives no test date and no test type: neither is made up (not
    /// today, not "confirmed"), enctl says so, and the upload carries no day or type either.
    @Test func aTestDateOrTypeTheServerDoesNotGiveIsNotMadeUp() throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        let yesterday = try service.insertRolledKey()
        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"), "--omit", "testDate,testtype")
        let configuration = try authority.configuration(in: directory)

        let added = try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration)
        #expect(added.status == 0, "\(added.standardError)")
        #expect(added.standardError.contains("the health authority gave no test date"), "\(added.standardError)")
        #expect(added.standardError.contains("did not say what kind of test it was"), "\(added.standardError)")
        #expect(added.standardOutput.contains("without a test date"), "\(added.standardOutput)")
        let recorded = try results(service)
        #expect(recorded.count == 1)
        #expect(recorded.first?["testDate"] as? Int == nil, "no day made up: \(recorded)")
        #expect(recorded.first?["detail"] as? String == "test of unknown type, verified by the health authority")
        #expect(try service.enctl("test-result", "list").standardOutput.contains("unknown"))

        let shared = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(shared.status == 0, "\(shared.standardError)")
        let publishes = try authority.publishes()
        #expect(publishes.map { $0["status"] as? Int } == [200])
        #expect(publishes.first?["members"] as? [String] == ["healthAuthorityID", "hmacKey", "padding", "revisionToken", "temporaryExposureKeys",
                                                             "verificationPayload"], "no symptomOnsetInterval, no report type")
        let keys = publishes.first?["keys"] as? [[String: Any]] ?? []
        #expect(keys.map { $0["key"] as? String } == [Self.base64(yesterday)])
        #expect(keys.allSatisfy { Set($0.keys) == ["key", "rollingStartNumber", "rollingPeriod", "transmissionRisk"] }, "no per-key day or type")
    }

    /// With chaff, the timer's run sends decoys, which the servers answer with something that is
    /// not JSON and otherwise ignore; decoys and real requests have the same size per endpoint,
    /// so the traffic does not tell who uploaded.
    @Test func decoysHaveTheSizesOfRealRequests() throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        _ = try service.insertRolledKey()
        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"))
        let configuration = try authority.configuration(in: directory, "chaff = 1")
        #expect(try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration).status == 0)
        let shared = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(shared.status == 0, "\(shared.standardError)")
        let pending = try service.enctl("share", "--pending", "--server-config", configuration)
        #expect(pending.status == 0 && pending.standardError.contains("decoy requests sent"), "\(pending.standardError)")

        let requests = try authority.requests()
        let real = Dictionary(grouping: requests.filter { !$0.chaff }, by: \.path).mapValues { Set($0.map(\.size)) }
        let decoys = Dictionary(grouping: requests.filter(\.chaff), by: \.path).mapValues { Set($0.map(\.size)) }
        #expect(Set(decoys.keys) == ["/api/verify", "/api/certificate", "/v1/publish"])
        #expect(real == decoys, "real \(real), decoys \(decoys)")
        #expect(try authority.publishes().count == 1, "a decoy is no publish")
        #expect(try service.enctl("test-result", "list", "--json").standardOutput.contains("\"uploadPending\" : false"))
    }

    /// The API key is the device's secret: a key-server.conf holding it that every user can read
    /// (README's copy of the 0644 template once did that) is refused before anything is sent,
    /// naming the file and the command that fixes it; without an API key the mode is the
    /// administrator's.
    @Test func anAPIKeyOthersCanReadIsRefused() throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"))
        let configuration = try authority.configuration(in: directory)
        chmod(configuration, 0o644)
        let refused = try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration)
        #expect(refused.status == 1 && refused.standardError.contains("\(configuration) holds verification-api-key and every user can read it (mode 644)")
                && refused.standardError.contains("sudo chmod 0640 \(configuration) && sudo chgrp enagent \(configuration)"), "\(refused.standardError)")
        #expect(try authority.requests().isEmpty && (try results(service)).isEmpty, "nothing sent, nothing recorded")
        chmod(configuration, 0o640)
        #expect(try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration).status == 0)

        let downloadsOnly = directory.file("download-only.conf")
        try "url = \(authority.base)\n".write(toFile: downloadsOnly, atomically: true, encoding: .utf8)
        chmod(downloadsOnly, 0o644)
        let shared = try service.enctl("share", "--yes", "--server-config", downloadsOnly)
        #expect(!shared.standardError.contains("every user can read it"), "no secret, no refusal: \(shared.standardError)")
    }

    /// The verification server's rate limit (429, Retry-After as an HTTP date) keeps the upload
    /// and the unspent token for the time it says; a refusal for good (bad_request: more keys
    /// than the key server takes) ends the upload: shown, never sent again, and sharing says why.
    @Test func aRateLimitIsWaitedOutAndARefusalForGoodEndsTheUpload() throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        _ = try service.insertRolledKey()
        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"), "--rate-limit", "3600", "--max-keys", "0")
        let configuration = try authority.configuration(in: directory)
        #expect(try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration).status == 0)

        let limited = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(limited.status == 1 && limited.standardError.contains("HTTP 429") && limited.standardError.contains("(the timer) sends it again"),
                "the token is unspent, so the timer sends it: \(limited.standardError)")
        let store = try AgentStore(path: service.state + "/enagent.db")
        let next = try #require(try store.pendingUploads().first?.nextAttemptAt) - Int64(Date().timeIntervalSince1970)
        #expect((3_500...3_600).contains(next), "Retry-After an hour ahead → \(next) s")
        #expect(try store.testResults().first?.verificationToken != nil, "the token was not spent")
        #expect(try service.enctl("share", "--pending", "--server-config", configuration).standardOutput.contains("No pending uploads due"))

        try store.write { try $0.execute("UPDATE pending_upload SET next_attempt_at = 0") }  // the hour has passed
        let refused = try service.enctl("share", "--pending", "--server-config", configuration)
        #expect(refused.status == 1 && refused.standardError.contains("HTTP 400: unable to read request data: too many exposure keys in publish: 1, "
                                                                      + "max of 0 is allowed [bad_request]"), "\(refused.standardError)")
        #expect(try store.pendingUploads().isEmpty)
        #expect(try service.enctl("test-result", "list").standardOutput.contains("refused for good: HTTP 400"))
        #expect(try service.status()["reminders"] as? [String] == ["upload-refused"], "enctl status says so")
        let again = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(again.status == 1 && again.standardError.contains("record the test again with a new code"), "\(again.standardError)")
        #expect(try authority.publishes().count == 1, "nothing sent after the refusal")
    }

    /// Only the key server's own code for the request ends an upload. A mistyped publish-url (the
    /// mux's 404), a redirect, a proxy's page, or a health authority the key server does not
    /// know, or no server at all: the keys are kept and the token unspent, enctl names what
    /// answered and the setting to check, and once key-server.conf is corrected `enctl share`
    /// publishes them. `wrong` is the setting, which overrides the right one (the last wins).
    @Test(arguments: [("publish-url = BASEv1/publis", "HTTP 404, not a key server's answer (no JSON): check publish-url"),
                      ("publish-url = BASEmoved/v1/publish", "HTTP 301, not a key server's answer (no JSON); a redirect is not followed: check publish-url"),
                      ("publish-url = BASEproxy/v1/publish", "HTTP 403, not a key server's answer (no JSON): check publish-url"),
                      ("health-authority = another-authority", "[unknown_health_authority_id]: check health-authority"),
                      ("publish-url = http://127.0.0.1:1/v1/publish", "answered nothing (")])  // nothing listens on port 1
    func aWrongSettingKeepsTheUploadUntilItIsCorrected(wrongSetting: String, told: String) throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        let key = try service.insertRolledKey()
        let server = try HealthAuthority(log: directory.file("publishes.jsonl"))
        let wrong = try server.configuration(in: directory, wrongSetting.replacing("BASE", with: server.base))
        #expect(try service.enctl("test-result", "add", "--code", "12345678", "--server-config", wrong).status == 0)

        let kept = try service.enctl("share", "--yes", "--server-config", wrong)
        #expect(kept.status == 1 && kept.standardError.contains(told) && kept.standardError.contains("in \(wrong); the keys are kept"),
                "\(kept.standardError)")
        #expect(try results(service).first?["uploadPending"] as? Bool == true && (try results(service).first?["uploadFailure"] as? String ?? "").isEmpty,
                "kept, not refused")
        #expect(try server.requests().allSatisfy { $0.path != "/api/certificate" }, "the token is not spent on a server that is not there")
        let pending = try service.enctl("share", "--pending", "--server-config", wrong)
        #expect(pending.status == 0 && pending.standardOutput.contains("No pending uploads due"), "kept for later, not refused: \(pending.standardError)")

        let corrected = try service.enctl("share", "--yes", "--server-config", try server.configuration(in: directory))
        #expect(corrected.status == 0 && corrected.standardOutput.contains("Your keys were shared"), "\(corrected.standardError)")
        let publishes = try server.publishes()
        #expect(publishes.map { $0["status"] as? Int } == [200] && (publishes.first?["keys"] as? [[String: Any]])?.first?["key"] as? String == Self.base64(key))
    }

    /// A card-verified result has no certificate: shared only with a key server that
    /// key-server.conf says takes uploads without one (its authority's
    /// BypassHealthAuthorityVerification); otherwise refused before anything is sent.
    @Test func aCardVerifiedResultIsSharedOnlyWhereTheServerTakesIt() throws {
        let issuer = try HealthCardIssuer()
        let issuers = directory.file("issuers")
        try FileManager.default.createDirectory(atPath: issuers, withIntermediateDirectories: true)
        try issuer.jwks.write(to: URL(fileURLWithPath: issuers + "/issuer.json"))
        let card = directory.file("positive.smart-health-card")
        try issuer.card(Self.resources("positive")).write(toFile: card, atomically: true, encoding: .utf8)
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        _ = try service.insertRolledKey()
        #expect(try service.enctl("test-result", "add", "--card", card, "--issuers-dir", issuers, "--yes").status == 0)

        let strict = try HealthAuthority(log: directory.file("strict.jsonl"))
        let unsaid = try service.enctl("share", "--yes", "--server-config", try strict.configuration(in: directory))
        #expect(unsaid.status == 1 && unsaid.standardError.contains("publish-without-certificate = yes"), "\(unsaid.standardError)")
        #expect(try strict.requests().isEmpty && (try results(service).first?["uploadPending"] as? Bool) == false, "nothing sent, nothing kept")

        let wrong = try service.enctl("share", "--yes", "--server-config", try strict.configuration(in: directory, "publish-without-certificate = yes"))
        #expect(wrong.status == 1 && wrong.standardError.contains("this key server takes no keys without a verification certificate"),
                "\(wrong.standardError)")

        let service2Directory = TemporaryDirectory()
        let other = try ServiceTests.Service(in: service2Directory)
        #expect(try other.enctl("enable").status == 0)
        _ = try other.insertRolledKey()
        #expect(try other.enctl("test-result", "add", "--card", card, "--issuers-dir", issuers, "--yes").status == 0)
        let bypassing = try HealthAuthority(log: directory.file("bypass.jsonl"), "--bypass-verification")
        let accepted = try other.enctl("share", "--yes", "--server-config", try bypassing.configuration(in: directory, "publish-without-certificate = yes"))
        #expect(accepted.status == 0, "\(accepted.standardError)")
        #expect(try bypassing.publishes().map { $0["verificationPayload"] as? String } == [""])
        #expect(try bypassing.requests().map(\.path) == ["/v1/publish"], "no verification request for a card")
    }

    @Test func aSmartHealthCardIsVerifiedShownAndRecorded() throws {
        let fixtures = Self.project.appendingPathComponent("Tests/ENDiagnosisTests/Fixtures")
        let card = fixtures.appendingPathComponent("example-00-e-file.smart-health-card").path
        let jwks = fixtures.appendingPathComponent("example-issuer-jwks.json").path
        let service = try ServiceTests.Service(in: directory)

        try FileManager.default.createDirectory(atPath: directory.file("none"), withIntermediateDirectories: false)
        let unknown = try service.enctl("test-result", "verify", card, "--issuers-dir", directory.file("none"))
        #expect(unknown.status == 1 && unknown.standardError.contains("is not trusted here: add its JWKS, with \"iss\", as a *.json file"),
                "\(unknown.standardError)")
        let checked = try service.enctl("test-result", "verify", card, "--issuer-keys", jwks)
        #expect(checked.status == 0 && checked.standardOutput.contains("John B. Anyperson"), "\(checked.standardError)")
        let tampered = directory.file("tampered.smart-health-card")
        try String(contentsOfFile: card, encoding: .utf8).replacingOccurrences(of: "eyJ6aXAiOiJERUYi", with: "eyJ6aXAiOiJERUZi")
            .write(toFile: tampered, atomically: true, encoding: .utf8)
        #expect(try service.enctl("test-result", "verify", tampered, "--issuer-keys", jwks).status == 1)

        // A trusted issuer: its JWKS with "iss", in the issuers directory.
        let issuers = directory.file("issuers")
        try FileManager.default.createDirectory(atPath: issuers, withIntermediateDirectories: true)
        var document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: jwks))) as? [String: Any])
        document["iss"] = "https://spec.smarthealth.cards/examples/issuer"
        try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: issuers + "/example.json"))
        #expect(try service.enctl("test-result", "verify", card, "--issuers-dir", issuers).status == 0)
        // The example card holds immunizations only: a vaccination is no positive test.
        let vaccination = try service.enctl("test-result", "add", "--card", card, "--issuers-dir", issuers, "--date", "2026-11-17", "--yes")
        #expect(vaccination.status == 1 && vaccination.standardError.contains("does not prove a positive SARS-CoV-2 test: it holds 3 immunizations"),
                "\(vaccination.standardError)")
        #expect(try results(service).isEmpty)
    }

    /// Cards from an issuer of our own: only a final positive antigen or nucleic-acid result is
    /// recorded (dated by the card); every other card is refused, naming what it holds.
    static func resources(_ name: String) -> [[String: Any]] {
        let snomed = "http://snomed.info/sct"
        switch name {
        case "positive": return [HealthCardIssuer.observation(test: "94558-4", result: (snomed, "260373001"), date: "2026-11-16")]
        case "negative": return [HealthCardIssuer.observation(test: "94500-6", result: (snomed, "260415000"))]
        case "inconclusive": return [HealthCardIssuer.observation(test: "94309-2", result: (snomed, "419984006"))]
        case "antibody": return [HealthCardIssuer.observation(test: "94563-4", result: (snomed, "10828004"))]
        case "preliminary": return [HealthCardIssuer.observation(test: "94558-4", result: (snomed, "10828004"), status: "preliminary")]
        case "unknown": return [HealthCardIssuer.observation(test: "12345-6", result: (snomed, "10828004"))]
        default: return [HealthCardIssuer.immunization()]
        }
    }

    @Test(arguments: [
        ("positive", nil),
        ("negative", "a negative test (LOINC 94500-6: SNOMED CT 260415000)"),
        ("inconclusive", "a test without a positive result (LOINC 94309-2: SNOMED CT 419984006)"),
        ("antibody", "an antibody test (LOINC 94563-4), which shows a past infection or a vaccination"),
        ("preliminary", "whose result is preliminary, not final"),
        ("unknown", "LOINC 12345-6, which is not a SARS-CoV-2 antigen or nucleic-acid test"),
        ("vaccinated", "an immunization"),
    ] as [(String, String?)])
    func onlyAPositiveTestIsRecorded(name: String, refusal: String?) throws {
        let issuer = try HealthCardIssuer()
        let issuers = directory.file("issuers")
        try FileManager.default.createDirectory(atPath: issuers, withIntermediateDirectories: true)
        try issuer.jwks.write(to: URL(fileURLWithPath: issuers + "/issuer.json"))
        let card = directory.file("\(name).smart-health-card")
        try issuer.card(Self.resources(name)).write(toFile: card, atomically: true, encoding: .utf8)
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("test-result", "verify", card, "--issuers-dir", issuers).status == 0, "every card verifies")
        let added = try service.enctl("test-result", "add", "--card", card, "--issuers-dir", issuers, "--yes")
        if let refusal {
            #expect(added.status == 1 && added.standardError.contains(refusal), "\(added.standardError)")
            #expect(try results(service).isEmpty)
        } else {
            #expect(added.status == 0, "\(added.standardError)")
            let recorded = try #require(try results(service).first)
            #expect(recorded["method"] as? String == "smart-health-card")
            #expect(recorded["testDate"] as? Int == 1_794_787_200, "2026-11-16, the test's date on the card")
            #expect((recorded["detail"] as? String)?.contains(issuer.url) == true)
        }
    }
}
