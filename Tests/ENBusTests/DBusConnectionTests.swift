import ENBus
import Foundation
import Synchronization
import TestSupport
import Testing

/// A thread-safe box the signal handlers write into, with a wait for the test.
final class Received<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    func append(_ value: Value) { values.withLock { $0.append(value) } }

    /// The values so far, after waiting up to `seconds` for at least `count` of them.
    func wait(for count: Int = 1, seconds: Double = 5) -> [Value] {
        let deadline = Date().addingTimeInterval(seconds)
        while values.withLock({ $0.count }) < count && Date() < deadline { usleep(5_000) }
        return values.withLock { $0 }
    }
}

/// A value shared with handlers on the dispatcher thread.
final class Locked<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    var current: Value {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

@Suite struct DBusConnectionTests {
    let bus: PrivateBus
    let server: DBusConnection
    let client: DBusConnection
    let name = Locked(DBusValue.string("initial"))
    /// Holds the queued method until the test lets it finish.
    let gate = DispatchSemaphore(value: 0)

    init() throws {
        bus = try PrivateBus()
        server = try DBusConnection(address: bus.address)
        client = try DBusConnection(address: bus.address)
        try server.requestName("org.enagent.Test")
        let name = self.name, gate = self.gate
        let object = ExportedObject(path: "/org/enagent/Test", interfaces: [
            DBusInterface("org.enagent.Test", methods: [
                DBusMethod("Echo", in: [DBusArgument("value", "v")], out: [DBusArgument("value", "v")]) { call in call.arguments },
                DBusMethod("Fail") { _ throws(DBusError) in throw DBusError(name: "org.enagent.Test.Error.Refused", message: "no, because") },
                DBusMethod("Sleep", in: [DBusArgument("milliseconds", "u")]) { call in
                    usleep(UInt32(call.arguments[0].integer ?? 0) * 1_000)
                    return []
                },
                DBusMethod("Queued", out: [DBusArgument("done", "b")], queue: DispatchQueue(label: "queued-method")) { _ in
                    gate.wait()
                    return [.boolean(true)]
                },
                DBusMethod("ReadFD", in: [DBusArgument("fd", "h")], out: [DBusArgument("contents", "s")]) { call in
                    guard case .unixFD(let descriptor) = call.arguments[0] else { return [] }
                    let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
                    return [.string(String(decoding: handle.readDataToEndOfFile(), as: UTF8.self))]
                },
            ], properties: [
                DBusProperty("Name", "s", get: { name.current }, set: { value in name.current = value }),
                DBusProperty("Version", "s", get: { .string("1.0") }),
            ], signals: [DBusSignal("Happened", [DBusArgument("what", "s")])]),
        ])
        try server.export(object)
    }

    func echo(_ value: DBusValue) throws -> DBusValue? {
        try client.call(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: "org.enagent.Test", member: "Echo", [.variant(value)]).first
    }

    /// A method with a queue runs there and replies later; the connection answers meanwhile.
    @Test func aQueuedMethodLeavesTheConnectionAnswering() throws {
        let reply = Received<Bool>()
        let other = try DBusConnection(address: bus.address)
        Thread.detachNewThread {
            let done = try? other.call(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: "org.enagent.Test", member: "Queued")
            reply.append(done?.first?.bool ?? false)
        }
        usleep(100_000)
        let version = try client.call(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: ExportedObject.propertiesInterface,
                                      member: "Get", [.string("org.enagent.Test"), .string("Version")], timeout: .seconds(5))
        #expect(version.first?.string == "1.0", "answered while the queued method waits")
        #expect(reply.wait(seconds: 0.1).isEmpty, "the queued method has not replied yet")
        gate.signal()
        #expect(reply.wait() == [true], "and its reply comes when it returns")
    }

    /// A call without a reply returns at once, however long the method takes, and arrives in order.
    @Test func aCallWithoutReplyArrivesAndDoesNotWait() throws {
        defer { gate.signal() }
        let started = ContinuousClock.now
        try client.callWithoutReply(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: "org.enagent.Test", member: "Queued")
        try client.callWithoutReply(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: ExportedObject.propertiesInterface,
                                    member: "Set", [.string("org.enagent.Test"), .string("Name"), .variant(.string("changed"))])
        #expect(ContinuousClock.now - started < .seconds(1), "neither call waited for its method")
        let name = try client.call(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: ExportedObject.propertiesInterface,
                                   member: "Get", [.string("org.enagent.Test"), .string("Name")], timeout: .seconds(5))
        #expect(name.first?.string == "changed", "the Set sent without a reply was delivered before the Get")
    }

