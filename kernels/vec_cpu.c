/* kernels/vec_cpu.c -- the vector-ops table on the host: plain loops parallel with OpenMP.
 * It is the specification the CUDA table is tested against, so every function is the short
 * obviously right loop; fused steps do in one pass what the unfused math does in several.
 *
 * The reductions carry `simd` (above SPK_OMP_MIN_N): OpenMP then lets the compiler split each
 * chunk's sum over the lanes of a vector register (a reassociation C alone forbids), instead
 * of one chain of dependent adds at one add per FP latency (~4 cycles), which is slower than
 * a vector held in L2/L3 can be read. Measured on a 2-core EPYC (32 MB L3), the CG iteration
 * of poisson3d:64 (SpMV + dot + cg_update + xpay) interleaved with the plain loops, median of
 * 40 rounds: 2 threads 1.31 -> 1.27 ms (-3.5%), 1 thread unchanged within noise (2.00 ms): the
 * SpMV is 2/3 of the iteration (docs/benchmarks.md, CPU section).
 *
 * Every sum runs over spk_chunks(n) chunks fixed by n alone, one thread per chunk, and adds
 * the chunks' partials in chunk order (src/spk_internal.h): a result has the same bits on
 * every run and whatever the thread count, on one build, and stays within the tests' rounding
 * bound of the long-double sums. */
#include "../src/spk_internal.h"

#include <math.h>
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

static spk_status v_invert(spk_context *ctx, int64_t n, double *d, int allow_negative,
                           int64_t *bad)
{
    *bad = -1;
    for (int64_t i = 0; i < n; i++) {
        int ok = allow_negative ? (d[i] != 0.0 && isfinite(d[i])) : (d[i] > 0.0 && isfinite(d[i]));
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

/* Two loops, one per shape, so that each is a straight vectorizable body: without M, z is r
 * (or a copy of it) and r'z = r'r. */
static spk_status v_cg_update(spk_context *ctx, int64_t n, double a, const double *p,
                              const double *q, double *x, double *r, const double *dinv,
                              double *z, double *rr, double *rz)
{
    double part[2][SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1)
    for (int c = 0; c < nc; c++) {
        const int64_t lo = spk_chunk_lo(n, nc, c), hi = spk_chunk_lo(n, nc, c + 1);
        double s_rr = 0.0, s_rz = 0.0;
        if (!dinv) {
#pragma omp simd reduction(+ : s_rr) if (nc > 1)
            for (int64_t i = lo; i < hi; i++) {
                x[i] += a * p[i];               /* x = x + alpha p   */
                double ri = r[i] - a * q[i];    /* r = r - alpha A p */
                r[i] = ri;
                s_rr += ri * ri;
            }
        } else {
#pragma omp simd reduction(+ : s_rr, s_rz) if (nc > 1)
            for (int64_t i = lo; i < hi; i++) {
                x[i] += a * p[i];
                double ri = r[i] - a * q[i];
                r[i] = ri;
                double zi = dinv[i] * ri;       /* z = M^-1 r        */
                z[i] = zi;
                s_rr += ri * ri;
                s_rz += ri * zi;
            }
        }
        part[0][c] = s_rr;
        part[1][c] = s_rz;
    }
    if (!dinv && z != r && n > 0)
        memcpy(z, r, (size_t)n * sizeof *z);
    *rr = spk_chunks_sum(part[0], nc);
    *rz = dinv ? spk_chunks_sum(part[1], nc) : *rr;
    return SPK_OK;
}

static spk_status v_xpay(spk_context *ctx, int64_t n, const double *z, double beta, double *p)
{
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++)
        p[i] = z[i] + beta * p[i];
    return SPK_OK;
}

static spk_status v_bicg_p(spk_context *ctx, int64_t n, const double *r, double beta,
                           double omega, const double *v, double *p)
{
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++)
        p[i] = r[i] + beta * (p[i] - omega * v[i]);
    return SPK_OK;
}

