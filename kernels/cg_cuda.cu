/* kernels/cg_cuda.cu -- the device side of the fused CG iteration (solvers/cg.c): the scalars
 * stay in device memory (spk_cg_scalars), so an iteration is three kernels queued back to back
 * with no wait between them and the host reads one small header per batch of iterations.
 *
 *   1. q = A p with p'q fused into the SpMV (backend spmv_dot), or SpMV + dot_sink;
 *   2. cg_r:  alpha = rz / pq;  r -= alpha q;  r'r and r'M^-1 r;  the stopping test;
 *   3. cg_xp: x += alpha p;  p = M^-1 r + beta p  (beta = rz_new / rz).
 *
 * Memory traffic beyond the SpMV: cg_r reads r, q (and dinv) and writes r; cg_xp reads x, p,
 * r (and dinv) and writes x, p: 8n doubles, 10n with Jacobi (z = M^-1 r is recomputed, never
 * stored). The x update is deferred to step 3 so that x and p are read together.
 *
 * Every scalar a kernel needs was finished by the last block of an earlier kernel (stream
 * order makes it visible); what a kernel changes in the header, only its own last block
 * writes, after every block has read it (spk_last_block_sum's counter). Reductions add
 * per-block partials in block order: the same bits on every run. After the stop every kernel
 * reads `state` and returns, so iterations queued past it cost a launch each and nothing
 * else. */
#include "cuda_common.h"

#include <math.h>
#include <string.h>

/* Blocks of the element-wise steps: one resident wave (their reductions need it too). */
static unsigned vec_grid(const spk_cuda_state *cs, int64_t n)
{
    return spk_cuda_red_grid(cs, n, SPK_CUDA_BLOCK);
}

#define SPK_GRID_STRIDE(i, n)                                                                  \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                 \
         i += (int64_t)gridDim.x * blockDim.x)

/* sink->out = x'y (the fallback after an SpMV without a fused dot). */
__global__ void SPK_RESIDENT_BOUNDS
dot_sink_kernel(int64_t n, const double *__restrict__ x, const double *__restrict__ y,
                spk_dot_sink sink)
{
    if (sink.skip && *sink.skip)
        return;                                   /* uniform: every block reads the same */
    double s[1] = {0.0};
    SPK_GRID_STRIDE(i, n)
        s[0] += x[i] * y[i];
    if (spk_last_block_sum<1>(s, sink.part, sink.count) && threadIdx.x == 0)
        *sink.out = s[0];
}

__global__ void SPK_RESIDENT_BOUNDS
cg_r_kernel(int64_t n, spk_cg_scalars *S, const double *__restrict__ q, double *__restrict__ r,
            const double *__restrict__ dinv)
{
    if (S->state != SPK_CG_RUN)
        return;
    const double pq = S->pq, rz = S->rz;
    const bool ok = pq > 0.0;                     /* false for NaN too                       */
    const double alpha = ok ? rz / pq : 0.0;
    double s[2] = {0.0, 0.0};
    if (ok) {
        SPK_GRID_STRIDE(i, n) {
            double ri = r[i] - alpha * q[i];
            r[i] = ri;
            s[0] += ri * ri;
            s[1] += ri * (dinv ? dinv[i] * ri : ri);
        }
    }
    if (!spk_last_block_sum<2>(s, S->part, &S->count[1]) || threadIdx.x != 0)
        return;
    if (!ok) {                                    /* p'Ap <= 0: A not SPD, or NaN           */
        S->state = SPK_CG_DONE;
        S->why = SPK_CG_WHY_PQ;
        return;
    }
    const double rr = s[0], rz_new = s[1];
    const int64_t it = S->it + 1;
    S->alpha = alpha;
    S->rr = rr;
    S->rz_new = rz_new;
    S->it = it;
    S->hist[it % SPK_CG_HIST] = rr;
    if (!(sqrt(rr) <= S->thr)) {                  /* not converged, or NaN                   */
        if (isfinite(rr) && !(rz_new > 0.0)) {    /* r'M^-1 r <= 0: M not SPD               */
            S->state = SPK_CG_LAST;
            S->why = SPK_CG_WHY_RZ;
        } else if (!isfinite(rr)) {
            S->state = SPK_CG_LAST;
            S->why = SPK_CG_WHY_STOP;
        }
        return;
    }
    S->state = SPK_CG_LAST;
    S->why = SPK_CG_WHY_STOP;
}

