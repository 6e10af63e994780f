import CENCurl
import ENCore
import FoundationEssentials
import Glibc

/// HTTP(S) through libcurl, one request at a time, bounded: a server that answers too much, too
/// slowly or with redirects in a loop gets a clear error instead of enctl's memory or the timer's
/// whole run. libcurl rather than URLSession: its transfer stops inside the write callback that sees
/// the byte over the limit, where URLSession's cancel raced a flood of queued callbacks (a loopback
/// server streaming zeros kept a download going past its timeout and its memory bound).
enum Download {
    /// Seconds without a byte before a request fails.
    static let idleTimeout = 60
    /// Seconds a whole download may take (key-server.conf's `timeout`).
    static let defaultTimeout: TimeInterval = 300
    static let maximumRedirects = 5
    /// The largest index file.
    static let maximumIndexSize = 1 << 20

    /// What a server answered.
    struct Answer {
        var status: Int
        var body: Data
        /// The Retry-After header in seconds from now (it gives seconds or an HTTP date).
        var retryAfter: Int64?
    }

    /// A GET whose answer must be 200 and at most `maximumSize` bytes, within `timeout` seconds;
    /// redirects are followed.
    static func data(from url: URL, maximumSize: Int, timeout: TimeInterval = defaultTimeout) throws -> Data {
        try get(Request(url: url, maximumSize: maximumSize, timeout: timeout)).body
    }

