/* solvers/ilut.c -- ILUTP: incomplete LU with dual threshold dropping and column pivoting
 * (Saad, Iterative Methods for Sparse Linear Systems, 2nd ed., alg. 10.6 ILUT and sec. 10.4.4
 * ILUTP; SPARSKIT's ilut/ilutp), on the host: A(:, perm) ~= L U.
 *
 * Rows are eliminated in order (IKJ): row i of A is scattered into a dense work row w indexed
 * by A's own columns, then for the columns of w whose position k is below i, in increasing k
 * (a binary heap, since fill can add smaller positions than the ones left), w_k /= u_kk and,
 * unless w_k is dropped, w -= w_k U(k,:).
 *
 * Dropping, with tau_i = drop_tol ||a_i||_1 / nnz(a_i) (SPARSKIT's scale, the row's mean
 * magnitude): a multiplier |l_ik| <= tau_i is dropped before it is used, an off-diagonal
 * |u_ij| <= tau_i after the row is done. Fill: the bound fill_factor nnz(A) is spent as the
 * rows are made (SuperLU's area rule, DROP_AREA): rows 0..i may hold fill_factor nnz(A(0:i,:))
 * entries besides U's diagonal, and any row as many as A's row has; a row over its quota
 * keeps its heaviest entries, U's by |u_ij| and L's by |l_ik u_kk| (what the multiplier
 * removes from the row, in A's scale), ties by column. So nnz(L) + nnz(U) <= fill_factor
 * nnz(A) + n, and that room is allocated before factoring. On cavity14 and e05r0100 with the
 * defaults (1e-4, 10) these rules give GMRES(30) 5 and 3 iterations where SciPy's spilu
 * gives 6 and 4 (bench/compare_ilut.py); the 2-norm of Saad's book in place of the mean
 * magnitude gives 10 and 5.
 *
 * Pivoting: before the U part is dropped, the entry of largest magnitude at positions >= i is
 * found; when |w_ii| < SPK_ILUT_PIVOT_TOL |w_max| the two columns swap positions (perm,
 * iperm). U's rows keep A's column numbers while the factorization runs (a later swap moves
 * only positions > i) and are renumbered and sorted at the end. A row with nothing left to
 * pivot on gets u_ii = SPK_ILUT_ZERO_PIVOT ||a_i||_1 / nnz(a_i) (1 for an empty row of A)
 * and is counted in F->zero_pivots, as SuperLU's ILU replaces a zero pivot by a small
 * multiple of its column's norm: M stays usable and the caller may report the count.
 *
 * Cost: per row, O(f log f) for the f entries the work row reaches (heap and selection), the
 * updates being the kept lengths of the U rows it meets. Memory: the work row (n doubles and
 * 4 n int32), the fill bound's room (12 bytes an entry) while factoring, then the factors
 * copied to their exact size. Deterministic: one thread, every choice broken by column. */
#include "ilu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* SuperLU's default DiagPivotThresh for its ILU (ilu_set_default_options): keep the
 * diagonal unless a candidate is more than ten times larger. 0.5 and 1 (SPARSKIT's usual
 * permtol) make GMRES fail on cavity14: more swaps, less of the matrix's own diagonal. */
#define SPK_ILUT_PIVOT_TOL 0.1
/* A pivot replaced for being zero: small against the row, as SuperLU's ILU_FillTol (1e-2)
 * scales the column's norm, so that M^-1 stays bounded. */
#define SPK_ILUT_ZERO_PIVOT 1e-2

typedef struct ilut_entry {
    int32_t c;       /* column: a position in L, A's column in U while factoring          */
    int32_t upper;   /* 1 for an entry of U                                                */
    double  v;
    double  key;     /* what the entry weighs: |v| in U, |l_ik u_kk| in L (A's scale)      */
} ilut_entry;

/* The factorization's state: the work row, the permutation and the factors growing row by
 * row in Ec, Ev: row i's L part (by final positions) from rs[i], its U part (by A's columns,
 * the diagonal apart in udiag) from us[i] to rs[i + 1]. */
