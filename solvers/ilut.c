/* solvers/ilut.c -- ILUTP: incomplete LU with dual threshold dropping and column pivoting
 * (Saad, Iterative Methods for Sparse Linear Systems, 2nd ed., alg. 10.6 ILUT and sec. 10.4.4
 * ILUTP; SPARSKIT's ilutp), on the host.
 *
 * Rows are eliminated in order (IKJ): row i of A is scattered into a dense work row w indexed
 * by A's own columns, then for the columns of w whose current position k is below i, in
 * increasing k (a binary heap), w_k /= u_kk and w -= w_k U(k,:). Dropping: an L multiplier
 * or an off-diagonal U entry is dropped when |w_j| <= drop_tol ||a_i||_2; of what is left, at
 * most p entries are kept in L and p in U (the largest; ties by column), with
 * p = ceil(fill_factor nnz(A) / (2 n)), so nnz(L) + nnz(U) <= fill_factor nnz(A) + n.
 * Pivoting: before the U part is dropped, the entry of largest magnitude among positions
 * >= i is found; when |w_ii| < SPK_ILUT_PIVOT_TOL |w_max| the two columns swap positions
 * (perm, iperm), as SuperLU's threshold partial pivoting keeps the diagonal unless it is ten
 * times smaller than the largest candidate. U's rows keep A's column numbers while the
 * factorization runs (a later swap moves only positions > i) and are renumbered and sorted at
 * the end. A row with nothing left to pivot on gets u_ii = SPK_ILUT_ZERO_PIVOT ||a_i||_2 (1
 * for an empty row of A) and is counted in F->zero_pivots, as SuperLU's ILU replaces a zero
 * pivot by a small multiple of the column norm: M stays usable, the caller may report it.
 *
 * Cost: per row, O(f log f) for f entries of w (the heap and the selection), times the
 * kept length of the U rows it meets. Memory: the dense work row (n doubles, 4 n int32), the
 * factors' bound 2 p n entries held while factoring, then the factors copied to their exact
 * size. Deterministic: no threads, every choice broken by column. */
#include "ilu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* SuperLU's default DiagPivotThresh for its ILU (ilu_set_default_options): keep the
 * diagonal unless a candidate is more than ten times larger. */
#define SPK_ILUT_PIVOT_TOL 0.1
/* A pivot replaced for being zero: small against the row, as SuperLU's ILU_FillTol (1e-2)
 * scales the column's norm, so M^-1 stays bounded. */
#define SPK_ILUT_ZERO_PIVOT 1e-2

typedef struct ilut_entry {
    int32_t c;
    double  v;
} ilut_entry;

/* The factorization's state: the work row, the permutation and the factors growing row by
 * row (L by final positions, U's off-diagonal part by A's columns, its diagonal apart). */
typedef struct ilut_work {
    int64_t     n, p;
    double     *w;       /* w[c]: the work row's value at A's column c                   */
    int32_t    *where;   /* 1 when column c is in the work row                           */
    int32_t    *list;    /* the columns in the work row                                  */
    int32_t    *heap;    /* the columns at positions < i, a min-heap by position         */
    int32_t    *perm;    /* perm[k]: A's column at position k; iperm its inverse         */
    int32_t    *iperm;
    ilut_entry *cand;    /* one row's candidates for L or U                              */
    int64_t    *Lp, *Up; /* row offsets of the growing factors                           */
    ilut_entry *Le, *Ue; /* their entries, room for n p each                             */
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
    spk_free(W->Lp);
    spk_free(W->Up);
    spk_free(W->Le);
    spk_free(W->Ue);
    spk_free(W->udiag);
    memset(W, 0, sizeof *W);
}

