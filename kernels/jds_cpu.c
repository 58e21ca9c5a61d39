/* kernels/jds_cpu.c -- JDS (jagged diagonal storage) SpMV on the host. The rows are sorted by
 * length, longest first (a stable counting sort, so equal rows keep their order), and entry d
 * of every sorted row that has one forms "jagged diagonal" d, stored contiguously; diagonal d
 * holds the first cnt_d sorted rows, cnt_d = number of rows longer than d (Saad, Iterative
 * Methods for Sparse Linear Systems, 2nd ed., sec. 3.4; Saad, "Krylov subspace methods on
 * supercomputers", SISSCS 1989; on GPUs: Li & Saad, "GPU-accelerated preconditioned
 * iterative linear solvers", J. Supercomputing 2013). Like ELL, thread k of a GPU kernel reads
 * diagonal d at jd_ptr[d] + k, consecutive across a warp; unlike ELL there is no padding, and
 * sorted neighbours have nearly equal lengths, so a warp diverges little.
 *
 * Cost: 12 bytes per nonzero + 4 * nrows (perm) + 8 * (ndiags + 1) (jd_ptr), ndiags = the
 * longest row. SpMV writes y[perm[k]] directly, a scattered write per row. The alternative
 * DESIGN.md names -- permute the system once (solve P A P' with P b, then unpermute x) so the
 * kernel writes y[k] contiguously -- is a later measurement; this file keeps the direct form
 * because it leaves the solver and the vectors untouched.
 *
 * The CPU kernel walks a block of consecutive sorted rows diagonal by diagonal, which reads
 * each diagonal contiguously and sums each row in CSR order.
 *
 * The fp32 twin, jds32-cpu (src/mixed.c's operator): the same layout with float values, 8
 * bytes a nonzero, and the same kernel with (double)val32[q] in place of val[q]: its y has
 * the bits of jds-cpu on the values rounded to float. */
#include "formats.h"

#include <string.h>

/* Loops shorter than this run on one thread: a parallel region's fork and join (microseconds,
 * far more on a loaded machine) outweigh the work below it. */
#define OMP_MIN_WORK 16384

/* Sorted rows per block of the CPU kernel (see ell_cpu.c). */
#define JDS_CPU_ROW_BLOCK 128

void spk_jds_fmt_free(spk_jds_fmt *f)
{
    if (!f)
        return;
    spk_free(f->perm);
    spk_free(f->jd_ptr);
    spk_free(f->col);
    spk_free(f->val);
    spk_free(f->val32);
    memset(f, 0, sizeof *f);
}

static int64_t row_len(const spk_csr *A, int64_t i) { return A->rowptr[i + 1] - A->rowptr[i]; }

spk_status spk_jds_from_csr(spk_context *ctx, const spk_csr *A, spk_jds_fmt *out)
{
    const int64_t n = A->nrows;
    memset(out, 0, sizeof *out);
    if (n > INT32_MAX)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED,
                        "jds: %lld rows do not fit the 32-bit permutation", (long long)n);
    int64_t maxlen = 0;
    for (int64_t i = 0; i < n; i++)
        if (row_len(A, i) > maxlen)
            maxlen = row_len(A, i);

    /* start[L] = sorted position of the first row of length L = rows longer than L */
    int64_t *start = spk_calloc(ctx, (size_t)maxlen + 2, sizeof *start);
    out->nrows = n;
    out->ncols = A->ncols;
    out->nnz = A->nnz;
    out->ndiags = maxlen;
    out->perm = spk_malloc(ctx, (size_t)n, sizeof *out->perm);
    out->jd_ptr = spk_malloc(ctx, (size_t)maxlen + 1, sizeof *out->jd_ptr);
    out->col = spk_malloc(ctx, (size_t)A->nnz, sizeof *out->col);
    out->val = spk_malloc(ctx, (size_t)A->nnz, sizeof *out->val);
    if (!start || !out->perm || !out->jd_ptr || !out->col || !out->val) {
        spk_free(start);
        spk_jds_fmt_free(out);
        return spk_fail(ctx, SPK_ERR_NOMEM, "jds: out of memory allocating %.0f bytes",
                        12.0 * (double)A->nnz + 4.0 * (double)n + 16.0 * (double)(maxlen + 1));
    }
    for (int64_t i = 0; i < n; i++)
        start[row_len(A, i)]++;                   /* histogram of row lengths */
    for (int64_t L = maxlen, above = 0; L >= 0; L--) {
        int64_t cnt = start[L];
        start[L] = above;
        above += cnt;
    }
    /* jagged diagonal d holds one entry of each row longer than d, i.e. start[d] entries */
    out->jd_ptr[0] = 0;
    for (int64_t d = 0; d < maxlen; d++)
        out->jd_ptr[d + 1] = out->jd_ptr[d] + start[d];
    for (int64_t i = 0; i < n; i++)               /* stable: ties keep the original order */
        out->perm[start[row_len(A, i)]++] = (int32_t)i;
    spk_free(start);

