/* tests/test_ilu.c -- ILU(0), IC(0) and the ILUT row on the device given (--device cpu|gpu):
 * the factors against a dense textbook ILU(0) restricted to the pattern, IC(0) against ILU(0)
 * on a symmetric matrix, the Jacobi-sweep apply against the exact one (n sweeps make the
 * Neumann series exact) and, for IC(0), symmetric, iteration counts against Jacobi's, the approximate solve, refused
 * pivots and their messages, refresh after a value update (the iterations of a fresh setup;
 * for ILU(0) and IC(0) no allocation), describe, option errors. */
#include "util.h"
#include "../solvers/ilu.h"
#include "../solvers/precond.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static spk_device dev;
static spk_context *ctx;
static double ilut_drop, ilut_fill;          /* spk_ilu_options for iterations(); 0: default */

/* b = A * ones */
static double *ones_rhs(const spk_matrix *A)
{
    const int64_t n = A->csr.nrows;
    double *one = malloc((size_t)n * sizeof *one), *b = malloc((size_t)n * sizeof *b);
    for (int64_t i = 0; i < n; i++)
        one[i] = 1.0;
    spk_csr_spmv_ref(&A->csr, 1.0, one, 0.0, b);
    free(one);
    return b;
}

/* Solve A x = A ones with method + precond (+ trisolve, sweeps); the iterations, or -1 when it
 * failed or did not converge to a true residual below 1e-7. */
static int64_t iterations(spk_matrix *A, spk_method m, spk_precond p, spk_trisolve ts,
                          int sweeps)
{
    spk_options opt;
    spk_options_default(&opt);
    opt.method = m;
    opt.precond = p;
    opt.ilu.trisolve = ts;
    opt.ilu.sweeps = sweeps;
    opt.ilu.drop_tol = ilut_drop;
    opt.ilu.fill_factor = ilut_fill;
    const int64_t n = A->csr.nrows;
    double *b = ones_rhs(A), *x = calloc((size_t)n, sizeof *x);
    spk_result res;
    const spk_status st = spk_solve(ctx, A, b, x, &opt, &res);
    const double rel = t_true_rel(A, b, x);
    int64_t its = st == SPK_OK && res.reason > 0 && rel < 1e-7 ? res.iterations : -1;
    if (st)
        fprintf(stderr, "  (%s %s: %s)\n", spk_method_str(m), spk_precond_str(p),
                spk_last_error(ctx));
    free(b), free(x);
    return its;
}

/* ---- the factors -------------------------------------------------------------------------- */

/* A random n x n matrix with a dominant diagonal (so no pivot vanishes), pattern from
 * t_random_csr plus the diagonal. */
static void random_dominant(int64_t n, uint64_t seed, int symmetric, spk_csr *out)
{
    spk_csr R;
    t_random_csr(ctx, n, n, 4, seed, &R);
    double *D = calloc((size_t)(n * n), sizeof *D);
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = R.rowptr[i]; p < R.rowptr[i + 1]; p++)
            D[i * n + R.colind[p]] = R.val[p];
    if (symmetric)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < i; j++)
                D[j * n + i] = D[i * n + j] = D[i * n + j] != 0.0 ? D[i * n + j] : D[j * n + i];
    for (int64_t i = 0; i < n; i++)
        D[i * n + i] = 10.0 + (double)(i % 3);
    int64_t nnz = 0;
    for (int64_t k = 0; k < n * n; k++)
        nnz += D[k] != 0.0;
    spk_csr_alloc(ctx, n, n, nnz, out);
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < n; j++)
            if (D[i * n + j] != 0.0) {
                out->colind[q] = (int32_t)j;
                out->val[q++] = D[i * n + j];
            }
        out->rowptr[i + 1] = q;
    }
    free(D);
    spk_csr_free(&R);
}

