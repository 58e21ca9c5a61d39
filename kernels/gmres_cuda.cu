/* kernels/gmres_cuda.cu -- GMRES's classical Gram-Schmidt, twice (CGS2), in three passes over
 * the basis, the vec-ops table's cgs2 (solvers/gmres.c; the CPU twin in kernels/vec_cpu.c is
 * the four-pass specification):
 *
 *   pass 1:  h1 = V'w                                   reads V (k columns) and w
 *   pass 2:  w -= V h1, then h2 = V'w with the new w    reads V twice (the second from L1/L2),
 *                                                       reads and writes w
 *   pass 3:  w -= V h2, and ss = w'w                    reads V, reads and writes w
 *
 * (3k + 5) n doubles from memory where gemv_t / gemv_n_sub twice and a norm move (4k + 7) n,
 * and one wait instead of three: h1 and h2 stay on the device between the passes, and only
 * h1, h2 and ss (2k + 1 doubles) come back, through the pinned small buffer.
 *
 * Each pass is a grid-stride kernel over rows (one resident wave of blocks) that leaves one
 * partial per block and column in cs->d_part, then a reduction kernel with one block per
 * column adds a column's partials by a fixed tree. Inside a block, a column's products are
 * summed across the warp by shuffles, then by lane 0 into the warp's shared slot, row chunk
 * after row chunk, then over the warps in order: a fixed order throughout, so the results
 * repeat bit for bit on one GPU. Columns go in chunks of at most GS_CHUNK per launch (the
 * shared slots); past the first chunk a pass only adds dot products (the w update is done). */
#include "cuda_common.h"

#include <atomic>
#include <stdlib.h>
#include <string.h>

/* Columns whose dot products one launch accumulates: 8 warps x 128 doubles = 8 KB of shared
 * memory per block. GMRES(30) has k <= 30: one launch per pass. */
#define GS_CHUNK 128

enum { GS_DOTS = 0, GS_SUB_DOTS = 1, GS_SUB_NORM = 2 };

/* Rows a lane handles per step of the row loop (see gs_pass_kernel): 2 from 2^20 rows up, 1
 * below, or SPK_GS_ROWS=1|2|4 from the environment, read at each call (an A/B switch; test_vec
 * runs all three). Measured on the H200 (GMRES(30) us per iteration, rows 1 / 2 / 4):
 * poisson3d:150 571.1 / 557.4 / 572.2, poisson3d:32 49.2 / 58.8 / 62.6, elasticity3d:40
 * 104.3 / 105.6 / 116.9 (docs/gpu-runs/2026-11-29-session3.md). */
#define GS_ROWS_BIG_N (1 << 20)

/* MODE GS_DOTS:     part[c * nb + b] = block b's sum of V(i, j0 + c) w_i, c < kc.
 * MODE GS_SUB_DOTS: w_i -= sum_{j < k} V(i, j) h_j, then the same with the new w_i (j0 = 0).
 * MODE GS_SUB_NORM: w_i -= sum_{j < k} V(i, j) h_j, then part[b] = block b's sum of w_i^2.
 * Whole warps run the row loop together (the shuffles need every lane); a lane past n
 * contributes zeros. No register cap (capped at 32, GS_ROWS = 4 spilled 32-164 bytes): the
 * grid is one resident wave from the occupancy API (gs_wave). */
