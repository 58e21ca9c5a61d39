/* kernels/bsr_cpu.c -- BSR SpMV on the host: a pattern made of dense d x d blocks (the nodal
 * unknowns of an elasticity or other vector-valued FEM system) keeps one column index a block
 * instead of one a value, so the index traffic drops from 4 bytes a value to 4 / d^2 (0.44 at
 * d = 3): 8.44 bytes an entry against CSR's 12 and ELL's 10-12. The layout (formats.h): the
 * block rows padded to the longest, block indices column-major (bcol[k * nbrows + I]), and
 * the values exactly in the ELL layout of width kb * d, so that slot k d + c of row r is
 * column c of the row's k-th block. The conversions, the value refills (ELL's) and the layout
 * are shared with the CUDA row (bsr_cuda.cu), which uploads this layout as it is.
 *
 * The kernel walks a chunk of consecutive block rows slot by slot, each row adding its
 * entries block by block and, within a block, column by column: CSR's order, so y has the bits
 * of spk_csr_spmv_ref. Padding slots (SPK_ELL_PAD) are skipped, never multiplied.
 *
 * The fp32 twin, bsr32-cpu: the same layout with float values and (double)val32[q] in place
 * of val[q], as the other twins. */
#include "formats.h"

#include <string.h>

/* Loops shorter than this run on one thread (the other CPU rows' bound). */
#define OMP_MIN_WORK 16384

/* Rows per chunk of the kernel, at most: the partial sums stay in L1. */
#define BSR_CPU_ROW_BLOCK 128

/* Block row I of A: the d rows' lengths equal and a multiple of d, and their columns in
 * aligned runs of d, the same in every row. */
static int block_row_ok(const spk_csr *A, int64_t d, int64_t I)
{
    const int64_t r0 = I * d, p0 = A->rowptr[r0], len = A->rowptr[r0 + 1] - p0;
    if (len % d)
        return 0;
    for (int64_t a = 1; a < d; a++)
        if (A->rowptr[r0 + a + 1] - A->rowptr[r0 + a] != len)
            return 0;
    for (int64_t q = 0; q < len; q += d) {
        const int64_t c0 = A->colind[p0 + q];
        if (c0 % d)
            return 0;
        for (int64_t a = 0; a < d; a++) {
            const int32_t *cj = A->colind + A->rowptr[r0 + a] + q;
            for (int64_t c = 0; c < d; c++)
                if (cj[c] != c0 + c)
                    return 0;
        }
    }
    return 1;
}

int spk_bsr_block_ok(const spk_csr *A, int64_t d, int64_t *kb)
{
    if (kb)
        *kb = 0;
    if (!A || d < SPK_BSR_MIN_D || d > SPK_BSR_MAX_D || A->nnz == 0 || A->nrows % d ||
        A->ncols % d)
        return 0;
    const int64_t nb = A->nrows / d;
    /* most patterns without blocks fail on their first non-empty block row */
    int64_t first = 0;
    while (first < nb && A->rowptr[(first + 1) * d] == A->rowptr[first * d])
        first++;
    if (first < nb && !block_row_ok(A, d, first))
        return 0;
    int ok = 1;
    int64_t mx = 0;
#pragma omp parallel for schedule(static) reduction(&& : ok) reduction(max : mx) \
    if (A->nnz > OMP_MIN_WORK)
    for (int64_t I = 0; I < nb; I++) {
        if (!ok)
            continue;
        if (!block_row_ok(A, d, I)) {
            ok = 0;
            continue;
        }
        const int64_t len = (A->rowptr[I * d + 1] - A->rowptr[I * d]) / d;
        mx = len > mx ? len : mx;
    }
    if (ok && kb)
        *kb = mx;
    return ok;
}

int64_t spk_bsr_block_of(const spk_csr *A, int64_t *kb)
{
    for (int64_t d = SPK_BSR_MAX_D; d >= SPK_BSR_MIN_D; d--)
        if (spk_bsr_block_ok(A, d, kb))
            return d;
    if (kb)
        *kb = 0;
    return 1;
}

void spk_bsr_fmt_free(spk_bsr_fmt *f)
{
    if (!f)
        return;
    spk_free(f->bcol);
    spk_free(f->val);
    spk_free(f->val32);
    memset(f, 0, sizeof *f);
}

