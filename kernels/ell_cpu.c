/* kernels/ell_cpu.c -- ELLPACK SpMV on the host: every row padded to the same width K and the
 * nrows x K slot array stored column-major, val[k*nrows + i], so that on a GPU the threads of
 * a warp (one row each) read consecutive addresses at every step k (Bell & Garland SC'09,
 * sec. 3.1; CUSP ell_spmv). Padding slots hold col = SPK_ELL_PAD and val = 0 and are skipped.
 *
 * Cost: 12 bytes per slot, 12 * nrows * K in all; nrows * K / nnz is the "fill", 1 for equal
 * rows. One long row makes every row pay for it, so the conversion refuses a fill above
 * SPK_ELL_MAX_FILL (CUSP's guard, which throws "ell_matrix fill-in would exceed maximum
 * tolerance") unless the caller asks otherwise (HYB's ELL part, tests).
 *
 * The CPU kernel walks a block of consecutive rows slot by slot: the column-major layout is
 * then read contiguously, and each row sums its entries in the same order as CSR does.
 *
 * The fp32 twin, ell32-cpu (src/mixed.c's operator): the same layout with float values, 8
 * bytes a slot in place of 12, and the same kernel with (double)val32[q] in place of val[q],
 * so its y has the bits of ell-cpu on the values rounded to float. */
#include "formats.h"

#include <string.h>

/* Loops shorter than this run on one thread: a parallel region's fork and join (microseconds,
 * far more on a loaded machine) outweigh the work below it. */
#define OMP_MIN_WORK 16384

/* Rows per block of the CPU kernel: 128 partial sums (1 KiB) stay in L1 while the K slot
 * columns of the block are streamed. */
#define ELL_CPU_ROW_BLOCK 128

void spk_ell_fmt_free(spk_ell_fmt *f)
{
    if (!f)
        return;
    spk_free(f->col);
    spk_free(f->val);
    spk_free(f->val32);
    memset(f, 0, sizeof *f);
}

/* width < 0: the longest row. A row longer than an explicit width keeps its first `width`
 * entries; the rest is the caller's business (HYB puts it in its COO tail). */
spk_status spk_ell_from_csr(spk_context *ctx, const spk_csr *A, int64_t width, int no_guard,
                            spk_ell_fmt *out)
{
    const int64_t n = A->nrows;
    int64_t maxlen = 0, stored = 0;
    memset(out, 0, sizeof *out);
    for (int64_t i = 0; i < n; i++) {
        int64_t len = A->rowptr[i + 1] - A->rowptr[i];
        if (len > maxlen)
            maxlen = len;
    }
    int64_t K = width < 0 ? maxlen : width;
    if (K == maxlen) {
        stored = A->nnz;
    } else {
        for (int64_t i = 0; i < n; i++) {
            int64_t len = A->rowptr[i + 1] - A->rowptr[i];
            stored += len < K ? len : K;
        }
    }
    /* slots = n * K <= 2^31 * 2^31 fits int64 (n and K are bounded by the 32-bit indices) */
    int64_t slots = n * K;
    if (!no_guard && (double)slots > SPK_ELL_MAX_FILL * (double)stored)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED,
                        "ell: padding would be %.2fx the nonzeros (%lld rows x width %lld = %lld "
                        "slots for %lld nonzeros), above the %.0fx limit: use hyb (ELL for the "
                        "typical rows, COO for the long ones)",
                        stored ? (double)slots / (double)stored : (double)slots, (long long)n,
                        (long long)K, (long long)slots, (long long)stored, SPK_ELL_MAX_FILL);
    out->nrows = n;
    out->ncols = A->ncols;
    out->width = K;
    out->nnz = stored;
    out->col = spk_malloc(ctx, (size_t)slots, sizeof *out->col);
    out->val = spk_malloc(ctx, (size_t)slots, sizeof *out->val);
    if (!out->col || !out->val) {
        spk_ell_fmt_free(out);
        return spk_fail(ctx, SPK_ERR_NOMEM, "ell: out of memory allocating %.0f bytes (%lld x %lld slots)",
                        12.0 * (double)slots, (long long)n, (long long)K);
    }
