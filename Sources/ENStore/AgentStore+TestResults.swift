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
            try Row.fetchAll(db, sql: """
                SELECT test_result.*, pending_upload.test_result_id IS NOT NULL AS pending FROM test_result
                LEFT JOIN pending_upload ON pending_upload.test_result_id = test_result.id ORDER BY recorded_at DESC, id
                """).map {
                TestResult(id: $0["id"], testDate: $0["test_date"], verificationMethod: $0["verification_method"],
                           verificationDetail: $0["verification_detail"], recordedAt: $0["recorded_at"], sharedAt: $0["shared_at"],
                           verificationToken: $0["verification_token"], uploadPending: $0["pending"])
            }
        }
    }

    /// Keeps an upload before it is sent, so that a failure loses nothing.
    public func queueUpload(testResultId: String, url: String, body: String, at time: Int64) throws(StoreError) {
        try write { db in
            try db.execute(sql: """
                INSERT INTO pending_upload (test_result_id, url, body, queued_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (test_result_id) DO UPDATE SET url = excluded.url, body = excluded.body
                """, arguments: [testResultId, url, body, time])
        }
    }

    public func pendingUploads() throws(StoreError) -> [PendingUpload] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM pending_upload ORDER BY queued_at").map {
                PendingUpload(testResultId: $0["test_result_id"], url: $0["url"], body: $0["body"], attempts: $0["attempts"], lastError: $0["last_error"])
            }
        }
    }

    /// The server accepted the upload (error nil: the result is shared and the upload gone) or
    /// refused it for now (the upload stays, with the reason).
    public func finishUpload(testResultId: String, error: String?, at time: Int64) throws(StoreError) {
        try write { db in
            if let error {
                try db.execute(sql: "UPDATE pending_upload SET attempts = attempts + 1, last_error = ? WHERE test_result_id = ?",
                               arguments: [error, testResultId])
            } else {
                try db.execute(sql: "DELETE FROM pending_upload WHERE test_result_id = ?", arguments: [testResultId])
                try db.execute(sql: "UPDATE test_result SET shared_at = ? WHERE id = ?", arguments: [time, testResultId])
            }
        }
    }
}
