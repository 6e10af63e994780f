import FoundationEssentials

/// base64url without padding (RFC 7515 §2), as JWS and JWK use it.
public enum Base64URL {
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var standard = String(text).replacing("-", with: "+").replacing("_", with: "/")
        guard !standard.contains("=") else { return nil }
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map(Array.init)
    }

    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
    }
}
