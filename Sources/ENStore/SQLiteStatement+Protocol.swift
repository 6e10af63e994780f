import ENCore
import ENSQLite

/// The protocol's fixed-size values, read from their blob columns (the schema's CHECKs hold
/// their lengths; a row that breaks one is refused, not cut or padded).
extension SQLiteStatement {
    func bytes16(_ index: Int32) throws(SQLiteError) -> Bytes16 {
        guard let blob = blob(index), blob.count == 16 else {
            throw .mismatch("column \(index) does not hold 16 bytes", sql: sql)
        }
        return Bytes16(blob)
    }

    func metadata(_ index: Int32) throws(SQLiteError) -> AssociatedEncryptedMetadata {
        guard let blob = blob(index), blob.count == 4 else {
            throw .mismatch("column \(index) does not hold 4 bytes", sql: sql)
        }
        return AssociatedEncryptedMetadata(rawValue: UInt32(bigEndian: blob.loadUnaligned(as: UInt32.self)))
    }

    /// An adapter's address from its integer column; NULL is unknown.
    func adapterAddress(_ index: Int32) throws(SQLiteError) -> BluetoothAddress? {
        guard !isNull(index) else { return nil }
        let value = int64(index)
        guard value >= 0, let address = BluetoothAddress(rawValue: UInt64(value)) else {
            throw .mismatch("column \(index) holds \(value), not a 48-bit adapter address", sql: sql)
        }
        return address
    }
}
