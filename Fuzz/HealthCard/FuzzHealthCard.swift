import ENFuzzTargets

/// libFuzzer's entry point: one input, to fuzzHealthCard (Sources/ENFuzzTargets).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzHealthCard(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

@main enum FuzzHealthCard {
    static func main() { FuzzerDriver.main(testOneInput) }
}
