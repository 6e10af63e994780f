@testable import ENAPI
import ENBus
import ENCore
import Foundation
import TestSupport
import Testing

/// The contract's records convert both ways, name what does not match, and are what the interface
/// document under dbus/ says.
@Suite struct ContractTests {
    static let key = TemporaryExposureKey(keyData: Bytes16(bytes: Array(0..<16))!, rollingStartIntervalNumber: ENIntervalNumber(2_650_000),
                                          rollingPeriod: 144, transmissionRiskLevel: 3)
    static let scan = ScanInstance(minAttenuation: 40, typicalAttenuation: nil, secondsSinceLastScan: 180)

    /// One of every record the API sends, with values that differ from any default.
    static let samples: [any DBusRecord] = [
        SetEnabledArguments(enabled: true), PauseArguments(seconds: 7_200), KeyHistoryRequest(confirmed: true), KeyHistory(keys: [key]),
        DetectionRequest(keyFiles: [FileDescriptor(5)], configuration: "{}"),
        DetectionReply(summary: DetectionSummary(keyFilesProcessed: 3, keyFilesSkipped: 1, keysChecked: 500_000, matchedKeys: 2, newExposureWindows: 4)),
        ExposureWindows(windows: [ExposureWindowRecord(ExposureWindow(date: 1_700_000_000 - 1_700_000_000 % 86_400, reportType: .confirmedTest,
                                                                      infectiousness: .high, calibrationConfidence: 2, scanInstances: [scan],
                                                                      diagnosisKey: DiagnosisKey(key: key)))]),
        ConfigurationArgument(configuration: "{\"x\":1}"),
        DailySummaries(summaries: [DailySummary(date: 1_699_920_000, maximumScore: 900, scoreSum: 1_800.5, weightedDurationSum: 2_700)]),
        ExposureInfos(exposures: [ExposureInfo(date: 1_699_920_000, durationMinutes: 15, attenuationValue: nil, attenuationDurationsMinutes: [5, 10, 0],
                                               transmissionRiskLevel: 4, totalRiskScore: 16, daysSinceExposure: 2)]),
        NewTestResult(testDate: 1_699_920_000, method: "smart-health-card", detail: "card", verificationToken: "t"),
        TestResultID(id: "abc"),
        TestResults(results: [TestResultRecord(id: "abc", testDate: 1_699_920_000, method: "code", detail: "d", recordedAt: 1_700_000_000,
                                               sharedAt: 1_700_000_100, uploadPending: true, verificationToken: "tok", uploadFailure: "HTTP 400",
                                               revisionToken: "rev", sharedKeys: [Array(0..<16)])]),
        QueuedUpload(testResultId: "abc", url: "https://keys.example/v1/publish", body: "{}", keys: [Array(0..<16), Array(16..<32)]),
        PendingUploadList(uploads: [PendingUploadRecord(testResultId: "abc", url: "u", body: "b", attempts: 2, lastError: "HTTP 503", nextAttemptAt: 99)]),
        UploadOutcome(testResultId: "abc", outcome: .retry, reason: "HTTP 429", retryAfter: 60), ExposureDetectedArguments(latestExposureDay: 1_699_920_000), NoArguments(),
        HealthStatus(verdict: RiskVerdict(total: .increased, lowRiskDays: 2, increasedRiskDays: 1, latestLowRiskDay: 1_699_833_600,
                                          latestIncreasedRiskDay: 1_699_920_000, lowRiskEncounters: 3, increasedRiskEncounters: 1),
                     model: "corona-warn-app", assessedAt: 1_699_999_999, reminders: ["recent-exposure", "upload-refused"]),
        SightingsPerHourRequest(since: 1_699_920_000), SightingsPerHour(hours: [SightingHourRecord(hourStart: 1_699_920_000, sightings: 42, distinctIdentifiers: 7)]),
        DetectionSessionRequest(configuration: "{}", maxKeys: 1_000_000), DetectionSessionHandle(session: "4f1c"),
        KeyFileBatch(session: "4f1c", keyFiles: [FileDescriptor(5), FileDescriptor(6)]),
        DetectionProgressArguments(session: "4f1c", progress: DetectionSummary(keyFilesProcessed: 16, keysChecked: 8_000, matchedKeys: 1)),
    ]

