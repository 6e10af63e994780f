import CENLibFuzzer
import Foundation

/// The `main` of every fuzzer executable (Fuzz/<Name>/).
///
/// Built by `make fuzz` (scripts/fuzz.sh, which passes `-DFUZZING` and links libFuzzer's
/// runtime without its `main`), it hands the command line to libFuzzer's driver. In an ordinary
/// build it replays inputs instead, with the Swift runtime's own crash report:
/// `FuzzKeyExport FILE|DIRECTORY...` runs every file given, or found under a directory, once.
public enum FuzzerDriver {
    /// libFuzzer's callback type: one input, always answered 0.
    public typealias TestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

    public static func main(_ testOneInput: TestOneInput) -> Never {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        target = testOneInput
        exit(LLVMFuzzerRunDriver(&argc, &argv, timedTarget))
        #else
        let paths = CommandLine.arguments.dropFirst().filter { !$0.hasPrefix("-") }
        guard !paths.isEmpty else {
            FileHandle.standardError.write(Data("usage: \(CommandLine.arguments[0]) FILE|DIRECTORY...\n(built without -DFUZZING: replays inputs; make fuzz builds the fuzzer)\n".utf8))
            exit(64)
        }
        var count = 0
        for file in paths.flatMap(inputFiles) {
            guard let data = FileManager.default.contents(atPath: file) else {
                FileHandle.standardError.write(Data("\(file): cannot read\n".utf8))
                exit(1)
            }
            print("running \(file) (\(data.count) bytes)")
            _ = data.withUnsafeBytes { testOneInput($0.bindMemory(to: UInt8.self).baseAddress, $0.count) }
            count += 1
        }
        print("\(count) inputs ran without a crash")
        exit(0)
        #endif
    }

    #if FUZZING
    /// The processor time one input may take before it counts as a hang. libFuzzer's own
    /// `-timeout` counts wall-clock seconds, which a loaded machine stretches (`make test` fuzzes
    /// niced beside the lab's emulator), so scripts/fuzz.sh gives that a margin and this measures
    /// what the input itself costs.
    static let processorSecondsPerInput = 1.0

    /// The executable's target, which `timedTarget` runs: a C callback captures nothing.
    nonisolated(unsafe) private static var target: TestOneInput?

    private static let timedTarget: TestOneInput = { data, size in
        let start = threadProcessorSeconds()
        _ = FuzzerDriver.target!(data, size)
        let used = threadProcessorSeconds() - start
        precondition(used <= processorSecondsPerInput,
                     "the input took \(used) s of processor time, over \(processorSecondsPerInput) s: a hang")
        return 0
    }

    private static func threadProcessorSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
    #endif

    /// The path itself, or the regular files under it (sorted) when it is a directory.
    public static func inputFiles(_ path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return [path] }
        let names = FileManager.default.subpaths(atPath: path) ?? []
        return names.sorted().map { path + "/" + $0 }.filter { file in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
    }
}
