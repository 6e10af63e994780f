#ifndef CENKERNEL_SHIM_H
#define CENKERNEL_SHIM_H
/* System calls that Swift cannot make directly (a struct by macro, or a variadic function),
   from libc: no library to link. */
#include <errno.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sys/timex.h>
#include <unistd.h>

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
/* A timer on the wall clock for the end of time that the kernel cancels whenever the clock is
   set (date -s, an NTP client's step, settimeofday): its file turns readable, and a read fails
   with ECANCELED. systemd hears clock changes so (src/basic/time-util.c, time_change_fd), also
   the retry with INT32_MAX for kernels whose timers take no 64-bit time. 0 on success. */
static inline int cen_kernel_arm_clock_change(int fd) {
    struct itimerspec end_of_time = {0};
    end_of_time.it_value.tv_sec = (time_t)((UINTMAX_C(1) << ((sizeof(time_t) << 3) - 1)) - 1);
    if (timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &end_of_time, NULL) == 0) return 0;
    end_of_time.it_value.tv_sec = INT32_MAX;
    return timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &end_of_time, NULL);
}

/* That timer's file (non-blocking, close-on-exec), or -1 when the kernel refuses it. */
static inline int cen_kernel_clock_change_fd(void) {
    int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) return -1;
    if (cen_kernel_arm_clock_change(fd) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Once the file turned readable: 1 when the clock was set since the last call (the read failed
   with ECANCELED), else 0; the timer armed again either way. */
static inline int cen_kernel_clock_was_set(int fd) {
    uint64_t expirations;
    int set = read(fd, &expirations, sizeof expirations) < 0 && errno == ECANCELED;
    cen_kernel_arm_clock_change(fd);
    return set;
}
#endif
