/* tests/test_ilut.c -- ILUTP on the host (solvers/ilut.c): with nothing dropped it is the
 * exact LU of A(:, perm), checked by multiplying the factors; with pivoting it factors
 * matrices whose diagonal is zero; on real matrices the default thresholds keep the fill
 * bound and a small ||A(:, perm) - L U||_F / ||A||_F; the factors are the same bit for bit
 * on every run; bad arguments and every allocation failure return a status with F zeroed. */
#include "util.h"
#include "../solvers/ilu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static spk_context *ctx;

/* The factors' structure: sorted rows, L strictly lower, U upper with its diagonal first,
 * every value finite, perm (when there is one) a permutation. */
static int well_formed(const spk_ilu_factors *F)
{
    const int64_t n = F->n;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t q = F->L.rowptr[i]; q < F->L.rowptr[i + 1]; q++)
            if (F->L.colind[q] >= i ||
                (q > F->L.rowptr[i] && F->L.colind[q] <= F->L.colind[q - 1]) ||
                !isfinite(F->L.val[q]))
                return 0;
        int64_t u0 = F->U.rowptr[i];
        if (u0 >= F->U.rowptr[i + 1] || F->U.colind[u0] != i || F->U.val[u0] == 0.0)
            return 0;
        for (int64_t q = u0; q < F->U.rowptr[i + 1]; q++)
            if ((q > u0 && F->U.colind[q] <= F->U.colind[q - 1]) || !isfinite(F->U.val[q]))
                return 0;
    }
    if (F->perm) {
        char *seen = calloc((size_t)n + 1, 1);
        int ok = 1;
        for (int64_t k = 0; k < n; k++) {
            if (F->perm[k] < 0 || F->perm[k] >= n || seen[F->perm[k]])
                ok = 0;
            else
                seen[F->perm[k]] = 1;
        }
        free(seen);
        return ok;
    }
    return 1;
}

/* ||A(:, perm) - L U||_F / ||A||_F, a row of L U at a time in a dense accumulator. */
static double factor_error(const spk_csr *A, const spk_ilu_factors *F)
{
    const int64_t n = A->nrows;
    double *acc = calloc((size_t)n + 1, sizeof *acc);
    int32_t *iperm = malloc(((size_t)n + 1) * sizeof *iperm);
    for (int64_t k = 0; k < n; k++)
        iperm[F->perm ? F->perm[k] : k] = (int32_t)k;
    long double ee = 0, aa = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) {
            acc[iperm[A->colind[q]]] += A->val[q];
            aa += (long double)A->val[q] * A->val[q];
        }
        for (int64_t q = F->U.rowptr[i]; q < F->U.rowptr[i + 1]; q++)
            acc[F->U.colind[q]] -= F->U.val[q];
        for (int64_t q = F->L.rowptr[i]; q < F->L.rowptr[i + 1]; q++) {
            int32_t k = F->L.colind[q];
            for (int64_t r = F->U.rowptr[k]; r < F->U.rowptr[k + 1]; r++)
                acc[F->U.colind[r]] -= F->L.val[q] * F->U.val[r];
        }
        for (int64_t j = 0; j < n; j++) {
            ee += (long double)acc[j] * acc[j];
            acc[j] = 0.0;
        }
    }
    free(acc);
    free(iperm);
    return aa > 0 ? (double)sqrtl(ee / aa) : (double)sqrtl(ee);
}

static int same_factors(const spk_ilu_factors *a, const spk_ilu_factors *b)
{
    const spk_csr *x[2] = {&a->L, &a->U}, *y[2] = {&b->L, &b->U};
    if (a->n != b->n || !a->perm != !b->perm)
        return 0;
    for (int f = 0; f < 2; f++) {
        if (x[f]->nnz != y[f]->nnz ||
            memcmp(x[f]->rowptr, y[f]->rowptr, (size_t)(a->n + 1) * sizeof(int64_t)) ||
            memcmp(x[f]->colind, y[f]->colind, (size_t)x[f]->nnz * sizeof(int32_t)) ||
            memcmp(x[f]->val, y[f]->val, (size_t)x[f]->nnz * sizeof(double)))
            return 0;
    }
    return !a->perm || !memcmp(a->perm, b->perm, (size_t)a->n * sizeof(int32_t));
}

