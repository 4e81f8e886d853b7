/* Test shim: make perf_event_open(2) answer ENOENT for hardware, HW_CACHE and RAW/core-PMU
 * events, as on a VM without a virtual PMU. Wraps libc's syscall(), which cffi and ctypes
 * call. Software (1), tracepoint (2), breakpoint (5) and other dynamic types pass through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/syscall.h>

long syscall(long nr, ...) {
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
    va_end(ap);
    if (nr == SYS_perf_event_open) {
        uint32_t type = *(uint32_t *)a[0];
        if (type == 0 || type == 3 || type == 4) { errno = ENOENT; return -1; }
    }
    static long (*real)(long, ...);
    if (!real) real = dlsym(RTLD_NEXT, "syscall");
    return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
