/* kernels/sell_cpu.c -- SELL-C-sigma (formats.h: C = 32, sigma = 1024) on the host: the
 * conversion every device shares, the value refills, and the CPU SpMV.
 *
 * The layout: within each window of 1024 consecutive rows, the rows sorted by length, longest
 * first (a stable counting sort: equal rows keep their order); each run of 32 sorted rows a
 * slice, padded to its first (longest) row and stored column-major. A GPU thread per sorted
 * row then reads a slice coalesced, and the 32 rows of a warp have nearly equal lengths, so
 * the warp idles little: what ELL gives rows of equal length, SELL gives skewed ones, for
 * the padding of a slice to its own longest row instead of the matrix's (Kreutzer et al.,
 * SISC 2014; Anzt, Tomov, Dongarra, "Implementing a sparse matrix vector product for the
 * SELL-C/SELL-C-sigma formats on NVIDIA GPUs", 2014). The window keeps the sort local, so a
 * slice's columns stay near where the unsorted rows had them.
 *
 * Cost: 12 bytes a slot (8 with fp32 values), 2 a row (perm), 8 a slice (slice_ptr). Each
 * row's entries are summed in CSR's order, so y has the bits of spk_csr_spmv_ref.
 *
 * The fp32 twin, sell32-cpu: the same layout with float values, the same kernel. */
#include "formats.h"

#include <string.h>

/* Loops shorter than this run on one thread (see jds_cpu.c). */
#define OMP_MIN_WORK 16384

#define WINDOWS(n) (((n) + SPK_SELL_SIGMA - 1) / SPK_SELL_SIGMA)

static int64_t row_len(const spk_csr *A, int64_t i) { return A->rowptr[i + 1] - A->rowptr[i]; }

void spk_sell_fmt_free(spk_sell_fmt *f)
{
    if (!f)
        return;
    spk_free(f->slice_ptr);
    spk_free(f->perm);
    spk_free(f->col);
    spk_free(f->val);
    spk_free(f->val32);
    memset(f, 0, sizeof *f);
}

/* Window w's rows sorted by length, longest first, stable: perm (may be NULL) receives each
 * sorted position's offset in the window, width (may be NULL) each of its slices' widths; the
 * return is the window's slots. cnt: scratch of at least the window's longest row + 2
 * entries, left zero. O(rows + longest row). */
static int64_t window_sort(const spk_csr *A, int64_t w, int64_t *cnt, uint16_t *perm,
                           int64_t *width)
{
    const int64_t lo = w * SPK_SELL_SIGMA;
    const int64_t hi = A->nrows - lo < SPK_SELL_SIGMA ? A->nrows : lo + SPK_SELL_SIGMA;
    int64_t mw = 0;
    for (int64_t i = lo; i < hi; i++) {
        const int64_t len = row_len(A, i);
        cnt[len]++;
        mw = len > mw ? len : mw;
    }
    /* slots = 32 x the sum over the slices of their first row's length = 32 x the sum over
     * L >= 1 of ceil(rows of length >= L / 32) */
    int64_t slots = 0, ge = 0;
    for (int64_t L = mw; L >= 1; L--) {
        ge += cnt[L];
        slots += (ge + SPK_SELL_C - 1) / SPK_SELL_C;
    }
    if (perm || width) {
        /* cnt[L] becomes the first sorted position of length L: rows longer than L */
        for (int64_t L = mw, above = 0; L >= 0; L--) {
            const int64_t c = cnt[L];
            cnt[L] = above;
            above += c;
        }
        for (int64_t i = lo; i < hi; i++) {
            const int64_t pos = cnt[row_len(A, i)]++;
            if (perm)
                perm[lo + pos] = (uint16_t)(i - lo);
            if (width && pos % SPK_SELL_C == 0)
                width[pos / SPK_SELL_C] = row_len(A, i);
        }
    }
    memset(cnt, 0, ((size_t)mw + 2) * sizeof *cnt);
    return slots * SPK_SELL_C;
}

