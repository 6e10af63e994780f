import ENAPI
import ENCore
import ENBus
import ENStore
@testable import enagentd
import Foundation
import Synchronization
import TestSupport
import Testing

/// Verdicts taken on several threads at once are each the caller's own: the lookups used to share
/// getpwuid's and getgrnam's static buffers, so one caller could be judged by another's account.
@Suite struct CallerAuthorisationTests {
    /// Debian's own accounts: daemon (uid 1) whose primary group is daemon, bin (uid 2) in bin only.
    static let member: uid_t = 1, outsider: uid_t = 2, group = "daemon"

    @Test func eachVerdictIsTheCallersOwnWhileOthersAreJudged() throws {
        try #require(getpwuid(Self.member) != nil && getpwuid(Self.outsider) != nil, "Debian's accounts daemon and bin")
        #expect(CallerAuthorisation.mayControl(uid: Self.member, group: Self.group))
        #expect(!CallerAuthorisation.mayControl(uid: Self.outsider, group: Self.group))
        #expect(CallerAuthorisation.mayControl(uid: 0, group: Self.group), "root")
        #expect(!CallerAuthorisation.mayControl(uid: 4_000_000, group: Self.group), "no such user")
        #expect(!CallerAuthorisation.mayControl(uid: Self.member, group: "no-such-group"))

        let wrong = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 4) { lane in
            let (uid, expected) = lane.isMultiple(of: 2) ? (Self.member, true) : (Self.outsider, false)
            var mistakes = 0
            for _ in 0..<2_500 where CallerAuthorisation.mayControl(uid: uid, group: Self.group) != expected { mistakes += 1 }
            wrong.withLock { $0 += mistakes }
        }
        #expect(wrong.withLock { $0 } == 0, "10 000 verdicts on four threads, each for its own caller")
    }

    /// A privileged call whose caller is being judged (the bus asked for its uid) holds up no
    /// other call: judging runs on the control queue, not on the connection's thread.
    @Test func aCallerBeingJudgedHoldsUpNoOtherCall() throws {
        typealias API = ExposureNotificationAPI
        let directory = TemporaryDirectory(), bus = try PrivateBus()
        let judging = DispatchSemaphore(value: 0), verdict = DispatchSemaphore(value: 0), replied = DispatchSemaphore(value: 0)
        let service = try ServiceHandlerTests.service(store: try AgentStore(path: directory.file("enagent.db")), trusting: try P256PrivateKey(),
                                                      log: LogCapture()) { _ in
            judging.signal()
            verdict.wait()
        }
        let server = try DBusConnection(address: bus.address), client = try DBusConnection(address: bus.address)
        try server.export(service.object())
        let privilegedCall = Mutex<Result<[DBusValue], DBusError>?>(nil)
        DispatchQueue.global().async {
            let result = Result { () throws(DBusError) in
                try client.call(destination: server.uniqueName, path: API.path, interface: API.interface, member: API.Methods.getTestResults.name)
            }
            privilegedCall.withLock { $0 = result }
            replied.signal()
        }
        #expect(judging.wait(timeout: .now() + 10) == .success, "the privileged call reached its check")
        let version = Result { () throws(DBusError) in
            try client.call(destination: server.uniqueName, path: API.path, interface: ExportedObject.propertiesInterface, member: "Get",
                            [.string(API.interface), .string(AgentProperties().$version.name)], timeout: .seconds(2))
        }
        verdict.signal()
        let property = version.map { $0 == [.variant(.string(ExposureNotificationAPI.packageVersion))] }
        #expect(property == .success(true), "answered while a caller is being judged")
        #expect(replied.wait(timeout: .now() + 10) == .success)
        let judged = privilegedCall.withLock { $0 }.map { $0.map { _ in true } }
        #expect(judged == .success(true), "the judged call is answered after its verdict")
    }
}
