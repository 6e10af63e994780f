#ifndef CENKERNEL_SHIM_H
#define CENKERNEL_SHIM_H
/* System calls that Swift cannot make directly (a struct by macro, or a variadic function),
   from libc: no library to link. */
#include <sys/prctl.h>
#include <sys/timex.h>

/* adjtimex(2) read-only: 1 when an NTP client (systemd-timesyncd, chrony, ntpd) has set the
   clock, 0 when the kernel marks it unsynchronised, -1 when the call is refused. */
static inline int cen_kernel_clock_synchronised(void) {
    struct timex state = {0};
    int result = adjtimex(&state);
    return result < 0 ? -1 : result != TIME_ERROR;
}

/* prctl(2) is variadic, which Swift cannot call: no core dump, no ptrace by the same uid and no
   /proc/PID/mem for a process that holds Temporary Exposure Keys. 0 on success. */
static inline int cen_make_undumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}
#endif