static int64_t max_row(const spk_csr *A)
{
    int64_t mx = 0;
#pragma omp parallel for schedule(static) reduction(max : mx) if(A->nrows > OMP_MIN_WORK)
    for (int64_t i = 0; i < A->nrows; i++)
        mx = row_len(A, i) > mx ? row_len(A, i) : mx;
    return mx;
}

int64_t spk_sell_slots(const spk_csr *A)
{
    const int64_t nw = WINDOWS(A->nrows), mx = max_row(A);
    int64_t slots = 0, failed = 0;
#pragma omp parallel reduction(+ : slots, failed) if(A->nrows > OMP_MIN_WORK)
    {
        int64_t *cnt = spk_calloc(NULL, (size_t)mx + 2, sizeof *cnt);
#pragma omp for schedule(static)
        for (int64_t w = 0; w < nw; w++)
            if (cnt)
                slots += window_sort(A, w, cnt, NULL, NULL);
        failed += cnt == NULL;
        spk_free(cnt);
    }
    return failed ? -1 : slots;
}

size_t spk_sell_bytes_for(int64_t nrows, int64_t slots, int value_bytes)
{
    const int64_t nslices = (nrows + SPK_SELL_C - 1) / SPK_SELL_C;
    return (size_t)slots * (sizeof(int32_t) + (size_t)value_bytes) +
           (size_t)nrows * sizeof(uint16_t) + ((size_t)nslices + 1) * sizeof(int64_t);
}

size_t spk_sell_bytes(const spk_sell_fmt *f)
{
    return spk_sell_bytes_for(f->nrows, f->slots, f->val32 ? (int)sizeof(float)
                                                          : (int)sizeof(double));
}

spk_status spk_sell_from_csr(spk_context *ctx, const spk_csr *A, spk_sell_fmt *out)
{
    const int64_t n = A->nrows, nw = WINDOWS(n), mx = max_row(A);
    memset(out, 0, sizeof *out);
    out->nrows = n;
    out->ncols = A->ncols;
    out->nnz = A->nnz;
    out->nslices = (n + SPK_SELL_C - 1) / SPK_SELL_C;
    out->slice_ptr = spk_calloc(ctx, (size_t)out->nslices + 1, sizeof *out->slice_ptr);
    out->perm = spk_malloc(ctx, n > 0 ? (size_t)n : 1, sizeof *out->perm);
    if (!out->slice_ptr || !out->perm) {
        spk_sell_fmt_free(out);
        return spk_fail(ctx, SPK_ERR_NOMEM, "sell: out of memory for the order of %lld rows",
                        (long long)n);
    }
    int64_t failed = 0;
    /* the widths of window w's slices land in slice_ptr[8 w + 1 ..], summed below */
#pragma omp parallel reduction(+ : failed) if(n > OMP_MIN_WORK)
    {
        int64_t *cnt = spk_calloc(NULL, (size_t)mx + 2, sizeof *cnt);
#pragma omp for schedule(static)
        for (int64_t w = 0; w < nw; w++)
            if (cnt)
                window_sort(A, w, cnt, out->perm,
                            &out->slice_ptr[1 + w * (SPK_SELL_SIGMA / SPK_SELL_C)]);
        failed += cnt == NULL;
        spk_free(cnt);
    }
    if (failed) {
        spk_sell_fmt_free(out);
        return spk_fail(ctx, SPK_ERR_NOMEM, "sell: out of memory for the row-length counts "
                        "(%lld entries a thread)", (long long)mx + 2);
    }
    for (int64_t s = 0; s < out->nslices; s++)
        out->slice_ptr[s + 1] = out->slice_ptr[s] + SPK_SELL_C * out->slice_ptr[s + 1];
    out->slots = out->slice_ptr[out->nslices];
    const size_t slots = out->slots > 0 ? (size_t)out->slots : 1;
    out->col = spk_malloc(ctx, slots, sizeof *out->col);
    out->val = spk_malloc(ctx, slots, sizeof *out->val);
    if (!out->col || !out->val) {
        const double bytes = 12.0 * (double)out->slots;
        spk_sell_fmt_free(out);
        return spk_fail(ctx, SPK_ERR_NOMEM, "sell: out of memory allocating %.0f bytes", bytes);
    }
#pragma omp parallel for schedule(static) if(out->slots > OMP_MIN_WORK)
    for (int64_t s = 0; s < out->nslices; s++) {
        const int64_t base = out->slice_ptr[s];
        const int64_t w = (out->slice_ptr[s + 1] - base) / SPK_SELL_C;
        for (int r = 0; r < SPK_SELL_C; r++) {
            const int64_t k = s * SPK_SELL_C + r;
            int64_t len = 0, p0 = 0;
            if (k < n) {
                const int64_t row = k - k % SPK_SELL_SIGMA + out->perm[k];
                p0 = A->rowptr[row];
                len = row_len(A, row);
            }
            for (int64_t j = 0; j < w; j++) {
                const int64_t q = base + j * SPK_SELL_C + r;
                out->col[q] = j < len ? A->colind[p0 + j] : SPK_ELL_PAD;
                out->val[q] = j < len ? A->val[p0 + j] : 0.0;
            }
        }
    }
    return SPK_OK;
}

