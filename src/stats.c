/* src/stats.c -- row-length statistics of a CSR matrix (the input of the format choice in
 * select.c) and Bell & Garland's HYB width.
 *
 * The statistics are those Merrill & Garland's merge-SpMV driver prints (mean, sd, coefficient
 * of variation) plus the order statistics the HYB rules of CUSP and Ginkgo use (percentiles of
 * the row length) and the memory of every format, computed from the lengths alone without
 * building any layout.
 *
 * Cost: O(nrows + max row length) time. One parallel pass over rowptr (min, max, sum of
 * squares, empty rows), one pass filling a histogram of row lengths (max + 2 counters, turned
 * into suffix counts), every percentile and the HYB width by binary search on those counts,
 * and one pass for the HYB tail; then the symmetry test (csr.c) and a diagonal scan. If the
 * histogram cannot be allocated (this function has no way to report failure), the binary
 * searches count rows by scanning rowptr instead: O(nrows log max), same answers. */
#include "spk_internal.h"
#include "../kernels/formats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Loops shorter than this run on one thread: a parallel region's fork and join (microseconds,
 * far more on a loaded machine) outweigh the work below it. */
#define OMP_MIN_WORK 16384

/* CUSP's breakeven_threshold: below this many rows an ELL column does not occupy the GPU, so
 * CUSP stops widening the ELL part of HYB (Bell & Garland SC'09, sec. 3.4). */
#define SPK_HYB_BREAKEVEN_ROWS 4096
/* CUSP's relative_speed: COO handles an entry about 3x slower than ELL, so an ELL column pays
 * off while at least 1/3 of its slots hold an entry. */
#define SPK_HYB_RELATIVE_SPEED 3

/* Rows counted by length: ge[v] = number of rows with at least v entries, v = 0 .. max + 1
 * (ge[0] = nrows, ge[max + 1] = 0). ge == NULL: count by scanning. */
typedef struct row_lengths {
    const spk_csr *A;
    int64_t        max;
    int64_t       *ge;
} row_lengths;

static int64_t rows_with_at_least(const row_lengths *h, int64_t v)
{
    if (v <= 0)
        return h->A->nrows;
    if (v > h->max)
        return 0;
    if (h->ge)
        return h->ge[v];
    int64_t c = 0;
#pragma omp parallel for schedule(static) reduction(+ : c) if(h->A->nrows > OMP_MIN_WORK)
    for (int64_t i = 0; i < h->A->nrows; i++)
        c += h->A->rowptr[i + 1] - h->A->rowptr[i] >= v;
    return c;
}

static int64_t max_row_length(const spk_csr *A)
{
    int64_t mx = 0;
#pragma omp parallel for schedule(static) reduction(max : mx) if(A->nrows > OMP_MIN_WORK)
    for (int64_t i = 0; i < A->nrows; i++)
        if (A->rowptr[i + 1] - A->rowptr[i] > mx)
            mx = A->rowptr[i + 1] - A->rowptr[i];
    return mx;
}

/* Fill h; a failed histogram allocation leaves h->ge NULL (the scanning fallback). */
static void row_lengths_init(row_lengths *h, const spk_csr *A, int64_t max)
{
    h->A = A;
    h->max = max;
    h->ge = spk_calloc(NULL, (size_t)max + 2, sizeof *h->ge);
    if (!h->ge)
        return;
    for (int64_t i = 0; i < A->nrows; i++)
        h->ge[A->rowptr[i + 1] - A->rowptr[i]]++;       /* histogram ...           */
    for (int64_t v = max; v >= 0; v--)
        h->ge[v] += h->ge[v + 1];                       /* ... to suffix counts    */
}

/* Nearest-rank percentile: the smallest length v such that at least ceil(p * n / 100) rows
 * have length <= v, i.e. fewer than n - rank + 1 rows have length >= v + 1. */
