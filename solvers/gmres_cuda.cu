/* solvers/gmres_cuda.cu -- GMRES's classical Gram-Schmidt, twice (CGS2), in three passes over
 * the basis (solvers/gmres_ops.h; the CPU twin solvers/gmres_cpu.c is the four-pass
 * specification):
 *
 *   pass 1:  h1 = V'w                                   reads V (k columns) and w
 *   pass 2:  w -= V h1, then h2 = V'w with the new w    reads V, reads and writes w
 *   pass 3:  w -= V h2, and ss = w'w                    reads V, reads and writes w
 *
 * (3k + 5) n doubles from memory where gemv_t / gemv_n_sub twice and a norm move (4k + 7) n,
 * and one wait instead of three: h1 and h2 stay on the device between the passes, and only
 * h1, h2 and ss (2k + 1 doubles) come back, through the pinned small buffer.
 *
 * Each pass is a grid-stride kernel over rows (one resident wave of blocks) that leaves one
 * partial per block and column in cs->d_part, then a reduction kernel with one block per
 * column adds a column's partials by a fixed tree. Two row kernels:
 *  - the rows kernel (passes 1 and 3; pass 2 past GS_TILE_K columns): a column's products
 *    are summed across the warp by shuffles, then by lane 0 into the warp's shared slot, row
 *    chunk after row chunk, then over the warps in order. Columns go in chunks of at most
 *    GS_CHUNK per launch (the shared slots); past the first chunk a pass only adds dot
 *    products (the w update is done). It would read V twice in pass 2 (see the tile kernel).
 *  - the tile kernel (pass 2 with k <= GS_TILE_K): the tile's k columns are kept in shared
 *    memory between the update of w and the dot products, so V is read once.
 * Every sum has a fixed order, so the results repeat bit for bit on one GPU.
 * The knob SPK_GS_KERNEL=rows runs pass 2 on the rows kernel at every k (an A/B switch;
 * test_vec runs both). */
#include "../kernels/cuda_common.h"

#include "gmres_ops.h"

#include <atomic>
#include <stdlib.h>
#include <string.h>

/* Columns whose dot products one launch accumulates: 8 warps x 128 doubles = 8 KB of shared
 * memory per block. GMRES(30) has k <= 30: one launch per pass. */
#define GS_CHUNK 128

enum { GS_DOTS = 0, GS_SUB_DOTS = 1, GS_SUB_NORM = 2 };

/* Rows a lane handles per step of the row loop (see gs_pass_kernel): 2 from 2^20 rows up, 1
 * below, or the knob SPK_GS_ROWS=1|2|4 (an A/B switch; test_vec runs all three). Measured on
 * the H200 (GMRES(30) us per iteration, rows 1 / 2 / 4): poisson3d:150 571.1 / 557.4 / 572.2,
 * poisson3d:32 49.2 / 58.8 / 62.6, elasticity3d:40 104.3 / 105.6 / 116.9. */
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

/* Pass 2 by tiles, for k <= GS_TILE_K columns (every inner iteration of GMRES(m), m <= 32).
 * The rows kernel reads V twice in pass 2, once to subtract V h1 and once for the dots with
 * the new w, and between the two reads every resident warp of the GPU has read its own
 * k x 32 GS_ROWS values: ~80 MB at k = 26 on the H200, more than L2, so the second read came
 * from DRAM again (ncu: 1344 MB read where V and w are 729 MB). Here a block takes a tile of
 * SPK_CUDA_BLOCK rows, one per thread: each thread subtracts its row's sum (in order j = 0,
 * 1, ..., the rows kernel's sum, so w is the same to the bit) while it stores the row's k
 * values into shared memory; then the block computes the tile's k dot products from shared
 * memory, thread (c, q) for column c = tid / per and rows q, q + per, ... (per = threads per
 * column), adding into its own register across all of the block's tiles. At the end the
 * per-thread sums of a column are added in q order. V is read from DRAM once. The k loads of
 * a row go into KC >= k registers first (KC = 8, 16 or 32), so all are in flight together
 * (a loop unrolled by 8 ran pass 2 at 56% of the DRAM peak, this at 67-85%).
 * Measured on the H200 (ncu, poisson3d:150, us, rows kernel / tile kernel): k = 5 67.3 /
 * 55.4, k = 15 209.8 / 117.9, k = 26 364.4 / 234.1; GMRES(30) per iteration 559-561 / 501. */
