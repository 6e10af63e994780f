import ENAgent
import ENCore
@testable import ENStore
import Foundation
import TestSupport
import Testing

/// Recording a positive test and sharing keys, against loopback servers speaking the
/// verification and key server protocols (Servers/health_authority.py).
@Suite struct DiagnosisTests {
    let directory = TemporaryDirectory()
    static let project = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The health authority's servers on a free loopback port; the first publishes get `failures`
    /// (HTTP statuses: 500, 429 with Retry-After, 400 for an expired certificate); the verify
    /// answer leaves out the members `omitted` names (testDate, testtype).
    final class HealthAuthority {
        let server: LoopbackServer
        let log: String
        var base: String { server.url }

        init(log: String, failures: [Int] = [], omitted: [String] = []) throws {
            self.log = log
            let script = DiagnosisTests.project.appendingPathComponent("Tests/CommandTests/Servers/health_authority.py").path
            let statuses = failures.isEmpty ? "0" : failures.map(String.init).joined(separator: ",")
            server = try LoopbackServer("/usr/bin/python3") { [script, String($0), log, statuses, omitted.joined(separator: ",")] }
        }

        /// A key-server.conf for these servers, with `more` lines.
        func configuration(in directory: TemporaryDirectory, _ more: String = "") throws -> String {
            let file = directory.file("key-server.conf")
            try """
                url = \(base)
                publish-url = \(base)v1/publish
                health-authority = test-authority
                verification-url = \(base)
                verification-api-key = test-api-key
                \(more)
                """.write(toFile: file, atomically: true, encoding: .utf8)
            return file
        }

        /// Every POST the servers received: path, size, and whether it was a decoy.
        func requests() throws -> [(path: String, size: Int, chaff: Bool)] {
            guard let text = try? String(contentsOfFile: log + ".requests", encoding: .utf8) else { return [] }
            return try text.split(separator: "\n").map {
                let request = try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
                return (request["path"] as? String ?? "", request["size"] as? Int ?? 0, request["chaff"] as? Bool ?? false)
            }
        }

