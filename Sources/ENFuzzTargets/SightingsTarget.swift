import ENCore

/// A JSON Lines sightings file as `enctl detect offline --sightings` reads it (any bytes,
/// decoded as UTF-8), then indexed as the detection indexes sightings.
public func fuzzSightings(_ input: UnsafeRawBufferPointer) {
    guard let sightings = try? Sighting.jsonLines(String(decoding: input, as: UTF8.self), path: "fuzz.jsonl") else { return }
    let index = SightingIndex(sightings)
    for sighting in sightings { _ = index.sightings(of: sighting.rpi) }
}
