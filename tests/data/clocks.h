/* The clocks of the test programs (hotcold.c, callers.c): this thread's CPU time in ms, by
 * which they split their time between functions (not iteration counts, which a VM's timer
 * or code alignment could tilt), and the wall clock in seconds, by which they end. */
#include <time.h>

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double wall_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