    @Test func everyRecordRoundTripsWithTheSignatureItDeclares() throws {
        for sample in Self.samples {
            #expect(sample.dbusValue.signature == type(of: sample).dbusSignature, "\(type(of: sample))")
            #expect(sample.values.map(\.signature) == type(of: sample).members.map(\.signature), "\(type(of: sample))")
            let decoded = try type(of: sample).init(values: sample.values)
            #expect(decoded.dbusValue == sample.dbusValue, "\(type(of: sample))")
        }
    }

    @Test func aMismatchNamesTheMemberInsteadOfAnsweringZero() throws {
        var window = ExposureWindows(windows: []).values
        window = [.array(elementSignature: "(uuuua(iiu))", [.structure([.uint32(1), .uint32(1), .uint32(1), .uint32(1), .array(elementSignature: "(iiu)", [])])])]
        let wrongDate = expectError(ContractMismatch.self) { try ExposureNotificationAPI.Methods.getExposureWindows.output(window) }
        #expect(wrongDate?.description == "the reply to GetExposureWindows: expected (a(tuuua(iiu))), got (a(uuuua(iiu)))")

        let shortKey = DBusValue.structure([.bytes(Array(repeating: 1, count: 15)), .uint32(1), .uint32(144), .uint32(0)])
        let short = expectError(ContractMismatch.self) { try ExposureNotificationAPI.Methods.getTemporaryExposureKeyHistory.output([.array(elementSignature: "(ayuuu)", [shortKey])]) }
        #expect(short?.description == "the reply to GetTemporaryExposureKeyHistory: keys: element 0: key_data: expected 16 bytes, got 15")

        let missing = expectError(ContractMismatch.self) {
            try DetectionSummary(dbusValue: .properties(["KeyFilesProcessed": .uint32(1)]))
        }
        #expect(missing?.description == "KeyFilesSkipped is missing")
    }

    /// A record of this test's own: its one field list is all it declares of the bus.
    private struct Reading: DBusRecord, Equatable {
        static let fields: [DBusField<Self>] = [
            DBusField("count", \.count), DBusField("label", \.label), DBusField("level", \.level, as: .integer(UInt32.self)),
        ]
        var count: UInt64 = 0
        var label = ""
        var level: Int8 = 0
    }

    @Test func aRecordsMembersSignatureAndValuesFollowFromItsFieldList() throws {
        let reading = Reading(count: 7, label: "x", level: 3)
        #expect(Reading.members == [DBusArgument("count", "t"), DBusArgument("label", "s"), DBusArgument("level", "u")])
        #expect(Reading.dbusSignature == "(tsu)")
        #expect(reading.values == [.uint64(7), .string("x"), .uint32(3)])
        #expect(try Reading(values: reading.values) == reading)
        #expect(try Reading(dbusValue: .variant(reading.dbusValue)) == reading)

        #expect(throws: ContractMismatch("level: 300 is out of range")) { try Reading(values: [.uint64(7), .string("x"), .uint32(300)]) }
        #expect(throws: ContractMismatch("expected (tsu), got (ts)")) { try Reading(values: [.uint64(7), .string("x")]) }
        #expect(throws: ContractMismatch("expected (tsu), got (tsi)")) { try Reading(values: [.uint64(7), .string("x"), .int32(3)]) }
    }

