extension StringProtocol {
    /// Without its leading and trailing whitespace, newlines included (Foundation's
    /// `trimmingCharacters(in:)` is not in FoundationEssentials).
    public func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }
}
