import ENAPI
import ENCore
import FoundationEssentials

/// A publish request of google/exposure-notifications-server (pkg/api/v1/exposure_types.go:
/// Publish), as enagentd keeps it pending: everything but the verification certificate, which
/// expires 15 minutes after it is issued and so is asked for right before each sending.
struct PublishRequest: Equatable {
    var keys: [TemporaryExposureKey]
    var healthAuthority: String
    /// The secret under which the verification server certifies the keys' HMAC (16 random bytes).
    var hmacKey: [UInt8]
    /// The key server's token from this result's earlier upload; "" for none.
    var revisionToken: String

    /// What the key server allows in one publish with the strictest configuration it shipped
    /// with (MAX_KEYS_ON_PUBLISH: 14 or 15 in early releases, 30 today; more fails the whole publish).
    static let maximumKeys = 14
    /// The keys a publish may carry: the key server drops a key that ended more than
    /// MAX_INTERVAL_AGE_ON_PUBLISH (15 days) ago; the protocol shares 14 days.
    static let sharedDays: Int64 = 14

    /// The keys of `history` valid at some moment of the last 14 days at `now`, newest first,
    /// whatever retention-days keeps.
    static func lastFourteenDays(_ history: [TemporaryExposureKey], now: Int64) -> [TemporaryExposureKey] {
        let oldestEnd = UInt64(max(0, now - sharedDays * UTCDay.seconds) / 600)
        return history.filter { $0.rollingEndIntervalNumber > oldestEnd }
            .sorted { ($0.rollingStartIntervalNumber.rawValue, $0.rollingPeriod) > ($1.rollingStartIntervalNumber.rawValue, $1.rollingPeriod) }
    }

    /// The keys of `history` worth sharing at `now`: those of the last 14 days, the most recent
    /// 14 of them; and how many older ones were left out.
    static func shareable(_ history: [TemporaryExposureKey], now: Int64) -> (keys: [TemporaryExposureKey], leftOut: Int) {
        let recent = lastFourteenDays(history, now: now)
        return (Array(recent.prefix(maximumKeys)), max(0, recent.count - maximumKeys))
    }

    /// The HMAC the verification server certifies (`ekeyhmac`; the key server checks it as tekmac).
    var keysHMAC: [UInt8] { ExposureKeyHMAC.code(secret: hmacKey, keys: keys) }

    /// The JSON to post, padded to the publish endpoint's size, with `certificate` ("" for none).
    func body(certificate: String) throws -> Data {
        try Padding.body([
            "temporaryExposureKeys": .array(keys.map {
                .object(["key": .string(Data($0.keyData.bytes).base64EncodedString()),
                         "rollingStartNumber": .integer(Int64($0.rollingStartIntervalNumber.rawValue)),
                         "rollingPeriod": .integer(Int64($0.rollingPeriod)), "transmissionRisk": .integer(Int64($0.transmissionRiskLevel))])
            }),
            "healthAuthorityID": .string(healthAuthority), "verificationPayload": .string(certificate),
            "hmacKey": .string(Data(hmacKey).base64EncodedString()), "revisionToken": .string(revisionToken),
        ], for: .publish)
    }

    /// The request enagentd kept (`body(certificate:)`'s JSON, whose certificate is ignored).
    init(body: String) throws {
        let json = JSONValue(parsing: Data(body.utf8))
        guard let entries = json?["temporaryExposureKeys"]?.array, let authority = json?["healthAuthorityID"]?.string,
              let secret = json?["hmacKey"]?.string.flatMap({ Data(base64Encoded: $0) }) else {
            throw CommandError("a pending upload kept by enagentd is not a publish request; 'enagentd' and 'enctl' may be of different versions")
        }
        keys = try entries.map { entry in
            guard let data = entry["key"]?.string.flatMap({ Data(base64Encoded: $0) }), let key = Bytes16(bytes: [UInt8](data)),
                  let start = entry["rollingStartNumber"]?.integer, let period = entry["rollingPeriod"]?.integer,
                  let interval = UInt32(exactly: start), let rollingPeriod = UInt32(exactly: period) else {
                throw CommandError("a pending upload kept by enagentd holds a key that is not one")
            }
            return TemporaryExposureKey(keyData: key, rollingStartIntervalNumber: ENIntervalNumber(interval), rollingPeriod: rollingPeriod,
                                        transmissionRiskLevel: Int(entry["transmissionRisk"]?.integer ?? 0))
        }
        healthAuthority = authority
        hmacKey = [UInt8](secret)
        revisionToken = json?["revisionToken"]?.string ?? ""
    }

