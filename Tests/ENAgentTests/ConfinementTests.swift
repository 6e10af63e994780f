import Dispatch
import ENAgent
import Foundation
import Testing

struct ConfinementTests {
    /// The value is read and changed in place on its queue.
    @Test func aBoundValueChangesOnItsQueue() {
        let queue = DispatchQueue(label: "test.bound")
        let bound = QueueBound([Int](), queue: queue)
        let total = queue.sync {
            for number in 1...100 { bound.value.append(number) }
            return bound.value.reduce(0, +)
        }
        #expect(total == 5_050)
    }

    #if compiler(>=6.2)
    /// Off its queue, an access stops the process (in release builds too): a state confined by
    /// comment alone would have been read there silently.
    @Test func anAccessOffItsQueueStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            let bound = QueueBound(0, queue: DispatchQueue(label: "test.bound"))
            bound.value += 1
        }
    }
    #endif

    /// The types whose state lives on a queue are Sendable as the compiler checks it, and every
    /// `@unchecked Sendable` left in the product's sources says, in its doc comment, what makes it
    /// safe ("Sendable by hand: …").
    @Test func everyUncheckedSendableSaysWhy() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources").standardized
        let found = try UncheckedSendable.declarations(under: sources)
        #expect(found.count >= 5, "the scan finds the declarations: \(found)")
        let unexplained = found.filter { !$0.explained }.map(\.place)
        #expect(unexplained.isEmpty, "@unchecked Sendable without \"Sendable by hand:\" in its doc comment: \(unexplained)")
        let confinedByHand = found.map(\.place).filter { place in
            ["class RadioAgent", "class Daemon", "class ClockGate", "class BlueZRadio"].contains { place.contains($0) }
        }
        #expect(confinedByHand.isEmpty, "queue-confined types Sendable by hand again: \(confinedByHand)")
    }

    /// The radio lives on the agent's queue: no lock in ENRadio, whose state the kernel's events
    /// would otherwise change in the middle of its commands.
    @Test func theRadioTakesNoLock() throws {
        let radio = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/ENRadio").standardized
        let files = try FileManager.default.contentsOfDirectory(at: radio, includingPropertiesForKeys: nil).filter { $0.pathExtension == "swift" }
        #expect(!files.isEmpty)
        let locking = try files.filter { try String(contentsOf: $0, encoding: .utf8).contains("import Synchronization") }.map(\.lastPathComponent)
        #expect(locking.isEmpty, "ENRadio imports Synchronization: \(locking)")
    }

    /// The scan finds a declaration without the reason, and one with it.
    @Test func theScanTellsExplainedFromUnexplained() throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("unchecked-sendable-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try """
            /// A thing.
            /// Sendable by hand: never changed after init.
            final class Explained: @unchecked Sendable {}

            /// Touched on its queue only.
            final class Unexplained: @unchecked Sendable {}
            """.write(to: directory.appendingPathComponent("x.swift"), atomically: true, encoding: .utf8)
        let found = try UncheckedSendable.declarations(under: directory)
        #expect(found.map(\.explained) == [true, false])
        #expect(found.last?.place.hasSuffix("final class Unexplained: @unchecked Sendable {}") == true)
    }
}

private struct UncheckedSendable {
    let place: String
    let explained: Bool

    /// Every declaration conforming with `@unchecked Sendable` in the Swift files under `directory`,
    /// and whether the comment lines just above it say "Sendable by hand:".
    static func declarations(under directory: URL) throws -> [UncheckedSendable] {
        guard let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { return [] }
        var found = [UncheckedSendable]()
        for case let file as URL in files where file.pathExtension == "swift" {
            let lines = try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
            for (index, line) in lines.enumerated() where line.contains("@unchecked Sendable") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                let comment = lines[..<index].reversed().prefix { $0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
                found.append(UncheckedSendable(place: "\(file.lastPathComponent):\(index + 1): \(line.trimmingCharacters(in: .whitespaces))",
                                               explained: comment.contains { $0.contains("Sendable by hand:") }))
            }
        }
        return found.sorted { $0.place < $1.place }
    }
}
