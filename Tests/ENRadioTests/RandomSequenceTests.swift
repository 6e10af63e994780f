import ENAgent
import ENBlueZ
import Foundation
import Synchronization
import Testing

/// Random sequences of what happens to a radio (power, rfkill, unplug, bluetoothd restarts,
/// connectable, other advertisers and scanners, sleep, clock steps, rotations, LE connections being
/// made, whatever happens on another controller), each step checked against `RadioInvariants`, and
/// a step on another controller also against this radio doing or saying anything. The seed is printed; RADIO_SEED=N replays one sequence (its steps
/// and the radio's last commands are printed when it fails); RADIO_SEQUENCES=N runs N per setup.
struct RandomSequenceTests {
    enum Step: CaseIterable {
        case rotation, retry, powerOff, powerOn, rfkill, unblock, unplug, plugIn, bluetoothdStops, bluetoothdStarts, bluetoothdStartsLate,
             connectable, notConnectable, otherAdds, otherRemoves, otherScans, otherScanEnds, scanStarts, scanEnds, sleep, clockStep, time,
             connectionBegins, connectionEnds, anotherController, anotherAdapter
    }

    static let sequences = 400, steps = 40

    /// Runs one sequence; the steps taken and the first broken rule, if any.
    static func run(seed: UInt64, setup: RadioModelTests.Setup) -> (steps: [String], broken: [String], commands: [String]) {
        let random = Mutex(SeededGenerator(seed: seed))
        let kernel = KernelModel(kernel: setup.kernel, legacy: setup.legacy)
        let driver = RadioDriver(kernel: kernel, seed: seed, scanMode: setup.scanMode)
        var taken = [String](), checked = 0
        driver.returned()
        driver.settle()
        for _ in 0..<steps {
            let step = random.withLock { Step.allCases.randomElement(using: &$0)! }
            // What happens to the controller may cut into the radio's next commands (a rotation's).
            if let cut = random.withLock({ Int.random(in: 0..<3, using: &$0) == 0 ? Int.random(in: 0..<12, using: &$0) : nil }),
               let disruption = Self.disruption(step, kernel: kernel) {
                taken.append("\(step) during command \(cut) of a rotation")
                kernel.duringCommand(cut, disruption)
                driver.rotate()
                kernel.runPending()
                Self.tellAgent(step, driver: driver)
                driver.settle()
                let broken = RadioInvariants.broken(driver, commandsFrom: checked)
                checked = kernel.snapshot.commands.count
                if !broken.isEmpty { return (taken, broken, Self.commands(kernel)) }
                continue
            }
            taken.append("\(step)")
            let (commands, heard) = (kernel.snapshot.commands.count, driver.heard.count)
            switch step {
            case .rotation, .clockStep: if driver.advertising { driver.rotate() }
            case .retry: driver.retry()
            case .powerOff, .rfkill:
                kernel.powerOff(rfkill: step == .rfkill)
                driver.bluetoothd.discoveryEnded()
                driver.lost()
            case .powerOn:
                guard !kernel.snapshot.blocked, kernel.snapshot.present else { continue }
                kernel.powerOn()
                driver.returned()
            case .unblock:
                kernel.unblock()
                driver.returned()
            case .unplug:
                kernel.unplug()
                driver.bluetoothd.discoveryEnded()
                driver.lost()
            case .plugIn:
                guard !kernel.snapshot.present else { continue }
                kernel.plugIn()
                driver.returned()
            case .bluetoothdStops:
                driver.bluetoothd.exits()
                driver.lost()
            case .bluetoothdStarts, .bluetoothdStartsLate:
                guard !driver.bluetoothd.isRunning else { continue }
                driver.bluetoothd.isRunning = true
                // bluetoothd clears the instances as it starts: before the agent's recovery, or after it.
                if step == .bluetoothdStarts { kernel.bluetoothdStarts() }
                driver.returned()
                if step == .bluetoothdStartsLate { kernel.bluetoothdStarts() }
            case .connectable: kernel.setConnectable(true)
            case .notConnectable:
                kernel.setConnectable(false)
                driver.retry()
            case .otherAdds: kernel.otherProgramAdds()
            case .otherRemoves:
                if let other = kernel.snapshot.instances.first(where: { $0.value.owner == .other })?.key { kernel.otherProgramRemoves(other) }
            case .otherScans: kernel.setScanning(true)
            // Another program's discovery ends, or one left by a bluetoothd that exited times out.
            case .otherScanEnds: if !driver.bluetoothd.isDiscovering { kernel.setScanning(false) }
            case .scanStarts: driver.startScan()
            case .scanEnds: driver.stopScan()
            case .sleep:
                driver.sleep()
                kernel.powerOff()
                kernel.powerOn()
                driver.returned()
            case .time: kernel.advance(seconds: 2)
            case .connectionBegins: kernel.setConnecting(true)
            case .connectionEnds: kernel.setConnecting(false)
            case .anotherController:
                let events = RadioModelTests.anotherControllersEvents(beside: kernel)
                kernel.happensOnAnotherController(random.withLock { events.randomElement(using: &$0)! })
            case .anotherAdapter:
                driver.bluetoothd.anotherAdapter(random.withLock { [AdapterChange.Kind.appeared, .vanished, .poweredOn, .poweredOff].randomElement(using: &$0)! })
            }
            driver.settle()
            var broken = RadioInvariants.broken(driver, commandsFrom: checked)
            if [.anotherController, .anotherAdapter].contains(step) {
                if kernel.snapshot.commands.count != commands { broken.append("a command to this controller for another's event") }
                if driver.heard.count != heard { broken.append("the agent heard \(driver.heard.dropFirst(heard)) for another controller's event") }
            }
            checked = kernel.snapshot.commands.count
            if !broken.isEmpty { return (taken, broken, Self.commands(kernel)) }
        }
        return (taken, [], [])
    }

