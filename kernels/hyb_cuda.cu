/* kernels/hyb_cuda.cu -- HYB SpMV on the GPU: the ELL kernel over the regular part (the first
 * `width` entries of every row), then the COO kernel accumulating the rows' overflow into y
 * (Bell & Garland SC'09, the HYB format; CUSP hyb.h: ELL kernel + accumulating COO kernel).
 * The width is Bell & Garland's break-even rule (spk_hyb_width), applied by spk_hyb_from_csr
 * (hyb_cpu.c) whose layout is uploaded unchanged.
 *
 * Cost per SpMV: the ELL part's (12 bytes per slot, y written once) plus the COO tail's
 * (16 bytes per overflow entry, y updated once per overflow row run); two launches. */
#include "cuda_common.h"

#include <string.h>

/* With the host mirrors of the two value arrays, kept from setup for value updates (see
 * ell_cuda.cu). */
typedef struct hyb_dev {
    int64_t     nrows;
    spk_ell_dev ell;
    spk_coo_dev coo;
    double     *h_ell_val;              /* nrows * ell.width */
    double     *h_coo_val;              /* coo.nnz           */
    float      *h_val32;                /* hyb32-cuda: staging of the rounded values, as many
                                         * as the larger of the two parts                     */
    int         borrowed;               /* a twin of setup_from: the parts' indices and the
                                         * host mirrors are its row's; its values, staging,
                                         * d_rowptr and d_tail_ptr its own                    */
    /* made at the first update on the device: A's row offsets, and where each row's tail
     * starts in the COO part (nrows + 1 each) */
    int64_t    *d_rowptr, *d_tail_ptr;
} hyb_dev;

static void hyb_destroy(void *state)
{
    hyb_dev *d = (hyb_dev *)state;
    if (!d)
        return;
    if (d->borrowed) {
        (void)cudaFree(d->ell.val32);
        (void)cudaFree(d->coo.val32);
        spk_free(d->h_val32);
        (void)cudaFree(d->d_rowptr);
        (void)cudaFree(d->d_tail_ptr);
        spk_free(d);
        return;
    }
    spk_ell_dev_free(&d->ell);
    spk_coo_dev_free(&d->coo);
    spk_free(d->h_ell_val);
    spk_free(d->h_coo_val);
    spk_free(d->h_val32);
    (void)cudaFree(d->d_rowptr);
    (void)cudaFree(d->d_tail_ptr);
    spk_free(d);
}

/* The layout with fp64 values (hyb-cuda) or fp32 ones (hyb32-cuda). */
static spk_status hyb_setup_as(spk_context *ctx, const spk_csr *A, int fp32, void **state)
{
    *state = NULL;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    spk_hyb_fmt h;
    memset(&h, 0, sizeof h);
    if ((st = spk_hyb_from_csr(ctx, A, &h)))
        return st;
    hyb_dev *d = (hyb_dev *)spk_calloc(ctx, 1, sizeof *d);
    const size_t slots = (size_t)h.ell.nrows * (size_t)h.ell.width, tail = (size_t)h.coo.nnz;
    const size_t stage = slots > tail ? slots : tail;
    if (!d || (fp32 && !(d->h_val32 = (float *)spk_malloc(ctx, stage > 0 ? stage : 1,
                                                            sizeof(float))))) {
        spk_hyb_fmt_free(&h);
        hyb_destroy(d);
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s state: out of host memory",
                        fp32 ? "hyb32-cuda" : "hyb-cuda");
    }
    d->nrows = A->nrows;
    if (!(st = spk_ell_dev_upload(ctx, &h.ell, fp32, &d->ell)) &&
        !(st = spk_coo_dev_upload(ctx, &h.coo, fp32, &d->coo)))
        st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "hyb-cuda upload");
    d->ell.stream = h.coo.nnz > 0;      /* a tail: the ELL part loads evict-first (spk_ldm) */
    d->h_ell_val = h.ell.val;                          /* kept for value updates */
    d->h_coo_val = h.coo.val;
    h.ell.val = h.coo.val = NULL;
    spk_hyb_fmt_free(&h);
    if (st) {
        hyb_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status hyb_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return hyb_setup_as(ctx, A, 0, state);
}

