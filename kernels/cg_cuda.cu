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
 * here and every fused spmv_dot reads `state` and returns, so iterations queued past it cost
 * a launch each; an SpMV without the fused skip still runs in full. */
#include "cuda_common.h"

#include <math.h>
#include <stdlib.h>
#include <stdint.h>
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

/* The two steps run 6 blocks of 256 per SM (75% occupancy, 40 registers): under the 32 of
 * SPK_RESIDENT_BOUNDS their paired loads spill (96-168 bytes per thread). Their grid is one
 * resident wave of that size (step_grid). Measured, CG on poisson3d:150 (H200): 16 or 64
 * blocks per SM (several waves, more partials for the last block) 200.6 and 228.4 us per
 * iteration against 192.7 with one wave. */
#define SPK_CG_STEP_BLOCKS_PER_SM 6

static unsigned step_grid(const spk_cuda_state *cs, int64_t items)
{
    int64_t want = (items + SPK_CUDA_BLOCK - 1) / SPK_CUDA_BLOCK;
    int64_t cap = (int64_t)cs->sm_count * SPK_CG_STEP_BLOCKS_PER_SM;
    if (cap > SPK_CG_MAX_BLOCKS)
        cap = SPK_CG_MAX_BLOCKS;
    return (unsigned)(want < 1 ? 1 : want < cap ? want : cap);
}

/* Element-wise loops of the two steps, 16 bytes per load where every vector is 16-byte
 * aligned (V2: pairs i = 2j, 2j + 1, the odd last element by thread 0 of block 0): twice the
 * bytes in flight per load instruction, which a one-wave grid-stride loop needs to keep the
 * memory system busy. Sums are added element by element in index order within a thread. */
template <bool V2>
__device__ __forceinline__ void cg_r_loop(int64_t n, double alpha, const double *__restrict__ q,
                                          double *__restrict__ r,
                                          const double *__restrict__ dinv, double (&s)[2])
{
    int64_t done = 0;
    if (V2) {
        const double2 *q2 = reinterpret_cast<const double2 *>(q);
        const double2 *d2 = reinterpret_cast<const double2 *>(dinv);
        double2 *r2 = reinterpret_cast<double2 *>(r);
        SPK_GRID_STRIDE(j, n >> 1) {
            const double2 qv = q2[j];
            double2 rv = r2[j];
            const double2 dv = dinv ? d2[j] : make_double2(1.0, 1.0);   /* 1 * r is exact */
            rv.x -= alpha * qv.x;
            rv.y -= alpha * qv.y;
            r2[j] = rv;
            s[0] += rv.x * rv.x;
            s[0] += rv.y * rv.y;
            s[1] += rv.x * (dv.x * rv.x);
            s[1] += rv.y * (dv.y * rv.y);
        }
        if (!(n & 1) || blockIdx.x != 0 || threadIdx.x != 0)
            return;
        done = n - 1;
    }
    for (int64_t i = done + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        double ri = r[i] - alpha * q[i];
        r[i] = ri;
        s[0] += ri * ri;
        s[1] += ri * (dinv ? dinv[i] * ri : ri);
    }
}

template <bool V2>
__device__ __forceinline__ void cg_xp_loop(int64_t n, double alpha, double beta, bool last,
                                           double *__restrict__ x, double *__restrict__ p,
                                           const double *__restrict__ r,
                                           const double *__restrict__ dinv)
{
    int64_t done = 0;
    if (V2) {
        double2 *x2 = reinterpret_cast<double2 *>(x), *p2 = reinterpret_cast<double2 *>(p);
        const double2 *r2 = reinterpret_cast<const double2 *>(r);
        const double2 *d2 = reinterpret_cast<const double2 *>(dinv);
        SPK_GRID_STRIDE(j, n >> 1) {
            const double2 pv = p2[j];
            double2 xv = x2[j];
            xv.x += alpha * pv.x;
            xv.y += alpha * pv.y;
            x2[j] = xv;
            if (!last) {
                const double2 rv = r2[j];
                const double2 dv = dinv ? d2[j] : make_double2(1.0, 1.0);
                p2[j] = make_double2(dv.x * rv.x + beta * pv.x, dv.y * rv.y + beta * pv.y);
            }
        }
        if (!(n & 1) || blockIdx.x != 0 || threadIdx.x != 0)
            return;
        done = n - 1;
    }
    for (int64_t i = done + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const double pi = p[i];
        x[i] += alpha * pi;
        if (!last)
            p[i] = (dinv ? dinv[i] * r[i] : r[i]) + beta * pi;
    }
}

