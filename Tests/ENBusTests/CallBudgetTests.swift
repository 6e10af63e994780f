import ENBus
import Testing

@Suite struct CallBudgetTests {
    @Test func aSenderGetsItsBurstThenItsRate() {
        var budget = CallBudget(burst: 3, perSecond: 2)
        let first = (0..<5).map { _ in budget.allows(":1.1", now: 10) }
        #expect(first == [true, true, true, false, false])
        let other = budget.allows(":1.2", now: 10)
        #expect(other, "another sender has its own budget")
        let halfASecondLater = [budget.allows(":1.1", now: 10.5), budget.allows(":1.1", now: 10.5)]
        #expect(halfASecondLater == [true, false], "half a second buys one call at two a second")
        let muchLater = (0..<4).map { _ in budget.allows(":1.1", now: 100) }
        #expect(muchLater == [true, true, true, false], "refilled up to the burst, no more")
    }

    @Test func manySendersDoNotGrowTheTableWithoutBound() {
        var budget = CallBudget(burst: 2, perSecond: 1)
        for sender in 0..<5_000 { _ = budget.allows(":1.\(sender)", now: Double(sender)) }
        let latest = [budget.allows(":1.4999", now: 4_999), budget.allows(":1.4999", now: 4_999)]
        #expect(latest == [true, false], "the latest sender is still counted")
    }
}