static spk_status hyb32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return hyb_setup_as(ctx, A, 1, state);
}

/* hyb32-cuda from a hyb-cuda state on the device (spk_spmv_backend.setup_from). */
static spk_status hyb32_setup_from(spk_context *ctx, const void *row, void **state, int *fits)
{
    *state = NULL;
    *fits = 0;
    const hyb_dev *r = (const hyb_dev *)row;
    if (!r || r->borrowed || r->ell.val32 || r->coo.val32)
        return spk_fail(ctx, SPK_ERR_ARG, "hyb32-cuda: setup_from needs a hyb-cuda state");
    const size_t slots = (size_t)r->ell.nrows * (size_t)r->ell.width, tail = (size_t)r->coo.nnz;
    const size_t stage_n = slots > tail ? slots : tail;
    hyb_dev *d = (hyb_dev *)spk_calloc(ctx, 1, sizeof *d);
    float *stage = (float *)spk_malloc(ctx, stage_n > 0 ? stage_n : 1, sizeof(float));
    if (!d || !stage) {
        spk_free(d);
        spk_free(stage);
        return spk_fail(ctx, SPK_ERR_NOMEM, "hyb32-cuda state: out of host memory");
    }
    *d = *r;
    d->ell.val = NULL;
    d->ell.val32 = NULL;
    d->ell.rows = ctx->tune.ell_rows ? ctx->tune.ell_rows : 2;   /* spk_ell_dev_upload's rule */
    d->coo.val = NULL;
    d->coo.val32 = NULL;
    d->h_val32 = stage;
    d->d_rowptr = d->d_tail_ptr = NULL;
    d->borrowed = 1;
    int f1 = 1, f2 = 1;
    spk_status st = SPK_OK;
    if (slots > 0 && !(st = spk_cuda_malloc(ctx, &d->ell.val32, slots * sizeof(float),
                                            "HYB ELL values in fp32")))
        st = spk_cuda_round_checked(ctx, (int64_t)slots, r->ell.val, d->ell.val32, &f1);
    if (!st && tail > 0 && !(st = spk_cuda_malloc(ctx, &d->coo.val32, tail * sizeof(float),
                                                  "HYB COO values in fp32")))
        st = spk_cuda_round_checked(ctx, (int64_t)tail, r->coo.val, d->coo.val32, &f2);
    if (st) {
        hyb_destroy(d);
        return st;
    }
    *fits = f1 && f2;
    *state = d;
    return SPK_OK;
}

static spk_status hyb32_refill(spk_context *ctx, void *state, const void *row, int *fits)
{
    hyb_dev *d = (hyb_dev *)state;
    const hyb_dev *r = (const hyb_dev *)row;
    *fits = 0;
    if (!d || !d->borrowed || !r || r->borrowed || r->ell.val32 || r->coo.val32 ||
        r->nrows != d->nrows || r->ell.width != d->ell.width || r->coo.nnz != d->coo.nnz ||
        r->ell.col != d->ell.col || r->ell.off != d->ell.off || r->coo.row != d->coo.row)
        return spk_fail(ctx, SPK_ERR_ARG, "hyb32-cuda refill: the row's layout is not this one's");
    int f1 = 1, f2 = 1;
    spk_status st = SPK_OK;
    if (d->ell.val32)
        st = spk_cuda_round_checked(ctx, d->ell.nrows * d->ell.width, r->ell.val, d->ell.val32,
                                    &f1);
    if (!st && d->coo.val32)
        st = spk_cuda_round_checked(ctx, d->coo.nnz, r->coo.val, d->coo.val32, &f2);
    *fits = f1 && f2;
    return st;
}