template <bool V2>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK, SPK_CG_STEP_BLOCKS_PER_SM)
cg_r_kernel(int64_t n, spk_cg_scalars *S, const double *__restrict__ q, double *__restrict__ r,
            const double *__restrict__ dinv)
{
    if (S->state != SPK_CG_RUN)
        return;
    const double pq = S->pq, rz = S->rz;
    const bool ok = pq > 0.0;                     /* false for NaN too                       */
    const double alpha = ok ? rz / pq : 0.0;
    double s[2] = {0.0, 0.0};
    if (ok)
        cg_r_loop<V2>(n, alpha, q, r, dinv, s);
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

template <bool V2>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK, SPK_CG_STEP_BLOCKS_PER_SM)
cg_xp_kernel(int64_t n, spk_cg_scalars *S, double *__restrict__ x, double *__restrict__ p,
             const double *__restrict__ r, const double *__restrict__ dinv)
{
    const int32_t state = S->state;
    if (state == SPK_CG_DONE)
        return;
    const bool last = state == SPK_CG_LAST;
    const double alpha = S->alpha, beta = last ? 0.0 : S->rz_new / S->rz;
    cg_xp_loop<V2>(n, alpha, beta, last, x, p, r, dinv);
    /* the last block moves the header on, once every block has read it */
    double none[1] = {0.0};
    if (!spk_last_block_sum<1>(none, S->part + SPK_CG_MAX_BLOCKS, &S->count[2]) ||
        threadIdx.x != 0)
        return;
    if (last)
        S->state = SPK_CG_DONE;
    else
        S->rz = S->rz_new;
}

/* 16-byte loads need every vector 16-byte aligned: cudaMalloc's are, a caller's x of
 * spk_solver_solve_device may not be. */
static bool aligned16(const void *a, const void *b, const void *c, const void *d)
{
    return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d) & 15) == 0;
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
    if (aligned16(q, r, dinv, NULL))
        cg_r_kernel<true><<<step_grid(cs, n / 2), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, q, r, dinv);
    else
        cg_r_kernel<false><<<step_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, q, r, dinv);
    return spk_cuda_launched(ctx, "cg_r_kernel");
}

spk_status spk_cuda_cg_xp(spk_context *ctx, int64_t n, spk_cg_scalars *S, double *x, double *p,
                          const double *r, const double *dinv)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (aligned16(x, p, r, dinv))
        cg_xp_kernel<true><<<step_grid(cs, n / 2), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, x, p, r,
                                                                                  dinv);
    else
        cg_xp_kernel<false><<<step_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, x, p, r, dinv);
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

/* ---- iterations as a CUDA graph --------------------------------------------------------- */

/* A small system's iteration is a few launches of a few microseconds each, so queuing them one
 * by one from the host costs more than running them. SPK_CUDA_GRAPH_STEPS iterations are
 * captured once per solve (stream capture, relaxed mode, so that a cached occupancy query or
 * a first-call attribute set in a step stays legal) and replayed by one cudaGraphLaunch each.
 * The captured arguments are the solve's own: the step queues the same launches with the same
 * pointers every iteration, its scalars living on the device. A capture that fails (an API
 * the capture refuses; a Debug build's sync after each launch is skipped while capturing)
 * leaves the solve on plain launches: a captured step never runs, so nothing is lost or run
 * twice. SPK_CUDA_GRAPH=0 turns graphs off (for comparison). */