__global__ void SPK_RESIDENT_BOUNDS
cg_xp_kernel(int64_t n, spk_cg_scalars *S, double *__restrict__ x, double *__restrict__ p,
             const double *__restrict__ r, const double *__restrict__ dinv)
{
    const int32_t state = S->state;
    if (state == SPK_CG_DONE)
        return;
    const double alpha = S->alpha;
    double none[1] = {0.0};
    if (state == SPK_CG_LAST) {
        SPK_GRID_STRIDE(i, n)
            x[i] += alpha * p[i];
    } else {
        const double beta = S->rz_new / S->rz;
        SPK_GRID_STRIDE(i, n) {
            const double pi = p[i];
            x[i] += alpha * pi;
            p[i] = (dinv ? dinv[i] * r[i] : r[i]) + beta * pi;
        }
    }
    /* the last block moves the header on, once every block has read it */
    if (!spk_last_block_sum<1>(none, S->part + SPK_CG_MAX_BLOCKS, &S->count[2]) ||
        threadIdx.x != 0)
        return;
    if (state == SPK_CG_LAST)
        S->state = SPK_CG_DONE;
    else
        S->rz = S->rz_new;
}

spk_status spk_cuda_dot_sink(spk_context *ctx, int64_t n, const double *x, const double *y,
                             const spk_dot_sink *sink)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    /* n == 0 still launches one block: the sum (0) must land in *sink->out */
    dot_sink_kernel<<<vec_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, x, y, *sink);
    return spk_cuda_launched(ctx, "dot_sink_kernel");
}

spk_status spk_cuda_cg_r(spk_context *ctx, int64_t n, spk_cg_scalars *S, const double *q,
                         double *r, const double *dinv)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    cg_r_kernel<<<vec_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, q, r, dinv);
    return spk_cuda_launched(ctx, "cg_r_kernel");
}

spk_status spk_cuda_cg_xp(spk_context *ctx, int64_t n, spk_cg_scalars *S, double *x, double *p,
                          const double *r, const double *dinv)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    cg_xp_kernel<<<vec_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, x, p, r, dinv);
    return spk_cuda_launched(ctx, "cg_xp_kernel");
}

/* ---- the header's trips between host and device ---------------------------------------- */

spk_status spk_cuda_fetch(spk_context *ctx, const void *dev, size_t bytes, int slot, void *host)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (slot < 0 || slot > 1 || bytes > SPK_CUDA_FETCH_MAX)
        return spk_fail(ctx, SPK_ERR_ARG, "fetch: slot %d of %zu bytes (at most 2 slots of %d)",
                        slot, bytes, SPK_CUDA_FETCH_MAX);
    cs->fetch_dst[slot] = host;
    cs->fetch_bytes[slot] = bytes;
    if ((st = spk_cuda(ctx, cudaMemcpyAsync(cs->h_scratch->fetch[slot], dev, bytes,
                                            cudaMemcpyDeviceToHost, cs->stream),
                       "fetch of %zu bytes", bytes)))
        return st;
    return spk_cuda(ctx, cudaEventRecord(cs->fetch_ev[slot], cs->stream), "fetch: event");
}

spk_status spk_cuda_fetch_wait(spk_context *ctx, int slot)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (slot < 0 || slot > 1 || !cs->fetch_dst[slot])
        return spk_fail(ctx, SPK_ERR_ARG, "fetch_wait: slot %d has no fetch in flight", slot);
    if ((st = spk_cuda(ctx, cudaEventSynchronize(cs->fetch_ev[slot]), "fetch: waiting")))
        return st;
    memcpy(cs->fetch_dst[slot], cs->h_scratch->fetch[slot], cs->fetch_bytes[slot]);
    cs->fetch_dst[slot] = NULL;
    return SPK_OK;
}

spk_status spk_cuda_put(spk_context *ctx, const void *host, size_t bytes, void *dev)
{
    return spk_cuda_upload_into(ctx, dev, host, bytes, "solver scalars");
}
