/// What a SMART Health Card proves about a SARS-CoV-2 infection. Only a positive result of a
/// test for the virus itself (antigen or nucleic acid, or culture), final, counts as a positive
/// test for sharing keys: an antibody test shows a past infection or a vaccination, and an
/// immunization is no test at all.
///
/// The codes are those of the SMART Health Cards vaccination-and-testing IG
/// (http://hl7.org/fhir/uv/shc-vaccination, value sets lab-qualitative-test-covid and
/// lab-qualitative-result, 2023.1), plus the LOINC answers that 2021 cards carry.
public enum SARSCoV2Finding: Equatable, Sendable {
    /// A positive result; `date` is the test's effective date as the card gives it.
    case positive(date: String?)
    /// No positive result; `reason` says what the card holds instead, for the person.
    case notPositive(reason: String)

    static let loinc = "http://loinc.org"
    static let snomed = "http://snomed.info/sct"

    /// Tests for the virus: the IG's antigen codes and its nucleic-acid and culture codes
    /// (not its two S-gene variant and sequencing codes, which report mutations).
    static let virusTests: Set<String> = [
        "94558-4", "95209-3", "96119-3", "97097-0",
        "94307-6", "94308-4", "94309-2", "94310-0", "94314-2", "94315-9", "94316-7", "94500-6", "94502-2", "94532-9", "94533-7",
        "94534-5", "94559-2", "94565-9", "94639-2", "94640-0", "94641-8", "94647-5", "94660-8", "94756-4", "94757-2", "94758-0",
        "94759-8", "94760-6", "94763-0", "94765-5", "94766-3", "94767-1", "94822-4", "94845-5", "95406-5", "95409-9", "95423-0",
        "95424-8", "95425-5", "95608-6", "95823-1", "95824-9", "96091-4", "96120-1", "96121-9", "96122-7", "96123-5", "96448-6",
        "96763-8", "96765-3", "96797-6", "96829-7", "96957-6", "96958-4", "96986-5", "97098-8", "98131-6", "98132-4", "98493-0",
        "98494-8",
    ]

    /// The IG's antibody and immune-response tests.
    static let antibodyTests: Set<String> = [
        "94507-1", "94508-9", "94547-7", "94562-6", "94563-4", "94564-2", "94761-4", "94762-2", "94768-9", "95125-1", "95411-5",
        "95416-4", "95542-7", "95825-6", "95970-0", "95971-8", "96603-6", "98069-8", "99596-9", "99597-7", "99772-6", "94661-6",
    ]

    enum Result {
        case positive, negative, inconclusive
    }

    /// Result codes by system and code. 840533007 (the organism SARS-CoV-2) is how a multiplex
    /// test (95423-0) says it found this virus; the influenza organisms say it found another.
    static let results: [String: [String: Result]] = [
        snomed: [
            "260373001": .positive, "10828004": .positive, "260408008": .positive, "840533007": .positive,
            "260415000": .negative, "260385009": .negative, "131194007": .negative, "407479009": .negative, "407480007": .negative,
            "419984006": .inconclusive, "42425007": .inconclusive, "82334004": .inconclusive, "415684004": .inconclusive,
            "720735008": .inconclusive, "455371000124106": .inconclusive, "125154007": .inconclusive, "11214006": .inconclusive,
        ],
        loinc: [
            "LA11882-0": .positive, "LA6576-8": .positive, "LA18996-1": .positive, "LA31065-8": .positive,
            "LA11883-8": .negative, "LA6577-6": .negative, "LA15256-3": .negative, "LA11919-0": .negative, "LA13543-6": .negative,
            "LA11885-3": .inconclusive, "LA9663-1": .inconclusive, "LA13548-5": .inconclusive, "LA4259-3": .inconclusive,
            "LA11884-6": .inconclusive, "LA31317-3": .inconclusive, "LA15291-0": .inconclusive, "LA15841-2": .inconclusive,
            "LA15255-5": .inconclusive,
        ],
    ]

    /// Observation statuses of a result the laboratory stands by.
    static let finalStatuses: Set<String> = ["final", "amended", "corrected"]

    /// The finding of `card`: positive when any result is; else why not, naming what it holds.
    public init(_ card: HealthCard) {
        var reasons = [String]()
        var positives = [String?]()
        for result in card.laboratoryResults {
            guard let test = result.test else {
                reasons.append("an observation without a test code")
                continue
            }
            guard test.system == Self.loinc, Self.virusTests.contains(test.code) else {
                reasons.append(test.system == Self.loinc && Self.antibodyTests.contains(test.code)
                    ? "an antibody test (\(test)), which shows a past infection or a vaccination, not a current infection"
                    : "\(test), which is not a SARS-CoV-2 antigen or nucleic-acid test")
                continue
            }
            guard let status = result.status, Self.finalStatuses.contains(status) else {
                reasons.append("a test (\(test)) whose result is \(result.status ?? "without a status"), not final")
                continue
            }
            guard let code = result.result, let outcome = Self.results[code.system]?[code.code] else {
                reasons.append("a test (\(test)) whose result \(result.result.map { "\($0)" } ?? "is not coded") is not one this agent knows")
                continue
            }
            switch outcome {
            case .positive: positives.append(result.date)
            case .negative: reasons.append("a negative test (\(test): \(code))")
            case .inconclusive: reasons.append("a test without a positive result (\(test): \(code))")
            }
        }
        if !positives.isEmpty {
            self = .positive(date: positives.compactMap { $0 }.max())
            return
        }
        let immunizations = card.entries.filter { $0.kind == "immunization" }.count
        if immunizations > 0 { reasons.append(immunizations == 1 ? "an immunization" : "\(immunizations) immunizations") }
        self = .notPositive(reason: reasons.isEmpty ? "nothing but the person's details" : reasons.joined(separator: "; "))
    }
}
