import ENFuzzTargets

/// libFuzzer's entry point: one input, to fuzzExposureConfiguration (Sources/ENFuzzTargets).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzExposureConfiguration(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

@main enum FuzzExposureConfiguration {
    static func main() { FuzzerDriver.main(testOneInput) }
}
