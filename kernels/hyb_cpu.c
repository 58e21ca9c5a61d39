/* kernels/hyb_cpu.c -- HYB SpMV on the host: an ELL part of width K holding the first K entries
 * of every row, and a COO tail, sorted by row, holding the rest of the rows longer than K
 * (Bell & Garland SC'09, sec. 3.4; CUSP hyb_matrix). SpMV = the ELL kernel (y = a*A_ell*x + b*y)
 * then the COO kernel accumulating (y += a*A_coo*x), exactly as CUSP runs it.
 *
 * K = spk_hyb_width(A) (src/stats.c): Bell & Garland's rule, CUSP's
 * compute_optimal_entries_per_row: widen the ELL part while at least a third of the rows (and,
 * for 4096 rows or more, at least 4096 rows) still have an entry in the next column, because
 * an ELL column that is a third full costs about what the same entries cost in COO (COO runs
 * ~3x slower per entry) and below 4096 rows a column does not fill the GPU.
 *
 * Cost: 12 * nrows * K bytes for the ELL part (at most 3x its nonzeros by construction) plus
 * 16 bytes per tail entry. The ELL part is built without the fill guard: K is chosen so that
 * the padding is bounded.
 *
 * The fp32 twin, hyb32-cpu (src/mixed.c's operator): both parts with float values (8 bytes an
 * ELL slot, 12 a tail entry) and the same kernel with (double)val32[q] in place of val[q]:
 * its y has the bits of hyb-cpu on the values rounded to float. */
#include "formats.h"

#include <string.h>

void spk_hyb_fmt_free(spk_hyb_fmt *f)
{
    if (!f)
        return;
    spk_ell_fmt_free(&f->ell);
    spk_coo_fmt_free(&f->coo);
}

spk_status spk_hyb_from_csr(spk_context *ctx, const spk_csr *A, spk_hyb_fmt *out)
{
    memset(out, 0, sizeof *out);
    if (A->nrows > INT32_MAX)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED,
                        "hyb: %lld rows do not fit the 32-bit row indices", (long long)A->nrows);
    const int64_t K = spk_hyb_width(A);
    spk_status st = spk_ell_from_csr(ctx, A, K, 1, &out->ell);
    if (st)
        return st;

    spk_coo_fmt *t = &out->coo;
    t->nrows = A->nrows;
    t->ncols = A->ncols;
    t->nnz = A->nnz - out->ell.nnz;          /* entries past column K of every row */
    t->row = spk_malloc(ctx, (size_t)t->nnz, sizeof *t->row);
    t->col = spk_malloc(ctx, (size_t)t->nnz, sizeof *t->col);
    t->val = spk_malloc(ctx, (size_t)t->nnz, sizeof *t->val);
    if (!t->row || !t->col || !t->val) {
        size_t bytes = (size_t)t->nnz * 16;
        spk_hyb_fmt_free(out);
        return spk_fail(ctx, SPK_ERR_NOMEM, "hyb: out of memory allocating the COO tail (%zu bytes)",
                        bytes);
    }
    int64_t w = 0;
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t p = A->rowptr[i] + K; p < A->rowptr[i + 1]; p++, w++) {
            t->row[w] = (int32_t)i;
            t->col[w] = A->colind[p];
            t->val[w] = A->val[p];
        }
    return SPK_OK;
}

void spk_hyb_fill_values(const spk_csr *A, int64_t width, double *ell_val, double *tail_val)
{
    spk_ell_fill_values(A, width, ell_val);
    int64_t w = 0;
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t p = A->rowptr[i] + width; p < A->rowptr[i + 1]; p++)
            tail_val[w++] = A->val[p];
}

void spk_hyb_fill_values32(const spk_csr *A, int64_t width, float *ell_val, float *tail_val)
{
    spk_ell_fill_values32(A, width, ell_val);
    int64_t w = 0;
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t p = A->rowptr[i] + width; p < A->rowptr[i + 1]; p++)
            tail_val[w++] = (float)A->val[p];
}

