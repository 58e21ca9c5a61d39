/* src/csr.c -- the canonical host CSR: rows sorted, columns sorted and unique within a row,
 * duplicates summed, empty rows kept. Every backend converts from it and every kernel is
 * tested against its SpMV.
 *
 * Duplicates are SUMMED: that is the finite-element assembly convention (each element adds
 * its contribution to a_ij), the convention of Matrix Market readers in SciPy and CSparse
 * (cs_dupl), and the only one that makes an element-by-element COO assembly correct.
 *
 * Assembly is two counting sorts (by column, then stably by row), O(nnz + nrows + ncols) time
 * and memory, like CSparse's cs_compress followed by cs_dupl, with 64-bit offsets so that nnz
 * may pass 2^31; a matrix with far more columns than entries is ordered by column with two
 * 16-bit digit passes instead, O(nnz + nrows). Its memory is checked against what the process
 * may hold before anything is allocated, and its sums are checked finite. */
#include "spk_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void spk_csr_free(spk_csr *A)
{
    if (!A)
        return;
    spk_free(A->rowptr);
    spk_free(A->colind);
    spk_free(A->val);
    memset(A, 0, sizeof *A);
}

void spk_coo_free(spk_coo *A)
{
    if (!A)
        return;
    spk_free(A->row);
    spk_free(A->col);
    spk_free(A->val);
    memset(A, 0, sizeof *A);
}

spk_status spk_csr_alloc(spk_context *ctx, int64_t nrows, int64_t ncols, int64_t nnz,
                         spk_csr *out)
{
    memset(out, 0, sizeof *out);
    if (nrows < 0 || ncols < 0 || nnz < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "CSR of %lld x %lld with %lld entries: sizes must be >= 0",
                        (long long)nrows, (long long)ncols, (long long)nnz);
    if (nrows > INT32_MAX || ncols > INT32_MAX)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED,
                        "CSR of %lld x %lld: row and column counts are limited to 2^31-1",
                        (long long)nrows, (long long)ncols);
    /* More than the process may hold cannot work: with Linux's overcommit the malloc would
     * succeed and the process be killed later, at first touch. Refuse early. */
    spk_status st = spk_check_memory(ctx, spk_csr_bytes(nrows, nnz), "CSR of %lld x %lld with "
                                      "%lld entries", (long long)nrows, (long long)ncols,
                                      (long long)nnz);
    if (st)
        return st;
    out->nrows = nrows;
    out->ncols = ncols;
    out->nnz = nnz;
    out->rowptr = spk_calloc(ctx, (size_t)nrows + 1, sizeof *out->rowptr);
    out->colind = spk_malloc(ctx, (size_t)nnz, sizeof *out->colind);
    out->val = spk_malloc(ctx, (size_t)nnz, sizeof *out->val);
    if (!out->rowptr || !out->colind || !out->val) {
        spk_csr_free(out);
        return spk_fail(ctx, SPK_ERR_NOMEM, "CSR of %lld x %lld with %lld entries: out of memory (%.3g GB)",
                        (long long)nrows, (long long)ncols, (long long)nnz,
                        spk_csr_bytes(nrows, nnz) / 1e9);
    }
    return SPK_OK;
}

double spk_csr_bytes(int64_t nrows, int64_t nnz)
{
    return 8.0 * ((double)nrows + 1) + 12.0 * (double)nnz;
}

/* A matrix is "wide" when it has far more columns than entries (a header of 1 x 2^31-1):
 * then n + 1 column counters would cost more than the entries, and the column order is found
 * by two passes over 16-bit digits instead. */
static int csr_wide(int64_t ncols, int64_t nz) { return ncols > 4 * nz + 1024; }

#define DIGIT_BITS 16
#define DIGIT_BUCKETS ((int64_t)1 << DIGIT_BITS)