#pragma omp parallel for schedule(static) if(A->nnz > OMP_MIN_WORK)
    for (int64_t k = 0; k < n; k++) {
        const int64_t r = out->perm[k], p0 = A->rowptr[r], len = row_len(A, r);
        for (int64_t d = 0; d < len; d++) {
            out->col[out->jd_ptr[d] + k] = A->colind[p0 + d];
            out->val[out->jd_ptr[d] + k] = A->val[p0 + d];
        }
    }
    return SPK_OK;
}

void spk_jds_fill_values(const spk_csr *A, const int32_t *perm, const int64_t *jd_ptr,
                         double *val)
{
#pragma omp parallel for schedule(static) if(A->nnz > OMP_MIN_WORK)
    for (int64_t k = 0; k < A->nrows; k++) {
        const int64_t r = perm[k], p0 = A->rowptr[r], len = row_len(A, r);
        for (int64_t d = 0; d < len; d++)
            val[jd_ptr[d] + k] = A->val[p0 + d];
    }
}

void spk_jds_fill_values32(const spk_csr *A, const int32_t *perm, const int64_t *jd_ptr,
                           float *val)
{
#pragma omp parallel for schedule(static) if(A->nnz > OMP_MIN_WORK)
    for (int64_t k = 0; k < A->nrows; k++) {
        const int64_t r = perm[k], p0 = A->rowptr[r], len = row_len(A, r);
        for (int64_t d = 0; d < len; d++)
            val[jd_ptr[d] + k] = (float)A->val[p0 + d];
    }
}

/* Length of sorted row k: the number of diagonals that reach position k. */
static int64_t sorted_len(const spk_jds_fmt *f, int64_t k)
{
    int64_t d = 0;
    while (d < f->ndiags && f->jd_ptr[d + 1] - f->jd_ptr[d] > k)
        d++;
    return d;
}

spk_status spk_jds_to_csr(spk_context *ctx, const spk_jds_fmt *f, spk_csr *out)
{
    spk_status st = spk_csr_alloc(ctx, f->nrows, f->ncols, f->nnz, out);
    if (st)
        return st;
    for (int64_t k = 0; k < f->nrows; k++)
        out->rowptr[f->perm[k] + 1] = sorted_len(f, k);
    for (int64_t i = 0; i < f->nrows; i++)
        out->rowptr[i + 1] += out->rowptr[i];
#pragma omp parallel for schedule(static) if(f->nnz > OMP_MIN_WORK)
    for (int64_t k = 0; k < f->nrows; k++) {
        const int64_t p0 = out->rowptr[f->perm[k]], len = sorted_len(f, k);
        for (int64_t d = 0; d < len; d++) {
            out->colind[p0 + d] = f->col[f->jd_ptr[d] + k];
            out->val[p0 + d] = spk_val(f->val, f->val32, f->jd_ptr[d] + k);
        }
    }
    return SPK_OK;
}

size_t spk_jds_bytes(const spk_jds_fmt *f)
{
    const size_t value = f->val32 ? sizeof(float) : sizeof(double);
    return (size_t)f->nnz * (sizeof(int32_t) + value) +
           (size_t)f->nrows * sizeof(int32_t) + ((size_t)f->ndiags + 1) * sizeof(int64_t);
}

/* Sorted rows [k0, k1) of one block. The values are v64 (jds-cpu) or v32 (jds32-cpu), the
 * other one a constant NULL where the body is inlined. */