typedef struct ilut_work {
    int64_t     n, cap;
    double      fill;    /* fill_factor                                                   */
    double     *w;       /* w[c]: the work row's value at A's column c                   */
    int32_t    *where;   /* 1 when column c is in the work row                           */
    int32_t    *list;    /* the columns in the work row                                  */
    int32_t    *heap;    /* the columns at positions < i, a min-heap by position         */
    int32_t    *perm;    /* perm[k]: A's column at position k; iperm its inverse         */
    int32_t    *iperm;
    ilut_entry *cand;    /* one row's candidates for L and U                             */
    int64_t    *rs, *us; /* row starts, and where each row's U part starts               */
    int32_t    *Ec;      /* room for cap entries (the fill bound): columns and values    */
    double     *Ev;
    double     *udiag;
    int64_t     zero_pivots;
} ilut_work;

static void work_free(ilut_work *W)
{
    spk_free(W->w);
    spk_free(W->where);
    spk_free(W->list);
    spk_free(W->heap);
    spk_free(W->perm);
    spk_free(W->iperm);
    spk_free(W->cand);
    spk_free(W->rs);
    spk_free(W->us);
    spk_free(W->Ec);
    spk_free(W->Ev);
    spk_free(W->udiag);
    memset(W, 0, sizeof *W);
}

static spk_status work_alloc(spk_context *ctx, ilut_work *W, int64_t n, int64_t cap)
{
    const size_t un = (size_t)n;
    double bytes = (double)n * (sizeof(double) * 2 + sizeof(int32_t) * 6 + sizeof(ilut_entry) +
                                sizeof(int64_t) * 2) +
                   (double)cap * (sizeof(int32_t) + sizeof(double));
    spk_status st = spk_check_memory(ctx, bytes, "ILUT of %lld rows with room for %lld entries",
                                     (long long)n, (long long)cap);
    if (st)
        return st;
    memset(W, 0, sizeof *W);
    W->n = n;
    W->cap = cap;
    W->w = spk_calloc(ctx, un + 1, sizeof *W->w);
    W->where = spk_calloc(ctx, un + 1, sizeof *W->where);
    W->list = spk_malloc(ctx, un + 1, sizeof *W->list);
    W->heap = spk_malloc(ctx, un + 1, sizeof *W->heap);
    W->perm = spk_malloc(ctx, un + 1, sizeof *W->perm);
    W->iperm = spk_malloc(ctx, un + 1, sizeof *W->iperm);
    W->cand = spk_malloc(ctx, un + 1, sizeof *W->cand);
    W->rs = spk_calloc(ctx, un + 1, sizeof *W->rs);
    W->us = spk_calloc(ctx, un + 1, sizeof *W->us);
    W->Ec = spk_malloc(ctx, (size_t)cap + 1, sizeof *W->Ec);
    W->Ev = spk_malloc(ctx, (size_t)cap + 1, sizeof *W->Ev);
    W->udiag = spk_malloc(ctx, un + 1, sizeof *W->udiag);
    if (!W->w || !W->where || !W->list || !W->heap || !W->perm || !W->iperm || !W->cand ||
        !W->rs || !W->us || !W->Ec || !W->Ev || !W->udiag) {
        work_free(W);
        return spk_fail(ctx, SPK_ERR_NOMEM, "ILUT of %lld rows: out of memory (%.3g GB)",
                        (long long)n, bytes / 1e9);
    }
    for (int64_t k = 0; k < n; k++)
        W->perm[k] = W->iperm[k] = (int32_t)k;
    return SPK_OK;
}

/* ---- the heap of columns still to eliminate, ordered by position ------------------------ */

