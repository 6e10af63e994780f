import ENKeyFiles
import FoundationEssentials
import Glibc

/// The health authorities' public keys: every `*.pem` file in a directory. `KEYID_VERSION.pem`
/// (such as `310_v1.pem`) is trusted for that key id and version only, any other name for any.
/// Read when each detection starts. A file that is not a P-256 public key fails the detection
/// with its name, rather than silently trusting less.
enum TrustedKeysDirectory {
    static let defaultPath = "/etc/enagent/trusted-keys"

    /// No directory is no keys; one that cannot be read fails the detection like a bad file does.
    static func load(_ path: String) throws -> [TrustedKey] {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: path) } catch {
            throw LoadError("cannot list the trusted keys directory \(path): \(error)")
        }
        return try names.filter { $0.hasSuffix(".pem") }.sorted().map { name in
            let file = path + "/" + name
            let text: String
            do { text = try String(contentsOfFile: file, encoding: .utf8) } catch { throw LoadError("cannot read \(file): \(error)") }
            let scope = name.dropLast(4).split(separator: "_", maxSplits: 1).map(String.init)
            do {
                return TrustedKey(keyId: scope.count == 2 ? scope[0] : nil, keyVersion: scope.count == 2 ? scope[1] : nil,
                                  publicKey: try TrustedKey.publicKey(from: text))
            } catch {
                throw LoadError("\(file): \(error)")
            }
        }
    }

    struct LoadError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
