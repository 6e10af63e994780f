import ENCore
import Foundation
import Testing

/// The Corona-Warn-App's shared risk-calculation cases (Tests/ENCoreTests/Fixtures/corona-warn-app,
/// CWA's file unchanged): its parameters and each case's windows and expected aggregate.
public enum CoronaWarnAppCases {
    public static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ENCoreTests/Fixtures/corona-warn-app/exposure-windows-risk-calculation.json").path

    private static let document: JSONValue = {
        guard let data = FileManager.default.contents(atPath: path), let value = JSONValue(parsing: data) else { fatalError("\(path) is unreadable") }
        return value
    }()

    /// `defaultRiskCalculationConfiguration`, as the JSON a health authority would give.
    public static let configuration: Data = {
        guard let value = document["defaultRiskCalculationConfiguration"], let data = try? value.encoded() else { fatalError("\(path) has no parameters") }
        return data
    }()

    public static let all: [Case] = document["testCases"]?.array?.map(Case.init) ?? []

    public struct Case: Sendable, CustomTestStringConvertible {
        public let description: String
        /// The case's object as it is: its windows are under `exposureWindows`.
        public let json: Data
        public let expected: RiskAggregate

        init(_ value: JSONValue) {
            description = value["description"]?.string ?? "?"
            json = (try? value.encoded()) ?? Data()
            func number(_ key: String) -> Int? { value["exp" + key]?.integer.map(Int.init) }
            expected = RiskAggregate(
                totalRiskLevel: number("TotalRiskLevel") ?? -1,
                ageOfMostRecentDateWithLowRisk: number("AgeOfMostRecentDateWithLowRisk"),
                ageOfMostRecentDateWithHighRisk: number("AgeOfMostRecentDateWithHighRisk"),
                numberOfDaysWithLowRisk: number("NumberOfDaysWithLowRisk") ?? -1,
                numberOfDaysWithHighRisk: number("NumberOfDaysWithHighRisk") ?? -1,
                totalMinimumDistinctEncountersWithLowRisk: number("TotalMinimumDistinctEncountersWithLowRisk") ?? -1,
                totalMinimumDistinctEncountersWithHighRisk: number("TotalMinimumDistinctEncountersWithHighRisk") ?? -1)
        }

        public var testDescription: String { description }
    }
}