static spk_status v_gemv_t(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                           const double *w, double *h)
{
    for (int j = 0; j < k; j++) {
        const double *vj = V + (int64_t)j * ldv;
        h[j] = sum_products(n, vj, w);
    }
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

/* The specification: the four passes, so CPU GMRES keeps its results to the bit. */
static spk_status v_cgs2(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                         double *w, double *out)
{
    if (n < 0 || k < 1 || (n > 0 && ldv < n))
        return spk_fail(ctx, SPK_ERR_ARG, "cgs2: n = %lld, k = %d, ldv = %lld (need n >= 0, "
                        "k >= 1, ldv >= n)", (long long)n, k, (long long)ldv);
    spk_status st;
    if ((st = v_gemv_t(ctx, n, k, V, ldv, w, out)) ||
        (st = v_gemv_n_sub(ctx, n, k, V, ldv, out, w)) ||
        (st = v_gemv_t(ctx, n, k, V, ldv, w, out + k)) ||
        (st = v_gemv_n_sub(ctx, n, k, V, ldv, out + k, w)))
        return st;
    out[2 * k] = sum_products(n, w, w);
    return SPK_OK;
}

static spk_status v_sync(spk_context *ctx) { return SPK_OK; }

/* ---- the fused CG iteration (solvers/cg.c; the CUDA twin is kernels/cg_cuda.cu) ---------- */

static spk_status v_dot_sink(spk_context *ctx, int64_t n, const double *x, const double *y,
                             const spk_dot_sink *sink)
{
    if (!(sink->skip && *sink->skip))
        *sink->out = sum_products(n, x, y);
    return SPK_OK;
}

static spk_status v_cg_r(spk_context *ctx, int64_t n, spk_cg_scalars *S, const double *q,
                         double *r, const double *dinv)
{
    if (S->state != SPK_CG_RUN)
        return SPK_OK;
    const double pq = S->pq;
    if (!(pq > 0.0)) {                            /* p'Ap <= 0: A not SPD, or NaN           */
        S->state = SPK_CG_DONE;
        S->why = SPK_CG_WHY_PQ;
        return SPK_OK;
    }
    const double alpha = S->rz / pq;
    double part[2][SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1)
    for (int c = 0; c < nc; c++) {
        const int64_t lo = spk_chunk_lo(n, nc, c), hi = spk_chunk_lo(n, nc, c + 1);
        double s_rr = 0.0, s_rz = 0.0;
        if (dinv) {
#pragma omp simd reduction(+ : s_rr, s_rz) if (nc > 1)
            for (int64_t i = lo; i < hi; i++) {
                double ri = r[i] - alpha * q[i];
                r[i] = ri;
                s_rr += ri * ri;
                s_rz += ri * (dinv[i] * ri);
            }
        } else {
#pragma omp simd reduction(+ : s_rr) if (nc > 1)
            for (int64_t i = lo; i < hi; i++) {
                double ri = r[i] - alpha * q[i];
                r[i] = ri;
                s_rr += ri * ri;
            }
        }
        part[0][c] = s_rr;
        part[1][c] = s_rz;
    }
    const double rr = spk_chunks_sum(part[0], nc);
    const double rz = dinv ? spk_chunks_sum(part[1], nc) : rr;
    S->alpha = alpha;
    S->rr = rr;
    S->rz_new = rz;
    S->it++;
    S->hist[S->it % SPK_CG_HIST] = rr;
    if (sqrt(rr) <= S->thr || !isfinite(rr)) {
        S->state = SPK_CG_LAST;
        S->why = SPK_CG_WHY_STOP;
    } else if (!(rz > 0.0)) {                     /* r'M^-1 r <= 0: M not SPD               */
        S->state = SPK_CG_LAST;
        S->why = SPK_CG_WHY_RZ;
    }
    return SPK_OK;
}

static spk_status v_cg_xp(spk_context *ctx, int64_t n, spk_cg_scalars *S, double *x, double *p,
                          const double *r, const double *dinv)
{
    if (S->state == SPK_CG_DONE)
        return SPK_OK;
    const double alpha = S->alpha;
    if (S->state == SPK_CG_LAST) {
#pragma omp parallel for simd schedule(static) if (n > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < n; i++)
            x[i] += alpha * p[i];
        S->state = SPK_CG_DONE;
        return SPK_OK;
    }
    const double beta = S->rz_new / S->rz;
#pragma omp parallel for simd schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++) {
        const double pi = p[i];
        x[i] += alpha * pi;
        p[i] = (dinv ? dinv[i] * r[i] : r[i]) + beta * pi;
    }
    S->rz = S->rz_new;
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
    SPK_DEVICE_CPU, v_alloc, v_free, v_copy, v_copy, v_copy, v_fill, v_dot, v_nrm2, v_dot2,
    v_axpy, v_axpby, v_scal, v_pmul, v_invert, v_cg_update, v_xpay, v_bicg_p, v_gemv_t,
    v_gemv_n_sub, v_cgs2, v_sync, v_dot_sink, v_cg_r, v_cg_xp, v_fetch, v_fetch_wait, v_put,
    NULL, NULL,                         /* steps, graph_free: solvers/batch.c calls step itself */
};

const spk_vec_ops *spk_vec_ops_cpu(void) { return &cpu_ops; }

const spk_vec_ops *spk_vec_ops_for(spk_device dev)
{
    return dev == SPK_DEVICE_CUDA ? spk_vec_ops_cuda() : &cpu_ops;
}