spk_status spk_bsr_from_csr(spk_context *ctx, const spk_csr *A, int64_t d, spk_bsr_fmt *out)
{
    memset(out, 0, sizeof *out);
    int64_t kb = 0;
    if (d == 0)
        d = spk_bsr_block_of(A, &kb);
    else if (!spk_bsr_block_ok(A, d, &kb))
        d = 1;
    if (d < SPK_BSR_MIN_D)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED,
                        "bsr: the pattern of this %lld x %lld matrix is not made of full d x d "
                        "blocks aligned to multiples of d (d = %d .. %d): use csr or ell",
                        (long long)A->nrows, (long long)A->ncols, SPK_BSR_MIN_D, SPK_BSR_MAX_D);
    const int64_t nb = A->nrows / d, nblocks = A->nnz / (d * d), slots = nb * kb;
    if ((double)slots > SPK_BSR_MAX_FILL * (double)nblocks)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED,
                        "bsr: padding would be %.2fx the blocks (%lld block rows x %lld = %lld "
                        "slots for %lld %lldx%lld blocks), above the %.0fx limit: use csr",
                        (double)slots / (double)nblocks, (long long)nb, (long long)kb,
                        (long long)slots, (long long)nblocks, (long long)d, (long long)d,
                        SPK_BSR_MAX_FILL);
    out->nrows = A->nrows;
    out->ncols = A->ncols;
    out->nnz = A->nnz;
    out->d = d;
    out->nbrows = nb;
    out->kb = kb;
    out->nblocks = nblocks;
    const size_t nval = (size_t)A->nrows * (size_t)(kb * d);
    out->bcol = spk_malloc(ctx, slots > 0 ? (size_t)slots : 1, sizeof *out->bcol);
    out->val = spk_malloc(ctx, nval > 0 ? nval : 1, sizeof *out->val);
    if (!out->bcol || !out->val) {
        spk_bsr_fmt_free(out);
        return spk_fail(ctx, SPK_ERR_NOMEM, "bsr: out of memory allocating %.0f bytes",
                        4.0 * (double)slots + 8.0 * (double)nval);
    }
#pragma omp parallel for schedule(static) if(slots > OMP_MIN_WORK)
    for (int64_t I = 0; I < nb; I++) {
        const int64_t p0 = A->rowptr[I * d], len = (A->rowptr[I * d + 1] - p0) / d;
        for (int64_t k = 0; k < len; k++)
            out->bcol[k * nb + I] = A->colind[p0 + k * d] / (int32_t)d;
        for (int64_t k = len; k < kb; k++)
            out->bcol[k * nb + I] = SPK_ELL_PAD;
    }
    spk_ell_fill_values(A, kb * d, out->val);
    return SPK_OK;
}

spk_status spk_bsr_to_csr(spk_context *ctx, const spk_bsr_fmt *f, spk_csr *out)
{
    const int64_t n = f->nrows, d = f->d, nb = f->nbrows, kb = f->kb;
    spk_status st = spk_csr_alloc(ctx, n, f->ncols, f->nnz, out);
    if (st)
        return st;
    for (int64_t r = 0; r < n; r++) {
        int64_t len = 0;
        for (int64_t k = 0; k < kb; k++)
            len += f->bcol[k * nb + r / d] != SPK_ELL_PAD;
        out->rowptr[r + 1] = out->rowptr[r] + len * d;
    }
    for (int64_t r = 0; r < n; r++) {
        int64_t w = out->rowptr[r];
        for (int64_t k = 0; k < kb; k++) {
            const int32_t j = f->bcol[k * nb + r / d];
            if (j == SPK_ELL_PAD)
                continue;
            for (int64_t c = 0; c < d; c++, w++) {
                out->colind[w] = (int32_t)(j * d + c);
                out->val[w] = spk_val(f->val, f->val32, (k * d + c) * n + r);
            }
        }
    }
    return SPK_OK;
}

size_t spk_bsr_bytes(const spk_bsr_fmt *f)
{
    const size_t value = f->val32 ? sizeof(float) : sizeof(double);
    return (size_t)f->nbrows * (size_t)f->kb * sizeof(int32_t) +
           (size_t)f->nrows * (size_t)(f->kb * f->d) * value;
}

/* Block rows [I0, I1) of y = alpha A x + beta y (their rows at most BSR_CPU_ROW_BLOCK): for
 * each block slot k, each block row's block, its d rows, each row's d columns in order. The
 * values are v64 (bsr-cpu) or v32 (bsr32-cpu), the other a constant NULL where inlined. */
