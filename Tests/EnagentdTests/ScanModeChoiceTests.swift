import ENAgent
import ENRadio
@testable import enagentd
import Testing

/// passive-scan forces a mode either way; unset, the kernel decides, and the journal says why.
@Suite struct ScanModeChoiceTests {
    static let fixed = "6.12.117+deb13-amd64", unfixed = "6.1.0-56-amd64"

    func settings(_ arguments: [String], file: String = "", kernel: String) throws -> RadioSettings {
        try RadioSettings(options: RadioOptions.parse(arguments), file: AgentConfiguration(text: file, path: "enagent.conf"), kernelRelease: kernel)
    }

    @Test func unsetTheKernelDecides() throws {
        let passive = try settings([], kernel: Self.fixed).scan
        #expect(passive.mode == .passive)
        #expect(passive.description == "scanning passively (kernel 6.12.117+deb13-amd64 has the advertisement monitor fixes)")
        let active = try settings([], kernel: Self.unfixed).scan
        #expect(active.mode == .active)
        #expect(active.description.hasPrefix("scanning actively: kernel 6.1.0-56-amd64 is not known to have the advertisement monitor fixes"))
    }

    @Test func theFileForcesEitherMode() throws {
        #expect(try settings([], file: "passive-scan = yes\n", kernel: Self.unfixed).scan.mode == .passive)
        #expect(try settings([], file: "passive-scan = no\n", kernel: Self.fixed).scan.mode == .active)
    }

    @Test func theCommandLineOverridesTheFile() throws {
        #expect(try settings(["--passive-scan"], file: "passive-scan = no\n", kernel: Self.unfixed).scan.mode == .passive)
        #expect(try settings(["--no-passive-scan"], file: "passive-scan = yes\n", kernel: Self.fixed).scan.mode == .active)
    }
}
