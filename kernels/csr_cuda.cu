/* kernels/csr_cuda.cu -- CSR SpMV on the GPU (Bell & Garland, "Implementing sparse
 * matrix-vector multiplication on throughput-oriented processors", SC'09; CUSP
 * csr_vector_spmv.h). Three kernels, chosen at setup from the row lengths:
 *
 *  - CSR-scalar, one thread per row, when rows are short (K = 1 below);
 *  - CSR-vector, a group of K = 2..32 lanes per row (K from the nnz-weighted mean row length,
 *    SPK_CSR_LANE_ENTRIES), coalesced reads of each row's Aj/Ax, the K partial sums combined
 *    by __shfl_down_sync;
 *  - long rows (more than SPK_CSR_LONG_TRIPS * K entries), listed at setup and cut into tiles
 *    of SPK_CSR_LONG_TILE entries, one block per tile writing one partial; a warp per long row
 *    then sums its tiles in order and writes y. The row kernels skip these rows, so a row of
 *    100k entries costs ~25 blocks working side by side instead of one warp walking it alone.
 *
 * Matrices with irregular rows (row-length cv > 1) run the row-block kernel of
 * csr_adaptive_cuda.cu (CSR-Adaptive) instead of all three; the knob
 * SPK_CSR_KERNEL=vector|merge|adaptive forces one (merge: the merge path of csr_merge_cuda.cu,
 * kept for comparison).
 *
 * Everything is deterministic (no atomics). Row offsets are int64 (nnz may pass 2^31); column
 * indices int32. The kernels read the canonical CSR uploaded as is: no conversion.
 *
 * Cost per SpMV: 12 bytes per entry + 8 per row of the matrix, a gather of x per entry, y
 * written once (read when beta != 0); with long rows, two more launches and 8 bytes per tile. */
#include "cuda_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Lanes per row. K = the largest power of two <= w / SPK_CSR_LANE_ENTRIES, 1..32, where w is
 * the nnz-weighted mean row length (sum len^2 / sum len: the length of the row an entry sits
 * in, which for skewed rows is what the time follows). Measured on the H200 (50 SpMVs, every K
 * forced in turn, us): poisson2d:1000 (w 5) K=1 26, 2 29, 4 36, 8 51; poisson3d:100 (w 7)
 * K=1 36, 2 37, 8 52; elasticity3d:40 (w 78) K=4 75, 8 58, 16 54, 32 60; this rule picks the
 * best K or one within 10% on those and on powerlaw:N:2/4/16/64. CUSP's rule (K = the next
 * power of two >= the mean) chose 8, 8, 32: 1.4-1.9x slower on the short rows. About four
 * entries per lane keeps several independent loads in flight per lane and spends few
 * shuffles. K = 1 is CSR-scalar. */
#ifndef SPK_CSR_LANE_ENTRIES
#define SPK_CSR_LANE_ENTRIES 4.0
#endif

/* A row whose group would need more than this many trips of its loop (length > trips * K) is
 * split across blocks. One trip, a dependent Aj -> x load chain, took ~0.25 us on the H200
 * (a 4096-entry row at K = 4 held a whole 8M-entry SpMV to 257 us): a warp left walking one
 * long row sets the SpMV's time however short the rest is. Measured on the H200 with K chosen
 * as above, powerlaw:2000000:4:2 / powerlaw:2000000:16:1: a fixed 4096-entry threshold
 * 257 / 363 us, no splitting 1593 / 735 us; trips 256: 138 / 363, 128: 135 / 345, 64: 110 / 331,
 * 32: 95 / 320, 16: 97 / 318 us; the regular matrices do not change (no row is that long). */
#ifndef SPK_CSR_LONG_TRIPS
#define SPK_CSR_LONG_TRIPS 32
#endif

/* Entries per block of a long row: 16 per thread of a 256-thread block, enough loads in
 * flight per thread to cover latency, small enough that a 100k-entry row gets ~25 blocks. */
#define SPK_CSR_LONG_TILE (16 * SPK_CUDA_BLOCK)

typedef struct csr_dev {
    int64_t  nrows, ncols, nnz;
    int64_t *rowptr;                    /* nrows + 1                                           */
    int32_t *col;
    double  *val;
    float   *val32;                     /* or (val NULL): csr32-cuda's values in fp32          */
    int      group;                     /* lanes per row: 1 = CSR-scalar, 2..32 = CSR-vector   */
    int64_t  long_row;                  /* row kernels skip rows longer than this (trips * K)  */
    int64_t  nlong, ntiles;
    int64_t *long_rows;                 /* nlong row indices                                   */
    int64_t *long_tile_ptr;             /* nlong + 1: tiles of long row l                      */
    int64_t *tile_begin, *tile_end;     /* ntiles entry ranges                                 */
    double  *tile_part;                 /* ntiles partial sums (scratch, rewritten each SpMV)  */
    float   *h_val32;                   /* csr32-cuda: staging of the rounded values (nnz)     */
    int      borrowed;                  /* a twin of setup_from: every array but val32 and
                                         * h_val32 is its row's (the row's scratch too: both
                                         * run on the context's one stream)                   */
    int      shared;                    /* spk_csr_dev_adopt's: col and val are the caller's  */
    int      kernel;                    /* SPK_CSR_VECTOR (the three above), _MERGE, _ADAPTIVE */
    spk_csr_merge mp;                   /* merge path's tiles (the lists above stay empty)     */
    spk_csr_adaptive ad;                /* row blocks (the lists above stay empty)             */
} csr_dev;

