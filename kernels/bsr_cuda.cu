/* kernels/bsr_cuda.cu -- BSR SpMV on the GPU, a thread per row over the layout of
 * kernels/bsr_cpu.c: the block rows padded to the longest, one column index a d x d block
 * (bcol[k * nbrows + I]), the values in ELL's column-major layout of width kb * d, so that at
 * every step the threads of a warp read consecutive values, d loads of them a block, and the d
 * threads of a block row share one index load (an L1 hit for all but the first). The gathers
 * of x are d consecutive doubles a block.
 *
 * Cost per SpMV: 8 bytes a value (4 in the fp32 twin, bsr32-cuda) and 4 / d^2 of index, padding
 * included; against ELL's 10-12 (int16 offsets or int32 columns) that is 0.70-0.84x the bytes at
 * d = 3. A thread a row adds its entries block by block, column by column, CSR's order (the
 * GPU contracts the multiply-adds, as every CUDA row does); the SPLIT kernel adds two halves.
 *
 * The value refills are ELL's (spk_ell_dev_refill on the value array, width kb * d), so a
 * device update needs only A's row offsets on the device, as ELL's does. */
#include "cuda_common.h"

#include <atomic>
#include <stdlib.h>
#include <string.h>

typedef struct bsr_dev {
    int64_t  nrows, ncols, nnz, d, nbrows, kb;
    int32_t *bcol;                      /* kb * nbrows, column-major, SPK_ELL_PAD in padding */
    double  *val;                       /* nrows * kb * d, ELL's layout                      */
    float   *val32;                     /* or (val NULL): an fp32 twin's values              */
    int      kernel;                    /* SPK_BSR_BRANCH, _FLAT or _SPLIT (bsr_kernel_for)   */
} bsr_dev;

/* Row r's sum over block slots k0, k0 + step, ...: each slot's d values (coalesced over the
 * warp's rows) and its index, then for a real block the d products with x_{J d + c}, in
 * order c = 0 .. d - 1.
 *  - FLAT false (SPK_BSR_BRANCH): the gathers of x under the padding test;
 *  - FLAT true: every load made whatever the slot (a padding slot gathers x_0 .. x_{d-1},
 *    in range since ncols >= d), only the add selected, so that the loads of several slots
 *    issue together ahead of their adds (a NaN in x_0 never reaches a padded row). */
template <class V, int D, bool FLAT, class X>
__device__ __forceinline__ double bsr_row(int64_t r, int64_t nrows, int64_t nbrows, int64_t kb,
                                          int64_t k0, int64_t step,
                                          const int32_t *__restrict__ bcol,
                                          const V *__restrict__ val,
                                          const X *__restrict__ x)
{
    const int64_t I = r / D;
    double s = 0.0;
    if (FLAT) {
#pragma unroll 4
        for (int64_t k = k0; k < kb; k += step) {
            const int32_t j = __ldg(&bcol[k * nbrows + I]);
            const bool real = j != SPK_ELL_PAD;
            const X *xj = x + (int64_t)(real ? j : 0) * D;
            V v[D];
            double xv[D];
#pragma unroll
            for (int c = 0; c < D; c++) {
                v[c] = __ldg(&val[(k * D + c) * nrows + r]);
                xv[c] = (double)__ldg(&xj[c]);
            }
#pragma unroll
            for (int c = 0; c < D; c++)
                s = real ? fma((double)v[c], xv[c], s) : s;
        }
    } else {
#pragma unroll 2
        for (int64_t k = k0; k < kb; k += step) {
            const int32_t j = __ldg(&bcol[k * nbrows + I]);
            V v[D];
#pragma unroll
            for (int c = 0; c < D; c++)
                v[c] = __ldg(&val[(k * D + c) * nrows + r]);
            if (j != SPK_ELL_PAD) {
                const X *xj = x + (int64_t)j * D;
#pragma unroll
                for (int c = 0; c < D; c++)
                    s += (double)v[c] * (double)__ldg(&xj[c]);
            }
        }
    }
    return s;
}

