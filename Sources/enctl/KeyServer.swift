import ArgumentParser
import ENCore
import FoundationEssentials
import Glibc

/// The health authority's servers, from `/etc/enagent/key-server.conf`: `key = value` lines for
/// `url` (the key server's base URL for downloads: the bucket's root), `index` (a file listing
/// export paths one per line, relative to the base URL; default index.txt), `region` (the only region whose key files are
/// taken), `exposure-configuration` (the health authority's exposure configuration JSON: a path
/// relative to the base URL, or an absolute local file), `timeout` (seconds per download), and for
/// sharing keys `publish-url`, `health-authority`, `verification-url` and `verification-api-key`,
/// `publish-without-certificate` (the key server takes uploads without a verification
/// certificate, as a card-verified result has none), and `chaff` (the chance of a round of decoy
/// requests per timer run).
struct KeyServerConfiguration: Equatable {
    var url: URL
    var index = "index.txt"
    var region: String?
    var exposureConfiguration: String?
    var publishURL: URL?
    var healthAuthority: String?
    var verificationURL: URL?
    var verificationAPIKey: String?
    /// Whether the key server publishes keys without a verification certificate (Google's
    /// per-app BypassHealthAuthorityVerification): only then can a card-verified result be shared.
    var publishWithoutCertificate = false
    /// The chance that `enctl share --pending` (the timer) sends a round of decoy requests; 0: never.
    var chaff = 0.0
    /// Seconds one download may take in all.
    var timeout = Download.defaultTimeout

    static let defaultPath = "/etc/enagent/key-server.conf"

    init(text: String, path: String) throws {
        let file: KeyValueFile
        do { file = try KeyValueFile(text: text, path: path) } catch { throw CommandError("\(error)") }
        var url: URL?
        for line in file.lines {
            let fail = { (reason: String) in CommandError("\(file.error(at: line, reason))") }
            let webURL = { (text: String) throws -> URL in
                guard let parsed = URL(string: text), ["http", "https"].contains(parsed.scheme ?? "") else {
                    throw fail("\(line.key) must be an http or https URL")
                }
                return parsed
            }
            switch line.key {
            case "url": url = try webURL(line.value.hasSuffix("/") ? line.value : line.value + "/")
            case "index": index = line.value
            case "region": region = line.value
            case "exposure-configuration": exposureConfiguration = line.value
            case "publish-url": publishURL = try webURL(line.value)
            case "verification-url": verificationURL = try webURL(line.value)
            case "health-authority": healthAuthority = line.value
            case "verification-api-key": verificationAPIKey = line.value
            case "publish-without-certificate":
                guard let answer = KeyValueFile.boolean(line.value) else { throw fail("publish-without-certificate must be yes or no") }
                publishWithoutCertificate = answer
            case "chaff":
                guard let chance = Double(line.value), (0...1).contains(chance) else { throw fail("chaff must be a number from 0 (never) to 1 (every run)") }
                chaff = chance
            case "timeout":
                guard let seconds = Int(line.value), (1...3_600).contains(seconds) else { throw fail("timeout must be 1 to 3600 seconds") }
                timeout = TimeInterval(seconds)
            default:
                throw fail("unknown key \"\(line.key)\" (known: url, index, region, exposure-configuration, publish-url, health-authority, "
                           + "verification-url, verification-api-key, publish-without-certificate, chaff, timeout)")
            }
        }
        guard let url else { throw CommandError("\(path): no url = line: which key server?") }
        self.url = url
    }

    /// Where an index entry is. Google's key server lists whole object names from the bucket's
    /// root (internal/export/worker.go: "exposureKeyExport-US/1600000000-1600003600-00001.zip"),
    /// which `url` names; when `url` names the export folder itself (its last part is the entry's
    /// first), the entry is taken from the folder's parent instead of doubling the folder.
    func exportURL(_ entry: String) -> URL? {
        let folder = url.lastPathComponent
        if !folder.isEmpty, folder != "/", entry.hasPrefix(folder + "/") {
            return URL(string: entry, relativeTo: url.deletingLastPathComponent())
        }
        return URL(string: entry, relativeTo: url)
    }

    /// The largest exposure configuration the server may serve.
    static let maximumConfigurationSize = 64 << 10

    /// The health authority's exposure configuration JSON, from the server or a local file; "" for
    /// the protocol's defaults when none is configured.
    func exposureConfigurationText() throws -> String {
        guard let exposureConfiguration else { return "" }
        if exposureConfiguration.hasPrefix("/") { return try InputFile.text(exposureConfiguration, what: "an exposure configuration") }
        guard let source = URL(string: exposureConfiguration, relativeTo: url) else {
            throw CommandError("exposure-configuration \(exposureConfiguration) is neither an absolute path nor a URL")
        }
        return String(decoding: try Download.data(from: source, maximumSize: Self.maximumConfigurationSize, timeout: timeout), as: UTF8.self)
    }

