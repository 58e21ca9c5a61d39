/* kernels/vec_cpu.c -- the vector-ops table on the host: plain loops parallel with OpenMP.
 * It is the specification the CUDA table is tested against, so every function is the short
 * obviously right loop; fused steps do in one pass what the unfused math does in several.
 *
 * The reductions carry `simd` (above SPK_OMP_MIN_N): OpenMP then lets the compiler split each
 * chunk's sum over the lanes of a vector register (a reassociation C alone forbids), instead
 * of one chain of dependent adds at one add per FP latency (~4 cycles), which is slower than
 * a vector held in L2/L3 can be read. Measured on a 2-core EPYC (32 MB L3), the CG iteration
 * of poisson3d:64 (SpMV, a dot and the fused updates) interleaved with the plain loops, median of
 * 40 rounds: 2 threads 1.31 -> 1.27 ms (-3.5%), 1 thread unchanged within noise (2.00 ms): the
 * SpMV is 2/3 of the iteration (docs/benchmarks.md, CPU section).
 *
 * Every sum runs over spk_chunks(n) chunks fixed by n alone, one thread per chunk, and adds
 * the chunks' partials in chunk order (src/spk_internal.h): a result has the same bits on
 * every run and whatever the thread count, on one build, and stays within the tests' rounding
 * bound of the long-double sums. The methods' fused steps are in their rooms under solvers/. */
#include "../src/spk_internal.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

static spk_status v_alloc(spk_context *ctx, int64_t n, double **v)
{
    *v = spk_calloc(ctx, (size_t)(n > 0 ? n : 1), sizeof **v);
    if (!*v)
        return spk_fail(ctx, SPK_ERR_NOMEM, "vector of %lld doubles (%.3g MB): out of host memory",
                        (long long)n, 8e-6 * (double)n);
    return SPK_OK;
}

static void v_free(spk_context *ctx, double *v) { spk_free(v); }

static spk_status v_copy(spk_context *ctx, int64_t n, const double *x, double *y)
{
    if (n > 0 && x != y)
        memcpy(y, x, (size_t)n * sizeof *y);
    return SPK_OK;
}

static spk_status v_fill(spk_context *ctx, int64_t n, double a, double *y)
{
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++)
        y[i] = a;
    return SPK_OK;
}

/* One chunk's x'y, in lanes when `lanes` (the chunked sums' rule, src/spk_internal.h). Never
 * inlined: sum_products and the DIA SpMV's fused dot (kernels/dia_cpu.c) run this one compiled
 * body, so their sums have the same bits. */
#if defined(__GNUC__) && !defined(__clang__)
#define SPK_ONE_BODY __attribute__((noipa))     /* no inlining, cloning or IPA variants */
#else
#define SPK_ONE_BODY __attribute__((noinline))
#endif
SPK_ONE_BODY double spk_dot_chunk(const double *x, const double *y, int64_t lo, int64_t hi,
                                  int lanes)
{
    double s = 0.0;
#pragma omp simd reduction(+ : s) if (lanes)
    for (int64_t i = lo; i < hi; i++)
        s += x[i] * y[i];
    return s;
}

/* x'y. dot and nrm2 share it, so that nrm2(x) == sqrt(dot(x, x)) holds to the bit. */
static double sum_products(int64_t n, const double *x, const double *y)
{
    double part[SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1)
    for (int c = 0; c < nc; c++)
        part[c] = spk_dot_chunk(x, y, spk_chunk_lo(n, nc, c), spk_chunk_lo(n, nc, c + 1), nc > 1);
    return spk_chunks_sum(part, nc);
}

static spk_status v_dot(spk_context *ctx, int64_t n, const double *x, const double *y, double *r)
{
    *r = sum_products(n, x, y);
    return SPK_OK;
}

/* Scaled sum of squares (as LAPACK's dnrm2) would cost a second pass; the plain sum is
 * safe for |x_i| in [1e-154, 1e154], and a non-finite result is rechecked with scaling. */
static spk_status v_nrm2(spk_context *ctx, int64_t n, const double *x, double *r)
{
    double s = sum_products(n, x, x);
    if (isfinite(s) && (s > 1e-290)) {
        *r = sqrt(s);
        return SPK_OK;
    }
    double amax = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double a = fabs(x[i]);
        if (isnan(a)) {                  /* wherever it is: a later entry must not hide it */
            *r = a;
            return SPK_OK;
        }
        if (a > amax)
            amax = a;
    }
    if (!isfinite(amax) || amax == 0.0) {
        *r = amax;
        return SPK_OK;
    }
    s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += (x[i] / amax) * (x[i] / amax);
    *r = amax * sqrt(s);
    return SPK_OK;
}