#define GS_TILE_K 32
#define GS_TILE_LD (SPK_CUDA_BLOCK + 8)    /* row stride of the tile: columns c and c + 1 fall
                                              on banks 8 doubles apart, not on the same bank */

static size_t gs_tile_smem(int k)
{
    return ((size_t)k * GS_TILE_LD + SPK_CUDA_BLOCK + (size_t)k) * sizeof(double);
}

template <int KC>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK, 2)
gs_tile_kernel(int64_t n, int k, const double *__restrict__ V, int64_t ldv,
               double *__restrict__ w, const double *__restrict__ h, double *__restrict__ part)
{
    extern __shared__ double sm[];
    double *tile = sm;                                 /* [k][GS_TILE_LD] */
    double *wt = sm + (size_t)k * GS_TILE_LD;          /* [SPK_CUDA_BLOCK] the tile's new w */
    double *hs = wt + SPK_CUDA_BLOCK;                  /* [k] */
    const int tid = threadIdx.x;
    for (int c = tid; c < k; c += SPK_CUDA_BLOCK)
        hs[c] = h[c];
    __syncthreads();
    const int per = SPK_CUDA_BLOCK / k;                /* threads per column, >= 8 */
    const int cme = tid / per, qme = tid % per;        /* cme >= k: no dots for this thread */
    double acc = 0.0;
    for (int64_t t0 = (int64_t)blockIdx.x * SPK_CUDA_BLOCK; t0 < n;
         t0 += (int64_t)gridDim.x * SPK_CUDA_BLOCK) {      /* block-uniform */
        const int64_t i = t0 + tid;
        const bool in = i < n;
        const double *vi = V + (in ? i : 0);
        double v[KC];                                  /* all loads in flight together */
#pragma unroll
        for (int c = 0; c < KC; c++)
            v[c] = in && c < k ? __ldg(&vi[(int64_t)c * ldv]) : 0.0;
        double s = 0.0;
#pragma unroll
        for (int c = 0; c < KC; c++)
            if (c < k) {
                tile[c * GS_TILE_LD + tid] = v[c];
                s += v[c] * hs[c];
            }
        double wi = 0.0;
        if (in) {
            wi = w[i] - s;
            w[i] = wi;
        }
        wt[tid] = wi;                                  /* rows past n: 0, adding nothing */
        __syncthreads();
        if (cme < k) {
            const double *tc = tile + cme * GS_TILE_LD;
            for (int r = qme; r < SPK_CUDA_BLOCK; r += per)
                acc += tc[r] * wt[r];
        }
        __syncthreads();                               /* the tile is the next one's */
    }
    tile[tid] = acc;                                   /* [c * per + q] */
    __syncthreads();
    for (int c = tid; c < k; c += SPK_CUDA_BLOCK) {
        double t = 0.0;
        for (int q = 0; q < per; q++)
            t += tile[c * per + q];
        part[(int64_t)c * gridDim.x + blockIdx.x] = t;
    }
}

/* out[c] = sum over b of part[c * nb + b], by a fixed tree; one block of
 * SPK_CUDA_REDUCE_THREADS per column, so each thread loads at most two partials (nb <=
 * SPK_MAX_BLOCKS), both issued before the add. */
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
 * and instance), at most SPK_MAX_BLOCKS. */
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
    return (unsigned)(nb < SPK_MAX_BLOCKS ? nb : SPK_MAX_BLOCKS);
}

static int gs_rows(const spk_tuning *t, int64_t n)
{
    return t->gs_rows ? t->gs_rows : n >= GS_ROWS_BIG_N ? 2 : 1;
}

typedef struct gs_plan {
    bool     tile;           /* pass 2 by gs_tile_kernel (else the rows kernel)                */
    int      rows;           /* rows per lane of the rows kernel                               */
    unsigned nb;             /* blocks of every launch of the pass                             */
} gs_plan;

/* The register columns of the tile kernel for k columns. */
static int gs_tile_kc(int k) { return k <= 8 ? 8 : k <= 16 ? 16 : 32; }

/* Whether the tile kernel can run k columns on this context's device: up to 48 KB of
 * dynamic shared memory (k <= 22) always; more only once the kernel has opted in to its
 * largest tile (~70 KB, k = 32), which is asked once per context (cudaFuncSetAttribute holds
 * for the current device, the context's) and refused where the device's opt-in limit is lower
 * (GPUs before sm_80): cgs2 then runs pass 2 by the rows kernel. */
