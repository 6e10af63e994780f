/// Steps of the wall clock, told apart from time passing by a clock that is never stepped.
///
/// Retention deletes by the wall clock, so a step forward (a wrong NTP answer, `date -s` a year
/// ahead) would delete every key and sighting at once. The retention cutoff therefore holds back by
/// the forward steps seen while the agent runs; a step back takes its share of the hold away (NTP
/// correcting a bad step gives the hold back). A restart trusts the clock again: a synchronised
/// clock at start-up is the agent's only reference.
public struct ClockSteps: Sendable {
    /// NTP slews at most 0.5 ms a second: between readings a minute apart, anything over this is a step.
    public static let tolerance: Int64 = 120

    private var last: (wall: Int64, steady: Double)?
    /// Net seconds the wall clock was stepped forward since the first reading (never negative).
    public private(set) var forwardSteps: Int64 = 0

    public init() {}

    /// Takes a reading of both clocks (on the same scale); returns the step since the last reading,
    /// or 0 when the wall clock moved with the steady one.
    public mutating func observe(wall: Int64, steady: Double) -> Int64 {
        defer { last = (wall, steady) }
        guard let last else { return 0 }
        let step = (wall - last.wall) - Int64((steady - last.steady).rounded())
        guard abs(step) > Self.tolerance else { return 0 }
        forwardSteps = max(0, forwardSteps + step)
        return step
    }

    /// The time retention may count from: the wall clock less the forward steps.
    public func retentionNow(wall: Int64) -> Int64 { wall - forwardSteps }
}