void spk_host_dot2(int64_t n, const double *x, const double *y, const double *z, double *r0,
                   double *r1)
{
    double part[2][SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1)
    for (int c = 0; c < nc; c++) {
        const int64_t lo = spk_chunk_lo(n, nc, c), hi = spk_chunk_lo(n, nc, c + 1);
        double s0 = 0.0, s1 = 0.0;
#pragma omp simd reduction(+ : s0, s1) if (nc > 1)
        for (int64_t i = lo; i < hi; i++) {
            s0 += x[i] * y[i];
            s1 += x[i] * z[i];
        }
        part[0][c] = s0;
        part[1][c] = s1;
    }
    *r0 = spk_chunks_sum(part[0], nc);
    *r1 = spk_chunks_sum(part[1], nc);
}

static spk_status v_dot2(spk_context *ctx, int64_t n, const double *x, const double *y,
                         const double *z, double *r0, double *r1)
{
    spk_host_dot2(n, x, y, z, r0, r1);
    return SPK_OK;
}

static spk_status v_axpy(spk_context *ctx, int64_t n, double a, const double *x, double *y)
{
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++)
        y[i] += a * x[i];
    return SPK_OK;
}

static spk_status v_axpby(spk_context *ctx, int64_t n, double a, const double *x, double b,
                          double *y)
{
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++)
        y[i] = b == 0.0 ? a * x[i] : a * x[i] + b * y[i];
    return SPK_OK;
}

static spk_status v_scal(spk_context *ctx, int64_t n, double a, double *x)
{
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++)
        x[i] *= a;
    return SPK_OK;
}

static spk_status v_pmul(spk_context *ctx, int64_t n, const double *d, const double *x, double *y)
{
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++)
        y[i] = d[i] * x[i];
    return SPK_OK;
}

static spk_status v_pmul_axpby(spk_context *ctx, int64_t n, double a, const double *d,
                               const double *x, double b, double *y)
{
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++)
        y[i] = b == 0.0 ? a * (d[i] * x[i]) : a * (d[i] * x[i]) + b * y[i];
    return SPK_OK;
}

static spk_status v_step(spk_context *ctx, int64_t n, const double *t, const spk_step *s)
{
    const spk_step c = *s;                 /* a local copy: y cannot alias its fields */
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++)
        spk_step_put(&c, i, t ? t[i] : 0.0);
    return SPK_OK;
}

static spk_status v_invert(spk_context *ctx, int64_t n, double *d, int allow_negative,
                           int64_t *bad)
{
    *bad = -1;
    for (int64_t i = 0; i < n; i++) {
        /* 1 / d finite: neither 0 nor a subnormal whose reciprocal overflows */
        int ok = (allow_negative || d[i] > 0.0) && isfinite(d[i]) && isfinite(1.0 / d[i]);
        if (!ok) {
            *bad = i;
            return SPK_OK;
        }
    }
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++)
        d[i] = 1.0 / d[i];
    return SPK_OK;
}

static spk_status v_gemv_n_sub(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                               const double *h, double *w)
{
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++) {
        double s = 0.0;
        for (int j = 0; j < k; j++)
            s += V[(int64_t)j * ldv + i] * h[j];
        w[i] -= s;
    }
    return SPK_OK;
}

static spk_status v_sync(spk_context *ctx) { return SPK_OK; }

/* ---- device-resident scalars: on the host, plain copies (kernels/steps_cuda.cu on the GPU) - */

static spk_status v_dot_sink(spk_context *ctx, int64_t n, const double *x, const double *y,
                             const spk_dot_sink *sink)
{
    if (!(sink->skip && *sink->skip))
        *sink->out = sum_products(n, x, y);
    return SPK_OK;
}

/* Host memory is the device memory here: a fetch is a copy, done at once. */
static spk_status v_fetch(spk_context *ctx, const void *dev, size_t bytes, int slot, void *host)
{
    memcpy(host, dev, bytes);
    return SPK_OK;
}

static spk_status v_fetch_wait(spk_context *ctx, int slot) { return SPK_OK; }

static spk_status v_put(spk_context *ctx, const void *host, size_t bytes, void *dev)
{
    memcpy(dev, host, bytes);
    return SPK_OK;
}

static const spk_vec_ops cpu_ops = {
    .device = SPK_DEVICE_CPU,
    .alloc = v_alloc,
    .free = v_free,
    .upload = v_copy,                   /* host memory is the device memory: copies */
    .download = v_copy,
    .copy = v_copy,
    .fill = v_fill,
    .dot = v_dot,
    .nrm2 = v_nrm2,
    .dot2 = v_dot2,
    .axpy = v_axpy,
    .axpby = v_axpby,
    .scal = v_scal,
    .pmul = v_pmul,
    .pmul_axpby = v_pmul_axpby,
    .step = v_step,
    .invert = v_invert,
    .gemv_n_sub = v_gemv_n_sub,
    .sync = v_sync,
    .dot_sink = v_dot_sink,
    .fetch = v_fetch,
    .fetch_wait = v_fetch_wait,
    .put = v_put,
    /* no steps: solvers/batch.c calls each step itself */
};

const spk_vec_ops *spk_vec_ops_cpu(void) { return &cpu_ops; }

/* ---- the rows of a distributed vector: the local sums above, then one reduction each ---- */