/* The textbook ILU(0) on a dense copy, updating only the pattern's entries (Saad alg. 10.4). */
static double *dense_ilu0(const spk_csr *A)
{
    const int64_t n = A->nrows;
    double *W = calloc((size_t)(n * n), sizeof *W);
    char *nz = calloc((size_t)(n * n), 1);
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            W[i * n + A->colind[p]] = A->val[p];
            nz[i * n + A->colind[p]] = 1;
        }
    for (int64_t i = 1; i < n; i++)
        for (int64_t k = 0; k < i; k++) {
            if (!nz[i * n + k])
                continue;
            W[i * n + k] /= W[k * n + k];
            for (int64_t j = k + 1; j < n; j++)
                if (nz[i * n + j])
                    W[i * n + j] -= W[i * n + k] * W[k * n + j];
        }
    free(nz);
    return W;
}

/* max |F - W| over L's and U's entries, and 1 when their patterns are A's triangles. */
static double factor_diff(const spk_csr *A, const spk_ilu_factors *F, const double *W,
                          int *pattern_ok)
{
    const int64_t n = A->nrows;
    double e = 0.0;
    *pattern_ok = F->L.nnz + F->U.nnz == A->nnz;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t q = F->L.rowptr[i]; q < F->L.rowptr[i + 1]; q++) {
            e = fmax(e, fabs(F->L.val[q] - W[i * n + F->L.colind[q]]));
            *pattern_ok &= F->L.colind[q] < i;
        }
        *pattern_ok &= F->U.colind[F->U.rowptr[i]] == i;
        for (int64_t q = F->U.rowptr[i]; q < F->U.rowptr[i + 1]; q++)
            e = fmax(e, fabs(F->U.val[q] - W[i * n + F->U.colind[q]]));
    }
    return e;
}

static void test_factors(void)
{
    for (int sym = 0; sym < 2; sym++) {
        spk_csr A;
        random_dominant(60, 7 + (uint64_t)sym, sym, &A);
        double *W = dense_ilu0(&A);
        spk_ilu0 *P = NULL;
        spk_ilu_factors F;
        T_CHECK(spk_ilu0_factor(ctx, &A, 0, &P, &F) == SPK_OK, "%s", spk_last_error(ctx));
        int pat = 0;
        const double e = factor_diff(&A, &F, W, &pat);
        T_CHECK(pat && e < 1e-12, "ILU(0) against the dense textbook loop: off by %g, pattern %d",
                e, pat);
        /* refactor on scaled values: the factors of 2A are L and 2U */
        for (int64_t p = 0; p < A.nnz; p++)
            A.val[p] *= 2.0;
        const uint64_t before = spk_context_alloc_count(ctx);
        T_CHECK(spk_ilu0_refactor(ctx, P, &A, &F) == SPK_OK, "%s", spk_last_error(ctx));
        T_CHECK(spk_context_alloc_count(ctx) == before, "refactor allocated");
        for (int64_t k = 0; k < 60 * 60; k++)
            W[k] *= (k % 60) >= (k / 60) ? 2.0 : 1.0;         /* U doubles, L does not */
        T_CHECK(factor_diff(&A, &F, W, &pat) < 1e-11, "refactor of 2A");
        if (sym) {
            /* IC(0) on a symmetric matrix is ILU(0) with U = D L^T */
            spk_ilu0 *Pc = NULL;
            spk_ilu_factors C;
            T_CHECK(spk_ilu0_factor(ctx, &A, 1, &Pc, &C) == SPK_OK, "%s", spk_last_error(ctx));
            double ec = 0.0;
            for (int64_t q = 0; q < C.L.nnz; q++)
                ec = fmax(ec, fabs(C.L.val[q] - F.L.val[q]));
            for (int64_t q = 0; q < C.U.nnz; q++)
                ec = fmax(ec, fabs(C.U.val[q] - F.U.val[q]) / 20.0);
            T_CHECK(C.U.nnz == F.U.nnz && ec < 1e-13, "IC(0) against ILU(0): off by %g", ec);
            spk_ilu0_free(Pc);
            spk_ilu_factors_free(&C);
        }
        spk_ilu0_free(P);
        spk_ilu_factors_free(&F);
        spk_csr_free(&A);
        free(W);
    }
}

/* ---- the apply through the row ------------------------------------------------------------ */