/* ---- CSR-scalar ------------------------------------------------------------------------------ */

template <class V>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
csr_scalar_kernel(int64_t nrows, const int64_t *__restrict__ Ap, const int32_t *__restrict__ Aj,
                  const V *__restrict__ Ax, const double *__restrict__ x, double alpha,
                  double beta, double *__restrict__ y, int64_t long_row)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nrows;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t begin = __ldg(&Ap[i]), end = __ldg(&Ap[i + 1]);
        if (end - begin > long_row)
            continue;                                  /* the long-row kernels own it */
        double s = 0.0;
        for (int64_t j = begin; j < end; j++)
            s += (double)__ldg(&Ax[j]) * __ldg(&x[__ldg(&Aj[j])]);
        y[i] = spk_spmv_out(alpha, s, beta, y, i);
    }
}

/* ---- CSR-vector ------------------------------------------------------------------------------ */

/* K lanes per row, 32/K rows per warp. The row loop advances a whole warp at a time so that
 * every lane reaches the shuffles (full mask) even where its row is past the end.
 * DOT (CG's q = A p, p'q; only when no row is long): also sink->out = x'y, each row's lane 0
 * adding x_row * y_row, summed over the grid by spk_last_block_sum. */
template <class V, int K, bool DOT>
__global__ void SPK_RESIDENT_BOUNDS
csr_vector_kernel(int64_t nrows, const int64_t *__restrict__ Ap, const int32_t *__restrict__ Aj,
                  const V *__restrict__ Ax, const double *__restrict__ x, double alpha,
                  double beta, double *__restrict__ y, int64_t long_row, spk_dot_sink sink)
{
    if (DOT && sink.skip && *sink.skip)
        return;                                                         /* grid-uniform */
    const int lane = threadIdx.x % K;
    const int64_t rows_per_grid = (int64_t)gridDim.x * (blockDim.x / K);
    const int64_t warp_row0 = ((int64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31)) / K;
    double d[1] = {0.0};

    for (int64_t base = warp_row0; base < nrows; base += rows_per_grid) {   /* warp-uniform */
        const int64_t row = base + (threadIdx.x & 31) / K;
        int64_t begin = 0, end = 0;
        if (row < nrows) {
            begin = __ldg(&Ap[row]);
            end = __ldg(&Ap[row + 1]);
        }
        const bool mine = row < nrows && end - begin <= long_row;
        if (!mine)
            end = begin;
        double s = 0.0;
#pragma unroll 4
        for (int64_t j = begin + lane; j < end; j += K)
            s += (double)__ldg(&Ax[j]) * __ldg(&x[__ldg(&Aj[j])]);
#pragma unroll
        for (int off = K / 2; off > 0; off >>= 1)
            s += __shfl_down_sync(SPK_FULL_MASK, s, off, K);
        if (lane == 0 && mine) {
            const double out = spk_spmv_out(alpha, s, beta, y, row);
            y[row] = out;
            if (DOT)
                d[0] += x[row] * out;
        }
    }
    if (DOT && spk_last_block_sum<1>(d, sink.part, sink.count) && threadIdx.x == 0)
        *sink.out = d[0];
}

/* ---- long rows ------------------------------------------------------------------------------- */

/* One block per tile: part[t] = sum of the tile's entries a_ij x_j. */
template <class V>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
csr_long_tile_kernel(int64_t ntiles, const int64_t *__restrict__ tile_begin,
                     const int64_t *__restrict__ tile_end, const int32_t *__restrict__ Aj,
                     const V *__restrict__ Ax, const double *__restrict__ x,
                     double *__restrict__ part)
{
    for (int64_t t = blockIdx.x; t < ntiles; t += gridDim.x) {           /* block-uniform */
        const int64_t begin = __ldg(&tile_begin[t]), end = __ldg(&tile_end[t]);
        double s[1] = {0.0};
        for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x)
            s[0] += (double)__ldg(&Ax[j]) * __ldg(&x[__ldg(&Aj[j])]);
        spk_block_sum<1>(s);
        if (threadIdx.x == 0)
            part[t] = s[0];
    }
}