/* Row i is its ELL slots followed by its tail entries: columns stay sorted because the ELL
 * part took the first K entries of the sorted row. */
spk_status spk_hyb_to_csr(spk_context *ctx, const spk_hyb_fmt *f, spk_csr *out)
{
    const spk_ell_fmt *E = &f->ell;
    const spk_coo_fmt *C = &f->coo;
    const int64_t n = E->nrows, K = E->width;
    spk_status st = spk_csr_alloc(ctx, n, E->ncols, E->nnz + C->nnz, out);
    if (st)
        return st;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < K; k++)
            out->rowptr[i + 1] += E->col[k * n + i] != SPK_ELL_PAD;
    for (int64_t k = 0; k < C->nnz; k++)
        out->rowptr[C->row[k] + 1]++;
    for (int64_t i = 0; i < n; i++)
        out->rowptr[i + 1] += out->rowptr[i];
    int64_t c = 0;                            /* the tail is sorted by row: walk it once */
    for (int64_t i = 0; i < n; i++) {
        int64_t w = out->rowptr[i];
        for (int64_t k = 0; k < K; k++)
            if (E->col[k * n + i] != SPK_ELL_PAD) {
                out->colind[w] = E->col[k * n + i];
                out->val[w++] = spk_val(E->val, E->val32, k * n + i);
            }
        for (; c < C->nnz && C->row[c] == i; c++) {
            out->colind[w] = C->col[c];
            out->val[w++] = spk_val(C->val, C->val32, c);
        }
    }
    return SPK_OK;
}

size_t spk_hyb_bytes(const spk_hyb_fmt *f)
{
    return spk_ell_bytes(&f->ell) + spk_coo_bytes(&f->coo);
}

/* First COO tail entry of row >= r (the tail is sorted by row). */
static int64_t tail_lower_bound(const spk_coo_fmt *c, int64_t r)
{
    int64_t lo = 0, hi = c->nnz;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (c->row[mid] < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Row by row: the row's ELL slots, then its COO tail entries, into ONE running sum. The ELL
 * part holds the first K entries of the row in CSR order and the tail the rest, so each row is
 * summed in exactly CSR's order and a solver sees the same rounding in HYB as in CSR (two
 * partial sums added at the end, as the GPU's two kernels do, moved CG on 1138_bus from 2204
 * to 2118 iterations). Blocks of rows keep the column-major ELL reads contiguous. */
#define HYB_CPU_ROW_BLOCK 256

/* Rows [r0, r1) of one block. The values are (ev64, cv64) (hyb-cpu) or (ev32, cv32)
 * (hyb32-cpu), the others constant NULLs where the body is inlined. */
static inline __attribute__((always_inline)) void
hyb_block(const spk_hyb_fmt *f, const double *ev64, const float *ev32, const double *cv64,
          const float *cv32, int64_t r0, int64_t r1, double alpha, const double *x, double beta,
          double *y)
{
    const spk_ell_fmt *e = &f->ell;
    const spk_coo_fmt *c = &f->coo;
    const int64_t n = e->nrows, K = e->width;
    double s[HYB_CPU_ROW_BLOCK] = {0};
    for (int64_t k = 0; k < K; k++)
        for (int64_t i = r0; i < r1; i++) {
            const int32_t j = e->col[k * n + i];
            if (j != SPK_ELL_PAD)
                s[i - r0] += spk_val(ev64, ev32, k * n + i) * x[j];
        }
    for (int64_t q = tail_lower_bound(c, r0); q < c->nnz && c->row[q] < r1; q++)
        s[c->row[q] - r0] += spk_val(cv64, cv32, q) * x[c->col[q]];
    for (int64_t i = r0; i < r1; i++)
        y[i] = beta == 0.0 ? alpha * s[i - r0] : alpha * s[i - r0] + beta * y[i];
}

/* hyb-cpu's and hyb32-cpu's: the layout's values say which loop runs. */
static spk_status hyb_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    const spk_hyb_fmt *f = state;
    if (!f)
        return spk_fail(ctx, SPK_ERR_ARG, "hyb spmv: NULL state (not prepared)");
    const int64_t n = f->ell.nrows, K = f->ell.width;
    const int64_t nblocks = (n + HYB_CPU_ROW_BLOCK - 1) / HYB_CPU_ROW_BLOCK;
#pragma omp parallel for schedule(static) if (n * K + f->coo.nnz > 65536)
    for (int64_t b = 0; b < nblocks; b++) {
        const int64_t r0 = b * HYB_CPU_ROW_BLOCK;
        const int64_t r1 = n - r0 < HYB_CPU_ROW_BLOCK ? n : r0 + HYB_CPU_ROW_BLOCK;
        if (f->ell.val32)
            hyb_block(f, NULL, f->ell.val32, NULL, f->coo.val32, r0, r1, alpha, x, beta, y);
        else
            hyb_block(f, f->ell.val, NULL, f->coo.val, NULL, r0, r1, alpha, x, beta, y);
    }
    return SPK_OK;
}

