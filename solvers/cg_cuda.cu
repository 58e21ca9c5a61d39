/* solvers/cg_cuda.cu -- the fused CG steps on the GPU (solvers/cg_scalar.h; the CPU twin is
 * solvers/cg_cpu.c): the scalars stay in device memory (spk_cg_scalars), so an iteration is
 * three kernels (four on the general path, plus the preconditioner's) queued back to back with
 * no wait between them, and the host reads one small header per batch of iterations.
 *
 *   r:  alpha = r'z / p'q;  r -= alpha q;  r'r and r'(D^-1 r);  the stopping test
 *   rz: r'z, the general path's z = M^-1 r stored by the preconditioner
 *   xp: x += alpha p;  p = (D^-1) z + beta p  (beta = r'z_new / r'z)
 *
 * Memory traffic beyond the SpMV: r reads r, q (and dinv) and writes r; xp reads x, p, z (and
 * dinv) and writes x, p: 8n doubles, 10n with Jacobi (D^-1 r is recomputed, never stored);
 * the general path adds rz's 2n and the preconditioner's own. The x update is deferred to xp
 * so that x and p are read together.
 *
 * Every scalar a kernel needs was finished by the last block of an earlier kernel (stream
 * order makes it visible); what a kernel changes in the header, only its own last block
 * writes, after every block has read it (spk_last_block_sum's counter), running the scalar
 * step of solvers/cg_scalar.h in one thread. Reductions add per-block partials in block
 * order: the same bits on every run. After the stop every kernel here reads `state` and
 * returns. */
#include "../kernels/cuda_common.h"

#include "cg_scalar.h"

#include <stdint.h>

static_assert(sizeof(spk_cg_scalars) <= SPK_CUDA_FETCH_MAX, "spk_cg_scalars must fit one fetch slot");

#define SPK_GRID_STRIDE(i, n)                                                                  \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                 \
         i += (int64_t)gridDim.x * blockDim.x)

/* Last-block counters, one per reducing kernel (count[0] is the p'q sink's). */
enum { CNT_R = 1, CNT_XP = 2, CNT_RZ = 3 };

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
    if (cap > SPK_MAX_BLOCKS)
        cap = SPK_MAX_BLOCKS;
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
    int64_t done = 0;                             /* r: z of the general path, else r itself */
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
        return;                                   /* uniform: every block reads the same */
    double alpha;
    const int ok = spk_cg_alpha(S, &alpha);
    double s[2] = {0.0, 0.0};
    if (ok)
        cg_r_loop<V2>(n, alpha, q, r, dinv, s);
    if (spk_last_block_sum<2>(s, S->part, &S->count[CNT_R]) && threadIdx.x == 0)
        spk_cg_after_r(S, ok, alpha, s[0], s[1]);
}

/* The general path's r'z (z = M^-1 r stored by the preconditioner). */
__global__ void SPK_RESIDENT_BOUNDS
cg_rz_kernel(int64_t n, spk_cg_scalars *S, const double *__restrict__ r,
             const double *__restrict__ z)
{
    if (S->state != SPK_CG_RUN)
        return;
    double s[1] = {0.0};
    SPK_GRID_STRIDE(i, n)
        s[0] += r[i] * z[i];
    if (spk_last_block_sum<1>(s, S->part, &S->count[CNT_RZ]) && threadIdx.x == 0)
        spk_cg_after_rz(S, s[0]);
}

template <bool V2>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK, SPK_CG_STEP_BLOCKS_PER_SM)
cg_xp_kernel(int64_t n, spk_cg_scalars *S, double *__restrict__ x, double *__restrict__ p,
             const double *__restrict__ z, const double *__restrict__ dinv)
{
    const int32_t state = S->state;
    if (state == SPK_CG_DONE)
        return;
    const bool last = state == SPK_CG_LAST;
    const double alpha = S->alpha, beta = last ? 0.0 : spk_cg_beta(S);
    cg_xp_loop<V2>(n, alpha, beta, last, x, p, z, dinv);
    /* the last block moves the header on, once every block has read it */
    double none[1] = {0.0};
    if (spk_last_block_sum<1>(none, S->part + SPK_MAX_BLOCKS, &S->count[CNT_XP]) &&
        threadIdx.x == 0)
        spk_cg_after_xp(S, last);
}

/* 16-byte loads need every vector 16-byte aligned: cudaMalloc's are, a caller's x of
 * spk_solver_solve_device may not be. */
static bool aligned16(const void *a, const void *b, const void *c, const void *d)
{
    return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d) & 15) == 0;
}