/* One warp per long row: sum its tiles' partials in a fixed order and write y. */
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
csr_long_finish_kernel(int64_t nlong, const int64_t *__restrict__ rows,
                       const int64_t *__restrict__ tile_ptr, const double *__restrict__ part,
                       double alpha, double beta, double *__restrict__ y)
{
    const int lane = threadIdx.x & 31;
    const int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t l = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; l < nlong;
         l += nwarps) {                                                  /* warp-uniform */
        double s = 0.0;
        for (int64_t t = __ldg(&tile_ptr[l]) + lane; t < __ldg(&tile_ptr[l + 1]); t += 32)
            s += part[t];
        s = spk_warp_sum(s);
        if (lane == 0) {
            const int64_t row = __ldg(&rows[l]);
            y[row] = spk_spmv_out(alpha, s, beta, y, row);
        }
    }
}

/* ---- launcher -------------------------------------------------------------------------------- */

template <class V, int K>
static void launch_vector(const spk_cuda_state *cs, const csr_dev *A, const V *Av, double alpha,
                          const double *x, double beta, double *y, const spk_dot_sink *sink)
{
    if (sink)
        csr_vector_kernel<V, K, true><<<spk_cuda_red_grid(cs, A->nrows, SPK_CUDA_BLOCK / K),
                                        SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->rowptr, A->col, Av, x, 1.0, 0.0, y, A->long_row, *sink);
    else
        csr_vector_kernel<V, K, false><<<spk_cuda_grid(cs, A->nrows, SPK_CUDA_BLOCK / K),
                                         SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->rowptr, A->col, Av, x, alpha, beta, y, A->long_row, spk_dot_sink{});
}

/* CSR-vector of A's group width over values Av (sink: with the fused dot). */
template <class V>
static void launch_group(const spk_cuda_state *cs, const csr_dev *A, const V *Av, double alpha,
                         const double *x, double beta, double *y, const spk_dot_sink *sink)
{
    switch (A->group) {
    case 2: launch_vector<V, 2>(cs, A, Av, alpha, x, beta, y, sink); break;
    case 4: launch_vector<V, 4>(cs, A, Av, alpha, x, beta, y, sink); break;
    case 8: launch_vector<V, 8>(cs, A, Av, alpha, x, beta, y, sink); break;
    case 16: launch_vector<V, 16>(cs, A, Av, alpha, x, beta, y, sink); break;
    default: launch_vector<V, 32>(cs, A, Av, alpha, x, beta, y, sink); break;
    }
}

/* The SpMV over values Av, A->val or A->val32: every kernel takes either. */
template <class V>
static spk_status csr_spmv_of(spk_context *ctx, const spk_cuda_state *cs, const csr_dev *A,
                              const V *Av, double alpha, const double *x, double beta,
                              double *y)
{
    spk_status st;
    if (A->kernel == SPK_CSR_MERGE)
        return spk_csr_merge_spmv(ctx, &A->mp, A->rowptr, A->col, Av, alpha, x, beta, y);
    if (A->kernel == SPK_CSR_ADAPTIVE)
        return spk_csr_adaptive_spmv(ctx, &A->ad, A->rowptr, A->col, Av, alpha, x, beta, y);
    if (A->group == 1)
        csr_scalar_kernel<<<spk_cuda_grid(cs, A->nrows, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0,
                            cs->stream>>>(A->nrows, A->rowptr, A->col, Av, x, alpha, beta, y,
                                          A->long_row);
    else
        launch_group(cs, A, Av, alpha, x, beta, y, (const spk_dot_sink *)NULL);
    if ((st = spk_cuda_launched(ctx, A->group == 1 ? "csr_scalar_kernel" : "csr_vector_kernel")))
        return st;
    if (A->nlong == 0)
        return SPK_OK;
    /* ntiles >= nlong >= 1 here, so neither grid is empty. */
    csr_long_tile_kernel<<<spk_cuda_grid(cs, A->ntiles, 1), SPK_CUDA_BLOCK, 0, cs->stream>>>(
        A->ntiles, A->tile_begin, A->tile_end, A->col, Av, x, A->tile_part);
    if ((st = spk_cuda_launched(ctx, "csr_long_tile_kernel")))
        return st;
    csr_long_finish_kernel<<<spk_cuda_grid(cs, A->nlong, SPK_CUDA_BLOCK / 32), SPK_CUDA_BLOCK, 0,
                             cs->stream>>>(A->nlong, A->long_rows, A->long_tile_ptr, A->tile_part,
                                           alpha, beta, y);
    return spk_cuda_launched(ctx, "csr_long_finish_kernel");
}

static spk_status csr_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    const csr_dev *A = (const csr_dev *)state;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || A->nrows == 0)                           /* never launch a zero-size grid */
        return st;
    return A->val32 ? csr_spmv_of(ctx, cs, A, A->val32, alpha, x, beta, y)
                    : csr_spmv_of(ctx, cs, A, A->val, alpha, x, beta, y);
}

/* y = A x and sink->out = x'y. Fused into the CSR-vector kernel when every row is short;
 * CSR-scalar and the long-row split run the SpMV, then the dot. */
