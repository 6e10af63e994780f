@testable import enagentd
import Foundation
import Synchronization
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
}
