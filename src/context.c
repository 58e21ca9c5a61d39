/* src/context.c -- the context: device resolution, the last-error message, counted
 * allocation, and the name tables of the public enums. */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE, beside the build's _POSIX_C_SOURCE */
#include "spk_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef __linux__
#include <sys/mman.h>
#endif

spk_status spk_vfail(spk_context *ctx, spk_status st, const char *fmt, va_list ap)
{
    if (ctx)
        vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
    return st;
}

spk_status spk_fail(spk_context *ctx, spk_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    spk_vfail(ctx, st, fmt, ap);
    va_end(ap);
    return st;
}

/* C++ declares the counter as a plain uint64_t (spk_internal.h): the same storage. */
_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t) &&
               _Alignof(_Atomic uint64_t) == _Alignof(uint64_t),
               "the atomic allocation counter must have the layout C++ sees");

/* Relaxed: the count orders nothing; each caller still gets a number of its own, so an
 * injected failure happens once even if two threads allocate at the same time. */
uint64_t spk_alloc_tick(spk_context *ctx)
{
    return atomic_fetch_add_explicit(&ctx->alloc_count, 1, memory_order_relaxed) + 1;
}

/* The failure-injection hook (fail_alloc_at) lets a test make the k-th allocation fail and
 * check that every caller turns it into SPK_ERR_NOMEM without leaking. */
static int alloc_should_fail(spk_context *ctx)
{
    if (!ctx)
        return 0;
    const uint64_t k = spk_alloc_tick(ctx);
    return ctx->fail_alloc_at && k == ctx->fail_alloc_at;
}

/* ---- how much host memory may be committed ------------------------------------------------ */

/* A resource limit in bytes, or 0 when there is none. */
static double rlimit_bytes(int resource)
{
    struct rlimit rl;
    if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0.0;
    return (double)rl.rlim_cur;
}


/* Physical memory rather than what is free now: the answer must not depend on what other
 * processes happen to hold (the same input must get the same verdict twice), and the
 * address-space limits are how a caller asks for less. */
double spk_host_memory(const spk_context *ctx, char *what, size_t what_len)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double mem = pages > 0 && page > 0 ? (double)pages * (double)page : 1e30;
    const char *form = "this machine's %.3g GB of memory";
    const struct { double bytes; const char *form; } lim[] = {
        {rlimit_bytes(RLIMIT_AS), "the %.3g GB address-space limit (ulimit -v)"},
        {rlimit_bytes(RLIMIT_DATA), "the %.3g GB data-size limit (ulimit -d)"},
        {ctx ? ctx->tune.host_memory : spk_tuning_host_memory(), "the %.3g GB that "
                                                                  "SPK_HOST_MEMORY allows"},
        {ctx ? ctx->host_memory_limit : 0.0, "the %.3g GB this context may use"},
    };
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
        if (lim[i].bytes > 0 && lim[i].bytes < mem) {
            mem = lim[i].bytes;
            form = lim[i].form;
        }
    if (what && what_len)
        snprintf(what, what_len, form, mem / 1e9);
    return mem;
}

spk_status spk_check_memory(spk_context *ctx, double bytes, const char *fmt, ...)
{
    char limit[96];
    const double mem = spk_host_memory(ctx, limit, sizeof limit);
    if (!(bytes > mem))
        return SPK_OK;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return spk_fail(ctx, SPK_ERR_NOMEM, "%s needs %.3g GB, more than %s", what, bytes / 1e9,
                    limit);
}

/* Large arrays (a matrix's values and indices, the solver's vectors) are aligned to 2 MiB and
 * advised for transparent huge pages, as NumPy does for its own arrays of 4 MiB and more: where
 * the kernel's THP mode is "madvise" (Debian's default) a plain malloc gets 4 KiB pages, and a
 * CPU SpMV streaming tens of megabytes then misses the TLB every 4 KiB of each stream (about
 * -4% per CPU CG iteration with the advice: docs/benchmarks.md). The knob SPK_HUGEPAGES=0 turns
 * it off (src/tuning.c). */
#if defined(__linux__) && defined(MADV_HUGEPAGE)
#define SPK_HUGE_ALIGN ((size_t)2 << 20)

static int huge_wanted(const spk_context *ctx, size_t bytes)
{
    return bytes >= SPK_HUGE_ALIGN && (!ctx || ctx->tune.hugepages);
}

static void *huge_alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, SPK_HUGE_ALIGN, bytes))
        return NULL;
    /* whole huge pages only: a tail of the array shorter than 2 MiB keeps 4 KiB pages, so
     * an array of 2 MiB + 8 bytes does not take two huge pages. Advice: a kernel without THP
     * just says no. */
    (void)madvise(p, bytes & ~(SPK_HUGE_ALIGN - 1), MADV_HUGEPAGE);
    return p;
}
#else
static int huge_wanted(const spk_context *ctx, size_t bytes) { (void)ctx; (void)bytes; return 0; }
static void *huge_alloc(size_t bytes) { return malloc(bytes); }
#endif

