/* bench/bench_util.h -- what the two GPU benchmark programs (bench_spmv.cu, bench_solvers.cu)
 * share: checked calls that print what failed and exit (a benchmark is a main(), so exiting
 * is its way to report; the library never does it), a watchdog so that a hung kernel ends the
 * run instead of stalling it, CUDA-event timing of a launch sequence (median), the device-to-
 * device copy bandwidth that every floor divides by, a seeded random vector, and small JSON
 * and argument helpers. C++ (nvcc) only, header-only: each program is one translation unit.
 *
 * Exit codes of the programs: 0 all ran and every result checked out, 1 a result failed its
 * check (FAIL lines), 2 bad usage, 3 a CUDA / cuSPARSE / cuBLAS / spk call failed, 4 the
 * watchdog fired, 77 no usable GPU (the ctest / run.sh skip code). */
#ifndef SPK_BENCH_UTIL_H
#define SPK_BENCH_UTIL_H

#include "../kernels/cuda_common.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <strings.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_EXIT_FAIL 1
#define BENCH_EXIT_USAGE 2
#define BENCH_EXIT_SYSTEM 3
#define BENCH_EXIT_TIMEOUT 4
#define BENCH_EXIT_NO_GPU 77

static const char *bench_prog = "bench";

/* ---- failures: print what failed, then exit ----------------------------------------------- */

