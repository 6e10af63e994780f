import ENCore
import Testing

@Suite struct UTCDayTests {
    @Test(arguments: [(Int64(0), Int64(0)), (86_399, 0), (86_400, 1), (1_699_999_999, 19_675), (-1, -1), (-86_400, -1), (-86_401, -2)])
    func aTimeBelongsToTheDayWhoseMidnightPrecedesIt(time: Int64, day: Int64) {
        let utcDay = UTCDay(containing: time)
        #expect(utcDay.number == day)
        #expect(utcDay.start <= time && time < utcDay.end)
    }

    @Test func daysCountAndStride() {
        let monday = UTCDay(containing: 1_700_438_400)  // 2023-11-20T00:00Z
        #expect(monday.start == 1_700_438_400)
        #expect(monday.distance(to: UTCDay(containing: 1_700_438_400 + 3 * 86_400 + 5)) == 3)
        #expect(monday.advanced(by: -1) < monday && monday.advanced(by: 1).start == monday.end)
    }
}
