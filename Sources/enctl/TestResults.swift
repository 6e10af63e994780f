import ArgumentParser
import ENAPI
import ENBus
import ENCore
import ENDiagnosis
import FoundationEssentials

/// `enctl test-result`: positive tests and their verification.
struct TestResultCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-result",
        abstract: "Record, list and verify positive test results.",
        subcommands: [Add.self, List.self, Verify.self])

    static let issuersDirectory = "/etc/enagent/trusted-issuers"

    /// The trusted issuers: a directory of JWKS files with "iss", and an optional key set for any issuer.
    static func verifier(directory: String, issuerKeys: String?) throws -> HealthCardVerifier {
        do {
            var verifier = HealthCardVerifier(issuers: try HealthCardVerifier.issuers(inDirectory: directory))
            if let issuerKeys {
                verifier.anyIssuerKeys = try JSONWebKey.keySet(Data(try InputFile.text(issuerKeys, what: "a JSON Web Key Set").utf8))
            }
            return verifier
        } catch let error as HealthCardError {
            throw CommandError("\(error)")
        }
    }

    static func verifiedCard(_ file: String, verifier: HealthCardVerifier) throws -> HealthCard {
        let data = try InputFile.read(file, limit: 1 << 20) { "\($0) bytes, more than the 1 MiB a health card may have" }
        do {
            return try verifier.verify(String(decoding: data, as: UTF8.self), now: Int64(Date().timeIntervalSince1970))
        } catch {
            throw CommandError("\(file): \(error)")
        }
    }

    static func printCard(_ card: HealthCard) {
        printColumns([["Issuer", card.issuer], ["Name", card.patientName ?? "-"], ["Born", card.birthDate ?? "-"],
                      ["Issued", utcTime(card.notBefore)]]
                     + card.entries.map { [$0.kind.prefix(1).uppercased() + $0.kind.dropFirst(), "\($0.date ?? "")  \($0.what)\($0.performer.map { "  (\($0))" } ?? "")"] })
    }

    /// The first day a SARS-CoV-2 test can have been taken.
    static let firstTestDay = "2020-01-01"

    /// A YYYY-MM-DD test day as the unix seconds of its UTC midnight: from firstTestDay to
    /// tomorrow (a test taken today east of UTC may be dated tomorrow's UTC day already).
    static func day(_ text: String) throws -> Int64 {
        guard let date = try? Date(text + "T00:00:00Z", strategy: .iso8601) else { throw ValidationError("expected a date such as 2026-11-19, not \(text)") }
        let day = Int64(date.timeIntervalSince1970), tomorrow = Int64(Date().timeIntervalSince1970) + UTCDay.seconds
        let first = Int64(try! Date(firstTestDay + "T00:00:00Z", strategy: .iso8601).timeIntervalSince1970)
        guard day >= first, day <= tomorrow else {
            throw ValidationError("\(text) is no day a test was taken: expected one from \(firstTestDay) to today, \(utcDay(tomorrow - UTCDay.seconds))")
        }
        return day
    }
}

