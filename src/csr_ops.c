/* src/csr_ops.c -- products and transposes of host CSR matrices, for the AMG setup
 * (solvers/amg_setup.c): C = A B in two phases, the pattern once (symbolic) and the values as
 * often as A's values change (numeric), as Gustavson (1978) and every SpGEMM since split it;
 * and the transpose with the map that refills its values. Rows of the outputs are sorted, so
 * they are canonical CSR and become spk matrices as they are.
 *
 * Both phases run over rows in parallel (OpenMP), each thread with its own marker or
 * accumulator of B's width; the sums of a row are added in the order of A's entries, so the
 * values have the same bits whatever the thread count. */
#include "spk_internal.h"

#include <stdlib.h>
#include <string.h>

/* Insertion sort: the short rows, and the pieces the quicksort below leaves. */
static void insertion_i32(int32_t *c, int64_t len)
{
    for (int64_t i = 1; i < len; i++) {
        const int32_t v = c[i];
        int64_t j = i - 1;
        for (; j >= 0 && c[j] > v; j--)
            c[j + 1] = c[j];
        c[j + 1] = v;
    }
}

/* Ascending, in place: a quicksort on the median of three down to pieces of 32, recursing
 * into the smaller side (depth log2 len), then insertion sort; a typed comparison, not
 * qsort's call per pair, which took a few percent of the AMG setup in its products' rows
 * of 30-150 columns. */
void spk_sort_i32(int32_t *c, int64_t len)
{
    while (len > 32) {
        const int32_t a = c[0], b = c[len / 2], d = c[len - 1];
        const int32_t piv = a < b ? (b < d ? b : (a < d ? d : a)) : (a < d ? a : (b < d ? d : b));
        int64_t i = 0, j = len - 1;
        for (;;) {                               /* Hoare's partition */
            while (c[i] < piv)
                i++;
            while (c[j] > piv)
                j--;
            if (i >= j)
                break;
            const int32_t t = c[i];
            c[i++] = c[j];
            c[j--] = t;
        }
        /* [0, j] <= piv <= [j + 1, len) */
        if (j + 1 < len - (j + 1)) {
            spk_sort_i32(c, j + 1);
            c += j + 1;
            len -= j + 1;
        } else {
            spk_sort_i32(c + j + 1, len - (j + 1));
            len = j + 1;
        }
    }
    insertion_i32(c, len);
}

/* The distinct columns of row i of A B, in the order met, into out (NULL: only counted);
 * mk[j] == i + 1 marks column j as met in this row. Returns their number. */
static int64_t row_columns(const spk_csr *A, const spk_csr *B, int64_t i, int32_t *mk,
                           int32_t *out)
{
    int64_t c = 0;
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
        const int64_t k = A->colind[p];
        for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q++) {
            const int32_t j = B->colind[q];
            if (mk[j] != (int32_t)(i + 1)) {
                mk[j] = (int32_t)(i + 1);
                if (out)
                    out[c] = j;
                c++;
            }
        }
    }
    return c;
}

/* Row i of A B into out: its distinct columns, sorted, and their values, from the sums in
 * ac (B's width, zero on entry and left zero), added in the order of A's entries and B's, as
 * spk_csr_spgemm_numeric adds them. mk as row_columns'. Returns the row's length. */
static int64_t row_product(const spk_csr *A, const spk_csr *B, int64_t i, int32_t *mk,
                           double *ac, int32_t *out, double *val)
{
    int64_t c = 0;
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
        const double a = A->val[p];
        const int64_t k = A->colind[p];
        for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q++) {
            const int32_t j = B->colind[q];
            ac[j] += a * B->val[q];
            if (mk[j] != (int32_t)(i + 1)) {
                mk[j] = (int32_t)(i + 1);
                out[c++] = j;
            }
        }
    }
    spk_sort_i32(out, c);
    for (int64_t p = 0; p < c; p++) {
        val[p] = ac[out[p]];
        ac[out[p]] = 0.0;
    }
    return c;
}