static spk_status c_r(spk_context *ctx, int64_t n, spk_cg_scalars *S, const double *q, double *r,
                      const double *dinv)
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

static spk_status c_rz(spk_context *ctx, int64_t n, spk_cg_scalars *S, const double *r,
                       const double *z)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    /* n == 0 still launches one block: the scalar step must run */
    cg_rz_kernel<<<spk_cuda_red_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(
        n, S, r, z);
    return spk_cuda_launched(ctx, "cg_rz_kernel");
}

static spk_status c_xp(spk_context *ctx, int64_t n, spk_cg_scalars *S, double *x, double *p,
                       const double *z, const double *dinv)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (aligned16(x, p, z, dinv))
        cg_xp_kernel<true><<<step_grid(cs, n / 2), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, x, p, z,
                                                                                  dinv);
    else
        cg_xp_kernel<false><<<step_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, x, p, z, dinv);
    return spk_cuda_launched(ctx, "cg_xp_kernel");
}

/* ---- fp32 vectors (spk_cg32; solvers/cg_cpu.c's h_*32 are the specification): the r and
 * xp steps on float storage, each value widened on its load and rounded once on its store,
 * the sums in fp64. 16-byte loads of four floats where the vectors allow (the workspace's
 * are 256-byte aligned), else one at a time; the last n % 4 elements by the first threads of
 * the grid. Traffic: r 4 floats a row, xp 6 (with Jacobi): half the fp64 steps' bytes. */

__device__ __forceinline__ void cg_r32_one(float &r, float q, float d, double alpha,
                                           double (&s)[2])
{
    const double ri = (double)(float)((double)r - alpha * (double)q);
    r = (float)ri;
    s[0] += ri * ri;
    s[1] += ri * ((double)d * ri);
}

template <bool V4>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK, SPK_CG_STEP_BLOCKS_PER_SM)
cg_r32_kernel(int64_t n, spk_cg_scalars *S, const float *__restrict__ q, float *__restrict__ r,
              const float *__restrict__ dinv)
{
    if (S->state != SPK_CG_RUN)
        return;
    double alpha;
    const int ok = spk_cg_alpha(S, &alpha);
    double s[2] = {0.0, 0.0};
    if (ok) {
        int64_t done = 0;
        if (V4) {
            const float4 *q4 = reinterpret_cast<const float4 *>(q);
            const float4 *d4 = reinterpret_cast<const float4 *>(dinv);
            float4 *r4 = reinterpret_cast<float4 *>(r);
            SPK_GRID_STRIDE(j, n >> 2) {
                const float4 qv = q4[j];
                float4 rv = r4[j];
                const float4 dv = dinv ? d4[j] : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
                cg_r32_one(rv.x, qv.x, dv.x, alpha, s);
                cg_r32_one(rv.y, qv.y, dv.y, alpha, s);
                cg_r32_one(rv.z, qv.z, dv.z, alpha, s);
                cg_r32_one(rv.w, qv.w, dv.w, alpha, s);
                r4[j] = rv;
            }
            done = n & ~(int64_t)3;
        }
        for (int64_t i = done + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (int64_t)gridDim.x * blockDim.x)
            cg_r32_one(r[i], q[i], dinv ? dinv[i] : 1.0f, alpha, s);
    }
    if (spk_last_block_sum<2>(s, S->part, &S->count[CNT_R]) && threadIdx.x == 0)
        spk_cg_after_r(S, ok, alpha, s[0], dinv ? s[1] : s[0]);
}

__device__ __forceinline__ void cg_xp32_one(float &x, float &p, float r, float d, double alpha,
                                            double beta, bool last)
{
    const double pi = (double)p;
    x = (float)((double)x + alpha * pi);
    if (!last)
        p = (float)((double)d * (double)r + beta * pi);
}