        func publishes() throws -> [[String: Any]] {
            guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return [] }
            return try text.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        }
    }

    func results(_ service: ServiceTests.Service) throws -> [[String: Any]] {
        let result = try service.enctl("test-result", "list", "--json")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [[String: Any]], "\(result.standardError)")
    }

    @Test func aVerifiedCodeSharesExactlyTheRolledKeysOnceEvenAfterAFailedUpload() throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        let yesterday = try service.insertRolledKey()

        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"), failures: [500])
        let configuration = try authority.configuration(in: directory)

        let wrong = try service.enctl("test-result", "add", "--code", "00000000", "--server-config", configuration)
        #expect(wrong.status == 1 && wrong.standardError.contains("the verification code is not valid"), "\(wrong.standardError)")
        let added = try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration)
        #expect(added.status == 0, "\(added.standardError)")
        let recorded = try results(service)
        #expect(recorded.count == 1)
        #expect(recorded.first?["method"] as? String == "verification-code")
        #expect(recorded.first?["testDate"] as? Int == 1_794_960_000, "2026-11-18, from the verification server")

        let failed = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(failed.status == 1 && failed.standardError.contains("it is kept and sent again"), "\(failed.standardError)")
        #expect(try results(service).first?["uploadPending"] as? Bool == true)
        #expect(try results(service).first?["sharedAt"] as? Int == 0)

        let notDue = try service.enctl("share", "--pending")
        #expect(notDue.status == 0 && notDue.standardOutput.contains("No pending uploads due"), "backoff: \(notDue.standardOutput)")
        let store = try AgentStore(path: service.state + "/enagent.db")
        let next = try #require(try store.pendingUploads().first?.nextAttemptAt) - Int64(Date().timeIntervalSince1970)
        #expect((UploadBackoff.first - 60...UploadBackoff.first).contains(next), "the first retry in 15 minutes: \(next) s")
        try store.write { try $0.execute("UPDATE pending_upload SET next_attempt_at = 0") }  // the 15 minutes have passed

        let retried = try service.enctl("share", "--pending")
        #expect(retried.status == 0, "\(retried.standardError)")
        #expect(retried.standardOutput.contains("1 pending key upload(s) sent"))
        let shared = try #require(try results(service).first)
        #expect(shared["uploadPending"] as? Bool == false && (shared["sharedAt"] as? Int ?? 0) > 0)
        let again = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(again.status == 1 && again.standardError.contains("was shared already"), "\(again.standardError)")

        // A key that became shareable since (as the day's key does once it has rolled) goes in a
        // revision: only that key, with the server's revision token.
        let later = try service.insertRolledKey(daysAgo: 2)
        let revision = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(revision.status == 0, "\(revision.standardError)")

        let publishes = try authority.publishes()
        #expect(publishes.map { $0["accepted"] as? Bool } == [false, true, true], "one refused attempt, two accepted, nothing sent twice")
        let sentKeys = publishes.map { ($0["keys"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String } }
        #expect(sentKeys[1] == [Data(yesterday.keyData.bytes).base64EncodedString()], "today's key is not shared")
        #expect(sentKeys[2] == [Data(later.keyData.bytes).base64EncodedString()], "the revision carries only the new key")
        #expect(publishes.map { $0["revisionToken"] as? String } == ["", "", "revision-1"])
        #expect(publishes.last?["authority"] as? String == "test-authority")
        #expect(try authority.requests().allSatisfy { !$0.chaff }, "no decoys unless key-server.conf says chaff")
    }

    /// A verification server that gives no test date and no test type: neither is made up (not
    /// today, not "confirmed"), enctl says so, and the upload carries no day or type either.
    @Test func aTestDateOrTypeTheServerDoesNotGiveIsNotMadeUp() throws {
        let service = try ServiceTests.Service(in: directory)
        let enabled = try service.enctl("enable")
        #expect(enabled.status == 0)
        let yesterday = try service.insertRolledKey()
        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"), omitted: ["testDate", "testtype"])
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
        let listed = try service.enctl("test-result", "list")
        #expect(listed.standardOutput.contains("unknown"), "\(listed.standardOutput)")

        let shared = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(shared.status == 0, "\(shared.standardError)")
        let publishes = try authority.publishes()
        #expect(publishes.map { $0["accepted"] as? Bool } == [true])
        #expect(publishes.first?["members"] as? [String] == ["healthAuthorityID", "hmacKey", "padding", "revisionToken", "temporaryExposureKeys",
                                                             "verificationPayload"], "no symptomOnsetInterval, no report type")
        let keys = publishes.first?["keys"] as? [[String: Any]] ?? []
        #expect(keys.map { $0["key"] as? String } == [Data(yesterday.keyData.bytes).base64EncodedString()])
        #expect(keys.allSatisfy { Set($0.keys) == ["key", "rollingStartNumber", "rollingPeriod", "transmissionRisk"] }, "no per-key day or type")
    }

    /// With chaff, the timer's run sends decoys the servers discard; decoys and real requests have
    /// the same size per endpoint, so the traffic does not tell who uploaded.
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

    /// 429 with Retry-After waits as long as the server says; a refusal for good (an expired
    /// certificate) ends the upload: shown, never sent again, and sharing asks for a new code.
    @Test func aRefusalForGoodEndsTheUploadAndRetryAfterIsHonoured() throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        _ = try service.insertRolledKey()
        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"), failures: [429, 400])
        let configuration = try authority.configuration(in: directory)
        #expect(try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration).status == 0)

        let limited = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(limited.status == 1 && limited.standardError.contains("HTTP 429"), "\(limited.standardError)")
        let store = try AgentStore(path: service.state + "/enagent.db")
        let next = try #require(try store.pendingUploads().first?.nextAttemptAt) - Int64(Date().timeIntervalSince1970)
        #expect((3_540...3_600).contains(next), "Retry-After: 3600 → \(next) s")

        let refused = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(refused.status == 1 && refused.standardError.contains("refused the upload for good (HTTP 400: the verification certificate has expired"),
                "\(refused.standardError)")
        #expect(try store.pendingUploads().isEmpty)
        let listed = try service.enctl("test-result", "list")
        #expect(listed.standardOutput.contains("refused for good: HTTP 400"), "\(listed.standardOutput)")
        #expect(try results(service).first?["uploadFailure"] as? String == "HTTP 400: the verification certificate has expired [certificate_expired]")
        #expect(try service.enctl("share", "--pending").standardOutput.contains("No pending uploads due"))
        #expect(try service.status()["reminders"] as? [String] == ["upload-refused"], "enctl status says so")
        let again = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(again.status == 1 && again.standardError.contains("record the test again with a new code"), "\(again.standardError)")
        #expect(try authority.publishes().count == 2, "nothing sent after the refusal")
    }

    @Test func aSmartHealthCardIsVerifiedShownAndRecorded() throws {
        let fixtures = Self.project.appendingPathComponent("Tests/ENDiagnosisTests/Fixtures")
        let card = fixtures.appendingPathComponent("example-00-e-file.smart-health-card").path
        let jwks = fixtures.appendingPathComponent("example-issuer-jwks.json").path
        let service = try ServiceTests.Service(in: directory)

        try FileManager.default.createDirectory(atPath: directory.file("none"), withIntermediateDirectories: false)
        let unknown = try service.enctl("test-result", "verify", card, "--issuers-dir", directory.file("none"))
        #expect(unknown.status == 1 && unknown.standardError.contains("is not trusted here"))
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