static spk_status csr_spmv_dot(spk_context *ctx, const void *state, const double *x, double *y,
                               const spk_dot_sink *sink)
{
    const csr_dev *A = (const csr_dev *)state;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (A->kernel == SPK_CSR_MERGE)      /* the dot in its fix-up kernel (nrows 0: dot_sink) */
        return A->val32
                   ? spk_csr_merge_spmv_dot(ctx, &A->mp, A->rowptr, A->col, A->val32, x, y, sink)
                   : spk_csr_merge_spmv_dot(ctx, &A->mp, A->rowptr, A->col, A->val, x, y, sink);
    if (A->kernel == SPK_CSR_ADAPTIVE || A->group == 1 || A->nlong > 0 || A->nrows == 0) {
        if ((st = csr_spmv(ctx, state, 1.0, x, 0.0, y)))
            return st;
        return spk_cuda_dot_sink(ctx, A->nrows, x, y, sink);
    }
    if (A->val32)
        launch_group(cs, A, A->val32, 1.0, x, 0.0, y, sink);
    else
        launch_group(cs, A, A->val, 1.0, x, 0.0, y, sink);
    return spk_cuda_launched(ctx, "csr_vector_kernel (with dot)");
}

/* ---- AMG's fused step ------------------------------------------------------------------------ */

/* CSR-vector's row loop (K = 1: a thread a row, CSR-scalar's sums) with the step's epilogue
 * in each row's lane 0: y_i = beta u_i + w_i (b_i + alpha (A x)_i), vectors of S's types. */
template <class V, int K, class X, class S>
__global__ void SPK_RESIDENT_BOUNDS
csr_step_kernel(int64_t nrows, const int64_t *__restrict__ Ap, const int32_t *__restrict__ Aj,
                const V *__restrict__ Ax, const X *__restrict__ x, S s)
{
    const int lane = threadIdx.x % K;
    const int64_t rows_per_grid = (int64_t)gridDim.x * (blockDim.x / K);
    const int64_t warp_row0 = ((int64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31)) / K;
    for (int64_t base = warp_row0; base < nrows; base += rows_per_grid) {   /* warp-uniform */
        const int64_t row = base + (threadIdx.x & 31) / K;
        int64_t begin = 0, end = 0;
        if (row < nrows) {
            begin = __ldg(&Ap[row]);
            end = __ldg(&Ap[row + 1]);
        }
        double t = 0.0;
#pragma unroll 4
        for (int64_t j = begin + lane; j < end; j += K)
            t += (double)__ldg(&Ax[j]) * (double)__ldg(&x[__ldg(&Aj[j])]);
#pragma unroll
        for (int off = K / 2; off > 0; off >>= 1)
            t += __shfl_down_sync(SPK_FULL_MASK, t, off, K);
        if (lane == 0 && row < nrows)
            s.put(row, t);
    }
}

template <class V, int K, class X, class S>
static void csr_step_launch(const spk_cuda_state *cs, const csr_dev *A, const V *Av, const X *x,
                            const S &s)
{
    csr_step_kernel<V, K><<<spk_cuda_grid(cs, A->nrows, SPK_CUDA_BLOCK / K), SPK_CUDA_BLOCK, 0,
                            cs->stream>>>(A->nrows, A->rowptr, A->col, Av, x, s);
}

template <class V, class X, class S>
static void csr_step_group(const spk_cuda_state *cs, const csr_dev *A, const V *Av, const X *x,
                           const S &s)
{
    switch (A->group) {
    case 1: csr_step_launch<V, 1>(cs, A, Av, x, s); break;
    case 2: csr_step_launch<V, 2>(cs, A, Av, x, s); break;
    case 4: csr_step_launch<V, 4>(cs, A, Av, x, s); break;
    case 8: csr_step_launch<V, 8>(cs, A, Av, x, s); break;
    case 16: csr_step_launch<V, 16>(cs, A, Av, x, s); break;
    default: csr_step_launch<V, 32>(cs, A, Av, x, s); break;
    }
}

/* Fused where the rows kernels alone make the product (no long rows, neither the merge path
 * nor the row blocks): SPK_ERR_UNSUPPORTED otherwise, for spk_twin_step to compose. */
static spk_status csr_spmv_step(spk_context *ctx, const void *state, const spk_step *s)
{
    const csr_dev *A = (const csr_dev *)state;
    if (A->kernel != SPK_CSR_VECTOR || A->nlong > 0)
        return SPK_ERR_UNSUPPORTED;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || A->nrows == 0)
        return st;
    const bool fused = spk_step_dispatch(s, [&](const auto &typed, const auto *x) {
        if (A->val32)
            csr_step_group(cs, A, A->val32, x, typed);
        else
            csr_step_group(cs, A, A->val, x, typed);
    });
    return fused ? spk_cuda_launched(ctx, "csr_step_kernel") : SPK_ERR_UNSUPPORTED;
}

/* ---- the choice ------------------------------------------------------------------------------ */