static spk_status dims_fail(spk_context *ctx, const spk_csr *A, const spk_csr *B)
{
    return spk_fail(ctx, SPK_ERR_ARG, "spgemm: A is %lld x %lld, B is %lld x %lld",
                    (long long)A->nrows, (long long)A->ncols, (long long)B->nrows,
                    (long long)B->ncols);
}

/* The product's pattern in two passes over its rows: the first counts each row's columns
 * (row_columns), C is allocated, the second writes them sorted. The reference the one-pass
 * product below is checked against (tests/test_amg.c: spk_csr_spgemm_symbolic +
 * spk_csr_spgemm_numeric against spk_csr_spgemm). */
spk_status spk_csr_spgemm_symbolic(spk_context *ctx, const spk_csr *A, const spk_csr *B,
                                   spk_csr *C)
{
    memset(C, 0, sizeof *C);
    if (A->ncols != B->nrows)
        return dims_fail(ctx, A, B);
    const int64_t m = A->nrows, w = B->ncols;
    const int nt = spk_omp_threads();
    int64_t *len = spk_malloc(ctx, (size_t)m + 1, sizeof *len);
    int32_t *mark = spk_calloc(ctx, (size_t)nt * (size_t)(w > 0 ? w : 1), sizeof *mark);
    spk_status st = SPK_OK;
    if (!len || !mark) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "spgemm of %lld x %lld: out of memory", (long long)m,
                      (long long)w);
        goto done;
    }
    /* pass 1: row lengths. mark[j] = i + 1 once row i has met column j */
#pragma omp parallel for schedule(dynamic, 256) num_threads(nt)
    for (int64_t i = 0; i < m; i++)
        len[i] = row_columns(A, B, i, mark + (int64_t)spk_omp_thread() * w, NULL);
    int64_t nnz = 0;
    for (int64_t i = 0; i < m; i++) {
        const int64_t c = len[i];
        len[i] = nnz;
        nnz += c;
    }
    len[m] = nnz;
    if ((st = spk_csr_alloc(ctx, m, w, nnz, C)))
        goto done;
    memcpy(C->rowptr, len, ((size_t)m + 1) * sizeof *len);
    /* pass 2: the columns, sorted */
    memset(mark, 0, (size_t)nt * (size_t)(w > 0 ? w : 1) * sizeof *mark);
#pragma omp parallel for schedule(dynamic, 256) num_threads(nt)
    for (int64_t i = 0; i < m; i++) {
        int32_t *out = C->colind + C->rowptr[i];
        spk_sort_i32(out, row_columns(A, B, i, mark + (int64_t)spk_omp_thread() * w, out));
    }
done:
    spk_free(len);
    spk_free(mark);
    if (st)
        spk_csr_free(C);
    return st;
}

/* 1 when the rows of A come in groups of g with the same columns (g divides the rows). */
static int rows_grouped(const spk_csr *A, int g)
{
    if (g < 1 || A->nrows % g)
        return 0;
    int ok = 1;
#pragma omp parallel for schedule(static) reduction(&& : ok) if (A->nnz > 32768)
    for (int64_t i0 = 0; i0 < A->nrows; i0 += g) {
        const int64_t p0 = A->rowptr[i0], len = A->rowptr[i0 + 1] - p0;
        for (int r = 1; r < g && ok; r++) {
            const int64_t q0 = A->rowptr[i0 + r];
            ok = A->rowptr[i0 + r + 1] - q0 == len &&
                 memcmp(A->colind + p0, A->colind + q0, (size_t)len * sizeof *A->colind) == 0;
        }
    }
    return ok;
}

/* 1 when every row of B is made of runs of c columns, each starting at a multiple of c. */
static int runs_aligned(const spk_csr *B, int c)
{
    if (c < 1 || B->ncols % c)
        return 0;
    int ok = 1;
#pragma omp parallel for schedule(static) reduction(&& : ok) if (B->nnz > 32768)
    for (int64_t k = 0; k < B->nrows; k++) {
        const int64_t q0 = B->rowptr[k], q1 = B->rowptr[k + 1];
        if ((q1 - q0) % c) {
            ok = 0;
            continue;
        }
        for (int64_t q = q0; q < q1 && ok; q += c)
            for (int t = 0; t < c && ok; t++)
                ok = B->colind[q + t] == B->colind[q] - B->colind[q] % c + t;
    }
    return ok;
}