/* z = M^-1 r through the row of `kind` with the given trisolve, on the test's device. */
static int apply_row(spk_matrix *A, spk_precond kind, spk_trisolve ts, int sweeps,
                     const double *r, double *z)
{
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_GMRES;
    opt.ilu.trisolve = ts;
    opt.ilu.sweeps = sweeps;
    const spk_vec_ops *ops = spk_vec_ops_for(ctx->device);
    const spk_precond_ops *row = spk_precond_find(kind, ctx->device);
    const int64_t n = A->csr.nrows;
    void *state = NULL;
    double *d_r = NULL, *d_z = NULL;
    int ok = spk_matrix_prepare(ctx, A, SPK_FMT_CSR) == SPK_OK &&
             row->setup(ctx, A, &opt, &state) == SPK_OK && ops->alloc(ctx, n, &d_r) == SPK_OK &&
             ops->alloc(ctx, n, &d_z) == SPK_OK && ops->upload(ctx, n, r, d_r) == SPK_OK &&
             row->apply(state, d_r, d_z) == SPK_OK && ops->download(ctx, n, d_z, z) == SPK_OK;
    if (!ok)
        fprintf(stderr, "  apply: %s\n", spk_last_error(ctx));
    ops->free(ctx, d_r);
    ops->free(ctx, d_z);
    row->destroy(state);
    return ok;
}

/* With n sweeps the strict parts' Neumann series end (they are nilpotent): the Jacobi apply
 * is the exact one. With the default 5 it is an approximation, but not r itself. */
static void test_apply(void)
{
    const char *names[] = {"pores_1.mtx", "sherman1.mtx"};
    for (int m = 0; m < 2; m++) {
        spk_matrix *A = t_matrix(ctx, names[m]);
        const int64_t n = A->csr.nrows;
        const int sweeps = m == 0 ? (int)n : 60;   /* sherman1: 60 sweeps converge well */
        double *r = malloc((size_t)n * sizeof *r), *ze = malloc((size_t)n * sizeof *ze),
               *zj = malloc((size_t)n * sizeof *zj), *ref = malloc((size_t)n * sizeof *ref);
        uint64_t seed = 3;
        for (int64_t i = 0; i < n; i++)
            r[i] = t_randu(&seed);
        T_CHECK(apply_row(A, SPK_PRECOND_ILU0, SPK_TRISOLVE_EXACT, 0, r, ze), "%s exact", names[m]);
        T_CHECK(apply_row(A, SPK_PRECOND_ILU0, SPK_TRISOLVE_JACOBI, sweeps, r, zj), "jacobi");
        T_CHECK(t_rel_diff(zj, ze, n) < 1e-9, "%s: %d Jacobi sweeps against the exact solve: "
                "%.2g", names[m], sweeps, t_rel_diff(zj, ze, n));
        /* the exact apply solves L U z = r: check it on the host factors */
        spk_ilu0 *P = NULL;
        spk_ilu_factors F;
        spk_ilu0_factor(ctx, &A->csr, 0, &P, &F);
        double *u = calloc((size_t)n, sizeof *u);
        spk_csr_spmv_ref(&F.U, 1.0, ze, 0.0, u);            /* u = U z            */
        spk_csr_spmv_ref(&F.L, 1.0, u, 0.0, ref);           /* ref = L_s u        */
        for (int64_t i = 0; i < n; i++)
            ref[i] += u[i];                                 /* (I + L_s) U z      */
        T_CHECK(t_rel_diff(ref, r, n) < 1e-10, "%s: L U z = r off by %.2g", names[m],
                t_rel_diff(ref, r, n));
        free(u), spk_ilu0_free(P), spk_ilu_factors_free(&F);
        free(r), free(ze), free(zj), free(ref);
        spk_matrix_destroy(A);
    }
}

/* IC(0) with Jacobi sweeps is M^-1 = N^T D^-1 N: symmetric (CG's need) for every sweep count,
 * checked as r2' M^-1 r1 = r1' M^-1 r2. */
