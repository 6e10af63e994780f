import Foundation

/// Runs the project's executables, built beside this test executable.
enum Command {
    struct Result {
        let status: Int32
        let standardOutput: String
        let standardError: String
    }

    static func executable(_ name: String) -> URL {
        let testExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testExecutable.deletingLastPathComponent().appendingPathComponent(name)
    }

    static func enctl(_ arguments: String...) throws -> Result { try enctl(arguments) }

    /// A shell command's prefix that makes its stderr the journal, as systemd does for a unit:
    /// JOURNAL_STREAM names that stream's device and inode.
    static let journalStream = "JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) "

    static func enctl(_ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        try run(executable("enctl").path, arguments, environment: environment)
    }

    /// Runs `executable` to its end, with `environment` added to this process's.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus,
                      standardOutput: String(decoding: outputData, as: UTF8.self),
                      standardError: String(decoding: errorData, as: UTF8.self))
    }

    /// The official vectors, from the core tests' fixture (see Tests/ENCoreTests/Fixtures/README.md).
    static func officialVectors() throws -> [String: Any] {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ENCoreTests/Fixtures/crypto-vectors-v1.2.json")
        return try JSONSerialization.jsonObject(with: Data(contentsOf: fixture)) as! [String: Any]
    }
}