    init(keys: [TemporaryExposureKey], healthAuthority: String, revisionToken: String) {
        self.keys = keys
        self.healthAuthority = healthAuthority
        self.revisionToken = revisionToken
        hmacKey = (0..<16).map { _ in UInt8.random(in: 0...255) }
    }
}

/// What a key server's answer to a publish means (internal/publish/publish.go:process): the
/// answer's `code` decides, not its HTTP status alone. Only a code the key server gives for
/// the request itself ends an upload: an answer without one (a mistyped path's 404, a redirect,
/// a proxy's page) is not the key server's and says that a setting is wrong.
enum PublishVerdict: Equatable {
    /// The keys are on the server; `note` says what it dropped or why the keys count as shared.
    case accepted(revisionToken: String, note: String)
    /// Not taken for now: send again, after `retryAfter` seconds when the server said.
    case retry(reason: String, retryAfter: Int64?)
    /// The verification certificate did not verify: a new one (from a new code) is needed.
    case certificateRefused(reason: String)
    /// Never to be sent again, with the server's own words.
    case refused(reason: String)
    /// Not the key server's answer, or its answer that key-server.conf's `setting` is wrong:
    /// kept, to be sent once the setting is right.
    case misdirected(reason: String, setting: String)

    /// The codes of pkg/api/v1/exposure_types.go that internal/publish/publish.go:process gives
    /// for the request itself (bad_request: unparsable, no or too many keys, a key it cannot
    /// take; the revision token and report type checks of its database insert): the same keys
    /// get the same answer however often they are sent. missing_revision_token is among them
    /// unless an earlier attempt may have saved the keys.
    static let permanentCodes: Set = ["bad_request", "missing_revision_token", "invalid_revision_token", "key_already_revised",
                                      "invalid_report_type_transition"]
    /// The codes of a key server that cannot take the keys now (internal_error from its
    /// database, unable_to_load_health_authority, which exposure_types.go calls retryable; its
    /// own missing region configuration).
    static let retryCodes: Set = ["internal_error", "unable_to_load_health_authority", "health_authority_missing_region_config"]

    /// `earlierAttempt`: this upload was sent before, and that attempt's outcome may have been
    /// the keys saved with the answer lost.
    init(_ answer: Download.Answer, earlierAttempt: Bool) {
        let json = JSONValue(parsing: answer.body)
        let code = json?["code"]?.string ?? "", message = json?["error"]?.string ?? ""
        let reason = "HTTP \(answer.status)" + (message.isEmpty ? "" : ": \(Self.oneLine(message))") + (code.isEmpty ? "" : " [\(code)]")
        switch (answer.status, code) {
        case (200, ""):
            self = .accepted(revisionToken: json?["revisionToken"]?.string ?? "", note: "")
        case (200, "partial_failure"):
            self = .accepted(revisionToken: json?["revisionToken"]?.string ?? "", note: "the key server dropped \(Self.dropped(message))")
        case (_, "missing_revision_token") where earlierAttempt:
            // The keys are this device's alone: the server has them from the attempt whose answer was lost.
            self = .accepted(revisionToken: "", note: "the key server had the keys already, from an earlier attempt whose answer was lost")
        case (_, let code) where Self.retryCodes.contains(code):
            self = .retry(reason: reason, retryAfter: answer.retryAfter)
        case (_, "health_authority_verification_certificate_invalid"):
            self = .certificateRefused(reason: reason)
        case (_, "unknown_health_authority_id"):
            self = .misdirected(reason: reason, setting: "health-authority")
        case (_, let code) where Self.permanentCodes.contains(code):
            self = .refused(reason: reason)
        case (408, _), (429, _), (500...599, _):
            self = .retry(reason: reason, retryAfter: answer.retryAfter)
        default:
            let answered = code.isEmpty ? "\(reason), not a key server's answer" + (json == nil ? " (no JSON)" : " (no code)") : "\(reason), a code the key server's API does not define"
            self = .misdirected(reason: answered + ((300...399).contains(answer.status) ? "; a redirect is not followed" : ""), setting: "publish-url")
        }
    }

    /// go-multierror's "N errors occurred:\n\t* key 3 cannot be imported: …" as one line.
    static func dropped(_ message: String) -> String {
        let items = message.split(separator: "\n").map { $0.trimmingWhitespace() }.filter { $0.hasPrefix("* ") }.map { String($0.dropFirst(2)) }
        return items.isEmpty ? oneLine(message) : "\(items.count) key(s): " + items.joined(separator: "; ")
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }.joined(separator: " ")
    }
}
