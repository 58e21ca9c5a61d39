/* kernels/coo_cuda.cu -- COO SpMV on the GPU. Two kernels over the row-sorted entries; both
 * first scale y by beta (yscale), then accumulate alpha * A x into it:
 *
 *  - atomic: one thread per entry, atomicAdd(&y[row], alpha * a * x[col]). The simplest load
 *    balance there is; every entry costs an atomic, and a long row serialises its atomics
 *    on one address. Not deterministic in the last bits.
 *  - segmented: a warp takes a tile of SPK_COO_TILE consecutive entries, 32 at a time, and
 *    sums each row's run with a segmented inclusive scan over the warp (__shfl_up_sync keyed
 *    on the row, which works because equal rows are contiguous), carrying the open run into
 *    the next 32. Only the end of each run writes y: a plain store for a row wholly inside
 *    the tile, an atomicAdd for a row that crosses the tile's first or last entry (shared
 *    with the neighbouring warp). This is Bell & Garland's COO kernel (SC'09; CUSP
 *    coo_flat_spmv.h: warp-wide segmented reduction, carries between intervals) with
 *    shuffles in place of CUSP's volatile shared memory and atomics in place of its
 *    second fix-up pass. Deterministic except for rows that cross a tile boundary.
 *
 * Cost per SpMV: 16 bytes per entry (row, column, value), a gather of x per entry, y scaled
 * (read + write, or write only when beta == 0) and then updated once per row run.
 *
 * Which is faster is the H200's to say: SPK_COO_KERNEL picks one at build time. A first
 * measurement there (50 SpMVs each, beta = 0, us, atomic / segmented): poisson2d:1000 46 / 55,
 * poisson3d:100 64 / 68, elasticity3d:40 283 / 96, powerlaw:4000000:2 150 / 122,
 * powerlaw:2000000:4 164 / 88, powerlaw:2000000:16 561 / 312; HYB's tail on the last two
 * 155 / 83 and 437 / 280 total. So segmented is the default: atomics win by ~15% only on
 * short regular rows (where COO is not the format to use) and lose up to 3x on long ones.
 * To measure again: -DCMAKE_CUDA_FLAGS=-DSPK_COO_KERNEL=SPK_COO_ATOMIC. */
#include "cuda_common.h"

#include <string.h>

#define SPK_COO_ATOMIC 0
#define SPK_COO_SEGMENTED 1
#ifndef SPK_COO_KERNEL
#define SPK_COO_KERNEL SPK_COO_SEGMENTED
#endif

/* Entries per warp tile: 8 passes of 32. Longer tiles mean fewer rows crossing a boundary
 * (fewer atomics) but fewer warps; 256 gives one warp per 256 entries, so the H200's 132 SMs x
 * 64 warps are all busy from nnz ~ 2M up. */
#define SPK_COO_TILE (32 * 8)

/* X, Y: the vectors' types (double; float for AMG's fp32-vector cycle, spk_coo_dev_accumulate). */
template <class V, class X, class Y>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
coo_atomic_kernel(int64_t nnz, const int32_t *__restrict__ Ai, const int32_t *__restrict__ Aj,
                  const V *__restrict__ Ax, const X *__restrict__ x, double alpha, Y *y)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nnz;
         k += (int64_t)gridDim.x * blockDim.x)
        atomicAdd(&y[__ldg(&Ai[k])],
                  (Y)(alpha * ((double)__ldg(&Ax[k]) * (double)__ldg(&x[__ldg(&Aj[k])]))));
}

