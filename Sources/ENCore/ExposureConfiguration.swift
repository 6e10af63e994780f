/// A configuration file: v2 keys, v1 keys, or both (protocol.md §3).
public struct ExposureConfiguration: Sendable, Equatable, Decodable {
    public var v2: ExposureConfigurationV2
    /// Present when the file has v1 keys: only then is a v1 result computed.
    public var v1: ExposureConfigurationV1?

    public init(v2: ExposureConfigurationV2 = ExposureConfigurationV2(), v1: ExposureConfigurationV1? = nil) {
        self.v2 = v2
        self.v1 = v1
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: AnyKey.self)
        // The v2 reading checks the keys both share, so it goes first.
        v2 = try ExposureConfigurationV2(from: decoder)
        let hasV1Keys = json.allKeys.contains { ExposureConfigurationV1.distinctiveKeys.contains($0.stringValue) }
        v1 = hasV1Keys ? try ExposureConfigurationV1(from: decoder) : nil
    }
}
