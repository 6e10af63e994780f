import Foundation

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

/// A UTC time as YYYY-MM-DD HH:MM:SS UTC.
func utcTime(_ unixSeconds: Int64) -> String {
    let style = Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().dateSeparator(.dash)
        .dateTimeSeparator(.space).time(includingFractionalSeconds: false).timeSeparator(.colon)
    return Date(timeIntervalSince1970: TimeInterval(unixSeconds)).formatted(style) + " UTC"
}
