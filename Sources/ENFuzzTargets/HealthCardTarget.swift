import ENCore
import ENArchive
import ENDiagnosis
import Foundation

/// A SMART Health Card file as `enctl test-result verify|add` reads it (any bytes, decoded as
/// UTF-8): `jws(from:)`, then `verify(_:now:)` against the spec's example issuer.
///
/// A stranger's card stops at the signature, so the same bytes are also taken as a card's
/// payload JSON and signed with a key the fuzzer trusts for any issuer (`--issuer-keys`): that
/// reaches what follows a valid signature (`nbf`, `exp` and the FHIR bundle), which an issuer's
/// own mistakes or a trusted-but-careless issuer can feed.
public func fuzzHealthCard(_ input: UnsafeRawBufferPointer) {
    let text = String(decoding: input, as: UTF8.self)
    _ = try? HealthCardVerifier.jws(from: text)
    _ = try? HealthCardFixtures.exampleVerifier.verify(text, now: HealthCardFixtures.now)

    guard input.count <= HealthCardVerifier.maximumPayloadSize, let jws = HealthCardFixtures.selfSigned(payload: input) else { return }
    _ = try? HealthCardFixtures.selfSignedVerifier.verify(jws, now: HealthCardFixtures.now)
}

/// `payload` as a card signed by the key `fuzzHealthCard` trusts for any issuer, and a verifier
/// that trusts it: for tests of what follows the signature.
public func selfSignedHealthCard(payload: [UInt8]) -> (jws: String, verifier: HealthCardVerifier)? {
    payload.withUnsafeBytes { bytes in HealthCardFixtures.selfSigned(payload: bytes).map { ($0, HealthCardFixtures.selfSignedVerifier) } }
}

enum HealthCardFixtures {
    /// The tests' clock (2025-11-21): after the example card's nbf.
    static let now: Int64 = 1_763_700_000

    /// The example issuer's signing key (Tests/ENDiagnosisTests/Fixtures/example-issuer-jwks.json).
    static let exampleVerifier: HealthCardVerifier = {
        let keys = try! JSONWebKey.keySet(Data("""
            {"keys": [{"kty": "EC", "kid": "3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s", "use": "sig", "alg": "ES256", "crv": "P-256",
                       "x": "11XvRWy1I2S0EyJlyf_bWfw_TQ5CJJNLw78bHXNxcgw", "y": "eZXwxvO1hvCY0KucrPfKo7yAyMT6Ajc3N7OkAB6VYy8"}]}
            """.utf8))
        precondition(keys.count == 1, "the example issuer's key did not load")
        return HealthCardVerifier(issuers: ["https://spec.smarthealth.cards/examples/issuer": keys])
    }()

    /// A key made per process: what it signs verifies, whatever the payload's issuer.
    static let signer = try! P256PrivateKey()

    static let selfSignedKey: JSONWebKey = {
        let point = signer.publicKey.point
        let x = Base64URL.encode(point.x), y = Base64URL.encode(point.y)
        let kid = Base64URL.encode(SHA256.digest(Data(#"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#.utf8)))
        let jwks = #"{"keys":[{"kty":"EC","crv":"P-256","kid":"\#(kid)","x":"\#(x)","y":"\#(y)"}]}"#
        return try! JSONWebKey.keySet(Data(jwks.utf8)).first!
    }()

    static let selfSignedVerifier = HealthCardVerifier(issuers: [:], anyIssuerKeys: [selfSignedKey])

    /// A compact JWS of `payload` (raw DEFLATE in stored blocks), ES256-signed by `signer`.
    static func selfSigned(payload: UnsafeRawBufferPointer) -> String? {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(selfSignedKey.kid)","zip":"DEF"}"#.utf8))
        let signingInput = header + "." + Base64URL.encode(RawDeflate.stored(payload))
        guard let raw = try? Array(signingInput.utf8).withUnsafeBytes({ try signer.rawSignature(for: $0) }) else { return nil }
        return signingInput + "." + Base64URL.encode(raw)
    }
}