static bool gs_tile_ready(spk_cuda_state *cs, int k)
{
    const size_t need = gs_tile_smem(GS_TILE_K);
    if (cs->gs_tile_opt == 0) {
        if (need <= cs->smem_optin &&
            cudaFuncSetAttribute(gs_tile_kernel<32>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)need) == cudaSuccess)
            cs->gs_tile_opt = 1;
        else {
            (void)cudaGetLastError();              /* not for the launch check to report */
            cs->gs_tile_opt = -1;
        }
    }
    return cs->gs_tile_opt > 0 || gs_tile_smem(k) <= 48 * 1024;
}

/* Blocks of one resident wave of gs_tile_kernel with k columns (its shared memory grows with
 * k), from the occupancy API once per context and k, after gs_tile_ready (the opt-in changes
 * what the query allows). */
static int64_t gs_tile_wave(spk_cuda_state *cs, int k)
{
    int per_sm = cs->gs_tile_occ[k];
    if (per_sm <= 0) {
        const int kc = gs_tile_kc(k);
        const void *f = kc == 8 ? (const void *)gs_tile_kernel<8>
                        : kc == 16 ? (const void *)gs_tile_kernel<16> : (const void *)gs_tile_kernel<32>;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, SPK_CUDA_BLOCK,
                                                          gs_tile_smem(k)) != cudaSuccess ||
            per_sm <= 0) {
            (void)cudaGetLastError();
            per_sm = 1;
        }
        cs->gs_tile_occ[k] = per_sm;
    }
    return (int64_t)cs->sm_count * per_sm;
}

template <int MODE>
static gs_plan gs_plan_of(const spk_tuning *t, spk_cuda_state *cs, int64_t n, int k)
{
    gs_plan p;
    p.tile = MODE == GS_SUB_DOTS && k <= GS_TILE_K && !t->gs_rows_only && gs_tile_ready(cs, k);
    p.rows = p.tile ? 1 : gs_rows(t, n);
    const int64_t per_block = (int64_t)SPK_CUDA_BLOCK * p.rows;
    const int64_t want = (n + per_block - 1) / per_block;
    int64_t wave;
    if (p.tile)
        wave = gs_tile_wave(cs, k);
    else
        wave = p.rows == 1 ? gs_wave<MODE, 1>(cs) : p.rows == 2 ? gs_wave<MODE, 2>(cs)
                                                                : gs_wave<MODE, 4>(cs);
    if (wave > SPK_MAX_BLOCKS)
        wave = SPK_MAX_BLOCKS;
    p.nb = (unsigned)(want < 1 ? 1 : want < wave ? want : wave);
    return p;
}

/* One launch of a MODE kernel over columns [j0, j0 + kc) (the tile kernel: all k, j0 = 0):
 * partials to part[c * nb + b]. */
template <int MODE>
static spk_status gs_launch(spk_context *ctx, spk_cuda_state *cs, const gs_plan *p, int64_t n,
                            int k, int j0, int kc, const double *V, int64_t ldv, double *w,
                            const double *h, double *part)
{
    const unsigned nb = p->nb;
    cudaStream_t s = cs->stream;
    if (p->tile) {
        /* more than 48 KB of shared memory (k >= 23): opted in by gs_tile_ready */
        const size_t sm = gs_tile_smem(k);
        const int kc = gs_tile_kc(k);
        if (kc == 8)
            gs_tile_kernel<8><<<nb, SPK_CUDA_BLOCK, sm, s>>>(n, k, V, ldv, w, h, part);
        else if (kc == 16)
            gs_tile_kernel<16><<<nb, SPK_CUDA_BLOCK, sm, s>>>(n, k, V, ldv, w, h, part);
        else
            gs_tile_kernel<32><<<nb, SPK_CUDA_BLOCK, sm, s>>>(n, k, V, ldv, w, h, part);
    } else {
        const size_t shmem =
            MODE == GS_SUB_NORM ? 0 : (size_t)(SPK_CUDA_BLOCK / 32) * kc * sizeof(double);
        if (p->rows == 1)
            gs_pass_kernel<MODE, 1><<<nb, SPK_CUDA_BLOCK, shmem, s>>>(n, k, j0, kc, V, ldv, w, h, part);
        else if (p->rows == 2)
            gs_pass_kernel<MODE, 2><<<nb, SPK_CUDA_BLOCK, shmem, s>>>(n, k, j0, kc, V, ldv, w, h, part);
        else
            gs_pass_kernel<MODE, 4><<<nb, SPK_CUDA_BLOCK, shmem, s>>>(n, k, j0, kc, V, ldv, w, h, part);
    }
    return spk_cuda_launched(ctx, p->tile ? "gs_tile_kernel" : "gs_pass_kernel");
}

