import ENCore
import Foundation
import GRDB

extension AgentStore {
    /// Records a batch of sightings in one transaction: all of them or, on error, none.
    public func record(_ sightings: [Sighting]) throws(StoreError) {
        guard !sightings.isEmpty else { return }
        try write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO sighting (rpi, aem, rssi, seen_at, adapter) VALUES (?, ?, ?, ?, ?)")
            for sighting in sightings {
                try insert.execute(arguments: [
                    Data(sighting.rpi.bytes), Data(sighting.aem.bytes), sighting.rssi.map { Int($0) },
                    sighting.time, sighting.adapter,
                ])
            }
        }
    }

    public func sightingCount() throws(StoreError) -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sighting") ?? 0 }
    }

    /// Sightings with `from <= time < until` (unix seconds), in time order.
    public func sightings(from: Int64 = 0, until: Int64 = .max) throws(StoreError) -> [Sighting] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM sighting WHERE seen_at >= ? AND seen_at < ? ORDER BY seen_at, id",
                             arguments: [from, until]).map(Self.sighting(from:))
        }
    }

    private static func sighting(from row: Row) -> Sighting {
        let rpi: Data = row["rpi"]
        let aem: Data = row["aem"]
        return Sighting(rpi: Bytes16(bytes: rpi)!, aem: AssociatedEncryptedMetadata(bytes: aem)!,
                        rssi: row["rssi"], time: row["seen_at"], adapter: row["adapter"])
    }
}
