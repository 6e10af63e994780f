import ENArchive
import ENCore
import Foundation

/// A SMART Health Card issuer for tests: a fresh P-256 key, its JWKS, and cards it signs as real
/// issuers do (a raw-DEFLATE payload, an ES256 JWS whose `kid` is the key's RFC 7638 thumbprint).
/// The JWS and JWKS are assembled here, without ENDiagnosis, so that the verifier is checked
/// against a signer of its own.
public struct HealthCardIssuer {
    public let url: String
    private let key: P256PrivateKey
    private let x: String
    private let y: String

    public init(url: String = "https://issuer.example.org") throws {
        self.url = url
        key = try P256PrivateKey()
        let point = key.publicKey.point
        x = Self.base64URL(point.x)
        y = Self.base64URL(point.y)
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
        let signingInput = header + "." + Self.base64URL(RawDeflate.stored(json))
        let signature = try Array(signingInput.utf8).withUnsafeBytes { try key.rawSignature(for: $0) }
        let jws = signingInput + "." + Self.base64URL(signature)
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
}
