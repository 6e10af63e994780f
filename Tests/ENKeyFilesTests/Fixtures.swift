import ENArchive
import Foundation
import Testing

/// The public export files in Fixtures/ (see its README for their sources).
enum Fixture {
    static func data(_ name: String) throws -> Data {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/" + name, withExtension: nil))
        return try Data(contentsOf: url)
    }

    static func text(_ name: String) throws -> String {
        String(decoding: try data(name), as: UTF8.self)
    }

    static let internalsSampleKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE49JY6kekDgxj3Crm4y6kEHdfoKQFSNDM4mV9cgDb+e5nOAw0GeRoRThCu9/wX5wDT2QloFoOjl2pGZHI0f3C3w=="
    static let legacySampleKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEUczyMAkfSeoU77Nmcb1G7t7xyGCAhQqMOIVDFLFas3J+elP7CiotovigCLWj706F07j1EPL27ThRzZl7Ha9uOA=="
}

/// A zip archive of `entries` (the hostile-file tests then damage it).
func zipArchive(_ entries: [(String, Data)], method: ZipWriter.Method = .deflated) throws -> Data {
    var writer = ZipWriter()
    for (name, contents) in entries { try writer.add(name, contents, method: method) }
    return try writer.archive()
}
