/* solvers/cg_cpu.c -- the fused CG steps on the host (solvers/cg_scalar.h): the specification
 * solvers/cg_cuda.cu is tested against. Each step is one OpenMP loop over its vectors, then
 * the scalar step of solvers/cg_scalar.h on the block, as the CUDA kernels' last block does.
 * Reductions run over chunks fixed by n, added in chunk order (src/spk_internal.h): the same
 * bits whatever the thread count. */
#include "cg_scalar.h"

static spk_status h_r(spk_context *ctx, int64_t n, spk_cg_scalars *S, const double *q,
                      double *r, const double *dinv)
{
    if (S->state != SPK_CG_RUN)
        return SPK_OK;
    double alpha;
    const int ok = spk_cg_alpha(S, &alpha);
    if (!ok) {
        spk_cg_after_r(S, ok, alpha, 0.0, 0.0);
        return SPK_OK;
    }
    double part[2][SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1)
    for (int c = 0; c < nc; c++) {
        const int64_t lo = spk_chunk_lo(n, nc, c), hi = spk_chunk_lo(n, nc, c + 1);
        double s_rr = 0.0, s_rz = 0.0;
        if (dinv) {
#pragma omp simd reduction(+ : s_rr, s_rz) if (nc > 1)
            for (int64_t i = lo; i < hi; i++) {
                double ri = r[i] - alpha * q[i];        /* r = r - alpha A p        */
                r[i] = ri;
                s_rr += ri * ri;
                s_rz += ri * (dinv[i] * ri);             /* r'z with z = D^-1 r      */
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
    spk_cg_after_r(S, ok, alpha, rr, dinv ? spk_chunks_sum(part[1], nc) : rr);
    return SPK_OK;
}

static spk_status h_rz(spk_context *ctx, int64_t n, spk_cg_scalars *S, const double *r,
                       const double *z)
{
    if (S->state != SPK_CG_RUN)
        return SPK_OK;
    double part[SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1)
    for (int c = 0; c < nc; c++)
        part[c] = spk_dot_chunk(r, z, spk_chunk_lo(n, nc, c), spk_chunk_lo(n, nc, c + 1), nc > 1);
    spk_cg_after_rz(S, spk_chunks_sum(part, nc));
    return SPK_OK;
}

static spk_status h_xp(spk_context *ctx, int64_t n, spk_cg_scalars *S, double *x, double *p,
                       const double *z, const double *dinv)
{
    if (S->state == SPK_CG_DONE)
        return SPK_OK;
    const double alpha = S->alpha;
    const int last = S->state == SPK_CG_LAST;
    if (last) {
#pragma omp parallel for simd schedule(static) if (n > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < n; i++)
            x[i] += alpha * p[i];
    } else {
        const double beta = spk_cg_beta(S);
#pragma omp parallel for simd schedule(static) if (n > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < n; i++) {
            const double pi = p[i];
            x[i] += alpha * pi;                          /* x = x + alpha p          */
            p[i] = (dinv ? dinv[i] * z[i] : z[i]) + beta * pi;   /* p = z + beta p    */
        }
    }
    spk_cg_after_xp(S, last);
    return SPK_OK;
}

/* ---- fp32 vectors (spk_cg32): the loops above on float storage, each value widened on its
 * load and rounded on its store, the sums in fp64 over the stored values. */

static spk_status h_begin32(spk_context *ctx, int64_t n, spk_cg_scalars *S, const double *b,
                            const double *dinv, float *x, float *r, float *p, float *dinv32)
{
    (void)ctx;
    double part[2][SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1)
    for (int c = 0; c < nc; c++) {
        const int64_t lo = spk_chunk_lo(n, nc, c), hi = spk_chunk_lo(n, nc, c + 1);
        double s_rr = 0.0, s_rp = 0.0;
#pragma omp simd reduction(+ : s_rr, s_rp) if (nc > 1)
        for (int64_t i = lo; i < hi; i++) {
            const float ri = (float)b[i];
            float pi = ri;
            if (dinv) {
                const float di = (float)dinv[i];
                dinv32[i] = di;
                pi = (float)((double)di * (double)ri);
            }
            x[i] = 0.0f;
            r[i] = ri;
            p[i] = pi;
            s_rr += (double)ri * (double)ri;
            s_rp += (double)ri * (double)pi;
        }
        part[0][c] = s_rr;
        part[1][c] = s_rp;
    }
    S->rr = spk_chunks_sum(part[0], nc);
    S->rz = spk_chunks_sum(part[1], nc);
    return SPK_OK;
}

static spk_status h_r32(spk_context *ctx, int64_t n, spk_cg_scalars *S, const float *q,
                        float *r, const float *dinv)
{
    (void)ctx;
    if (S->state != SPK_CG_RUN)
        return SPK_OK;
    double alpha;
    const int ok = spk_cg_alpha(S, &alpha);
    if (!ok) {
        spk_cg_after_r(S, ok, alpha, 0.0, 0.0);
        return SPK_OK;
    }
    double part[2][SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1)
    for (int c = 0; c < nc; c++) {
        const int64_t lo = spk_chunk_lo(n, nc, c), hi = spk_chunk_lo(n, nc, c + 1);
        double s_rr = 0.0, s_rz = 0.0;
#pragma omp simd reduction(+ : s_rr, s_rz) if (nc > 1)
        for (int64_t i = lo; i < hi; i++) {
            const double ri = (double)(float)((double)r[i] - alpha * (double)q[i]);
            r[i] = (float)ri;
            s_rr += ri * ri;
            s_rz += ri * ((dinv ? (double)dinv[i] : 1.0) * ri);
        }
        part[0][c] = s_rr;
        part[1][c] = s_rz;
    }
    const double rr = spk_chunks_sum(part[0], nc);
    spk_cg_after_r(S, ok, alpha, rr, dinv ? spk_chunks_sum(part[1], nc) : rr);
    return SPK_OK;
}

static spk_status h_xp32(spk_context *ctx, int64_t n, spk_cg_scalars *S, float *x, float *p,
                         const float *r, const float *dinv)
{
    (void)ctx;
    if (S->state == SPK_CG_DONE)
        return SPK_OK;
    const double alpha = S->alpha;
    const int last = S->state == SPK_CG_LAST;
    const double beta = last ? 0.0 : spk_cg_beta(S);
#pragma omp parallel for simd schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++) {
        const double pi = (double)p[i];
        x[i] = (float)((double)x[i] + alpha * pi);
        if (!last)
            p[i] = (float)((dinv ? (double)dinv[i] : 1.0) * (double)r[i] + beta * pi);
    }
    spk_cg_after_xp(S, last);
    return SPK_OK;
}

static spk_status h_widen(spk_context *ctx, int64_t n, const float *x, double *y)
{
    (void)ctx;
#pragma omp parallel for simd schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++)
        y[i] = (double)x[i];
    return SPK_OK;
}

static const spk_cg_ops cpu_cg_ops = {
    .device = SPK_DEVICE_CPU,
    .r = h_r,
    .rz = h_rz,
    .xp = h_xp,
    .begin32 = h_begin32,
    .r32 = h_r32,
    .xp32 = h_xp32,
    .widen = h_widen,
};

const spk_cg_ops *spk_cg_ops_cpu(void) { return &cpu_cg_ops; }

const spk_cg_ops *spk_cg_ops_for(spk_device dev)
{
    return dev == SPK_DEVICE_CUDA ? spk_cg_ops_cuda() : &cpu_cg_ops;
}