template <bool V4>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK, SPK_CG_STEP_BLOCKS_PER_SM)
cg_xp32_kernel(int64_t n, spk_cg_scalars *S, float *__restrict__ x, float *__restrict__ p,
               const float *__restrict__ r, const float *__restrict__ dinv)
{
    const int32_t state = S->state;
    if (state == SPK_CG_DONE)
        return;
    const bool last = state == SPK_CG_LAST;
    const double alpha = S->alpha, beta = last ? 0.0 : spk_cg_beta(S);
    int64_t done = 0;
    if (V4) {
        float4 *x4 = reinterpret_cast<float4 *>(x), *p4 = reinterpret_cast<float4 *>(p);
        const float4 *r4 = reinterpret_cast<const float4 *>(r);
        const float4 *d4 = reinterpret_cast<const float4 *>(dinv);
        SPK_GRID_STRIDE(j, n >> 2) {
            float4 xv = x4[j], pv = p4[j];
            const float4 rv = last ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : r4[j];
            const float4 dv = dinv && !last ? d4[j] : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
            cg_xp32_one(xv.x, pv.x, rv.x, dv.x, alpha, beta, last);
            cg_xp32_one(xv.y, pv.y, rv.y, dv.y, alpha, beta, last);
            cg_xp32_one(xv.z, pv.z, rv.z, dv.z, alpha, beta, last);
            cg_xp32_one(xv.w, pv.w, rv.w, dv.w, alpha, beta, last);
            x4[j] = xv;
            if (!last)
                p4[j] = pv;
        }
        done = n & ~(int64_t)3;
    }
    for (int64_t i = done + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        cg_xp32_one(x[i], p[i], r[i], dinv ? dinv[i] : 1.0f, alpha, beta, last);
    double none[1] = {0.0};
    if (spk_last_block_sum<1>(none, S->part + SPK_MAX_BLOCKS, &S->count[CNT_XP]) &&
        threadIdx.x == 0)
        spk_cg_after_xp(S, last);
}

/* The start: x = 0, r = fl(b), dinv32 = fl(dinv), p = dinv32 .* r; r'r and r'p into S (the
 * general path's counter: that path never runs with fp32 vectors). */
__global__ void SPK_RESIDENT_BOUNDS
cg_begin32_kernel(int64_t n, spk_cg_scalars *S, const double *__restrict__ b,
                  const double *__restrict__ dinv, float *__restrict__ x, float *__restrict__ r,
                  float *__restrict__ p, float *__restrict__ dinv32)
{
    double s[2] = {0.0, 0.0};
    SPK_GRID_STRIDE(i, n) {
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
        s[0] += (double)ri * (double)ri;
        s[1] += (double)ri * (double)pi;
    }
    if (spk_last_block_sum<2>(s, S->part, &S->count[CNT_RZ]) && threadIdx.x == 0) {
        S->rr = s[0];
        S->rz = s[1];
    }
}

__global__ void cg_widen_kernel(int64_t n, const float *__restrict__ x, double *__restrict__ y)
{
    SPK_GRID_STRIDE(i, n)
        y[i] = (double)x[i];
}

static spk_status c_begin32(spk_context *ctx, int64_t n, spk_cg_scalars *S, const double *b,
                            const double *dinv, float *x, float *r, float *p, float *dinv32)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    cg_begin32_kernel<<<spk_cuda_red_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0,
                        cs->stream>>>(n, S, b, dinv, x, r, p, dinv32);
    return spk_cuda_launched(ctx, "cg_begin32_kernel");
}

static spk_status c_r32(spk_context *ctx, int64_t n, spk_cg_scalars *S, const float *q,
                        float *r, const float *dinv)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (aligned16(q, r, dinv, NULL))
        cg_r32_kernel<true><<<step_grid(cs, n / 4), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, q, r,
                                                                                   dinv);
    else
        cg_r32_kernel<false><<<step_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, q, r,
                                                                                dinv);
    return spk_cuda_launched(ctx, "cg_r32_kernel");
}

static spk_status c_xp32(spk_context *ctx, int64_t n, spk_cg_scalars *S, float *x, float *p,
                         const float *r, const float *dinv)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (aligned16(x, p, r, dinv))
        cg_xp32_kernel<true><<<step_grid(cs, n / 4), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, x, p,
                                                                                    r, dinv);
    else
        cg_xp32_kernel<false><<<step_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, x, p, r,
                                                                                 dinv);
    return spk_cuda_launched(ctx, "cg_xp32_kernel");
}

static spk_status c_widen(spk_context *ctx, int64_t n, const float *x, double *y)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || n == 0)
        return st;
    cg_widen_kernel<<<spk_cuda_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, x,
                                                                                           y);
    return spk_cuda_launched(ctx, "cg_widen_kernel");
}

static const spk_cg_ops cuda_cg_ops = {
    .device = SPK_DEVICE_CUDA,
    .r = c_r,
    .rz = c_rz,
    .xp = c_xp,
    .begin32 = c_begin32,
    .r32 = c_r32,
    .xp32 = c_xp32,
    .widen = c_widen,
};

extern "C" const spk_cg_ops *spk_cg_ops_cuda(void) { return &cuda_cg_ops; }