static spk_status work_alloc(spk_context *ctx, ilut_work *W, int64_t n, int64_t p)
{
    const size_t un = (size_t)n, room = (size_t)(n * p);
    double bytes = (double)n * (sizeof(double) * 2 + sizeof(int32_t) * 6 + sizeof(ilut_entry) +
                                sizeof(int64_t) * 2) +
                   2.0 * (double)room * sizeof(ilut_entry);
    spk_status st = spk_check_memory(ctx, bytes, "ILUT of %lld rows with %lld entries a row "
                                     "in L and in U", (long long)n, (long long)p);
    if (st)
        return st;
    memset(W, 0, sizeof *W);
    W->n = n;
    W->p = p;
    W->w = spk_calloc(ctx, un + 1, sizeof *W->w);
    W->where = spk_calloc(ctx, un + 1, sizeof *W->where);
    W->list = spk_malloc(ctx, un + 1, sizeof *W->list);
    W->heap = spk_malloc(ctx, un + 1, sizeof *W->heap);
    W->perm = spk_malloc(ctx, un + 1, sizeof *W->perm);
    W->iperm = spk_malloc(ctx, un + 1, sizeof *W->iperm);
    W->cand = spk_malloc(ctx, un + 1, sizeof *W->cand);
    W->Lp = spk_calloc(ctx, un + 1, sizeof *W->Lp);
    W->Up = spk_calloc(ctx, un + 1, sizeof *W->Up);
    W->Le = spk_malloc(ctx, room + 1, sizeof *W->Le);
    W->Ue = spk_malloc(ctx, room + 1, sizeof *W->Ue);
    W->udiag = spk_malloc(ctx, un + 1, sizeof *W->udiag);
    if (!W->w || !W->where || !W->list || !W->heap || !W->perm || !W->iperm || !W->cand ||
        !W->Lp || !W->Up || !W->Le || !W->Ue || !W->udiag) {
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

static int by_magnitude(const void *a, const void *b)
{
    const ilut_entry *x = a, *y = b;
    double ax = fabs(x->v), ay = fabs(y->v);
    if (ax != ay)
        return ax < ay ? 1 : -1;
    return (x->c > y->c) - (x->c < y->c);
}

static int by_column(const void *a, const void *b)
{
    const ilut_entry *x = a, *y = b;
    return (x->c > y->c) - (x->c < y->c);
}

/* Keep the p largest of e[0..len) (all when len <= p), then sort them by column. */
static int64_t keep_largest(ilut_entry *e, int64_t len, int64_t p)
{
    if (len > p) {
        qsort(e, (size_t)len, sizeof *e, by_magnitude);
        len = p;
    }
    qsort(e, (size_t)len, sizeof *e, by_column);
    return len;
}

/* ---- one row ---------------------------------------------------------------------------- */

/* Scatter row i of A into w; the columns at positions < i go on the heap. */
static int64_t scatter_row(ilut_work *W, const spk_csr *A, int64_t i, int64_t *nheap,
                           double *norm)
{
    int64_t len = 0;
    double s = 0.0;
    *nheap = 0;
    for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) {
        int32_t c = A->colind[q];
        W->w[c] = A->val[q];
        W->where[c] = 1;
        W->list[len++] = c;
        s += A->val[q] * A->val[q];
        if (W->iperm[c] < i)
            heap_push(W->heap, nheap, c, W->iperm);
    }
    *norm = sqrt(s);
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
        for (int64_t q = W->Up[k]; q < W->Up[k + 1]; q++) {
            int32_t cc = W->Ue[q].c;
            if (!W->where[cc]) {
                W->where[cc] = 1;
                W->w[cc] = 0.0;
                W->list[len++] = cc;
                if (W->iperm[cc] < i)
                    heap_push(W->heap, &nheap, cc, W->iperm);
            }
            W->w[cc] -= m * W->Ue[q].v;
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

/* Row i: eliminate, pivot, drop, append to L and U, clear the work row. */
static spk_status factor_row(spk_context *ctx, ilut_work *W, const spk_csr *A, int64_t i,
                             double drop_tol)
{
    int64_t nheap, nl = 0, nu = 0;
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
    int32_t d = W->perm[i];
    W->udiag[i] = piv;
    for (int64_t t = 0; t < len; t++) {
        int32_t c = W->list[t];
        double v = W->w[c];
        if (c != d && W->iperm[c] < i && fabs(v) > tol)
            W->cand[nl++] = (ilut_entry){.c = W->iperm[c], .v = v};
    }
    nl = keep_largest(W->cand, nl, W->p);
    memcpy(W->Le + W->Lp[i], W->cand, (size_t)nl * sizeof *W->cand);
    W->Lp[i + 1] = W->Lp[i] + nl;
    for (int64_t t = 0; t < len; t++) {
        int32_t c = W->list[t];
        double v = W->w[c];
        if (c != d && W->iperm[c] > i && fabs(v) > tol)
            W->cand[nu++] = (ilut_entry){.c = c, .v = v};
    }
    nu = keep_largest(W->cand, nu, W->p);
    memcpy(W->Ue + W->Up[i], W->cand, (size_t)nu * sizeof *W->cand);
    W->Up[i + 1] = W->Up[i] + nu;
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
    spk_status st = spk_csr_alloc(ctx, n, n, W->Lp[n], &F->L);
    if (st)
        return st;
    st = spk_csr_alloc(ctx, n, n, W->Up[n] + n, &F->U);
    if (st)
        return st;
    for (int64_t i = 0; i < n; i++) {
        F->L.rowptr[i + 1] = W->Lp[i + 1];
        for (int64_t q = W->Lp[i]; q < W->Lp[i + 1]; q++) {
            F->L.colind[q] = W->Le[q].c;
            F->L.val[q] = W->Le[q].v;
        }
        /* U's columns to their final positions: the diagonal first, then the rest sorted */
        int64_t len = W->Up[i + 1] - W->Up[i];
        ilut_entry *e = W->Ue + W->Up[i];
        for (int64_t t = 0; t < len; t++)
            e[t].c = W->iperm[e[t].c];
        qsort(e, (size_t)len, sizeof *e, by_column);
        int64_t o = F->U.rowptr[i];
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
    /* p entries a row in L and in U: the fill bound split evenly over the two factors */
    double pd = ceil(fill_factor * (double)A->nnz / (2.0 * (double)n));
    int64_t p = pd < 1.0 ? 1 : pd > (double)n ? n : (int64_t)pd;
    ilut_work W;
    spk_status st = work_alloc(ctx, &W, n, p);
    if (st) {
        memset(F, 0, sizeof *F);
        return st;
    }
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
