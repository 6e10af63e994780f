import ENFuzzTargets

/// libFuzzer's entry point: one input, to fuzzSightings (Sources/ENFuzzTargets).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzSightings(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

@main enum FuzzSightings {
    static func main() { FuzzerDriver.main(testOneInput) }
}
