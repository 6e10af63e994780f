import ENCore
import ENStore
import Foundation
import TestSupport
import Testing

/// Recording a positive test and sharing keys, against loopback servers speaking the
/// verification and key server protocols (Servers/health_authority.py).
@Suite struct DiagnosisTests {
    let directory = TemporaryDirectory()
    static let project = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The health authority's servers on a free loopback port; publishes fail `failures` times first.
    final class HealthAuthority {
        let server: LoopbackServer
        let log: String
        var base: String { server.url }

        init(log: String, failures: Int) throws {
            self.log = log
            let script = DiagnosisTests.project.appendingPathComponent("Tests/CommandTests/Servers/health_authority.py").path
            server = try LoopbackServer("/usr/bin/python3") { [script, String($0), log, String(failures)] }
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

        let authority = try HealthAuthority(log: directory.file("publishes.jsonl"), failures: 1)
        let configuration = directory.file("key-server.conf")
        try """
            url = \(authority.base)
            publish-url = \(authority.base)v1/publish
            health-authority = test-authority
            verification-url = \(authority.base)
            verification-api-key = test-api-key
            """.write(toFile: configuration, atomically: true, encoding: .utf8)

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

        let retried = try service.enctl("share", "--pending", "--server-config", configuration)
        #expect(retried.status == 0, "\(retried.standardError)")
        #expect(retried.standardOutput.contains("1 pending key upload(s) sent"))
        let shared = try #require(try results(service).first)
        #expect(shared["uploadPending"] as? Bool == false && (shared["sharedAt"] as? Int ?? 0) > 0)
        #expect(try service.enctl("detect", "server", "--server-config", configuration, "--cache-dir", directory.file("cache")).status == 0)
        let again = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(again.status == 1 && again.standardError.contains("no unshared test result"))

        let publishes = try authority.publishes()
        #expect(publishes.map { $0["accepted"] as? Bool } == [false, true], "one refused attempt, one accepted, nothing sent twice")
        let keys = try #require(publishes.last?["keys"] as? [[String: Any]])
        #expect(keys.map { $0["key"] as? String } == [Data(yesterday.keyData.bytes).base64EncodedString()], "today's key is not shared")
        #expect(publishes.last?["authority"] as? String == "test-authority")
    }

    @Test func aSmartHealthCardIsVerifiedShownAndRecorded() throws {
        let fixtures = Self.project.appendingPathComponent("Tests/ENDiagnosisTests/Fixtures")
        let card = fixtures.appendingPathComponent("example-00-e-file.smart-health-card").path
        let jwks = fixtures.appendingPathComponent("example-issuer-jwks.json").path
        let service = try ServiceTests.Service(in: directory)

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
