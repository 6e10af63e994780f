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