extension TestResultCommand {
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a SMART Health Card and show what it says, without recording anything.",
            discussion: """
                FILE is a .smart-health-card file, a bare JWS or the shc:/ text of its QR code. The \
                card must be ES256-signed by a key of a trusted issuer: one JWKS file per issuer in \
                --issuers-dir, named *.json (other files are ignored; no directory, no issuer), \
                each with an "iss" member naming the issuer; --issuer-keys names one \
                key set directly, trusted whatever the issuer (to try a card before configuring \
                its issuer). No network is used. Exit status 1 when the card does not verify.
                """)

        @Argument(help: ArgumentHelp("The card.", valueName: "file"), transform: ArgumentValue.inputFile)
        var file: String

        @Option(help: ArgumentHelp("A JWKS file trusted for this card's issuer.", valueName: "jwks.json"), transform: ArgumentValue.inputFile)
        var issuerKeys: String?

        @Option(help: ArgumentHelp("The trusted issuers: one JWKS file with \"iss\" per issuer.", valueName: "dir"), transform: ArgumentValue.inputDirectory)
        var issuersDir = TestResultCommand.issuersDirectory

        @OptionGroup var output: JSONOutput

        func run() throws {
            let card = try TestResultCommand.verifiedCard(file, verifier: try TestResultCommand.verifier(directory: issuersDir, issuerKeys: issuerKeys))
            if output.json { return try printJSON(card) }
            print("The card verifies.")
            TestResultCommand.printCard(card)
        }
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Record a positive test, verified by a SMART Health Card or a verification code.",
            discussion: """
                With --card, the card is verified as 'enctl test-result verify' does and shown; \
                it must hold a final, positive result of a SARS-CoV-2 antigen or nucleic-acid test \
                (LOINC test codes and SNOMED CT or LOINC result codes of the SMART Health Cards \
                vaccination-and-testing guide): a vaccination card, an antibody test or a \
                negative or inconclusive result is refused, naming what the card holds. enctl \
                asks whether to record it (--yes answers). With --code, enctl trades the \
                code from your health authority for a token at the verification server of \
                key-server.conf; the token later certifies the keys 'enctl share' uploads. Needs \
                root or the group enagent.
                """)

        @Option(help: ArgumentHelp("The day the test was administered (default: from the card or the server).", valueName: "YYYY-MM-DD"),
                transform: TestResultCommand.day)
        var date: Int64?

        @Option(help: ArgumentHelp("A SMART Health Card proving the result.", valueName: "file"), transform: ArgumentValue.inputFile)
        var card: String?

        @Option(help: ArgumentHelp("A verification code from the health authority.", valueName: "code"), transform: ArgumentValue.text)
        var code: String?

        @Option(help: ArgumentHelp("The trusted issuers: one JWKS file with \"iss\" per issuer.", valueName: "dir"), transform: ArgumentValue.inputDirectory)
        var issuersDir = TestResultCommand.issuersDirectory

        @OptionGroup var server: ServerConfigurationOption

        @Flag(help: "Record without asking.")
        var yes = false

        func validate() throws {
            guard (card == nil) != (code == nil) else { throw ValidationError("Give exactly one of --card and --code.") }
            if let code { try VerificationServer.checkCode(code, option: "--code") }
        }

        func run() throws {
            let client = try DaemonClient()
            let (testDate, method, detail, token): (Int64?, String, String, String)
            if let card {
                let verified = try TestResultCommand.verifiedCard(card, verifier: try TestResultCommand.verifier(directory: issuersDir, issuerKeys: nil))
                TestResultCommand.printCard(verified)
                let positiveOn: String?
                switch SARSCoV2Finding(verified) {
                case .positive(let date): positiveOn = date
                case .notPositive(let reason):
                    throw CommandError("\(card): the card does not prove a positive SARS-CoV-2 test: it holds \(reason); nothing recorded")
                }
                guard let day = try date ?? positiveOn.map({ try TestResultCommand.day(String($0.prefix(10))) })
                else { throw CommandError("the card gives no date: say when the test was administered with --date") }
                guard yes || Confirmation.ask("Record this as your positive test of \(utcDay(day))?") else { throw CommandError("nothing recorded") }
                (testDate, method, detail, token) = (day, VerificationMethod.smartHealthCard.rawValue, "card issued by \(verified.issuer)", "")
            } else {
                let verification = try VerificationServer(try server.load()).verify(code: code!)
                let day = date ?? verification.testDate
                if day == nil {
                    StandardStream.error.write("enctl: the health authority gave no test date: the result is recorded, and your keys are shared, "
                                               + "without one (give --date YYYY-MM-DD if you know when you were tested)\n")
                }
                if verification.testType == nil {
                    StandardStream.error.write("enctl: the health authority did not say what kind of test it was: the result is recorded as a test of unknown type\n")
                }
                let kind = verification.testType.map { "\($0) test" } ?? "test of unknown type"
                (testDate, method, detail, token) = (day, VerificationMethod.verificationCode.rawValue, "\(kind), verified by the health authority", verification.token)
            }
            // test_date 0: unknown (the API's "none" for times). day() took only days after 1970.
            let id = try client.call(DaemonClient.API.Methods.addTestResult,
                                     NewTestResult(testDate: UInt64(clamping: testDate ?? 0), method: method, detail: detail, verificationToken: token)).id
            print("Recorded test result \(id) \(testDate.map { "of \(utcDay($0))" } ?? "without a test date"). Share your keys with 'enctl share'.")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the recorded test results.")

        @OptionGroup var output: JSONOutput

        func run() throws {
            let results = try StoredTestResult.all(try DaemonClient())
            if output.json { return try printJSON(results) }
            guard !results.isEmpty else { return print("No test results.") }
            printColumns([["ID", "TEST DAY", "VERIFIED BY", "SHARED"]] + results.map {
                [$0.id, $0.testDate.map(utcDay) ?? "unknown", $0.method, $0.sharing]
            })
        }
    }
}

/// A test result as the daemon keeps it.
struct StoredTestResult: Encodable {
    /// testDate nil: the health authority gave none.
    var id: String, testDate: Int64?, method: String, detail: String, recordedAt: Int64, sharedAt: Int64, uploadPending: Bool
    var uploadFailure: String
    var token: String, revisionToken: String, sharedKeys: [TemporaryExposureKeyData]

    private enum CodingKeys: String, CodingKey { case id, testDate, method, detail, recordedAt, sharedAt, uploadPending, uploadFailure }

    var verifiedByCode: Bool { method == VerificationMethod.verificationCode.rawValue }

    /// What became of its upload, for a person.
    var sharing: String {
        if uploadPending { return verifiedByCode && token.isEmpty ? "pending: needs a new code ('enctl share --code')" : "pending, will retry" }
        if !uploadFailure.isEmpty { return "refused for good: \(uploadFailure)" }
        return sharedAt > 0 ? utcTime(sharedAt) : "no"
    }

    static func all(_ client: DaemonClient) throws -> [StoredTestResult] {
        try client.call(DaemonClient.API.Methods.getTestResults).results.map {
            StoredTestResult(id: $0.id, testDate: $0.testDate == 0 ? nil : Int64($0.testDate), method: $0.method, detail: $0.detail, recordedAt: Int64($0.recordedAt),
                             sharedAt: Int64($0.sharedAt), uploadPending: $0.uploadPending, uploadFailure: $0.uploadFailure, token: $0.verificationToken,
                             revisionToken: $0.revisionToken, sharedKeys: $0.sharedKeys.compactMap { Bytes16(bytes: $0) })
        }
    }
}