    /// A GET whose answer (200, at most `maximumSize` bytes, within `timeout` seconds) streams into
    /// `path`: written beside it and renamed when complete, so that `path` is never partial and
    /// enctl never holds the file in memory.
    static func file(from url: URL, to path: String, maximumSize: Int, timeout: TimeInterval = defaultTimeout) throws {
        let partial = path + ".part"
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CommandError("\(partial): \(String(cString: strerror(errno)))") }
        var complete = false
        defer {
            close(descriptor)
            if !complete { unlink(partial) }
        }
        var request = Request(url: url, maximumSize: maximumSize, timeout: timeout)
        request.sink = descriptor
        _ = try get(request)
        guard fsync(descriptor) == 0, rename(partial, path) == 0 else { throw CommandError("\(path): \(String(cString: strerror(errno)))") }
        complete = true
    }

    /// A POST of JSON; returns the answer (a body of at most 1 MiB) whatever the status. A
    /// redirect is returned as its status, not followed: a body is never re-sent to another address.
    static func post(_ body: Data, to url: URL, headers: [String: String] = [:]) throws -> Answer {
        var request = Request(url: url, maximumSize: 1 << 20, timeout: defaultTimeout)
        request.body = body
        request.headers = ["Content-Type": "application/json"].merging(headers) { $1 }
        return try exchange(request)
    }

    /// Retry-After's delay-seconds, or its HTTP-date (RFC 9110 §10.2.3; the verification
    /// server's rate limiter sends a date) as seconds from `now`, at least 0.
    static func retryAfterSeconds(_ value: String, now: Int64 = Int64(Date().timeIntervalSince1970)) -> Int64? {
        let text = value.trimmingWhitespace()
        if let seconds = Int64(text) { return max(0, seconds) }
        // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
        let parts = text.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let clock = parts.count == 6 ? parts[4].split(separator: ":").compactMap { Int32($0) } : []
        guard parts.count == 6, parts[5] == "GMT", clock.count == 3, let day = Int32(parts[1]), let year = Int32(parts[3]),
              let month = months.firstIndex(of: String(parts[2])) else { return nil }
        var fields = tm()
        (fields.tm_year, fields.tm_mon, fields.tm_mday) = (year - 1900, Int32(month), day)
        (fields.tm_hour, fields.tm_min, fields.tm_sec) = (clock[0], clock[1], clock[2])
        return max(0, Int64(timegm(&fields)) - now)
    }

    private struct Request {
        var url: URL
        var maximumSize: Int
        var timeout: TimeInterval
        var body: Data?
        var headers: [String: String] = [:]
        /// Where the answer's bytes go: a file descriptor, or memory when nil.
        var sink: Int32?
    }

    /// A GET whose answer must be 200.
    private static func get(_ request: Request) throws -> Answer {
        let answer = try exchange(request)
        guard answer.status == 200 else { throw CommandError("\(request.url.absoluteString): the server answered HTTP \(answer.status)") }
        return answer
    }

    /// libcurl's process-wide set-up, done once before the first handle.
    private static let libraryReady = curl_global_init(CENCURL_GLOBAL_DEFAULT) == CURLE_OK

    private static func exchange(_ request: Request) throws -> Answer {
        let url = request.url.absoluteString
        guard libraryReady, let handle = curl_easy_init() else { throw CommandError("\(url): libcurl could not be initialised") }
        defer { curl_easy_cleanup(handle) }
        let transfer = Transfer(maximumSize: request.maximumSize, sink: request.sink)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        let message = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        defer { message.deallocate() }
        message.initialize(to: 0)
        var headers: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headers) }
        for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) { headers = curl_slist_append(headers, "\(name): \(value)") }

        var settings: [CURLcode] = [
            cen_curl_set_string(handle, CURLOPT_URL, url),
            cen_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"),
            cen_curl_set_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"),
            cen_curl_set_long(handle, CURLOPT_NOSIGNAL, 1),
            cen_curl_set_long(handle, CURLOPT_TIMEOUT_MS, Int(request.timeout * 1000)),
            cen_curl_set_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1),
            cen_curl_set_long(handle, CURLOPT_LOW_SPEED_TIME, idleTimeout),
            cen_curl_set_size(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maximumSize)),
            cen_curl_set_string(handle, CURLOPT_USERAGENT, "enctl (enagent)"),
            cen_curl_set_pointer(handle, CURLOPT_ERRORBUFFER, message),
            cen_curl_set_pointer(handle, CURLOPT_HTTPHEADER, headers),
            cen_curl_set_write_callback(handle, { data, size, count, context in
                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().take(data!, count: size * count)
            }),
            cen_curl_set_pointer(handle, CURLOPT_WRITEDATA, context),
        ]
        if let body = request.body {
            settings.append(cen_curl_set_size(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            // COPYPOSTFIELDS copies the bytes, so the body need not outlive this call.
            settings.append(body.withUnsafeBytes { bytes in
                cen_curl_set_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(message)))
            })
        } else {
            settings.append(cen_curl_set_long(handle, CURLOPT_FOLLOWLOCATION, 1))
            settings.append(cen_curl_set_long(handle, CURLOPT_MAXREDIRS, maximumRedirects))
        }
        if let refused = settings.first(where: { $0 != CURLE_OK }) {
            throw CommandError("\(url): libcurl refused an option: \(String(cString: curl_easy_strerror(refused)))")
        }

        let started = ContinuousClock.now
        let result = curl_easy_perform(handle)
        switch result {
        case CURLE_OK:
            var status = 0
            _ = cen_curl_get_long(handle, CURLINFO_RESPONSE_CODE, &status)
            var header: UnsafeMutablePointer<curl_header>?
            let retryAfter = curl_easy_header(handle, "Retry-After", 0, UInt32(CURLH_HEADER), -1, &header) == CURLHE_OK
                ? header.flatMap { retryAfterSeconds(String(cString: $0.pointee.value)) } : nil
            return Answer(status: status, body: transfer.body, retryAfter: retryAfter)
        case CURLE_WRITE_ERROR where transfer.writeError != nil:
            throw CommandError("\(url): cannot write the download: \(transfer.writeError!)")
        case CURLE_WRITE_ERROR where transfer.overLimit, CURLE_FILESIZE_EXCEEDED:
            throw CommandError("\(url): the answer is larger than \(request.maximumSize) bytes; refusing the rest")
        case CURLE_TOO_MANY_REDIRECTS:
            throw CommandError("\(url): more than \(maximumRedirects) redirects (a loop?)")
        case CURLE_OPERATION_TIMEDOUT where ContinuousClock.now - started >= .seconds(request.timeout * 0.95):
            throw CommandError("\(url): the download did not finish within \(Int(request.timeout)) s (key-server.conf: timeout)")
        default:
            let detail = message.pointee == 0 ? String(cString: curl_easy_strerror(result)) : String(cString: message)
            throw CommandError("\(url): \(detail)")
        }
    }
}

/// The answer's bytes as libcurl hands them over, into memory or a file; refusing the first chunk
/// over the limit (or one that cannot be written) stops the transfer at once (CURLE_WRITE_ERROR).
private final class Transfer {
    let maximumSize: Int
    private let sink: Int32?
    private(set) var body = Data()
    private(set) var received = 0
    private(set) var overLimit = false
    private(set) var writeError: String?

    init(maximumSize: Int, sink: Int32?) {
        self.maximumSize = maximumSize
        self.sink = sink
    }

    func take(_ bytes: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        guard received + count <= maximumSize else {
            overLimit = true
            return 0
        }
        received += count
        guard let sink else {
            body.append(UnsafeRawPointer(bytes).assumingMemoryBound(to: UInt8.self), count: count)
            return count
        }
        var written = 0
        while written < count {
            let result = write(sink, bytes + written, count - written)
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else {
                writeError = String(cString: strerror(errno))
                return 0
            }
            written += result
        }
        return count
    }
}
