import ArgumentParser
import ENKeyFiles
import FoundationEssentials
import Glibc

/// Key files and trusted keys named on the command line.
enum KeyFileInput {
    /// Reads `path` as a key file whole (to inspect it), refusing one over the size limit before reading it.
    static func load(_ path: String, limits: KeyFileLimits) throws -> KeyExport {
        let file = try InputFile.read(path, limit: limits.maximumFileSize) { "\(KeyFileError.tooLarge(bytes: $0, limit: limits.maximumFileSize))" }
        do {
            return try KeyExport(contentsOf: file, limits: limits)
        } catch {
            throw CommandError("\(path): \(error)")
        }
    }

    /// `path` opened, to be streamed (`KeyFileStream`): a regular file within the size limit,
    /// read a chunk at a time when its turn comes.
    static func open(_ path: String, limits: KeyFileLimits) throws -> KeyFileContents {
        let (descriptor, size) = try InputFile.open(path)
        guard size <= limits.maximumFileSize else {
            close(descriptor)
            throw CommandError("\(path): \(KeyFileError.tooLarge(bytes: size, limit: limits.maximumFileSize))")
        }
        return KeyFileContents(descriptor: descriptor, size: size, closes: true)
    }

    /// Reads the key file at `path` to its end, checking it, without keeping its keys: what it
    /// holds besides them.
    static func summary(_ path: String, limits: KeyFileLimits) throws -> KeyFileSummary {
        do {
            let stream = try KeyFileStream(try open(path, limits: limits), limits: limits)
            while try stream.next() != nil {}
            return stream.summary
        } catch let error as KeyFileError {
            throw CommandError("\(path): \(error)")
        }
    }

    /// A public key from a file (PEM or base64) or, when no such file exists, the base64 text
    /// itself: --public-key's transform, so that a bad one is a usage error naming the option.
    static func trustedKey(_ argument: String) throws -> TrustedKey {
        var text = argument
        if FileManager.default.fileExists(atPath: argument) {
            do { text = try String(contentsOfFile: argument, encoding: .utf8) } catch {
                throw ValidationError("cannot read the file as text (PEM or base64): \(error)")
            }
        }
        do {
            return TrustedKey(publicKey: try TrustedKey.publicKey(from: text))
        } catch {
            throw ValidationError("neither a readable key file nor a key's base64 text: \(error)")
        }
    }

    static let maximumFileSizeRange = 1...1024

    static func validate(maximumFileSizeMiB: Int) throws {
        guard maximumFileSizeRange.contains(maximumFileSizeMiB) else {
            throw ValidationError("--max-file-size must be between \(maximumFileSizeRange.lowerBound) and \(maximumFileSizeRange.upperBound) MiB.")
        }
    }

    static func limits(maximumFileSizeMiB: Int) -> KeyFileLimits {
        var limits = KeyFileLimits.standard
        limits.maximumFileSize = maximumFileSizeMiB << 20
        limits.maximumEntrySize = maximumFileSizeMiB << 20
        return limits
    }
}