template <class V, class X, class Y>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
coo_segmented_kernel(int64_t nnz, const int32_t *__restrict__ Ai, const int32_t *__restrict__ Aj,
                     const V *__restrict__ Ax, const X *__restrict__ x, double alpha, Y *y)
{
    const int lane = threadIdx.x & 31;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;

    for (int64_t t = warp; t * SPK_COO_TILE < nnz; t += nwarps) {      /* warp-uniform */
        const int64_t begin = t * SPK_COO_TILE;
        const int64_t end = begin + SPK_COO_TILE < nnz ? begin + SPK_COO_TILE : nnz;
        /* Rows that also have entries in the neighbouring tiles: their runs are added with
         * atomics, every other run has this warp as its only writer. */
        const int32_t first_row = __ldg(&Ai[begin]), last_row = __ldg(&Ai[end - 1]);
        const bool first_shared = begin > 0 && __ldg(&Ai[begin - 1]) == first_row;
        const bool last_shared = end < nnz && __ldg(&Ai[end]) == last_row;

        int32_t carry_row = -1;                  /* run left open by the previous 32 entries */
        double carry = 0.0;
        for (int64_t base = begin; base < end; base += 32) {
            const int64_t k = base + lane;
            const bool valid = k < end;
            const int32_t r = valid ? spk_ldm<true>(&Ai[k]) : -1;
            double v = valid ? (double)spk_ldm<true>(&Ax[k]) *
                                   (double)__ldg(&x[spk_ldm<true>(&Aj[k])])
                             : 0.0;

            /* Segmented inclusive scan: after the step with offset `off`, v holds the sum of
             * this lane's run over the last 2*off lanes (runs are contiguous in sorted rows). */
#pragma unroll
            for (int off = 1; off < 32; off <<= 1) {
                double v_up = __shfl_up_sync(SPK_FULL_MASK, v, off);
                int32_t r_up = __shfl_up_sync(SPK_FULL_MASK, r, off);
                if (lane >= off && r_up == r)
                    v += v_up;
            }
            if (valid && r == carry_row)         /* only the first run can continue one */
                v += carry;

            /* A run ends where the next entry has another row or the tile ends. */
            int32_t r_next = __shfl_down_sync(SPK_FULL_MASK, r, 1);
            if (lane == 31)
                r_next = k + 1 < end ? __ldg(&Ai[k + 1]) : -1;
            const bool run_end = valid && (k + 1 >= end || r_next != r);

            carry_row = __shfl_sync(SPK_FULL_MASK, run_end ? -1 : r, 31);
            carry = __shfl_sync(SPK_FULL_MASK, v, 31);

            if (run_end) {
                const double add = alpha * v;
                if ((first_shared && r == first_row) || (last_shared && r == last_row))
                    atomicAdd(&y[r], (Y)add);
                else
                    y[r] = (Y)((double)y[r] + add);
            }
        }
    }
}

/* y += alpha A x with the build's kernel. */
template <class X, class Y>
static spk_status coo_run(spk_context *ctx, const spk_cuda_state *cs, const spk_coo_dev *A,
                          double alpha, const X *x, Y *y)
{
#if SPK_COO_KERNEL == SPK_COO_ATOMIC
    const unsigned grid = spk_cuda_grid(cs, A->nnz, SPK_CUDA_BLOCK);
    if (A->val32)
        coo_atomic_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(A->nnz, A->row, A->col,
                                                                   A->val32, x, alpha, y);
    else
        coo_atomic_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(A->nnz, A->row, A->col,
                                                                   A->val, x, alpha, y);
    return spk_cuda_launched(ctx, "coo_atomic_kernel");
#else
    const int64_t tiles = (A->nnz + SPK_COO_TILE - 1) / SPK_COO_TILE;
    const unsigned grid = spk_cuda_grid(cs, tiles, SPK_CUDA_BLOCK / 32);
    if (A->val32)
        coo_segmented_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(A->nnz, A->row, A->col,
                                                                      A->val32, x, alpha, y);
    else
        coo_segmented_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(A->nnz, A->row, A->col,
                                                                      A->val, x, alpha, y);
    return spk_cuda_launched(ctx, "coo_segmented_kernel");
#endif
}

spk_status spk_coo_dev_accumulate(spk_context *ctx, const spk_coo_dev *A, double alpha,
                                  const void *x, int x32, void *y, int y32)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || A->nrows == 0 || A->nnz == 0)
        return st;
    if (x32 && y32)
        return coo_run(ctx, cs, A, alpha, (const float *)x, (float *)y);
    if (x32)
        return coo_run(ctx, cs, A, alpha, (const float *)x, (double *)y);
    if (y32)
        return coo_run(ctx, cs, A, alpha, (const double *)x, (float *)y);
    return coo_run(ctx, cs, A, alpha, (const double *)x, (double *)y);
}

spk_status spk_coo_dev_spmv(spk_context *ctx, const spk_coo_dev *A, double alpha,
                            const double *x, double beta, double *y, int accumulate)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || A->nrows == 0)                           /* never launch a zero-size grid */
        return st;
    if (!accumulate && (st = spk_cuda_yscale(ctx, A->nrows, beta, y)))
        return st;
    if (A->nnz == 0)
        return SPK_OK;
    return coo_run(ctx, cs, A, alpha, x, y);
}