/* res[0 .. ncol) = the column sums of the partials of a pass. */
static spk_status gs_reduce(spk_context *ctx, spk_cuda_state *cs, const gs_plan *p, int ncol,
                            double *res)
{
    gs_reduce_kernel<<<ncol, SPK_CUDA_REDUCE_THREADS, 0, cs->stream>>>((int)p->nb, cs->d_part, res);
    return spk_cuda_launched(ctx, "gs_reduce_kernel");
}

/* h = V'w over columns [0, k) into res[0 .. k), in launches of at most a chunk of columns,
 * then one reduction over all k columns; with h_prev, the first launch first subtracts
 * V h_prev from w (over all k columns). */
static spk_status gs_dots(spk_context *ctx, spk_cuda_state *cs, int64_t n, int k,
                          const double *V, int64_t ldv, double *w, const double *h_prev,
                          double *res)
{
    const gs_plan p = h_prev ? gs_plan_of<GS_SUB_DOTS>(&ctx->tune, cs, n, k)
                             : gs_plan_of<GS_DOTS>(&ctx->tune, cs, n, k);
    spk_status st = SPK_OK;
    for (int j0 = 0; j0 < k && !st;) {
        const int kc = p.tile ? k : k - j0 < GS_CHUNK ? k - j0 : GS_CHUNK;
        double *part = cs->d_part + (int64_t)j0 * p.nb;
        st = h_prev && j0 == 0
                 ? gs_launch<GS_SUB_DOTS>(ctx, cs, &p, n, k, j0, kc, V, ldv, w, h_prev, part)
                 : gs_launch<GS_DOTS>(ctx, cs, &p, n, k, j0, kc, V, ldv, w, NULL, part);
        j0 += kc;
    }
    return st ? st : gs_reduce(ctx, cs, &p, k, res);
}

/* w -= V h over k columns, then ss = w'w. */
static spk_status gs_sub_norm(spk_context *ctx, spk_cuda_state *cs, int64_t n, int k,
                              const double *V, int64_t ldv, double *w, const double *h, double *ss)
{
    const gs_plan p = gs_plan_of<GS_SUB_NORM>(&ctx->tune, cs, n, k);
    spk_status st = gs_launch<GS_SUB_NORM>(ctx, cs, &p, n, k, 0, 1, V, ldv, w, h, cs->d_part);
    return st ? st : gs_reduce(ctx, cs, &p, 1, ss);
}

static spk_status c_cgs2(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
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
    const size_t count = (size_t)(2 * k + 1);
    if ((st = spk_cuda_small_reserve(ctx, cs, (int64_t)count)) ||
        (st = spk_cuda_part_reserve(ctx, cs, (int64_t)SPK_MAX_BLOCKS * (k > 32 ? k : 32))))
        return st;
    /* h_small may still be the source of gemv_n_sub's copy (its event), or hold nothing */
    if (cs->small_ev_live &&
        (st = spk_cuda(ctx, cudaEventSynchronize(cs->small_ev), "cgs2: waiting for h_small")))
        return st;
    double *h1 = cs->d_small, *h2 = cs->d_small + k, *ss = cs->d_small + 2 * k;
    if ((st = gs_dots(ctx, cs, n, k, V, ldv, w, NULL, h1)) ||
        (st = gs_dots(ctx, cs, n, k, V, ldv, w, h1, h2)) ||
        (st = gs_sub_norm(ctx, cs, n, k, V, ldv, w, h2, ss)) ||
        (st = spk_cuda(ctx, cudaMemcpyAsync(cs->h_small, cs->d_small, count * sizeof(double),
                                            cudaMemcpyDeviceToHost, cs->stream),
                       "cgs2: reading h back")) ||
        (st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "cgs2")))
        return st;
    memcpy(out, cs->h_small, count * sizeof *out);
    return SPK_OK;
}

static const spk_gmres_ops cuda_gmres_ops = {
    .device = SPK_DEVICE_CUDA,
    .cgs2 = c_cgs2,
};

extern "C" const spk_gmres_ops *spk_gmres_ops_cuda(void) { return &cuda_gmres_ops; }