template <int MODE, int GS_ROWS>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
gs_pass_kernel(int64_t n, int k, int j0, int kc, const double *__restrict__ V, int64_t ldv,
               double *__restrict__ w, const double *__restrict__ h, double *__restrict__ part)
{
    extern __shared__ double acc[];                    /* [warps][kc] */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int64_t nb = gridDim.x;
    if (MODE != GS_SUB_NORM) {
        for (int c = threadIdx.x; c < nwarps * kc; c += blockDim.x)
            acc[c] = 0.0;
        __syncthreads();
    }
    double ss = 0.0;
    /* A warp takes GS_ROWS chunks of 32 rows at a time: each lane adds its GS_ROWS products
     * of a column before the one warp sum, so a column costs GS_ROWS independent loads per
     * lane (loads in flight) and one shuffle tree per 32 GS_ROWS rows. */
    const int64_t span = 32 * GS_ROWS;
    const int64_t stride = (int64_t)gridDim.x * nwarps * span;
    for (int64_t base = ((int64_t)blockIdx.x * nwarps + warp) * span; base < n; base += stride) {
        double wi[GS_ROWS];
#pragma unroll
        for (int r = 0; r < GS_ROWS; r++) {
            const int64_t i = base + r * 32 + lane;
            wi[r] = i < n ? w[i] : 0.0;
        }
        if (MODE != GS_DOTS) {
            double s[GS_ROWS];
#pragma unroll
            for (int r = 0; r < GS_ROWS; r++)
                s[r] = 0.0;
            for (int j = 0; j < k; j++) {
                const double hj = __ldg(&h[j]);
                const double *vj = V + (int64_t)j * ldv;
#pragma unroll
                for (int r = 0; r < GS_ROWS; r++) {
                    const int64_t i = base + r * 32 + lane;
                    s[r] += (i < n ? __ldg(&vj[i]) : 0.0) * hj;
                }
            }
#pragma unroll
            for (int r = 0; r < GS_ROWS; r++) {
                const int64_t i = base + r * 32 + lane;
                wi[r] -= s[r];
                if (i < n)
                    w[i] = wi[r];
            }
        }
        if (MODE == GS_SUB_NORM) {
#pragma unroll
            for (int r = 0; r < GS_ROWS; r++)
                ss += wi[r] * wi[r];
        } else {
            for (int c = 0; c < kc; c++) {
                const double *vc = V + (int64_t)(j0 + c) * ldv;
                double p = 0.0;
#pragma unroll
                for (int r = 0; r < GS_ROWS; r++) {
                    const int64_t i = base + r * 32 + lane;
                    p += (i < n ? __ldg(&vc[i]) : 0.0) * wi[r];
                }
                p = spk_warp_sum(p);
                if (lane == 0)
                    acc[warp * kc + c] += p;
            }
        }
    }
    if (MODE == GS_SUB_NORM) {
        double v[1] = {ss};
        spk_block_sum<1>(v);
        if (threadIdx.x == 0)
            part[blockIdx.x] = v[0];
        return;
    }
    __syncthreads();
    for (int c = threadIdx.x; c < kc; c += blockDim.x) {
        double s = 0.0;
        for (int q = 0; q < nwarps; q++)
            s += acc[q * kc + c];
        part[(int64_t)c * nb + blockIdx.x] = s;
    }
}

/* out[c] = sum over b of part[c * nb + b], by a fixed tree; one block of
 * SPK_CUDA_REDUCE_THREADS per column, so each thread loads at most two partials (nb <=
 * SPK_CG_MAX_BLOCKS), both issued before the add. */
#define SPK_CUDA_REDUCE_THREADS 1024
__global__ void __launch_bounds__(SPK_CUDA_REDUCE_THREADS)
gs_reduce_kernel(int nb, const double *__restrict__ part, double *__restrict__ out)
{
    const double *p = part + (int64_t)blockIdx.x * nb;
    double s[1] = {0.0};
    for (int b0 = 0; b0 < nb; b0 += 2 * SPK_CUDA_REDUCE_THREADS) {
        const int b = b0 + threadIdx.x, b2 = b + SPK_CUDA_REDUCE_THREADS;
        const double x = b < nb ? __ldcg(&p[b]) : 0.0, y = b2 < nb ? __ldcg(&p[b2]) : 0.0;
        s[0] += x;
        s[0] += y;
    }
    spk_block_sum<1>(s);
    if (threadIdx.x == 0)
        out[blockIdx.x] = s[0];
}

/* Blocks of one resident wave of gs_pass_kernel<MODE, ROWS> (occupancy API, once per process
 * and instance), at most SPK_CG_MAX_BLOCKS. */
template <int MODE, int ROWS>
static unsigned gs_wave(const spk_cuda_state *cs)
{
    static std::atomic<int> occupancy{0};
    int per_sm = occupancy.load(std::memory_order_relaxed);
    if (per_sm <= 0) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gs_pass_kernel<MODE, ROWS>,
                                                          SPK_CUDA_BLOCK,
                                                          (SPK_CUDA_BLOCK / 32) * GS_CHUNK *
                                                              sizeof(double)) != cudaSuccess ||
            per_sm <= 0) {
            (void)cudaGetLastError();              /* not for the launch check to report */
            per_sm = 1;
        }
        occupancy.store(per_sm, std::memory_order_relaxed);
    }
    const int64_t nb = (int64_t)cs->sm_count * per_sm;
    return (unsigned)(nb < SPK_CG_MAX_BLOCKS ? nb : SPK_CG_MAX_BLOCKS);
}

static int gs_rows(int64_t n)
{
    const char *e = getenv("SPK_GS_ROWS");
    const int r = e ? atoi(e) : 0;
    return r == 1 || r == 2 || r == 4 ? r : n >= GS_ROWS_BIG_N ? 2 : 1;
}

/* Blocks of a pass over n rows: one wave, no more than the rows need. */
template <int MODE, int ROWS>
static unsigned gs_grid(const spk_cuda_state *cs, int64_t n)
{
    const int64_t per_block = (int64_t)SPK_CUDA_BLOCK * ROWS;
    const int64_t want = (n + per_block - 1) / per_block;
    const unsigned wave = gs_wave<MODE, ROWS>(cs);
    return (unsigned)(want < 1 ? 1 : want < (int64_t)wave ? want : wave);
}

