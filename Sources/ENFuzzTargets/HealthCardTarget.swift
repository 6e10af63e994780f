import ENCore
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
        // The SubjectPublicKeyInfo of a P-256 key ends with the uncompressed point 04 ‖ x ‖ y.
        let point = signer.publicKey.subjectPublicKeyInfo.suffix(64)
        let x = base64URL(Array(point.prefix(32))), y = base64URL(Array(point.suffix(32)))
        let kid = base64URL(SHA256.digest(Data(#"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#.utf8)))
        let jwks = #"{"keys":[{"kty":"EC","crv":"P-256","kid":"\#(kid)","x":"\#(x)","y":"\#(y)"}]}"#
        return try! JSONWebKey.keySet(Data(jwks.utf8)).first!
    }()

    static let selfSignedVerifier = HealthCardVerifier(issuers: [:], anyIssuerKeys: [selfSignedKey])

    /// A compact JWS of `payload` (raw DEFLATE in stored blocks), ES256-signed by `signer`.
    static func selfSigned(payload: UnsafeRawBufferPointer) -> String? {
        let header = base64URL(Array(#"{"alg":"ES256","kid":"\#(selfSignedKey.kid)","zip":"DEF"}"#.utf8))
        let signingInput = header + "." + base64URL(storedDeflate(payload))
        guard let der = try? Array(signingInput.utf8).withUnsafeBytes({ try signer.signature(for: $0) }),
              let raw = rawSignature(der: der) else { return nil }
        return signingInput + "." + base64URL(raw)
    }

    /// Raw DEFLATE of `bytes` without compression: stored blocks of at most 65535 bytes.
    static func storedDeflate(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var output = [UInt8](), offset = 0
        repeat {
            let length = min(bytes.count - offset, 0xFFFF)
            let final: UInt8 = offset + length == bytes.count ? 1 : 0
            output += [final, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            output += bytes[offset..<offset + length]
            offset += length
        } while offset < bytes.count
        return output
    }

    /// The JOSE form (r ‖ s, 32 bytes each) of a DER ECDSA signature from OpenSSL.
    static func rawSignature(der: [UInt8]) -> [UInt8]? {
        // SEQUENCE { INTEGER r, INTEGER s }; P-256 signatures are short enough for one-byte lengths.
        guard der.count > 8, der[0] == 0x30 else { return nil }
        var index = 2, raw = [UInt8]()
        for _ in 0..<2 {
            guard index + 2 <= der.count, der[index] == 0x02 else { return nil }
            let length = Int(der[index + 1])
            guard index + 2 + length <= der.count else { return nil }
            let integer = der[(index + 2)..<(index + 2 + length)].drop { $0 == 0 }
            guard integer.count <= 32 else { return nil }
            raw += [UInt8](repeating: 0, count: 32 - integer.count) + integer
            index += 2 + length
        }
        return raw
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