/* Row blocks (csr_adaptive_cuda.cu) when the row lengths' standard deviation exceeds
 * SPK_CSR_MERGE_CV times their mean (the cv of spk_stats_compute / --explain); the merge path
 * only when asked (SPK_CSR_KERNEL=merge): on the power-law matrices the row blocks took 254 /
 * 145 us where it took 299 / 224 (H200). On the H200 (bench/results/) the
 * matrices split into two groups with nothing between: cv <= 0.10 (the stencils,
 * elasticity3d), where CSR-vector runs at 71-85% of copy bandwidth and a balancing kernel can
 * only add its overhead; cv 2.1-2.2 (powerlaw), where CSR-vector runs at 29-31%. At cv > 1 the
 * rows that share a warp routinely differ in length by more than 2x, so CSR-vector's lanes
 * idle. Where in (0.1, 2.1) the crossover really lies is not measured: the 1 is the middle of
 * the gap, not a fit. *kernel: the knob SPK_CSR_KERNEL's choice if set, else the rule. */
#ifndef SPK_CSR_MERGE_CV
#define SPK_CSR_MERGE_CV 1.0
#endif

/* What the plan, the kernel rule and the long-row lists read of the row lengths, in one pass
 * over the row offsets (a setup's only pass over them on the host) */
typedef struct csr_rows {
    double  s1, s2;           /* sums of len and len^2 over the rows not longer than the cap */
    double  sq;               /* sum of len^2 over all rows                                  */
    int64_t nlong[6];         /* rows longer than K SPK_CSR_LONG_TRIPS, K = 1, 2, 4, .. 32   */
    int64_t ntiles[6];        /* ... and their tiles of SPK_CSR_LONG_TILE entries            */
} csr_rows;

static void csr_row_pass(const spk_csr *A, csr_rows *r)
{
    memset(r, 0, sizeof *r);
    const int64_t cap = 32 * (int64_t)SPK_CSR_LONG_TRIPS;
    for (int64_t i = 0; i < A->nrows; i++) {
        const int64_t len = A->rowptr[i + 1] - A->rowptr[i];
        const double l = (double)len;
        if (len <= cap) {
            r->s1 += l;
            r->s2 += l * l;
        }
        r->sq += l * l;
        for (int k = 0; k < 6 && len > ((int64_t)SPK_CSR_LONG_TRIPS << k); k++) {
            r->nlong[k]++;
            r->ntiles[k] += (len + SPK_CSR_LONG_TILE - 1) / SPK_CSR_LONG_TILE;
        }
    }
}

static spk_status csr_kernel_choose(spk_context *ctx, const spk_csr *A, const csr_rows *r,
                                    int *kernel)
{
    *kernel = SPK_CSR_VECTOR;
    if (ctx->tune.csr_kernel != SPK_TUNE_AUTO) {     /* the knob SPK_CSR_KERNEL */
        *kernel = ctx->tune.csr_kernel;
        return SPK_OK;
    }
    /* coefficient of variation of the row lengths (population sd over the mean) */
    const int64_t n = A->nrows;
    if (n == 0 || A->nnz == 0)
        return SPK_OK;
    const double mean = (double)A->nnz / (double)n, var = r->sq / (double)n - mean * mean;
    if (sqrt(var > 0.0 ? var : 0.0) > SPK_CSR_MERGE_CV * mean)
        *kernel = SPK_CSR_ADAPTIVE;
    return SPK_OK;
}

/* ---- setup ----------------------------------------------------------------------------------- */

/* Choose K and the long-row threshold from the row lengths (see SPK_CSR_LANE_ENTRIES and
 * SPK_CSR_LONG_TRIPS), or K from the knob SPK_CSR_GROUP. The weighted mean leaves out rows
 * that are long for any K. */
static void csr_plan(const spk_context *ctx, const csr_rows *r, csr_dev *d)
{
    const double w = r->s1 > 0.0 ? r->s2 / r->s1 : 0.0;
    int k = 1;
    while (k < 32 && (double)(2 * k) * SPK_CSR_LANE_ENTRIES <= w)
        k *= 2;
    if (ctx->tune.csr_group > 0)
        k = ctx->tune.csr_group;
    d->group = k;
    d->long_row = (int64_t)k * SPK_CSR_LONG_TRIPS;
}

static void csr_destroy(void *state)
{
    csr_dev *d = (csr_dev *)state;
    if (!d)
        return;
    if (d->borrowed) {
        (void)cudaFree(d->val32);
        spk_free(d->h_val32);
        spk_free(d);
        return;
    }
    (void)cudaFree(d->rowptr);
    if (!d->shared) {
        (void)cudaFree(d->col);
        (void)cudaFree(d->val);
    }
    (void)cudaFree(d->val32);
    spk_free(d->h_val32);
    spk_csr_merge_free(&d->mp);
    spk_csr_adaptive_free(&d->ad);
    (void)cudaFree(d->long_rows);
    (void)cudaFree(d->long_tile_ptr);
    (void)cudaFree(d->tile_begin);
    (void)cudaFree(d->tile_end);
    (void)cudaFree(d->tile_part);
    spk_free(d);
}

