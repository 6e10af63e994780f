import ENCore
import Foundation

/// A SMART Health Card issuer for tests: a fresh P-256 key, its JWKS, and cards it signs as real
/// issuers do (a raw-DEFLATE payload, an ES256 JWS whose `kid` is the key's RFC 7638 thumbprint).
/// Written without ENDiagnosis, so that the verifier is checked against an independent signer.
public struct HealthCardIssuer {
    public let url: String
    private let key: P256PrivateKey
    private let x: String
    private let y: String

    public init(url: String = "https://issuer.example.org") throws {
        self.url = url
        key = try P256PrivateKey()
        // A P-256 SubjectPublicKeyInfo ends with the uncompressed point 04 ‖ X ‖ Y.
        let point = key.publicKey.subjectPublicKeyInfo.suffix(64)
        x = Self.base64URL(Array(point.prefix(32)))
        y = Self.base64URL(Array(point.suffix(32)))
    }

    public var kid: String {
        Self.base64URL(SHA256.digest(Data(#"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#.utf8)))
    }

    /// The issuer's JWKS with `"iss"`, as a trusted-issuers directory holds it.
    public var jwks: Data {
        Data(#"{"iss":"\#(url)","keys":[{"kty":"EC","kid":"\#(kid)","use":"sig","alg":"ES256","crv":"P-256","x":"\#(x)","y":"\#(y)"}]}"#.utf8)
    }

    /// A `.smart-health-card` file whose FHIR bundle holds a patient and `resources`.
    public func card(_ resources: [[String: Any]], issuedAt: Int64 = Int64(Date().timeIntervalSince1970)) throws -> String {
        let patient: [String: Any] = ["resourceType": "Patient", "name": [["family": "Anyperson", "given": ["Jane"]]], "birthDate": "1961-01-20"]
        let entries = ([patient] + resources).enumerated().map { ["fullUrl": "resource:\($0.offset)", "resource": $0.element] }
        let payload: [String: Any] = [
            "iss": url, "nbf": issuedAt,
            "vc": ["type": ["https://smarthealth.cards#health-card"],
                   "credentialSubject": ["fhirVersion": "4.0.1", "fhirBundle": ["resourceType": "Bundle", "type": "collection", "entry": entries]]],
        ]
        let json = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        let header = Self.base64URL(Array(#"{"zip":"DEF","alg":"ES256","kid":"\#(kid)"}"#.utf8))
        let signingInput = header + "." + Self.base64URL(Self.storedDeflate(Array(json)))
        let der = try Array(signingInput.utf8).withUnsafeBytes { try key.signature(for: $0) }
        let jws = signingInput + "." + Self.base64URL(Self.rawSignature(der))
        return #"{"verifiableCredential":["\#(jws)"]}"#
    }

    /// A laboratory Observation as the vaccination-and-testing IG's examples write it.
    public static func observation(test: String, result: (system: String, code: String), status: String = "final",
                                   date: String = "2026-11-16") -> [String: Any] {
        ["resourceType": "Observation", "status": status, "code": ["coding": [["system": "http://loinc.org", "code": test]]],
         "subject": ["reference": "resource:0"], "effectiveDateTime": date,
         "valueCodeableConcept": ["coding": [["system": result.system, "code": result.code]]], "performer": [["display": "ABC General Hospital"]]]
    }

    public static func immunization(date: String = "2021-01-01") -> [String: Any] {
        ["resourceType": "Immunization", "status": "completed", "vaccineCode": ["coding": [["system": "http://hl7.org/fhir/sid/cvx", "code": "207"]]],
         "patient": ["reference": "resource:0"], "occurrenceDateTime": date, "lotNumber": "0000001"]
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Raw DEFLATE of stored (uncompressed) blocks, which every inflater reads.
    static func storedDeflate(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8]()
        var offset = 0
        repeat {
            let count = min(65_535, bytes.count - offset)
            let final: UInt8 = offset + count == bytes.count ? 1 : 0
            output += [final, UInt8(count & 0xff), UInt8(count >> 8), UInt8(~count & 0xff), UInt8((~count >> 8) & 0xff)]
            output += bytes[offset..<offset + count]
            offset += count
        } while offset < bytes.count
        return output
    }

    /// The JOSE r ‖ s form of a DER ECDSA signature (SEQUENCE of two INTEGERs).
    static func rawSignature(_ der: [UInt8]) -> [UInt8] {
        var index = der[1] & 0x80 != 0 ? 2 + Int(der[1] & 0x7f) : 2
        var parts = [[UInt8]]()
        for _ in 0..<2 {
            let length = Int(der[index + 1])
            let integer = der[(index + 2)..<(index + 2 + length)].drop { $0 == 0 }
            parts.append([UInt8](repeating: 0, count: 32 - integer.count) + integer)
            index += 2 + length
        }
        return parts[0] + parts[1]
    }
}