/* A thread a row (BRANCH, FLAT); or (SPLIT) a warp takes 16 rows, lanes 0-15 their even block
 * slots and lanes 16-31 their odd ones, the two halves added by one shuffle: twice the threads
 * and half the dependent adds a row, for matrices of few rows per SM. The sum of a row is then
 * (even slots) + (odd slots), not the CSR order. */
template <class V, int D, int KERNEL, class X>
__device__ __forceinline__ bool bsr_item(int64_t g, int64_t nrows, int64_t nbrows, int64_t kb,
                                         const int32_t *__restrict__ bcol,
                                         const V *__restrict__ val,
                                         const X *__restrict__ x, int64_t &r, double &s)
{
    if (KERNEL != SPK_BSR_SPLIT) {
        r = g;
        s = bsr_row<V, D, KERNEL == SPK_BSR_FLAT>(r, nrows, nbrows, kb, 0, 1, bcol, val, x);
        return true;
    }
    const int lane = threadIdx.x & 31;
    r = (g >> 5) * 16 + (lane & 15);
    s = r < nrows ? bsr_row<V, D, true>(r, nrows, nbrows, kb, lane >> 4, 2, bcol, val, x) : 0.0;
    s += __shfl_down_sync(0xffffffffu, s, 16);
    return lane < 16 && r < nrows;
}

/* Work items of a kernel: rows, or for SPLIT 32 lanes per 16 rows (whole warps, so that every
 * lane of a warp reaches the shuffle). */
template <int KERNEL>
__host__ __device__ static inline int64_t bsr_items(int64_t nrows)
{
    return KERNEL == SPK_BSR_SPLIT ? (nrows + 15) / 16 * 32 : nrows;
}

template <class V, int D, int KERNEL>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
bsr_kernel(int64_t nrows, int64_t nbrows, int64_t kb, const int32_t *__restrict__ bcol,
           const V *__restrict__ val, const double *__restrict__ x, double alpha, double beta,
           double *__restrict__ y)
{
    const int64_t items = bsr_items<KERNEL>(nrows);
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < items;
         g += (int64_t)gridDim.x * blockDim.x) {
        int64_t r;
        double s;
        if (bsr_item<V, D, KERNEL>(g, nrows, nbrows, kb, bcol, val, x, r, s))
            y[r] = spk_spmv_out(alpha, s, beta, y, r);
    }
}

/* y = A x and sink->out = x'y in the same pass (CG's q = A p, p'q), on one resident wave
 * sized by the occupancy API (no register cap: ELL's fused kernel lost 15% to one). X, the
 * vectors' type: double, or float for spk_cg32 (a row's fp64 sum rounded once into y, the
 * dot over the rounded y). */
template <class V, int D, int KERNEL, class X>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
bsr_dot_kernel(int64_t nrows, int64_t nbrows, int64_t kb, const int32_t *__restrict__ bcol,
               const V *__restrict__ val, const X *__restrict__ x,
               X *__restrict__ y, spk_dot_sink sink)
{
    if (sink.skip && *sink.skip)
        return;                                        /* uniform over the grid */
    double d[1] = {0.0};
    const int64_t items = bsr_items<KERNEL>(nrows);
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < items;
         g += (int64_t)gridDim.x * blockDim.x) {
        int64_t r;
        double s;
        if (bsr_item<V, D, KERNEL>(g, nrows, nbrows, kb, bcol, val, x, r, s)) {
            const X yr = (X)s;
            y[r] = yr;
            d[0] += (double)x[r] * (double)yr;
        }
    }
    if (spk_last_block_sum<1>(d, sink.part, sink.count) && threadIdx.x == 0)
        *sink.out = d[0];
}

/* Blocks of one resident wave of bsr_dot_kernel, from the occupancy API once per process and
 * instance (one GPU model assumed), at most SPK_MAX_BLOCKS. */
