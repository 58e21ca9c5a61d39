/* kernels/sell_cuda.cu -- SELL-C-sigma SpMV on the GPU (the layout: formats.h and sell_cpu.c;
 * C = 32, sigma = 1024). A block of 1024 threads takes a window, a thread a sorted row, a warp
 * a slice: at step j lane r reads slot slice_ptr[s] + 32 j + r, so a warp's loads are
 * coalesced, and its 32 rows, sorted, have nearly the same length, so the warp's trips are
 * its longest row's and little more. The sums go to shared memory at each row's place in the
 * window and are written to y in row order: the stores are coalesced too, and no permutation
 * reaches the caller's vectors.
 *
 * As ELL's (ell_cuda.cu), the device layout keeps int16 offsets from the row in place of the
 * columns when every column lies within SPK_ELL_OFF16_MAX of its row (and not
 * SPK_ELL_INDEX=32): 10 bytes a slot instead of 12. Padding slots hold SPK_ELL_PAD (or
 * SPK_ELL_PAD16) and value 0; the value is loaded either way, the gather of x only for a real
 * column (no 0 * NaN). The matrix is loaded evict-first (spk_ldm<true>): SELL is the format of
 * irregular rows, where x's gathers want L2 (ELL's and HYB's measurement). x itself is read
 * through L1 (__ldg) even where the columns are scattered over all of x: from L2 only
 * (__ldcg, as CSR's row blocks read it) was 0.4-3.6% slower on the H200 (bench_spmv, 50
 * SpMVs, us, __ldg / __ldcg: band:2097152:8:8:2097152 123.4 / 125.1, band:2097152:1:47:2097152
 * 397.3 / 404.4, band:2097152:8:48:2097152:2 351.5 / 359.3, mesh2d:2000 236.2 / 244.8). Each row is summed
 * in CSR's order, in fp64 whatever the values' type. The same kernel, with another epilogue,
 * is the fused step of AMG's V-cycle (spmv_step), and with the dot p'q summed over the grid
 * CG's q = A p, p'q (spmv_dot).
 *
 * Cost per SpMV: 10 or 12 bytes a slot (6 or 8 with fp32 values), 2 a row (perm), 8 a slice,
 * a gather of x per entry, y written once (read when beta != 0). A slice is walked by one
 * warp, so a very long row sets its slice's time: the format choice keeps SELL to rows of
 * bounded length. */
#include "cuda_common.h"

#include <atomic>
#include <string.h>
#include <type_traits>

typedef struct sell_dev {
    int64_t   nrows, ncols, nnz, nslices, slots;
    int64_t  *slice_ptr;                /* nslices + 1 slot offsets                           */
    uint16_t *perm;                     /* nrows: sorted position -> offset in its window     */
    int32_t  *col;                      /* slots: the columns, or (NULL)                      */
    int16_t  *off;                      /* slots: column - row, SPK_ELL_PAD16 padding         */
    double   *val;
    float    *val32;                    /* or (val NULL): sell32-cuda's values in fp32        */
    /* host mirror kept from setup for value updates: the layout with its fp64 values */
    spk_sell_fmt h;
    float    *h_val32;                  /* sell32-cuda: staging of the rounded values         */
    int       borrowed;                 /* a twin of setup_from: every array but val32,
                                         * h_val32 and d_rowptr is its row's                  */
    int64_t  *d_rowptr;                 /* nrows + 1: made at the first update on the device  */
} sell_dev;

/* The SpMV's epilogue: y_i = alpha t_i + beta y_i (spk_spmv_out). The fused step's is
 * spk_step_t (cuda_common.h), the same kernel's. */
struct sell_out {
    double alpha, beta;
    double *y;
    __device__ __forceinline__ void put(int64_t i, double t) const
    {
        y[i] = spk_spmv_out(alpha, t, beta, y, i);
    }
};