/* The original row of sorted position k. */
static int64_t sell_row(const spk_sell_fmt *f, int64_t k)
{
    return k - k % SPK_SELL_SIGMA + f->perm[k];
}

/* The values of A into the slots of f's layout, in fp64 (v64) or rounded to fp32 (v32, v64
 * NULL); padding keeps its 0. */
static void sell_fill(const spk_csr *A, const spk_sell_fmt *f, double *v64, float *v32)
{
#pragma omp parallel for schedule(static) if(A->nnz > OMP_MIN_WORK)
    for (int64_t k = 0; k < f->nrows; k++) {
        const int64_t row = sell_row(f, k), p0 = A->rowptr[row], len = row_len(A, row);
        const int64_t base = f->slice_ptr[k / SPK_SELL_C] + k % SPK_SELL_C;
        for (int64_t j = 0; j < len; j++) {
            if (v32)
                v32[base + j * SPK_SELL_C] = (float)A->val[p0 + j];
            else
                v64[base + j * SPK_SELL_C] = A->val[p0 + j];
        }
    }
}

void spk_sell_fill_values(const spk_csr *A, const spk_sell_fmt *f, double *val)
{
    sell_fill(A, f, val, NULL);
}

void spk_sell_fill_values32(const spk_csr *A, const spk_sell_fmt *f, float *val)
{
    sell_fill(A, f, NULL, val);
}

/* Entries of sorted position k: its slots up to the first padding one. */
static int64_t sorted_len(const spk_sell_fmt *f, int64_t k)
{
    const int64_t base = f->slice_ptr[k / SPK_SELL_C] + k % SPK_SELL_C;
    const int64_t w = (f->slice_ptr[k / SPK_SELL_C + 1] - f->slice_ptr[k / SPK_SELL_C]) /
                      SPK_SELL_C;
    int64_t len = 0;
    while (len < w && f->col[base + len * SPK_SELL_C] != SPK_ELL_PAD)
        len++;
    return len;
}

spk_status spk_sell_to_csr(spk_context *ctx, const spk_sell_fmt *f, spk_csr *out)
{
    spk_status st = spk_csr_alloc(ctx, f->nrows, f->ncols, f->nnz, out);
    if (st)
        return st;
    for (int64_t k = 0; k < f->nrows; k++)
        out->rowptr[sell_row(f, k) + 1] = sorted_len(f, k);
    for (int64_t i = 0; i < f->nrows; i++)
        out->rowptr[i + 1] += out->rowptr[i];
    for (int64_t k = 0; k < f->nrows; k++) {
        const int64_t p0 = out->rowptr[sell_row(f, k)], len = sorted_len(f, k);
        const int64_t base = f->slice_ptr[k / SPK_SELL_C] + k % SPK_SELL_C;
        for (int64_t j = 0; j < len; j++) {
            out->colind[p0 + j] = f->col[base + j * SPK_SELL_C];
            out->val[p0 + j] = spk_val(f->val, f->val32, base + j * SPK_SELL_C);
        }
    }
    return SPK_OK;
}

/* One slice: its 32 rows summed side by side, slot column by slot column (each row in CSR's
 * order), padding skipped. The values are v64 (sell-cpu) or v32 (sell32-cpu), the other a
 * constant NULL where the body is inlined. */
