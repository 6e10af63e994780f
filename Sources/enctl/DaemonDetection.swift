import ArgumentParser
import ENAPI
import ENBus
import ENCore
import ENKeyFiles
import ENSystemd
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// Detection by enagentd in one session: the files handed over as descriptors, a batch at a
/// time, so that only one batch is open at once however many files there are.
struct DaemonDetection {
    typealias API = DaemonClient.API
    let options: DetectionOptions
    var maxKeys: UInt64 = 0
    /// Files per AddKeyFiles call.
    static let batchSize = DBusConnection.maximumDescriptorsPerMessage

    /// Starts a session, adds the files, finishes it and prints its summary; on any error the
    /// session is cancelled (nothing of it is recorded). `names` replace the daemon's "key file
    /// N" in errors.
    func run(paths: [String], names: [String], configuration: String) throws {
        let client = try DaemonClient()
        let handle = try client.call(API.Methods.startDetection, DetectionSessionRequest(configuration: configuration, maxKeys: maxKeys))
        let progress = Progress(total: paths.count)
        let filesDone = Mutex(0)
        // Progress only: without the signal (or with one not understood) detection runs the same, silently.
        let watch = try? client.connection.subscribe(MatchRule(sender: API.busName, path: API.path, interface: API.interface,
                                                               member: API.Signals.detectionProgress.name)) { message in
            guard let signal = try? API.Signals.detectionProgress.arguments(message.arguments), signal.session == handle.session else { return }
            progress.show(filesDone.withLock { $0 }, "\(signal.progress.keysChecked) keys checked")
        }
        defer {
            watch?.cancel()
            progress.finish()
        }
        let summary: DetectionSummary
        do {
            for start in stride(from: 0, to: paths.count, by: Self.batchSize) {
                let range = start..<min(start + Self.batchSize, paths.count)
                try add(Array(paths[range]), names: Array(names[range]), firstNumber: start + 1, to: handle, client: client)
                filesDone.withLock { $0 = range.upperBound }
            }
            summary = try client.call(API.Methods.finishDetection, handle, timeout: .seconds(600)).summary
        } catch {
            _ = try? client.call(API.Methods.cancelDetection, handle)  // the daemon ends an idle session by itself; the first error is the one to show
            throw error
        }
        progress.finish()
        let checked = [
            ["Key files processed", String(summary.keyFilesProcessed)],
            ["Key files seen before", String(summary.keyFilesSkipped)],
            ["Keys checked", String(summary.keysChecked)],
        ]
        // Under a unit (the timer's) the output is the journal, which groups adm and
        // systemd-journal read: what was checked, never what was found.
        if JournalLog.outputReachesJournal { return printColumns(checked) }
        if options.output.json { return try printJSON(summary) }
        printColumns(checked + [
            ["Keys matched", String(summary.matchedKeys)],
            ["New exposure windows", String(summary.newExposureWindows)],
        ])
    }

    private func add(_ paths: [String], names: [String], firstNumber: Int, to handle: DetectionSessionHandle, client: DaemonClient) throws {
        let descriptors = try paths.map { path in
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw CommandError("\(path): \(String(cString: strerror(errno)))") }
            return descriptor
        }
        defer { descriptors.forEach { close($0) } }
        do {
            try client.call(API.Methods.addKeyFiles, KeyFileBatch(session: handle.session, keyFiles: descriptors.map(FileDescriptor.init)),
                            timeout: .seconds(600))
        } catch let error as CommandError {
            throw CommandError(names.enumerated().reversed().reduce(error.description) { text, named in
                text.replacing("key file \(firstNumber + named.offset)", with: named.element)
            })
        }
    }
}
