// swift-tools-version: 6.0
import PackageDescription

/// A system library target: a module map plus a shim header over a Debian -dev package.
/// The `CEN` prefix keeps the names clear of other packages' C modules (a `CZlib`, say).
func systemLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([apt])])
}

let package = Package(
    name: "enagent",
    products: [
        .executable(name: "enagentd", targets: ["enagentd"]),
        .executable(name: "enctl", targets: ["enctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // Layer 1: C libraries.
        systemLibrary("CENOpenSSL", pkgConfig: "libcrypto", apt: "libssl-dev"),
        systemLibrary("CENDBus", pkgConfig: "dbus-1", apt: "libdbus-1-dev"),
        systemLibrary("CENSystemd", pkgConfig: "libsystemd", apt: "libsystemd-dev"),
        systemLibrary("CENZlib", pkgConfig: "zlib", apt: "zlib1g-dev"),
        systemLibrary("CENBluetooth", pkgConfig: "bluez", apt: "libbluetooth-dev"),
        systemLibrary("CENCurl", pkgConfig: "libcurl", apt: "libcurl4-openssl-dev"),
        systemLibrary("CENSQLite", pkgConfig: "sqlite3", apt: "libsqlite3-dev"),
        // adjtimex(2) and prctl(2), from libc: no library to link.
        .systemLibrary(name: "CENKernel"),

        // Layer 2: protocol core (time, keys, crypto, metadata). No I/O.
        .target(name: "ENCore", dependencies: ["CENOpenSSL"]),

        // Layer 3: zip archives and raw DEFLATE from untrusted sources (key files, health cards).
        .target(name: "ENArchive", dependencies: ["CENZlib"]),
        // Layer 3: proofs of a positive diagnosis (SMART Health Cards).
        .target(name: "ENDiagnosis", dependencies: ["ENCore", "ENArchive"]),
        // Layer 3: diagnosis key export files: reading, verifying, matching. Its own protobuf wire
        // code; Proto/export.proto documents the format.
        .target(name: "ENKeyFiles", dependencies: ["ENCore", "ENArchive"], exclude: ["Proto"]),
        // Layer 3: writing key export files (enctl, enbench, tests): the protobuf wire writer, and
        // the archive through ENArchive's ZipWriter.
        .target(name: "ENKeyFileWriter", dependencies: ["ENCore", "ENKeyFiles", "ENArchive"]),

        // Layer 4: a typed layer on sqlite3's C API (connections, statements, transactions), and
        // the agent's database on it.
        .target(name: "ENSQLite", dependencies: ["CENSQLite"]),
        .target(name: "ENStore", dependencies: ["ENCore", "ENSQLite"]),

        // Layer 5: D-Bus over libdbus, and the BlueZ client on it.
        .target(name: "ENBus", dependencies: ["ENCore", "CENDBus"]),
        .target(name: "ENBlueZ", dependencies: ["ENCore", "ENBus", "CENBluetooth"]),
        // Layer 5: the service manager's interfaces: sd_notify, the watchdog, logging to the journal.
        .target(name: "ENSystemd", dependencies: ["CENSystemd"]),
        // Layer 5: enagentd's D-Bus contract, which the daemon serves and enctl calls.
        .target(name: "ENAPI", dependencies: ["ENCore", "ENBus"]),

        // Layer 6: the agent's logic against injected clock and store.
        .target(name: "ENAgent", dependencies: [
            "ENCore", "ENKeyFiles", "ENStore", "ENSystemd",
        ]),

        // Layer 6: the radio's decisions (instances, stand-ins, stepping aside, scans, recovery)
        // against the kernel's management interface and bluetoothd's adapters, both injected.
        .target(name: "ENRadio", dependencies: ["ENCore", "ENStore", "ENAgent", "ENBus", "ENBlueZ", "ENSystemd"]),

        // Layer 7: running the programs as a service manager would, for the tests and enbench:
        // child processes, a private dbus-daemon, a notification socket, temporary directories.
        .target(name: "ENHarness"),

        // Layer 7: executables.
        .executableTarget(name: "enagentd", dependencies: [
            "ENCore", "ENKeyFiles", "ENStore", "ENAgent", "ENRadio", "ENBus", "ENAPI", "ENBlueZ", "ENSystemd", "CENKernel",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .executableTarget(name: "enctl", dependencies: [
            "ENCore", "ENKeyFiles", "ENKeyFileWriter", "ENStore", "ENBus", "ENAPI", "ENDiagnosis", "ENSystemd", "CENCurl",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .executableTarget(name: "enbench", dependencies: ["ENCore", "ENStore", "ENAgent", "ENKeyFiles", "ENKeyFileWriter", "ENHarness", "CENOpenSSL"]),

        .target(name: "TestSupport", dependencies: ["ENCore", "ENArchive", "ENAgent", "ENSystemd", "ENHarness"], path: "Tests/TestSupport"),
        .testTarget(name: "CModuleTests", dependencies: [
            "CENOpenSSL", "CENDBus", "CENSystemd", "CENZlib", "CENBluetooth", "CENCurl", "CENKernel", "CENSQLite",
        ]),
        .testTarget(name: "ENCoreTests", dependencies: ["ENCore", "TestSupport"], resources: [.copy("Fixtures")]),
        .testTarget(name: "ENDiagnosisTests", dependencies: ["ENDiagnosis", "ENArchive", "TestSupport"], resources: [.copy("Fixtures")]),
        .testTarget(name: "ENKeyFilesTests", dependencies: ["ENKeyFiles", "ENKeyFileWriter", "ENArchive", "TestSupport"], resources: [.copy("Fixtures")]),
        .testTarget(name: "ENBusTests", dependencies: ["ENBus", "TestSupport"]),
        .testTarget(name: "ENBlueZTests", dependencies: ["ENBlueZ", "ENBus"]),
        .testTarget(name: "ENAPITests", dependencies: ["ENAPI", "TestSupport"]),
        .testTarget(name: "ENSystemdTests", dependencies: ["ENSystemd", "TestSupport"]),
        .testTarget(name: "ENSQLiteTests", dependencies: ["ENSQLite", "TestSupport"]),
        .testTarget(name: "ENStoreTests", dependencies: ["ENStore", "ENSQLite", "TestSupport"], resources: [.copy("Fixtures")]),
        .testTarget(name: "ENRadioTests", dependencies: ["ENRadio", "ENAgent", "ENBlueZ", "ENBus", "ENCore", "ENStore", "TestSupport"]),
        .testTarget(name: "ENAgentTests", dependencies: ["ENAgent", "ENKeyFileWriter", "TestSupport", "ENSystemd"]),
        .testTarget(name: "EnagentdTests", dependencies: ["enagentd", "ENAgent", "ENRadio", "ENAPI", "ENCore", "ENKeyFiles", "ENKeyFileWriter", "ENStore", "TestSupport", "ENSystemd"]),
        .testTarget(name: "CommandTests", dependencies: ["ENStore", "ENKeyFiles", "ENKeyFileWriter", "ENBus", "ENAgent", "TestSupport", "CENKernel"],
                    exclude: ["Servers"]),
        // Fuzzers (make fuzz)
        // One libFuzzer executable per parser strangers can feed, and their corpus replayed as a test (Fuzz/README.md).
        .systemLibrary(name: "CENLibFuzzer", path: "Fuzz/LibFuzzer"),
        .target(name: "ENFuzzTargets", dependencies: ["ENCore", "ENArchive", "ENKeyFiles", "ENDiagnosis", "ENAgent", "CENLibFuzzer"]),
        .executableTarget(name: "FuzzKeyExport", dependencies: ["ENFuzzTargets"], path: "Fuzz/KeyExport"),
        .executableTarget(name: "FuzzHealthCard", dependencies: ["ENFuzzTargets"], path: "Fuzz/HealthCard"),
        .executableTarget(name: "FuzzSightings", dependencies: ["ENFuzzTargets"], path: "Fuzz/Sightings"),
        .executableTarget(name: "FuzzAgentConfiguration", dependencies: ["ENFuzzTargets"], path: "Fuzz/AgentConfiguration"),
        .executableTarget(name: "FuzzExposureConfiguration", dependencies: ["ENFuzzTargets"], path: "Fuzz/ExposureConfiguration"),
        .executableTarget(name: "FuzzAdvertisement", dependencies: ["ENFuzzTargets"], path: "Fuzz/Advertisement"),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["ENFuzzTargets", "ENDiagnosis"]),
    ],
    swiftLanguageModes: [.v6]
)
