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
    /// The time this scan stands for: since the receiving device's previous scan (`ScanGap`).
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
    /// 0...3, from the metadata of the window's first sighting (version 1.1 and later); 0 when not given.
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

/// Groups a key's matched sightings into exposure windows and scan instances, as Google's
/// KeyExposureEvaluator.findExposureWindows does.
public enum ExposureWindowing {
    /// A sighting this long or longer after its window's first starts a new window
    /// (ContactTracingFeature.maxExposureWindowDurationMinutes, shouldStartNewExposureWindow).
    public static let maximumWindowSeconds: Int64 = 30 * 60

    /// Google's one scan: 1.5 × the longest scan, 4 + 13 s, so 25.5 s (ContactTracingFeature
    /// .scanTimeSeconds and scanTimeExtendForProfileInUseSeconds), in whole seconds.
    public static let sameScanSeconds: Int64 = 3 * (4 + 13) / 2

    /// Whether a sighting `gap` seconds after the previous one belongs to the same scan
    /// (KeyExposureEvaluator.sightingInTheSameScanInstance).
    @inline(__always)
    static func sameScan(gap: Int64) -> Bool { gap <= sameScanSeconds }

    /// The windows of `match`; none when the key's owner counts as not infectious (Google's code
    /// keeps those windows; its API documentation drops them) or the key was revoked.
    public static func windows(for match: KeyMatch, configuration: ExposureConfigurationV2) -> [ExposureWindow] {
        let key = match.key
        guard key.reportType != .revoked else { return [] }
        let infectiousness = configuration.infectiousness(daysSinceOnsetOfSymptoms: key.daysSinceOnsetOfSymptoms)
        guard infectiousness != .none else { return [] }
        let reportType = key.reportType == .unknown ? configuration.reportTypeNoneMap : key.reportType

        var windows = [ExposureWindow]()
        var windowStart: MatchedSighting?, instances = [ScanInstance]()
        var scan = [MatchedSighting]()

        func closeScan() {
            guard let first = scan.first else { return }
            let attenuations = scan.compactMap(\.attenuation)
            let typical = attenuations.isEmpty ? nil : Int((Double(attenuations.reduce(0, +)) / Double(attenuations.count)).rounded())
            // SightingRecordWithMetadata.secondsSinceLastScan of the scan's first sighting.
            instances.append(ScanInstance(minAttenuation: attenuations.min(), typicalAttenuation: typical, secondsSinceLastScan: first.scanGap.seconds))
            scan = []
        }
        func closeWindow() {
            closeScan()
            guard let start = windowStart, !instances.isEmpty else { return }
            windows.append(ExposureWindow(
                date: UTCDay(containing: start.time).start, reportType: reportType, infectiousness: infectiousness,
                calibrationConfidence: Int(start.metadata.calibrationConfidence ?? 0), scanInstances: instances, diagnosisKey: key))
            instances = []
        }

        for sighting in match.sightings {
            guard let start = windowStart, sighting.time - start.time < maximumWindowSeconds else {
                closeWindow()
                windowStart = sighting
                scan = [sighting]
                continue
            }
            if let last = scan.last, !sameScan(gap: sighting.time - last.time) { closeScan() }
            scan.append(sighting)
        }
        closeWindow()
        return windows
    }
}