/* The g rows i0 .. i0 + g - 1 of A B where A's rows come in groups of g with the same
 * columns and B's rows in aligned runs of c columns (rows_grouped, runs_aligned): the
 * group's pattern once, from the runs (mk over w / c run numbers), then each row's values
 * with a run at a time of B's row in the accumulator (no marker: the pattern is known), in
 * the order of A's entries and B's as row_product adds them: the same columns and bits.
 * out, val: g rows of len each, back to back; returns len. */
static int64_t group_product(const spk_csr *A, const spk_csr *B, int64_t i0, int g, int c,
                             int32_t *mk, double *ac, int32_t *out, double *val)
{
    int64_t nr = 0;                                   /* run numbers met, into out */
    for (int64_t p = A->rowptr[i0]; p < A->rowptr[i0 + 1]; p++) {
        const int64_t k = A->colind[p];
        for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q += c) {
            const int32_t J = B->colind[q] / c;
            if (mk[J] != (int32_t)(i0 + 1)) {
                mk[J] = (int32_t)(i0 + 1);
                out[nr++] = J;
            }
        }
    }
    spk_sort_i32(out, nr);
    const int64_t len = nr * c;
    for (int64_t r = nr - 1; r >= 0; r--)             /* runs -> columns, in place */
        for (int t = c - 1; t >= 0; t--)
            out[r * c + t] = out[r] * c + t;
    for (int r = 0; r < g; r++) {
        const int64_t i = i0 + r;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const double a = A->val[p];
            const int64_t k = A->colind[p];
            for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q += c) {
                double *acc = ac + B->colind[q];
                const double *b = B->val + q;
                for (int t = 0; t < c; t++)
                    acc[t] += a * b[t];
            }
        }
        if (r > 0 && len > 0)           /* an empty group may have no scratch yet */
            memcpy(out + r * len, out, (size_t)len * sizeof *out);
        for (int64_t q = 0; q < len; q++) {
            val[r * len + q] = ac[out[q]];
            ac[out[q]] = 0.0;
        }
    }
    return len;
}

/* The one-pass product's rows a block: a parallel loop, a prefix sum and a copy each. */
#define SPGEMM_BLOCK 4096

/* A thread's rows of the current block, back to back. */
typedef struct spgemm_scratch {
    int32_t *col;
    double  *val;
    int64_t  used, cap;
} spgemm_scratch;

/* Room for `need` more entries in s (doubling), or 0 when the allocation failed. */
static int scratch_room(spk_context *ctx, spgemm_scratch *s, int64_t need)
{
    if (s->used + need <= s->cap)
        return 1;
    int64_t cap = s->cap > 0 ? 2 * s->cap : 1024;
    while (cap < s->used + need)
        cap *= 2;
    int32_t *col = spk_realloc(ctx, s->col, (size_t)cap, sizeof *col);
    if (col)
        s->col = col;
    double *val = col ? spk_realloc(ctx, s->val, (size_t)cap, sizeof *val) : NULL;
    if (val)
        s->val = val;
    if (!col || !val)
        return 0;
    s->cap = cap;
    return 1;
}

/* A CSR of nrows rows and nnz entries within the host memory the context may use. */
static int csr_fits(const spk_context *ctx, int64_t nrows, int64_t nnz)
{
    return !(spk_csr_bytes(nrows, nnz) > spk_host_memory(ctx, NULL, 0));
}

/* C's arrays with room for cap entries (grown by half again past what is needed). */
static spk_status c_room(spk_context *ctx, spk_csr *C, int64_t need, int64_t *cap)
{
    if (need <= *cap)
        return SPK_OK;
    int64_t c = *cap + *cap / 2;
    c = c > need ? c : need;
    /* the room beyond need only where the memory limit leaves it */
    if (c > need && !csr_fits(ctx, C->nrows, c))
        c = need;
    spk_status st = spk_check_memory(ctx, spk_csr_bytes(C->nrows, c), "the product of %lld x "
                                     "%lld with %lld entries", (long long)C->nrows,
                                     (long long)C->ncols, (long long)c);
    if (st)
        return st;
    int32_t *col = spk_realloc(ctx, C->colind, (size_t)c, sizeof *col);
    if (col)
        C->colind = col;
    double *val = col ? spk_realloc(ctx, C->val, (size_t)c, sizeof *val) : NULL;
    if (val)
        C->val = val;
    if (!col || !val)
        return spk_fail(ctx, SPK_ERR_NOMEM, "the product of %lld x %lld: out of memory for %lld "
                        "entries", (long long)C->nrows, (long long)C->ncols, (long long)c);
    *cap = c;
    return SPK_OK;
}