#pragma omp parallel for schedule(static) if(slots > OMP_MIN_WORK)
    for (int64_t i = 0; i < n; i++) {
        const int64_t p0 = A->rowptr[i];
        int64_t len = A->rowptr[i + 1] - p0;
        if (len > K)
            len = K;
        for (int64_t k = 0; k < len; k++) {
            out->col[k * n + i] = A->colind[p0 + k];
            out->val[k * n + i] = A->val[p0 + k];
        }
        for (int64_t k = len; k < K; k++) {
            out->col[k * n + i] = SPK_ELL_PAD;
            out->val[k * n + i] = 0.0;
        }
    }
    return SPK_OK;
}

/* The slots' values from A: into val, or rounded to float into val32 when val is NULL. */
static void ell_fill(const spk_csr *A, int64_t width, double *val, float *val32)
{
    const int64_t n = A->nrows, K = width;
#pragma omp parallel for schedule(static) if(n * K > OMP_MIN_WORK)
    for (int64_t i = 0; i < n; i++) {
        const int64_t p0 = A->rowptr[i];
        int64_t len = A->rowptr[i + 1] - p0;
        if (len > K)
            len = K;
        if (val) {
            for (int64_t k = 0; k < len; k++)
                val[k * n + i] = A->val[p0 + k];
            for (int64_t k = len; k < K; k++)
                val[k * n + i] = 0.0;
        } else {
            for (int64_t k = 0; k < len; k++)
                val32[k * n + i] = (float)A->val[p0 + k];
            for (int64_t k = len; k < K; k++)
                val32[k * n + i] = 0.0f;
        }
    }
}

void spk_ell_fill_values(const spk_csr *A, int64_t width, double *val)
{
    ell_fill(A, width, val, NULL);
}

void spk_ell_fill_values32(const spk_csr *A, int64_t width, float *val)
{
    ell_fill(A, width, NULL, val);
}

spk_status spk_ell_to_csr(spk_context *ctx, const spk_ell_fmt *f, spk_csr *out)
{
    const int64_t n = f->nrows, K = f->width;
    spk_status st = spk_csr_alloc(ctx, n, f->ncols, f->nnz, out);
    if (st)
        return st;
    for (int64_t i = 0; i < n; i++) {
        int64_t len = 0;
        for (int64_t k = 0; k < K; k++)
            len += f->col[k * n + i] != SPK_ELL_PAD;
        out->rowptr[i + 1] = out->rowptr[i] + len;
    }
#pragma omp parallel for schedule(static) if(n * K > OMP_MIN_WORK)
    for (int64_t i = 0; i < n; i++) {
        int64_t w = out->rowptr[i];
        for (int64_t k = 0; k < K; k++)
            if (f->col[k * n + i] != SPK_ELL_PAD) {
                out->colind[w] = f->col[k * n + i];
                out->val[w] = spk_val(f->val, f->val32, k * n + i);
                w++;
            }
    }
    return SPK_OK;
}

size_t spk_ell_bytes(const spk_ell_fmt *f)
{
    const size_t value = f->val32 ? sizeof(float) : sizeof(double);
    return (size_t)f->nrows * (size_t)f->width * (sizeof(int32_t) + value);
}

/* Rows [i0, i0 + m) of y = alpha A x + beta y, m <= ELL_CPU_ROW_BLOCK: the block's slot
 * columns one after the other, each row adding its slots in order. The values are v64
 * (ell-cpu) or v32 (ell32-cpu), the other one a constant NULL where the body is inlined. */
