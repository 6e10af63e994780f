import Foundation
import Testing

@Suite struct KeysInspectCommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ENKeyFilesTests/Fixtures").path
    static let internalsKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE49JY6kekDgxj3Crm4y6kEHdfoKQFSNDM4mV9cgDb+e5nOAw0GeRoRThCu9/wX5wDT2QloFoOjl2pGZHI0f3C3w=="

    func inspect(_ arguments: String...) throws -> (status: Int32, report: [String: Any]?, stderr: String) {
        let result = try Command.enctl(["keys", "inspect"] + arguments + ["--json"])
        return (result.status, try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any], result.standardError)
    }

    @Test func reportsRegionKeyCountAndAVerifiedSignature() throws {
        let result = try inspect("\(Self.fixtures)/en-internals-sample.zip", "--public-key", Self.internalsKey)
        #expect(result.status == 0)
        #expect(result.report?["region"] as? String == "US")
        #expect(result.report?["keyCount"] as? Int == 140)
        #expect(result.report?["signature"] as? String == "verified")
        let server = try inspect("\(Self.fixtures)/en-server-example.zip", "--public-key", "\(Self.fixtures)/en-server-example.public.pem")
        #expect(server.status == 0 && server.report?["keyCount"] as? Int == 2 && server.report?["signature"] as? String == "verified")
    }

    @Test func aWrongKeyIsInvalidAndExitsNonZero() throws {
        let result = try inspect("\(Self.fixtures)/en-server-example.zip", "--public-key", Self.internalsKey)
        #expect(result.status == 1)
        #expect(result.report?["signature"] as? String == "invalid")
    }

    @Test func withoutAKeyTheStatusIsReportedAndTheExitIsZero() throws {
        let signed = try inspect("\(Self.fixtures)/legacy-signature-info-sample.zip")
        #expect(signed.status == 0 && signed.report?["signature"] as? String == "unknown-key" && signed.report?["keyCount"] as? Int == 110)
        let bare = try inspect("\(Self.fixtures)/en-internals-200-keys.export.bin")
        #expect(bare.report?["signature"] as? String == "unsigned" && bare.report?["keyCount"] as? Int == 200)
    }

    @Test func unreadableFilesAreClearErrors() throws {
        let missing = try inspect("/nonexistent/export.zip")
        #expect(missing.status == 64 && missing.stderr.contains("The value '/nonexistent/export.zip' is invalid for '<file>': no such file"), "\(missing.stderr)")
        let notAZip = try inspect("\(Self.fixtures)/en-server-example.keys.json")
        #expect(notAZip.status == 1 && notAZip.stderr.contains("not a zip archive"))
        let tooSmallLimit = try inspect("\(Self.fixtures)/en-internals-sample.zip", "--max-file-size", "0")
        #expect(tooSmallLimit.status == 64 && tooSmallLimit.stderr.contains("--max-file-size must be between 1 and 1024"))
    }
}
