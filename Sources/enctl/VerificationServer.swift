import ArgumentParser
import ENCore
import ENDiagnosis
import FoundationEssentials

/// The verification server protocol (google/exposure-notifications-verification-server,
/// protocol.md §5): a code for a token, a token and the keys' HMAC for a certificate. A code and
/// a token are each good once; a certificate for 15 minutes (CERTIFICATE_DURATION).
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

    /// Why the server did not give what was asked, from its errorCode (pkg/api/api.go) as its
    /// handlers send them (verifyapi/verify.go:HandleVerify, certapi/certificate.go:HandleCertificate).
    enum Failure: Error, CustomStringConvertible {
        /// Unknown, or used before (the server says code_invalid for both).
        case codeInvalid
        case codeExpired
        /// The code is for a test type enctl does not accept; the server did not use it up.
        case unsupportedTestType
        /// The token gives no certificate: used before (token_expired, sic), past its 24 hours or
        /// not valid (token_invalid). Only a new code helps.
        case tokenSpent(String)
        /// For now: rate limited (429, Retry-After in seconds from now), a server error, no network.
        case unavailable(String, retryAfter: Int64?)
        case refused(String)

        var description: String {
            switch self {
            case .codeInvalid: return "the verification code is not valid (mistyped, or used before): check it with your health authority"
            case .codeExpired: return "the verification code has expired: ask your health authority for a new one"
            case .unsupportedTestType:
                return "the verification code is not for a confirmed positive test, the only kind enctl shares keys for (the code is not used up)"
            case .tokenSpent(let reason): return "the verification of this test result is used up (\(reason))"
            case .unavailable(let reason, _): return "the verification server cannot answer now (\(reason))"
            case .refused(let reason): return "the verification server refused the request (\(reason))"
            }
        }
    }

    /// A code as health authorities issue them (8 digits, or 16 letters and digits), before it
    /// is sent: anything else is a typing mistake that would cost a request.
    static func checkCode(_ code: String, option: String) throws {
        guard (1...64).contains(code.utf8.count), code.utf8.allSatisfy({ (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }) else {
            throw ValidationError("\(option) takes the letters and digits of the verification code from your health authority, not \"\(code)\"")
        }
    }

    struct Verification {
        /// The test's type as the server says it (confirmed, likely, negative); nil when it says none.
        var testType: String?
        /// Unix seconds of the test day's UTC midnight; nil when the server gives no date.
        var testDate: Int64?
        var token: String
    }

    /// A verification certificate (an ES256 JWT) and when it expires.
    struct Certificate {
        var jwt: String
        /// Unix seconds of its `exp`; 15 minutes from now when it names none.
        var expiresAt: Int64

        init(jwt: String, now: Int64) {
            self.jwt = jwt
            let claims = jwt.split(separator: ".", omittingEmptySubsequences: false).dropFirst().first
                .flatMap { Base64URL.decode($0) }.flatMap { JSONValue(parsing: Data($0)) }
            expiresAt = claims?["exp"]?.integer ?? now + 15 * 60
        }
    }

    /// What the server leaves out (an absent or empty testDate or testtype) stays unknown:
    /// neither today nor "confirmed" is made up for it.
    func verify(code: String) throws(Failure) -> Verification {
        let answer = try call(.verify, ["code": .string(code), "accept": .array([.string("confirmed")])])
        guard let token = answer["token"]?.string else { throw .refused("it sent no token") }
        let testType = answer["testtype"]?.string.flatMap { $0.isEmpty ? nil : $0 }
        let dateText = answer["testDate"]?.string ?? ""
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

    /// A certificate binding `hmac` (of the keys to share) to the verified test; spends the token.
    func certificate(token: String, hmac: [UInt8], now: Int64) throws(Failure) -> Certificate {
        let answer = try call(.certificate, ["token": .string(token), "ekeyhmac": .string(Data(hmac).base64EncodedString())])
        guard let jwt = answer["certificate"]?.string, !jwt.isEmpty else { throw .refused("it sent no certificate") }
        return Certificate(jwt: jwt, now: now)
    }

    /// The server's JSON answer to a 200 without an error.
    private func call(_ endpoint: Padding.Endpoint, _ fields: [String: JSONValue]) throws(Failure) -> JSONValue {
        let target = url.appendingPathComponent(endpoint.path)
        let reply: Download.Answer
        do {
            reply = try Download.post(try Padding.body(fields, for: endpoint), to: target, headers: ["X-API-Key": apiKey])
        } catch {
            throw .unavailable("\(error)", retryAfter: nil)
        }
        let answer = JSONValue(parsing: reply.body)
        let code = answer?["errorCode"]?.string ?? "", message = answer?["error"]?.string ?? ""
        if reply.status == 200, code.isEmpty, message.isEmpty, let answer { return answer }
        let reason = "HTTP \(reply.status)" + (message.isEmpty ? "" : ": \(message)") + (code.isEmpty ? "" : " [\(code)]")
        switch (reply.status, code) {
        case (_, "code_invalid"), (_, "code_not_found"): throw .codeInvalid
        case (_, "code_expired"): throw .codeExpired
        case (_, "unsupported_test_type"): throw .unsupportedTestType
        case (_, "token_invalid"), (_, "token_expired"): throw .tokenSpent(reason)
        case (408, _), (429, _), (500...599, _), (_, "maintenance_mode"), (_, "quota_exceeded"):
            throw .unavailable(reason, retryAfter: reply.retryAfter)
        default: throw .refused("\(target.absoluteString): \(reason)")
        }
    }
}
