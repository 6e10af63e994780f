import ENCore
import Foundation
import GRDB

/// A positive test the person recorded, and how it was verified.
public struct TestResult: Sendable, Equatable {
    public var id: String
    /// Unix seconds of the UTC day the test was administered.
    public var testDate: Int64
    /// A `VerificationMethod` raw value.
    public var verificationMethod: String
    /// What the verification showed (issuer, test type), for the person.
    public var verificationDetail: String?
    public var recordedAt: Int64
    public var sharedAt: Int64?
    /// The verification server's token, for the certificate when sharing.
    public var verificationToken: String?
    /// Whether an upload of this result's keys waits to be sent.
    public var uploadPending: Bool
    /// Why the key server refused the last upload for good (it is not sent again).
    public var uploadFailure: String?
    /// The key server's token for this diagnosis, sent with its next upload.
    public var revisionToken: String?
    /// The keys the key server accepted for this result.
    public var sharedKeys: [TemporaryExposureKeyData] = []

    public init(id: String, testDate: Int64, verificationMethod: String, verificationDetail: String?, recordedAt: Int64,
                sharedAt: Int64? = nil, verificationToken: String? = nil, uploadPending: Bool = false) {
        self.id = id
        self.testDate = testDate
        self.verificationMethod = verificationMethod
        self.verificationDetail = verificationDetail
        self.recordedAt = recordedAt
        self.sharedAt = sharedAt
        self.verificationToken = verificationToken
        self.uploadPending = uploadPending
    }
}

/// An upload of keys to the key server, kept until the server accepted it.
public struct PendingUpload: Sendable, Equatable {
    public var testResultId: String
    public var url: String
    public var body: String
    public var attempts: Int
    public var lastError: String?
    /// Unix seconds before which it is not sent again (0: at once).
    public var nextAttemptAt: Int64
}

/// What became of one attempt to upload.
public enum UploadResult: Sendable, Equatable {
    /// The key server took the keys; `revisionToken` is its token for the next upload.
    case accepted(revisionToken: String?)
    /// Refused for now (a server error, rate limit, no network): sent again from `retryAt` on.
    case retry(reason: String, at: Int64)
    /// Refused for good: the result's upload failed and is never sent again.
    case refused(reason: String)
}

extension AgentStore {
    public func recordTestResult(_ result: TestResult) throws(StoreError) {
        try write { db in
            try db.execute(sql: """
                INSERT INTO test_result (id, test_date, verification_method, verification_detail, recorded_at, verification_token)
                VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [result.id, result.testDate, result.verificationMethod, result.verificationDetail, result.recordedAt,
                                 result.verificationToken])
        }
    }

    /// Every test result, the most recent first.
    public func testResults() throws(StoreError) -> [TestResult] {
        try read { db in
            // Every result's shared keys in one query, not one query per result.
            var sharedKeys = [String: [TemporaryExposureKeyData]]()
            for row in try Row.fetchAll(db, sql: "SELECT test_result_id, key_data FROM shared_key ORDER BY key_data") {
                if let key = Bytes16(bytes: row["key_data"] as Data) { sharedKeys[row["test_result_id"], default: []].append(key) }
            }
            return try Row.fetchAll(db, sql: """
                SELECT test_result.*, pending_upload.test_result_id IS NOT NULL AS pending FROM test_result
                LEFT JOIN pending_upload ON pending_upload.test_result_id = test_result.id ORDER BY recorded_at DESC, id
                """).map { row in
                var result = TestResult(id: row["id"], testDate: row["test_date"], verificationMethod: row["verification_method"],
                                        verificationDetail: row["verification_detail"], recordedAt: row["recorded_at"], sharedAt: row["shared_at"],
                                        verificationToken: row["verification_token"], uploadPending: row["pending"])
                result.uploadFailure = row["upload_failure"]
                result.revisionToken = row["revision_token"]
                result.sharedKeys = sharedKeys[result.id] ?? []
                return result
            }
        }
    }

    /// Keeps an upload (of `keys`) before it is sent, so that a failure loses nothing; a new
    /// upload clears an earlier one's failure.
    public func queueUpload(testResultId: String, url: String, body: String, keys: [TemporaryExposureKeyData] = [],
                            at time: Int64) throws(StoreError) {
        try write { db in
            try db.execute(sql: """
                INSERT INTO pending_upload (test_result_id, url, body, queued_at, key_data) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (test_result_id) DO UPDATE SET url = excluded.url, body = excluded.body, key_data = excluded.key_data,
                    attempts = 0, last_error = NULL, next_attempt_at = 0
                """, arguments: [testResultId, url, body, time, Data(keys.flatMap(\.bytes))])
            try db.execute(sql: "UPDATE test_result SET upload_failure = NULL WHERE id = ?", arguments: [testResultId])
        }
    }

    public func pendingUploads() throws(StoreError) -> [PendingUpload] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM pending_upload ORDER BY queued_at").map {
                PendingUpload(testResultId: $0["test_result_id"], url: $0["url"], body: $0["body"], attempts: $0["attempts"], lastError: $0["last_error"],
                              nextAttemptAt: $0["next_attempt_at"])
            }
        }
    }

    /// Records what became of an attempt: accepted (the result is shared, its keys and revision
    /// token kept, the upload gone), to be retried (it stays, with the reason and when), or
    /// refused for good (the upload gone, the reason kept on the result).
    public func finishUpload(testResultId: String, _ result: UploadResult, at time: Int64) throws(StoreError) {
        try write { db in
            switch result {
            case .accepted(let revisionToken):
                let keys = try Data.fetchOne(db, sql: "SELECT key_data FROM pending_upload WHERE test_result_id = ?", arguments: [testResultId]) ?? Data()
                for start in stride(from: 0, to: keys.count, by: 16) {
                    try db.execute(sql: "INSERT OR IGNORE INTO shared_key (test_result_id, key_data) VALUES (?, ?)",
                                   arguments: [testResultId, keys.subdata(in: start..<start + 16)])
                }
                try db.execute(sql: "DELETE FROM pending_upload WHERE test_result_id = ?", arguments: [testResultId])
                try db.execute(sql: "UPDATE test_result SET shared_at = ?, upload_failure = NULL, revision_token = coalesce(?, revision_token) WHERE id = ?",
                               arguments: [time, revisionToken, testResultId])
            case .retry(let reason, let retryAt):
                try db.execute(sql: "UPDATE pending_upload SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE test_result_id = ?",
                               arguments: [reason, retryAt, testResultId])
            case .refused(let reason):
                try db.execute(sql: "DELETE FROM pending_upload WHERE test_result_id = ?", arguments: [testResultId])
                try db.execute(sql: "UPDATE test_result SET upload_failure = ? WHERE id = ?", arguments: [reason, testResultId])
            }
        }
    }
}
