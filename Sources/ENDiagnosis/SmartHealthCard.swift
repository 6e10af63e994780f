import ENCore
import ENArchive
import FoundationEssentials

/// What a verified SMART Health Card says, for the person to check.
public struct HealthCard: Sendable, Equatable, Codable {
    public var issuer: String
    public var notBefore: Int64
    public var expires: Int64?
    public var patientName: String?
    public var birthDate: String?
    public var entries: [Entry]
    /// The bundle's Observations as codes, for deciding what the card proves (`sarsCoV2Finding`).
    public var laboratoryResults: [LaboratoryResult] = []

    /// One result or immunization of the card's FHIR bundle.
    public struct Entry: Sendable, Equatable, Codable {
        public var kind: String
        public var what: String
        public var date: String?
        public var performer: String?
    }

    /// A coded value: `system` such as http://loinc.org, `code` such as 94500-6.
    public struct Code: Sendable, Equatable, Codable, CustomStringConvertible {
        public var system: String
        public var code: String
        public var display: String?

        public init(system: String, code: String, display: String? = nil) {
            (self.system, self.code, self.display) = (system, code, display)
        }

        public var description: String {
            let name = ["http://loinc.org": "LOINC", "http://snomed.info/sct": "SNOMED CT"][system] ?? system
            return "\(name) \(code)" + (display.map { " \"\($0)\"" } ?? "")
        }
    }

    /// One Observation: which test, its result, its status and its date.
    public struct LaboratoryResult: Sendable, Equatable, Codable {
        public var test: Code?
        public var result: Code?
        public var status: String?
        public var date: String?

        public init(test: Code?, result: Code?, status: String?, date: String?) {
            (self.test, self.result, self.status, self.date) = (test, result, status, date)
        }
    }
}

/// Verifies SMART Health Cards (protocol.md §5) against issuer keys configured locally: no
/// network is needed, and an issuer nobody configured is refused.
public struct HealthCardVerifier: Sendable {
    /// Trusted keys by issuer (`iss`).
    public var issuers: [String: [JSONWebKey]]
    /// Keys trusted whatever the card's issuer (`enctl test-result verify --issuer-keys`).
    public var anyIssuerKeys: [JSONWebKey] = []
    /// The inflated payload may not exceed this.
    public static let maximumPayloadSize = 1 << 20
    /// Allowed clock difference for `nbf`.
    public static let clockSkewSeconds: Int64 = 300

    public init(issuers: [String: [JSONWebKey]], anyIssuerKeys: [JSONWebKey] = []) {
        self.issuers = issuers
        self.anyIssuerKeys = anyIssuerKeys
    }