/* C = A B, pattern and values, in one pass over the partial products (row_product): the rows
 * in blocks of SPGEMM_BLOCK, each row into the scratch of the thread that made it, then the
 * block's lengths summed and its rows copied into C in order, C's arrays grown as they fill.
 * The second pass of a count-then-fill product went over every partial product again, as
 * much work as the values (half of lame3d:48's setup on the host was its products). Working
 * memory beyond C: the markers and accumulators (12 t w bytes), the block's rows, and C's
 * unused room (a third of C at most). C's rows and bits are those of the two-pass product. */
static spk_status spgemm(spk_context *ctx, const spk_csr *A, const spk_csr *B, spk_csr *C,
                         double *acc, int nt, int g, int c)
{
    memset(C, 0, sizeof *C);
    if (A->ncols != B->nrows)
        return dims_fail(ctx, A, B);
    const int64_t m = A->nrows, w = B->ncols;
    /* rows in groups of g with the same columns, B's in runs of c (group_product); else 1 */
    const int grouped = (g > 1 || c > 1) && rows_grouped(A, g) && runs_aligned(B, c);
    if (!grouped)
        g = 1;
    /* the first guess at C's entries: A's and B's together (the products of the AMG setup
     * have about as many entries as A), grown by half again while short */
    int64_t cap = A->nnz + B->nnz;
    if (!csr_fits(ctx, m, cap))
        cap = 0;                          /* a guess above the memory limit: grown from none */
    spk_status st = spk_csr_alloc(ctx, m, w, cap, C);
    if (st)
        return st;
    /* whole groups a block: at least one (a group longer than a block is a block) */
    const int64_t bm = m < SPGEMM_BLOCK ? m : SPGEMM_BLOCK / g > 0 ? SPGEMM_BLOCK / g * g : g;
    int32_t *mark = spk_calloc(ctx, (size_t)nt * (size_t)(w > 0 ? w : 1), sizeof *mark);
    int64_t *off = spk_malloc(ctx, (size_t)(bm > 0 ? bm : 1), sizeof *off);
    int *who = spk_malloc(ctx, (size_t)(bm > 0 ? bm : 1), sizeof *who);
    spgemm_scratch *scr = spk_calloc(ctx, (size_t)nt, sizeof *scr);
    if (!mark || !off || !who || !scr) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "spgemm of %lld x %lld: out of memory", (long long)m,
                      (long long)w);
        goto done;
    }
    C->rowptr[0] = 0;
    for (int64_t s = 0; s < m && !st; s += bm) {
        const int64_t e = s + bm < m ? s + bm : m;
        int failed = 0;
        for (int t = 0; t < nt; t++)
            scr[t].used = 0;
#pragma omp parallel for schedule(dynamic, 16) num_threads(nt) reduction(| : failed)
        for (int64_t i = s; i < e; i += g) {
            const int t = spk_omp_thread();
            spgemm_scratch *sc = &scr[t];
            /* a row has at most w columns, and at most its partial products */
            int64_t most = 0;
            for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1] && most < w; p++)
                most += B->rowptr[A->colind[p] + 1] - B->rowptr[A->colind[p]];
            most = most < w ? most : w;
            if (failed || !scratch_room(ctx, sc, g * most)) {
                failed = 1;
                continue;
            }
            int32_t *mk = mark + (int64_t)t * w;
            double *ac = acc + (int64_t)t * w;
            const int64_t len =
                grouped ? group_product(A, B, i, g, c, mk, ac, sc->col + sc->used,
                                        sc->val + sc->used)
                        : row_product(A, B, i, mk, ac, sc->col + sc->used, sc->val + sc->used);
            for (int r = 0; r < g; r++) {
                who[i + r - s] = t;
                off[i + r - s] = sc->used;
                C->rowptr[i + r + 1] = len;     /* the length, until the sum below */
                sc->used += len;
            }
        }
    if (failed) {
            st = spk_fail(ctx, SPK_ERR_NOMEM, "spgemm of %lld x %lld: out of memory for a "
                          "block's rows", (long long)m, (long long)w);
            break;
        }
        for (int64_t i = s; i < e; i++)
            C->rowptr[i + 1] += C->rowptr[i];
        if ((st = c_room(ctx, C, C->rowptr[e], &cap)))
            break;
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t i = s; i < e; i++) {
            const spgemm_scratch *sc = &scr[who[i - s]];
            const int64_t len = C->rowptr[i + 1] - C->rowptr[i];
            if (len == 0)                  /* its thread's scratch may not exist */
                continue;
            memcpy(C->colind + C->rowptr[i], sc->col + off[i - s], (size_t)len * sizeof(int32_t));
            memcpy(C->val + C->rowptr[i], sc->val + off[i - s], (size_t)len * sizeof(double));
        }
    }
    if (!st) {
        /* C's arrays down to its entries (a shrink keeps them in place) */
        const int64_t nnz = C->rowptr[m];
        int32_t *col = spk_realloc(NULL, C->colind, (size_t)(nnz > 0 ? nnz : 1), sizeof *col);
        double *val = spk_realloc(NULL, C->val, (size_t)(nnz > 0 ? nnz : 1), sizeof *val);
        C->colind = col ? col : C->colind;
        C->val = val ? val : C->val;
        C->nnz = nnz;
    }