static inline __attribute__((always_inline)) void
bsr_chunk(const spk_bsr_fmt *f, const double *v64, const float *v32, int64_t I0, int64_t I1,
          double alpha, const double *x, double beta, double *y)
{
    const int64_t n = f->nrows, d = f->d, nb = f->nbrows, r0 = I0 * d, m = (I1 - I0) * d;
    double s[BSR_CPU_ROW_BLOCK] = {0};
    for (int64_t k = 0; k < f->kb; k++)
        for (int64_t I = I0; I < I1; I++) {
            const int32_t j = f->bcol[k * nb + I];
            if (j == SPK_ELL_PAD)
                continue;
            const double *xj = x + (int64_t)j * d;
            for (int64_t a = 0; a < d; a++) {
                const int64_t r = I * d + a;
                double t = s[r - r0];
                for (int64_t c = 0; c < d; c++)
                    t += spk_val(v64, v32, (k * d + c) * n + r) * xj[c];
                s[r - r0] = t;
            }
        }
    for (int64_t q = 0; q < m; q++)
        y[r0 + q] = beta == 0.0 ? alpha * s[q] : alpha * s[q] + beta * y[r0 + q];
}

/* bsr-cpu's and bsr32-cpu's: the layout's values say which loop runs. */
static spk_status bsr_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    const spk_bsr_fmt *f = state;
    if (!f)
        return spk_fail(ctx, SPK_ERR_ARG, "bsr spmv: NULL state (not prepared)");
    const int64_t per = BSR_CPU_ROW_BLOCK / f->d;           /* block rows a chunk */
    const int64_t nchunks = (f->nbrows + per - 1) / per;
#pragma omp parallel for schedule(static) if(f->nnz > OMP_MIN_WORK)
    for (int64_t b = 0; b < nchunks; b++) {
        const int64_t I0 = b * per, I1 = I0 + per < f->nbrows ? I0 + per : f->nbrows;
        if (f->val32)
            bsr_chunk(f, NULL, f->val32, I0, I1, alpha, x, beta, y);
        else
            bsr_chunk(f, f->val, NULL, I0, I1, alpha, x, beta, y);
    }
    return SPK_OK;
}

static spk_status bsr_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    if (!A || !state)
        return spk_fail(ctx, SPK_ERR_ARG, "bsr-cpu setup: NULL argument");
    *state = NULL;
    spk_bsr_fmt *f = spk_calloc(ctx, 1, sizeof *f);
    if (!f)
        return spk_fail(ctx, SPK_ERR_NOMEM, "bsr-cpu setup: out of memory (%zu bytes)", sizeof *f);
    spk_status st = spk_bsr_from_csr(ctx, A, 0, f);
    if (st) {
        spk_free(f);
        return st;
    }
    *state = f;
    return SPK_OK;
}

static void bsr_destroy(void *state)
{
    spk_bsr_fmt_free(state);
    spk_free(state);
}

/* bsr-cpu's layout, its values then rounded to float. */
static spk_status bsr32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    spk_status st = bsr_setup(ctx, A, state);
    if (st)
        return st;
    spk_bsr_fmt *f = *state;
    st = spk_values_fp32(ctx, "bsr32-cpu setup", f->nrows * f->kb * f->d, &f->val, &f->val32);
    if (st) {
        bsr_destroy(f);
        *state = NULL;
    }
    return st;
}

/* The values refilled in place by ELL's rule (in float for the twin). */
static spk_status bsr_update(spk_context *ctx, void *state, const spk_csr *A)
{
    spk_bsr_fmt *f = state;
    if (!f || f->nrows != A->nrows || f->nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "%s update: the layout does not match the matrix",
                        f && f->val32 ? "bsr32-cpu" : "bsr-cpu");
    if (f->val32)
        spk_ell_fill_values32(A, f->kb * f->d, f->val32);
    else
        spk_ell_fill_values(A, f->kb * f->d, f->val);
    return SPK_OK;
}

const spk_spmv_backend spk_backend_bsr32_cpu = {
    .name = "bsr32-cpu",
    .format = SPK_FMT_BSR,
    .device = SPK_DEVICE_CPU,
    .setup = bsr32_setup,
    .spmv = bsr_spmv,
    .destroy = bsr_destroy,
    .update = bsr_update,
};

const spk_spmv_backend spk_backend_bsr_cpu = {
    .name = "bsr-cpu",
    .format = SPK_FMT_BSR,
    .device = SPK_DEVICE_CPU,
    .setup = bsr_setup,
    .spmv = bsr_spmv,
    .destroy = bsr_destroy,
    .update = bsr_update,
    .fp32 = &spk_backend_bsr32_cpu,
};
