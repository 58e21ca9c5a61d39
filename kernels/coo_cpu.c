/* kernels/coo_cpu.c -- COO (coordinate) SpMV on the host: triplets (row, col, val) sorted by row,
 * then column (Bell & Garland, "Implementing sparse matrix-vector multiplication on
 * throughput-oriented processors", SC'09, sec. 3.3; CUSP coo_flat_spmv). COO is the one format
 * whose cost depends on nnz alone, whatever the row lengths: the GPU kernel gives every thread
 * the same number of nonzeros and reduces by row segments.
 *
 * Cost: 16 bytes per nonzero (4 row + 4 col + 8 val), against CSR's 12 + 8 per row.
 * SpMV here: y = beta*y in one row-parallel pass, then the nonzeros cut into one contiguous
 * segment per thread, each cut moved forward to the next row start, so that every row belongs
 * to exactly one thread and no atomics are needed (the CPU analogue of a segmented reduction).
 * A row longer than a segment simply makes that thread's segment longer.
 *
 * The fp32 twin, coo32-cpu (src/mixed.c's operator): the same triplets with float values, 12
 * bytes a nonzero, and the same kernel with (double)val32[k] in place of val[k]: its y has
 * the bits of coo-cpu on the values rounded to float. */
#include "formats.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Loops shorter than this run on one thread: a parallel region's fork and join (microseconds,
 * far more on a loaded machine) outweigh the work below it. */
#define OMP_MIN_WORK 16384

spk_status spk_coo_from_csr(spk_context *ctx, const spk_csr *A, spk_coo_fmt *out)
{
    memset(out, 0, sizeof *out);
    if (A->nrows > INT32_MAX)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED,
                        "coo: %lld rows do not fit the 32-bit row indices", (long long)A->nrows);
    out->nrows = A->nrows;
    out->ncols = A->ncols;
    out->nnz = A->nnz;
    out->row = spk_malloc(ctx, (size_t)A->nnz, sizeof *out->row);
    out->col = spk_malloc(ctx, (size_t)A->nnz, sizeof *out->col);
    out->val = spk_malloc(ctx, (size_t)A->nnz, sizeof *out->val);
    if (!out->row || !out->col || !out->val) {
        spk_coo_fmt_free(out);
        return spk_fail(ctx, SPK_ERR_NOMEM, "coo: out of memory allocating %zu bytes for %lld entries",
                        (size_t)A->nnz * 16, (long long)A->nnz);
    }
#pragma omp parallel for schedule(static) if(A->nnz > OMP_MIN_WORK)
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            out->row[p] = (int32_t)i;
    if (A->nnz) {
        memcpy(out->col, A->colind, (size_t)A->nnz * sizeof *out->col);
        memcpy(out->val, A->val, (size_t)A->nnz * sizeof *out->val);
    }
    return SPK_OK;
}

void spk_coo_fmt_free(spk_coo_fmt *f)
{
    if (!f)
        return;
    spk_free(f->row);
    spk_free(f->col);
    spk_free(f->val);
    spk_free(f->val32);
    memset(f, 0, sizeof *f);
}

/* Stable counting placement by row: correct for any row order, canonical when the entries are
 * sorted by (row, col) as spk_coo_from_csr leaves them. */
spk_status spk_coo_to_csr(spk_context *ctx, const spk_coo_fmt *f, spk_csr *out)
{
    spk_status st = spk_csr_alloc(ctx, f->nrows, f->ncols, f->nnz, out);
    if (st)
        return st;
    for (int64_t k = 0; k < f->nnz; k++)
        out->rowptr[f->row[k] + 1]++;
    for (int64_t i = 0; i < f->nrows; i++)
        out->rowptr[i + 1] += out->rowptr[i];
    for (int64_t k = 0, prev = -1, w = 0; k < f->nnz; k++) {
        if (f->row[k] != prev) {              /* entries of one row are contiguous */
            prev = f->row[k];
            w = out->rowptr[prev];
        }
        out->colind[w] = f->col[k];
        out->val[w] = spk_val(f->val, f->val32, k);
        w++;
    }
    return SPK_OK;
}

size_t spk_coo_bytes(const spk_coo_fmt *f)
{
    const size_t value = f->val32 ? sizeof(float) : sizeof(double);
    return (size_t)f->nnz * (2 * sizeof(int32_t) + value);
}

/* First entry of a row at or after position k: k itself if a row starts there, else the end
 * of the row holding entry k-1 (binary search: the rows are sorted). */