done:
    if (scr)
        for (int t = 0; t < nt; t++) {
            spk_free(scr[t].col);
            spk_free(scr[t].val);
        }
    spk_free(scr);
    spk_free(mark);
    spk_free(off);
    spk_free(who);
    if (st)
        spk_csr_free(C);
    return st;
}

spk_status spk_csr_spgemm(spk_context *ctx, const spk_csr *A, const spk_csr *B, spk_csr *C,
                          double *acc, int nacc, int g, int c)
{
    double *own = NULL;
    if (!acc) {
        nacc = spk_omp_threads();
        acc = own = spk_calloc(ctx, (size_t)nacc * (size_t)(B->ncols > 0 ? B->ncols : 1),
                               sizeof *acc);
        if (!acc)
            return spk_fail(ctx, SPK_ERR_NOMEM, "spgemm accumulator of %lld doubles: out of "
                            "memory", (long long)nacc * (long long)B->ncols);
    }
    const spk_status st = spgemm(ctx, A, B, C, acc, nacc, g, c);
    spk_free(own);
    return st;
}

int spk_csr_spgemm_threads(void) { return spk_omp_threads(); }

spk_status spk_csr_spgemm_numeric(spk_context *ctx, const spk_csr *A, const spk_csr *B,
                                  spk_csr *C, double *acc, int nacc, int c)
{
    const int64_t m = A->nrows, w = B->ncols;
    /* B's rows in aligned runs of c: a run at a time (group_product's sums, the same bits) */
    const int runs = c > 1 && runs_aligned(B, c);
    double *own = NULL;
    if (!acc) {
        nacc = spk_omp_threads();
        acc = own = spk_calloc(ctx, (size_t)nacc * (size_t)(w > 0 ? w : 1), sizeof *acc);
        if (!acc)
            return spk_fail(ctx, SPK_ERR_NOMEM, "spgemm accumulator of %lld doubles: out of "
                            "memory", (long long)nacc * (long long)w);
    }
#pragma omp parallel for schedule(dynamic, 256) num_threads(nacc)
    for (int64_t i = 0; i < m; i++) {
        double *ac = acc + (int64_t)spk_omp_thread() * w;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const double a = A->val[p];
            const int64_t k = A->colind[p];
            if (runs)
                for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q += c) {
                    double *r = ac + B->colind[q];
                    const double *b = B->val + q;
                    for (int t = 0; t < c; t++)
                        r[t] += a * b[t];
                }
            else
                for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q++)
                    ac[B->colind[q]] += a * B->val[q];
        }
        for (int64_t p = C->rowptr[i]; p < C->rowptr[i + 1]; p++) {
            C->val[p] = ac[C->colind[p]];
            ac[C->colind[p]] = 0.0;
        }
    }
    spk_free(own);
    return SPK_OK;
}

