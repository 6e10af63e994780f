import ENCore
import FoundationEssentials

/// An issuer's public key from its JWKS: EC P-256 (`kty` EC, `crv` P-256, `x`, `y`).
public struct JSONWebKey: Sendable {
    public let kid: String
    public let publicKey: P256PublicKey

    /// The keys of a JWKS document (`{"keys": [...]}`) that are EC P-256 and whose `kid` is the
    /// RFC 7638 thumbprint of the key, as SMART Health Cards require; other keys are skipped.
    public static func keySet(_ data: Data) throws(HealthCardError) -> [JSONWebKey] {
        guard let keys = JSONValue(parsing: data)?["keys"]?.array else {
            throw .badIssuerKeys("not a JWKS document ({\"keys\": [...]})")
        }
        // A key that is not a point on P-256 is skipped like a key of another type: a card it
        // signed does not verify, which trusts less, never more.
        return keys.compactMap { key in
            guard key["kty"]?.string == "EC", key["crv"]?.string == "P-256", let x = key["x"]?.string, let y = key["y"]?.string,
                  let kid = key["kid"]?.string, let xBytes = Base64URL.decode(x), let yBytes = Base64URL.decode(y),
                  kid == thumbprint(x: x, y: y), let publicKey = try? P256PublicKey(x: xBytes, y: yBytes) else { return nil }
            return JSONWebKey(kid: kid, publicKey: publicKey)
        }
    }

    /// RFC 7638: SHA-256 of the required members in lexical order, without whitespace.
    static func thumbprint(x: String, y: String) -> String {
        Base64URL.encode(SHA256.digest(Data(#"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#.utf8)))
    }
}