static spk_status hyb_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    const hyb_dev *d = (const hyb_dev *)state;
    spk_status st;
    /* The ELL pass covers every row, so it applies beta; the COO pass adds the overflow on
     * top. With width 0 (every entry in the tail) only the scaling of y is left of it. */
    if (d->ell.width > 0)
        st = spk_ell_dev_spmv(ctx, &d->ell, alpha, x, beta, y);
    else
        st = spk_cuda_yscale(ctx, d->nrows, beta, y);
    if (st)
        return st;
    if (d->coo.nnz == 0)
        return SPK_OK;
    return spk_coo_dev_spmv(ctx, &d->coo, alpha, x, 1.0, y, 1);
}

/* AMG's fused step: the ELL part's step, then the tail added. Only a step linear in A x (no w,
 * no b: the cycle's R r and x + P x') comes apart so; the others are composed by the caller.
 * With an fp32 y the tail's run sums are added to the rounded ELL part in float: a row is
 * rounded once more for each tile of the tail it spans (one or two for the cycle's P and R,
 * a few hundred for a row of 100,000 entries), not once. */
static spk_status hyb_spmv_step(spk_context *ctx, const void *state, const spk_step *s)
{
    const hyb_dev *d = (const hyb_dev *)state;
    if (d->coo.nnz > 0 && (s->w || s->b))
        return SPK_ERR_UNSUPPORTED;
    spk_status st;
    if (d->ell.width > 0)
        st = spk_ell_dev_spmv_step(ctx, &d->ell, s);
    else                                               /* y = beta u */
        st = spk_vec_ops_cuda()->step(ctx, d->nrows, NULL, s);
    if (st || d->coo.nnz == 0)
        return st;
    return spk_coo_dev_accumulate(ctx, &d->coo, s->alpha, s->x, s->x32, s->y, s->y32);
}

static spk_status hyb_update(spk_context *ctx, void *state, const spk_csr *A)
{
    hyb_dev *d = (hyb_dev *)state;
    if (!d || d->nrows != A->nrows || d->ell.nnz + d->coo.nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "hyb-cuda update: the layout does not match the matrix");
    spk_hyb_fill_values(A, d->ell.width, d->h_ell_val, d->h_coo_val);
    const int fp32 = d->ell.val32 || d->coo.val32;
    void *ev = fp32 ? (void *)d->ell.val32 : (void *)d->ell.val;
    void *cv = fp32 ? (void *)d->coo.val32 : (void *)d->coo.val;
    spk_status st = spk_cuda_upload_values_into(ctx, ev, d->h_ell_val, d->h_val32,
                                                (size_t)d->ell.nrows * (size_t)d->ell.width, fp32,
                                                "HYB ELL values (update)");
    if (!st)   /* the ELL part's upload has waited: the staging is free again */
        st = spk_cuda_upload_values_into(ctx, cv, d->h_coo_val, d->h_val32, (size_t)d->coo.nnz,
                                         fp32, "HYB COO values (update)");
    return st;
}

/* Tail entry t of row r = Ti[t] is entry width + (t - Tp[r]) of the row in the canonical CSR
 * (the tail lists the rows' overflow in row order, spk_hyb_fill_values). One thread per tail
 * entry, so a long row's tail is spread over many threads. */
template <class V>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
hyb_tail_refill_kernel(int64_t ntail, int64_t width, const int32_t *__restrict__ Ti,
                       const int64_t *__restrict__ Tp, const int64_t *__restrict__ Ap,
                       const double *__restrict__ Av, V *__restrict__ Tv)
{
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < ntail;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int32_t r = __ldg(&Ti[t]);
        Tv[t] = (V)__ldg(&Av[__ldg(&Ap[r]) + width + (t - __ldg(&Tp[r]))]);
    }
}

