import FoundationEssentials
import Glibc

/// Writes `value` as pretty JSON with sorted keys on stdout.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// A UTC day as YYYY-MM-DD: exposure dates are UTC days in the protocol.
func utcDay(_ unixSeconds: Int64) -> String {
    Date(timeIntervalSince1970: TimeInterval(unixSeconds)).formatted(.iso8601.year().month().day())
}

/// A UTC time as YYYY-MM-DD HH:MM:SS UTC. Times are UTC throughout: local time and the
/// locale's formats need FoundationInternationalization (ICU), which enctl does not link.
func utcTime(_ unixSeconds: Int64) -> String {
    let style = Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().dateSeparator(.dash)
        .dateTimeSeparator(.space).time(includingFractionalSeconds: false).timeSeparator(.colon)
    return Date(timeIntervalSince1970: TimeInterval(unixSeconds)).formatted(style) + " UTC"
}

extension String {
    /// `value` with `fractionDigits` digits after the point, rounded as printf's "%.1f" rounds
    /// (libc's vsnprintf: String(format:) is in full Foundation only).
    init(_ value: Double, fractionDigits: Int) {
        // The longest finite double, 1.8e308, has 309 digits before the point.
        var buffer = [CChar](repeating: 0, count: 312 + fractionDigits)
        self = buffer.withUnsafeMutableBufferPointer { text in
            _ = withVaList([Int32(fractionDigits), value]) { vsnprintf(text.baseAddress, text.count, "%.*f", $0) }
            return String(cString: text.baseAddress!)
        }
    }

    /// `value` with its sign, "+" included, as printf's "%+d".
    init(signed value: some BinaryInteger) {
        self = (value >= 0 ? "+" : "") + String(value)
    }
}

/// stdout and stderr as the file descriptors they are (FileHandle is in full Foundation only).
enum StandardStream: Int32 {
    case output = 1
    case error = 2

    /// Writes all of `bytes`, after any text `print` buffered. A failed write is dropped, as
    /// there is nowhere left to report it.
    func write(_ bytes: some DataProtocol) {
        fflush(nil)
        var remaining = Array(bytes)[...]
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { Glibc.write(rawValue, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            remaining = remaining.dropFirst(written)
        }
    }

    func write(_ text: String) { write(Array(text.utf8)) }
}
