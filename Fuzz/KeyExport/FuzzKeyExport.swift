import ENFuzzTargets

/// libFuzzer's entry point: one input, to fuzzKeyExport (Sources/ENFuzzTargets).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzKeyExport(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

@main enum FuzzKeyExport {
    static func main() { FuzzerDriver.main(testOneInput) }
}