/* In parallel over chunks of A's rows: each chunk counts its columns, the counts give every
 * chunk its own offset in each row of T, and each chunk fills its rows in order, so that T's
 * rows receive their columns sorted, as one pass over A's rows in order would give them.
 * The offsets take chunks x ncols int64s: at most as many chunks as threads, and no more than
 * keeps them within A's own column indices' bytes (nnz / ncols chunks, at least one). */
spk_status spk_csr_transpose(spk_context *ctx, const spk_csr *A, spk_csr *T, int64_t **map)
{
    memset(T, 0, sizeof *T);
    if (map)
        *map = NULL;
    spk_status st = spk_csr_alloc(ctx, A->ncols, A->nrows, A->nnz, T);
    if (st)
        return st;
    const int64_t m = A->nrows, w = A->ncols;
    int64_t nch = spk_omp_threads();
    if (w > 0 && nch > A->nnz / w)
        nch = A->nnz / w > 1 ? A->nnz / w : 1;
    if (A->nnz <= SPK_OMP_MIN_N)
        nch = 1;
    int64_t *src = map ? spk_malloc(ctx, (size_t)(A->nnz > 0 ? A->nnz : 1), sizeof *src) : NULL;
    int64_t *off = spk_calloc(ctx, (size_t)nch * (size_t)(w > 0 ? w : 1), sizeof *off);
    if ((map && !src) || !off) {
        spk_free(src);
        spk_free(off);
        spk_csr_free(T);
        return spk_fail(ctx, SPK_ERR_NOMEM, "transpose of %lld x %lld: out of memory",
                        (long long)A->nrows, (long long)A->ncols);
    }
    /* off[c w + j]: chunk c's entries in column j, then where they start in T's row j */
#pragma omp parallel for schedule(static) num_threads(nch > 0 ? (int)nch : 1)
    for (int64_t c = 0; c < nch; c++) {
        int64_t *oc = off + c * w;
        for (int64_t p = A->rowptr[c * m / nch]; p < A->rowptr[(c + 1) * m / nch]; p++)
            oc[A->colind[p]]++;
    }
    for (int64_t j = 0; j < w; j++) {
        int64_t sum = 0;
        for (int64_t c = 0; c < nch; c++)
            sum += off[c * w + j];
        T->rowptr[j + 1] = sum;
    }
    for (int64_t j = 0; j < w; j++)
        T->rowptr[j + 1] += T->rowptr[j];
#pragma omp parallel for schedule(static) if (w > SPK_OMP_MIN_N)
    for (int64_t j = 0; j < w; j++) {
        int64_t at = T->rowptr[j];
        for (int64_t c = 0; c < nch; c++) {
            const int64_t cnt = off[c * w + j];
            off[c * w + j] = at;
            at += cnt;
        }
    }
#pragma omp parallel for schedule(static) num_threads(nch > 0 ? (int)nch : 1)
    for (int64_t c = 0; c < nch; c++) {
        int64_t *next = off + c * w;
        for (int64_t i = c * m / nch; i < (c + 1) * m / nch; i++)
            for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                const int64_t q = next[A->colind[p]]++;
                T->colind[q] = (int32_t)i;
                T->val[q] = A->val[p];
                if (src)
                    src[q] = p;
            }
    }
    spk_free(off);
    if (map)
        *map = src;
    return SPK_OK;
}

void spk_csr_transpose_values(const spk_csr *A, const int64_t *map, spk_csr *T)
{
#pragma omp parallel for schedule(static) if (T->nnz > SPK_OMP_MIN_N)
    for (int64_t q = 0; q < T->nnz; q++)
        T->val[q] = A->val[map[q]];
}
