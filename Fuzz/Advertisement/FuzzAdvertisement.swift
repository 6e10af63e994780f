import ENFuzzTargets

/// libFuzzer's entry point: one input, to fuzzAdvertisement (Sources/ENFuzzTargets).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzAdvertisement(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

@main enum FuzzAdvertisement {
    static func main() { FuzzerDriver.main(testOneInput) }
}
