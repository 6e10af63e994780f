import CENKernel
import Dispatch
import Glibc

/// Hears the wall clock being set (date -s, an NTP client's step, settimeofday) as it happens, as
/// systemd does: a timer on the wall clock that the kernel cancels at each setting
/// (TFD_TIMER_CANCEL_ON_SET). Without it enagentd noticed a step at its next upkeep, up to a
/// minute later, with the identifier of the interval before the step on the air meanwhile.
final class ClockChanges {
    private let source: any DispatchSourceRead

    /// Calls `changed` on `queue` each time the clock is set; nil when the kernel refuses the
    /// timer (the upkeep's minute then notices a step).
    init?(queue: DispatchQueue, _ changed: @escaping () -> Void) {
        let fd = cen_kernel_clock_change_fd()
        guard fd >= 0 else { return nil }
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler {
            if cen_kernel_clock_was_set(fd) == 1 { changed() }
        }
        source.setCancelHandler { close(fd) }
        source.resume()
    }

    deinit { source.cancel() }
}
