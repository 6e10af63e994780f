/// A Temporary Exposure Key with the validity the protocol attaches to it.
public struct TemporaryExposureKey: Hashable, Sendable {
    public var keyData: TemporaryExposureKeyData
    public var rollingStartIntervalNumber: ENIntervalNumber
    /// Intervals of validity, 1...144.
    public var rollingPeriod: UInt32
    /// The deprecated v1 transmission risk level, 0...8 (0 when unset).
    public var transmissionRiskLevel: Int

    public init(
        keyData: TemporaryExposureKeyData,
        rollingStartIntervalNumber: ENIntervalNumber,
        rollingPeriod: UInt32 = ENIntervalNumber.tekRollingPeriod,
        transmissionRiskLevel: Int = 0
    ) {
        self.keyData = keyData
        self.rollingStartIntervalNumber = rollingStartIntervalNumber
        self.rollingPeriod = rollingPeriod
        self.transmissionRiskLevel = transmissionRiskLevel
    }

    /// The first interval after the key's validity.
    public var rollingEndIntervalNumber: UInt64 {
        UInt64(rollingStartIntervalNumber.rawValue) + UInt64(rollingPeriod)
    }

    public func isValid(at interval: ENIntervalNumber) -> Bool {
        interval >= rollingStartIntervalNumber && UInt64(interval.rawValue) < rollingEndIntervalNumber
    }
}

extension TemporaryExposureKey {
    /// What makes two publications the same key: the key data and the rolling start. Servers
    /// publish a key again (a re-upload, a revision of its report type); it is still one key.
    public struct Identity: Hashable, Sendable {
        public var keyData: TemporaryExposureKeyData
        public var rollingStartIntervalNumber: ENIntervalNumber

        public init(keyData: TemporaryExposureKeyData, rollingStartIntervalNumber: ENIntervalNumber) {
            self.keyData = keyData
            self.rollingStartIntervalNumber = rollingStartIntervalNumber
        }
    }

    public var identity: Identity { Identity(keyData: keyData, rollingStartIntervalNumber: rollingStartIntervalNumber) }
}
