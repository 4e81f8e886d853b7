/* kloop.c - a loop of exactly K user-mode instructions per iteration, for counting from outside.
 *
 * usage: kloop K N      (K = 4 or 7; N >= 0 iterations)
 *
 * Protocol (so that a monitor can attach by pid BEFORE the loop runs, as top users do):
 *   1. write "r" to stdout, then block in read(0) until one byte arrives;
 *   2. run N iterations of the K-instruction loop (nothing else between the two syscalls);
 *   3. write "d" to stdout, then block in read(0) again (EOF is fine) and exit 0.
 * Counts therefore read  count(N) = K*N + c,  with c a constant (the syscall return paths and the
 * call into the loop), which is what the tests fit.  Static build for the arm64 guest:
 *   aarch64-linux-gnu-gcc -O2 -static -o kloop kloop.c
 * The asm is the pmutest.c loop of the shared PMU-VM recipe (shared/pmu-vm), extended to K=7.
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* exactly 4 instructions per iteration; n >= 1 */
__attribute__((noinline)) static void loop4(uint64_t n)
{
    uint64_t a = 0, b = 0;
#if defined(__aarch64__)
    __asm__ volatile("1:\n\tadd %1, %1, #1\n\tadd %2, %2, #1\n\tsubs %0, %0, #1\n\tb.ne 1b\n\t"
                     : "+r"(n), "+r"(a), "+r"(b) : : "cc");
#elif defined(__x86_64__)
    __asm__ volatile("1:\n\tadd $1, %1\n\tadd $1, %2\n\tsub $1, %0\n\tjnz 1b\n\t"
                     : "+r"(n), "+r"(a), "+r"(b) : : "cc");
#else
#error unsupported architecture
#endif
}

/* exactly 7 instructions per iteration; n >= 1 */
__attribute__((noinline)) static void loop7(uint64_t n)
{
    uint64_t a = 0, b = 0, c = 0;
#if defined(__aarch64__)
    __asm__ volatile("1:\n\tadd %1, %1, #1\n\tadd %2, %2, #1\n\tadd %3, %3, #1\n\t"
                     "add %1, %1, #2\n\tadd %2, %2, #2\n\tsubs %0, %0, #1\n\tb.ne 1b\n\t"
                     : "+r"(n), "+r"(a), "+r"(b), "+r"(c) : : "cc");
#elif defined(__x86_64__)
    __asm__ volatile("1:\n\tadd $1, %1\n\tadd $1, %2\n\tadd $1, %3\n\t"
                     "add $2, %1\n\tadd $2, %2\n\tsub $1, %0\n\tjnz 1b\n\t"
                     : "+r"(n), "+r"(a), "+r"(b), "+r"(c) : : "cc");
#endif
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int k = atoi(argv[1]);
    uint64_t n = strtoull(argv[2], 0, 0);
    if (k != 4 && k != 7)
        return 2;
    char ch;
    if (write(1, "r", 1) != 1 || read(0, &ch, 1) != 1)
        return 1;
    if (n) {
        if (k == 4)
            loop4(n);
        else
            loop7(n);
    }
    if (write(1, "d", 1) != 1)
        return 1;
    (void)!read(0, &ch, 1);
    return 0;
}