/* List the long rows and their tiles on the host and upload the lists. */
static spk_status csr_long_rows(spk_context *ctx, const spk_csr *A, const csr_rows *r,
                                csr_dev *d)
{
    int k = 0;                                  /* d->long_row = 2^k SPK_CSR_LONG_TRIPS */
    while (k < 5 && ((int64_t)SPK_CSR_LONG_TRIPS << k) < d->long_row)
        k++;
    const int64_t nlong = r->nlong[k], ntiles = r->ntiles[k];
    d->nlong = nlong;
    d->ntiles = ntiles;
    if (nlong == 0)
        return SPK_OK;
    int64_t *rows = (int64_t *)spk_malloc(ctx, (size_t)nlong, sizeof *rows);
    int64_t *tptr = (int64_t *)spk_malloc(ctx, (size_t)nlong + 1, sizeof *tptr);
    int64_t *tb = (int64_t *)spk_malloc(ctx, (size_t)ntiles, sizeof *tb);
    int64_t *te = (int64_t *)spk_malloc(ctx, (size_t)ntiles, sizeof *te);
    spk_status st = SPK_OK;
    if (!rows || !tptr || !tb || !te) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "csr-cuda: lists of %lld long rows: out of host memory",
                      (long long)nlong);
        goto out;
    }
    {
        int64_t l = 0, t = 0;
        tptr[0] = 0;
        for (int64_t i = 0; i < A->nrows; i++) {
            int64_t b = A->rowptr[i], e = A->rowptr[i + 1];
            if (e - b <= d->long_row)
                continue;
            for (int64_t p = b; p < e; p += SPK_CSR_LONG_TILE, t++) {
                tb[t] = p;
                te[t] = p + SPK_CSR_LONG_TILE < e ? p + SPK_CSR_LONG_TILE : e;
            }
            rows[l++] = i;
            tptr[l] = t;
        }
    }
    if ((st = spk_cuda_upload_new(ctx, &d->long_rows, rows, (size_t)nlong * sizeof *rows,
                                  "CSR long-row list")) ||
        (st = spk_cuda_upload_new(ctx, &d->long_tile_ptr, tptr, ((size_t)nlong + 1) * sizeof *tptr,
                                  "CSR long-row tile offsets")) ||
        (st = spk_cuda_upload_new(ctx, &d->tile_begin, tb, (size_t)ntiles * sizeof *tb,
                                  "CSR long-row tile starts")) ||
        (st = spk_cuda_upload_new(ctx, &d->tile_end, te, (size_t)ntiles * sizeof *te,
                                  "CSR long-row tile ends")) ||
        (st = spk_cuda_malloc(ctx, &d->tile_part, (size_t)ntiles * sizeof(double),
                              "CSR long-row partial sums")))
        goto out;
    /* The host lists are freed below: wait until the copies out of them are done. */
    st = spk_cuda(ctx, cudaStreamSynchronize(((spk_cuda_state *)ctx->cuda)->stream),
                  "csr-cuda long-row upload");
out:
    spk_free(rows);
    spk_free(tptr);
    spk_free(tb);
    spk_free(te);
    return st;
}

/* The layout with fp64 values (csr-cuda) or fp32 ones (csr32-cuda). */
static spk_status csr_setup_as(spk_context *ctx, const spk_csr *A, int fp32, void **state)
{
    *state = NULL;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    csr_dev *d = (csr_dev *)spk_calloc(ctx, 1, sizeof *d);
    if (!d || (fp32 && !(d->h_val32 = (float *)spk_malloc(ctx, A->nnz > 0 ? (size_t)A->nnz : 1,
                                                            sizeof(float))))) {
        spk_free(d);
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s state: out of host memory",
                        fp32 ? "csr32-cuda" : "csr-cuda");
    }
    d->nrows = A->nrows;
    d->ncols = A->ncols;
    d->nnz = A->nnz;
    csr_rows r;
    csr_row_pass(A, &r);
    csr_plan(ctx, &r, d);
    /* irregular rows (or SPK_CSR_KERNEL): row blocks or merge path instead of the row kernels */
    if ((st = csr_kernel_choose(ctx, A, &r, &d->kernel)) ||
        (st = d->kernel == SPK_CSR_MERGE      ? spk_csr_merge_setup(ctx, A, &d->mp)
              : d->kernel == SPK_CSR_ADAPTIVE ? spk_csr_adaptive_setup(ctx, A, &d->ad)
                                              : csr_long_rows(ctx, A, &r, d)))
        goto fail;
    if ((st = spk_cuda_upload_new(ctx, &d->rowptr, A->rowptr,
                                  ((size_t)A->nrows + 1) * sizeof(int64_t), "CSR row offsets")) ||
        (st = spk_cuda_upload_new(ctx, &d->col, A->colind, (size_t)A->nnz * sizeof(int32_t),
                                  "CSR column indices")) ||
        (st = spk_cuda_upload_values(ctx, fp32 ? (void **)&d->val32 : (void **)&d->val, A->val,
                                     (size_t)A->nnz, fp32, "CSR values")) ||
        (st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "csr-cuda upload")))
        goto fail;
    *state = d;
    return SPK_OK;
