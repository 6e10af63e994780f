import ENDiagnosis
import ENFuzzTargets
import Foundation
import Testing

/// Replays every committed fuzzing input (Fuzz/Corpus/<Name>/, seeds and the inputs of fixed
/// crashes alike) through the fuzz targets, without sanitizers, so that a fixed crash stays fixed.
///
/// No time bound here: this also runs in debug builds, under qemu and beside the lab, where a
/// wall-clock limit measures the machine's load. A slow input is the fuzz step's finding
/// (scripts/fuzz.sh replays this corpus with -timeout=1 and calls anything slower a hang).
struct FuzzCorpusTests {
    /// The fuzz targets by corpus directory name.
    static let targets: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
        "KeyExport": fuzzKeyExport,
        "HealthCard": fuzzHealthCard,
        "Sightings": fuzzSightings,
        "AgentConfiguration": fuzzAgentConfiguration,
        "ExposureConfiguration": fuzzExposureConfiguration,
        "Advertisement": fuzzAdvertisement,
    ]

    /// Fuzz/Corpus, found from this file (Fuzz/ is no resource of the test target).
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/Corpus").standardizedFileURL.path

    static func files(_ target: String) -> [String] {
        FuzzerDriver.inputFiles(corpus + "/" + target).filter { !$0.hasSuffix("/README.md") }
    }

    @Test func everyCorpusDirectoryHasATarget() throws {
        let directories = try FileManager.default.contentsOfDirectory(atPath: Self.corpus).filter { !$0.hasPrefix(".") && $0 != "README.md" }
        #expect(Set(directories) == Set(Self.targets.keys))
    }

    @Test(arguments: targets.keys.sorted())
    func everyCommittedInputIsHandled(target: String) throws {
        let files = Self.files(target)
        #expect(!files.isEmpty, "no inputs in Fuzz/Corpus/\(target)")
        let fuzz = try #require(Self.targets[target])
        for file in files {
            let data = try Data(contentsOf: URL(fileURLWithPath: file))
            data.withUnsafeBytes { fuzz($0) }
        }
    }

    /// The health card target signs payloads itself to get past the signature: that must work,
    /// or half of that fuzzer would only ever see "bad signature".
    @Test func theHealthCardTargetsOwnSignaturesVerify() throws {
        let payload = try Data(contentsOf: URL(fileURLWithPath: Self.corpus + "/HealthCard/example-00-c-jws-payload-minified.json"))
        let (jws, verifier) = try #require(selfSignedHealthCard(payload: Array(payload)))
        #expect(try verifier.verify(jws, now: 1_763_700_000).issuer == "https://spec.smarthealth.cards/examples/issuer")
    }
}

/// What the fuzzers found, as unit tests (the inputs are in Fuzz/Corpus too).
struct FuzzFindingTests {
    /// FuzzHealthCard, Fuzz/Corpus/HealthCard/crash-payload-nbf-beyond-int64.json: a signed card
    /// whose nbf (or exp) is past Int64 trapped converting it in `HealthCardVerifier.verify`.
    @Test(arguments: [
        (#""nbf":168745092233720368547758070"#, "nbf"), (#""nbf":1e300"#, "nbf"), (#""nbf":-1e300"#, "nbf"),
        (#""nbf":1687450764,"exp":1e300"#, "exp"), (#""nbf":1687450764,"exp":9223372036854775808"#, "exp"),
    ])
    func aCardWithATimeBeyondInt64IsRefusedNotATrap(times: String, key: String) throws {
        let (jws, verifier) = try #require(selfSignedHealthCard(payload: Array(#"{"iss":"https://issuer.example",\#(times)}"#.utf8)))
        #expect(throws: HealthCardError.badPayload("\"\(key)\" is not a time in unix seconds")) { try verifier.verify(jws, now: 1_763_700_000) }
    }

    /// Fractions of a second are dropped as before.
    @Test func aFractionalNotBeforeStillCounts() throws {
        let (jws, verifier) = try #require(selfSignedHealthCard(payload: Array(#"{"iss":"https://issuer.example","nbf":1687450764.75,"exp":1900000000.5}"#.utf8)))
        let card = try verifier.verify(jws, now: 1_763_700_000)
        #expect(card.notBefore == 1_687_450_764 && card.expires == 1_900_000_000)
    }
}