double spk_csr_from_coo_bytes(int64_t nrows, int64_t ncols, int64_t nz)
{
    const double counters = csr_wide(ncols, nz) ? 8.0 * (double)(DIGIT_BUCKETS + 1) + 8.0 * (double)nz
                                                : 8.0 * ((double)ncols + 1);
    /* the input COO, the column counters, bycol, the row counters, tcol + tval, the output */
    return 16.0 * (double)nz + counters + 8.0 * (double)nz + 8.0 * ((double)nrows + 1) +
           12.0 * (double)nz + spk_csr_bytes(nrows, nz);
}

/* One stable counting-sort pass: out = the entries in[0 .. nz) (NULL: 0, 1, ..., nz - 1)
 * ordered by the key (col >> shift) & mask, of nb possible values; cnt has nb + 1 slots. */
static void counting_pass(const int32_t *col, int shift, uint32_t mask, int64_t nb,
                          const int64_t *in, int64_t nz, int64_t *cnt, int64_t *out)
{
    memset(cnt, 0, ((size_t)nb + 1) * sizeof *cnt);
    for (int64_t k = 0; k < nz; k++)
        cnt[(((uint32_t)col[k] >> shift) & mask) + 1]++;
    for (int64_t d = 0; d < nb; d++)
        cnt[d + 1] += cnt[d];
    for (int64_t t = 0; t < nz; t++) {
        const int64_t k = in ? in[t] : t;
        out[cnt[((uint32_t)col[k] >> shift) & mask]++] = k;
    }
}

/* bycol = the entries in column order, stably (equal columns keep their input order, so that
 * duplicates are summed in input order). One pass over the columns, or for a wide matrix an
 * LSD radix sort of two 16-bit digits (columns < 2^31): O(nz + 2^16) whatever the width or
 * the order of the entries, where sorting each row by insertion was quadratic in its length. */
static void order_by_column(const spk_coo *coo, int wide, int64_t *cnt, int64_t *tmp,
                            int64_t *bycol)
{
    if (!wide) {
        counting_pass(coo->col, 0, UINT32_MAX, coo->ncols, NULL, coo->nnz, cnt, bycol);
        return;
    }
    counting_pass(coo->col, 0, (uint32_t)DIGIT_BUCKETS - 1, DIGIT_BUCKETS, NULL, coo->nnz, cnt,
                  tmp);
    counting_pass(coo->col, DIGIT_BITS, (uint32_t)DIGIT_BUCKETS - 1, DIGIT_BUCKETS, tmp,
                  coo->nnz, cnt, bycol);
}

/* The first entry of A that is not finite, or -1; *row receives its row. */
static int64_t first_nonfinite(const spk_csr *A, int64_t *row)
{
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (!isfinite(A->val[p])) {
                *row = i;
                return p;
            }
    return -1;
}