template <class V, int D, int KERNEL, class X>
static unsigned bsr_dot_grid(const spk_cuda_state *cs, int64_t items)
{
    static std::atomic<int> occupancy{0};
    int per_sm = occupancy.load(std::memory_order_relaxed);
    if (per_sm <= 0) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bsr_dot_kernel<V, D, KERNEL, X>,
                                                          SPK_CUDA_BLOCK, 0) != cudaSuccess ||
            per_sm <= 0) {
            (void)cudaGetLastError();              /* not for the launch check to report */
            per_sm = 1;
        }
        occupancy.store(per_sm, std::memory_order_relaxed);
    }
    int64_t cap = (int64_t)cs->sm_count * per_sm;
    cap = cap < SPK_MAX_BLOCKS ? cap : SPK_MAX_BLOCKS;
    const int64_t want = (items + SPK_CUDA_BLOCK - 1) / SPK_CUDA_BLOCK;
    return (unsigned)(want < 1 ? 1 : want < cap ? want : cap);
}

template <class V, int D, int KERNEL, class X>
static void bsr_launch_as(const spk_cuda_state *cs, const bsr_dev *A, const V *v, double alpha,
                          const X *x, double beta, X *y, const spk_dot_sink *sink)
{
    const int64_t items = bsr_items<KERNEL>(A->nrows);
    if (sink) {
        const unsigned grid = bsr_dot_grid<V, D, KERNEL, X>(cs, items);
        bsr_dot_kernel<V, D, KERNEL, X><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->nbrows, A->kb, A->bcol, v, x, y, *sink);
    } else if constexpr (sizeof(X) == sizeof(double)) {   /* fp32 vectors: spmv_dot32 only */
        const unsigned grid = spk_cuda_grid(cs, items, SPK_CUDA_BLOCK);
        bsr_kernel<V, D, KERNEL><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->nbrows, A->kb, A->bcol, v, x, alpha, beta, y);
    }
}

template <class V, int D, class X>
static void bsr_launch(const spk_cuda_state *cs, const bsr_dev *A, const V *v, double alpha,
                       const X *x, double beta, X *y, const spk_dot_sink *sink)
{
    if (A->kernel == SPK_BSR_SPLIT)
        bsr_launch_as<V, D, SPK_BSR_SPLIT>(cs, A, v, alpha, x, beta, y, sink);
    else if (A->kernel == SPK_BSR_FLAT)
        bsr_launch_as<V, D, SPK_BSR_FLAT>(cs, A, v, alpha, x, beta, y, sink);
    else
        bsr_launch_as<V, D, SPK_BSR_BRANCH>(cs, A, v, alpha, x, beta, y, sink);
}

template <class V, class X>
static void bsr_dispatch(const spk_cuda_state *cs, const bsr_dev *A, const V *v, double alpha,
                         const X *x, double beta, X *y, const spk_dot_sink *sink)
{
    switch (A->d) {
    case 2: bsr_launch<V, 2>(cs, A, v, alpha, x, beta, y, sink); break;
    case 3: bsr_launch<V, 3>(cs, A, v, alpha, x, beta, y, sink); break;
    case 4: bsr_launch<V, 4>(cs, A, v, alpha, x, beta, y, sink); break;
    case 5: bsr_launch<V, 5>(cs, A, v, alpha, x, beta, y, sink); break;
    case 6: bsr_launch<V, 6>(cs, A, v, alpha, x, beta, y, sink); break;
    case 7: bsr_launch<V, 7>(cs, A, v, alpha, x, beta, y, sink); break;
    default: bsr_launch<V, 8>(cs, A, v, alpha, x, beta, y, sink); break;
    }
}

/* y = alpha A x + beta y, or (sink) y = A x and x'y. nrows == 0 launches nothing for the
 * product and one block for the dot (its sum, 0, must land in *sink->out). */
static spk_status bsr_run(spk_context *ctx, const bsr_dev *A, double alpha, const double *x,
                          double beta, double *y, const spk_dot_sink *sink)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || (A->nrows == 0 && !sink))
        return st;
    if (A->val32)
        bsr_dispatch(cs, A, A->val32, alpha, x, beta, y, sink);
    else
        bsr_dispatch(cs, A, A->val, alpha, x, beta, y, sink);
    return spk_cuda_launched(ctx, sink ? "bsr_dot_kernel" : "bsr_kernel");
}

