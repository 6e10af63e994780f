import Foundation
import Testing

@Suite struct DeriveCommandTests {
    let tek = "75c734c6dd1a782de7a965da5eb93125"

    @Test func jsonMatchesAllOfficialVectors() throws {
        let vectors = try Command.officialVectors()
        let intervals = vectors["intervals"] as! [[String: Any]]
        let result = try Command.enctl("derive", "--tek", tek.uppercased(), "--interval", "2642976", "--count", "144",
                                   "--metadata", vectors["metadata"] as! String, "--json")
        #expect(result.status == 0)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [[String: Any]])
        #expect(rows.count == 144)
        for (row, expected) in zip(rows, intervals) {
            #expect(row["interval"] as? Int == expected["en_interval_number"] as? Int)
            #expect(row["rpi"] as? String == expected["rpi"] as? String)
            #expect(row["aem"] as? String == expected["aem"] as? String)
        }
    }

    @Test func withoutMetadataThereIsNoAEM() throws {
        let result = try Command.enctl("derive", "--tek", tek, "--interval", "2642977", "--json")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows[0]["rpi"] as? String == "3c9a1de5dd6b02afa7fded7b570b3e56")
        #expect(rows[0]["aem"] == nil)
    }

    @Test func tableShowsIntervalStartRPIAndAEM() throws {
        let result = try Command.enctl("derive", "--tek", tek, "--interval", "2642976", "--count", "2", "--metadata", "40080000")
        #expect(result.status == 0)
        let lines = result.standardOutput.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("INTERVAL"))
        #expect(lines[1].split(separator: " ", omittingEmptySubsequences: true)
                == ["2642976", "2020-04-02T00:00:00", "8be6cd371c5c891604bfbe49df845096", "72033874"])
    }

    @Test(arguments: [
        (["--tek", "75c7", "--interval", "1"], "expected 16 bytes"),
        (["--tek", "75c734c6dd1a782de7a965da5eb9312g", "--interval", "1"], "'g' is not a hexadecimal digit"),
        (["--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "-3"], "whole number from 0 to 4294967295"),
        (["--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "4294967296"], "whole number from 0 to 4294967295"),
        (["--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "4294967295", "--count", "2"], "run past the last EN interval number"),
        (["--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "1", "--count", "0"], "--count must be between 1"),
        (["--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "1", "--metadata", "400800"], "expected 4 bytes"),
        (["--interval", "1"], "Missing expected argument '--tek <hex>'"),
    ])
    func badInputIsAClearErrorOnStandardError(arguments: [String], message: String) throws {
        let result = try Command.enctl(["derive"] + arguments)
        #expect(result.status != 0)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError.contains(message), "stderr: \(result.standardError)")
    }
}
