import ENBus
import ENCore
import ENKeyFiles
import Foundation
import TestSupport
import Testing

/// A caller that means harm, on a private bus: every answer is a named error, quickly, and the
/// daemon keeps serving everyone else meanwhile.
@Suite struct HostileCallerTests {
    let directory = TemporaryDirectory()
    typealias Service = ServiceTests.Service

    /// Seconds a `Get` of the status takes.
    func statusLatency(_ service: Service) throws -> Double {
        let connection = try DBusConnection(address: service.bus.address)
        let started = ContinuousClock.now
        _ = try connection.call(destination: "org.enagent.ExposureNotification1", path: "/org/enagent/ExposureNotification1",
                                interface: "org.freedesktop.DBus.Properties", member: "Get",
                                [.string("org.enagent.ExposureNotification1"), .string("Status")])
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// DetectExposures with `descriptor`: the error's name and message, and how long the answer took.
    func detect(_ service: Service, _ descriptors: [Int32]) throws -> (name: String, message: String, seconds: Double) {
        let started = ContinuousClock.now
        do {
            _ = try service.call("DetectExposures", [.array(elementSignature: "h", descriptors.map { .unixFD($0) }), .string("")])
            Issue.record("DetectExposures accepted \(descriptors)")
            return ("", "", 0)
        } catch {
            let elapsed = ContinuousClock.now - started
            return (error.name, error.message, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
    }

    func openDescriptors(of process: ChildProcess) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count
    }

    /// A FIFO whose writer never finishes, a socket, /dev/zero, a directory, a write-only file:
    /// each refused at once by name; the daemon's other callers are answered meanwhile and no
    /// descriptor is left open in it.
    @Test func descriptorsThatAreNotKeyFilesAreRefusedAtOnce() throws {
        let service = try Service.enabled(in: directory, trusting: try P256PrivateKey())
        let before = try openDescriptors(of: service.daemon)

        let fifo = directory.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        // Opened without blocking only so that both ends can be had here; the daemon's copy blocks.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK), writer = open(fifo, O_WRONLY)
        #expect(fcntl(reader, F_SETFL, 0) == 0)
        defer { close(reader); close(writer) }
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        let zero = open("/dev/zero", O_RDONLY), folder = open(directory.path, O_RDONLY | O_DIRECTORY)
        let writeOnlyPath = directory.file("write-only.zip")
        FileManager.default.createFile(atPath: writeOnlyPath, contents: Data("PK".utf8))
        let writeOnly = open(writeOnlyPath, O_WRONLY)
        defer { [zero, folder, writeOnly].forEach { close($0) } }

        for (descriptor, what) in [(reader, "a FIFO"), (pair[0], "a socket"), (zero, "a character device"), (folder, "a directory")] {
            let answer = try detect(service, [descriptor])
            #expect(answer.name == "org.enagent.ExposureNotification1.Error.KeyFileRejected", "\(what): \(answer)")
            #expect(answer.message == "key file 1 is \(what), not a regular file: pass an open key file", "\(what)")
            #expect(answer.seconds < 5, "\(what) answered after \(answer.seconds) s")
        }
        let writeOnlyAnswer = try detect(service, [writeOnly])
        #expect(writeOnlyAnswer.message == "key file 1 is not open for reading", "\(writeOnlyAnswer)")
        #expect(try statusLatency(service) < 1)
        #expect(try openDescriptors(of: service.daemon) == before, "no descriptor left open in the daemon")
    }
}

extension HostileCallerTests {
    /// A key file whose zip directory points past its end took the daemon down (a trap in the zip
    /// library); now it is a named refusal and the daemon goes on.
    @Test func aKeyFileWithAnOffsetPastItsEndIsRefusedAndTheDaemonLives() throws {
        let signer = try P256PrivateKey()
        let service = try Service.enabled(in: directory, trusting: signer)
        let writer = KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
        var file = try writer.zip(keys: [try Broadcaster(start: 2_900_000).key])
        let directoryRecord = try #require(file.firstRange(of: Data([0x50, 0x4b, 0x01, 0x02]))).lowerBound
        file.replaceSubrange(directoryRecord + 42..<directoryRecord + 46, with: [0x00, 0xFF, 0xFF, 0xFF])
        let path = directory.file("past-the-end.zip")
        try file.write(to: URL(fileURLWithPath: path))

        let result = try service.enctl("detect", path)
        #expect(result.status == 1)
        #expect(result.standardError.contains("[KeyFileRejected]") && result.standardError.contains("no local header at 4294967040"),
                "\(result.standardError)")
        #expect(service.daemon.isRunning, "enagentd is still running")
        #expect(try service.status()["status"] as? String == "active")
    }

    @Test func theLongestPauseIsAYearNotAnError() throws {
        let service = try Service.enabled(in: directory, trusting: try P256PrivateKey())
        _ = try service.call("Pause", [.uint64(.max)])
        let until = try #require(try service.status()["pausedUntil"] as? Int)
        let inAYear = Int(Date().timeIntervalSince1970) + 366 * 86_400
        #expect(abs(until - inAYear) < 60, "paused until \(until)")
        #expect(throws: DBusError.self) { try service.call("Pause", [.uint64(0)]) }
    }
}
