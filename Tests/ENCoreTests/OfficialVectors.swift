import Foundation
import ENCore
import Testing

/// The official EN Cryptography v1.2 vectors, read from the fixture.
struct OfficialVectors: Decodable {
    struct Interval: Decodable {
        let en_interval_number: UInt32
        let rpi: String
        let aem: String
    }
    let tek: String
    let rpik: String
    let aemk: String
    let metadata: String
    let key_generation_unix_seconds: Int64
    let rolling_start_interval_number: UInt32
    let rolling_period: UInt32
    let intervals: [Interval]

    static func load() throws -> OfficialVectors {
        let url = try #require(Bundle.module.url(forResource: "crypto-vectors-v1.2", withExtension: "json", subdirectory: "Fixtures"))
        return try JSONDecoder().decode(OfficialVectors.self, from: Data(contentsOf: url))
    }
}
