import ENCore

/// A device broadcasting under one key: makes the sightings others record of it, with RPIs and
/// AEMs derived as the protocol does.
public struct Broadcaster {
    public let key: DiagnosisKey
    public let metadata: Metadata
    private let crypto: ExposureCrypto

    public init(key: DiagnosisKey, metadata: Metadata = Metadata(transmitPower: -10)) throws {
        self.key = key
        self.metadata = metadata
        crypto = try ExposureCrypto()
    }

    /// A device with a fresh random key.
    public init(start: UInt32 = 2_700_000, period: UInt32 = 144, reportType: ReportType = .confirmedTest,
                daysSinceOnset: Int? = nil, risk: Int = 0, metadata: Metadata = Metadata(transmitPower: -10)) throws {
        try self.init(key: DiagnosisKey(key: TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(),
                                                                  rollingStartIntervalNumber: ENIntervalNumber(start), rollingPeriod: period,
                                                                  transmissionRiskLevel: risk),
                                        reportType: reportType, daysSinceOnsetOfSymptoms: daysSinceOnset),
                      metadata: metadata)
    }

    /// A sighting at `time` of the RPI of `time`'s interval (or of `interval` when given), by the
    /// adapter at `adapterAddress` (nil: unknown).
    public func sighting(at time: Int64, rssi: Int8? = -60, interval: ENIntervalNumber? = nil,
                         adapterAddress: BluetoothAddress? = nil) throws -> Sighting {
        let tek = key.key.keyData
        let rpi = try crypto.rollingProximityIdentifier(key: crypto.rollingProximityIdentifierKey(for: tek),
                                                        interval: interval ?? ENIntervalNumber(unixSeconds: time)!)
        let aem = try crypto.encryptMetadata(metadata, key: crypto.associatedEncryptedMetadataKey(for: tek), rpi: rpi)
        return Sighting(rpi: rpi, aem: aem, rssi: rssi, time: time, adapter: "hci0", adapterAddress: adapterAddress)
    }

    /// The start of the key's validity, in unix seconds.
    public var start: Int64 { key.key.rollingStartIntervalNumber.unixSeconds }
}
