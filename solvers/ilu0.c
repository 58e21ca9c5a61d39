/* solvers/ilu0.c -- ILU(0) and IC(0) on the host, on A's own pattern (Saad, Iterative Methods
 * for Sparse Linear Systems, 2nd ed., sec. 10.3.2, alg. 10.4 "ILU(0)", the IKJ variant; IC(0)
 * as its symmetric case, sec. 10.3.4 and Meijerink & van der Vorst 1977).
 *
 * ILU(0): L unit lower and U upper with the pattern of A's lower and upper triangles, such
 * that (L U)_ij = a_ij on A's pattern. Row i, in column order k < i of its lower part:
 *     a_ik /= a_kk;  a_ij -= a_ik a_kj  for each j > k in row k that row i holds.
 * IC(0), A SPD: A ~= L D L^T with the same property, row by row (left-looking):
 *     l_ik = (a_ik - sum_{m < k} l_im d_m l_km) / d_k,   d_i = a_ii - sum_{m < i} l_im^2 d_m,
 * the sums over the columns m that rows i and k share. It is stored as ILU's factors with
 * U = D L^T, so one apply serves both, and M = L D L^T is symmetric to the last bit (U's
 * entries are d_i l_ji, the same products the backward solve divides back).
 *
 * The symbolic part -- the diagonal positions, the scatter map of a row, where each entry of
 * L and U comes from in A -- is made once; a refactorization after a value update writes the
 * same arrays (no allocation). Cost: sum over rows of (entries of the row x entries of the
 * rows it eliminates with), O(nnz) memory beyond the factors. */
#include "ilu.h"

#include <math.h>
#include <string.h>

/* A pivot of at most this times its row's largest |a_ij| is refused: the factor would amplify
 * rounding by 1e13 or more, and the preconditioned system would be noise. */
#define ILU_PIVOT_TINY 1e-13

struct spk_ilu0 {
    int      cholesky;      /* IC(0): L D L^T from the lower triangle                          */
    int64_t  n, nnz;
    int64_t *diag;          /* n: the position of a_ii in A                                   */
    int64_t *iw;            /* n: column -> position in the current row, -1 elsewhere          */
    int64_t *lsrc;          /* nnz(L): the entry of A (of w) each L entry takes               */
    int64_t *usrc;          /* nnz(U): ILU: the entry (i, j) of A; IC: the entry (j, i)        */
    double  *w;             /* nnz: the factor's values in A's pattern                         */
};

void spk_ilu0_free(spk_ilu0 *P)
{
    if (!P)
        return;
    spk_free(P->diag);
    spk_free(P->iw);
    spk_free(P->lsrc);
    spk_free(P->usrc);
    spk_free(P->w);
    spk_free(P);
}

static const char *kind_name(const spk_ilu0 *P) { return P->cholesky ? "IC(0)" : "ILU(0)"; }

static const char *cure_of(const spk_ilu0 *P)
{
    return P->cholesky ? "A is not SPD or IC(0) breaks down on it; try SPK_PRECOND_ILUT or "
                         "SPK_PRECOND_ILU0 with GMRES, or SPK_PRECOND_JACOBI"
                       : "try SPK_PRECOND_ILUT (it pivots and keeps fill), or SPK_PRECOND_JACOBI";
}

static spk_status pivot_fail(spk_context *ctx, const spk_ilu0 *P, int64_t i, double piv,
                             double rowmax)
{
    const char *cure = cure_of(P);
    if (!isfinite(piv))
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "%s: the factor overflows at row %lld (pivot "
                        "%g); %s", kind_name(P), (long long)i + 1, piv, cure);
    return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "%s: %s pivot %.3g at row %lld (the row's largest "
                    "|a_ij| is %.3g); %s", kind_name(P),
                    P->cholesky && piv <= 0.0 ? "non-positive" : piv == 0.0 ? "zero" : "vanishing",
                    piv, (long long)i + 1, rowmax, cure);
}

/* The pivot of row i is usable: ILU nonzero, IC positive, both above the vanishing bound. */
static int pivot_ok(const spk_ilu0 *P, double piv, double rowmax)
{
    if (!isfinite(piv))
        return 0;
    const double bound = ILU_PIVOT_TINY * rowmax;
    return P->cholesky ? piv > bound : fabs(piv) > bound;
}

static double row_absmax(const spk_csr *A, int64_t i)
{
    double m = 0.0;
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
        m = fmax(m, fabs(A->val[p]));
    return m;
}