static void test_sweeps_symmetric(void)
{
    spk_matrix *A = t_matrix(ctx, "nos6.mtx");
    const int64_t n = A->csr.nrows;
    double *r1 = malloc((size_t)n * sizeof *r1), *r2 = malloc((size_t)n * sizeof *r2),
           *z1 = malloc((size_t)n * sizeof *z1), *z2 = malloc((size_t)n * sizeof *z2);
    uint64_t seed = 11;
    for (int64_t i = 0; i < n; i++)
        r1[i] = t_randu(&seed), r2[i] = t_randu(&seed);
    for (int sweeps = 1; sweeps <= 4; sweeps += 3) {
        T_CHECK(apply_row(A, SPK_PRECOND_IC0, SPK_TRISOLVE_JACOBI, sweeps, r1, z1) &&
                    apply_row(A, SPK_PRECOND_IC0, SPK_TRISOLVE_JACOBI, sweeps, r2, z2),
                "nos6 IC(0) apply");
        double a = 0.0, b = 0.0, s = 0.0;
        for (int64_t i = 0; i < n; i++)
            a += r2[i] * z1[i], b += r1[i] * z2[i], s += fabs(r2[i] * z1[i]);
        T_CHECK(fabs(a - b) <= 1e-12 * s, "IC(0), %d sweeps: r2'Mr1 = %.17g, r1'Mr2 = %.17g",
                sweeps, a, b);
    }
    free(r1), free(r2), free(z1), free(z2);
    spk_matrix_destroy(A);
}

/* ---- iterations ----------------------------------------------------------------------------- */

static void test_counts(void)
{
    const char *gm[] = {"sherman1.mtx", "orsirr_1.mtx", "pores_1.mtx"};
    for (int m = 0; m < 3; m++) {
        spk_matrix *A = t_matrix(ctx, gm[m]);
        const int64_t jac = iterations(A, SPK_METHOD_GMRES, SPK_PRECOND_JACOBI, 0, 0);
        const int64_t ilu = iterations(A, SPK_METHOD_GMRES, SPK_PRECOND_ILU0, 0, 0);
        const spk_trisolve J = SPK_TRISOLVE_JACOBI;
        const int64_t sw = iterations(A, SPK_METHOD_GMRES, SPK_PRECOND_ILU0, J, 0);
        const int64_t ilutj = iterations(A, SPK_METHOD_GMRES, SPK_PRECOND_ILUT, J, 0);
        /* ILUT dropping almost nothing is nearly A's LU: GMRES then needs a step or two */
        ilut_drop = 1e-10, ilut_fill = 50;
        const int64_t ilut = iterations(A, SPK_METHOD_GMRES, SPK_PRECOND_ILUT, 0, 0);
        ilut_drop = ilut_fill = 0;
        T_CHECK(jac > 0 && ilu > 0 && 3 * ilu < jac, "%s: ILU0-GMRES %lld iterations, "
                "Jacobi-GMRES %lld", gm[m], (long long)ilu, (long long)jac);
        T_CHECK(sw >= ilu && sw < jac, "%s: ILU0-GMRES with Jacobi sweeps %lld iterations (exact "
                "%lld, Jacobi-GMRES %lld)", gm[m], (long long)sw, (long long)ilu, (long long)jac);
        T_CHECK(ilut > 0 && ilut <= 5 && ilutj > 0, "%s: ILUT-GMRES %lld iterations with drop "
                "1e-10, %lld with the default drop and Jacobi sweeps", gm[m], (long long)ilut,
                (long long)ilutj);
        spk_matrix_destroy(A);
    }
    const char *cg[] = {"nos5.mtx", "nos6.mtx", "1138_bus.mtx"};
    for (int m = 0; m < 3; m++) {
        spk_matrix *A = t_matrix(ctx, cg[m]);
        const int64_t jac = iterations(A, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 0, 0);
        const int64_t ic = iterations(A, SPK_METHOD_CG, SPK_PRECOND_IC0, 0, 0);
        const int64_t sw = iterations(A, SPK_METHOD_CG, SPK_PRECOND_IC0, SPK_TRISOLVE_JACOBI, 0);
        T_CHECK(jac > 0 && ic > 0 && 2 * ic < jac, "%s: IC0-CG %lld iterations, Jacobi-CG %lld",
                cg[m], (long long)ic, (long long)jac);
        /* the sweeps keep M SPD: CG converges with them too */
        T_CHECK(sw >= ic, "%s: IC0-CG with Jacobi sweeps %lld iterations (exact %lld)", cg[m],
                (long long)sw, (long long)ic);
        spk_matrix_destroy(A);
    }
    /* ILUT pivots where ILU(0) meets a zero diagonal: its column permutation is applied */
    spk_matrix *W = t_matrix(ctx, "west0479.mtx");
    T_CHECK(iterations(W, SPK_METHOD_GMRES, SPK_PRECOND_ILU0, 0, 0) < 0,
            "west0479: ILU(0) refuses (%s)", spk_last_error(ctx));
    ilut_drop = 1e-8, ilut_fill = 50;
    const int64_t wt = iterations(W, SPK_METHOD_GMRES, SPK_PRECOND_ILUT, 0, 0);
    ilut_drop = ilut_fill = 0;
    T_CHECK(wt > 0 && wt <= 3, "west0479: ILUT-GMRES (drop 1e-8) %lld iterations", (long long)wt);
    spk_matrix_destroy(W);
}