static int64_t percentile(const row_lengths *h, int p)
{
    const int64_t n = h->A->nrows;
    if (n == 0)
        return 0;
    int64_t rank = (p * n + 99) / 100;
    if (rank < 1)
        rank = 1;
    int64_t lo = 0, hi = h->max;                     /* answer in [lo, hi] */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (n - rows_with_at_least(h, mid + 1) >= rank)  /* rows with length <= mid */
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* CUSP compute_optimal_entries_per_row: the largest K such that at least `need` rows have
 * K or more entries, need = max(ceil(n / 3), 4096). Deviation: with fewer than 4096 rows CUSP
 * puts everything in COO (K = 0); we apply the 1/3 rule alone there, so that small matrices
 * still get an ELL part and the tests exercise both halves. */
static int64_t hyb_width_from(const row_lengths *h)
{
    const int64_t n = h->A->nrows;
    if (n == 0)
        return 0;
    int64_t need = (n + SPK_HYB_RELATIVE_SPEED - 1) / SPK_HYB_RELATIVE_SPEED;
    if (n >= SPK_HYB_BREAKEVEN_ROWS && need < SPK_HYB_BREAKEVEN_ROWS)
        need = SPK_HYB_BREAKEVEN_ROWS;
    int64_t lo = 0, hi = h->max;                     /* rows_with_at_least(0) = n >= need */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (rows_with_at_least(h, mid) >= need)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int64_t spk_hyb_width(const spk_csr *A)
{
    row_lengths h;
    row_lengths_init(&h, A, max_row_length(A));
    int64_t K = hyb_width_from(&h);
    spk_free(h.ge);
    return K;
}

/* a * b * c bytes, saturated at SIZE_MAX rather than wrapped (an ELL of a matrix with a
 * 2^30-entry row among 2^31 rows is not storable, and should not look small). */
static size_t bytes3(int64_t a, int64_t b, int64_t c)
{
    double d = (double)a * (double)b * (double)c;
    return d >= (double)SIZE_MAX ? SIZE_MAX : (size_t)a * (size_t)b * (size_t)c;
}

static size_t add_sat(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

/* 1 if every diagonal entry is stored and > 0 (binary search in each sorted row). A 0 x 0
 * matrix has no diagonal entry that fails. */
/* Whether every diagonal entry exists and is positive (*pos) and nonzero (*nonzero). */
static void diagonal_signs(const spk_csr *A, int *pos, int *nonzero)
{
    *pos = *nonzero = 0;
    if (A->nrows != A->ncols)
        return;
    int ok = 1, nz = 1;
#pragma omp parallel for schedule(static) reduction(&& : ok, nz) if(A->nrows > OMP_MIN_WORK)
    for (int64_t i = 0; i < A->nrows; i++) {
        int64_t lo = A->rowptr[i], hi = A->rowptr[i + 1];
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (A->colind[mid] < i)
                lo = mid + 1;
            else
                hi = mid;
        }
        const int has = lo < A->rowptr[i + 1] && A->colind[lo] == i;
        if (!(has && A->val[lo] > 0.0))
            ok = 0;
        if (!(has && A->val[lo] != 0.0))
            nz = 0;
    }
    *pos = ok;
    *nonzero = nz;
}

/* Add the ascending loc[0 .. nl) to the ascending set off[0 .. *nd); 0 if the union would
 * exceed SPK_DIA_MAX_DIAGS. */
static int offsets_merge(int64_t *off, int64_t *nd, const int64_t *loc, int64_t nl)
{
    int64_t d = 0;
    for (int64_t k = 0; k < nl; k++) {
        while (d < *nd && off[d] < loc[k])
            d++;
        if (d < *nd && off[d] == loc[k])
            continue;
        if (*nd == SPK_DIA_MAX_DIAGS)
            return 0;
        memmove(off + d + 1, off + d, (size_t)(*nd - d) * sizeof *off);
        off[d] = loc[k];
        (*nd)++;
    }
    return 1;
}

/* Each thread gathers the offsets of its rows (a row's entries are sorted, so its offsets
 * ascend and one forward walk of the small set places a piece of them), then the threads'
 * sets are merged by the same walk; a thread stops once it alone has seen more than the cap.
 * O(nnz + nrows * ndiag). */
int64_t spk_dia_offsets(const spk_csr *A, int64_t *off)
{
    int64_t nd = 0;
    int over = 0;
#pragma omp parallel if(A->nnz > OMP_MIN_WORK)
    {
        int64_t loc[SPK_DIA_MAX_DIAGS], nl = 0;
        int full = 0;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < A->nrows; i++) {
            if (full)
                continue;
            /* the row's offsets, ascending, merged a piece at a time */
            int64_t piece[SPK_DIA_MAX_DIAGS];
            for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1] && !full;) {
                int64_t np = 0;
                for (; p < A->rowptr[i + 1] && np < SPK_DIA_MAX_DIAGS; p++)
                    piece[np++] = (int64_t)A->colind[p] - i;
                full = !offsets_merge(loc, &nl, piece, np);
            }
        }
#pragma omp critical(spk_dia_offsets)
        if (full || !offsets_merge(off, &nd, loc, nl))
            over = 1;
    }
    return over ? SPK_DIA_MAX_DIAGS + 1 : nd;
}

