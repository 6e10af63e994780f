import CENKernel
import ENAgent

/// The kernel's synchronisation flag (adjtimex(2)), which every NTP client clears once it has
/// set the clock. A refused call counts as unsynchronised.
struct KernelClockSynchronisation: ClockSynchronisation {
    var isSynchronised: Bool { cen_kernel_clock_synchronised() == 1 }
}