/* One pass: the row kernel for columns [j0, j0 + kc) (kc = 1 for the norm), then the column
 * sums into res[0 .. kc). */
template <int MODE, int ROWS>
static spk_status gs_pass_rows(spk_context *ctx, spk_cuda_state *cs, int64_t n, int k, int j0,
                               int kc, const double *V, int64_t ldv, double *w, const double *h,
                               double *res)
{
    const unsigned nb = gs_grid<MODE, ROWS>(cs, n);
    const size_t shmem = MODE == GS_SUB_NORM ? 0 : (size_t)(SPK_CUDA_BLOCK / 32) * kc * sizeof(double);
    gs_pass_kernel<MODE, ROWS><<<nb, SPK_CUDA_BLOCK, shmem, cs->stream>>>(n, k, j0, kc, V, ldv,
                                                                          w, h, cs->d_part);
    spk_status st = spk_cuda_launched(ctx, "gs_pass_kernel");
    if (st)
        return st;
    gs_reduce_kernel<<<kc, SPK_CUDA_REDUCE_THREADS, 0, cs->stream>>>((int)nb, cs->d_part, res);
    return spk_cuda_launched(ctx, "gs_reduce_kernel");
}

template <int MODE>
static spk_status gs_pass(spk_context *ctx, spk_cuda_state *cs, int64_t n, int k, int j0,
                          int kc, const double *V, int64_t ldv, double *w, const double *h,
                          double *res)
{
    switch (gs_rows(n)) {
    case 1:
        return gs_pass_rows<MODE, 1>(ctx, cs, n, k, j0, kc, V, ldv, w, h, res);
    case 2:
        return gs_pass_rows<MODE, 2>(ctx, cs, n, k, j0, kc, V, ldv, w, h, res);
    default:
        return gs_pass_rows<MODE, 4>(ctx, cs, n, k, j0, kc, V, ldv, w, h, res);
    }
}

/* h = V'w over columns [0, k) into res[0 .. k), GS_CHUNK columns per launch; MODE GS_SUB_DOTS
 * first subtracts V h_prev from w (in the first launch only). */
static spk_status gs_dots(spk_context *ctx, spk_cuda_state *cs, int64_t n, int k,
                          const double *V, int64_t ldv, double *w, const double *h_prev,
                          double *res)
{
    spk_status st = SPK_OK;
    for (int j0 = 0; j0 < k && !st; j0 += GS_CHUNK) {
        const int kc = k - j0 < GS_CHUNK ? k - j0 : GS_CHUNK;
        st = h_prev && j0 == 0
                 ? gs_pass<GS_SUB_DOTS>(ctx, cs, n, k, j0, kc, V, ldv, w, h_prev, res + j0)
                 : gs_pass<GS_DOTS>(ctx, cs, n, k, j0, kc, V, ldv, w, NULL, res + j0);
    }
    return st;
}

spk_status spk_cuda_cgs2(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                         double *w, double *out)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (n < 0 || k < 1 || (n > 0 && ldv < n))
        return spk_fail(ctx, SPK_ERR_ARG, "cgs2: n = %lld, k = %d, ldv = %lld (need n >= 0, "
                        "k >= 1, ldv >= n)", (long long)n, k, (long long)ldv);
    if (n == 0) {                                      /* no rows: every sum is 0 */
        memset(out, 0, (size_t)(2 * k + 1) * sizeof *out);
        return SPK_OK;
    }
    const int kc = k < GS_CHUNK ? k : GS_CHUNK;
    const size_t count = (size_t)(2 * k + 1);
    if ((st = spk_cuda_small_reserve(ctx, cs, (int64_t)count)) ||
        (st = spk_cuda_part_reserve(ctx, cs, (int64_t)SPK_CG_MAX_BLOCKS * (kc > 32 ? kc : 32))))
        return st;
    /* h_small may still be the source of gemv_n_sub's copy (its event), or hold nothing */
    if (cs->small_ev_live &&
        (st = spk_cuda(ctx, cudaEventSynchronize(cs->small_ev), "cgs2: waiting for h_small")))
        return st;
    double *h1 = cs->d_small, *h2 = cs->d_small + k, *ss = cs->d_small + 2 * k;
    if ((st = gs_dots(ctx, cs, n, k, V, ldv, w, NULL, h1)) ||
        (st = gs_dots(ctx, cs, n, k, V, ldv, w, h1, h2)) ||
        (st = gs_pass<GS_SUB_NORM>(ctx, cs, n, k, 0, 1, V, ldv, w, h2, ss)) ||
        (st = spk_cuda(ctx, cudaMemcpyAsync(cs->h_small, cs->d_small, count * sizeof(double),
                                            cudaMemcpyDeviceToHost, cs->stream),
                       "cgs2: reading h back")) ||
        (st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "cgs2")))
        return st;
    memcpy(out, cs->h_small, count * sizeof *out);
    return SPK_OK;
}