/* The memory of each format, as the *_bytes functions of kernels/ report for the built layout:
 * values 8 B, column and row indices 4 B, row offsets 8 B. */
static void format_bytes(const spk_csr *A, const spk_matrix_info *s, size_t *bytes)
{
    const int64_t n = A->nrows, nnz = A->nnz;
    bytes[SPK_FMT_AUTO] = 0;
    bytes[SPK_FMT_CSR] = add_sat(bytes3(n + 1, 8, 1), bytes3(nnz, 12, 1));
    bytes[SPK_FMT_COO] = bytes3(nnz, 16, 1);
    bytes[SPK_FMT_ELL] = bytes3(n, s->row_max, 12);
    bytes[SPK_FMT_HYB] = add_sat(bytes3(n, s->hyb_width, 12), bytes3(s->hyb_coo_nnz, 16, 1));
    bytes[SPK_FMT_JDS] = add_sat(add_sat(bytes3(nnz, 12, 1), bytes3(n, 4, 1)),
                                 bytes3(s->row_max + 1, 8, 1));
}

/* Column locality: the largest |j - i| and the share of the entries (i, j) below the first row
 * whose diagonal neighbour (i - 1, j - 1) is an entry too. Rows are sorted, so each row pair
 * is one merge: O(nnz). A warp of a row-per-thread kernel (ELL, SELL) reads slot k of 32
 * consecutive rows; where the rows are shifts of each other those gathers of x are 32
 * consecutive values, where they are not each lands in its own sector. */
static void column_locality(const spk_csr *A, int64_t *bandwidth, double *coherence)
{
    const int64_t n = A->nrows;
    int64_t bw = 0, hit = 0;
#pragma omp parallel for schedule(static) reduction(max : bw) reduction(+ : hit) \
    if (A->nnz > OMP_MIN_WORK)
    for (int64_t i = 0; i < n; i++) {
        const int32_t *c = A->colind;
        const int64_t lo = A->rowptr[i], hi = A->rowptr[i + 1];
        if (lo < hi) {
            const int64_t a = i - c[lo] > 0 ? i - c[lo] : c[lo] - i;
            const int64_t b = c[hi - 1] - i > 0 ? c[hi - 1] - i : i - c[hi - 1];
            bw = a > bw ? a : bw;
            bw = b > bw ? b : bw;
        }
        if (i == 0)
            continue;
        int64_t q = A->rowptr[i - 1];
        const int64_t qe = lo;
        for (int64_t p = lo; p < hi && q < qe; p++) {
            const int64_t want = (int64_t)c[p] - 1;
            while (q < qe && c[q] < want)
                q++;
            hit += q < qe && c[q] == want;
        }
    }
    const int64_t below = n > 0 ? A->nnz - (A->rowptr[1] - A->rowptr[0]) : 0;
    *bandwidth = bw;
    *coherence = below > 0 ? (double)hit / (double)below : 0.0;
}

void spk_stats_sizes(const spk_csr *A, spk_matrix_info *info)
{
    const int64_t n = A->nrows;
    memset(info, 0, sizeof *info);
    info->nrows = n;
    info->ncols = A->ncols;
    info->nnz = A->nnz;
    info->row_mean = n ? (double)A->nnz / (double)n : 0.0;

    int64_t mn = n ? INT64_MAX : 0, mx = 0, empty = 0;
    /* sums of (len - mean)^2 over chunks fixed by n: the same sd whatever the thread count */
    double part[SPK_CHUNKS];
    const double mean = info->row_mean;
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) reduction(min : mn) reduction(max : mx) if(n > OMP_MIN_WORK) \
    reduction(+ : empty)
    for (int c = 0; c < nc; c++) {
        const int64_t lo = spk_chunk_lo(n, nc, c), hi = spk_chunk_lo(n, nc, c + 1);
        double ss = 0.0;
        for (int64_t i = lo; i < hi; i++) {
            int64_t len = A->rowptr[i + 1] - A->rowptr[i];
            mn = len < mn ? len : mn;
            mx = len > mx ? len : mx;
            empty += len == 0;
            ss += ((double)len - mean) * ((double)len - mean);
        }
        part[c] = ss;
    }
    info->row_min = mn;
    info->row_max = mx;
    info->empty_rows = empty;
    /* population sd: all rows are known */
    info->row_sd = n ? sqrt(spk_chunks_sum(part, nc) / (double)n) : 0.0;
    info->row_cv = mean > 0.0 ? info->row_sd / mean : 0.0;
    info->ell_fill = A->nnz ? (double)n * (double)mx / (double)A->nnz : 1.0;
    format_bytes(A, info, info->bytes);
}