/* Row i of ILU(0), in place in w (IKJ). */
static spk_status ilu_row(spk_context *ctx, spk_ilu0 *P, const spk_csr *A, int64_t i)
{
    const int64_t *Ap = A->rowptr;
    const int32_t *Aj = A->colind;
    double *w = P->w;
    for (int64_t p = Ap[i]; p < P->diag[i]; p++) {
        const int64_t k = Aj[p];
        w[p] /= w[P->diag[k]];                          /* l_ik = a_ik / u_kk               */
        for (int64_t q = P->diag[k] + 1; q < Ap[k + 1]; q++) {
            const int64_t at = P->iw[Aj[q]];
            if (at >= 0)
                w[at] -= w[p] * w[q];                   /* a_ij -= l_ik u_kj on the pattern */
        }
    }
    for (int64_t p = Ap[i]; p < Ap[i + 1]; p++)
        if (!isfinite(w[p]))
            return pivot_fail(ctx, P, i, w[p], row_absmax(A, i));
    return SPK_OK;
}

/* Row i of IC(0): its strict lower part l_ik in w, d_i at the diagonal. */
static spk_status ic_row(spk_context *ctx, spk_ilu0 *P, const spk_csr *A, int64_t i)
{
    const int64_t *Ap = A->rowptr;
    const int32_t *Aj = A->colind;
    double *w = P->w;
    double d = w[P->diag[i]];
    for (int64_t p = Ap[i]; p < P->diag[i]; p++) {
        const int64_t k = Aj[p];
        double s = w[p];
        for (int64_t q = Ap[k]; q < P->diag[k]; q++) {  /* m < k in both rows i and k       */
            const int64_t at = P->iw[Aj[q]];
            if (at >= 0)
                s -= w[at] * w[P->diag[Aj[q]]] * w[q];  /* l_im d_m l_km                    */
        }
        w[p] = s / w[P->diag[k]];
        d -= w[p] * w[p] * w[P->diag[k]];
    }
    w[P->diag[i]] = d;
    for (int64_t p = Ap[i]; p <= P->diag[i]; p++)
        if (!isfinite(w[p]))
            return pivot_fail(ctx, P, i, w[p], row_absmax(A, i));
    return SPK_OK;
}

/* The numeric factorization into P->w, then L's and U's values from it. */
static spk_status factor_values(spk_context *ctx, spk_ilu0 *P, const spk_csr *A,
                                spk_ilu_factors *F)
{
    memcpy(P->w, A->val, (size_t)P->nnz * sizeof *P->w);
    for (int64_t i = 0; i < P->n; i++) {
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            P->iw[A->colind[p]] = p;
        spk_status st = P->cholesky ? ic_row(ctx, P, A, i) : ilu_row(ctx, P, A, i);
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            P->iw[A->colind[p]] = -1;
        if (st)
            return st;
        const double piv = P->w[P->diag[i]], rowmax = row_absmax(A, i);
        if (!pivot_ok(P, piv, rowmax))
            return pivot_fail(ctx, P, i, piv, rowmax);
    }
    for (int64_t q = 0; q < F->L.nnz; q++)
        F->L.val[q] = P->w[P->lsrc[q]];
    for (int64_t i = 0; i < P->n; i++)
        for (int64_t q = F->U.rowptr[i]; q < F->U.rowptr[i + 1]; q++)
            F->U.val[q] = !P->cholesky || q == F->U.rowptr[i]
                              ? P->w[P->usrc[q]]
                              : P->w[P->diag[i]] * P->w[P->usrc[q]];   /* u_ij = d_i l_ji */
    return SPK_OK;
}

