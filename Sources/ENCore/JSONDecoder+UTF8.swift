import FoundationEssentials

extension JSONDecoder {
    /// `decode(_:from:)` for input from outside: bytes that are not UTF-8 are refused here, because
    /// the JSONDecoder of Swift 6.0's FoundationEssentials (Debian trixie's) stops the process on
    /// them (a `try!` on its error path) instead of throwing.
    public func decodeUTF8<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        guard String(validating: data, as: UTF8.self) != nil else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "The input is not UTF-8."))
        }
        return try decode(type, from: data)
    }
}
