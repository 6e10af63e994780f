import ENBus
import ENCore
import ENKeyFileWriter
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

    /// Records an issue unless the process's descriptors come back to `before` within 2 s: what
    /// it opens for a moment (its own /proc files after READY, a call still being answered) is no
    /// leak, one still open after that is.
    func expectDescriptors(of process: ChildProcess, toReturnTo before: [String], _ comment: Comment? = nil,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        let deadline = Date(timeIntervalSinceNow: 2)
        var now = try openDescriptors(of: process)
        while now != before && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            now = try openDescriptors(of: process)
        }
        let opened = now.filter { !before.contains($0) }, closed = before.filter { !now.contains($0) }
        #expect(now == before, "\(comment.map { "\($0): " } ?? "")opened \(opened), closed \(closed)", sourceLocation: sourceLocation)
    }

    /// The process's descriptors once two reads 0.1 s apart agree (within 2 s): the baseline,
    /// without what it has open for a moment.
    func settledDescriptors(of process: ChildProcess) throws -> [String] {
        let deadline = Date(timeIntervalSinceNow: 2)
        var last = try openDescriptors(of: process)
        while Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            let now = try openDescriptors(of: process)
            if now == last { break }
            last = now
        }
        return last
    }

    /// What the process's descriptors point at, sorted, but for the database's files: the store
    /// opens another reader connection when calls overlap (a loaded machine), which is no leak.
    func openDescriptors(of process: ChildProcess) throws -> [String] {
        let directory = "/proc/\(process.processIdentifier)/fd"
        return try FileManager.default.contentsOfDirectory(atPath: directory)
            .compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\($0)") }  // closed meanwhile: not open
            .filter { !$0.contains("/enagent.db") }
            .sorted()
    }

    /// A FIFO whose writer never finishes, a socket, /dev/zero, a directory, a write-only file:
    /// each refused at once by name; the daemon's other callers are answered meanwhile and no
    /// descriptor is left open in it.
    @Test func descriptorsThatAreNotKeyFilesAreRefusedAtOnce() throws {
        let service = try Service.enabled(in: directory, trusting: try P256PrivateKey())
        let before = try settledDescriptors(of: service.daemon)

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
        #expect(FileManager.default.createFile(atPath: writeOnlyPath, contents: Data("PK".utf8)))
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
        try expectDescriptors(of: service.daemon, toReturnTo: before, "no descriptor left open in the daemon")
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

/// The whole interface against wrong signatures, huge arguments, many descriptors and a flood.
extension HostileCallerTests {
    static let destination = "org.enagent.ExposureNotification1", path = "/org/enagent/ExposureNotification1"

    /// The interface's methods with their in-signatures and its properties, as the daemon introspects them.
    func introspect(_ service: Service) throws -> (methods: [(name: String, signature: String)], properties: [String]) {
        let connection = try DBusConnection(address: service.bus.address)
        let xml = try connection.call(destination: Self.destination, path: Self.path, interface: "org.freedesktop.DBus.Introspectable",
                                      member: "Introspect").first?.string ?? ""
        let parts = xml.split(separator: "<interface name=\"\(Self.destination)\">").last?.split(separator: "</interface>") ?? []
        let interface = try #require(parts.first)
        let methods = try interface.matches(of: Regex(#"<method name="(\w+)"(/>|>([\s\S]*?)</method>)"#)).map { match in
            let body = match.output[3].substring ?? ""
            let signature = try body.matches(of: Regex(#"type="([^"]+)" direction="in""#)).compactMap { $0.output[1].substring }.joined()
            return (name: String(match.output[1].substring ?? ""), signature: signature)
        }
        let properties = try interface.matches(of: Regex(#"<property name="(\w+)""#)).compactMap { $0.output[1].substring.map(String.init) }
        return (methods, properties)
    }

    /// The CPU seconds `process` has used (user and system, /proc/PID/stat): what the daemon spends
    /// on a call, which a loaded host does not stretch as it stretches the call's wall-clock time.
    func cpuSeconds(of process: ChildProcess) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8)
        // After the command name's closing parenthesis: state is field 3, utime 14 and stime 15.
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Every method called with no arguments, a wrong type and a 50,000-string array; every property
    /// set to a wrong type: each a named error for at most a second of the daemon's CPU, and the daemon serves on.
    @Test func everyMethodRefusesWrongArgumentsByName() throws {
        let service = try Service.enabled(in: directory, trusting: try P256PrivateKey())
        let before = try settledDescriptors(of: service.daemon)
        let (methods, properties) = try introspect(service)
        #expect(methods.count >= 14 && properties.count >= 12, "\(methods.map(\.name)) \(properties)")
        let connection = try DBusConnection(address: service.bus.address)
        let huge = DBusValue.array(elementSignature: "s", Array(repeating: .string(String(repeating: "x", count: 64)), count: 50_000))
        for method in methods {
            var wrong: [[DBusValue]] = [[huge]]
            if !method.signature.isEmpty { wrong.append([]) }
            if method.signature != "i" { wrong.append([.int32(7)]) }
            for arguments in wrong {
                let started = try cpuSeconds(of: service.daemon)
                do {
                    try connection.call(destination: Self.destination, path: Self.path, interface: Self.destination, member: method.name, arguments)
                    Issue.record("\(method.name) accepted \(arguments.map(\.signature).joined())")
                } catch {
                    #expect(error.name == DBusError.invalidArgs, "\(method.name)(\(arguments.map(\.signature).joined())): \(error)")
                    #expect(error.message.contains("\(method.name) takes (\(method.signature))"), "\(error.message)")
                }
                #expect(try cpuSeconds(of: service.daemon) - started < 1, "\(method.name) took the daemon a second of CPU or more")
            }
        }
        for property in properties {
            #expect(throws: DBusError.self, "\(property)") {
                try connection.call(destination: Self.destination, path: Self.path, interface: "org.freedesktop.DBus.Properties", member: "Set",
                                    [.string(Self.destination), .string(property), .variant(.array(elementSignature: "s", []))])
            }
        }
        #expect(service.daemon.isRunning)
        #expect(try service.status()["status"] as? String == "active")
        try expectDescriptors(of: service.daemon, toReturnTo: before, "no descriptor left open in the daemon")
    }

    /// A thousand descriptors, or seventeen, never reach the daemon: the bus drops a caller whose
    /// message carries more than 16, and the call ends with an error, not a hang. Sixteen are each
    /// read and refused by name, and every one is closed again.
    @Test func tooManyDescriptorsAreRefusedAndClosed() throws {
        let service = try Service.enabled(in: directory, trusting: try P256PrivateKey())
        let before = try settledDescriptors(of: service.daemon)
        let file = directory.file("empty.zip")
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        let descriptors = (0..<1_000).map { _ in open(file, O_RDONLY) }
        defer { descriptors.forEach { close($0) } }
        let sixteen = try detect(service, Array(descriptors.prefix(16)))
        #expect(sixteen.name == "org.enagent.ExposureNotification1.Error.KeyFileRejected", "\(sixteen)")
        #expect(sixteen.message.hasPrefix("key file 1: not a zip archive"))
        for count in [17, 1_000] {
            let answer = try detect(service, Array(descriptors.prefix(count)))
            #expect(answer.name == "org.freedesktop.DBus.Error.Disconnected", "\(count): \(answer)")
            #expect(answer.seconds < 5)
        }
        #expect(service.daemon.isRunning)
        #expect(try service.status()["status"] as? String == "active")
        try expectDescriptors(of: service.daemon, toReturnTo: before, "every descriptor it received is closed")

        let many = (1...20).map { directory.file("many-\($0).zip") }
        #expect(many.allSatisfy { FileManager.default.createFile(atPath: $0, contents: Data()) })
        let batched = try Command.enctl(["detect"] + many, environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
        #expect(batched.standardError.contains("\(many[0]): not a zip archive"), "enctl hands 20 files over in batches: \(batched.standardError)")
    }

    /// A caller flooding the daemon with calls it never waits for: another caller's Status is
    /// answered meanwhile, and the daemon is the same afterwards.
    @Test func aFloodOfCallsDoesNotStopOtherCallers() throws {
        let service = try Service.enabled(in: directory, trusting: try P256PrivateKey())
        let before = try settledDescriptors(of: service.daemon)
        let flooder = try DBusConnection(address: service.bus.address)
        let flood = Thread {
            for index in 0..<20_000 {
                try? flooder.callWithoutReply(destination: Self.destination, path: Self.path, interface: "org.freedesktop.DBus.Properties",
                                              member: index % 2 == 0 ? "GetAll" : "Get", index % 2 == 0 ? [.string(Self.destination)] : [.string(Self.destination), .string("Nothing")])
            }
        }
        flood.start()
        var slowest = 0.0
        for _ in 0..<50 {
            slowest = max(slowest, try statusLatency(service))
            Thread.sleep(forTimeInterval: 0.02)
        }
        print("hostile flood: slowest Status answer \(slowest) s")
        #expect(slowest < 1, "Status took \(slowest) s during the flood")
        #expect(service.daemon.isRunning)
        #expect(try service.status()["status"] as? String == "active")
        try expectDescriptors(of: service.daemon, toReturnTo: before)
    }
}

extension HostileCallerTests {
    /// Key files of one call are held in memory together: their sum is bounded too (128 MiB), by name.
    @Test func theKeyFilesOfOneCallAreBoundedTogether() throws {
        let service = try Service.enabled(in: directory, trusting: try P256PrivateKey())
        let files = (1...3).map { directory.file("sparse-\($0).zip") }
        let descriptors = files.map { path in
            let descriptor = open(path, O_RDWR | O_CREAT, 0o600)
            ftruncate(descriptor, 60 << 20)  // sparse: 60 MiB that take no disk
            return descriptor
        }
        defer { descriptors.forEach { close($0) } }
        let answer = try detect(service, descriptors)
        #expect(answer.name == "org.enagent.ExposureNotification1.Error.KeyFileRejected", "\(answer)")
        #expect(answer.message == "key file 3: \(60 << 20) bytes, more than the 128 MiB all key files of one call may have together", "\(answer)")
        #expect(service.daemon.isRunning)
    }
}
