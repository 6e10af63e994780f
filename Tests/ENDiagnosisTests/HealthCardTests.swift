@testable import ENDiagnosis
import ENArchive
import ENCore
import Foundation
import Testing

@Suite struct HealthCardTests {
    static let fixtures = Bundle.module.resourceURL!.appendingPathComponent("Fixtures")
    static let issuer = "https://spec.smarthealth.cards/examples/issuer"
    static let now: Int64 = 1_763_700_000  // 2025-11-21

    static func text(_ name: String) throws -> String { try String(contentsOf: fixtures.appendingPathComponent(name), encoding: .utf8) }

    static func verifier() throws -> HealthCardVerifier {
        let keys = try JSONWebKey.keySet(Data(contentsOf: fixtures.appendingPathComponent("example-issuer-jwks.json")))
        return HealthCardVerifier(issuers: [issuer: keys])
    }

    @Test(arguments: ["example-00-d-jws.txt", "example-00-e-file.smart-health-card", "example-00-f-qr-code-numeric-value-0.txt"])
    func theExampleCardVerifiesInEveryForm(file: String) throws {
        let card = try Self.verifier().verify(try Self.text(file), now: Self.now)
        #expect(card.issuer == Self.issuer)
        #expect(card.notBefore == 1_687_450_764)
        #expect(card.patientName == "John B. Anyperson")
        #expect(card.birthDate == "1951-01-20")
        #expect(card.entries.map(\.date) == ["2021-01-01", "2021-01-29", "2022-09-05"])
        #expect(card.entries.first?.performer == "ABC General Hospital")
    }

