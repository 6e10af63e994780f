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
        /// The test's type as the server says it (confirmed, likely, negative); nil when it says none.
        var testType: String?
        /// Unix seconds of the test day's UTC midnight; nil when the server gives no date.
        var testDate: Int64?
        var token: String
    }

    /// What the server leaves out (an absent or empty testDate or testtype) stays unknown:
    /// neither today nor "confirmed" is made up for it.
    func verify(code: String) throws -> Verification {
        let answer = try call(.verify, ["code": .string(code), "accept": .array([.string("confirmed")])])
        guard let token = answer?["token"]?.string else { throw CommandError("the verification server sent no token") }
        let testType = answer?["testtype"]?.string.flatMap { $0.isEmpty ? nil : $0 }
        let dateText = answer?["testDate"]?.string ?? ""
        var testDate: Int64?
        if !dateText.isEmpty {
            // The code is spent once the server has answered: a date it garbled is unknown, not a
            // reason to lose the code.
            do { testDate = try TestResultCommand.day(dateText) } catch {
                StandardStream.error.write("enctl: the verification server's test date \"\(dateText)\" is not a test day (\(error)); it is taken as unknown\n")
            }
        }
        return Verification(testType: testType, testDate: testDate, token: token)
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