spk_status spk_coo_dev_upload(spk_context *ctx, const spk_coo_fmt *h, int fp32, spk_coo_dev *d)
{
    d->nrows = h->nrows;
    d->ncols = h->ncols;
    d->nnz = h->nnz;
    d->row = d->col = NULL;
    d->val = NULL;
    d->val32 = NULL;
    size_t nnz = (size_t)h->nnz;
    void *v = NULL;
    spk_status st;
    if (!(st = spk_cuda_upload_new(ctx, &d->row, h->row, nnz * sizeof(int32_t), "COO rows")) &&
        !(st = spk_cuda_upload_new(ctx, &d->col, h->col, nnz * sizeof(int32_t), "COO columns")))
        st = spk_cuda_upload_values(ctx, &v, h->val, nnz, fp32, "COO values");
    if (fp32)
        d->val32 = (float *)v;
    else
        d->val = (double *)v;
    if (st)
        spk_coo_dev_free(d);
    return st;
}

void spk_coo_dev_free(spk_coo_dev *d)
{
    if (!d)
        return;
    (void)cudaFree(d->row);
    (void)cudaFree(d->col);
    (void)cudaFree(d->val);
    (void)cudaFree(d->val32);
    d->row = d->col = NULL;
    d->val = NULL;
    d->val32 = NULL;
}

/* ---- the backend rows: coo-cuda and its fp32 twin coo32-cuda ------------------------------- */

typedef struct coo_cuda {
    spk_coo_dev dev;
    float      *h_val32;                /* coo32-cuda: staging of the rounded values (nnz)    */
    int         borrowed;               /* a twin of setup_from: dev.row and dev.col its row's */
} coo_cuda;

static void coo_destroy(void *state)
{
    coo_cuda *d = (coo_cuda *)state;
    if (!d)
        return;
    if (d->borrowed)
        (void)cudaFree(d->dev.val32);
    else
        spk_coo_dev_free(&d->dev);
    spk_free(d->h_val32);
    spk_free(d);
}

static spk_status coo_setup_as(spk_context *ctx, const spk_csr *A, int fp32, void **state)
{
    *state = NULL;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    spk_coo_fmt h;
    memset(&h, 0, sizeof h);
    if ((st = spk_coo_from_csr(ctx, A, &h)))
        return st;
    coo_cuda *d = (coo_cuda *)spk_calloc(ctx, 1, sizeof *d);
    if (!d || (fp32 && !(d->h_val32 = (float *)spk_malloc(ctx, A->nnz > 0 ? (size_t)A->nnz : 1,
                                                            sizeof(float))))) {
        spk_coo_fmt_free(&h);
        coo_destroy(d);
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s state: out of host memory",
                        fp32 ? "coo32-cuda" : "coo-cuda");
    }
    st = spk_coo_dev_upload(ctx, &h, fp32, &d->dev);
    if (!st)
        st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "coo-cuda upload");
    spk_coo_fmt_free(&h);
    if (st) {
        coo_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status coo_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return coo_setup_as(ctx, A, 0, state);
}

static spk_status coo32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return coo_setup_as(ctx, A, 1, state);
}