/* The position of (j, i) in A, which holds it (IC: the pattern is symmetric). */
static int64_t mirror_of(const spk_csr *A, int64_t i, int64_t j)
{
    int64_t lo = A->rowptr[j], hi = A->rowptr[j + 1] - 1;
    while (lo <= hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (A->colind[mid] == i)
            return mid;
        if (A->colind[mid] < i)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* The diagonal positions (a missing a_ii is a zero pivot), L's and U's patterns and where
 * each of their entries comes from. */
static spk_status symbolic(spk_context *ctx, spk_ilu0 *P, const spk_csr *A, spk_ilu_factors *F)
{
    const int64_t n = P->n;
    int64_t nl = 0;
    for (int64_t i = 0; i < n; i++) {
        P->diag[i] = -1;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            if (A->colind[p] == i)
                P->diag[i] = p;
            nl += A->colind[p] < i;
        }
        if (P->diag[i] < 0)
            return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "%s: zero pivot at row %lld (a(%lld,%lld) "
                            "is not stored); %s", kind_name(P), (long long)i + 1,
                            (long long)i + 1, (long long)i + 1, cure_of(P));
        P->iw[i] = -1;
    }
    spk_status st = spk_csr_alloc(ctx, n, n, nl, &F->L);
    if (!st)
        st = spk_csr_alloc(ctx, n, n, A->nnz - nl, &F->U);
    if (!st && !(P->lsrc = spk_malloc(ctx, (size_t)(nl > 0 ? nl : 1), sizeof *P->lsrc)))
        st = SPK_ERR_NOMEM;
    if (!st && !(P->usrc = spk_malloc(ctx, (size_t)(A->nnz - nl > 0 ? A->nnz - nl : 1),
                                      sizeof *P->usrc)))
        st = SPK_ERR_NOMEM;
    if (st)
        return st == SPK_ERR_NOMEM ? spk_fail(ctx, st, "%s: source maps of %lld entries: out of "
                                              "memory", kind_name(P), (long long)A->nnz) : st;
    int64_t ql = 0, qu = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const int64_t j = A->colind[p];
            if (j < i) {
                F->L.colind[ql] = (int32_t)j;
                P->lsrc[ql++] = p;
            } else {
                F->U.colind[qu] = (int32_t)j;
                P->usrc[qu] = P->cholesky && j > i ? mirror_of(A, i, j) : p;
                if (P->usrc[qu++] < 0)
                    return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "IC(0) needs a symmetric "
                                    "pattern: a(%lld,%lld) is stored, a(%lld,%lld) is not; try "
                                    "SPK_PRECOND_ILU0", (long long)i + 1, (long long)j + 1,
                                    (long long)j + 1, (long long)i + 1);
            }
        }
        F->L.rowptr[i + 1] = ql;
        F->U.rowptr[i + 1] = qu;
    }
    return SPK_OK;
}

spk_status spk_ilu0_factor(spk_context *ctx, const spk_csr *A, int cholesky, spk_ilu0 **plan,
                           spk_ilu_factors *F)
{
    *plan = NULL;
    memset(F, 0, sizeof *F);
    if (A->nrows != A->ncols)
        return spk_fail(ctx, SPK_ERR_ARG, "%s needs a square matrix, not %lld x %lld",
                        cholesky ? "IC(0)" : "ILU(0)", (long long)A->nrows, (long long)A->ncols);
    spk_ilu0 *P = spk_calloc(ctx, 1, sizeof *P);
    if (!P)
        return spk_fail(ctx, SPK_ERR_NOMEM, "incomplete factorization: out of memory");
    P->cholesky = cholesky;
    P->n = F->n = A->nrows;
    P->nnz = A->nnz;
    const size_t n1 = (size_t)(P->n > 0 ? P->n : 1), nz1 = (size_t)(P->nnz > 0 ? P->nnz : 1);
    spk_status st = SPK_OK;
    if (!(P->diag = spk_malloc(ctx, n1, sizeof *P->diag)) ||
        !(P->iw = spk_malloc(ctx, n1, sizeof *P->iw)) ||
        !(P->w = spk_malloc(ctx, nz1, sizeof *P->w)))
        st = spk_fail(ctx, SPK_ERR_NOMEM, "%s: work arrays of %lld rows, %lld entries: out of "
                      "memory", kind_name(P), (long long)P->n, (long long)P->nnz);
    if (!st)
        st = symbolic(ctx, P, A, F);
    if (!st)
        st = factor_values(ctx, P, A, F);
    if (st) {
        spk_ilu0_free(P);
        spk_ilu_factors_free(F);
        return st;
    }
    *plan = P;
    return SPK_OK;
}

spk_status spk_ilu0_refactor(spk_context *ctx, spk_ilu0 *P, const spk_csr *A,
                             spk_ilu_factors *F)
{
    if (A->nrows != P->n || A->nnz != P->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "%s refactorization: the matrix is %lld x %lld with "
                        "%lld entries, the factors were made for %lld rows and %lld entries",
                        kind_name(P), (long long)A->nrows, (long long)A->ncols,
                        (long long)A->nnz, (long long)P->n, (long long)P->nnz);
    return factor_values(ctx, P, A, F);
}