static void bench_die(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;
static void bench_die(int code, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s: error: ", bench_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(code);
}

static void bench_cuda(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        bench_die(BENCH_EXIT_SYSTEM, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

static void bench_cusparse(cusparseStatus_t s, const char *what)
{
    if (s != CUSPARSE_STATUS_SUCCESS)
        bench_die(BENCH_EXIT_SYSTEM, "%s: cuSPARSE: %s (status %d)", what, cusparseGetErrorString(s),
                  (int)s);
}

static void bench_cublas(cublasStatus_t s, const char *what)
{
    if (s != CUBLAS_STATUS_SUCCESS)
        bench_die(BENCH_EXIT_SYSTEM, "%s: cuBLAS: %s (status %d)", what, cublasGetStatusString(s),
                  (int)s);
}

static void bench_spk(spk_context *ctx, spk_status st, const char *what)
{
    if (st != SPK_OK)
        bench_die(BENCH_EXIT_SYSTEM, "%s: %s: %s", what, spk_status_str(st), spk_last_error(ctx));
}

static void *bench_malloc(size_t n, size_t size)
{
    void *p = (n && size) ? calloc(n, size) : calloc(1, 16);
    if (!p)
        bench_die(BENCH_EXIT_SYSTEM, "out of host memory (%zu x %zu bytes)", n, size);
    return p;
}

/* ---- watchdog ------------------------------------------------------------------------------ */

/* What the program was doing when the alarm fired; written with write(2), which is
 * async-signal-safe (printf is not). */
static char bench_phase[256] = "starting";

static void bench_alarm(int sig)
{
    (void)sig;
    static const char a[] = ": error: watchdog: no progress within the time limit while: ";
    ssize_t r = write(2, bench_prog, strlen(bench_prog));
    r = write(2, a, sizeof a - 1);
    r = write(2, bench_phase, strlen(bench_phase));
    r = write(2, "\n", 1);
    (void)r;
    _exit(BENCH_EXIT_TIMEOUT);
}

/* Name the phase and give it `seconds` before the process ends with exit code 4. A kernel that
 * never returns blocks the host in cudaEventSynchronize forever; SIGALRM still ends it. */
static void bench_watchdog(unsigned seconds, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(bench_phase, sizeof bench_phase, fmt, ap);
    va_end(ap);
    signal(SIGALRM, bench_alarm);
    alarm(seconds);
}

/* ---- numbers ------------------------------------------------------------------------------- */

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (v is sorted in place). */
static double bench_median(double *v, int n)
{
    if (n <= 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* splitmix64 (Steele, Lea & Flood 2014): a seeded, platform-independent stream. */
static uint64_t bench_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* v[i] uniform in [-1, 1), the same numbers for the same seed on every machine. */
static void bench_random_vector(double *v, int64_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)(bench_rand(&s) >> 11) * 0x1p-52 - 1.0;
}

static double bench_now(void) { return spk_now(); }

/* ---- timing -------------------------------------------------------------------------------- */

/* Run launch() `warmup` times, then `reps` times with a CUDA event recorded on `stream` between
 * consecutive calls; return the median of the reps intervals in microseconds. The events time
 * the GPU's timeline, so launch overhead counts only where the GPU waits for the host (small
 * matrices), which is what a solver loop would see too. launch() exits on failure. */
template <class F>
static double bench_time_us(cudaStream_t stream, int warmup, int reps, F launch)
{
    if (reps < 1)
        reps = 1;
    for (int i = 0; i < warmup; i++)
        launch();
    cudaEvent_t *ev = (cudaEvent_t *)bench_malloc((size_t)reps + 1, sizeof *ev);
    double *ms = (double *)bench_malloc((size_t)reps, sizeof *ms);
    for (int i = 0; i <= reps; i++)
        bench_cuda(cudaEventCreate(&ev[i]), "cudaEventCreate");
    bench_cuda(cudaEventRecord(ev[0], stream), "cudaEventRecord");
    for (int i = 0; i < reps; i++) {
        launch();
        bench_cuda(cudaEventRecord(ev[i + 1], stream), "cudaEventRecord");
    }
    bench_cuda(cudaEventSynchronize(ev[reps]), "waiting for the timed launches");
    for (int i = 0; i < reps; i++) {
        float t = 0.0f;
        bench_cuda(cudaEventElapsedTime(&t, ev[i], ev[i + 1]), "cudaEventElapsedTime");
        ms[i] = (double)t;
    }
    for (int i = 0; i <= reps; i++)
        bench_cuda(cudaEventDestroy(ev[i]), "cudaEventDestroy");
    double med = 1e3 * bench_median(ms, reps);
    free(ev);
    free(ms);
    return med;
}

/* Device-to-device copy bandwidth in GB/s (1e9 bytes), counting the bytes read plus the bytes
 * written (2 x `bytes` per copy), median of `reps` cudaMemcpyAsync calls after `warmup`. The
 * buffers are far larger than the 50 MB L2 of an H100/H200, so this is DRAM bandwidth: the
 * same yardstick as the 4.25 TB/s. */
static double bench_copy_bandwidth(cudaStream_t stream, size_t bytes, int warmup, int reps)
{
    void *a = NULL, *b = NULL;
    bench_cuda(cudaMalloc(&a, bytes), "cudaMalloc (copy-bandwidth source)");
    bench_cuda(cudaMalloc(&b, bytes), "cudaMalloc (copy-bandwidth destination)");
    bench_cuda(cudaMemsetAsync(a, 0, bytes, stream), "cudaMemset (copy-bandwidth source)");
    double us = bench_time_us(stream, warmup, reps, [&]() {
        bench_cuda(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync device to device");
    });
    bench_cuda(cudaFree(a), "cudaFree");
    bench_cuda(cudaFree(b), "cudaFree");
    return 2.0 * (double)bytes / (us * 1e-6) * 1e-9;
}

/* "NVIDIA H200 (cc 9.0, 132 SMs, 140 GiB)" for the context's device. */
static void bench_gpu_name(char *name, size_t len)
{
    int dev = 0;
    cudaDeviceProp p;
    bench_cuda(cudaGetDevice(&dev), "cudaGetDevice");
    bench_cuda(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
    snprintf(name, len, "%.120s (cc %d.%d, %d SMs, %.0f GiB)", p.name, p.major, p.minor,
             p.multiProcessorCount, (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
}

/* The CUDA context of spk on the GPU, or exit 77 with the reason when there is none. */
static spk_context *bench_cuda_context(void)
{
    spk_context *ctx = NULL;
    spk_status st = spk_context_create(&ctx, SPK_DEVICE_CUDA);
    if (st) {
        fprintf(stderr, "%s: no usable GPU: %s: %s\n", bench_prog, spk_status_str(st),
                spk_last_error(ctx));
        spk_context_destroy(ctx);
        exit(BENCH_EXIT_NO_GPU);
    }
    return ctx;
}

static cudaStream_t bench_stream(spk_context *ctx)
{
    spk_cuda_state *cs = NULL;
    bench_spk(ctx, spk_cuda_state_of(ctx, &cs), "the context's CUDA state");
    return cs->stream;
}

/* ---- output helpers ------------------------------------------------------------------------ */

static void bench_date(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d", &tm);
}

/* A JSON string literal (quotes included). */
static void bench_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* A JSON number, or null for NaN / Inf (JSON has neither). */
static void bench_json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fprintf(f, "null");
}

/* A CSV field: quoted when it holds a comma or a quote. */
static void bench_csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int bench_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static FILE *bench_open_out(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        bench_die(BENCH_EXIT_SYSTEM, "cannot write %s: %s", path, strerror(errno));
    return f;
}

static void bench_close_out(FILE *f, const char *path)
{
    if (ferror(f) | (fclose(f) != 0))
        bench_die(BENCH_EXIT_SYSTEM, "writing %s failed", path);
}

/* Parse a positive integer option value or exit 2. */
static long bench_parse_int(const char *opt, const char *s, long min, long max)
{
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < min || v > max)
        bench_die(BENCH_EXIT_USAGE, "%s expects an integer in [%ld, %ld], got '%s'", opt, min, max,
                  s ? s : "(nothing)");
    return v;
}

#endif /* SPK_BENCH_UTIL_H */