static spk_status hyb_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    if (!A || !state)
        return spk_fail(ctx, SPK_ERR_ARG, "hyb-cpu setup: NULL argument");
    *state = NULL;
    spk_hyb_fmt *f = spk_calloc(ctx, 1, sizeof *f);
    if (!f)
        return spk_fail(ctx, SPK_ERR_NOMEM, "hyb-cpu setup: out of memory (%zu bytes)", sizeof *f);
    spk_status st = spk_hyb_from_csr(ctx, A, f);
    if (st) {
        spk_free(f);
        return st;
    }
    *state = f;
    return SPK_OK;
}

static void hyb_destroy(void *state)
{
    spk_hyb_fmt_free(state);
    spk_free(state);
}

/* hyb-cpu's layout, both parts' values then rounded to float. */
static spk_status hyb32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    spk_status st = hyb_setup(ctx, A, state);
    if (st)
        return st;
    spk_hyb_fmt *f = *state;
    spk_ell_fmt *e = &f->ell;
    st = spk_values_fp32(ctx, "hyb32-cpu setup", e->nrows * e->width, &e->val, &e->val32);
    if (!st)
        st = spk_values_fp32(ctx, "hyb32-cpu setup", f->coo.nnz, &f->coo.val, &f->coo.val32);
    if (st) {
        hyb_destroy(f);
        *state = NULL;
    }
    return st;
}

/* Both parts refilled in place, in float for the twin. */
static spk_status hyb_update(spk_context *ctx, void *state, const spk_csr *A)
{
    spk_hyb_fmt *f = state;
    if (!f || f->ell.nrows != A->nrows || f->ell.nnz + f->coo.nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "%s update: the layout does not match the matrix",
                        f && f->ell.val32 ? "hyb32-cpu" : "hyb-cpu");
    if (f->ell.val32)
        spk_hyb_fill_values32(A, f->ell.width, f->ell.val32, f->coo.val32);
    else
        spk_hyb_fill_values(A, f->ell.width, f->ell.val, f->coo.val);
    return SPK_OK;
}

const spk_spmv_backend spk_backend_hyb32_cpu = {
    .name = "hyb32-cpu",
    .format = SPK_FMT_HYB,
    .device = SPK_DEVICE_CPU,
    .setup = hyb32_setup,
    .spmv = hyb_spmv,
    .destroy = hyb_destroy,
    .update = hyb_update,
};

const spk_spmv_backend spk_backend_hyb_cpu = {
    .name = "hyb-cpu",
    .format = SPK_FMT_HYB,
    .device = SPK_DEVICE_CPU,
    .setup = hyb_setup,
    .spmv = hyb_spmv,
    .destroy = hyb_destroy,
    .update = hyb_update,
    /* update_device: the host refill is the update */
    .fp32 = &spk_backend_hyb32_cpu,
};