/* t = A x for one window a block; out.put(i, t_i) for each of its rows, in row order. DOT
 * (CG's q = A p, p'q; square A, out a sell_out of alpha 1, beta 0): also sink.out = x'y,
 * each thread adding x_i y_i of the rows it writes, summed over the grid by
 * spk_last_block_sum (a grid of one resident wave, sell_dot_wave). */
template <class V, class Idx, class X, class S, bool DOT>
__global__ void __launch_bounds__(SPK_SELL_SIGMA)
sell_kernel(int64_t nrows, int64_t nwin, const int64_t *__restrict__ slice_ptr,
            const uint16_t *__restrict__ perm, const Idx *__restrict__ Aj,
            const V *__restrict__ Ax, const X *__restrict__ x, S out, spk_dot_sink sink)
{
    if (DOT && sink.skip && *sink.skip)
        return;                                                         /* grid-uniform */
    __shared__ double ts[SPK_SELL_SIGMA];
    const int t = threadIdx.x;
    double d[1] = {0.0};
    for (int64_t w = blockIdx.x; w < nwin; w += gridDim.x) {             /* block-uniform */
        const int64_t w0 = w * SPK_SELL_SIGMA, k = w0 + t;   /* sorted position; y's row */
        if (k < nrows) {
            const int64_t row = w0 + __ldg(&perm[k]);
            const int64_t sl = k / SPK_SELL_C, end = __ldg(&slice_ptr[sl + 1]);
            double s = 0.0;
#pragma unroll 4
            for (int64_t p = __ldg(&slice_ptr[sl]) + (t % SPK_SELL_C); p < end; p += SPK_SELL_C) {
                int64_t c;
                const bool real = ell_real(spk_ldm<true>(&Aj[p]), row, c);
                const double v = (double)spk_ldm<true>(&Ax[p]);
                if (real)
                    s += v * (double)__ldg(&x[c]);
            }
            ts[row - w0] = s;
        }
        __syncthreads();
        if (k < nrows) {
            out.put(k, ts[t]);
            if (DOT)
                d[0] += (double)x[k] * ts[t];
        }
        __syncthreads();                              /* ts is rewritten by the next window */
    }
    if (DOT && spk_last_block_sum<1>(d, sink.part, sink.count) && t == 0)
        *sink.out = d[0];
}

/* Blocks of one resident wave of the fused kernel, from the occupancy API once per process
 * and instance (one GPU model assumed), at most the partials' room. */
template <class V, class Idx>
static int64_t sell_dot_wave(const spk_cuda_state *cs)
{
    static std::atomic<int> occupancy{0};
    int per_sm = occupancy.load(std::memory_order_relaxed);
    if (per_sm <= 0) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &per_sm, sell_kernel<V, Idx, double, sell_out, true>, SPK_SELL_SIGMA, 0) !=
                cudaSuccess ||
            per_sm <= 0) {
            (void)cudaGetLastError();              /* not for the launch check to report */
            per_sm = 1;
        }
        occupancy.store(per_sm, std::memory_order_relaxed);
    }
    const int64_t wave = (int64_t)cs->sm_count * per_sm;
    return wave < SPK_MAX_BLOCKS ? wave : SPK_MAX_BLOCKS;
}

/* sink: the fused dot (out a sell_out of alpha 1, beta 0), on one resident wave; nrows == 0
 * still runs one block, so that the sum (0) lands in *sink->out. */
template <class V, class Idx, class X, class S>
static void sell_launch(const spk_cuda_state *cs, const sell_dev *A, const Idx *Aj, const V *Av,
                        const X *x, const S &out, const spk_dot_sink *sink)
{
    const int64_t nwin = (A->nrows + SPK_SELL_SIGMA - 1) / SPK_SELL_SIGMA;
    if constexpr (std::is_same<S, sell_out>::value && std::is_same<X, double>::value) {
        if (sink) {
            const int64_t cap = sell_dot_wave<V, Idx>(cs);
            const unsigned grid = (unsigned)(nwin < 1 ? 1 : nwin < cap ? nwin : cap);
            sell_kernel<V, Idx, X, S, true><<<grid, SPK_SELL_SIGMA, 0, cs->stream>>>(
                A->nrows, nwin, A->slice_ptr, A->perm, Aj, Av, x, out, *sink);
            return;
        }
    }
    sell_kernel<V, Idx, X, S, false><<<spk_cuda_grid(cs, nwin, 1), SPK_SELL_SIGMA, 0,
                                       cs->stream>>>(A->nrows, nwin, A->slice_ptr, A->perm, Aj,
                                                     Av, x, out, spk_dot_sink{});
}

