/* Benchmark shim: run a hardware-counter screen on a machine WITHOUT a hardware PMU.
 *
 * LD_PRELOAD'ed into a tool (the C tiptop, or our python3 -m tiptop, whose cffi binding calls
 * libc's syscall() too), it wraps syscall(SYS_perf_event_open, attr, ...) and rewrites a
 * PERF_TYPE_HARDWARE attr into a PERF_TYPE_SOFTWARE one, each generic hardware event onto a
 * distinct software event (perf_event_open(2), "type" and "config"), so that every counter of
 * the default screen opens and is read like a hardware one. Everything else passes through.
 *
 * context-switches and cpu-migrations are counted from the scheduler, in kernel mode: with
 * exclude_kernel=1 (the original's default) they always read 0. When running as root, the
 * shim clears exclude_kernel on those two so that they count; otherwise it leaves the flags
 * alone (perf_event_paranoid >= 2 would refuse kernel counting to a user).
 *
 * HW2SW_LOG=path appends one line per rewritten open: "hw CONFIG -> sw CONFIG pid PID = FD".
 * Built by benchmarks/whole_process.py: cc -shared -fPIC -O2 -o hw2sw.so hw2sw.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* PERF_COUNT_HW_* (0..9) -> PERF_COUNT_SW_*: cycles->task-clock, instructions->cpu-clock,
 * cache-references->page-faults-min, cache-misses->context-switches, branches->page-faults-maj,
 * branch-misses->cpu-migrations, bus-cycles->page-faults, stalled front/back-end->alignment/
 * emulation faults, ref-cycles->cpu-clock. */
static const unsigned long long SW_OF_HW[] = {1, 0, 5, 3, 6, 4, 2, 7, 8, 0};

long syscall(long nr, ...) {
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
    va_end(ap);
    static long (*real)(long, ...);
    if (!real) real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    struct perf_event_attr *attr = (struct perf_event_attr *)a[0];
    if (nr != SYS_perf_event_open || !attr || attr->type != PERF_TYPE_HARDWARE ||
        attr->config >= sizeof SW_OF_HW / sizeof SW_OF_HW[0])
        return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    unsigned long long hw = attr->config;
    unsigned ek = attr->exclude_kernel;
    attr->type = PERF_TYPE_SOFTWARE;
    attr->config = SW_OF_HW[hw];
    if (geteuid() == 0 && (attr->config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
                           attr->config == PERF_COUNT_SW_CPU_MIGRATIONS))
        attr->exclude_kernel = 0;
    long fd = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    const char *log = getenv("HW2SW_LOG");
    if (log) {
        FILE *f = fopen(log, "a");
        if (f) {
            fprintf(f, "hw %llu -> sw %llu pid %ld = %ld\n", hw, attr->config, a[1], fd);
            fclose(f);
        }
    }
    attr->type = PERF_TYPE_HARDWARE; /* the caller's attr is left as it passed it */
    attr->config = hw;
    attr->exclude_kernel = ek;
    return fd;
}
