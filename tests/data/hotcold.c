/* tests/system/test_where.py's target: hot_loop runs 80% of the process's CPU time and
 * cold_loop 20%, by the thread CPU clock (not by iteration counts, which a VM's timer or
 * code alignment could tilt). Prints its PID, then loops until killed or, with argv[1],
 * for that many seconds of wall time.
 * With argv[2] = "jit", it copies jit_body (register-only code, position independent) into
 * anonymous executable memory, prints that address on a second line and runs only there:
 * a "JIT" the test names through /tmp/perf-PID.map. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "clocks.h"
#include <unistd.h>

volatile unsigned long sink;

/* Spin for `ms` milliseconds of this thread's CPU time. */
__attribute__((noinline)) void hot_loop(double ms) {
    double until = cpu_ms() + ms;
    do {
        for (long i = 0; i < 20000; i++) sink += i;
    } while (cpu_ms() < until);
}

__attribute__((noinline)) void cold_loop(double ms) {
    double until = cpu_ms() + ms;
    do {
        for (long i = 0; i < 20000; i++) sink += i;
    } while (cpu_ms() < until);
}

__attribute__((noinline)) long jit_body(long n) {
    long s = 0;
    for (long i = 0; i < n; i++) {
        s += i;
        __asm__ volatile("" : "+r"(s));
    }
    return s;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0;
    int jit = argc > 2 && strcmp(argv[2], "jit") == 0;
    double end = wall_s() + seconds;
    printf("%d\n", getpid());
    long (*body)(long) = jit_body;
    if (jit) {
        void *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (code == MAP_FAILED) return 1;
        memcpy(code, (void *)jit_body, 256);
        __builtin___clear_cache((char *)code, (char *)code + 256);
        body = (long (*)(long))code;
        printf("%lx\n", (unsigned long)code);
    }
    fflush(stdout);
    while (seconds <= 0 || wall_s() < end) {
        if (jit) {
            sink += body(10000000);
        } else {
            hot_loop(40);
            cold_loop(10);
        }
    }
    return 0;
}