/* ---- refusals ------------------------------------------------------------------------------- */

static spk_status setup_of(int64_t n, const int64_t *rp, const int32_t *ci, const double *v,
                           spk_precond p, spk_method m)
{
    spk_matrix *A = NULL;
    spk_status st = spk_matrix_from_csr(ctx, n, n, rp, ci, v, 0, &A);
    if (st)
        return st;
    spk_options opt;
    spk_options_default(&opt);
    opt.precond = p;
    opt.method = m;
    spk_solver *S = NULL;
    st = spk_solver_create(ctx, A, &opt, &S);
    spk_solver_destroy(S);
    spk_matrix_destroy(A);
    return st;
}

static void test_refusals(void)
{
    /* a(1,1) = 0 stored */
    const int64_t rp[] = {0, 2, 4};
    const int32_t ci[] = {0, 1, 0, 1};
    const double zero11[] = {0.0, 1.0, 1.0, 2.0};
    spk_status st = setup_of(2, rp, ci, zero11, SPK_PRECOND_ILU0, SPK_METHOD_GMRES);
    T_CHECK(st == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "row 1") &&
                strstr(spk_last_error(ctx), "SPK_PRECOND_ILUT"), "zero pivot: %s", spk_last_error(ctx));
    /* [1 1; 1 1]: the elimination makes row 2's pivot vanish */
    const double ones[] = {1.0, 1.0, 1.0, 1.0};
    st = setup_of(2, rp, ci, ones, SPK_PRECOND_ILU0, SPK_METHOD_GMRES);
    T_CHECK(st == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "row 2") &&
                strstr(spk_last_error(ctx), "pivot"), "vanishing pivot: %s", spk_last_error(ctx));
    /* a missing diagonal */
    const int64_t rp2[] = {0, 1, 2};
    const int32_t ci2[] = {1, 0};
    const double v2[] = {1.0, 1.0};
    st = setup_of(2, rp2, ci2, v2, SPK_PRECOND_ILU0, SPK_METHOD_GMRES);
    T_CHECK(st == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "row 1") &&
                strstr(spk_last_error(ctx), "not stored"), "missing diagonal: %s",
            spk_last_error(ctx));
    /* IC(0): [1 2; 2 1] is symmetric, not SPD: d_2 = 1 - 4 < 0 */
    const double indef[] = {1.0, 2.0, 2.0, 1.0};
    st = setup_of(2, rp, ci, indef, SPK_PRECOND_IC0, SPK_METHOD_CG);
    T_CHECK(st == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "non-positive pivot") &&
                strstr(spk_last_error(ctx), "row 2"), "IC(0) indefinite: %s", spk_last_error(ctx));
    /* IC(0) on a nonsymmetric matrix */
    const double nonsym[] = {4.0, 1.0, 2.0, 4.0};
    st = setup_of(2, rp, ci, nonsym, SPK_PRECOND_IC0, SPK_METHOD_CG);
    T_CHECK(st == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "symmetric"),
            "IC(0) nonsymmetric: %s", spk_last_error(ctx));
    /* bcsstk03 is SPD, yet IC(0) meets a negative pivot on it (it is no M-matrix) */
    spk_matrix *B = t_matrix(ctx, "bcsstk03.mtx");
    T_CHECK(iterations(B, SPK_METHOD_CG, SPK_PRECOND_IC0, 0, 0) < 0 &&
                strstr(spk_last_error(ctx), "IC(0): non-positive pivot"),
            "bcsstk03: %s", spk_last_error(ctx));
    spk_matrix_destroy(B);
    /* an option out of range */
    spk_matrix *A = t_matrix(ctx, "pores_1.mtx");
    spk_options opt;
    spk_options_default(&opt);
    opt.precond = SPK_PRECOND_ILU0;
    opt.ilu.trisolve = (spk_trisolve)7;
    spk_solver *S = NULL;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_ERR_ARG &&
                strstr(spk_last_error(ctx), "trisolve"), "trisolve 7: %s", spk_last_error(ctx));
    opt.ilu.trisolve = SPK_TRISOLVE_AUTO;
    opt.ilu.sweeps = -1;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_ERR_ARG, "sweeps -1");
    spk_matrix_destroy(A);
}