fail:
    csr_destroy(d);
    return st;
}

__global__ void csr_widen_kernel(int64_t n, const int32_t *__restrict__ rp32,
                                 int64_t *__restrict__ rp)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        rp[i] = rp32[i];
}

/* A csr-cuda layout over arrays already on the device: d_rp (32-bit row offsets, widened
 * into the layout's own), d_col and d_val (used in place, never freed by it), A the same
 * matrix on the host for the kernel plan. */
spk_status spk_csr_dev_adopt(spk_context *ctx, const spk_csr *A, const int32_t *d_rp,
                             int32_t *d_col, double *d_val, void **state)
{
    *state = NULL;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    csr_dev *d = (csr_dev *)spk_calloc(ctx, 1, sizeof *d);
    if (!d)
        return spk_fail(ctx, SPK_ERR_NOMEM, "csr-cuda state: out of host memory");
    d->nrows = A->nrows;
    d->ncols = A->ncols;
    d->nnz = A->nnz;
    d->col = d_col;
    d->val = d_val;
    d->shared = 1;
    csr_rows r;
    csr_row_pass(A, &r);
    csr_plan(ctx, &r, d);
    spk_csr cols = *A;             /* the row blocks pack the columns on the host: fetched where
                                    * A holds its row offsets only (a GPU-built AMG level) */
    if (!(st = csr_kernel_choose(ctx, A, &r, &d->kernel)) && d->kernel == SPK_CSR_ADAPTIVE &&
        !A->colind && A->nnz > 0) {
        if (!(cols.colind = (int32_t *)spk_malloc(ctx, (size_t)A->nnz, sizeof(int32_t))))
            st = spk_fail(ctx, SPK_ERR_NOMEM, "csr-cuda: the columns of %lld entries: out of "
                          "host memory", (long long)A->nnz);
        else
            st = spk_cuda_download_bytes(ctx, cols.colind, d_col, (size_t)A->nnz * sizeof(int32_t));
    }
    if (!st)
        st = d->kernel == SPK_CSR_MERGE      ? spk_csr_merge_setup(ctx, A, &d->mp)
             : d->kernel == SPK_CSR_ADAPTIVE ? spk_csr_adaptive_setup(ctx, &cols, &d->ad)
                                             : csr_long_rows(ctx, A, &r, d);
    if (cols.colind != A->colind)
        spk_free(cols.colind);
    if (st ||
        (st = spk_cuda_malloc(ctx, (void **)&d->rowptr, ((size_t)A->nrows + 1) * sizeof(int64_t),
                              "CSR row offsets")))
        goto fail;
    csr_widen_kernel<<<spk_cuda_grid(cs, A->nrows + 1, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0,
                       cs->stream>>>(A->nrows + 1, d_rp, d->rowptr);
    if ((st = spk_cuda_launched(ctx, "csr_widen_kernel")))
        goto fail;
    *state = d;
    return SPK_OK;
fail:
    csr_destroy(d);
    return st;
}

static spk_status csr_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return csr_setup_as(ctx, A, 0, state);
}

static spk_status csr32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return csr_setup_as(ctx, A, 1, state);
}

