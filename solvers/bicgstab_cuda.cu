/* solvers/bicgstab_cuda.cu -- the fused BiCGStab steps on the GPU (solvers/bicgstab.c,
 * solvers/bicgstab_scalar.h; the CPU twin is solvers/bicgstab_cpu.c): the scalars stay in device memory (spk_bicg_scalars), so an
 * iteration is seven kernels queued back to back with no wait between them -- the two SpMVs
 * of the backend and these five:
 *
 *   update_p:  p = r + beta (p - omega v);  p^ = M^-1 p          reads 3n (4n), writes n (2n)
 *   dots:      (r0, v), (v, v)  -> alpha                          reads 2n
 *   update_s:  s = r - alpha v;  (s, s);  s^ = M^-1 s  -> half    reads 2n (3n), writes n (2n)
 *   dots:      (t, s), (t, t)   -> omega                          reads 2n
 *   update_xr: x += alpha p^ + omega s^;  r = s - omega t;        reads 5n (6n), writes 2n
 *              (r0, r), (r, r)  -> record, stop test, next rho test, beta
 *
 * (in brackets: with Jacobi). With the SpMVs' own x read and y write (2 x 2n): 22n doubles,
 * 27n with Jacobi. Deferring x += alpha p^ to update_xr saves its own 3n pass; without a
 * preconditioner p^ is p and s^ is s, so nothing extra is stored.
 *
 * Every scalar a kernel needs was finished by the last block of an earlier kernel (stream
 * order makes it visible); what a kernel changes in the block, only its own last block
 * writes, after every block has read it (spk_last_block_sum's counter), running the scalar
 * step of solvers/bicgstab_scalar.h in one thread. Reductions add per-block partials in block
 * order: the same bits on every run. Past the end every kernel reads `state` and returns at
 * once; the backend's SpMVs of iterations queued past it still run (they have no state to
 * read), and only rewrite v and t. */
#include "../kernels/cuda_common.h"

#include "bicgstab_scalar.h"

static_assert(sizeof(spk_bicg_scalars) <= SPK_CUDA_FETCH_MAX,
              "spk_bicg_scalars must fit one fetch slot");

/* Blocks of every step: one resident wave (the reductions need it, spk_cuda_red_grid), and
 * one block for n == 0, so that the scalar step still runs. */
static unsigned bicg_grid(const spk_cuda_state *cs, int64_t n)
{
    return spk_cuda_red_grid(cs, n, SPK_CUDA_BLOCK);
}

#define SPK_GRID_STRIDE(i, n)                                                                  \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                 \
         i += (int64_t)gridDim.x * blockDim.x)

/* Last-block counters, one per reducing kernel. */
enum { CNT_ALPHA = 0, CNT_S = 1, CNT_OMEGA = 2, CNT_XR = 3 };

/* Register pressure. SPK_RESIDENT_BOUNDS caps a thread at 32 registers; the element loops
 * below stream 3 to 6 vectors, and unrolled (the compiler's default) they spilled 4 to 148
 * bytes per thread (ptxas -v, sm_90). They run with `#pragma unroll 1`: a resident wave of
 * 2048 threads per SM with 3 to 6 loads each in flight is enough to cover DRAM latency.
 * update_xr keeps 16 bytes of spill (6 vectors); the end-of-iteration step, called out of
 * line, adds none (inlined: 36). The reductions alone (bicg_dots_kernel) unroll without
 * spilling. */
static __device__ __noinline__ void bicg_end_step(spk_bicg_scalars *S, double rho_new, double rr)
{
    spk_bicg_end(S, rho_new, rr);
}

/* No reduction and no write to the block: every block reads beta and omega and goes. */
__global__ void SPK_RESIDENT_BOUNDS
bicg_update_p_kernel(int64_t n, const spk_bicg_scalars *S, const double *__restrict__ r,
                     const double *__restrict__ v, double *__restrict__ p,
                     const double *__restrict__ dinv, double *__restrict__ ph,
                     double *__restrict__ r0)
{
    if (S->state != SPK_BICG_RUN)
        return;                                  /* uniform: every block reads the same */
    const double beta = S->beta, omega = S->omega;
    if (S->restart) {                            /* the shadow residual restarted: r0 = r */
#pragma unroll 1
        SPK_GRID_STRIDE(i, n)
            r0[i] = r[i];
    }
    if (dinv) {
#pragma unroll 1
        SPK_GRID_STRIDE(i, n) {
            const double pi = r[i] + beta * (p[i] - omega * v[i]);
            p[i] = pi;
            ph[i] = dinv[i] * pi;
        }
    } else {
#pragma unroll 1
        SPK_GRID_STRIDE(i, n)
            p[i] = r[i] + beta * (p[i] - omega * v[i]);
    }
}

__global__ void SPK_RESIDENT_BOUNDS
bicg_dots_kernel(int64_t n, spk_bicg_scalars *S, int phase, const double *__restrict__ x,
                 const double *__restrict__ y)
{
    if (S->state != SPK_BICG_RUN)
        return;
    double s[2] = {0.0, 0.0};
    SPK_GRID_STRIDE(i, n) {
        const double xi = x[i];
        s[0] += xi * y[i];
        s[1] += xi * xi;
    }
    uint32_t *count = &S->count[phase == SPK_BICG_ALPHA ? CNT_ALPHA : CNT_OMEGA];
    if (!spk_last_block_sum<2>(s, S->part, count) || threadIdx.x != 0)
        return;
    if (phase == SPK_BICG_ALPHA)
        spk_bicg_alpha(S, s[0], s[1]);
    else
        spk_bicg_omega(S, s[0], s[1]);
}

