import ArgumentParser
import ENAgent
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The health authority's servers, from `/etc/enagent/key-server.conf`: `key = value` lines for
/// `url` (the key server's base URL for downloads), `index` (a file listing export paths one per
/// line, relative to the base URL; default index.txt), `region`, `timeout` (seconds per download),
/// and for sharing keys `publish-url`, `health-authority`, `verification-url` and `verification-api-key`.
struct KeyServerConfiguration: Equatable {
    var url: URL
    var index = "index.txt"
    var region: String?
    var publishURL: URL?
    var healthAuthority: String?
    var verificationURL: URL?
    var verificationAPIKey: String?
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
            case "publish-url": publishURL = try webURL(line.value)
            case "verification-url": verificationURL = try webURL(line.value)
            case "health-authority": healthAuthority = line.value
            case "verification-api-key": verificationAPIKey = line.value
            case "timeout":
                guard let seconds = Int(line.value), (1...3_600).contains(seconds) else { throw fail("timeout must be 1 to 3600 seconds") }
                timeout = TimeInterval(seconds)
            default:
                throw fail("unknown key \"\(line.key)\" (known: url, index, region, publish-url, health-authority, verification-url, "
                           + "verification-api-key, timeout)")
            }
        }
        guard let url else { throw CommandError("\(path): no url = line: which key server?") }
        self.url = url
    }

    static func load(_ path: String) throws -> KeyServerConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandError("cannot read the key server configuration \(path) (see README: Key server)")
        }
        return try KeyServerConfiguration(text: String(decoding: data, as: UTF8.self), path: path)
    }
}

/// HTTP(S), one request at a time, bounded: a server that answers too much, too slowly or with
/// redirects in a loop gets a clear error instead of enctl's memory or the timer's whole run.
enum Download {
    /// Seconds without a byte before a request fails.
    static let idleTimeout: TimeInterval = 60
    /// Seconds a whole download may take (key-server.conf's `timeout`).
    static let defaultTimeout: TimeInterval = 300
    static let maximumRedirects = 5
    /// The largest index file.
    static let maximumIndexSize = 1 << 20

    /// A GET whose answer must be 200 and at most `maximumSize` bytes, within `timeout` seconds.
    static func data(from url: URL, maximumSize: Int, timeout: TimeInterval = defaultTimeout) throws -> Data {
        let (status, data) = try exchange(URLRequest(url: url, timeoutInterval: idleTimeout), maximumSize: maximumSize, timeout: timeout)
        guard status == 200 else { throw CommandError("\(url.absoluteString): the server answered HTTP \(status)") }
        return data
    }

    /// A POST of JSON; returns the status and body (at most 1 MiB) whatever the status.
    static func post(_ body: Data, to url: URL, headers: [String: String] = [:]) throws -> (status: Int, body: Data) {
        var request = URLRequest(url: url, timeoutInterval: idleTimeout)
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return try exchange(request, maximumSize: 1 << 20, timeout: defaultTimeout)
    }

    private static func exchange(_ request: URLRequest, maximumSize: Int, timeout: TimeInterval) throws -> (status: Int, body: Data) {
        var request = request
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let url = request.url?.absoluteString ?? ""
        let transfer = BoundedTransfer(url: url, maximumSize: maximumSize)
        let session = URLSession(configuration: .ephemeral, delegate: transfer, delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: request)
        task.resume()
        guard transfer.done.wait(timeout: .now() + timeout) == .success else {
            task.cancel()
            throw CommandError("\(url): the download did not finish within \(Int(timeout)) s (key-server.conf: timeout)")
        }
        return try transfer.outcome()
    }
}

/// One request's answer as it arrives, stopped at the first byte over the limit or the redirect
/// over `Download.maximumRedirects`.
private final class BoundedTransfer: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    private let url: String
    private let maximumSize: Int
    private let lock = NSLock()
    private var body = Data()
    private var redirects = 0
    private var refusal: CommandError?
    private var result: Result<(Int, Data), CommandError>?

    init(url: String, maximumSize: Int) {
        self.url = url
        self.maximumSize = maximumSize
    }

    func outcome() throws -> (status: Int, body: Data) {
        try lock.withLock { result! }.get()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let over = lock.withLock { () -> Bool in
            body.append(data)
            guard body.count > maximumSize, refusal == nil else { return false }
            refusal = CommandError("\(url): the answer is larger than \(maximumSize) bytes; refusing the rest")
            return true
        }
        if over { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        let allowed = lock.withLock { () -> Bool in
            redirects += 1
            guard redirects > Download.maximumRedirects else { return true }
            refusal = CommandError("\(url): more than \(Download.maximumRedirects) redirects (a loop?)")
            return false
        }
        completionHandler(allowed ? request : nil)
        if !allowed { task.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.withLock {
            if let refusal {
                result = .failure(refusal)
            } else if let error {
                result = .failure(CommandError("\(url): \(error.localizedDescription)"))
            } else {
                result = .success(((task.response as? HTTPURLResponse)?.statusCode ?? 0, body))
            }
        }
        done.signal()
    }
}

/// Where `enctl detect --from-server` keeps what it downloaded and what the daemon processed, so
/// that a run after a failure fetches only what is missing and never hands a file over twice.
struct DownloadCache {
    let directory: String

    /// systemd's CacheDirectory= when run by the timer's unit, else the user's cache.
    static var defaultDirectory: String {
        if let cache = ProcessInfo.processInfo.environment["CACHE_DIRECTORY"] { return cache }
        let home = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] ?? (NSHomeDirectory() + "/.cache")
        return home + "/enagent"
    }

    init(directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory + "/files", withIntermediateDirectories: true)
    }

    /// The local file for an index entry (its path with "/" replaced, so entries cannot escape).
    func file(for entry: String) -> String {
        directory + "/files/" + entry.replacingOccurrences(of: "/", with: "_")
    }

    private var processedList: String { directory + "/processed" }

    /// Index entries handed to the daemon successfully.
    func processed() -> Set<String> {
        guard let text = try? String(contentsOfFile: processedList, encoding: .utf8) else { return [] }
        return Set(text.split(separator: "\n").map(String.init))
    }

    func markProcessed(_ entries: [String]) throws {
        let all = processed().union(entries).sorted().joined(separator: "\n") + "\n"
        try all.write(toFile: processedList, atomically: true, encoding: .utf8)
        for entry in entries { try? FileManager.default.removeItem(atPath: file(for: entry)) }
    }

    /// Stores a download atomically: a file in the cache is always complete.
    func store(_ data: Data, for entry: String) throws {
        try data.write(to: URL(fileURLWithPath: file(for: entry)), options: .atomic)
    }
}

/// `--server-config`, shared by the commands that talk to the health authority's servers.
struct ServerConfigurationOption: ParsableArguments {
    @Option(help: ArgumentHelp("The servers' configuration.", valueName: "file"))
    var serverConfig = KeyServerConfiguration.defaultPath

    func load() throws -> KeyServerConfiguration { try KeyServerConfiguration.load(serverConfig) }
}