/* The tail offsets of each row (nrows + 1), on the host, then uploaded: made once. */
static spk_status hyb_refill_setup(spk_context *ctx, hyb_dev *d, const spk_csr *A)
{
    const int64_t n = A->nrows, K = d->ell.width;
    int64_t *tp = (int64_t *)spk_malloc(ctx, (size_t)n + 1, sizeof *tp);
    if (!tp)
        return spk_fail(ctx, SPK_ERR_NOMEM, "hyb-cuda: tail offsets of %lld rows: out of host "
                        "memory", (long long)n);
    tp[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t len = A->rowptr[i + 1] - A->rowptr[i];
        tp[i + 1] = tp[i] + (len > K ? len - K : 0);
    }
    spk_status st = SPK_OK;
    if (tp[n] != d->coo.nnz)
        st = spk_fail(ctx, SPK_ERR_ARG, "hyb-cuda update: the layout does not match the matrix");
    else if (!(st = spk_cuda_upload_wait(ctx, &d->d_tail_ptr, tp, ((size_t)n + 1) * sizeof *tp,
                                         "HYB refill tail offsets")) &&
             (st = spk_cuda_upload_wait(ctx, &d->d_rowptr, A->rowptr,
                                        ((size_t)n + 1) * sizeof(int64_t),
                                        "HYB refill row offsets"))) {
        (void)cudaFree(d->d_tail_ptr);
        d->d_tail_ptr = NULL;
    }
    spk_free(tp);
    return st;
}

/* The update on the device: the ELL part by ELL's refill kernel (its rows cut at the width),
 * the tail by the kernel above. */
static spk_status hyb_update_device(spk_context *ctx, void *state, const spk_csr *A,
                                    const double *d_val)
{
    hyb_dev *d = (hyb_dev *)state;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (!d || d->nrows != A->nrows || d->ell.nnz + d->coo.nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "hyb-cuda update: the layout does not match the matrix");
    if (!d->d_rowptr && (st = hyb_refill_setup(ctx, d, A)))
        return st;
    if (!d_val)
        return SPK_OK;
    if (d->ell.width > 0 && (st = spk_ell_dev_refill(ctx, &d->ell, d->d_rowptr, d_val)))
        return st;
    if (d->coo.nnz == 0)                               /* never launch a zero-size grid */
        return SPK_OK;
    const unsigned grid = spk_cuda_grid(cs, d->coo.nnz, SPK_CUDA_BLOCK);
    if (d->coo.val32)
        hyb_tail_refill_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            d->coo.nnz, d->ell.width, d->coo.row, d->d_tail_ptr, d->d_rowptr, d_val, d->coo.val32);
    else
        hyb_tail_refill_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            d->coo.nnz, d->ell.width, d->coo.row, d->d_tail_ptr, d->d_rowptr, d_val, d->coo.val);
    return spk_cuda_launched(ctx, "hyb_tail_refill_kernel");
}

extern "C" int spk_hyb_cuda_state_rows(const void *state)
{
    return ((const hyb_dev *)state)->ell.rows;
}

extern "C" const spk_spmv_backend spk_backend_hyb32_cuda = {
    .name = "hyb32-cuda",
    .format = SPK_FMT_HYB,
    .device = SPK_DEVICE_CUDA,
    .setup = hyb32_setup,
    .spmv = hyb_spmv,
    .destroy = hyb_destroy,
    .update = hyb_update,
    .spmv_dot = NULL,
    .update_device = hyb_update_device,
    .fp32 = NULL,
    .setup_from = hyb32_setup_from,
    .refill = hyb32_refill,
    .spmv_dot32 = NULL,
    .spmv_step = hyb_spmv_step,
    .csr_device = NULL,
};

extern "C" const spk_spmv_backend spk_backend_hyb_cuda = {
    .name = "hyb-cuda",
    .format = SPK_FMT_HYB,
    .device = SPK_DEVICE_CUDA,
    .setup = hyb_setup,
    .spmv = hyb_spmv,
    .destroy = hyb_destroy,
    .update = hyb_update,
    .spmv_dot = NULL,                /* none; written out, as C++ warns of omitted fields */
    .update_device = hyb_update_device,
    .fp32 = &spk_backend_hyb32_cuda,
    .setup_from = NULL,              /* a twin's entries */
    .refill = NULL,
    .spmv_dot32 = NULL,
    .spmv_step = hyb_spmv_step,
    .csr_device = NULL,
};
