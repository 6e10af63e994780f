import ENAgent
import Testing

@Suite struct UploadBackoffTests {
    @Test func doublesFromAQuarterHourUpToADay() {
        let delays = (1...9).map { UploadBackoff.nextAttempt(now: 1_000, failures: $0, retryAfter: nil) - 1_000 }
        #expect(delays == [900, 1_800, 3_600, 7_200, 14_400, 28_800, 57_600, 86_400, 86_400])
        #expect(UploadBackoff.nextAttempt(now: 0, failures: 1_000, retryAfter: nil) == 86_400, "no overflow")
    }

    @Test func theServersRetryAfterWinsUpToADay() {
        #expect(UploadBackoff.nextAttempt(now: 1_000, failures: 5, retryAfter: 30) == 1_030)
        #expect(UploadBackoff.nextAttempt(now: 1_000, failures: 1, retryAfter: 10 * 86_400) == 1_000 + 86_400)
        #expect(UploadBackoff.nextAttempt(now: 1_000, failures: 1, retryAfter: 0) == 1_900, "0 means none given")
    }
}