/* The layout's index and value arrays: int16 offsets or int32 columns, fp64 or fp32 values. */
template <class X, class S>
static void sell_dispatch(const spk_cuda_state *cs, const sell_dev *A, const X *x, const S &out,
                          const spk_dot_sink *sink = NULL)
{
    if (A->off && A->val32)
        sell_launch(cs, A, A->off, A->val32, x, out, sink);
    else if (A->off)
        sell_launch(cs, A, A->off, A->val, x, out, sink);
    else if (A->val32)
        sell_launch(cs, A, A->col, A->val32, x, out, sink);
    else
        sell_launch(cs, A, A->col, A->val, x, out, sink);
}

static spk_status sell_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                            double beta, double *y)
{
    const sell_dev *A = (const sell_dev *)state;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || A->nrows == 0)                           /* never launch a zero-size grid */
        return st;
    sell_dispatch(cs, A, x, sell_out{alpha, beta, y});
    return spk_cuda_launched(ctx, "sell_kernel");
}

/* CG's q = A p and p'q in one pass (spmv_dot). */
static spk_status sell_spmv_dot(spk_context *ctx, const void *state, const double *x, double *y,
                                const spk_dot_sink *sink)
{
    const sell_dev *A = (const sell_dev *)state;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    sell_dispatch(cs, A, x, sell_out{1.0, 0.0, y}, sink);
    return spk_cuda_launched(ctx, "sell_kernel (dot)");
}

/* The fused step of AMG's V-cycle (spk_step): the SpMV's row sums, then y_i from each in the
 * thread that writes it. */
static spk_status sell_spmv_step(spk_context *ctx, const void *state, const spk_step *s)
{
    const sell_dev *A = (const sell_dev *)state;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || A->nrows == 0)
        return st;
    const bool fused = spk_step_dispatch(s, [&](const auto &typed, const auto *x) {
        sell_dispatch(cs, A, x, typed);
    });
    return fused ? spk_cuda_launched(ctx, "sell_kernel (step)") : SPK_ERR_UNSUPPORTED;
}

static void sell_destroy(void *state)
{
    sell_dev *d = (sell_dev *)state;
    if (!d)
        return;
    (void)cudaFree(d->val32);
    spk_free(d->h_val32);
    (void)cudaFree(d->d_rowptr);
    if (!d->borrowed) {
        (void)cudaFree(d->slice_ptr);
        (void)cudaFree(d->perm);
        (void)cudaFree(d->col);
        (void)cudaFree(d->off);
        (void)cudaFree(d->val);
        spk_sell_fmt_free(&d->h);
    }
    spk_free(d);
}

/* The original row of sorted position k. */
static int64_t sell_row(const spk_sell_fmt *h, int64_t k)
{
    return k - k % SPK_SELL_SIGMA + h->perm[k];
}

/* The compact index layout, as ELL's: every real slot's column within SPK_ELL_OFF16_MAX of its
 * row, and not the knob SPK_ELL_INDEX=32. */
static bool sell_offsets_fit(const spk_context *ctx, const spk_sell_fmt *h)
{
    if (ctx->tune.ell_index32)
        return false;
    for (int64_t s = 0; s < h->nslices; s++)
        for (int64_t q = h->slice_ptr[s]; q < h->slice_ptr[s + 1]; q++) {
            const int64_t k = s * SPK_SELL_C + (q - h->slice_ptr[s]) % SPK_SELL_C;
            const int32_t c = h->col[q];
            if (c != SPK_ELL_PAD &&
                (k >= h->nrows || c - sell_row(h, k) > SPK_ELL_OFF16_MAX ||
                 sell_row(h, k) - c > SPK_ELL_OFF16_MAX))
                return false;
        }
    return true;
}

