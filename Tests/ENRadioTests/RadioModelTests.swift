import ENAgent
import ENCore
import ENBlueZ
import Foundation
import Testing

/// The radio over the kernel model: the lab's scenarios, on both kernels and both controller kinds.
struct RadioModelTests {
    struct Setup: CustomTestStringConvertible, Sendable {
        var kernel: KernelModel.Kernel
        var legacy: Bool
        var testDescription: String { "\(kernel) \(legacy ? "BT 4.x" : "BT 5")" }
        static let all = [KernelModel.Kernel.bookworm, .trixie].flatMap { kernel in [true, false].map { Setup(kernel: kernel, legacy: $0) } }
    }

    func driver(_ setup: Setup) -> RadioDriver {
        RadioDriver(kernel: KernelModel(kernel: setup.kernel, legacy: setup.legacy))
    }

    @Test(arguments: Setup.all)
    func eachRotationIsANewInstanceFromANewAddress(setup: Setup) {
        let driver = driver(setup)
        driver.returned()
        for _ in 0..<3 {
            driver.rotate()
            driver.settle()
            #expect(RadioInvariants.broken(driver) == [])
        }
        let state = driver.kernel.snapshot
        #expect(driver.advertising && driver.advertised.count == 4)
        #expect(state.history.count == 4 && Set(state.history.map(\.address)).count == 4)
    }

    /// On a legacy controller the agent steps aside for another program's advertisement, and is
    /// back once it is alone.
    @Test(arguments: Setup.all.filter(\.legacy))
    func anotherAdvertiserOnALegacyControllerMakesItStepAside(setup: Setup) {
        let driver = driver(setup)
        driver.returned()
        let other = driver.kernel.otherProgramAdds()
        driver.settle()
        #expect(!driver.advertising && driver.problem == .adapterShared)
        driver.kernel.otherProgramRemoves(other!)
        driver.settle()
        driver.retry()
        #expect(driver.advertising)
        #expect(RadioInvariants.broken(driver) == [])
    }

    @Test(arguments: Setup.all)
    func aConnectableAdapterTakesTheAdvertisementOff(setup: Setup) {
        let driver = driver(setup)
        driver.returned()
        driver.kernel.setConnectable(true)
        driver.settle()
        #expect(!driver.advertising && driver.problem == .adapterConnectable)
        #expect(RadioInvariants.broken(driver) == [])
    }
}