/* coo32-cuda from a coo-cuda state on the device (spk_spmv_backend.setup_from). */
static spk_status coo32_setup_from(spk_context *ctx, const void *row, void **state, int *fits)
{
    *state = NULL;
    *fits = 0;
    const coo_cuda *r = (const coo_cuda *)row;
    if (!r || r->borrowed || r->dev.val32)
        return spk_fail(ctx, SPK_ERR_ARG, "coo32-cuda: setup_from needs a coo-cuda state");
    const size_t nnz = (size_t)(r->dev.nnz > 0 ? r->dev.nnz : 1);
    coo_cuda *d = (coo_cuda *)spk_calloc(ctx, 1, sizeof *d);
    float *stage = (float *)spk_malloc(ctx, nnz, sizeof(float));
    if (!d || !stage) {
        spk_free(d);
        spk_free(stage);
        return spk_fail(ctx, SPK_ERR_NOMEM, "coo32-cuda state: out of host memory");
    }
    d->dev = r->dev;
    d->dev.val = NULL;
    d->dev.val32 = NULL;
    d->h_val32 = stage;
    d->borrowed = 1;
    spk_status st = spk_cuda_malloc(ctx, &d->dev.val32, nnz * sizeof(float), "COO values in fp32");
    if (!st)
        st = spk_cuda_round_checked(ctx, r->dev.nnz, r->dev.val, d->dev.val32, fits);
    if (st) {
        coo_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status coo32_refill(spk_context *ctx, void *state, const void *row, int *fits)
{
    coo_cuda *d = (coo_cuda *)state;
    const coo_cuda *r = (const coo_cuda *)row;
    *fits = 0;
    if (!d || !d->borrowed || !r || r->borrowed || r->dev.val32 || r->dev.nnz != d->dev.nnz ||
        r->dev.row != d->dev.row || r->dev.col != d->dev.col)
        return spk_fail(ctx, SPK_ERR_ARG, "coo32-cuda refill: the row's layout is not this one's");
    return spk_cuda_round_checked(ctx, d->dev.nnz, r->dev.val, d->dev.val32, fits);
}

static spk_status coo_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    return spk_coo_dev_spmv(ctx, &((const coo_cuda *)state)->dev, alpha, x, beta, y, 0);
}

/* The entries are in CSR order, so the new values upload as they are (rounded for the twin). */
static spk_status coo_update(spk_context *ctx, void *state, const spk_csr *A)
{
    coo_cuda *c = (coo_cuda *)state;
    spk_coo_dev *d = c ? &c->dev : NULL;
    if (!d || d->nnz != A->nnz || d->nrows != A->nrows)
        return spk_fail(ctx, SPK_ERR_ARG, "coo-cuda update: the layout does not match the matrix");
    return d->val32 ? spk_cuda_upload_values_into(ctx, d->val32, A->val, c->h_val32,
                                                  (size_t)A->nnz, 1, "COO values (update)")
                    : spk_cuda_upload_values_into(ctx, d->val, A->val, NULL, (size_t)A->nnz, 0,
                                                  "COO values (update)");
}

/* The update on the device: CSR order, so one device-to-device copy (a rounding kernel for the
 * twin), nothing to make first. */
static spk_status coo_update_device(spk_context *ctx, void *state, const spk_csr *A,
                                    const double *d_val)
{
    coo_cuda *c = (coo_cuda *)state;
    spk_coo_dev *d = c ? &c->dev : NULL;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (!d || d->nnz != A->nnz || d->nrows != A->nrows)
        return spk_fail(ctx, SPK_ERR_ARG, "coo-cuda update: the layout does not match the matrix");
    if (!d_val || A->nnz == 0)
        return SPK_OK;
    if (d->val32)
        return spk_cuda_round_values(ctx, A->nnz, d_val, d->val32);
    return spk_cuda(ctx, cudaMemcpyAsync(d->val, d_val, (size_t)A->nnz * sizeof(double),
                                         cudaMemcpyDeviceToDevice, cs->stream),
                    "COO values (device update)");
}

extern "C" const spk_spmv_backend spk_backend_coo32_cuda = {
    .name = "coo32-cuda",
    .format = SPK_FMT_COO,
    .device = SPK_DEVICE_CUDA,
    .setup = coo32_setup,
    .spmv = coo_spmv,
    .destroy = coo_destroy,
    .update = coo_update,
    .spmv_dot = NULL,
    .update_device = coo_update_device,
    .fp32 = NULL,
    .setup_from = coo32_setup_from,
    .refill = coo32_refill,
    .spmv_dot32 = NULL,
    .spmv_step = NULL,
    .csr_device = NULL,
};

extern "C" const spk_spmv_backend spk_backend_coo_cuda = {
    .name = "coo-cuda",
    .format = SPK_FMT_COO,
    .device = SPK_DEVICE_CUDA,
    .setup = coo_setup,
    .spmv = coo_spmv,
    .destroy = coo_destroy,
    .update = coo_update,
    .spmv_dot = NULL,                /* none; written out, as C++ warns of omitted fields */
    .update_device = coo_update_device,
    .fp32 = &spk_backend_coo32_cuda,
    .setup_from = NULL,              /* a twin's entries */
    .refill = NULL,
    .spmv_dot32 = NULL,
    .spmv_step = NULL,
    .csr_device = NULL,
};