static inline __attribute__((always_inline)) void
sell_slice(const spk_sell_fmt *f, const double *v64, const float *v32, int64_t s, double alpha,
           const double *x, double beta, double *y)
{
    double sum[SPK_SELL_C] = {0};
    const int64_t base = f->slice_ptr[s], end = f->slice_ptr[s + 1];
    for (int64_t q0 = base; q0 < end; q0 += SPK_SELL_C)
        for (int r = 0; r < SPK_SELL_C; r++) {
            const int32_t c = f->col[q0 + r];
            if (c != SPK_ELL_PAD)
                sum[r] += spk_val(v64, v32, q0 + r) * x[c];
        }
    const int64_t k0 = s * SPK_SELL_C;
    const int rows = f->nrows - k0 < SPK_SELL_C ? (int)(f->nrows - k0) : SPK_SELL_C;
    for (int r = 0; r < rows; r++) {
        double *yi = &y[sell_row(f, k0 + r)];
        *yi = beta == 0.0 ? alpha * sum[r] : alpha * sum[r] + beta * *yi;
    }
}

static spk_status sell_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                            double beta, double *y)
{
    const spk_sell_fmt *f = state;
    if (!f)
        return spk_fail(ctx, SPK_ERR_ARG, "sell spmv: NULL state (not prepared)");
#pragma omp parallel for schedule(static) if(f->slots + f->nrows > OMP_MIN_WORK)
    for (int64_t s = 0; s < f->nslices; s++) {
        if (f->val32)
            sell_slice(f, NULL, f->val32, s, alpha, x, beta, y);
        else
            sell_slice(f, f->val, NULL, s, alpha, x, beta, y);
    }
    return SPK_OK;
}

static spk_status sell_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    if (!A || !state)
        return spk_fail(ctx, SPK_ERR_ARG, "sell-cpu setup: NULL argument");
    *state = NULL;
    spk_sell_fmt *f = spk_calloc(ctx, 1, sizeof *f);
    if (!f)
        return spk_fail(ctx, SPK_ERR_NOMEM, "sell-cpu setup: out of memory (%zu bytes)",
                        sizeof *f);
    spk_status st = spk_sell_from_csr(ctx, A, f);
    if (st) {
        spk_free(f);
        return st;
    }
    *state = f;
    return SPK_OK;
}

static void sell_destroy(void *state)
{
    spk_sell_fmt_free(state);
    spk_free(state);
}

/* sell-cpu's layout, its values then rounded to float. */
static spk_status sell32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    spk_status st = sell_setup(ctx, A, state);
    if (st)
        return st;
    spk_sell_fmt *f = *state;
    st = spk_values_fp32(ctx, "sell32-cpu setup", f->slots, &f->val, &f->val32);
    if (st) {
        sell_destroy(f);
        *state = NULL;
    }
    return st;
}

static spk_status sell_update(spk_context *ctx, void *state, const spk_csr *A)
{
    spk_sell_fmt *f = state;
    if (!f || f->nrows != A->nrows || f->nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "%s update: the layout does not match the matrix",
                        f && f->val32 ? "sell32-cpu" : "sell-cpu");
    if (f->val32)
        spk_sell_fill_values32(A, f, f->val32);
    else
        spk_sell_fill_values(A, f, f->val);
    return SPK_OK;
}

const spk_spmv_backend spk_backend_sell32_cpu = {
    .name = "sell32-cpu",
    .format = SPK_FMT_SELL,
    .device = SPK_DEVICE_CPU,
    .setup = sell32_setup,
    .spmv = sell_spmv,
    .destroy = sell_destroy,
    .update = sell_update,
};

const spk_spmv_backend spk_backend_sell_cpu = {
    .name = "sell-cpu",
    .format = SPK_FMT_SELL,
    .device = SPK_DEVICE_CPU,
    .setup = sell_setup,
    .spmv = sell_spmv,
    .destroy = sell_destroy,
    .update = sell_update,
    /* update_device: the host refill is the update */
    .fp32 = &spk_backend_sell32_cpu,
};