/* ---- refresh -------------------------------------------------------------------------------- */

/* After a value update, refresh recomputes the factors on the kept pattern: the solve takes
 * the iterations of a fresh setup on the new values (the same x), and from the second
 * refresh on nothing is allocated. */
static void refresh_case(const char *name, spk_method m, spk_precond p, spk_trisolve ts)
{
    const int in_place = p != SPK_PRECOND_ILUT;      /* ILUT's pattern follows the values */
    spk_matrix *A = t_matrix(ctx, name);
    const int64_t n = A->csr.nrows, nnz = A->csr.nnz;
    spk_options opt;
    spk_options_default(&opt);
    opt.method = m;
    opt.precond = p;
    opt.ilu.trisolve = ts;
    spk_solver *S = NULL;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
    double *b = ones_rhs(A), *x = calloc((size_t)n, sizeof *x),
           *val = malloc((size_t)nnz * sizeof *val), *orig = malloc((size_t)nnz * sizeof *orig);
    memcpy(orig, A->csr.val, (size_t)nnz * sizeof *orig);
    uint64_t before = 0;
    for (int round = 0; round < 3 && S; round++) {
        if (round > 0) {
            /* rows and columns scaled alike (symmetry kept), differently each round */
            for (int64_t i = 0; i < n; i++)
                for (int64_t q = A->csr.rowptr[i]; q < A->csr.rowptr[i + 1]; q++) {
                    const int64_t j = A->csr.colind[q];
                    const double si = 1.0 + 0.5 * round * (i % 7 == 0),
                                 sj = 1.0 + 0.5 * round * (j % 7 == 0);
                    val[q] = orig[q] * si * sj;
                }
            if (round == 2)
                before = spk_context_alloc_count(ctx);
            T_CHECK(spk_matrix_update_values(ctx, A, nnz, val, 0) == SPK_OK, "%s",
                    spk_last_error(ctx));
            T_CHECK(spk_solver_refresh(S) == SPK_OK, "refresh: %s", spk_last_error(ctx));
            if (round == 2 && in_place)
                T_CHECK(spk_context_alloc_count(ctx) == before, "%s %s: the second refresh "
                        "allocated %llu times", name, spk_precond_str(p),
                        (unsigned long long)(spk_context_alloc_count(ctx) - before));
        }
        spk_result res;
        T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0, "round %d: %s",
                round, spk_last_error(ctx));
        const int64_t its = res.iterations;
        spk_result_free(&res);
        double *xf = calloc((size_t)n, sizeof *xf);
        const int64_t fresh = t_fresh_solve(ctx, A, b, &opt, xf);
        T_CHECK(fresh == its && t_rel_diff(x, xf, n) < 1e-9, "%s %s round %d: "
                "refreshed %lld iterations, fresh %lld, x differs by %.2g", name,
                spk_precond_str(p), round, (long long)its, (long long)fresh,
                t_rel_diff(x, xf, n));
        free(xf);
    }
    free(b), free(x), free(val), free(orig);
    spk_solver_destroy(S);
    spk_matrix_destroy(A);
}