static void heap_push(int32_t *h, int64_t *len, int32_t c, const int32_t *pos)
{
    int64_t k = (*len)++;
    while (k > 0 && pos[h[(k - 1) / 2]] > pos[c]) {
        h[k] = h[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h[k] = c;
}

static int32_t heap_pop(int32_t *h, int64_t *len, const int32_t *pos)
{
    int32_t top = h[0], last = h[--(*len)];
    int64_t k = 0;
    for (;;) {
        int64_t c = 2 * k + 1;
        if (c >= *len)
            break;
        if (c + 1 < *len && pos[h[c + 1]] < pos[h[c]])
            c++;
        if (pos[h[c]] >= pos[last])
            break;
        h[k] = h[c];
        k = c;
    }
    if (*len > 0)
        h[k] = last;
    return top;
}

/* ---- selection and ordering of a row's kept entries ------------------------------------ */

static int by_weight(const void *a, const void *b)
{
    const ilut_entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? 1 : -1;
    if (x->upper != y->upper)
        return x->upper - y->upper;
    return (x->c > y->c) - (x->c < y->c);
}

static int by_column(const void *a, const void *b)
{
    const ilut_entry *x = a, *y = b;
    return (x->c > y->c) - (x->c < y->c);
}

/* L's entries first, each part by column. */
static int by_part_column(const void *a, const void *b)
{
    const ilut_entry *x = a, *y = b;
    if (x->upper != y->upper)
        return x->upper - y->upper;
    return (x->c > y->c) - (x->c < y->c);
}

/* ---- one row ---------------------------------------------------------------------------- */

/* Scatter row i of A into w; the columns at positions < i go on the heap. Returns the
 * row's length; *norm: its mean magnitude ||a_i||_1 / nnz(a_i), SPARSKIT's ilut scale (Inf
 * or NaN when the row holds one). */
static int64_t scatter_row(ilut_work *W, const spk_csr *A, int64_t i, int64_t *nheap,
                           double *norm)
{
    int64_t len = 0;
    double s1 = 0.0;
    *nheap = 0;
    for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) {
        int32_t c = A->colind[q];
        W->w[c] = A->val[q];
        W->where[c] = 1;
        W->list[len++] = c;
        s1 += fabs(A->val[q]);
        if (W->iperm[c] < i)
            heap_push(W->heap, nheap, c, W->iperm);
    }
    *norm = len ? s1 / (double)len : 0.0;
    return len;
}

/* w -= sum over k < i of w_k U(k,:), w_k = w_k / u_kk: the multipliers stay in w at their
 * columns, a dropped one set to zero. Returns the work row's new length. */
static int64_t eliminate(ilut_work *W, int64_t i, int64_t len, int64_t nheap, double tol)
{
    while (nheap > 0) {
        int32_t c = heap_pop(W->heap, &nheap, W->iperm);
        int32_t k = W->iperm[c];
        double m = W->w[c] / W->udiag[k];
        if (!(fabs(m) > tol)) {
            W->w[c] = 0.0;
            continue;
        }
        W->w[c] = m;
        for (int64_t q = W->us[k]; q < W->rs[k + 1]; q++) {
            int32_t cc = W->Ec[q];
            if (!W->where[cc]) {
                W->where[cc] = 1;
                W->w[cc] = 0.0;
                W->list[len++] = cc;
                if (W->iperm[cc] < i)
                    heap_push(W->heap, &nheap, cc, W->iperm);
            }
            W->w[cc] -= m * W->Ev[q];
        }
    }
    return len;
}

/* Choose row i's pivot among the work row's columns at positions >= i and swap it into
 * position i when the diagonal is too small against it. Returns the pivot's value. */
static double choose_pivot(ilut_work *W, int64_t i, int64_t len, double norm)
{
    int32_t d = W->perm[i], best = d;
    double dv = W->where[d] ? fabs(W->w[d]) : 0.0, bv = dv;
    for (int64_t t = 0; t < len; t++) {
        int32_t c = W->list[t];
        double a = fabs(W->w[c]);
        if (W->iperm[c] >= i && (a > bv || (a == bv && a > 0.0 && W->iperm[c] < W->iperm[best]))) {
            best = c;
            bv = a;
        }
    }
    if (!(bv > 0.0) || !isfinite(bv)) {
        W->zero_pivots++;
        return norm > 0.0 ? SPK_ILUT_ZERO_PIVOT * norm : 1.0;
    }
    if (dv < SPK_ILUT_PIVOT_TOL * bv) {
        int32_t kb = W->iperm[best];
        W->perm[i] = best;
        W->perm[kb] = d;
        W->iperm[best] = (int32_t)i;
        W->iperm[d] = kb;
        d = best;
    }
    return W->w[d];
}

/* Row i's kept entries into Ec, Ev: those above the threshold, the heaviest `quota` of them
 * when there are more; L's sorted by position, U's by A's column (renumbered at the end). */
static void store_row(ilut_work *W, int64_t i, int64_t len, double tol, int64_t quota)
{
    int32_t d = W->perm[i];
    int64_t nc = 0, nl = 0;
    for (int64_t t = 0; t < len; t++) {
        int32_t c = W->list[t];
        double v = W->w[c];
        if (c == d || v == 0.0)
            continue;
        if (W->iperm[c] < i) {
            int32_t k = W->iperm[c];
            if (fabs(v) > tol)
                W->cand[nc++] = (ilut_entry){.c = k, .upper = 0, .v = v,
                                             .key = fabs(v * W->udiag[k])};
        } else if (fabs(v) > tol) {
            W->cand[nc++] = (ilut_entry){.c = c, .upper = 1, .v = v, .key = fabs(v)};
        }
    }
    if (nc > quota) {
        qsort(W->cand, (size_t)nc, sizeof *W->cand, by_weight);
        nc = quota;
    }
    qsort(W->cand, (size_t)nc, sizeof *W->cand, by_part_column);
    for (int64_t t = 0, o = W->rs[i]; t < nc; t++, o++) {
        W->Ec[o] = W->cand[t].c;
        W->Ev[o] = W->cand[t].v;
        nl += !W->cand[t].upper;
    }
    W->us[i] = W->rs[i] + nl;
    W->rs[i + 1] = W->rs[i] + nc;
}

/* Row i: eliminate, pivot, drop, store, clear the work row. */
static spk_status factor_row(spk_context *ctx, ilut_work *W, const spk_csr *A, int64_t i,
                             double drop_tol)
{
    int64_t nheap;
    double norm;
    int64_t len = scatter_row(W, A, i, &nheap, &norm);
    if (!isfinite(norm))
        return spk_fail(ctx, SPK_ERR_ARG, "ILUT: row %lld (1-based) of A holds Inf or NaN, or "
                        "its norm overflows", (long long)i + 1);
    double tol = drop_tol * norm;
    len = eliminate(W, i, len, nheap, tol);
    double piv = choose_pivot(W, i, len, norm);
    int finite = isfinite(piv);
    for (int64_t t = 0; t < len && finite; t++)
        finite = isfinite(W->w[W->list[t]]);
    if (!finite)
        return spk_fail(ctx, SPK_ERR_ARG, "ILUT: row %lld (1-based) overflows in the "
                        "elimination (an entry of L or U is Inf or NaN)", (long long)i + 1);
    W->udiag[i] = piv;
    /* The fill bound spent as rows are made: rows 0..i may hold fill_factor nnz(A(0:i, :))
     * entries, and a row as many as A's row has, which keeps within that bound when
     * fill_factor >= 1 (and within the room in any case). */
    double allowed = floor(W->fill * (double)A->rowptr[i + 1]);
    int64_t room = W->cap - W->rs[i];
    int64_t quota = (int64_t)fmin(allowed, (double)W->cap) - W->rs[i];
    if (quota < A->rowptr[i + 1] - A->rowptr[i])
        quota = A->rowptr[i + 1] - A->rowptr[i];
    if (quota > room)
        quota = room;
    store_row(W, i, len, tol, quota < 0 ? 0 : quota);
    for (int64_t t = 0; t < len; t++) {
        W->where[W->list[t]] = 0;
        W->w[W->list[t]] = 0.0;
    }
    return SPK_OK;
}

/* ---- the factors in their final form ---------------------------------------------------- */

static spk_status emit(spk_context *ctx, ilut_work *W, spk_ilu_factors *F)
{
    const int64_t n = W->n;
    int64_t nl = 0;
    for (int64_t i = 0; i < n; i++)
        nl += W->us[i] - W->rs[i];
    spk_status st = spk_csr_alloc(ctx, n, n, nl, &F->L);
    if (st)
        return st;
    st = spk_csr_alloc(ctx, n, n, W->rs[n] - nl + n, &F->U);
    if (st)
        return st;
    for (int64_t i = 0; i < n; i++) {
        int64_t o = F->L.rowptr[i];
        for (int64_t q = W->rs[i]; q < W->us[i]; q++, o++) {
            F->L.colind[o] = W->Ec[q];
            F->L.val[o] = W->Ev[q];
        }
        F->L.rowptr[i + 1] = o;
        /* U's columns to their final positions: the diagonal first, then the rest sorted */
        int64_t len = W->rs[i + 1] - W->us[i];
        ilut_entry *e = W->cand;
        for (int64_t t = 0; t < len; t++)
            e[t] = (ilut_entry){.c = W->iperm[W->Ec[W->us[i] + t]], .v = W->Ev[W->us[i] + t]};
        qsort(e, (size_t)len, sizeof *e, by_column);
        o = F->U.rowptr[i];
        F->U.colind[o] = (int32_t)i;
        F->U.val[o] = W->udiag[i];
        for (int64_t t = 0; t < len; t++) {
            F->U.colind[o + 1 + t] = e[t].c;
            F->U.val[o + 1 + t] = e[t].v;
        }
        F->U.rowptr[i + 1] = o + 1 + len;
    }
    int moved = 0;
    for (int64_t k = 0; k < n && !moved; k++)
        moved = W->perm[k] != k;
    if (moved) {
        F->perm = W->perm;              /* handed over: work_free must not free it */
        W->perm = NULL;
    }
    return SPK_OK;
}

spk_status spk_ilut_factor(spk_context *ctx, const spk_csr *A, double drop_tol,
                           double fill_factor, spk_ilu_factors *F)
{
    if (!F)
        return spk_fail(ctx, SPK_ERR_ARG, "ILUT: the factors' pointer is NULL");
    memset(F, 0, sizeof *F);
    if (!A)
        return spk_fail(ctx, SPK_ERR_ARG, "ILUT: the matrix is NULL");
    if (A->nrows != A->ncols)
        return spk_fail(ctx, SPK_ERR_ARG, "ILUT: the matrix is %lld x %lld, not square",
                        (long long)A->nrows, (long long)A->ncols);
    if (!(drop_tol >= 0.0) || !isfinite(drop_tol))
        return spk_fail(ctx, SPK_ERR_ARG, "ILUT: drop_tol = %g must be finite and >= 0", drop_tol);
    if (!(fill_factor > 0.0) || !isfinite(fill_factor))
        return spk_fail(ctx, SPK_ERR_ARG, "ILUT: fill_factor = %g must be finite and > 0",
                        fill_factor);
    const int64_t n = A->nrows;
    F->n = n;
    if (n == 0)
        return SPK_OK;
    /* the fill bound, and never more than the n (n - 1) off-diagonal entries there are */
    double capd = fmin(floor(fill_factor * (double)A->nnz), (double)n * (double)(n - 1));
    if (capd > 9e18)
        return spk_fail(ctx, SPK_ERR_NOMEM, "ILUT: fill_factor %g times %lld entries overflows",
                        fill_factor, (long long)A->nnz);
    ilut_work W;
    spk_status st = work_alloc(ctx, &W, n, (int64_t)capd);
    if (st) {
        memset(F, 0, sizeof *F);
        return st;
    }
    W.fill = fill_factor;
    for (int64_t i = 0; i < n && !st; i++)
        st = factor_row(ctx, &W, A, i, drop_tol);
    if (!st)
        st = emit(ctx, &W, F);
    if (st) {
        spk_ilu_factors_free(F);
    } else {
        F->n = n;
        F->zero_pivots = W.zero_pivots;
    }
    work_free(&W);
    return st;
}
