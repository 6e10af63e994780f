import ENFuzzTargets

/// libFuzzer's entry point: one input, to fuzzAgentConfiguration (Sources/ENFuzzTargets).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzAgentConfiguration(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

@main enum FuzzAgentConfiguration {
    static func main() { FuzzerDriver.main(testOneInput) }
}