spk_status spk_comm_allreduce(spk_context *ctx, double *v, int n)
{
    return ctx->comm ? ctx->comm->allreduce(ctx, v, n) : SPK_OK;
}

/* The local sums of ctx's device table, then one reduction each: the CPU ranks' table and
 * a GPU rank's composed one share them. */
static spk_status d_dot(spk_context *ctx, int64_t n, const double *x, const double *y, double *r)
{
    spk_status st = spk_vec_ops_for(ctx->device)->dot(ctx, n, x, y, r);
    return st ? st : spk_comm_allreduce(ctx, r, 1);
}

/* The sum of squares over the ranks; outside its safe range (as v_nrm2), each rank's scaled
 * norm, scaled again by the largest of them. A NaN anywhere makes the first sum NaN. */
static spk_status d_nrm2(spk_context *ctx, int64_t n, const double *x, double *r)
{
    const spk_vec_ops *loc = spk_vec_ops_for(ctx->device);
    double s;
    spk_status st = loc->dot(ctx, n, x, x, &s);
    if (!st)
        st = spk_comm_allreduce(ctx, &s, 1);
    if (st || isnan(s) || (isfinite(s) && s > 1e-290)) {
        *r = sqrt(s);
        return st;
    }
    double nl, m;
    if ((st = loc->nrm2(ctx, n, x, &nl)))
        return st;
    m = nl;
    if ((st = ctx->comm->allmax(ctx, &m, 1)))
        return st;
    if (!isfinite(m) || m == 0.0) {
        *r = m;
        return SPK_OK;
    }
    double t = (nl / m) * (nl / m);
    st = spk_comm_allreduce(ctx, &t, 1);
    *r = m * sqrt(t);
    return st;
}

static spk_status d_dot2(spk_context *ctx, int64_t n, const double *x, const double *y,
                         const double *z, double *r0, double *r1)
{
    double v[2];
    spk_status st = spk_vec_ops_for(ctx->device)->dot2(ctx, n, x, y, z, &v[0], &v[1]);
    if (!st)
        st = spk_comm_allreduce(ctx, v, 2);
    *r0 = v[0];
    *r1 = v[1];
    return st;
}

/* A skipped sink (the iterations past the stop, the same on every rank) reduces nothing. */
static spk_status d_dot_sink(spk_context *ctx, int64_t n, const double *x, const double *y,
                             const spk_dot_sink *sink)
{
    if (sink->skip && *sink->skip)
        return SPK_OK;
    *sink->out = sum_products(n, x, y);
    return spk_comm_allreduce(ctx, sink->out, 1);
}

/* Device-resident scalars do not cross ranks: the composed steps keep theirs on the host. */
static spk_status c_dot_sink(spk_context *ctx, int64_t n, const double *x, const double *y,
                             const spk_dot_sink *sink)
{
    return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "a device-resident dot product over ranks: "
                    "the distributed steps reduce on the host");
}

/* ---- the tables over ranks: a device's own table with its reductions summed over the ranks,
 * made once (the CUDA table comes from the backend loaded at run time): CPU ranks' host table
 * (SPK_DIST_HOST), and the composed steps' tables of CPU and GPU ranks. ---- */

static spk_vec_ops host_dist, cpu_composed, cuda_composed;
static pthread_once_t host_once = PTHREAD_ONCE_INIT, cpu_once = PTHREAD_ONCE_INIT,
                      cuda_once = PTHREAD_ONCE_INIT;

static void over_ranks(spk_vec_ops *t, const spk_vec_ops *base, int kind)
{
    *t = *base;
    t->dot = d_dot;
    t->nrm2 = d_nrm2;
    t->dot2 = d_dot2;
    t->dot_sink = base->device == SPK_DEVICE_CPU ? d_dot_sink : c_dot_sink;
    t->steps = NULL;                                 /* each step called by the host */
    t->distributed = kind;
}

static void host_make(void) { over_ranks(&host_dist, &cpu_ops, SPK_DIST_HOST); }
static void cpu_composed_make(void) { over_ranks(&cpu_composed, &cpu_ops, SPK_DIST_COMPOSED); }
static void cuda_composed_make(void)
{
    over_ranks(&cuda_composed, spk_vec_ops_cuda(), SPK_DIST_COMPOSED);
}

const spk_vec_ops *spk_vec_ops_dist_for(const spk_context *ctx)
{
    if (ctx->device == SPK_DEVICE_CPU && !ctx->tune.mpi_composed) {
        pthread_once(&host_once, host_make);
        return &host_dist;
    }
    if (ctx->device == SPK_DEVICE_CPU) {
        pthread_once(&cpu_once, cpu_composed_make);
        return &cpu_composed;
    }
    pthread_once(&cuda_once, cuda_composed_make);
    return &cuda_composed;
}

const spk_vec_ops *spk_vec_ops_for(spk_device dev)
{
    return dev == SPK_DEVICE_CUDA ? spk_vec_ops_cuda() : &cpu_ops;
}