static void sell_offsets(const spk_sell_fmt *h, int16_t *off)
{
    for (int64_t s = 0; s < h->nslices; s++)
        for (int64_t q = h->slice_ptr[s]; q < h->slice_ptr[s + 1]; q++) {
            const int64_t k = s * SPK_SELL_C + (q - h->slice_ptr[s]) % SPK_SELL_C;
            off[q] = h->col[q] == SPK_ELL_PAD ? (int16_t)SPK_ELL_PAD16
                                              : (int16_t)(h->col[q] - sell_row(h, k));
        }
}

/* The layout with fp64 values (sell-cuda) or fp32 ones (sell32-cuda). */
static spk_status sell_setup_as(spk_context *ctx, const spk_csr *A, int fp32, void **state)
{
    *state = NULL;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    sell_dev *d = (sell_dev *)spk_calloc(ctx, 1, sizeof *d);
    if (!d)
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s state: out of host memory",
                        fp32 ? "sell32-cuda" : "sell-cuda");
    if ((st = spk_sell_from_csr(ctx, A, &d->h))) {
        spk_free(d);
        return st;
    }
    const spk_sell_fmt *h = &d->h;
    d->nrows = h->nrows;
    d->ncols = h->ncols;
    d->nnz = h->nnz;
    d->nslices = h->nslices;
    d->slots = h->slots;
    const size_t slots = (size_t)h->slots, n = (size_t)h->nrows;
    if (fp32 && !(d->h_val32 = (float *)spk_malloc(ctx, slots > 0 ? slots : 1, sizeof(float)))) {
        sell_destroy(d);
        return spk_fail(ctx, SPK_ERR_NOMEM, "sell32-cuda state: out of host memory");
    }
    int16_t *off = NULL;
    if (slots > 0 && sell_offsets_fit(ctx, h) &&
        !(off = (int16_t *)spk_malloc(ctx, slots, sizeof *off))) {
        sell_destroy(d);
        return spk_fail(ctx, SPK_ERR_NOMEM, "SELL column offsets: out of host memory "
                        "(%zu bytes)", slots * sizeof *off);
    }
    if (off)
        sell_offsets(h, off);
    void *v = NULL;
    if (!(st = spk_cuda_upload_new(ctx, &d->slice_ptr, h->slice_ptr,
                                   ((size_t)h->nslices + 1) * sizeof(int64_t),
                                   "SELL slice offsets")) &&
        !(st = spk_cuda_upload_new(ctx, &d->perm, h->perm, n * sizeof(uint16_t),
                                   "SELL row order")) &&
        !(st = off ? spk_cuda_upload_new(ctx, &d->off, off, slots * sizeof *off,
                                         "SELL column offsets")
                   : spk_cuda_upload_new(ctx, &d->col, h->col, slots * sizeof(int32_t),
                                         "SELL columns")) &&
        !(st = spk_cuda_upload_values(ctx, &v, h->val, slots, fp32, "SELL values")))
        st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "sell-cuda upload");
    spk_free(off);                                     /* the upload has waited for it */
    if (fp32)
        d->val32 = (float *)v;
    else
        d->val = (double *)v;
    if (st) {
        sell_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status sell_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return sell_setup_as(ctx, A, 0, state);
}

static spk_status sell32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return sell_setup_as(ctx, A, 1, state);
}

/* sell32-cuda from a sell-cuda state on the device (spk_spmv_backend.setup_from): the row's
 * indices and host mirror, its own fp32 values rounded on the device. */