/* A CSR from a dense row-major array (zeros left out). */
static void csr_of_dense(int64_t n, const double *D, spk_csr *A)
{
    int64_t nnz = 0;
    for (int64_t k = 0; k < n * n; k++)
        nnz += D[k] != 0.0;
    if (spk_csr_alloc(ctx, n, n, nnz, A)) {
        fprintf(stderr, "csr_of_dense: %s\n", spk_last_error(ctx));
        exit(2);
    }
    int64_t w = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < n; j++)
            if (D[i * n + j] != 0.0) {
                A->colind[w] = (int32_t)j;
                A->val[w++] = D[i * n + j];
            }
        A->rowptr[i + 1] = w;
    }
}

/* ---- exact LU when nothing is dropped --------------------------------------------------- */

static void test_exact(void)
{
    /* random 60 x 60, half the entries zero, the diagonal among them, a transversal off
     * the diagonal so that A is nonsingular: pivoting happens, nothing is dropped */
    for (uint64_t seed = 1; seed <= 4; seed++) {
        enum { N = 60 };
        static double D[N * N];
        uint64_t rs = seed;
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                D[i * N + j] = i == j || t_randu(&rs) < 0.0 ? 0.0 : t_randu(&rs);
        for (int i = 0; i < N; i++)
            D[i * N + (i * 7 + 3) % N] = 1.0 + t_randu(&rs);
        spk_csr A;
        spk_ilu_factors F;
        csr_of_dense(N, D, &A);
        spk_status st = spk_ilut_factor(ctx, &A, 0.0, 1e4, &F);
        T_CHECK(st == SPK_OK, "seed %llu: %s", (unsigned long long)seed, spk_last_error(ctx));
        if (st == SPK_OK) {
            double err = factor_error(&A, &F);
            T_CHECK(well_formed(&F) && F.perm && F.zero_pivots == 0,
                    "seed %llu: factors malformed", (unsigned long long)seed);
            T_CHECK(err < 1e-12, "seed %llu: ||A(:,perm) - LU|| / ||A|| = %.3e",
                    (unsigned long long)seed, err);
        }
        spk_ilu_factors_free(&F);
        spk_csr_free(&A);
    }
    /* [[0 1] [1 0]] blocks coupled along the diagonal: every diagonal entry is zero */
    enum { N = 8 };
    double D[N * N] = {0};
    for (int b = 0; b < N; b += 2) {
        D[b * N + b + 1] = 1.0 + b;
        D[(b + 1) * N + b] = 2.0 - 0.1 * b;
        if (b + 2 < N)
            D[(b + 1) * N + b + 2] = 0.5;
    }
    spk_csr A;
    spk_ilu_factors F;
    csr_of_dense(N, D, &A);
    spk_status st = spk_ilut_factor(ctx, &A, 0.0, 100.0, &F);
    T_CHECK(st == SPK_OK, "zero diagonal: %s", spk_last_error(ctx));
    T_CHECK(F.perm != NULL, "a zero diagonal must pivot");
    T_CHECK(F.zero_pivots == 0, "%lld zero pivots on a nonsingular matrix",
            (long long)F.zero_pivots);
    T_CHECK(well_formed(&F), "zero diagonal: factors malformed");
    T_CHECK(factor_error(&A, &F) < 1e-14, "zero diagonal: error %.3e", factor_error(&A, &F));
    spk_ilu_factors_free(&F);
    spk_csr_free(&A);
}

/* ---- real matrices, each with zero diagonal entries ------------------------------------ */

static void test_real(const char *name, double fill, double max_err)
{
    spk_csr A;
    spk_ilu_factors F, G;
    t_read_csr(ctx, name, &A);
    spk_status st = spk_ilut_factor(ctx, &A, 1e-4, fill, &F);
    T_CHECK(st == SPK_OK, "%s: %s", name, spk_last_error(ctx));
    if (st == SPK_OK) {
        double err = factor_error(&A, &F);
        int64_t nz = F.L.nnz + F.U.nnz;
        T_CHECK(well_formed(&F), "%s: factors malformed", name);
        T_CHECK(F.perm != NULL, "%s: zero diagonal entries, yet no column moved", name);
        T_CHECK(nz <= fill * (double)A.nnz + (double)A.nrows, "%s: nnz(L) + nnz(U) = %lld",
                name, (long long)nz);
        T_CHECK(err < max_err, "%s: ||A(:,perm) - LU|| / ||A|| = %.3e", name, err);
        printf("%s, fill_factor %g: n %lld, nnz(A) %lld, nnz(L)+nnz(U) %lld (%.2fx), error "
               "%.3e, %s, %lld zero pivots\n", name, fill, (long long)A.nrows,
               (long long)A.nnz, (long long)nz,
               (double)nz / (double)A.nnz, err, F.perm ? "pivoted" : "not pivoted",
               (long long)F.zero_pivots);
        st = spk_ilut_factor(ctx, &A, 1e-4, fill, &G);
        T_CHECK(st == SPK_OK && same_factors(&F, &G), "%s: a second run differs", name);
        spk_ilu_factors_free(&G);
    }
    spk_ilu_factors_free(&F);
    spk_csr_free(&A);
}

