import ENAgent
@testable import enagentd
import Testing

/// The pause between scans leaves more than the 25.5 s within which Google's matching takes
/// sightings for one scan, on the agent's clock: a scan every 20 s would weigh a 20-minute
/// encounter as a phone's single scan.
@Suite struct ScanScheduleTests {
    func settings(_ arguments: [String], timeScale: Int = 1) throws -> RadioSettings {
        try RadioSettings(options: RadioOptions.parse(arguments), file: AgentConfiguration(), kernelRelease: "6.1.0-56-amd64", timeScale: timeScale)
    }

    @Test func scansCloserThanGooglesOneScanAreRefused() throws {
        #expect(try settings([]).schedule == .standard)
        #expect(try settings(["--scan-seconds", "4", "--scan-interval-seconds", "30"]).schedule.scanIntervalSeconds == 30)
        for (scan, interval) in [("4", "20"), ("4", "29"), ("10", "10")] {
            #expect {
                try settings(["--scan-seconds", scan, "--scan-interval-seconds", interval])
            } throws: { error in
                "\(error)".contains("scan-interval-seconds must be at least scan-seconds + 26 (here \(interval) and \(scan))")
            }
        }
    }

    /// On the lab's clock, 120 times faster, 3 s of every 4 leave two agent minutes between scans.
    @Test func thePauseIsTheAgentsClocks() throws {
        #expect(try settings(["--scan-seconds", "3", "--scan-interval-seconds", "4"], timeScale: 120).schedule.scanSeconds == 3)
        #expect(throws: (any Error).self) { try settings(["--scan-seconds", "3", "--scan-interval-seconds", "4"]) }
    }
}
