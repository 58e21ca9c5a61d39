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
} hyb_dev;

static void hyb_destroy(void *state)
{
    hyb_dev *d = (hyb_dev *)state;
    if (!d)
        return;
    spk_ell_dev_free(&d->ell);
    spk_coo_dev_free(&d->coo);
    spk_free(d->h_ell_val);
    spk_free(d->h_coo_val);
    spk_free(d);
}

static spk_status hyb_setup(spk_context *ctx, const spk_csr *A, void **state)
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
    if (!d) {
        spk_hyb_fmt_free(&h);
        return spk_fail(ctx, SPK_ERR_NOMEM, "hyb-cuda state: out of host memory");
    }
    d->nrows = A->nrows;
    if (!(st = spk_ell_dev_upload(ctx, &h.ell, &d->ell)) &&
        !(st = spk_coo_dev_upload(ctx, &h.coo, &d->coo)))
        st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "hyb-cuda upload");
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

static spk_status hyb_update(spk_context *ctx, void *state, const spk_csr *A)
{
    hyb_dev *d = (hyb_dev *)state;
    if (!d || d->nrows != A->nrows || d->ell.nnz + d->coo.nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "hyb-cuda update: the layout does not match the matrix");
    spk_hyb_fill_values(A, d->ell.width, d->h_ell_val, d->h_coo_val);
    spk_status st = spk_cuda_upload_into(ctx, d->ell.val, d->h_ell_val,
                                         (size_t)d->ell.nrows * (size_t)d->ell.width * sizeof(double),
                                         "HYB ELL values (update)");
    if (!st)
        st = spk_cuda_upload_into(ctx, d->coo.val, d->h_coo_val, (size_t)d->coo.nnz * sizeof(double),
                                  "HYB COO values (update)");
    return st;
}

extern "C" const spk_spmv_backend spk_backend_hyb_cuda = {
    "hyb-cuda", SPK_FMT_HYB, SPK_DEVICE_CUDA, hyb_setup, hyb_spmv, hyb_destroy, hyb_update,
};
