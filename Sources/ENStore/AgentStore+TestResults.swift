import ENCore
import ENSQLite

/// A positive test the person recorded, and how it was verified.
public struct TestResult: Sendable, Equatable {
    public var id: String
    /// Unix seconds of the UTC day the test was administered; nil when nobody said (the
    /// verification server gave no date), which is never made up.
    public var testDate: Int64?
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

    public init(id: String, testDate: Int64?, verificationMethod: String, verificationDetail: String?, recordedAt: Int64,
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
    /// The key server took the keys; `revisionToken` is its token for the next upload, `note`
    /// what it said beside (the keys it dropped).
    case accepted(revisionToken: String?, note: String? = nil)
    /// Refused for now (a server error, rate limit, no network): sent again from `retryAt` on.
    case retry(reason: String, at: Int64)
    /// Refused for good: the result's upload failed and is never sent again.
    case refused(reason: String)
}

extension AgentStore {
    public func recordTestResult(_ result: TestResult) throws(StoreError) {
        try write { db in
            try db.execute("""
                INSERT INTO test_result (id, test_date, verification_method, verification_detail, recorded_at, verification_token)
                VALUES (?, ?, ?, ?, ?, ?)
                """, result.id, result.testDate, result.verificationMethod, result.verificationDetail, result.recordedAt,
                result.verificationToken)
        }
    }

    /// Replaces a result's verification token (nil: spent); false when there is no such result.
    public func setVerificationToken(_ token: String?, testResultId: String) throws(StoreError) -> Bool {
        try write { db in
            try db.execute("UPDATE test_result SET verification_token = ? WHERE id = ?", token, testResultId)
            return try db.fetchOne(Int.self, "SELECT count(*) FROM test_result WHERE id = ?", testResultId) == 1
        }
    }

    /// Every test result, the most recent first.
    public func testResults() throws(StoreError) -> [TestResult] {
        try read { db in
            // Every result's shared keys in one query, not one query per result.
            var sharedKeys = [String: [TemporaryExposureKeyData]]()
            try db.forEachRow("SELECT test_result_id, key_data FROM shared_key ORDER BY key_data") { row throws(SQLiteError) in
                sharedKeys[try row.column(0), default: []].append(try row.bytes16(1))
            }
            return try db.fetchAll("""
                SELECT test_result.id, test_date, verification_method, verification_detail, recorded_at, shared_at, verification_token,
                    pending_upload.test_result_id IS NOT NULL, upload_failure, revision_token
                FROM test_result LEFT JOIN pending_upload ON pending_upload.test_result_id = test_result.id ORDER BY recorded_at DESC, test_result.id
                """) { row throws(SQLiteError) in
                var result = TestResult(id: try row.column(0), testDate: try row.column(1), verificationMethod: try row.column(2),
                                        verificationDetail: try row.column(3), recordedAt: try row.column(4), sharedAt: try row.column(5),
                                        verificationToken: try row.column(6), uploadPending: try row.column(7))
                result.uploadFailure = try row.column(8)
                result.revisionToken = try row.column(9)
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
            try db.execute("""
                INSERT INTO pending_upload (test_result_id, url, body, queued_at, key_data) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (test_result_id) DO UPDATE SET url = excluded.url, body = excluded.body, key_data = excluded.key_data,
                    attempts = 0, last_error = NULL, next_attempt_at = 0
                """, testResultId, url, body, time, keys.flatMap(\.bytes))
            try db.execute("UPDATE test_result SET upload_failure = NULL WHERE id = ?", testResultId)
        }
    }

    public func pendingUploads() throws(StoreError) -> [PendingUpload] {
        try read { db in
            try db.fetchAll("SELECT test_result_id, url, body, attempts, last_error, next_attempt_at FROM pending_upload ORDER BY queued_at") { row throws(SQLiteError) in
                PendingUpload(testResultId: try row.column(0), url: try row.column(1), body: try row.column(2), attempts: try row.column(3),
                              lastError: try row.column(4), nextAttemptAt: try row.column(5))
            }
        }
    }

    /// Records what became of an attempt: accepted (the result is shared, its keys and revision
    /// token kept, the upload gone), to be retried (it stays, with the reason and when), or
    /// refused for good (the upload gone, the reason kept on the result).
    public func finishUpload(testResultId: String, _ result: UploadResult, at time: Int64) throws(StoreError) {
        try write { db in
            switch result {
            case .accepted(let revisionToken, _):
                let keys = try db.fetchOne([UInt8].self, "SELECT key_data FROM pending_upload WHERE test_result_id = ?", testResultId) ?? []
                for start in stride(from: 0, to: keys.count, by: 16) {
                    try db.execute("INSERT OR IGNORE INTO shared_key (test_result_id, key_data) VALUES (?, ?)",
                                   testResultId, Array(keys[start..<start + 16]))
                }
                try db.execute("DELETE FROM pending_upload WHERE test_result_id = ?", testResultId)
                try db.execute("UPDATE test_result SET shared_at = ?, upload_failure = NULL, revision_token = coalesce(?, revision_token) WHERE id = ?",
                               time, revisionToken, testResultId)
            case .retry(let reason, let retryAt):
                try db.execute("UPDATE pending_upload SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE test_result_id = ?",
                               reason, retryAt, testResultId)
            case .refused(let reason):
                try db.execute("DELETE FROM pending_upload WHERE test_result_id = ?", testResultId)
                try db.execute("UPDATE test_result SET upload_failure = ? WHERE id = ?", reason, testResultId)
            }
        }
    }
}