static inline __attribute__((always_inline)) void
jds_block(const spk_jds_fmt *f, const double *v64, const float *v32, int64_t k0, int64_t k1,
          double alpha, const double *x, double beta, double *y)
{
    double s[JDS_CPU_ROW_BLOCK] = {0};
    for (int64_t d = 0; d < f->ndiags; d++) {
        const int64_t base = f->jd_ptr[d], cnt = f->jd_ptr[d + 1] - base;
        if (cnt <= k0)
            break;                             /* diagonals only get shorter */
        const int64_t hi = cnt < k1 ? cnt : k1;
        for (int64_t k = k0; k < hi; k++)
            s[k - k0] += spk_val(v64, v32, base + k) * x[f->col[base + k]];
    }
    for (int64_t k = k0; k < k1; k++) {
        double *yi = &y[f->perm[k]];
        *yi = beta == 0.0 ? alpha * s[k - k0] : alpha * s[k - k0] + beta * *yi;
    }
}

/* jds-cpu's and jds32-cpu's: the layout's values say which loop runs. */
static spk_status jds_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    const spk_jds_fmt *f = state;
    if (!f)
        return spk_fail(ctx, SPK_ERR_ARG, "jds spmv: NULL state (not prepared)");
    const int64_t n = f->nrows;
    const int64_t nblocks = (n + JDS_CPU_ROW_BLOCK - 1) / JDS_CPU_ROW_BLOCK;
#pragma omp parallel for schedule(static) if(f->nnz + n > OMP_MIN_WORK)
    for (int64_t b = 0; b < nblocks; b++) {
        const int64_t k0 = b * JDS_CPU_ROW_BLOCK;
        const int64_t k1 = n - k0 < JDS_CPU_ROW_BLOCK ? n : k0 + JDS_CPU_ROW_BLOCK;
        if (f->val32)
            jds_block(f, NULL, f->val32, k0, k1, alpha, x, beta, y);
        else
            jds_block(f, f->val, NULL, k0, k1, alpha, x, beta, y);
    }
    return SPK_OK;
}

static spk_status jds_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    if (!A || !state)
        return spk_fail(ctx, SPK_ERR_ARG, "jds-cpu setup: NULL argument");
    *state = NULL;
    spk_jds_fmt *f = spk_calloc(ctx, 1, sizeof *f);
    if (!f)
        return spk_fail(ctx, SPK_ERR_NOMEM, "jds-cpu setup: out of memory (%zu bytes)", sizeof *f);
    spk_status st = spk_jds_from_csr(ctx, A, f);
    if (st) {
        spk_free(f);
        return st;
    }
    *state = f;
    return SPK_OK;
}

static void jds_destroy(void *state)
{
    spk_jds_fmt_free(state);
    spk_free(state);
}

/* jds-cpu's layout, its values then rounded to float. */
static spk_status jds32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    spk_status st = jds_setup(ctx, A, state);
    if (st)
        return st;
    spk_jds_fmt *f = *state;
    st = spk_values_fp32(ctx, "jds32-cpu setup", f->nnz, &f->val, &f->val32);
    if (st) {
        jds_destroy(f);
        *state = NULL;
    }
    return st;
}

/* The values refilled in place by the layout's permutation, in float for the twin. */
static spk_status jds_update(spk_context *ctx, void *state, const spk_csr *A)
{
    spk_jds_fmt *f = state;
    if (!f || f->nrows != A->nrows || f->nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "%s update: the layout does not match the matrix",
                        f && f->val32 ? "jds32-cpu" : "jds-cpu");
    if (f->val32)
        spk_jds_fill_values32(A, f->perm, f->jd_ptr, f->val32);
    else
        spk_jds_fill_values(A, f->perm, f->jd_ptr, f->val);
    return SPK_OK;
}

const spk_spmv_backend spk_backend_jds32_cpu = {
    .name = "jds32-cpu",
    .format = SPK_FMT_JDS,
    .device = SPK_DEVICE_CPU,
    .setup = jds32_setup,
    .spmv = jds_spmv,
    .destroy = jds_destroy,
    .update = jds_update,
};

const spk_spmv_backend spk_backend_jds_cpu = {
    .name = "jds-cpu",
    .format = SPK_FMT_JDS,
    .device = SPK_DEVICE_CPU,
    .setup = jds_setup,
    .spmv = jds_spmv,
    .destroy = jds_destroy,
    .update = jds_update,
    /* update_device: the host refill is the update */
    .fp32 = &spk_backend_jds32_cpu,
};