/* AMG's fused step (spk_step): each row's sum as bsr_kernel forms it, y_i from it. */
template <class V, int D, int KERNEL, class X, class S>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
bsr_step_kernel(int64_t nrows, int64_t nbrows, int64_t kb, const int32_t *__restrict__ bcol,
                const V *__restrict__ val, const X *__restrict__ x, S s)
{
    const int64_t items = bsr_items<KERNEL>(nrows);
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < items;
         g += (int64_t)gridDim.x * blockDim.x) {
        int64_t r;
        double t;
        if (bsr_item<V, D, KERNEL>(g, nrows, nbrows, kb, bcol, val, x, r, t))
            s.put(r, t);
    }
}

template <class V, int D, class X, class S>
static void bsr_step_launch(const spk_cuda_state *cs, const bsr_dev *A, const V *v, const X *x,
                            const S &s)
{
    if (A->kernel == SPK_BSR_SPLIT) {
        const int64_t items = bsr_items<SPK_BSR_SPLIT>(A->nrows);
        bsr_step_kernel<V, D, SPK_BSR_SPLIT><<<spk_cuda_grid(cs, items, SPK_CUDA_BLOCK),
                                               SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->nbrows, A->kb, A->bcol, v, x, s);
    } else if (A->kernel == SPK_BSR_FLAT) {
        bsr_step_kernel<V, D, SPK_BSR_FLAT><<<spk_cuda_grid(cs, A->nrows, SPK_CUDA_BLOCK),
                                              SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->nbrows, A->kb, A->bcol, v, x, s);
    } else {
        bsr_step_kernel<V, D, SPK_BSR_BRANCH><<<spk_cuda_grid(cs, A->nrows, SPK_CUDA_BLOCK),
                                                SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->nbrows, A->kb, A->bcol, v, x, s);
    }
}

template <class V, class X, class S>
static void bsr_step_dispatch(const spk_cuda_state *cs, const bsr_dev *A, const V *v,
                              const X *x, const S &s)
{
    switch (A->d) {
    case 2: bsr_step_launch<V, 2>(cs, A, v, x, s); break;
    case 3: bsr_step_launch<V, 3>(cs, A, v, x, s); break;
    case 4: bsr_step_launch<V, 4>(cs, A, v, x, s); break;
    case 5: bsr_step_launch<V, 5>(cs, A, v, x, s); break;
    case 6: bsr_step_launch<V, 6>(cs, A, v, x, s); break;
    case 7: bsr_step_launch<V, 7>(cs, A, v, x, s); break;
    default: bsr_step_launch<V, 8>(cs, A, v, x, s); break;
    }
}

static spk_status bsr_spmv_step(spk_context *ctx, const void *state, const spk_step *s);

/* The kernel of a layout: the knob SPK_BSR_KERNEL, else SPLIT for fp64 values and BRANCH for
 * fp32 ones. Measured on the H200 (bench_spmv, us, branch / flat / split; docs/benchmarks.md):
 * fp64 elasticity3d:60 129.7 / 131.4 / 124.6, lame3d:48 84.5 / 71.0 / 74.2, lame3d:64 167.4 /
 * 160.9 / 154.3 (split the best geometric mean, flat the best on lame3d:48); fp32 90.9 / 95.8 /
 * 97.2, 50.0 / 52.6 / 59.4, 110.8 / 114.2 / 120.0. */
static int bsr_kernel_for(const spk_context *ctx, int fp32)
{
    if (ctx->tune.bsr_kernel != SPK_TUNE_AUTO)
        return ctx->tune.bsr_kernel;
    return fp32 ? SPK_BSR_BRANCH : SPK_BSR_SPLIT;
}

/* ---- the backend row --------------------------------------------------------------------- */

/* The device layout and the host mirror of its values (kept from setup, as ELL's row keeps
 * its own, so that a value update refills and uploads it allocating nothing). */
typedef struct bsr_cuda {
    bsr_dev  dev;
    double  *h_val;                     /* nrows * kb * d, the layout of dev.val on the host  */
    float   *h_val32;                   /* the fp32 twin: the rounded values' staging         */
    int64_t *d_rowptr;                  /* nrows + 1: made at the first update on the device  */
    int      borrowed;                  /* a twin of setup_from: dev.bcol and h_val its row's */
} bsr_cuda;

