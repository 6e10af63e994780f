/// Why a SMART Health Card was refused. Each case says what a person can check or fix.
public enum HealthCardError: Error, Equatable, CustomStringConvertible {
    case unreadable(String)
    case badHeader(String)
    case unsupportedAlgorithm(String)
    case badPayload(String)
    case unknownIssuer(String)
    case unknownKey(issuer: String, kid: String)
    case badSignature
    case notYetValid(notBefore: Int64)
    case expired(expires: Int64)
    case badIssuerKeys(String)

    public var description: String {
        switch self {
        case .unreadable(let reason): return "not a SMART Health Card: \(reason)"
        case .badHeader(let reason): return "the card's JWS header is unusable: \(reason)"
        case .unsupportedAlgorithm(let algorithm): return "the card is signed with \(algorithm); SMART Health Cards use ES256"
        case .badPayload(let reason): return "the card's payload is unusable: \(reason)"
        case .unknownIssuer(let issuer):
            return "the issuer \(issuer) is not trusted here: add its JWKS, with \"iss\", as a *.json file to the trusted issuers directory "
                + "(/etc/enagent/trusted-issuers, or --issuers-dir; other files there are ignored), or name it with --issuer-keys"
        case .unknownKey(let issuer, let kid): return "the issuer \(issuer) has no key \(kid) among its trusted keys"
        case .badSignature: return "the signature does not verify: the card was altered or not signed by its issuer"
        case .notYetValid(let time): return "the card is not valid before \(time) (unix time)"
        case .expired(let time): return "the card expired at \(time) (unix time)"
        case .badIssuerKeys(let reason): return "the issuer keys are unusable: \(reason)"
        }
    }
}
