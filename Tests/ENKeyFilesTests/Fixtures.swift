import Foundation
import Testing
import ZIPFoundation

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

/// A zip archive of `entries` as ZIPFoundation writes one (the hostile-file tests then damage it).
func zipArchive(_ entries: [(String, Data)], method: CompressionMethod = .deflate) throws -> Data {
    let archive = try Archive(data: Data(), accessMode: .create)
    for (name, contents) in entries {
        try archive.addEntry(with: name, type: .file, uncompressedSize: Int64(contents.count), compressionMethod: method) { position, size in
            contents.subdata(in: Int(position)..<Int(position) + size)
        }
    }
    return archive.data!
}
