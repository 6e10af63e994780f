import ENAgent
import ENCore

/// enagentd's configuration file (any bytes, decoded as UTF-8), and the `key = value` reader it
/// shares with enctl's key server configuration.
public func fuzzAgentConfiguration(_ input: UnsafeRawBufferPointer) {
    let text = String(decoding: input, as: UTF8.self)
    _ = try? KeyValueFile(text: text, path: "/etc/enagent/enagent.conf")
    _ = try? AgentConfiguration(text: text, path: "/etc/enagent/enagent.conf")
}

/// The configuration argument of DetectExposures, decoded as enagentd decodes it (D-Bus strings
/// are UTF-8), then applied to a few fixed matches as a detection run and GetExposureInfo apply it.
public func fuzzExposureConfiguration(_ input: UnsafeRawBufferPointer) {
    guard let configuration = try? ExposureDetection.configuration(String(decoding: input, as: UTF8.self)) else { return }
    let matches = ExposureConfigurationFixtures.matches
    let windows = matches.flatMap { ExposureWindowing.windows(for: $0, configuration: configuration.v2) }
    _ = configuration.v2.dailySummaries(of: windows, now: ExposureConfigurationFixtures.now)
    _ = configuration.v1?.summary(of: matches, now: ExposureConfigurationFixtures.now)
    _ = configuration.v1?.exposureInfos(of: matches.map(V1Match.init), now: ExposureConfigurationFixtures.now)
}

enum ExposureConfigurationFixtures {
    static let day: Int64 = 20_000 * 86_400
    static let now = day + 3 * 86_400 + 600

    /// Keys of every report type and several days since onset, each seen in scans near and far,
    /// with and without an RSSI.
    static let matches: [KeyMatch] = ReportType.allCases.enumerated().map { index, reportType in
        let key = TemporaryExposureKey(keyData: Bytes16(high: UInt64(index), low: 1),
                                       rollingStartIntervalNumber: ENIntervalNumber(rawValue: UInt32(day / 600)),
                                       rollingPeriod: 144, transmissionRiskLevel: index % 9)
        let metadata = Metadata(majorVersion: 1, minorVersion: UInt8(index % 2), transmitPower: -8, calibrationConfidence: index % 2 == 1 ? 2 : nil)
        let sightings = [0, 10, 200, 500, 1_000, 1_900, 4_000].enumerated().map { step, offset in
            MatchedSighting(time: day + Int64(index) * 3_600 + Int64(offset), rssi: step % 3 == 0 ? nil : Int8(-40 - step * 9),
                            metadata: metadata, attenuation: step % 3 == 0 ? nil : 30 + step * 9)
        }
        return KeyMatch(key: DiagnosisKey(key: key, reportType: reportType, daysSinceOnsetOfSymptoms: index * 3 - 7), sightings: sightings)
    }
}