    @Test func thePayloadInflatesToTheExpectedJSON() throws {
        let jws = try Self.text("example-00-d-jws.txt").trimmingCharacters(in: .whitespacesAndNewlines)
        let payload = try RawDeflate.inflate(try #require(Base64URL.decode(jws.split(separator: ".")[1])), limit: 1 << 20)
        let expected = try Self.text("example-00-c-jws-payload-minified.json").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(String(decoding: payload, as: UTF8.self) == expected)
        #expect(throws: RawDeflate.Failure.tooLarge(limit: 100)) { try RawDeflate.inflate(try #require(Base64URL.decode(jws.split(separator: ".")[1])), limit: 100) }
    }

    /// Any byte changed in header, payload or signature is refused.
    @Test func everyAlteredByteIsRefused() throws {
        let jws = Array(try Self.text("example-00-d-jws.txt").trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        let verifier = try Self.verifier()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var accepted = [Int]()
        for index in jws.indices where jws[index] != UInt8(ascii: ".") {
            var altered = jws
            altered[index] = alphabet[(alphabet.firstIndex(of: jws[index])! + 1) % alphabet.count]
            if (try? verifier.verify(String(decoding: altered, as: UTF8.self), now: Self.now)) != nil { accepted.append(index) }
        }
        // The last character of a base64url part may carry unused bits; only such a change can decode to the same bytes.
        let partEnds = Set(jws.indices.filter { $0 + 1 == jws.count || jws[$0 + 1] == UInt8(ascii: ".") })
        #expect(accepted.allSatisfy { partEnds.contains($0) }, "accepted alterations at \(accepted)")
        #expect(accepted.count <= 1)
    }

    @Test func refusalsNameTheReason() throws {
        let verifier = try Self.verifier()
        let jws = try Self.text("example-00-d-jws.txt").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(throws: HealthCardError.unknownIssuer(Self.issuer)) { try HealthCardVerifier(issuers: [:]).verify(jws, now: Self.now) }
        #expect(throws: HealthCardError.notYetValid(notBefore: 1_687_450_764)) { try verifier.verify(jws, now: 1_600_000_000) }
        #expect(throws: HealthCardError.unreadable("a compact JWS has three parts separated by dots")) { try verifier.verify("abc.def", now: Self.now) }
        #expect(throws: HealthCardError.unreadable("shc:/ must be followed by pairs of digits")) { try verifier.verify("shc:/123", now: Self.now) }
        let parts = jws.split(separator: ".")
        let noneHeader = Base64URL.encode(Array(#"{"alg":"none","zip":"DEF","kid":"x"}"#.utf8))
        #expect(throws: HealthCardError.unsupportedAlgorithm("none")) { try verifier.verify("\(noneHeader).\(parts[1]).\(parts[2])", now: Self.now) }
        let otherKid = Base64URL.encode(Array(#"{"alg":"ES256","zip":"DEF","kid":"EBKOr72QQDcTBUuVzAzkfBTGew0ZA16GuWty64nS-sw"}"#.utf8))
        #expect(throws: HealthCardError.self) { try verifier.verify("\(otherKid).\(parts[1]).\(parts[2])", now: Self.now) }
    }

    @Test func keysWhoseKidIsNotTheirThumbprintAreSkipped() throws {
        let keys = try JSONWebKey.keySet(Data(contentsOf: Self.fixtures.appendingPathComponent("example-issuer-jwks.json")))
        #expect(keys.map(\.kid).contains("3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s"))
        let forged = #"{"keys":[{"kty":"EC","crv":"P-256","kid":"3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s","x":"11XvRWy1I2S0EyJlyf_bWfw_TQ5CJJNLw78bHXNxcgw","y":"AZXwxvO1hvCY0KucrPfKo7yAyMT6Ajc3N7OkAB6VYy8"}]}"#
        #expect(try JSONWebKey.keySet(Data(forged.utf8)).isEmpty)
    }
}

/// What a card proves, from its coded observations.
@Suite struct SARSCoV2FindingTests {
    static func card(_ results: [HealthCard.LaboratoryResult], immunizations: Int = 0) -> HealthCard {
        var card = HealthCard(issuer: "https://issuer.example.org", notBefore: 0, expires: nil,
                              entries: Array(repeating: HealthCard.Entry(kind: "immunization", what: "vaccine"), count: immunizations))
        card.laboratoryResults = results
        return card
    }

    static func result(_ test: String, _ code: String, system: String = "http://snomed.info/sct", status: String = "final",
                       date: String? = "2026-11-16") -> HealthCard.LaboratoryResult {
        HealthCard.LaboratoryResult(test: HealthCard.Code(system: "http://loinc.org", code: test), result: HealthCard.Code(system: system, code: code),
                                    status: status, date: date)
    }

    @Test func theExampleVaccinationCardProvesNoTest() throws {
        let card = try HealthCardTests.verifier().verify(try HealthCardTests.text("example-00-e-file.smart-health-card"), now: HealthCardTests.now)
        #expect(card.laboratoryResults.isEmpty)
        #expect(SARSCoV2Finding(card) == .notPositive(reason: "3 immunizations"))
    }

    @Test func aPositiveAmongOthersCountsAndTheLatestPositiveDatesIt() {
        let card = Self.card([Self.result("94500-6", "260415000", date: "2026-11-10"), Self.result("94558-4", "10828004", date: "2026-11-12"),
                              Self.result("94309-2", "LA11882-0", system: "http://loinc.org", status: "amended", date: "2026-11-14")],
                             immunizations: 1)
        #expect(SARSCoV2Finding(card) == .positive(date: "2026-11-14"))
    }

    @Test func everythingElseIsNamed() {
        let card = Self.card([Self.result("94500-6", "260415000"), Self.result("94500-6", "999999"), Self.result("94558-4", "10828004", status: "registered")])
        #expect(SARSCoV2Finding(card) == .notPositive(reason: "a negative test (LOINC 94500-6: SNOMED CT 260415000); a test (LOINC 94500-6) "
                                                      + "whose result SNOMED CT 999999 is not one this agent knows; a test (LOINC 94558-4) whose result is registered, not final"))
        #expect(SARSCoV2Finding(Self.card([])) == .notPositive(reason: "nothing but the person's details"))
    }
}

/// The primitives card issuers in tests and fuzzers use: stored DEFLATE and JOSE signatures.
@Suite struct CardIssuingPrimitiveTests {
    @Test(arguments: [0, 1, 65_535, 65_536, 200_000])
    func storedDeflateInflatesBack(count: Int) throws {
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(try RawDeflate.inflate(RawDeflate.stored(bytes), limit: count) == bytes)
    }

    @Test func aRawSignatureVerifiesAndIsSixtyFourBytes() throws {
        let key = try P256PrivateKey()
        let message = Array("header.payload".utf8)
        for _ in 0..<20 {
            let signature = try message.withUnsafeBytes { try key.rawSignature(for: $0) }
            #expect(signature.count == 64)
            #expect(message.withUnsafeBytes { key.publicKey.isValidRawSignature(signature, for: $0) })
        }
        #expect(try P256PublicKey(x: key.publicKey.point.x, y: key.publicKey.point.y).subjectPublicKeyInfo == key.publicKey.subjectPublicKeyInfo)
    }
}
