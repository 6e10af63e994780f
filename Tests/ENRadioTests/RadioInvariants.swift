import ENAgent
import ENCore

/// What must hold after every step of the radio over the kernel model; each broken rule is named.
enum RadioInvariants {
    /// `commandsFrom`: the first command not checked yet (and the one before it).
    static func broken(_ driver: RadioDriver, commandsFrom: Int = 0) -> [String] {
        let kernel = driver.kernel, state = kernel.snapshot
        var broken = [String]()
        let exposure = kernel.exposureInstances(state)
        // A stuck instance (6.1 after rfkill) is not on the air, and the kernel enables it no more:
        // the radio forgets it and advertises from another (`removeUnlessStuck`).
        let usable = exposure.filter { state.instances[$0]?.stuck == false }
        if usable.count > 1 { broken.append("\(usable.count) EN instances: \(usable)") }

        var addresses = [[UInt8]: Set<Int>]()
        // Not the kernel's re-programming as the adapter turns connectable, which no program can
        // prevent (docs/radio.md: "A connectable adapter"); the rule below has it taken off at once.
        // Nor the kernel's lending a legacy set to another program's instance added between two of
        // the radio's commands: the radio steps aside as it hears of it ("A second advertiser").
        for aired in state.history where KernelModel.isExposureNotification(aired.data) && !aired.fromPublicAddress && !aired.inAnotherProgramsTurn {
            addresses[Array(aired.data[11...]), default: []].insert(aired.address)
        }
        if let linked = addresses.first(where: { $0.value.count > 1 }) { broken.append("one RPI from \(linked.value.count) addresses") }
        let rpisByAddress = Dictionary(grouping: addresses.flatMap { rpi, addresses in addresses.map { ($0, rpi) } }, by: \.0)
        if let linked = rpisByAddress.first(where: { $0.value.count > 1 }) { broken.append("\(linked.value.count) RPIs from one address") }

        let onAir = state.onAir.values.filter { KernelModel.isExposureNotification($0.data) }
        if state.connectable && !onAir.isEmpty { broken.append("advertising while connectable") }

        let enabled = exposure.contains { state.powered && state.instances[$0]?.stuck == false }
        if driver.advertising != enabled {
            broken.append(driver.advertising ? "the status says advertising, nothing EN is enabled" : "an EN instance is enabled, the status says \(driver.problem?.rawValue ?? "idle")")
        }
        if driver.advertising, let standIn = state.instances.first(where: { $0.value.owner == .radio && !($0.value.data.map(KernelModel.isExposureNotification) ?? false) && !$0.value.stuck }) {
            broken.append("a stand-in left in instance \(standIn.key) beside the advertisement")
        }
        if driver.bluetoothd.scansStartedWithoutAdvertisement > 0 {
            broken.append("\(driver.bluetoothd.scansStartedWithoutAdvertisement) active scans started with no EN advertisement on the air, which the kernel may send from the public address")
        }
        if driver.bluetoothd.scansStartedWhileConnecting > 0 {
            broken.append("\(driver.bluetoothd.scansStartedWhileConnecting) active scans started while the kernel made an LE connection, which the kernel may send from the public address")
        }
        // The status never says a scan runs that does not (issue 56): the kernel scans, passively or in a discovery.
        if driver.scanning && !(state.scanning || state.scansPassively) { broken.append("the status says scanning, and the kernel does not scan") }
        let commands = state.commands.dropFirst(max(0, commandsFrom - 1))
        for (earlier, later) in zip(commands, commands.dropFirst())
        where earlier.status != 0 && later.status != 0 && earlier.name == later.name && earlier.instance == later.instance && earlier.instance != nil {
            broken.append("\(later.name) of instance \(later.instance!) refused twice in a row")
            break
        }
        return broken
    }
}