static inline __attribute__((always_inline)) void
ell_block(const spk_ell_fmt *f, const double *v64, const float *v32, int64_t i0, int64_t m,
          double alpha, const double *x, double beta, double *y)
{
    const int64_t n = f->nrows, K = f->width;
    double s[ELL_CPU_ROW_BLOCK] = {0};
    for (int64_t k = 0; k < K; k++) {
        const int32_t *Aj = f->col + k * n + i0;
        const int64_t q = k * n + i0;
        for (int64_t r = 0; r < m; r++)
            if (Aj[r] != SPK_ELL_PAD)
                s[r] += spk_val(v64, v32, q + r) * x[Aj[r]];
    }
    for (int64_t r = 0; r < m; r++)
        y[i0 + r] = beta == 0.0 ? alpha * s[r] : alpha * s[r] + beta * y[i0 + r];
}

/* ell-cpu's and ell32-cpu's: the layout's values say which loop runs. */
static spk_status ell_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    const spk_ell_fmt *f = state;
    if (!f)
        return spk_fail(ctx, SPK_ERR_ARG, "ell spmv: NULL state (not prepared)");
    const int64_t n = f->nrows, K = f->width;
    const int64_t nblocks = (n + ELL_CPU_ROW_BLOCK - 1) / ELL_CPU_ROW_BLOCK;
#pragma omp parallel for schedule(static) if(n * K > OMP_MIN_WORK)
    for (int64_t b = 0; b < nblocks; b++) {
        const int64_t i0 = b * ELL_CPU_ROW_BLOCK;
        const int64_t m = n - i0 < ELL_CPU_ROW_BLOCK ? n - i0 : ELL_CPU_ROW_BLOCK;
        if (f->val32)
            ell_block(f, NULL, f->val32, i0, m, alpha, x, beta, y);
        else
            ell_block(f, f->val, NULL, i0, m, alpha, x, beta, y);
    }
    return SPK_OK;
}

static spk_status ell_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    if (!A || !state)
        return spk_fail(ctx, SPK_ERR_ARG, "ell-cpu setup: NULL argument");
    *state = NULL;
    spk_ell_fmt *f = spk_calloc(ctx, 1, sizeof *f);
    if (!f)
        return spk_fail(ctx, SPK_ERR_NOMEM, "ell-cpu setup: out of memory (%zu bytes)", sizeof *f);
    spk_status st = spk_ell_from_csr(ctx, A, -1, 0, f);
    if (st) {
        spk_free(f);
        return st;
    }
    *state = f;
    return SPK_OK;
}

static void ell_destroy(void *state)
{
    spk_ell_fmt_free(state);
    spk_free(state);
}

/* ell-cpu's layout, its slots then rounded to float. */
static spk_status ell32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    spk_status st = ell_setup(ctx, A, state);
    if (st)
        return st;
    spk_ell_fmt *f = *state;
    st = spk_values_fp32(ctx, "ell32-cpu setup", f->nrows * f->width, &f->val, &f->val32);
    if (st) {
        ell_destroy(f);
        *state = NULL;
    }
    return st;
}

/* The slots refilled in place, in float for the twin. */
static spk_status ell_update(spk_context *ctx, void *state, const spk_csr *A)
{
    spk_ell_fmt *f = state;
    if (!f || f->nrows != A->nrows || f->nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "%s update: the layout does not match the matrix",
                        f && f->val32 ? "ell32-cpu" : "ell-cpu");
    if (f->val32)
        spk_ell_fill_values32(A, f->width, f->val32);
    else
        spk_ell_fill_values(A, f->width, f->val);
    return SPK_OK;
}

const spk_spmv_backend spk_backend_ell32_cpu = {
    .name = "ell32-cpu",
    .format = SPK_FMT_ELL,
    .device = SPK_DEVICE_CPU,
    .setup = ell32_setup,
    .spmv = ell_spmv,
    .destroy = ell_destroy,
    .update = ell_update,
};

const spk_spmv_backend spk_backend_ell_cpu = {
    .name = "ell-cpu",
    .format = SPK_FMT_ELL,
    .device = SPK_DEVICE_CPU,
    .setup = ell_setup,
    .spmv = ell_spmv,
    .destroy = ell_destroy,
    .update = ell_update,
    /* update_device: the host refill is the update */
    .fp32 = &spk_backend_ell32_cpu,
};