static void bsr_destroy(void *state)
{
    bsr_cuda *d = (bsr_cuda *)state;
    if (!d)
        return;
    if (!d->borrowed) {
        (void)cudaFree(d->dev.bcol);
        spk_free(d->h_val);
    }
    (void)cudaFree(d->dev.val);
    (void)cudaFree(d->dev.val32);
    spk_free(d->h_val32);
    (void)cudaFree(d->d_rowptr);
    spk_free(d);
}

static int64_t bsr_values(const bsr_dev *d) { return d->nrows * d->kb * d->d; }

/* An ELL view of the value array (width kb * d), for ELL's device refill. */
static spk_ell_dev bsr_ell_view(const bsr_dev *d)
{
    spk_ell_dev e;
    memset(&e, 0, sizeof e);
    e.nrows = d->nrows;
    e.ncols = d->ncols;
    e.width = d->kb * d->d;
    e.nnz = d->nnz;
    e.val = d->val;
    e.val32 = d->val32;
    return e;
}

/* The layout with fp64 values (bsr-cuda) or fp32 ones (bsr32-cuda). */
static spk_status bsr_setup_as(spk_context *ctx, const spk_csr *A, int fp32, void **state)
{
    *state = NULL;
    const char *who = fp32 ? "bsr32-cuda" : "bsr-cuda";
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    spk_bsr_fmt h;
    if ((st = spk_bsr_from_csr(ctx, A, 0, &h)))
        return st;
    bsr_cuda *d = (bsr_cuda *)spk_calloc(ctx, 1, sizeof *d);
    const size_t nval = (size_t)h.nrows * (size_t)(h.kb * h.d);
    if (!d || (fp32 && !(d->h_val32 = (float *)spk_malloc(ctx, nval > 0 ? nval : 1,
                                                            sizeof(float))))) {
        spk_bsr_fmt_free(&h);
        bsr_destroy(d);
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s state: out of host memory", who);
    }
    d->dev.nrows = h.nrows;
    d->dev.ncols = h.ncols;
    d->dev.nnz = h.nnz;
    d->dev.d = h.d;
    d->dev.nbrows = h.nbrows;
    d->dev.kb = h.kb;
    d->dev.kernel = bsr_kernel_for(ctx, fp32);
    const size_t slots = (size_t)h.nbrows * (size_t)h.kb;
    st = spk_cuda_upload_new(ctx, &d->dev.bcol, h.bcol, (slots > 0 ? slots : 1) * sizeof(int32_t),
                             "BSR block columns");
    void *v = NULL;
    if (!st)
        st = spk_cuda_upload_values(ctx, &v, h.val, nval > 0 ? nval : 1, fp32, "BSR values");
    if (fp32)
        d->dev.val32 = (float *)v;
    else
        d->dev.val = (double *)v;
    if (!st)    /* the copies are staged already; the sync surfaces a failed one here */
        st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "bsr-cuda upload");
    d->h_val = h.val;                                  /* kept for value updates */
    h.val = NULL;
    spk_bsr_fmt_free(&h);
    if (st) {
        bsr_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status bsr_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return bsr_setup_as(ctx, A, 0, state);
}

static spk_status bsr32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return bsr_setup_as(ctx, A, 1, state);
}