/* ---- degenerate input, bad arguments, allocation failures ------------------------------- */

static void test_edges(void)
{
    spk_ilu_factors F;
    spk_csr A;
    memset(&F, 0xff, sizeof F);
    T_CHECK(spk_ilut_factor(ctx, NULL, 1e-4, 10, &F) == SPK_ERR_ARG && F.L.rowptr == NULL,
            "NULL A");
    T_CHECK(spk_ilut_factor(ctx, NULL, 1e-4, 10, NULL) == SPK_ERR_ARG, "NULL F");
    t_random_csr(ctx, 5, 6, 2, 3, &A);
    T_CHECK(spk_ilut_factor(ctx, &A, 1e-4, 10, &F) == SPK_ERR_ARG &&
            strstr(spk_last_error(ctx), "square"), "rectangular: %s", spk_last_error(ctx));
    spk_csr_free(&A);
    t_random_csr(ctx, 5, 5, 2, 3, &A);
    T_CHECK(spk_ilut_factor(ctx, &A, -1.0, 10, &F) == SPK_ERR_ARG, "negative drop_tol");
    T_CHECK(spk_ilut_factor(ctx, &A, NAN, 10, &F) == SPK_ERR_ARG, "NaN drop_tol");
    T_CHECK(spk_ilut_factor(ctx, &A, 1e-4, 0.0, &F) == SPK_ERR_ARG, "zero fill_factor");
    T_CHECK(F.L.rowptr == NULL && F.U.rowptr == NULL && F.perm == NULL, "F not zeroed");
    spk_csr_free(&A);

    /* 0 x 0 */
    spk_csr E;
    spk_csr_alloc(ctx, 0, 0, 0, &E);
    T_CHECK(spk_ilut_factor(ctx, &E, 1e-4, 10, &F) == SPK_OK && F.n == 0, "0 x 0: %s",
            spk_last_error(ctx));
    spk_ilu_factors_free(&F);
    spk_csr_free(&E);

    /* an empty row: singular, factored with one replaced pivot */
    double D[9] = {2, 1, 0, 0, 0, 0, 1, 0, 3};
    csr_of_dense(3, D, &A);
    spk_status st = spk_ilut_factor(ctx, &A, 1e-4, 10, &F);
    T_CHECK(st == SPK_OK && F.zero_pivots == 1 && well_formed(&F), "empty row: %s, %lld",
            spk_last_error(ctx), (long long)F.zero_pivots);
    spk_ilu_factors_free(&F);
    spk_csr_free(&A);

    /* an Inf in A is refused with the row named */
    double Dinf[4] = {1, 0, INFINITY, 1};
    csr_of_dense(2, Dinf, &A);
    st = spk_ilut_factor(ctx, &A, 1e-4, 10, &F);
    T_CHECK(st == SPK_ERR_ARG && strstr(spk_last_error(ctx), "row 2") && F.L.rowptr == NULL,
            "Inf: %s", spk_last_error(ctx));
    spk_csr_free(&A);

    /* allocation k fails, k = 1, 2, ... until the factorization succeeds */
    t_read_csr(ctx, "west0479.mtx", &A);
    int bad = 0, done = 0;
    for (int k = 1; k <= 40 && !done; k++) {
        ctx->fail_alloc_at = spk_context_alloc_count(ctx) + (uint64_t)k;
        st = spk_ilut_factor(ctx, &A, 1e-4, 10, &F);
        ctx->fail_alloc_at = 0;
        if (st == SPK_OK)
            done = 1;
        else
            bad += st != SPK_ERR_NOMEM || F.L.rowptr || F.U.rowptr || F.perm;
        spk_ilu_factors_free(&F);
    }
    T_CHECK(done && bad == 0, "allocation failures: %d bad statuses, done %d", bad, done);
    spk_csr_free(&A);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    ctx = t_context(SPK_DEVICE_CPU);
    test_exact();
    test_real("west0479.mtx", 10.0, 5e-2);
    test_real("e05r0100.mtx", 10.0, 1e-3);
    test_real("cavity14.mtx", 10.0, 1e-3);
    test_real("cavity14.mtx", 2.0, 1.0);           /* the fill bound binds: still within it */
    test_edges();
    spk_context_destroy(ctx);
    return t_done("test_ilut");
}