#define SPK_CUDA_GRAPH_STEPS 8

/* *graph: NULL before the first run long enough, then the captured cudaGraphExec_t or
 * &graph_off (capture failed or graphs are off: plain launches). No allocation of ours. */
static char graph_off;

void spk_cuda_graph_free(void *graph)
{
    if (graph && graph != (void *)&graph_off)
        (void)cudaGraphExecDestroy((cudaGraphExec_t)graph);   /* freed once its launches ran */
}

/* SPK_CUDA_GRAPH_STEPS steps captured and instantiated, or &graph_off with the error state
 * cleared. The capture runs on the context's non-blocking `capture` stream, standing in for
 * `stream` (and cuBLAS's) while the steps queue their launches: while a blocking stream is
 * being captured the legacy default stream is unusable in the whole process, so another
 * thread's plain cudaMemcpy (or spk's own download of updated values, on another context)
 * would fail, and break this capture too. Kernel nodes keep no stream: the graph is launched
 * on `stream`, in order with everything else. */
static void *graph_capture(spk_cuda_state *cs, spk_status (*step)(void *), void *self)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    if (!cs->capture &&
        cudaStreamCreateWithFlags(&cs->capture, cudaStreamNonBlocking) != cudaSuccess)
        cs->capture = NULL;
    const cudaStream_t own = cs->stream;
    if (cs->capture && cublasSetStream(cs->blas, cs->capture) == CUBLAS_STATUS_SUCCESS) {
        cs->stream = cs->capture;
        if (cudaStreamBeginCapture(cs->stream, cudaStreamCaptureModeRelaxed) == cudaSuccess) {
            spk_status st = SPK_OK;
            for (int i = 0; i < SPK_CUDA_GRAPH_STEPS && !st; i++)
                st = step(self);
            const cudaError_t e = cudaStreamEndCapture(cs->stream, &graph);
            if (st || e != cudaSuccess || !graph ||
                cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess)
                exec = NULL;
            if (graph)
                (void)cudaGraphDestroy(graph);
        }
        cs->stream = own;
        (void)cublasSetStream(cs->blas, own);   /* a valid handle stores it; it cannot fail */
    }
    if (!exec) {
        (void)cudaGetLastError();
        return &graph_off;
    }
    return (void *)exec;
}

spk_status spk_cuda_steps(spk_context *ctx, void **graph, spk_status (*step)(void *), void *self,
                          int64_t count)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    int64_t i = 0;
    /* a graph for runs of at least two captures' worth: a short solve does not pay the
     * capture (tens of microseconds) */
    if (count >= 2 * SPK_CUDA_GRAPH_STEPS) {
        if (!*graph) {
            const char *env = getenv("SPK_CUDA_GRAPH");
            char msg[sizeof ctx->msg];
            memcpy(msg, ctx->msg, sizeof msg);
            *graph = env && strcmp(env, "0") == 0 ? (void *)&graph_off
                                                  : graph_capture(cs, step, self);
            if (*graph == (void *)&graph_off)   /* a refused capture is no failure of the solve: */
                memcpy(ctx->msg, msg, sizeof msg);   /* spk_last_error keeps what it said */
        }
        for (; *graph != (void *)&graph_off && i + SPK_CUDA_GRAPH_STEPS <= count;
             i += SPK_CUDA_GRAPH_STEPS)
            if ((st = spk_cuda(ctx, cudaGraphLaunch((cudaGraphExec_t)*graph, cs->stream),
                               "launch of the iteration's CUDA graph")))
                return st;
    }
    for (; i < count; i++)
        if ((st = step(self)))
            return st;
    return SPK_OK;
}

spk_status spk_cuda_put(spk_context *ctx, const void *host, size_t bytes, void *dev)
{
    return spk_cuda_upload_into(ctx, dev, host, bytes, "solver scalars");
}
