import ENCore
import ENStore
import FoundationEssentials
import Glibc

/// Where the health authority's risk configuration comes from (enagent.conf's
/// `risk-configuration`): the file is read at each detection, so that a new one counts without a
/// restart. A file that is refused leaves the last good one in force (kept in the store, so that
/// a restart keeps it too); no file at all means the standard one (`RiskConfiguration.standard`).
public struct RiskConfigurationSource: Sendable {
    public static let defaultPath = "/etc/enagent/risk-configuration.json"
    /// Larger is no configuration.
    static let maximumSize = 1 << 20

    /// nil: the standard configuration, whatever the store keeps.
    let path: String?
    /// Told once per detection of a file refused: its path and why, and what is used instead.
    let refused: @Sendable (String) -> Void

    public init(path: String = defaultPath, refused: @escaping @Sendable (String) -> Void) {
        self.path = path
        self.refused = refused
    }

    /// Always the standard configuration (tests, and detections of enctl's own).
    public static let standard = RiskConfigurationSource(path: nil)

    private init(path: String?) {
        self.path = path
        refused = { _ in }
    }

    /// The configuration to judge with.
    func current(store: AgentStore) -> RiskConfiguration {
        guard let path else { return .standard }
        do {
            guard let data = try Self.read(path) else { return .standard }
            let configuration = try RiskConfiguration(json: data)
            try? store.set(StoreSettings.riskConfiguration, to: String(decoding: data, as: UTF8.self))
            return configuration
        } catch {
            let lastGood = (try? store.value(StoreSettings.riskConfiguration)).flatMap { $0 }.flatMap { try? RiskConfiguration(json: Data($0.utf8)) }
            refused("the risk configuration \(path) is refused (\(error)); the verdict follows "
                    + (lastGood.map { "the last good one (\($0.model.rawValue))" } ?? "the standard one (\(RiskConfiguration.standard.model.rawValue), LFPH's Wide Net)"))
            return lastGood ?? .standard
        }
    }

    /// The file's bytes; nil when there is no such file.
    private static func read(_ path: String) throws -> Data? {
        var status = stat()
        guard stat(path, &status) == 0 else {
            if errno == ENOENT { return nil }
            throw FileProblem.unreadable(String(cString: strerror(errno)))
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw FileProblem.notAFile }
        guard status.st_size <= maximumSize else { throw FileProblem.tooLarge }
        guard let data = FileManager.default.contents(atPath: path) else { throw FileProblem.unreadable("cannot be read") }
        return data
    }

    private enum FileProblem: Error, CustomStringConvertible {
        case notAFile, tooLarge
        case unreadable(String)
        var description: String {
            switch self {
            case .notAFile: return "not a regular file"
            case .tooLarge: return "larger than 1 MiB"
            case .unreadable(let reason): return reason
            }
        }
    }
}
