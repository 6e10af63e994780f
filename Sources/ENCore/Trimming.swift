extension StringProtocol {
    /// The text without whitespace (newlines included) at either end (FoundationEssentials has no
    /// `trimmingCharacters(in:)`).
    public var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
