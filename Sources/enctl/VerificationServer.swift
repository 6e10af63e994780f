import ENCore
import FoundationEssentials

/// The verification server protocol (google/exposure-notifications-verification-server,
/// protocol.md §5): a code for a token, a token and the keys' HMAC for a certificate.
struct VerificationServer {
    let url: URL
    let apiKey: String

    init(_ configuration: KeyServerConfiguration) throws {
        guard let url = configuration.verificationURL, let apiKey = configuration.verificationAPIKey else {
            throw CommandError("key-server.conf needs verification-url and verification-api-key to verify a code")
        }
        self.url = url
        self.apiKey = apiKey
    }

    struct Verification {
        var testType: String
        var testDate: Int64
        var token: String
    }

    func verify(code: String) throws -> Verification {
        let answer = try call(.verify, ["code": .string(code), "accept": .array([.string("confirmed")])])
        guard let token = answer?["token"]?.string else { throw CommandError("the verification server sent no token") }
        let day = answer?["testDate"]?.string.flatMap { try? TestResultCommand.day($0) } ?? Int64(Date().timeIntervalSince1970) / 86_400 * 86_400
        return Verification(testType: answer?["testtype"]?.string ?? "confirmed", testDate: day, token: token)
    }

    /// A certificate binding `hmac` (of the keys to share) to the verified test.
    func certificate(token: String, hmac: [UInt8]) throws -> String {
        let answer = try call(.certificate, ["token": .string(token), "ekeyhmac": .string(Data(hmac).base64EncodedString())])
        guard let certificate = answer?["certificate"]?.string else { throw CommandError("the verification server sent no certificate") }
        return certificate
    }

    /// The server's JSON answer (nil when it is not JSON) to a 200 without an error.
    private func call(_ endpoint: Padding.Endpoint, _ fields: [String: JSONValue]) throws -> JSONValue? {
        let target = url.appendingPathComponent(endpoint.path)
        let reply = try Download.post(try Padding.body(fields, for: endpoint), to: target, headers: ["X-API-Key": apiKey])
        let (status, data) = (reply.status, reply.body)
        let answer = JSONValue(parsing: data)
        guard status == 200, (answer?["error"]?.string ?? "").isEmpty else {
            let reason = answer?["errorCode"]?.string ?? answer?["error"]?.string ?? "HTTP \(status)"
            switch reason {
            case "code_invalid", "code_not_found": throw CommandError("the verification code is not valid: check it with your health authority")
            case "code_expired": throw CommandError("the verification code has expired: ask your health authority for a new one")
            case "token_expired": throw CommandError("the verification has expired: record the test again with a new code")
            default: throw CommandError("\(target.absoluteString): \(reason)")
            }
        }
        return answer
    }
}