static void test_refresh(void)
{
    refresh_case("sherman1.mtx", SPK_METHOD_GMRES, SPK_PRECOND_ILU0, SPK_TRISOLVE_EXACT);
    refresh_case("sherman1.mtx", SPK_METHOD_GMRES, SPK_PRECOND_ILU0, SPK_TRISOLVE_JACOBI);
    refresh_case("nos6.mtx", SPK_METHOD_CG, SPK_PRECOND_IC0, SPK_TRISOLVE_EXACT);
    refresh_case("nos6.mtx", SPK_METHOD_CG, SPK_PRECOND_IC0, SPK_TRISOLVE_JACOBI);
    refresh_case("sherman1.mtx", SPK_METHOD_GMRES, SPK_PRECOND_ILUT, SPK_TRISOLVE_EXACT);
}

/* ---- describe ------------------------------------------------------------------------------- */

static void test_describe(void)
{
    spk_matrix *A = t_matrix(ctx, "sherman1.mtx");
    const spk_trisolve ts[] = {SPK_TRISOLVE_AUTO, SPK_TRISOLVE_JACOBI};
    const char *want[] = {"trisolve exact", "trisolve jacobi, 3 sweeps"};
    for (int k = 0; k < 2; k++) {
        spk_options opt;
        spk_options_default(&opt);
        opt.method = SPK_METHOD_GMRES;
        opt.precond = SPK_PRECOND_ILU0;
        opt.ilu.trisolve = ts[k];
        opt.ilu.sweeps = 3;
        spk_solver *S = NULL;
        T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
        char buf[512];
        spk_solver_precond_describe(S, buf, sizeof buf);
        T_CHECK(strstr(buf, "ILU(0)") && strstr(buf, "= 1375 + 2375 = 3750 (fill 1.00") &&
                    strstr(buf, want[k]) && strstr(buf, "memory"), "describe: %s", buf);
        spk_solver_destroy(S);
    }
    spk_matrix_destroy(A);
}

/* trisolve AUTO by device and size: exact on the CPU; on the GPU the sweeps from 32768 rows on
 * for ILU(0) (a 40,000-row poisson2d), exact below (sherman1, test_describe) and for ILUT.
 * Either way the solve converges to the true residual asked for. */
static void test_auto_rule(void)
{
    spk_matrix *A = NULL;
    T_CHECK(spk_matrix_generate(ctx, "poisson2d:200", &A) == SPK_OK, "%s", spk_last_error(ctx));
    const int64_t n = 40000;
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    for (int64_t i = 0; i < n; i++)
        b[i] = 1.0 + (double)(i % 7);
    const spk_precond kinds[] = {SPK_PRECOND_ILU0, SPK_PRECOND_ILUT};
    for (int k = 0; k < 2 && A; k++) {
        spk_options opt;
        spk_options_default(&opt);
        opt.method = SPK_METHOD_GMRES;
        opt.precond = kinds[k];
        const char *want = dev == SPK_DEVICE_CUDA && k == 0 ? "trisolve jacobi, 5 sweeps"
                                                            : "trisolve exact";
        spk_solver *S = NULL;
        T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
        char buf[512] = "";
        spk_solver_precond_describe(S, buf, sizeof buf);
        T_CHECK(strstr(buf, want) != NULL, "auto on poisson2d:200 (%s): want '%s': %s",
                spk_precond_str(kinds[k]), want, buf);
        spk_result res;
        T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0 &&
                    res.true_rel <= 1e-8, "auto %s on poisson2d:200: %s after %lld, true %.2e",
                spk_precond_str(kinds[k]), spk_reason_str(res.reason), (long long)res.iterations,
                res.true_rel);
        spk_result_free(&res);
        spk_solver_destroy(S);
    }
    free(b), free(x);
    spk_matrix_destroy(A);
}

int main(int argc, char **argv)
{
    dev = t_device_from_args(argc, argv);
    ctx = t_context(dev);
    /* --quick (the sanitizers' runs): the iteration-count comparisons left out */
    int quick = 0;
    for (int i = 1; i < argc; i++)
        quick |= strcmp(argv[i], "--quick") == 0;
    if (dev == SPK_DEVICE_CPU)                      /* host code: once is enough */
        test_factors();
    test_apply();
    test_sweeps_symmetric();
    if (!quick)
        test_counts();
    test_auto_rule();
    test_refusals();
    test_refresh();
    test_describe();
    spk_context_destroy(ctx);
    return t_done("test_ilu");
}