/* The large calloc's zeroing, by every thread, each its contiguous share as the kernels' static
 * schedules split an array: on a NUMA machine each page then lands, at this first touch, by
 * the threads that will use it (what calloc's lazily zeroed pages gave before). */
static void zero_shared(unsigned char *p, size_t bytes)
{
    const size_t block = (size_t)64 << 10;
    const int64_t nb = (int64_t)((bytes + block - 1) / block);
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        const size_t off = (size_t)b * block;
        memset(p + off, 0, bytes - off < block ? bytes - off : block);
    }
}

void *spk_malloc(spk_context *ctx, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    if (alloc_should_fail(ctx))
        return NULL;
    size_t bytes = n * size > 0 ? n * size : 1;
    return huge_wanted(ctx, bytes) ? huge_alloc(bytes) : malloc(bytes);
}

void *spk_calloc(spk_context *ctx, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    if (alloc_should_fail(ctx))
        return NULL;
    size_t bytes = n * size;
    if (!huge_wanted(ctx, bytes))
        return calloc(n ? n : 1, size ? size : 1);
    void *p = huge_alloc(bytes);
    if (p)
        zero_shared(p, bytes);
    return p;
}

void *spk_realloc(spk_context *ctx, void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    if (alloc_should_fail(ctx))
        return NULL;
    return realloc(p, n * size > 0 ? n * size : 1);   /* posix_memalign's memory too */
}

void spk_free(void *p) { free(p); }

void spk_touch_pages(void *p, size_t bytes)
{
    const size_t page = 4096;
    unsigned char *c = (unsigned char *)p;
    const int64_t np = (int64_t)((bytes + page - 1) / page);
#pragma omp parallel for schedule(static) if (np > 256)
    for (int64_t i = 0; i < np; i++)
        c[(size_t)i * page] = 0;
}

double spk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

spk_status spk_context_create(spk_context **out, spk_device device)
{
    if (!out)
        return SPK_ERR_ARG;
    *out = NULL;
    spk_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return SPK_ERR_NOMEM;
    *out = ctx;
    ctx->device = SPK_DEVICE_CPU;
    spk_tuning_default(&ctx->tune);
    if (device != SPK_DEVICE_AUTO && device != SPK_DEVICE_CPU && device != SPK_DEVICE_CUDA)
        return spk_fail(ctx, SPK_ERR_ARG, "unknown device %d", (int)device);
    spk_status st = spk_tuning_read(ctx, &ctx->tune);
    if (st)
        return st;

    char name[128] = "", why[256] = "";
    int have_gpu = (device != SPK_DEVICE_CPU) && spk_cuda_probe(name, sizeof name, why, sizeof why);
    if (device == SPK_DEVICE_CUDA && !have_gpu) {
        ctx->device = SPK_DEVICE_CPU;
        return spk_fail(ctx, spk_has_cuda() ? SPK_ERR_CUDA : SPK_ERR_NOT_COMPILED,
                        "SPK_DEVICE_CUDA: no usable GPU: %s", why);
    }
    if (have_gpu) {
        ctx->device = SPK_DEVICE_CUDA;
        snprintf(ctx->device_name, sizeof ctx->device_name, "%s", name);
        return spk_cuda_init(ctx);
    }
    ctx->device = SPK_DEVICE_CPU;
#ifdef _OPENMP
    snprintf(ctx->device_name, sizeof ctx->device_name, "CPU (%d OpenMP threads)",
             omp_get_max_threads());
#else
    snprintf(ctx->device_name, sizeof ctx->device_name, "CPU (1 thread)");
#endif
    if (device == SPK_DEVICE_AUTO && why[0])
        snprintf(ctx->msg, sizeof ctx->msg, "%s", why); /* why auto chose the CPU */
    return SPK_OK;
}

void spk_context_destroy(spk_context *ctx)
{
    if (!ctx)
        return;
    spk_cuda_fini(ctx);
    if (ctx->comm)
        ctx->comm->destroy(ctx->comm);
    free(ctx);
}

spk_device spk_context_device(const spk_context *ctx)
{
    return ctx ? ctx->device : SPK_DEVICE_CPU;
}

const char *spk_context_device_name(const spk_context *ctx)
{
    return ctx ? ctx->device_name : "";
}

uint64_t spk_context_alloc_count(const spk_context *ctx)
{
    return ctx ? atomic_load_explicit(&ctx->alloc_count, memory_order_relaxed) : 0;
}

const char *spk_last_error(const spk_context *ctx)
{
    return ctx ? ctx->msg : "";
}