/* csr32-cuda from a csr-cuda state on the device (spk_spmv_backend.setup_from). */
static spk_status csr32_setup_from(spk_context *ctx, const void *row, void **state, int *fits)
{
    *state = NULL;
    *fits = 0;
    const csr_dev *r = (const csr_dev *)row;
    if (!r || r->borrowed || r->val32)
        return spk_fail(ctx, SPK_ERR_ARG, "csr32-cuda: setup_from needs a csr-cuda state");
    const size_t nnz = (size_t)(r->nnz > 0 ? r->nnz : 1);
    csr_dev *d = (csr_dev *)spk_calloc(ctx, 1, sizeof *d);
    float *stage = (float *)spk_malloc(ctx, nnz, sizeof(float));
    if (!d || !stage) {
        spk_free(d);
        spk_free(stage);
        return spk_fail(ctx, SPK_ERR_NOMEM, "csr32-cuda state: out of host memory");
    }
    *d = *r;
    d->val = NULL;
    d->val32 = NULL;
    d->h_val32 = stage;
    d->borrowed = 1;
    spk_status st = spk_cuda_malloc(ctx, &d->val32, nnz * sizeof(float), "CSR values in fp32");
    if (!st)
        st = spk_cuda_round_checked(ctx, r->nnz, r->val, d->val32, fits);
    if (st) {
        csr_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status csr32_refill(spk_context *ctx, void *state, const void *row, int *fits)
{
    csr_dev *d = (csr_dev *)state;
    const csr_dev *r = (const csr_dev *)row;
    *fits = 0;
    if (!d || !d->borrowed || !r || r->borrowed || r->val32 || r->nnz != d->nnz ||
        r->nrows != d->nrows || r->rowptr != d->rowptr || r->col != d->col)
        return spk_fail(ctx, SPK_ERR_ARG, "csr32-cuda refill: the row's layout is not this one's");
    return spk_cuda_round_checked(ctx, d->nnz, r->val, d->val32, fits);
}

/* The device array is the canonical value array itself: one upload. The long-row tiles hold
 * positions, not values, so they stay. */
static spk_status csr_update(spk_context *ctx, void *state, const spk_csr *A)
{
    csr_dev *d = (csr_dev *)state;
    if (!d || d->nnz != A->nnz || d->nrows != A->nrows)
        return spk_fail(ctx, SPK_ERR_ARG, "csr-cuda update: the layout does not match the matrix");
    return d->val32 ? spk_cuda_upload_values_into(ctx, d->val32, A->val, d->h_val32,
                                                  (size_t)A->nnz, 1, "CSR values (update)")
                    : spk_cuda_upload_values_into(ctx, d->val, A->val, NULL, (size_t)A->nnz, 0,
                                                  "CSR values (update)");
}

/* The update on the device: the canonical values are this layout's values, so the refill is
 * one device-to-device copy (nothing to make first). */
static spk_status csr_update_device(spk_context *ctx, void *state, const spk_csr *A,
                                    const double *d_val)
{
    csr_dev *d = (csr_dev *)state;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (!d || d->nnz != A->nnz || d->nrows != A->nrows)
        return spk_fail(ctx, SPK_ERR_ARG, "csr-cuda update: the layout does not match the matrix");
    if (!d_val || A->nnz == 0 || d_val == d->val)      /* in place: a borrowed update's */
        return SPK_OK;
    if (d->val32)
        return spk_cuda_round_values(ctx, A->nnz, d_val, d->val32);
    return spk_cuda(ctx, cudaMemcpyAsync(d->val, d_val, (size_t)A->nnz * sizeof(double),
                                         cudaMemcpyDeviceToDevice, cs->stream),
                    "CSR values (device update)");
}

extern "C" const spk_spmv_backend spk_backend_csr32_cuda = {
    .name = "csr32-cuda",
    .format = SPK_FMT_CSR,
    .device = SPK_DEVICE_CUDA,
    .setup = csr32_setup,
    .spmv = csr_spmv,
    .destroy = csr_destroy,
    .update = csr_update,
    .spmv_dot = csr_spmv_dot,
    .update_device = csr_update_device,
    .fp32 = NULL,
    .setup_from = csr32_setup_from,
    .refill = csr32_refill,
    .spmv_dot32 = NULL,
    .spmv_step = csr_spmv_step,
    .csr_device = NULL,
};

__global__ void csr_lengths_kernel(int64_t n, const int64_t *__restrict__ rowptr,
                                   int32_t *__restrict__ len)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        len[i] = (int32_t)(rowptr[i + 1] - rowptr[i]);
}

/* A's CSR from the layout (spk_spmv_backend.csr_device): the row lengths, then the columns
 * and values copied as they are. */
static spk_status csr_csr_device(spk_context *ctx, const void *state, int fill, int32_t *rp,
                                 int32_t *col, double *val)
{
    const csr_dev *d = (const csr_dev *)state;
    if (!d->val)
        return SPK_ERR_UNSUPPORTED;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || d->nrows == 0)
        return st;
    if (!fill) {
        csr_lengths_kernel<<<spk_cuda_grid(cs, d->nrows, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0,
                             cs->stream>>>(d->nrows, d->rowptr, rp);
        return spk_cuda_launched(ctx, "csr_lengths_kernel");
    }
    const size_t nnz = (size_t)d->nnz;
    if ((st = spk_cuda(ctx, cudaMemcpyAsync(col, d->col, nnz * sizeof *col,
                                            cudaMemcpyDeviceToDevice, cs->stream), "csr copy")))
        return st;
    return spk_cuda(ctx, cudaMemcpyAsync(val, d->val, nnz * sizeof *val, cudaMemcpyDeviceToDevice,
                                         cs->stream), "csr copy");
}

extern "C" const spk_spmv_backend spk_backend_csr_cuda = {
    .name = "csr-cuda",
    .format = SPK_FMT_CSR,
    .device = SPK_DEVICE_CUDA,
    .setup = csr_setup,
    .spmv = csr_spmv,
    .destroy = csr_destroy,
    .update = csr_update,
    .spmv_dot = csr_spmv_dot,
    .update_device = csr_update_device,
    .fp32 = &spk_backend_csr32_cuda,
    .setup_from = NULL,              /* a twin's entries */
    .refill = NULL,
    .spmv_dot32 = NULL,
    .spmv_step = csr_spmv_step,
    .csr_device = csr_csr_device,
};