/* bsr32-cuda from a bsr-cuda state on the device (spk_spmv_backend.setup_from). */
static spk_status bsr32_setup_from(spk_context *ctx, const void *row, void **state, int *fits)
{
    *state = NULL;
    *fits = 0;
    const bsr_cuda *r = (const bsr_cuda *)row;
    if (!r || r->borrowed || r->dev.val32)
        return spk_fail(ctx, SPK_ERR_ARG, "bsr32-cuda: setup_from needs a bsr-cuda state");
    const int64_t n = bsr_values(&r->dev);
    bsr_cuda *d = (bsr_cuda *)spk_calloc(ctx, 1, sizeof *d);
    if (!d || !(d->h_val32 = (float *)spk_malloc(ctx, n > 0 ? (size_t)n : 1, sizeof(float)))) {
        spk_free(d);
        return spk_fail(ctx, SPK_ERR_NOMEM, "bsr32-cuda state: out of host memory");
    }
    d->dev = r->dev;
    d->dev.val = NULL;
    d->dev.val32 = NULL;
    d->dev.kernel = bsr_kernel_for(ctx, 1);
    d->h_val = r->h_val;
    d->borrowed = 1;
    spk_status st = spk_cuda_malloc(ctx, &d->dev.val32, (n > 0 ? (size_t)n : 1) * sizeof(float),
                                    "BSR values in fp32");
    if (!st)
        st = spk_cuda_round_checked(ctx, n, r->dev.val, d->dev.val32, fits);
    if (st) {
        bsr_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status bsr32_refill(spk_context *ctx, void *state, const void *row, int *fits)
{
    bsr_cuda *d = (bsr_cuda *)state;
    const bsr_cuda *r = (const bsr_cuda *)row;
    *fits = 0;
    if (!d || !d->borrowed || !r || r->borrowed || r->dev.val32 || r->dev.bcol != d->dev.bcol ||
        r->dev.nrows != d->dev.nrows || r->dev.kb != d->dev.kb || r->dev.d != d->dev.d)
        return spk_fail(ctx, SPK_ERR_ARG, "bsr32-cuda refill: the row's layout is not this one's");
    return spk_cuda_round_checked(ctx, bsr_values(&d->dev), r->dev.val, d->dev.val32, fits);
}

/* spmv, spmv_dot and the updates serve both rows: the state says which values it holds. */
static spk_status bsr_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    return bsr_run(ctx, &((const bsr_cuda *)state)->dev, alpha, x, beta, y, NULL);
}

static spk_status bsr_spmv_dot(spk_context *ctx, const void *state, const double *x, double *y,
                               const spk_dot_sink *sink)
{
    return bsr_run(ctx, &((const bsr_cuda *)state)->dev, 1.0, x, 0.0, y, sink);
}

static spk_status bsr_spmv_step(spk_context *ctx, const void *state, const spk_step *s)
{
    const bsr_dev *A = &((const bsr_cuda *)state)->dev;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || A->nrows == 0)
        return st;
    const bool fused = spk_step_dispatch(s, [&](const auto &typed, const auto *x) {
        if (A->val32)
            bsr_step_dispatch(cs, A, A->val32, x, typed);
        else
            bsr_step_dispatch(cs, A, A->val, x, typed);
    });
    return fused ? spk_cuda_launched(ctx, "bsr_step_kernel") : SPK_ERR_UNSUPPORTED;
}

/* The twin's q = A p with fp32 vectors (spmv_dot32). */
static spk_status bsr_spmv_dot32(spk_context *ctx, const void *state, const float *x, float *y,
                                 const spk_dot_sink *sink)
{
    const bsr_dev *A = &((const bsr_cuda *)state)->dev;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (!A->val32 && A->nrows > 0)                   /* an empty layout holds no values */
        return spk_fail(ctx, SPK_ERR_ARG, "BSR with fp32 vectors: the layout holds fp64 values");
    bsr_dispatch(cs, A, A->val32, 1.0, x, 0.0, y, sink);
    return spk_cuda_launched(ctx, "bsr_dot_kernel");
}

static spk_status bsr_update(spk_context *ctx, void *state, const spk_csr *A)
{
    bsr_cuda *d = (bsr_cuda *)state;
    if (!d || d->dev.nrows != A->nrows || d->dev.nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "bsr-cuda update: the layout does not match the matrix");
    spk_ell_fill_values(A, d->dev.kb * d->dev.d, d->h_val);
    const size_t n = (size_t)bsr_values(&d->dev);
    return d->dev.val32 ? spk_cuda_upload_values_into(ctx, d->dev.val32, d->h_val, d->h_val32, n,
                                                      1, "BSR values (update)")
                        : spk_cuda_upload_values_into(ctx, d->dev.val, d->h_val, NULL, n, 0,
                                                      "BSR values (update)");
}