const char *spk_status_str(spk_status st)
{
    switch (st) {
    case SPK_OK: return "success";
    case SPK_ERR_ARG: return "invalid argument";
    case SPK_ERR_NOMEM: return "out of host memory";
    case SPK_ERR_IO: return "input/output error";
    case SPK_ERR_PARSE: return "malformed input";
    case SPK_ERR_UNSUPPORTED: return "unsupported input";
    case SPK_ERR_CUDA: return "CUDA error";
    case SPK_ERR_NOT_COMPILED: return "not in this build or installation";
    case SPK_ERR_MPI: return "MPI error";
    }
    return "unknown status";
}

const char *spk_reason_str(spk_reason r)
{
    switch (r) {
    case SPK_REASON_NONE: return "NONE";
    case SPK_CONVERGED_RTOL: return "CONVERGED_RTOL";
    case SPK_CONVERGED_ATOL: return "CONVERGED_ATOL";
    case SPK_CONVERGED_HAPPY_BREAKDOWN: return "CONVERGED_HAPPY_BREAKDOWN";
    case SPK_CONVERGED_ZERO_RHS: return "CONVERGED_ZERO_RHS";
    case SPK_DIVERGED_MAXIT: return "DIVERGED_MAXIT";
    case SPK_DIVERGED_BREAKDOWN: return "DIVERGED_BREAKDOWN";
    case SPK_DIVERGED_INDEFINITE: return "DIVERGED_INDEFINITE";
    case SPK_DIVERGED_NANORINF: return "DIVERGED_NANORINF";
    case SPK_DIVERGED_TRUE_RESIDUAL_MISMATCH: return "DIVERGED_TRUE_RESIDUAL_MISMATCH";
    case SPK_DIVERGED_DTOL: return "DIVERGED_DTOL";
    case SPK_DIVERGED_STAGNATION: return "DIVERGED_STAGNATION";
    case SPK_DIVERGED_TIME_LIMIT: return "DIVERGED_TIME_LIMIT";
    case SPK_DIVERGED_INTERRUPTED: return "DIVERGED_INTERRUPTED";
    }
    return "UNKNOWN";
}

static const char *const format_names[SPK_FMT_COUNT] = {"auto", "coo", "csr", "ell", "hyb", "jds",
                                                             "dia", "bsr", "sell"};
static const char *const method_names[] = {"auto", "cg", "bicgstab", "gmres", "fgmres", "minres"};
#define METHOD_COUNT ((int)(sizeof method_names / sizeof method_names[0]))
static const char *const device_names[] = {"auto", "cpu", "cuda"};

const char *spk_format_str(spk_format f)
{
    return (unsigned)f < SPK_FMT_COUNT ? format_names[f] : "unknown";
}

const char *spk_method_str(spk_method m)
{
    return (unsigned)m < METHOD_COUNT ? method_names[m] : "unknown";
}

const char *spk_precision_str(spk_precision p)
{
    return p == SPK_PRECISION_DOUBLE ? "double"
           : p == SPK_PRECISION_MIXED ? "mixed"
           : p == SPK_PRECISION_AUTO  ? "auto"
                                      : "unknown";
}

const char *spk_device_str(spk_device d)
{
    return (unsigned)d < 3 ? device_names[d] : "unknown";
}

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

spk_status spk_format_parse(const char *s, spk_format *f)
{
    int i = lookup(s, format_names, SPK_FMT_COUNT);
    if (i < 0 || !f)
        return SPK_ERR_ARG;
    *f = (spk_format)i;
    return SPK_OK;
}

spk_status spk_method_parse(const char *s, spk_method *m)
{
    int i = lookup(s, method_names, METHOD_COUNT);
    if (i < 0 || !m)
        return SPK_ERR_ARG;
    *m = (spk_method)i;
    return SPK_OK;
}

spk_status spk_device_parse(const char *s, spk_device *d)
{
    int i = lookup(s, device_names, 3);
    if (i < 0 && s && strcmp(s, "gpu") == 0)
        i = SPK_DEVICE_CUDA;           /* "gpu" is the command line's word for CUDA */
    if (i < 0 || !d)
        return SPK_ERR_ARG;
    *d = (spk_device)i;
    return SPK_OK;
}

void spk_options_default(spk_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->method = SPK_METHOD_AUTO;
    opt->precond = SPK_PRECOND_AUTO;
    opt->format = SPK_FMT_AUTO;
    opt->rtol = 1e-8;
    opt->atol = 0.0;
    opt->dtol = 1e5;
    opt->stagnation = 2000;
    opt->max_time = 0.0;
    opt->maxiter = 0;
    opt->restart = 30;
}

void spk_result_free(spk_result *res)
{
    if (!res)
        return;
    free(res->history);
    res->history = NULL;
    res->history_len = 0;
}