/* r becomes s in place, so r has no __restrict__. */
__global__ void SPK_RESIDENT_BOUNDS
bicg_update_s_kernel(int64_t n, spk_bicg_scalars *S, const double *__restrict__ v, double *r,
                     const double *__restrict__ dinv, double *__restrict__ sh)
{
    if (S->state != SPK_BICG_RUN)
        return;
    const double alpha = S->alpha;
    double s[1] = {0.0};
    if (dinv) {
#pragma unroll 1
        SPK_GRID_STRIDE(i, n) {
            const double si = r[i] - alpha * v[i];
            r[i] = si;
            sh[i] = dinv[i] * si;
            s[0] += si * si;
        }
    } else {
#pragma unroll 1
        SPK_GRID_STRIDE(i, n) {
            const double si = r[i] - alpha * v[i];
            r[i] = si;
            s[0] += si * si;
        }
    }
    if (spk_last_block_sum<1>(s, S->part, &S->count[CNT_S]) && threadIdx.x == 0)
        spk_bicg_half(S, s[0]);
}

/* sh may be r (no preconditioner): each thread reads both before it writes r[i]. */
__global__ void SPK_RESIDENT_BOUNDS
bicg_update_xr_kernel(int64_t n, spk_bicg_scalars *S, double *__restrict__ x,
                      const double *__restrict__ ph, const double *sh,
                      const double *__restrict__ t, const double *__restrict__ r0, double *r)
{
    const int32_t state = S->state;
    if (state == SPK_BICG_DONE)
        return;
    const double alpha = S->alpha, omega = S->omega;
    double s[2] = {0.0, 0.0};
    if (state == SPK_BICG_LAST) {
#pragma unroll 1
        SPK_GRID_STRIDE(i, n)
            x[i] += alpha * ph[i];
    } else {
#pragma unroll 1
        SPK_GRID_STRIDE(i, n) {
            const double xi = x[i] + alpha * ph[i];   /* rounded as two passes would */
            x[i] = xi + omega * sh[i];
            const double ri = r[i] - omega * t[i];
            r[i] = ri;
            s[0] += r0[i] * ri;
            s[1] += ri * ri;
        }
    }
    /* the last block moves the block on, once every block has read it */
    if (!spk_last_block_sum<2>(s, S->part, &S->count[CNT_XR]) || threadIdx.x != 0)
        return;
    if (state == SPK_BICG_LAST)
        S->state = SPK_BICG_DONE;
    else
        bicg_end_step(S, s[0], s[1]);
}

/* ---- launchers -------------------------------------------------------------------------- */

static spk_status bicg_begin(spk_context *ctx, int64_t n, spk_cuda_state **cs, const char *op)
{
    spk_status st = spk_cuda_state_of(ctx, cs);
    if (st)
        return st;
    if (n < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: n = %lld must be >= 0", op, (long long)n);
    return SPK_OK;
}

static spk_status c_update_p(spk_context *ctx, int64_t n, spk_bicg_scalars *S, const double *r,
                             const double *v, double *p, const double *dinv, double *ph,
                             double *r0)
{
    spk_cuda_state *cs;
    spk_status st = bicg_begin(ctx, n, &cs, "bicg update_p");
    if (st)
        return st;
    bicg_update_p_kernel<<<bicg_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, r, v, p,
                                                                              dinv, ph, r0);
    return spk_cuda_launched(ctx, "bicg_update_p_kernel");
}

static spk_status c_dots(spk_context *ctx, int64_t n, spk_bicg_scalars *S, int phase,
                         const double *x, const double *y)
{
    spk_cuda_state *cs;
    spk_status st = bicg_begin(ctx, n, &cs, "bicg dots");
    if (st)
        return st;
    if (phase != SPK_BICG_ALPHA && phase != SPK_BICG_OMEGA)
        return spk_fail(ctx, SPK_ERR_ARG, "bicg dots: phase %d", phase);
    bicg_dots_kernel<<<bicg_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, phase, x, y);
    return spk_cuda_launched(ctx, "bicg_dots_kernel");
}

static spk_status c_update_s(spk_context *ctx, int64_t n, spk_bicg_scalars *S, const double *v,
                             double *r, const double *dinv, double *sh)
{
    spk_cuda_state *cs;
    spk_status st = bicg_begin(ctx, n, &cs, "bicg update_s");
    if (st)
        return st;
    bicg_update_s_kernel<<<bicg_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, v, r, dinv, sh);
    return spk_cuda_launched(ctx, "bicg_update_s_kernel");
}

static spk_status c_update_xr(spk_context *ctx, int64_t n, spk_bicg_scalars *S, double *x,
                              const double *ph, const double *sh, const double *t,
                              const double *r0, double *r)
{
    spk_cuda_state *cs;
    spk_status st = bicg_begin(ctx, n, &cs, "bicg update_xr");
    if (st)
        return st;
    bicg_update_xr_kernel<<<bicg_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, S, x, ph, sh,
                                                                               t, r0, r);
    return spk_cuda_launched(ctx, "bicg_update_xr_kernel");
}

static const spk_bicg_ops cuda_bicg_ops = {
    .device = SPK_DEVICE_CUDA,
    .update_p = c_update_p,
    .dots = c_dots,
    .update_s = c_update_s,
    .update_xr = c_update_xr,
};

extern "C" const spk_bicg_ops *spk_bicg_ops_cuda(void) { return &cuda_bicg_ops; }