    /// The radio's last commands, for the report of a failure.
    static func commands(_ kernel: KernelModel) -> [String] {
        kernel.snapshot.commands.suffix(30).map { "\($0.name)\($0.instance.map { " \($0)" } ?? "")\($0.status == 0 ? "" : " refused \($0.status)")" }
    }

    /// What happens to the controller, without the agent hearing of it (the kernel's part of a step).
    /// Not an LE connection that begins after the radio looked at the connection list: that race
    /// is one no program can close (docs/radio.md, "The scan").
    static func disruption(_ step: Step, kernel: KernelModel) -> (@Sendable () -> Void)? {
        switch step {
        case .rfkill: return { kernel.powerOff(rfkill: true) }
        case .powerOff: return { kernel.powerOff() }
        case .unplug: return { kernel.unplug() }
        case .connectable: return { kernel.setConnectable(true) }
        case .otherAdds: return { kernel.otherProgramAdds() }
        case .otherScans: return { kernel.setScanning(true) }
        case .bluetoothdStarts: return { kernel.bluetoothdStarts() }
        default: return nil
        }
    }

    /// What the agent hears after a disruption: bluetoothd's signals of a loss.
    static func tellAgent(_ step: Step, driver: RadioDriver) {
        switch step {
        case .rfkill, .powerOff, .unplug:
            driver.bluetoothd.discoveryEnded()
            driver.lost()
        default:
            break
        }
    }

    @Test(arguments: RadioModelTests.Setup.everyScanMode)
    func randomSequencesKeepEveryRule(setup: RadioModelTests.Setup) {
        let replay = ProcessInfo.processInfo.environment["RADIO_SEED"].flatMap(UInt64.init)
        let first = replay ?? UInt64.random(in: 0..<UInt64.max / 2)
        print("RandomSequenceTests \(setup.testDescription): seed \(first) (RADIO_SEED=\(first) replays it)")
        let count = replay == nil ? ProcessInfo.processInfo.environment["RADIO_SEQUENCES"].flatMap(Int.init) ?? Self.sequences : 1
        for seed in first..<(first + UInt64(count)) {
            let (steps, broken, commands) = Self.run(seed: seed, setup: setup)
            guard broken.isEmpty else {
                Issue.record("""
                    seed \(seed) on \(setup.testDescription): \(broken.joined(separator: "; ")) (RADIO_SEED=\(seed))
                    steps: \(steps.joined(separator: ", "))
                    the radio's last commands: \(commands.joined(separator: ", "))
                    """)
                return
            }
        }
    }
}
