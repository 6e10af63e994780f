import ENCore
import Testing

/// The status table: each row's line names its status first, as `enctl status` and systemd show it.
struct AgentStatusTests {
    let details = StatusDetails(radioOff: false, pauseEnd: 1_800_000_000, adapter: "hci1", configuredAdapter: nil, advertisingResumesAt: 1_800_000_600,
                                storePath: "/var/lib/enagent/enagent.db", storeReadError: "disk I/O error", storeRetrySeconds: 10)

    /// Paused's line says until when instead. (A closure in @Test's arguments crashes Swift 6.0.3's compiler.)
    static let statusesNamedFirst = AgentStatus.allCases.filter { $0 != .paused }
    static let statusesTheScanRunsThrough = AgentStatus.allCases.filter(\.entry.scansThrough)

    @Test(arguments: statusesNamedFirst)
    func everyLineStartsWithItsStatusName(status: AgentStatus) {
        #expect(status.line(details).hasPrefix(status.rawValue))
    }

    @Test func linesNameWhatTheyDependOn() {
        #expect(AgentStatus.paused.line(details) == "paused until 1800000000 (unix time)")
        #expect(AgentStatus.adapterConnectable.line(details).hasSuffix("(btmgmt --index 1 connectable off)"))
        #expect(AgentStatus.waitingForInterval.line(details)
            == "waiting-for-interval: scanning; advertising again at 1800000600 (unix time), when the clock is past every identifier already on the air")
        #expect(AgentStatus.noAdapter.line(details) == "no-adapter: waiting for an LE adapter")
    }

    /// Statuses that hold the advertisement back but not the scan say "scanning" in their line.
    @Test(arguments: statusesTheScanRunsThrough)
    func aProblemTheScanRunsThroughSaysItScans(status: AgentStatus) {
        #expect(status.runsAgent && status.line(details).contains("scanning"))
    }
}