static spk_status sell32_setup_from(spk_context *ctx, const void *row, void **state, int *fits)
{
    *state = NULL;
    *fits = 0;
    const sell_dev *r = (const sell_dev *)row;
    if (!r || r->borrowed || r->val32)
        return spk_fail(ctx, SPK_ERR_ARG, "sell32-cuda: setup_from needs a sell-cuda state");
    const size_t slots = (size_t)(r->slots > 0 ? r->slots : 1);
    sell_dev *d = (sell_dev *)spk_calloc(ctx, 1, sizeof *d);
    float *stage = (float *)spk_malloc(ctx, slots, sizeof(float));
    if (!d || !stage) {
        spk_free(d);
        spk_free(stage);
        return spk_fail(ctx, SPK_ERR_NOMEM, "sell32-cuda state: out of host memory");
    }
    *d = *r;
    d->val = NULL;
    d->val32 = NULL;
    d->h_val32 = stage;
    d->d_rowptr = NULL;
    d->borrowed = 1;
    spk_status st = spk_cuda_malloc(ctx, &d->val32, slots * sizeof(float), "SELL values in fp32");
    if (!st)
        st = spk_cuda_round_checked(ctx, r->slots, r->val, d->val32, fits);
    if (st) {
        sell_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status sell32_refill(spk_context *ctx, void *state, const void *row, int *fits)
{
    sell_dev *d = (sell_dev *)state;
    const sell_dev *r = (const sell_dev *)row;
    *fits = 0;
    if (!d || !d->borrowed || !r || r->borrowed || r->val32 || r->slots != d->slots ||
        r->nrows != d->nrows || r->col != d->col || r->off != d->off || r->perm != d->perm)
        return spk_fail(ctx, SPK_ERR_ARG, "sell32-cuda refill: the row's layout is not this one's");
    return spk_cuda_round_checked(ctx, d->slots, r->val, d->val32, fits);
}

/* The host path: the mirror's values refilled, then uploaded (rounded for the twin). A twin
 * of setup_from refills its row's mirror: the row's own update runs first and does the same. */
static spk_status sell_update(spk_context *ctx, void *state, const spk_csr *A)
{
    sell_dev *d = (sell_dev *)state;
    if (!d || d->nrows != A->nrows || d->nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "sell-cuda update: the layout does not match the matrix");
    spk_sell_fill_values(A, &d->h, d->h.val);
    return d->val32 ? spk_cuda_upload_values_into(ctx, d->val32, d->h.val, d->h_val32,
                                                  (size_t)d->slots, 1, "SELL values (update)")
                    : spk_cuda_upload_values_into(ctx, d->val, d->h.val, NULL, (size_t)d->slots,
                                                  0, "SELL values (update)");
}

/* Sorted position k puts its row's entry j at slice_ptr[k / 32] + k % 32 + 32 j
 * (spk_sell_fill_values): a thread a sorted row, so at each j a warp stores 32 consecutive
 * slots. */
template <class V>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
sell_refill_kernel(int64_t nrows, const int64_t *__restrict__ slice_ptr,
                   const uint16_t *__restrict__ perm, const int64_t *__restrict__ Ap,
                   const double *__restrict__ Av, V *__restrict__ val)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nrows;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = k - k % SPK_SELL_SIGMA + perm[k];
        const int64_t p0 = __ldg(&Ap[r]), len = __ldg(&Ap[r + 1]) - p0;
        const int64_t base = __ldg(&slice_ptr[k / SPK_SELL_C]) + k % SPK_SELL_C;
        for (int64_t j = 0; j < len; j++)
            val[base + j * SPK_SELL_C] = (V)__ldg(&Av[p0 + j]);
    }
}

/* The update on the device: the kernel above, which needs A's row offsets on the device
 * (uploaded at the first call); the order and the slices are the layout's own. */
