/* bench/bench_mmio.c -- read throughput of the Matrix Market reader (src/mmio.c).
 *
 * Without an argument, writes a ~100 MB `coordinate real general` file to /tmp (1e6 x 1e6,
 * random columns, values uniform in (-1, 1) printed with %.17g as spk's own writer prints
 * them: 17 significant digits, the reader's slowest common case), times spk_mm_read_coo over
 * it (best of 3, the file in the page cache), prints MB/s (1 MB = 1e6 bytes) and entries/s,
 * and removes the file. With a path, times that file instead. Both wall-clock and process
 * CPU time are shown: on a shared machine the CPU figure is the one-core speed.
 *
 *   bench_mmio [file.mtx]
 *
 * Single-threaded: the reader is one sequential pass. */
#include "spk_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TARGET_BYTES 100000000ull
#define NROWS 1000000

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* The entries go to memory first so that the size line can announce their count. */
static int generate(const char *path, long long *nent)
{
    size_t cap = TARGET_BYTES + 4096, len = 0;
    char *body = malloc(cap);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    long long n = 0;
    if (!body)
        return -1;
    while (len < TARGET_BYTES) {
        long long i = 1 + (long long)(n / 3 % NROWS), j = 1 + (long long)(xorshift(&s) % NROWS);
        double v = (double)(xorshift(&s) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
        len += (size_t)snprintf(body + len, cap - len, "%lld %lld %.17g\n", i, j, v);
        n++;
    }
    FILE *f = fopen(path, "w");
    int bad = !f || fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n"
                               "%% spk bench_mmio\n%d %d %lld\n", NROWS, NROWS, n) < 0 ||
              fwrite(body, 1, len, f) != len;
    if (f && fclose(f) != 0)
        bad = 1;
    free(body);
    *nent = n;
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    char tmp[256];
    const char *path = argc > 1 ? argv[1] : NULL;
    long long generated = 0;
    if (!path) {
        snprintf(tmp, sizeof tmp, "/tmp/spk_bench_mmio_%ld.mtx", (long)getpid());
        path = tmp;
        double t0 = spk_now();
        if (generate(path, &generated) != 0) {
            fprintf(stderr, "bench_mmio: cannot write %s\n", path);
            return 3;
        }
        printf("generated %s: %lld entries in %.2f s\n", path, generated, spk_now() - t0);
    }
    spk_context *ctx = NULL;
    if (spk_context_create(&ctx, SPK_DEVICE_CPU) != SPK_OK) {
        fprintf(stderr, "bench_mmio: %s\n", spk_last_error(ctx));
        return 3;
    }
    double best = 1e300, best_cpu = 1e300;
    long long bytes = 0, entries = 0;
    int rc = 0;
    for (int rep = 0; rep < 3; rep++) {
        spk_mm_header h;
        spk_coo coo;
        double t0 = spk_now(), c0 = cpu_now();
        spk_status st = spk_mm_read_coo(ctx, path, &h, &coo);
        double t = spk_now() - t0, c = cpu_now() - c0;
        if (st != SPK_OK) {
            fprintf(stderr, "bench_mmio: %s: %s\n", spk_status_str(st), spk_last_error(ctx));
            rc = 2;
            break;
        }
        entries = h.nentries;
        spk_free(coo.row);
        spk_free(coo.col);
        spk_free(coo.val);
        printf("run %d: %.3f s wall, %.3f s cpu\n", rep + 1, t, c);
        if (t < best)
            best = t;
        if (c < best_cpu)
            best_cpu = c;
    }
    FILE *f = fopen(path, "rb");
    if (f && fseek(f, 0, SEEK_END) == 0)
        bytes = ftell(f);
    if (f)
        fclose(f);
    if (!rc) {
        printf("spk_mm_read_coo %s: %.1f MB, %lld entries\n", path, (double)bytes / 1e6,
               entries);
        printf("best of 3, wall: %.3f s = %.1f MB/s, %.3g entries/s\n", best,
               (double)bytes / 1e6 / best, (double)entries / best);
        printf("best of 3, cpu:  %.3f s = %.1f MB/s, %.3g entries/s\n", best_cpu,
               (double)bytes / 1e6 / best_cpu, (double)entries / best_cpu);
    }
    if (generated)
        remove(path);
    spk_context_destroy(ctx);
    return rc;
}