    /// A call nobody waits for: its answer comes when the method returns; for a peer that leaves
    /// the bus without answering, the bus answers (what the radio's withdrawal from bluetoothd's
    /// discovery relies on to know that bluetoothd read it or is gone).
    @Test func aCallsAnswerComesWithoutAWait() throws {
        let answers = Received<String>()
        let forever = Duration.milliseconds(Int(Int32.max))
        let started = ContinuousClock.now
        client.call(try DBusMessage.methodCall(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: "org.enagent.Test", member: "Queued"),
                    timeout: forever) { error in answers.append(error?.name ?? "answered") }
        #expect(ContinuousClock.now - started < .seconds(1), "the call did not wait for its method")
        #expect(answers.wait(seconds: 0.2).isEmpty, "no answer while the method runs")
        gate.signal()
        #expect(answers.wait() == ["answered"])

        let leaving = try DBusConnection(address: bus.address), held = DispatchSemaphore(value: 0)
        try leaving.requestName("org.enagent.Leaving")
        try leaving.export(ExportedObject(path: "/org/enagent/Leaving", interfaces: [
            DBusInterface("org.enagent.Leaving", methods: [
                DBusMethod("Hold", queue: DispatchQueue(label: "held-method")) { _ in
                    held.wait()
                    return []
                },
            ]),
        ]))
        client.call(try DBusMessage.methodCall(destination: "org.enagent.Leaving", path: "/org/enagent/Leaving", interface: "org.enagent.Leaving", member: "Hold"),
                    timeout: forever) { error in answers.append(error?.name ?? "answered") }
        #expect(answers.wait(for: 2, seconds: 0.2).count == 1, "no answer while the peer holds the call")
        leaving.close()
        held.signal()
        #expect(answers.wait(for: 2) == ["answered", DBusError.noReply], "the bus answered for the peer that left")
    }

    @Test(arguments: [
        DBusValue.byte(7), .boolean(true), .boolean(false), .int16(-2), .uint16(65_000), .int32(-70_000), .uint32(4_000_000_000),
        .int64(-1 << 40), .uint64(1 << 63), .double(-0.25), .string("grüße ✓"), .objectPath("/org/bluez/hci0"), .signature("a{sv}"),
        .bytes([]), .bytes([1, 2, 3, 255]), .strings(["a", "", "c"]),
        .properties(["ServiceData": .properties(["fd6f": .bytes(Array(0..<20))]), "RSSI": .int16(-60), "UUIDs": .strings(["fd6f"])]),
        .structure([.string("x"), .array(elementSignature: "(ii)", [.structure([.int32(1), .int32(2)])])]),
        .dictionary(keySignature: "o", valueSignature: "a{sa{sv}}", []),
        .variant(.variant(.uint32(3))),
    ])
    func everyTypeRoundTrips(value: DBusValue) throws {
        #expect(try echo(value) == .variant(value))
    }

    @Test func invalidStringsAreErrorsNotCrashes() throws {
        #expect(throws: DBusError.self) { try echo(.objectPath("not a path")) }
        #expect(throws: DBusError.self) { try echo(.signature("a{")) }
        #expect(throws: DBusError.self) { try echo(.array(elementSignature: "s", [.int32(1)])) }
    }

    @Test func aFileDescriptorCrossesTheBus() throws {
        let pipe = Pipe()
        pipe.fileHandleForWriting.write(Data("through a pipe".utf8))
        try pipe.fileHandleForWriting.close()
        let reply = try client.call(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: "org.enagent.Test",
                                    member: "ReadFD", [.unixFD(pipe.fileHandleForReading.fileDescriptor)])
        #expect(reply == [.string("through a pipe")])
    }

    @Test func errorsArriveByName() throws {
        let call = { (member: String, arguments: [DBusValue]) throws in
            try self.client.call(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: "org.enagent.Test", member: member, arguments)
        }
        #expect(throws: DBusError(name: "org.enagent.Test.Error.Refused", message: "no, because")) { try call("Fail", []) }
        expectError({ try call("Missing", []) }) { ($0 as? DBusError)?.name == DBusError.unknownMethod }
        expectError({ try call("Echo", [.string("not a variant")]) }) { error in
            (error as? DBusError)?.name == DBusError.invalidArgs && "\(error)".contains("Echo takes (v), not (s)")
        }
        expectError({ try self.client.call(destination: "org.enagent.Test", path: "/nowhere", interface: "org.enagent.Test", member: "Echo") }) {
            ($0 as? DBusError)?.name == DBusError.unknownObject
        }
        expectError({ try self.client.call(destination: "org.enagent.Nobody", path: "/", interface: "x.y", member: "Z") }) {
            ($0 as? DBusError)?.name == "org.freedesktop.DBus.Error.ServiceUnknown"
        }
    }