static int64_t row_start_at_or_after(const spk_coo_fmt *f, int64_t k)
{
    if (k <= 0 || k >= f->nnz || f->row[k] != f->row[k - 1])
        return k < f->nnz ? k : f->nnz;
    int32_t r = f->row[k - 1];
    int64_t lo = k, hi = f->nnz;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (f->row[mid] <= r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* y += alpha A x over the entries [lo, hi), whole rows: one sum a row. The values are v64
 * (coo-cpu) or v32 (coo32-cpu), the other one a constant NULL where the body is inlined. */
static inline __attribute__((always_inline)) void
coo_segment(const spk_coo_fmt *f, const double *v64, const float *v32, int64_t lo, int64_t hi,
            double alpha, const double *x, double *y)
{
    const int32_t *row = f->row, *col = f->col;
    int64_t k = lo;
    while (k < hi) {
        int32_t i = row[k];
        double s = 0.0;
        do {
            s += spk_val(v64, v32, k) * x[col[k]];
            k++;
        } while (k < hi && row[k] == i);
        y[i] += alpha * s;
    }
}

/* coo-cpu's and coo32-cpu's: the layout's values say which loop runs. */
static spk_status coo_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    const spk_coo_fmt *f = state;
    if (!f)
        return spk_fail(ctx, SPK_ERR_ARG, "coo spmv: NULL state (not prepared)");

    if (beta != 1.0) {
#pragma omp parallel for schedule(static) if(f->nrows > OMP_MIN_WORK)
        for (int64_t i = 0; i < f->nrows; i++)
            y[i] = beta == 0.0 ? 0.0 : beta * y[i];   /* beta 0: drop old y, NaN included */
    }
    if (f->nnz == 0)
        return SPK_OK;
#pragma omp parallel if(f->nnz > OMP_MIN_WORK)
    {
        int64_t nt = 1, t = 0;
#ifdef _OPENMP
        nt = omp_get_num_threads();
        t = omp_get_thread_num();
#endif
        /* even cut of [0, nnz) written to avoid nnz * t overflowing */
        int64_t q = f->nnz / nt, r = f->nnz % nt;
        int64_t lo = row_start_at_or_after(f, q * t + r * t / nt);
        int64_t hi = row_start_at_or_after(f, q * (t + 1) + r * (t + 1) / nt);
        if (f->val32)
            coo_segment(f, NULL, f->val32, lo, hi, alpha, x, y);
        else
            coo_segment(f, f->val, NULL, lo, hi, alpha, x, y);
    }
    return SPK_OK;
}

static spk_status coo_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    if (!A || !state)
        return spk_fail(ctx, SPK_ERR_ARG, "coo-cpu setup: NULL argument");
    *state = NULL;
    spk_coo_fmt *f = spk_calloc(ctx, 1, sizeof *f);
    if (!f)
        return spk_fail(ctx, SPK_ERR_NOMEM, "coo-cpu setup: out of memory (%zu bytes)", sizeof *f);
    spk_status st = spk_coo_from_csr(ctx, A, f);
    if (st) {
        spk_free(f);
        return st;
    }
    *state = f;
    return SPK_OK;
}

static void coo_destroy(void *state)
{
    spk_coo_fmt_free(state);
    spk_free(state);
}

/* coo-cpu's layout, its values then rounded to float. */
static spk_status coo32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    spk_status st = coo_setup(ctx, A, state);
    if (st)
        return st;
    spk_coo_fmt *f = *state;
    st = spk_values_fp32(ctx, "coo32-cpu setup", f->nnz, &f->val, &f->val32);
    if (st) {
        coo_destroy(f);
        *state = NULL;
    }
    return st;
}

/* The entries are in CSR order (sorted by row, then column): the values are A's, copied (or
 * rounded to float for the twin). */
static spk_status coo_update(spk_context *ctx, void *state, const spk_csr *A)
{
    spk_coo_fmt *f = state;
    if (!f || f->nnz != A->nnz || f->nrows != A->nrows)
        return spk_fail(ctx, SPK_ERR_ARG, "%s update: the layout does not match the matrix",
                        f && f->val32 ? "coo32-cpu" : "coo-cpu");
    if (f->val32)
        spk_round_fp32(A->val, A->nnz, f->val32);
    else if (A->nnz)
        memcpy(f->val, A->val, (size_t)A->nnz * sizeof *f->val);
    return SPK_OK;
}

const spk_spmv_backend spk_backend_coo32_cpu = {
    .name = "coo32-cpu",
    .format = SPK_FMT_COO,
    .device = SPK_DEVICE_CPU,
    .setup = coo32_setup,
    .spmv = coo_spmv,
    .destroy = coo_destroy,
    .update = coo_update,
};

const spk_spmv_backend spk_backend_coo_cpu = {
    .name = "coo-cpu",
    .format = SPK_FMT_COO,
    .device = SPK_DEVICE_CPU,
    .setup = coo_setup,
    .spmv = coo_spmv,
    .destroy = coo_destroy,
    .update = coo_update,
    /* update_device: the host refill is the update */
    .fp32 = &spk_backend_coo32_cpu,
};
