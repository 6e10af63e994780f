import ENCore
import Foundation

/// A JSON Lines sightings file as `enctl detect offline --sightings` reads it (any bytes,
/// decoded as UTF-8), then indexed as the detection indexes sightings. Every line the fast
/// scanner reads must be read the same by JSONDecoder: the scanner may only decline a line.
public func fuzzSightings(_ input: UnsafeRawBufferPointer) {
    for line in input.split(separator: 0x0A, omittingEmptySubsequences: false) {
        let bytes = UnsafeRawBufferPointer(rebasing: line)
        guard let scanned = Sighting.scannedJSONLine(bytes) else { continue }
        let decoded = try? Sighting.decodedJSONLine(Data(bytes), place: "fuzz.jsonl")
        precondition(decoded == scanned, "the scanner read \(scanned), JSONDecoder \(String(describing: decoded)), from \(Array(bytes))")
    }
    guard let sightings = try? Sighting.jsonLines(String(decoding: input, as: UTF8.self), path: "fuzz.jsonl") else { return }
    let index = SightingIndex(sightings)
    // Past the adapters a byte numbers, a sighting's adapter is unknown (SightingIndex.maximumAdapterCount).
    let everyAdapterNumbered = index.adapterAddresses.count < SightingIndex.maximumAdapterCount
    for sighting in sightings {
        precondition(index.sightings(of: sighting.rpi).contains { indexed in
            indexed.aem == sighting.aem && indexed.rssi == sighting.rssi
                && (indexed.adapterAddress == sighting.adapterAddress || !everyAdapterNumbered)
        }, "the index lost a sighting")
    }
}
