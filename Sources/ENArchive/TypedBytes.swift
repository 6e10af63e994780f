import FoundationEssentials

/// The bytes of an array or of `Data` in place, keeping a body's typed error (`withUnsafeBytes`
/// only rethrows, which erases it).
extension Array where Element == UInt8 {
    package func withBytes<Value, Failure: Error>(_ body: (UnsafeRawBufferPointer) throws(Failure) -> Value) throws(Failure) -> Value {
        try withUnsafeBytes { bytes in Result { () throws(Failure) in try body(bytes) } }.get()
    }

    package mutating func withMutableBytes<Value, Failure: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> Value
    ) throws(Failure) -> Value {
        try withUnsafeMutableBytes { bytes in Result { () throws(Failure) in try body(bytes) } }.get()
    }
}

extension Data {
    package func withBytes<Value, Failure: Error>(_ body: (UnsafeRawBufferPointer) throws(Failure) -> Value) throws(Failure) -> Value {
        try withUnsafeBytes { bytes in Result { () throws(Failure) in try body(bytes) } }.get()
    }
}