    @Test func aValueTheSwiftTypeCannotHoldNamesItsMember() {
        let summary = DBusValue.structure([.uint64(.max), .double(1), .double(1), .double(1)])
        let reply = [DBusValue.array(elementSignature: DailySummary.dbusSignature, [summary])]
        #expect(throws: ContractMismatch("the reply to GetDailySummaries: summaries: element 0: date: \(UInt64.max) is out of range")) {
            try ExposureNotificationAPI.Methods.getDailySummaries.output(reply)
        }
    }

    @Test func agentPropertiesNameAMissingOrMistypedProperty() throws {
        var properties = [String: DBusValue]()
        for declaration in AgentProperties.declarations {
            properties[declaration.name] = declaration.signature == "as" ? .strings(["detection-overdue"])
                : try #require(Self.sampleValue(declaration.signature), "\(declaration.signature)")
        }
        let decoded = try AgentProperties(properties)
        #expect(decoded.reminders == ["detection-overdue"] && decoded.enabled && decoded.sightingsStored == 7)
        #expect(decoded.adapterRssiCorrections == [Self.adapterCorrection])
        properties["SightingsStored"] = .uint32(7)
        #expect(throws: ContractMismatch("the property SightingsStored: expected t, got u")) { try AgentProperties(properties) }
        properties["SightingsStored"] = nil
        #expect(throws: ContractMismatch("the property SightingsStored is missing")) { try AgentProperties(properties) }
    }

    /// A property is its field's declaration: a record of two declares both, in its order, with the
    /// fields' types, reads them from a GetAll answer and encodes them by their Swift names; a field
    /// not declared a property is named as such, not read as a default.
    @Test func aPropertyIsTheDeclarationOfItsField() throws {
        struct Sample: BusProperties, Encodable {
            @BusProperty("Ready") var ready = false
            @BusProperty("Names") var names: [String] = []
        }
        #expect(Sample.declarations == [DBusArgument("Ready", "b"), DBusArgument("Names", "as")])
        let sample = try Sample(["Names": .strings(["a"]), "Ready": .boolean(true), "Other": .uint32(1)])
        #expect(sample.ready && sample.names == ["a"] && sample.$names.name == "Names")
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(sample), as: UTF8.self) == #"{"names":["a"],"ready":true}"#)
        struct Undeclared: BusProperties {
            @BusProperty("Ready") var ready = false
            var count = 0
        }
        #expect(Undeclared.declarations.map(\.name) == ["Ready"])
        #expect(throws: ContractMismatch("a field of a GetAll record that is not declared @BusProperty")) {
            try Undeclared(["Ready": .boolean(true), "count": .int32(1)])
        }
    }

    static let adapterCorrection = AdapterRssiCorrection(address: "00:1A:7D:DA:71:13", name: "hci1", rssiCorrection: -4, configured: true)

    static func sampleValue(_ signature: String) -> DBusValue? {
        ["b": .boolean(true), "s": .string("active"), "t": .uint64(7), "i": .int32(-3),
         [AdapterRssiCorrection].dbusSignature: [adapterCorrection].dbusValue][signature]
    }

    /// The contract, written out as introspection writes an interface, is the one in the document
    /// dbus/ holds for clients and packagers (the daemon's own introspection is checked against it in
    /// ServiceTests).
    @Test func theInterfaceDocumentIsTheContract() throws {
        let contract = DBusInterface(
            ExposureNotificationAPI.interface,
            methods: ExposureNotificationAPI.Methods.all.map { DBusMethod($0.name, in: $0.inArguments, out: $0.outArguments) { _ in [] } },
            properties: AgentProperties.declarations.map { DBusProperty($0.name, $0.signature) { .boolean(false) } },
            signals: ExposureNotificationAPI.Signals.declarations)
        let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../dbus/org.enagent.ExposureNotification1.xml")
        let text = try String(contentsOf: document, encoding: .utf8)
        #expect(text.contains(ExportedObject.xml(contract)), "regenerate it with scripts/interface-xml.sh after changing the contract")
        #expect(Set(ExposureNotificationAPI.Methods.all.map(\.name)).count == ExposureNotificationAPI.Methods.all.count)
    }

    /// The D-Bus document's Properties section declares the contract's properties, in its order,
    /// each with the type its signature spells (the section's `    TYPE Name` lines).
    @Test func theDocumentDeclaresEachPropertyWithItsType() throws {
        let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../dbus/org.enagent.ExposureNotification1.md")
        let text = try String(contentsOf: document, encoding: .utf8)
        let section = text.split(separator: "\n## ").first { $0.hasPrefix("Properties\n") } ?? ""
        let declared = section.split(separator: "\n").filter { $0.hasPrefix("    ") }.map { $0.trimmingWhitespace() }
        #expect(declared == AgentProperties.declarations.map { "\(Self.spelled($0.signature)) \($0.name)" })
    }

    /// A signature as the document spells it: `a(ssib)` is `array{(string, string, int32, boolean)}`.
    static func spelled(_ signature: String) -> String {
        var rest = Substring(signature)
        func next() -> String {
            let code = rest.removeFirst()
            switch code {
            case "a": return "array{\(next())}"
            case "(":
                var members = [String]()
                while rest.first != ")" { members.append(next()) }
                rest.removeFirst()
                return "(\(members.joined(separator: ", ")))"
            default:
                return ["b": "boolean", "s": "string", "t": "uint64", "u": "uint32", "i": "int32", "x": "int64", "y": "byte", "d": "double"][code] ?? String(code)
            }
        }
        return next()
    }

    @Test func failuresAreRecognisedByName() {
        for failure in ExposureNotificationAPI.Failure.allCases {
            #expect(ExposureNotificationAPI.Failure(failure.error("x")) == failure)
        }
        #expect(ExposureNotificationAPI.Failure(DBusError(name: "org.freedesktop.DBus.Error.AccessDenied", message: "")) == nil)
    }
}
