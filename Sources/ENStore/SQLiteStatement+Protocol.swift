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

/// A sighting's receptions after its first, as the sighting table stores them (schema v12,
/// `later_receptions`): two bytes each, the seconds after the first and the RSSI as a signed byte
/// (`Sighting.rssiNotAvailable` for none); NULL when there are none.
enum LaterReceptions {
    static let size = 2

    /// The column's value for `record`.
    static func column(of record: SightingRecord) -> [UInt8]? {
        guard record.receptions.count > 1 else { return nil }
        return record.receptions.dropFirst().flatMap { reception in
            [reception.secondsAfterFirst, UInt8(bitPattern: reception.rssi ?? Int8(Sighting.rssiNotAvailable))]
        }
    }

    /// Calls `body` with each reception of `column`, in the order stored.
    static func forEach(in column: UnsafeRawBufferPointer, _ body: (SightingRecord.Reception) throws(SQLiteError) -> Void) throws(SQLiteError) {
        for offset in stride(from: 0, to: column.count - 1, by: size) {
            let rssi = Int8(bitPattern: column[offset + 1])
            try body(SightingRecord.Reception(secondsAfterFirst: column[offset], rssi: rssi == Int8(Sighting.rssiNotAvailable) ? nil : rssi))
        }
    }
}

extension SQLiteStatement {
    /// Calls `body` with each of a sighting's receptions: the first, with its RSSI in column
    /// `rssi`, then those of the later_receptions column `later` (nil for a database older than
    /// it: one reception). A column of an odd length is refused, not cut.
    func forEachReception(rssi: Int32, later: Int32?, _ body: (SightingRecord.Reception) throws(SQLiteError) -> Void) throws(SQLiteError) {
        try body(SightingRecord.Reception(secondsAfterFirst: 0, rssi: isNull(rssi) ? nil : Int8(truncatingIfNeeded: int64(rssi))))
        guard let later, let column = blob(later) else { return }
        guard column.count % LaterReceptions.size == 0 else {
            throw .mismatch("column \(later) holds \(column.count) bytes, not receptions of \(LaterReceptions.size) each", sql: sql)
        }
        try LaterReceptions.forEach(in: column, body)
    }

    /// A sighting's receptions, as `forEachReception` reads them.
    func receptions(rssi: Int32, later: Int32?) throws(SQLiteError) -> [SightingRecord.Reception] {
        var receptions = [SightingRecord.Reception]()
        try forEachReception(rssi: rssi, later: later) { receptions.append($0) }
        return receptions
    }
}
