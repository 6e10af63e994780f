import Glibc

/// A one-line progress bar on stderr, drawn only when stderr is a terminal.
struct Progress {
    let total: Int
    private let visible = isatty(2) == 1

    init(total: Int) { self.total = total }

    func show(_ done: Int, _ what: String) {
        guard visible, total > 0 else { return }
        let width = 24, filled = width * done / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        StandardStream.error.write("\r\u{1B}[K[\(bar)] \(done)/\(total) \(what)")
    }

    func finish() {
        if visible { StandardStream.error.write("\r\u{1B}[K") }
    }
}
