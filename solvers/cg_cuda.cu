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

static const spk_cg_ops cuda_cg_ops = {
    .device = SPK_DEVICE_CUDA,
    .r = c_r,
    .rz = c_rz,
    .xp = c_xp,
};

extern "C" const spk_cg_ops *spk_cg_ops_cuda(void) { return &cuda_cg_ops; }