static spk_status sell_update_device(spk_context *ctx, void *state, const spk_csr *A,
                                     const double *d_val)
{
    sell_dev *d = (sell_dev *)state;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (!d || d->nrows != A->nrows || d->nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "sell-cuda update: the layout does not match the matrix");
    if (!d->d_rowptr &&
        (st = spk_cuda_upload_wait(ctx, &d->d_rowptr, A->rowptr,
                                   ((size_t)A->nrows + 1) * sizeof(int64_t),
                                   "SELL refill row offsets")))
        return st;
    if (!d_val || d->nrows == 0 || d->nnz == 0)        /* never launch a zero-size grid */
        return SPK_OK;
    const unsigned grid = spk_cuda_grid(cs, d->nrows, SPK_CUDA_BLOCK);
    if (d->val32)
        sell_refill_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            d->nrows, d->slice_ptr, d->perm, d->d_rowptr, d_val, d->val32);
    else
        sell_refill_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            d->nrows, d->slice_ptr, d->perm, d->d_rowptr, d_val, d->val);
    return spk_cuda_launched(ctx, "sell_refill_kernel");
}

/* A's CSR from the layout (spk_spmv_backend.csr_device): sorted position k holds row
 * k - k % 1024 + perm[k], its entries at slice_ptr[k / 32] + k % 32 + 32 j before the first
 * padding, in the CSR's order. */
template <class Idx>
__global__ void sell_csr_kernel(int64_t nrows, const int64_t *__restrict__ slice_ptr,
                                const uint16_t *__restrict__ perm, const Idx *__restrict__ Aj,
                                const double *__restrict__ Ax, int fill, int32_t *__restrict__ rp,
                                int32_t *__restrict__ ci, double *__restrict__ v)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nrows;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = k - k % SPK_SELL_SIGMA + perm[k];
        const int64_t s = k / SPK_SELL_C, end = slice_ptr[s + 1];
        int32_t p = fill ? rp[r] : 0;
        for (int64_t q = slice_ptr[s] + k % SPK_SELL_C; q < end; q += SPK_SELL_C) {
            int64_t c;
            if (!ell_real(Aj[q], r, c))
                break;
            if (fill) {
                ci[p] = (int32_t)c;
                v[p] = Ax[q];
            }
            p++;
        }
        if (!fill)
            rp[r] = p;
    }
}

static spk_status sell_csr_device(spk_context *ctx, const void *state, int fill, int32_t *rp,
                                  int32_t *col, double *val)
{
    const sell_dev *d = (const sell_dev *)state;
    if (!d->val)
        return SPK_ERR_UNSUPPORTED;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || d->nrows == 0)
        return st;
    const unsigned grid = spk_cuda_grid(cs, d->nrows, SPK_CUDA_BLOCK);
    if (d->col)
        sell_csr_kernel<int32_t><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            d->nrows, d->slice_ptr, d->perm, d->col, d->val, fill, rp, col, val);
    else
        sell_csr_kernel<int16_t><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            d->nrows, d->slice_ptr, d->perm, d->off, d->val, fill, rp, col, val);
    return spk_cuda_launched(ctx, "sell_csr_kernel");
}

extern "C" const spk_spmv_backend spk_backend_sell32_cuda = {
    .name = "sell32-cuda",
    .format = SPK_FMT_SELL,
    .device = SPK_DEVICE_CUDA,
    .setup = sell32_setup,
    .spmv = sell_spmv,
    .destroy = sell_destroy,
    .update = sell_update,
    .spmv_dot = sell_spmv_dot,
    .update_device = sell_update_device,
    .fp32 = NULL,
    .setup_from = sell32_setup_from,
    .refill = sell32_refill,
    .spmv_dot32 = NULL,
    .spmv_step = sell_spmv_step,
    .csr_device = NULL,
};

extern "C" const spk_spmv_backend spk_backend_sell_cuda = {
    .name = "sell-cuda",
    .format = SPK_FMT_SELL,
    .device = SPK_DEVICE_CUDA,
    .setup = sell_setup,
    .spmv = sell_spmv,
    .destroy = sell_destroy,
    .update = sell_update,
    .spmv_dot = sell_spmv_dot,
    .update_device = sell_update_device,
    .fp32 = &spk_backend_sell32_cuda,
    .setup_from = NULL,              /* a twin's entries */
    .refill = NULL,
    .spmv_dot32 = NULL,
    .spmv_step = sell_spmv_step,
    .csr_device = sell_csr_device,
};