spk_status spk_csr_from_coo(spk_context *ctx, const spk_coo *coo, spk_csr *out)
{
    const int64_t m = coo->nrows, n = coo->ncols, nz = coo->nnz;
    memset(out, 0, sizeof *out);
    if (m < 0 || n < 0 || nz < 0 || (nz > 0 && (!coo->row || !coo->col || !coo->val)))
        return spk_fail(ctx, SPK_ERR_ARG, "COO -> CSR: bad sizes or NULL arrays");
    for (int64_t k = 0; k < nz; k++)
        if (coo->row[k] < 0 || coo->row[k] >= m || coo->col[k] < 0 || coo->col[k] >= n)
            return spk_fail(ctx, SPK_ERR_ARG,
                            "a(%lld,%lld) (entry %lld) is outside the %lld x %lld matrix",
                            (long long)coo->row[k] + 1, (long long)coo->col[k] + 1, (long long)k,
                            (long long)m, (long long)n);
    /* rows and columns cost memory without entries (a 67-byte header of 2e9 x 1 asks for
     * 2 x 16 GB of row counters and offsets): checked before anything is allocated */
    spk_status st = spk_check_memory(ctx, spk_csr_from_coo_bytes(m, n, nz), "COO -> CSR of %lld "
                                     "x %lld with %lld entries", (long long)m, (long long)n,
                                     (long long)nz);
    if (st)
        return st;

    /* pass 1: the entries in column order (bycol) */
    const int wide = csr_wide(n, nz);
    int64_t *cptr = spk_malloc(ctx, wide ? (size_t)DIGIT_BUCKETS + 1 : (size_t)n + 1, sizeof *cptr);
    int64_t *radix = wide ? spk_malloc(ctx, (size_t)nz, sizeof *radix) : NULL;
    int64_t *bycol = spk_malloc(ctx, (size_t)nz, sizeof *bycol);
    int64_t *rcount = spk_calloc(ctx, (size_t)m + 1, sizeof *rcount);
    int32_t *tcol = spk_malloc(ctx, (size_t)nz, sizeof *tcol);
    double *tval = spk_malloc(ctx, (size_t)nz, sizeof *tval);
    if (!cptr || (wide && !radix) || !bycol || !rcount || !tcol || !tval) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "COO -> CSR of %lld x %lld with %lld entries: out of memory",
                      (long long)m, (long long)n, (long long)nz);
        goto out_free;
    }
    order_by_column(coo, wide, cptr, radix, bycol);

    /* pass 2: stable counting sort by row; columns stay sorted within each row */
    for (int64_t k = 0; k < nz; k++)
        rcount[coo->row[k] + 1]++;
    for (int64_t i = 0; i < m; i++)
        rcount[i + 1] += rcount[i];
    for (int64_t t = 0; t < nz; t++) {
        int64_t k = bycol[t];
        int64_t dst = rcount[coo->row[k]]++;
        tcol[dst] = coo->col[k];
        tval[dst] = coo->val[k];
    }
    /* rcount[i] now holds the end of row i; rebuild starts while summing duplicates */
    int64_t unique = 0;
    for (int64_t i = 0, start = 0; i < m; i++) {
        int64_t end = rcount[i];
        for (int64_t p = start; p < end; p++)
            if (p == start || tcol[p] != tcol[p - 1])
                unique++;
        start = end;
    }
    st = spk_csr_alloc(ctx, m, n, unique, out);
    if (st)
        goto out_free;
    int64_t w = 0;
    for (int64_t i = 0, start = 0; i < m; i++) {
        int64_t end = rcount[i];
        for (int64_t p = start; p < end; p++) {
            if (p > start && tcol[p] == tcol[p - 1]) {
                out->val[w - 1] += tval[p];           /* duplicate: a_ij += v */
            } else {
                out->colind[w] = tcol[p];
                out->val[w] = tval[p];
                w++;
            }
        }
        out->rowptr[i + 1] = w;
        start = end;
    }
    /* Finite entries can sum to Inf (1e308 + 1e308): checked on the sums, after duplicates
     * and mirrored symmetric entries met, so that no matrix is made holding one. */
    int64_t bad_row = 0, bad = first_nonfinite(out, &bad_row);
    if (bad >= 0) {
        int64_t terms = 0;
        for (int64_t p = bad_row ? rcount[bad_row - 1] : 0; p < rcount[bad_row]; p++)
            terms += tcol[p] == out->colind[bad];
        st = spk_fail(ctx, SPK_ERR_ARG, "a(%lld,%lld) = %g: the sum of its %lld "
                      "entries overflows, although each is finite", (long long)bad_row + 1,
                      (long long)out->colind[bad] + 1, out->val[bad], (long long)terms);
        spk_csr_free(out);
    }
out_free:
    spk_free(cptr);
    spk_free(radix);
    spk_free(bycol);
    spk_free(rcount);
    spk_free(tcol);
    spk_free(tval);
    return st;
}

void spk_csr_spmv_ref(const spk_csr *A, double alpha, const double *x, double beta, double *y)
{
    /* one thread for small matrices: a parallel region costs more than ~20k multiply-adds */
#pragma omp parallel for schedule(static) if (A->nnz > 32768)
    for (int64_t i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            s += A->val[p] * x[A->colind[p]];
        y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
    }
}