    /// The trusted issuers of a directory: every `*.json` is a JWKS with an added `"iss"`. No
    /// directory is no issuers; one that cannot be read is an error, not fewer issuers.
    public static func issuers(inDirectory path: String) throws(HealthCardError) -> [String: [JSONWebKey]] {
        guard FileManager.default.fileExists(atPath: path) else { return [:] }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: path) } catch {
            throw .badIssuerKeys("cannot list \(path): \(error)")
        }
        var issuers = [String: [JSONWebKey]]()
        for name in names.sorted() where name.hasSuffix(".json") {
            guard let data = FileManager.default.contents(atPath: path + "/" + name) else { throw .badIssuerKeys("cannot read \(path)/\(name)") }
            guard let issuer = JSONValue(parsing: data)?["iss"]?.string else {
                throw .badIssuerKeys("\(path)/\(name) needs an \"iss\" member naming the issuer")
            }
            issuers[issuer, default: []] += try JSONWebKey.keySet(data)
        }
        return issuers
    }

    /// The compact JWS of a `.smart-health-card` file, a bare JWS, or `shc:/` numeric QR text.
    public static func jws(from input: String) throws(HealthCardError) -> String {
        let text = input.trimmingWhitespace()
        if text.hasPrefix("{") {
            guard let first = JSONValue(parsing: Data(text.utf8))?["verifiableCredential"]?.array?.first?.string else {
                throw .unreadable("a JSON file without a \"verifiableCredential\" list")
            }
            return first
        }
        if text.lowercased().hasPrefix("shc:/") {
            let digits = Array(text.dropFirst(5))
            guard !digits.contains("/") else { throw .unreadable("a QR code split into several chunks; scan them into one card file") }
            guard digits.count % 2 == 0, digits.allSatisfy(\.isNumber) else { throw .unreadable("shc:/ must be followed by pairs of digits") }
            var characters = ""
            for index in stride(from: 0, to: digits.count, by: 2) {
                guard let value = Int(String(digits[index...index + 1])), value + 45 <= 127 else { throw .unreadable("a digit pair out of range") }
                characters.append(Character(Unicode.Scalar(UInt8(value + 45))))
            }
            return characters
        }
        return text
    }

    /// Verifies `input` (see `jws(from:)`) at `now` and returns what it says.
    public func verify(_ input: String, now: Int64) throws(HealthCardError) -> HealthCard {
        let jws = try Self.jws(from: input)
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .unreadable("a compact JWS has three parts separated by dots") }
        guard let headerBytes = Base64URL.decode(parts[0]),
              let header = JSONValue(parsing: Data(headerBytes)), case .object = header else {
            throw .badHeader("not base64url JSON")
        }
        guard let algorithm = header["alg"]?.string else { throw .badHeader("no \"alg\"") }
        guard algorithm == "ES256" else { throw .unsupportedAlgorithm(algorithm) }
        guard let kid = header["kid"]?.string else { throw .badHeader("no \"kid\"") }
        guard header["zip"]?.string == "DEF" else { throw .badHeader("the payload must be compressed (\"zip\": \"DEF\")") }
        guard let compressed = Base64URL.decode(parts[1]) else { throw .badPayload("not base64url") }
        let payloadBytes: [UInt8]
        do { payloadBytes = try RawDeflate.inflate(compressed, limit: Self.maximumPayloadSize) } catch {
            throw .badPayload(error == .corrupt ? "not raw DEFLATE" : "larger than \(Self.maximumPayloadSize >> 10) KiB inflated")
        }
        guard let payload = JSONValue(parsing: Data(payloadBytes)), case .object = payload else {
            throw .badPayload("not a JSON object")
        }
        guard let issuer = payload["iss"]?.string else { throw .badPayload("no \"iss\"") }
        let candidates = anyIssuerKeys + (issuers[issuer] ?? [])
        guard !candidates.isEmpty else { throw .unknownIssuer(issuer) }
        guard let key = candidates.first(where: { $0.kid == kid }) else { throw .unknownKey(issuer: issuer, kid: kid) }
        guard let signature = Base64URL.decode(parts[2]) else { throw .badSignature }
        let signingInput = Array("\(parts[0]).\(parts[1])".utf8)
        guard signingInput.withUnsafeBytes({ key.publicKey.isValidRawSignature(signature, for: $0) }) else { throw .badSignature }
        guard let nbf = payload["nbf"]?.number else { throw .badPayload("no \"nbf\"") }
        // Seconds, possibly with a fraction; a number past Int64 (1e300) would trap on conversion.
        guard let notBefore = Self.seconds(nbf) else { throw .badPayload("\"nbf\" is not a time in unix seconds") }
        guard notBefore <= now + Self.clockSkewSeconds else { throw .notYetValid(notBefore: notBefore) }
        var expires: Int64?
        if let exp = payload["exp"]?.number {
            guard let seconds = Self.seconds(exp) else { throw .badPayload("\"exp\" is not a time in unix seconds") }
            expires = seconds
        }
        if let expires, expires < now { throw .expired(expires: expires) }
        return Self.card(issuer: issuer, notBefore: notBefore, expires: expires, payload: payload)
    }

    /// Whole unix seconds of a JSON number (a fraction dropped), or nil when it is no finite
    /// number within Int64.
    static func seconds(_ number: Double) -> Int64? {
        Int64(exactly: number.rounded(.towardZero))
    }

    /// The person's name and the bundle's immunizations and observations.
    static func card(issuer: String, notBefore: Int64, expires: Int64?, payload: JSONValue) -> HealthCard {
        let resources = (payload["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?.array ?? []).compactMap { $0["resource"] }
        var card = HealthCard(issuer: issuer, notBefore: notBefore, expires: expires, entries: [])
        for resource in resources {
            let performer = resource["performer"]?.array?.first?["actor"]?["display"]?.string
            switch resource["resourceType"]?.string {
            case "Patient":
                let name = resource["name"]?.array?.first
                let given = name?["given"]?.array.map { $0.compactMap(\.string) } ?? []
                card.patientName = (given + [name?["family"]?.string].compactMap { $0 }).joined(separator: " ")
                card.birthDate = resource["birthDate"]?.string
            case "Immunization":
                card.entries.append(HealthCard.Entry(kind: "immunization", what: "vaccine " + coding(resource["vaccineCode"]),
                                                     date: resource["occurrenceDateTime"]?.string, performer: performer))
            case "Observation":
                card.laboratoryResults.append(HealthCard.LaboratoryResult(
                    test: code(resource["code"]), result: code(resource["valueCodeableConcept"]), status: resource["status"]?.string,
                    date: resource["effectiveDateTime"]?.string ?? resource["effectivePeriod"]?["start"]?.string))
                let value = resource["valueCodeableConcept"].map(coding) ?? (resource["valueString"]?.string ?? "")
                card.entries.append(HealthCard.Entry(kind: "observation", what: coding(resource["code"]) + (value.isEmpty ? "" : ": " + value),
                                                     date: resource["effectiveDateTime"]?.string, performer: performer))
            default: continue
            }
        }
        return card
    }

    /// A CodeableConcept's first coding, as JSON.
    static func firstCoding(_ concept: JSONValue?) -> JSONValue? {
        concept?["coding"]?.array?.first
    }

    /// A CodeableConcept's first coding, when it has a system and a code.
    static func code(_ concept: JSONValue?) -> HealthCard.Code? {
        guard let coding = firstCoding(concept), let system = coding["system"]?.string, let code = coding["code"]?.string else { return nil }
        return HealthCard.Code(system: system, code: code, display: coding["display"]?.string)
    }

    /// A CodeableConcept as "display (system code)".
    static func coding(_ concept: JSONValue?) -> String {
        guard let coding = firstCoding(concept) else { return "" }
        let code = coding["code"]?.string ?? ""
        return coding["display"]?.string.map { "\($0) (\(code))" } ?? code
    }
}