    @Test func aCallTimesOut() throws {
        let start = Date()
        #expect { try self.client.call(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: "org.enagent.Test",
                                       member: "Sleep", [.uint32(1_500)], timeout: .milliseconds(200)) } throws: {
            ($0 as? DBusError)?.name == DBusError.noReply
        }
        #expect(Date().timeIntervalSince(start) < 1.4)
    }

    @Test func propertiesGetSetGetAllAndChangeSignals() throws {
        let changes = Received<[DBusValue]>()
        let subscription = try client.subscribe(MatchRule(path: "/org/enagent/Test", interface: ExportedObject.propertiesInterface,
                                                          member: "PropertiesChanged", arg0: "org.enagent.Test")) { changes.append($0.arguments) }
        defer { subscription.cancel() }
        let properties = { (member: String, arguments: [DBusValue]) throws in
            try self.client.call(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: ExportedObject.propertiesInterface,
                                 member: member, arguments)
        }
        #expect(try properties("Get", [.string("org.enagent.Test"), .string("Name")]) == [.variant(.string("initial"))])
        _ = try properties("Set", [.string("org.enagent.Test"), .string("Name"), .variant(.string("changed"))])
        #expect(try properties("GetAll", [.string("org.enagent.Test")]).first?.stringKeyed?["Name"]?.string == "changed")
        let signal = try #require(changes.wait().first)
        #expect(signal[0] == .string("org.enagent.Test"))
        #expect(signal[1].stringKeyed?["Name"]?.string == "changed")
        expectError({ try properties("Set", [.string("org.enagent.Test"), .string("Version"), .variant(.string("2"))]) }) {
            ($0 as? DBusError)?.name == DBusError.propertyReadOnly
        }
        expectError({ try properties("Set", [.string("org.enagent.Test"), .string("Name"), .variant(.int32(2))]) }) {
            ($0 as? DBusError)?.name == DBusError.invalidArgs
        }
        expectError({ try properties("Get", [.string("org.enagent.Test"), .string("Nope")]) }) {
            ($0 as? DBusError)?.name == DBusError.unknownProperty
        }
    }

    /// A getter that cannot answer makes Get and GetAll fail with its error, and is listed as
    /// invalidated (not given a value) in PropertiesChanged.
    @Test func aFailingGetterIsAnErrorNotAValue() throws {
        let unreadable = DBusError(name: "org.enagent.Test.Error.Unreadable", message: "the database cannot be read")
        let object = ExportedObject(path: "/org/enagent/Broken", interfaces: [DBusInterface("org.enagent.Broken", properties: [
            DBusProperty("Fine", "u", get: { .uint32(1) }),
            DBusProperty("Broken", "u", get: { () throws(DBusError) in throw unreadable }),
        ])])
        try server.export(object)
        let changes = Received<[DBusValue]>()
        let subscription = try client.subscribe(MatchRule(path: "/org/enagent/Broken", interface: ExportedObject.propertiesInterface,
                                                          member: "PropertiesChanged")) { changes.append($0.arguments) }
        defer { subscription.cancel() }
        let properties = { (member: String, arguments: [DBusValue]) throws in
            try self.client.call(destination: "org.enagent.Test", path: "/org/enagent/Broken", interface: ExportedObject.propertiesInterface,
                                 member: member, arguments)
        }
        #expect(try properties("Get", [.string("org.enagent.Broken"), .string("Fine")]) == [.variant(.uint32(1))])
        #expect(throws: unreadable) { try properties("Get", [.string("org.enagent.Broken"), .string("Broken")]) }
        #expect(throws: unreadable) { try properties("GetAll", [.string("org.enagent.Broken")]) }
        try object.propertiesChanged(interface: "org.enagent.Broken", ["Fine", "Broken"])
        let signal = try #require(changes.wait().first)
        #expect(signal[1].stringKeyed?.keys.sorted() == ["Fine"])
        #expect(signal[2] == .strings(["Broken"]))
    }

    /// PropertiesChanged carries only what changed since it last said: a property named again with
    /// the value announced before is left out, and nothing at all is sent when nothing changed.
    @Test func onlyChangedPropertiesAreAnnounced() throws {
        let values = Locked(["Status": "active", "Adapter": "hci0"])
        let object = ExportedObject(path: "/org/enagent/Changes", interfaces: [DBusInterface("org.enagent.Changes", properties: [
            DBusProperty("Status", "s", get: { .string(values.current["Status"]!) }),
            DBusProperty("Adapter", "s", get: { .string(values.current["Adapter"]!) }),
        ])])
        try server.export(object)
        let changes = Received<[DBusValue]>()
        let subscription = try client.subscribe(MatchRule(path: "/org/enagent/Changes", interface: ExportedObject.propertiesInterface,
                                                          member: "PropertiesChanged")) { changes.append($0.arguments) }
        defer { subscription.cancel() }
        try object.propertiesChanged(interface: "org.enagent.Changes", ["Status", "Adapter"])
        try object.propertiesChanged(interface: "org.enagent.Changes", ["Status", "Adapter"])
        values.current["Adapter"] = "hci1"
        try object.propertiesChanged(interface: "org.enagent.Changes", ["Status", "Adapter"])
        let signals = changes.wait(for: 2)
        Thread.sleep(forTimeInterval: 0.2)  // time for a third signal, which must not come
        #expect(changes.wait(for: 2).count == 2)
        #expect(signals.map { $0[1].stringKeyed?.keys.sorted() ?? [] } == [["Adapter", "Status"], ["Adapter"]])
        #expect(signals.last?[1].stringKeyed?["Adapter"] == .variant(.string("hci1")))
    }

    @Test func introspectionDescribesInterfacesAndChildren() throws {
        let xml = try client.call(destination: "org.enagent.Test", path: "/org/enagent/Test", interface: ExportedObject.introspectableInterface,
                                  member: "Introspect").first?.string ?? ""
        #expect(xml.contains(#"<interface name="org.enagent.Test">"#))
        #expect(xml.contains(#"<property name="Name" type="s" access="readwrite"/>"#))
        #expect(xml.contains(#"<arg name="value" type="v" direction="in"/>"#))
        let root = try client.call(destination: "org.enagent.Test", path: "/org/enagent", interface: ExportedObject.introspectableInterface,
                                   member: "Introspect").first?.string ?? ""
        #expect(root.contains(#"<node name="Test"/>"#))
    }

    @Test func signalsReachSubscribersByRuleAndStopOnCancel() throws {
        let happened = Received<String>()
        let subscription = try client.subscribe(MatchRule(interface: "org.enagent.Test", member: "Happened", arg0: "wanted")) { message in
            happened.append(message.arguments.first?.string ?? "")
        }
        try server.emit(path: "/org/enagent/Test", interface: "org.enagent.Test", member: "Happened", [.string("unwanted")])
        try server.emit(path: "/org/enagent/Test", interface: "org.enagent.Test", member: "Happened", [.string("wanted")])
        #expect(happened.wait() == ["wanted"])
        subscription.cancel()
        try server.emit(path: "/org/enagent/Test", interface: "org.enagent.Test", member: "Happened", [.string("wanted")])
        #expect(happened.wait(for: 2, seconds: 0.5) == ["wanted"])
    }

    /// The last reference to a connection can go in one of its own handlers, on its dispatcher
    /// thread, which cannot wait for itself to end: the connection still closes and leaves the bus.
    @Test func aConnectionReleasedInItsOwnHandlerLeavesTheBus() throws {
        let heard = DispatchSemaphore(value: 0)
        let uniqueName: String
        do {
            let doomed = try DBusConnection(address: bus.address)
            uniqueName = doomed.uniqueName
            let holder = Locked<DBusConnection?>(doomed)
            _ = try doomed.subscribe(MatchRule(interface: "org.enagent.Test", member: "Happened")) { _ in
                holder.current = nil  // the last reference
                heard.signal()
            }
        }
        try server.emit(path: "/org/enagent/Test", interface: "org.enagent.Test", member: "Happened", [.string("now")])
        #expect(heard.wait(timeout: .now() + 5) == .success)
        let deadline = ContinuousClock.now + .seconds(5)
        func hasOwner() throws -> Bool {
            try client.callBus("NameHasOwner", [.string(uniqueName)]).first?.bool ?? true
        }
        while try hasOwner() && ContinuousClock.now < deadline { usleep(10_000) }
        #expect(try !hasOwner(), "the connection closed")
    }

    @Test func nameOwnerChangesAreFollowed() throws {
        let owners = Received<[String]>()
        let subscription = try client.subscribe(MatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                                          member: "NameOwnerChanged", arg0: "org.enagent.Other")) { message in
            owners.append(message.arguments.compactMap(\.string))
        }
        defer { subscription.cancel() }
        let other = try DBusConnection(address: bus.address)
        try other.requestName("org.enagent.Other")
        expectError({ try DBusConnection(address: bus.address).requestName("org.enagent.Other") }) { "\($0)".contains("already owned") }
        let unique = other.uniqueName
        other.close()
        let changes = owners.wait(for: 2)
        #expect(changes.count == 2)
        #expect(changes.first == ["org.enagent.Other", "", unique])
        #expect(changes.last == ["org.enagent.Other", unique, ""])
    }
}