/* Find a_ji by binary search in row j (columns are sorted). */
static int csr_find(const spk_csr *A, int64_t j, int32_t i, double *v)
{
    int64_t lo = A->rowptr[j], hi = A->rowptr[j + 1];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (A->colind[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < A->rowptr[j + 1] && A->colind[lo] == i) {
        *v = A->val[lo];
        return 1;
    }
    return 0;
}

int spk_csr_is_symmetric(const spk_csr *A)
{
    if (A->nrows != A->ncols)
        return 0;
    int sym = 1;
#pragma omp parallel for schedule(static) reduction(&& : sym) if (A->nnz > 32768)
    for (int64_t i = 0; i < A->nrows; i++) {
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1] && sym; p++) {
            double v;
            if (!csr_find(A, A->colind[p], (int32_t)i, &v) || v != A->val[p])
                sym = 0;
        }
    }
    return sym;
}

void spk_csr_diagonal(const spk_csr *A, double *d)
{
    int64_t n = A->nrows < A->ncols ? A->nrows : A->ncols;
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        double v = 0.0;
        d[i] = csr_find(A, i, (int32_t)i, &v) ? v : 0.0;
    }
}

void spk_pack_bits(const int32_t *v, int64_t n, int bits, uint32_t *out, size_t words)
{
    const int64_t groups = (n + 31) / 32;
    const uint64_t mask = bits >= 32 ? 0xffffffffu : (1u << bits) - 1u;
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t g = 0; g < groups; g++) {
        uint32_t *o = out + g * bits;
        uint64_t acc = 0;
        int have = 0, k = 0;
        for (int64_t j = g * 32; j < g * 32 + 32; j++) {
            acc |= (j < n ? (uint64_t)(uint32_t)v[j] & mask : 0) << have;
            have += bits;
            if (have >= 32) {                 /* 32 fields end exactly on word `bits` */
                o[k++] = (uint32_t)acc;
                acc >>= 32;
                have -= 32;
            }
        }
    }
    const size_t used = (size_t)groups * (size_t)bits;
    if (words > used)
        memset(out + used, 0, (words - used) * sizeof *out);
}

/* A stream block of rows r0 .. r1 - 1 (spk_row_blocks_walk). */
static void close_stream(const int64_t *rowptr, int64_t r0, int64_t r1, int64_t b,
                         spk_row_blocks *c, int64_t *blk)
{
    if (r1 == r0)
        return;
    if (blk) {
        blk[4 * b] = r0;
        blk[4 * b + 1] = r1;
        blk[4 * b + 2] = rowptr[r0];
        blk[4 * b + 3] = rowptr[r1];
    }
    c->nstream++;
    c->stream_rows += r1 - r0;
    c->stream_nnz += rowptr[r1] - rowptr[r0];
}

void spk_row_blocks_walk(const int64_t *rowptr, int64_t n, int64_t nb, int64_t piece,
                         int64_t stream0, spk_row_blocks *c, int64_t *blk, int64_t *lfirst)
{
    memset(c, 0, sizeof *c);
    if (blk)
        lfirst[0] = 0;
    int64_t r0 = 0;                                   /* the open stream block's first row */
    for (int64_t i = 0; i < n; i++) {
        const int64_t len = rowptr[i + 1] - rowptr[i];
        if (len > nb) {                               /* long: close the block, cut pieces */
            close_stream(rowptr, r0, i, stream0 + c->nstream, c, blk);
            for (int64_t q = rowptr[i]; q < rowptr[i + 1]; q += piece, c->npieces++)
                if (blk) {
                    int64_t *d = blk + 4 * c->npieces;
                    d[0] = i;
                    d[1] = -1 - c->nlong;
                    d[2] = q;
                    d[3] = rowptr[i + 1] - q > piece ? q + piece : rowptr[i + 1];
                }
            c->nlong++;
            if (blk)
                lfirst[c->nlong] = c->npieces;
            r0 = i + 1;
            continue;
        }
        if (i - r0 == nb || rowptr[i + 1] - rowptr[r0] > nb) {   /* row i does not fit */
            close_stream(rowptr, r0, i, stream0 + c->nstream, c, blk);
            r0 = i;
        }
    }
    close_stream(rowptr, r0, n, stream0 + c->nstream, c, blk);
}