void spk_stats_shape(const spk_csr *A, spk_matrix_info *info)
{
    const int64_t n = A->nrows, mx = info->row_max;
    row_lengths h;
    row_lengths_init(&h, A, mx);
    /* DIA: a row holds an entry on every diagonal exactly when its length is the count */
    int64_t off[SPK_DIA_MAX_DIAGS];
    const int64_t nd = spk_dia_offsets(A, off);
    info->dia_diags = nd;
    int64_t dia_fix = 0;
    if (nd <= SPK_DIA_MAX_DIAGS) {
        info->dia_fill = A->nnz ? (double)nd * (double)n / (double)A->nnz : 1.0;
        dia_fix = n - rows_with_at_least(&h, nd);
        info->dia_partial_rows = dia_fix;
    }
    info->row_p33 = percentile(&h, 33);
    info->row_p50 = percentile(&h, 50);
    info->row_p95 = percentile(&h, 95);
    info->row_p99 = percentile(&h, 99);
    info->hyb_width = hyb_width_from(&h);
    spk_free(h.ge);
    const int64_t K = info->hyb_width;
    int64_t tail = 0;                                /* entries past column K of each row */
#pragma omp parallel for schedule(static) reduction(+ : tail) if(n > OMP_MIN_WORK)
    for (int64_t i = 0; i < n; i++) {
        int64_t len = A->rowptr[i + 1] - A->rowptr[i];
        tail += len > K ? len - K : 0;
    }
    info->hyb_coo_nnz = tail;
    format_bytes(A, info, info->bytes);
    info->bytes[SPK_FMT_DIA] = nd <= SPK_DIA_MAX_DIAGS ? spk_dia_bytes_for(n, nd, dia_fix) : SIZE_MAX;
    /* BSR: the largest block size the pattern is made of (most patterns fail on their first
     * block row), its block rows padded to the longest */
    int64_t kb = 0;
    info->bsr_block = spk_bsr_block_of(A, &kb);
    if (info->bsr_block > 1) {
        const int64_t d = info->bsr_block, nb = n / d;
        info->bsr_fill = (double)nb * (double)kb / (double)(A->nnz / (d * d));
        info->bytes[SPK_FMT_BSR] = add_sat(bytes3(nb, kb, 4), bytes3(n, kb * d, 8));
    } else {
        info->bytes[SPK_FMT_BSR] = SIZE_MAX;
    }
    const int64_t slots = spk_sell_slots(A);
    info->sell_fill = A->nnz && slots >= 0 ? (double)slots / (double)A->nnz : 1.0;
    info->bytes[SPK_FMT_SELL] = slots >= 0 ? spk_sell_bytes_for(n, slots, 8) : SIZE_MAX;
    column_locality(A, &info->bandwidth, &info->coherence);
}

void spk_stats_pattern(const spk_csr *A, spk_matrix_info *info)
{
    spk_stats_sizes(A, info);
    spk_stats_shape(A, info);
}

/* The largest |a_ij| and the smallest nonzero one (0 and 0 without nonzeros). */
static void value_range(const spk_csr *A, double *amax, double *amin)
{
    double mx = 0.0, mn = INFINITY;
#pragma omp parallel for schedule(static) reduction(max : mx) reduction(min : mn) \
    if (A->nnz > OMP_MIN_WORK)
    for (int64_t p = 0; p < A->nnz; p++) {
        const double a = fabs(A->val[p]);
        mx = a > mx ? a : mx;
        if (a > 0.0)
            mn = a < mn ? a : mn;
    }
    *amax = mx;
    *amin = mx > 0.0 ? mn : 0.0;
}

void spk_stats_range(const spk_csr *A, spk_matrix_info *info)
{
    value_range(A, &info->val_absmax, &info->val_absmin);
}

void spk_stats_values(const spk_csr *A, spk_matrix_info *info)
{
    info->symmetric = spk_csr_is_symmetric(A);
    diagonal_signs(A, &info->diag_positive, &info->diag_nonzero);
    value_range(A, &info->val_absmax, &info->val_absmin);
}

void spk_stats_compute(const spk_csr *A, spk_matrix_info *info)
{
    spk_stats_pattern(A, info);
    spk_stats_values(A, info);
}