/* The update on the device: ELL's refill kernel over the value array, which needs A's row
 * offsets on the device (uploaded at the first call). */
static spk_status bsr_update_device(spk_context *ctx, void *state, const spk_csr *A,
                                    const double *d_val)
{
    bsr_cuda *d = (bsr_cuda *)state;
    if (!d || d->dev.nrows != A->nrows || d->dev.nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "bsr-cuda update: the layout does not match the matrix");
    spk_status st;
    if (!d->d_rowptr &&
        (st = spk_cuda_upload_wait(ctx, &d->d_rowptr, A->rowptr,
                                   ((size_t)A->nrows + 1) * sizeof(int64_t),
                                   "BSR refill row offsets")))
        return st;
    if (!d_val)
        return SPK_OK;
    spk_ell_dev view = bsr_ell_view(&d->dev);
    return spk_ell_dev_refill(ctx, &view, d->d_rowptr, d_val);
}

/* A's CSR from the layout (spk_spmv_backend.csr_device): row r = I d + a holds, for each of
 * its block row's blocks before the first padding, the block's d columns in order. */
__global__ void bsr_csr_kernel(int64_t n, int64_t nbrows, int64_t kb, int d,
                               const int32_t *__restrict__ bcol, const double *__restrict__ val,
                               int fill, int32_t *__restrict__ rp, int32_t *__restrict__ ci,
                               double *__restrict__ v)
{
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < n;
         r += (int64_t)gridDim.x * blockDim.x) {
        const int64_t I = r / d;
        int32_t p = fill ? rp[r] : 0;
        for (int64_t k = 0; k < kb; k++) {
            const int32_t J = bcol[k * nbrows + I];
            if (J == SPK_ELL_PAD)
                break;
            if (fill)
                for (int c = 0; c < d; c++) {
                    ci[p + c] = J * d + c;
                    v[p + c] = val[(k * d + c) * n + r];
                }
            p += d;
        }
        if (!fill)
            rp[r] = p;
    }
}

static spk_status bsr_csr_device(spk_context *ctx, const void *state, int fill, int32_t *rp,
                                 int32_t *col, double *val)
{
    const bsr_dev *B = &((const bsr_cuda *)state)->dev;
    if (!B->val)
        return SPK_ERR_UNSUPPORTED;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || B->nrows == 0)
        return st;
    bsr_csr_kernel<<<spk_cuda_grid(cs, B->nrows, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0,
                     cs->stream>>>(B->nrows, B->nbrows, B->kb, (int)B->d, B->bcol, B->val, fill,
                                   rp, col, val);
    return spk_cuda_launched(ctx, "bsr_csr_kernel");
}

extern "C" const spk_spmv_backend spk_backend_bsr32_cuda = {
    .name = "bsr32-cuda",
    .format = SPK_FMT_BSR,
    .device = SPK_DEVICE_CUDA,
    .setup = bsr32_setup,
    .spmv = bsr_spmv,
    .destroy = bsr_destroy,
    .update = bsr_update,
    .spmv_dot = bsr_spmv_dot,
    .update_device = bsr_update_device,
    .fp32 = NULL,
    .setup_from = bsr32_setup_from,
    .refill = bsr32_refill,
    .spmv_dot32 = bsr_spmv_dot32,
    .spmv_step = bsr_spmv_step,
    .csr_device = NULL,
};

extern "C" const spk_spmv_backend spk_backend_bsr_cuda = {
    .name = "bsr-cuda",
    .format = SPK_FMT_BSR,
    .device = SPK_DEVICE_CUDA,
    .setup = bsr_setup,
    .spmv = bsr_spmv,
    .destroy = bsr_destroy,
    .update = bsr_update,
    .spmv_dot = bsr_spmv_dot,
    .update_device = bsr_update_device,
    .fp32 = &spk_backend_bsr32_cuda,
    .setup_from = NULL,              /* a twin's entries */
    .refill = NULL,
    .spmv_dot32 = NULL,
    .spmv_step = bsr_spmv_step,
    .csr_device = bsr_csr_device,
};
