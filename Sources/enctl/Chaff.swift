import ENCore
import FoundationEssentials

/// Every request to the health authority's servers has a fixed size per endpoint (its JSON
/// padded), and decoys of the same sizes go out at random when key-server.conf enables `chaff`:
/// so that neither the sizes nor the presence of requests tell the network who uploads keys
/// (as the Dutch CoronaMelder app does; the Google key and verification servers answer requests
/// with an `X-Chaff` header and discard them).
enum Padding {
    /// The size of each endpoint's requests, with room for 30 keys and a long certificate.
    enum Endpoint: Int, CaseIterable {
        case verify = 1_024
        case certificate = 4_096
        case publish = 16_384

        var path: String {
            switch self {
            case .verify: return "api/verify"
            case .certificate: return "api/certificate"
            case .publish: return "v1/publish"
            }
        }
    }

    /// base64url: nothing JSON escapes, so the padding adds exactly its length.
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    /// `fields` as JSON with a random `padding` member that brings it to the endpoint's size (a
    /// request that is larger anyway keeps a short padding).
    static func body(_ fields: [String: JSONValue], for endpoint: Endpoint) throws -> Data {
        var fields = fields
        fields["padding"] = .string("")
        let bare = try JSONValue.object(fields).encoded().count
        fields["padding"] = .string(String((0..<max(16, endpoint.rawValue - bare)).map { _ in alphabet.randomElement()! }))
        return try JSONValue.object(fields).encoded()
    }
}

/// Decoy requests: a verify, a certificate and a publish, each the size of a real one.
enum Chaff {
    static let header = ["X-Chaff": "1"]

    /// Sends one decoy round with probability `configuration.chaff`; returns whether it did.
    @discardableResult
    static func maybeSend(_ configuration: KeyServerConfiguration) -> Bool {
        guard configuration.chaff > 0, Double.random(in: 0..<1) < configuration.chaff else { return false }
        var targets = [(URL, Padding.Endpoint, [String: String])]()
        if let verification = configuration.verificationURL, let apiKey = configuration.verificationAPIKey {
            for endpoint in [Padding.Endpoint.verify, .certificate] {
                targets.append((verification.appendingPathComponent(endpoint.path), endpoint, header.merging(["X-API-Key": apiKey]) { $1 }))
            }
        }
        if let publish = configuration.publishURL { targets.append((publish, .publish, header)) }
        for (url, endpoint, headers) in targets {
            // A decoy that fails is of no consequence: nothing depends on its answer, and the
            // real requests say for themselves when the servers cannot be reached.
            _ = try? Download.post(Padding.body([:], for: endpoint), to: url, headers: headers)
        }
        return !targets.isEmpty
    }
}
