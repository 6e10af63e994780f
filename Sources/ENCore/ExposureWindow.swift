/// How infectious a key's owner was on the key's day, from days since onset of symptoms.
public enum Infectiousness: Int, Sendable, Codable, CaseIterable {
    case none = 0
    case standard = 1
    case high = 2
}

/// Sightings of one key close together in time, taken as one scan (protocol.md §3).
public struct ScanInstance: Hashable, Sendable, Codable {
    /// Lowest attenuation in dB; nil when no RSSI was known.
    public var minAttenuation: Int?
    /// Rounded mean attenuation in dB; nil when no RSSI was known.
    public var typicalAttenuation: Int?
    /// The time this scan stands for: since the previous scan, at most 300 s.
    public var secondsSinceLastScan: Int

    public init(minAttenuation: Int?, typicalAttenuation: Int?, secondsSinceLastScan: Int) {
        self.minAttenuation = minAttenuation
        self.typicalAttenuation = typicalAttenuation
        self.secondsSinceLastScan = secondsSinceLastScan
    }
}

/// Up to 30 minutes of one diagnosis key's sightings.
public struct ExposureWindow: Hashable, Sendable {
    /// Unix seconds of the UTC midnight the window starts on.
    public var date: Int64
    public var reportType: ReportType
    public var infectiousness: Infectiousness
    /// 0...3, from the metadata (version 1.1 and later); 0 when not given.
    public var calibrationConfidence: Int
    public var scanInstances: [ScanInstance]
    public var diagnosisKey: DiagnosisKey

    public init(date: Int64, reportType: ReportType, infectiousness: Infectiousness, calibrationConfidence: Int,
                scanInstances: [ScanInstance], diagnosisKey: DiagnosisKey) {
        self.date = date
        self.reportType = reportType
        self.infectiousness = infectiousness
        self.calibrationConfidence = calibrationConfidence
        self.scanInstances = scanInstances
        self.diagnosisKey = diagnosisKey
    }
}

/// Groups a key's matched sightings into exposure windows and scan instances.
public enum ExposureWindowing {
    public static let maximumWindowSeconds: Int64 = 30 * 60
    /// Sightings closer than 1.5 × 17 s belong to one scan.
    public static let scanGapSeconds: Int64 = 25
    public static let maximumSecondsSinceLastScan: Int64 = 300
    public static let unknownSecondsSinceLastScan: Int64 = 120

    /// The windows of `match`; none when the key's owner counts as not infectious or the key was revoked.
    public static func windows(for match: KeyMatch, configuration: ExposureConfigurationV2) -> [ExposureWindow] {
        let key = match.key
        guard key.reportType != .revoked else { return [] }
        let infectiousness = configuration.infectiousness(daysSinceOnsetOfSymptoms: key.daysSinceOnsetOfSymptoms)
        guard infectiousness != .none else { return [] }
        let reportType = key.reportType == .unknown ? configuration.reportTypeNoneMap : key.reportType

        var windows = [ExposureWindow]()
        var windowStart: Int64 = 0, instances = [ScanInstance]()
        var scan = [MatchedSighting](), previousScanStart: Int64?

        func closeScan() {
            guard let first = scan.first else { return }
            let since = previousScanStart.map { min(maximumSecondsSinceLastScan, first.time - $0) } ?? unknownSecondsSinceLastScan
            let attenuations = scan.compactMap(\.attenuation)
            let typical = attenuations.isEmpty ? nil : Int((Double(attenuations.reduce(0, +)) / Double(attenuations.count)).rounded())
            instances.append(ScanInstance(minAttenuation: attenuations.min(), typicalAttenuation: typical, secondsSinceLastScan: Int(since)))
            previousScanStart = first.time
            scan = []
        }
        func closeWindow() {
            closeScan()
            guard !instances.isEmpty else { return }
            windows.append(ExposureWindow(
                date: UTCDay(containing: windowStart).start, reportType: reportType, infectiousness: infectiousness,
                calibrationConfidence: Int(match.sightings.first?.metadata.calibrationConfidence ?? 0),
                scanInstances: instances, diagnosisKey: key))
            instances = []
        }

        for sighting in match.sightings {
            let inWindow = !instances.isEmpty || !scan.isEmpty ? sighting.time - windowStart < maximumWindowSeconds : false
            if inWindow, let last = scan.last, sighting.time - last.time < scanGapSeconds {
                scan.append(sighting)
                continue
            }
            if inWindow {
                closeScan()
            } else {
                closeWindow()
                windowStart = sighting.time
            }
            scan = [sighting]
        }
        closeWindow()
        return windows
    }
}