    static func load(_ path: String) throws -> KeyServerConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandError("cannot read the key server configuration \(path) (see key-server.conf(5))")
        }
        let configuration = try KeyServerConfiguration(text: String(decoding: data, as: UTF8.self), path: path)
        if configuration.verificationAPIKey != nil { try refuseIfOthersCanRead(path) }
        return configuration
    }

    /// The API key is the health authority's secret for this device: a file every user can read
    /// (a plain `cp` of the 0644 template) is refused, with the command that fixes it.
    private static func refuseIfOthersCanRead(_ path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IROTH != 0 else { return }
        throw CommandError("\(path) holds verification-api-key and every user can read it (mode \(String(status.st_mode & 0o777, radix: 8))): "
                           + "run 'sudo chmod 0640 \(path) && sudo chgrp enagent \(path)' (key-server.conf(5))")
    }
}

/// Where `enctl detect server` keeps what it downloaded (the cache, which may be cleaned) and
/// the list of what the daemon processed (the state, which is kept), so that a run after a
/// failure fetches only what is missing and never hands a file over twice.
struct DownloadCache {
    let directory: String
    let stateDirectory: String

    /// systemd's CacheDirectory= when run by the timer's unit, else the user's cache.
    static var defaultDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let cache = environment["CACHE_DIRECTORY"] { return cache }
        return (environment["XDG_CACHE_HOME"] ?? (FileManager.default.homeDirectoryForCurrentUser.path + "/.cache")) + "/enagent"
    }

    /// systemd's StateDirectory= when run by the timer's unit, else the user's state.
    static var defaultStateDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let state = environment["STATE_DIRECTORY"] { return state }
        return (environment["XDG_STATE_HOME"] ?? (FileManager.default.homeDirectoryForCurrentUser.path + "/.local/state")) + "/enagent"
    }

    init(directory: String, stateDirectory: String) throws {
        self.directory = directory
        self.stateDirectory = stateDirectory
        try FileManager.default.createDirectory(atPath: directory + "/files", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try adoptListFromCache()
    }

    /// enctl 0.6.0 and earlier kept the list in the cache, where cleaning the cache forgot it: it
    /// moves to the state directory, merged with one there.
    private func adoptListFromCache() throws {
        let old = directory + "/processed"
        guard FileManager.default.fileExists(atPath: old), old != processedList else { return }
        let entries = (try? String(contentsOfFile: old, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
        try writeList(processed().union(entries))
        try FileManager.default.removeItem(atPath: old)
    }

    /// The local file for an index entry (its path with "/" replaced, so entries cannot escape).
    func file(for entry: String) -> String {
        directory + "/files/" + entry.replacing("/", with: "_")
    }

    private var processedList: String { stateDirectory + "/processed" }

    private func writeList(_ entries: Set<String>) throws {
        try (entries.sorted().joined(separator: "\n") + "\n").write(toFile: processedList, atomically: true, encoding: .utf8)
    }

    /// Index entries handed to the daemon successfully. A list that cannot be read counts as empty:
    /// that costs downloads only, since enagentd skips a key file it processed (by its digest).
    func processed() -> Set<String> {
        guard let text = try? String(contentsOfFile: processedList, encoding: .utf8) else { return [] }
        return Set(text.split(separator: "\n").map(String.init))
    }

    func markProcessed(_ entries: [String]) throws {
        try writeList(processed().union(entries))
        for entry in entries {
            do { try FileManager.default.removeItem(atPath: file(for: entry)) } catch {
                StandardStream.error.write("enctl: cannot remove a processed key file from the cache (it takes space only): \(error)\n")
            }
        }
    }

    /// Downloads an entry into the cache, streaming to disk: a file in the cache is always complete.
    func download(_ entry: String, from url: URL, maximumSize: Int, timeout: TimeInterval) throws {
        try Download.file(from: url, to: file(for: entry), maximumSize: maximumSize, timeout: timeout)
    }
}

/// `--server-config`, shared by the commands that talk to the health authority's servers.
struct ServerConfigurationOption: ParsableArguments {
    @Option(help: ArgumentHelp("The servers' configuration.", valueName: "file"), transform: ArgumentValue.inputFile)
    var serverConfig = KeyServerConfiguration.defaultPath

    func load() throws -> KeyServerConfiguration { try KeyServerConfiguration.load(serverConfig) }
}
