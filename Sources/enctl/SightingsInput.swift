import ENCore
import ENStore
import Dispatch
import FoundationEssentials
import Glibc

/// Sightings for offline detection: a JSON Lines file or an agent database.
enum SightingsInput {
    /// The most sightings the index is sized for before it holds any: 4 M, some 14 days of a crowded place.
    static let presizedSightings = 1 << 22

    /// One sighting per line: {"rpi":"<32 hex>","aem":"<8 hex>","rssi":-60,"time":<unix seconds>};
    /// an RSSI of 127 or null is unknown. Blank lines are skipped. The parsing is
    /// `Sighting.jsonLine` (ENCore), which the fuzzers reach too.
    /// The file is read a chunk at a time: a line over 4 KiB (a sighting takes about 100 bytes)
    /// is refused, however long, without holding it. Each chunk's lines are parsed on every
    /// core, cut into as many runs of lines, and added to the index in the file's order (the
    /// index is the one a line at a time would make); the first bad line in the file is the one
    /// named.
    static func jsonLines(_ path: String) throws -> SightingIndex {
        // Sized for a line of 80 bytes (a sighting's takes about 85), so that it seldom grows; at
        // most for `presizedSightings`, since the size is a stranger's claim until the lines are
        // read (a sparse terabyte asked for 14 billion slots at once, and the process died).
        var status = stat()
        var index = SightingIndex(expectedCount: min(stat(path, &status) == 0 ? Int(status.st_size) / 80 : 0, presizedSightings))
        let parts = ProcessInfo.processInfo.activeProcessorCount
        try InputFile.forEachBlockOfLines(path, maximumLineLength: maximumLineLength) { block, firstNumber in
            for sightings in try parsedInParallel(block, firstNumber: firstNumber, parts: parts, path: path) {
                for sighting in sightings { index.add(sighting) }
            }
        }
        return index
    }

    /// The sightings of a block of lines, cut into up to `parts` runs of whole lines parsed at
    /// once, in the block's order; the error of the first bad line.
    private static func parsedInParallel(_ block: UnsafeRawBufferPointer, firstNumber: Int, parts: Int, path: String) throws -> [[Sighting]] {
        // Runs of whole lines: each ends after a newline (the last at the block's end).
        var ends = [Int]()
        for part in 1..<max(1, parts) {
            var end = max(ends.last ?? 0, block.count * part / parts)
            while end < block.count, end > 0, block[end - 1] != 0x0A { end += 1 }
            ends.append(end)
        }
        ends.append(block.count)
        var firstNumbers = [firstNumber], start = 0
        for end in ends.dropLast() {
            firstNumbers.append(firstNumbers.last! + InputFile.lineCount(UnsafeRawBufferPointer(rebasing: block[start..<end])))
            start = end
        }
        let results = UnsafeMutableBufferPointer<Result<[Sighting], any Error>>.allocate(capacity: ends.count)
        defer { results.deinitialize().deallocate() }
        // Each run initialises its own slot, reading only its own lines.
        nonisolated(unsafe) let slots = results, lines = block
        let runs = ends, numbers = firstNumbers
        DispatchQueue.concurrentPerform(iterations: ends.count) { run in
            let runLines = UnsafeRawBufferPointer(rebasing: lines[(run == 0 ? 0 : runs[run - 1])..<runs[run]])
            (slots.baseAddress! + run).initialize(to: Result {
                var sightings = [Sighting]()
                try InputFile.forEachLine(in: runLines, firstNumber: numbers[run]) { line, number in
                    do {
                        if let sighting = try Sighting.jsonLine(line, place: "\(path):\(number)") { sightings.append(sighting) }
                    } catch let error as SightingsFileError {
                        throw CommandError(error.description)
                    }
                }
                return sightings
            })
        }
        return try results.map { try $0.get() }
    }

    static let maximumLineLength = 4_096

    /// All sightings in an agent database, only read: not created, migrated or chmodded.
    static func database(_ path: String) throws -> SightingIndex {
        guard FileManager.default.fileExists(atPath: path) else { throw CommandError("\(path): no such database") }
        do {
            return try AgentDatabaseReader.sightingIndex(at: path)
        } catch {
            throw CommandError("\(error)")
        }
    }
}
