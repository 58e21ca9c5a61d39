/* tests/test_pc.c -- the block-Jacobi and Chebyshev preconditioners on the device given
 * (--device cpu|gpu): each apply against a reference the test computes itself (the block
 * inverses by Gauss-Jordan; the Chebyshev residual polynomial by the three-term recurrence of
 * T_K), M symmetric and positive for CG, iteration counts against Jacobi-CG, block-Jacobi with
 * d = 1 against Jacobi, refresh after a value update against a fresh setup and without
 * allocation, and the refusals (a singular block, a block that is not SPD for CG, a zero
 * diagonal, options out of range) with messages that name the culprit. */
#include "util.h"
#include "../solvers/amg.h"
#include "../solvers/precond.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static spk_device dev;
static spk_context *ctx;

typedef struct run {
    int64_t    its;
    spk_reason reason;
    double     true_rel;
} run;

static run solve_with(spk_matrix *A, spk_method m, spk_precond pc, int block_size, int degree,
                      uint64_t seed)
{
    const int64_t n = A->csr.nrows;
    spk_options opt;
    spk_options_default(&opt);
    opt.method = m;
    opt.precond = pc;
    opt.block_size = block_size;
    opt.poly_degree = degree;
    double *b = t_rand_vec(n, seed), *x = calloc((size_t)n, sizeof *x);
    spk_result res;
    run r = {-1, SPK_REASON_NONE, INFINITY};
    const spk_status st = spk_solve(ctx, A, b, x, &opt, &res);
    T_CHECK(st == SPK_OK, "solve with %s: %s", spk_precond_str(pc), spk_last_error(ctx));
    if (!st) {
        r.its = res.iterations;
        r.reason = res.reason;
        r.true_rel = t_true_rel(A, b, x);
    }
    free(b);
    free(x);
    return r;
}

/* z = M^-1 r through the row of `pc`, set up for A with opt, on device vectors. */
static spk_status apply_row(spk_matrix *A, const spk_options *opt, const double *r, double *z)
{
    const int64_t n = A->csr.nrows;
    spk_status st = spk_matrix_prepare(ctx, A, SPK_FMT_AUTO);
    if (st)
        return st;
    const spk_precond_ops *row = spk_precond_find(opt->precond, dev);
    if (!row)
        return SPK_ERR_UNSUPPORTED;
    void *state = NULL;
    if ((st = row->setup(ctx, A, opt, &state)))
        return st;
    const spk_vec_ops *ops = spk_vec_ops_for(dev);
    double *dr = NULL, *dz = NULL;
    if (!(st = ops->alloc(ctx, n, &dr)) && !(st = ops->alloc(ctx, n, &dz)) &&
        !(st = ops->upload(ctx, n, r, dr)) && !(st = ops->fill(ctx, n, NAN, dz)) &&
        !(st = row->apply(state, dr, dz)))
        st = ops->download(ctx, n, dz, z);
    ops->free(ctx, dr);
    ops->free(ctx, dz);
    row->destroy(state);
    return st;
}

/* ---- block-Jacobi ------------------------------------------------------------------------ */

/* An n x n matrix with dense diagonally dominant (nonsymmetric) blocks of bd and random
 * entries between them. */
static spk_matrix *blocky_matrix(int64_t n, int bd, uint64_t seed)
{
    double *D = calloc((size_t)(n * n), sizeof *D);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            const double u = t_randu(&seed);
            if (i / bd == j / bd)
                D[i * n + j] = i == j ? 4.0 + u : u;
            else if (fabs(u) < 0.3)
                D[i * n + j] = 0.1 * u;
        }
    int64_t *rp = calloc((size_t)n + 1, sizeof *rp);
    int32_t *ci = malloc((size_t)(n * n) * sizeof *ci);
    double *v = malloc((size_t)(n * n) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        rp[i + 1] = rp[i];
        for (int64_t j = 0; j < n; j++)
            if (D[i * n + j] != 0.0) {
                ci[rp[i + 1]] = (int32_t)j;
                v[rp[i + 1]++] = D[i * n + j];
            }
    }
    spk_matrix *A = NULL;
    T_CHECK(spk_matrix_from_csr(ctx, n, n, rp, ci, v, 0, &A) == SPK_OK, "%s", spk_last_error(ctx));
    free(D), free(rp), free(ci), free(v);
    return A;
}

/* z = M^-1 r with M^-1 computed here: each diagonal block of d (the last one of what is left)
 * inverted by Gauss-Jordan with partial pivoting. */
static void bjacobi_reference(const spk_csr *A, int d, const double *r, double *z)
{
    const int64_t n = A->nrows;
    for (int64_t r0 = 0; r0 < n; r0 += d) {
        const int m = (int)(n - r0 < d ? n - r0 : d);
        double *G = calloc((size_t)(m * 2 * m), sizeof *G);     /* [B | I] */
        for (int i = 0; i < m; i++) {
            for (int64_t p = A->rowptr[r0 + i]; p < A->rowptr[r0 + i + 1]; p++)
                if (A->colind[p] >= r0 && A->colind[p] < r0 + m)
                    G[i * 2 * m + (A->colind[p] - r0)] = A->val[p];
            G[i * 2 * m + m + i] = 1.0;
        }
        for (int c = 0; c < m; c++) {
            int pr = c;
            for (int i = c + 1; i < m; i++)
                if (fabs(G[i * 2 * m + c]) > fabs(G[pr * 2 * m + c]))
                    pr = i;
            for (int j = 0; j < 2 * m; j++) {
                const double t = G[c * 2 * m + j];
                G[c * 2 * m + j] = G[pr * 2 * m + j];
                G[pr * 2 * m + j] = t;
            }
            const double piv = G[c * 2 * m + c];
            for (int j = 0; j < 2 * m; j++)
                G[c * 2 * m + j] /= piv;
            for (int i = 0; i < m; i++)
                if (i != c) {
                    const double f = G[i * 2 * m + c];
                    for (int j = 0; j < 2 * m; j++)
                        G[i * 2 * m + j] -= f * G[c * 2 * m + j];
                }
        }
        for (int i = 0; i < m; i++) {
            double s = 0.0;
            for (int j = 0; j < m; j++)
                s += G[i * 2 * m + m + j] * r[r0 + j];
            z[r0 + i] = s;
        }
        free(G);
    }
}

static void test_bjacobi_apply(void)
{
    /* d dividing n, a smaller last block, one block larger than n, d = 1 */
    const struct { int64_t n; int d; } cases[] = {{12, 3}, {11, 3}, {11, 4}, {11, 16}, {9, 1},
                                                  {40, 5}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const int64_t n = cases[k].n;
        const int d = cases[k].d;
        spk_matrix *A = blocky_matrix(n, d, 100 + k);
        if (!A)
            continue;
        spk_options opt;
        spk_options_default(&opt);
        opt.method = SPK_METHOD_BICGSTAB;
        opt.precond = SPK_PRECOND_BJACOBI;
        opt.block_size = d;
        double *r = t_rand_vec(n, 7 + k), *z = malloc((size_t)n * sizeof *z),
               *zr = malloc((size_t)n * sizeof *zr);
        const spk_status st = apply_row(A, &opt, r, z);
        T_CHECK(st == SPK_OK, "n %lld, d %d: %s", (long long)n, d, spk_last_error(ctx));
        bjacobi_reference(&A->csr, d, r, zr);
        T_CHECK(st == SPK_OK && t_rel_diff(z, zr, n) < 1e-13, "n %lld, d %d: the apply is off "
                "the dense reference by %.3g", (long long)n, d, t_rel_diff(z, zr, n));
        free(r), free(z), free(zr);
        spk_matrix_destroy(A);
    }
}

/* lame3d's node blocks: 3 x 3 blocks take fewer CG iterations than Jacobi (nu = 0.45, where
 * the nodes' own x-y-z coupling is strongest); d from amg.block_size when block_size is 0. */
static void test_bjacobi_lame(void)
{
    spk_matrix *A = t_matrix(ctx, "lame3d:16:0.45");
    run j = solve_with(A, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 0, 0, 3),
        b = solve_with(A, SPK_METHOD_CG, SPK_PRECOND_BJACOBI, 3, 0, 3);
    T_CHECK(j.reason > 0 && b.reason > 0 && b.true_rel < 1e-8 && b.its < j.its,
            "lame3d:16:0.45: block-Jacobi(3)-CG %lld iterations (%s, true rel %.2e), "
            "Jacobi-CG %lld", (long long)b.its, spk_reason_str(b.reason), b.true_rel,
            (long long)j.its);
    printf("lame3d:16:0.45 CG: jacobi %lld, bjacobi d=3 %lld iterations\n", (long long)j.its,
           (long long)b.its);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = SPK_PRECOND_BJACOBI;
    opt.amg.block_size = 3;
    spk_solver *S = NULL;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
    char buf[512];
    spk_solver_precond_describe(S, buf, sizeof buf);
    T_CHECK(strstr(buf, "bjacobi: 4624 diagonal blocks of 3 x 3") != NULL,
            "block_size 0 takes amg.block_size: '%s'", buf);
    spk_solver_destroy(S);
    spk_matrix_destroy(A);
}

/* d = 1 is Jacobi applied as an SpMV: the same iterations (on the CPU exactly; on the GPU the
 * general path's extra reduction may move a count by rounding) */
static void test_bjacobi_d1(void)
{
    const char *specs[] = {"poisson3d:20", "lame3d:8"};
    for (int s = 0; s < 2; s++) {
        spk_matrix *A = t_matrix(ctx, specs[s]);
        run j = solve_with(A, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 0, 0, 5),
            b = solve_with(A, SPK_METHOD_CG, SPK_PRECOND_BJACOBI, 1, 0, 5);
        const int64_t tol = dev == SPK_DEVICE_CPU ? 0 : 1 + j.its / 50;
        T_CHECK(j.reason > 0 && b.reason > 0 && llabs(b.its - j.its) <= tol,
                "%s: block-Jacobi(1)-CG %lld iterations, Jacobi-CG %lld", specs[s],
                (long long)b.its, (long long)j.its);
        spk_matrix_destroy(A);
    }
    spk_matrix *K = NULL;
    T_CHECK(spk_matrix_read_mtx(ctx, t_input("bcsstk09.mtx"), &K) == SPK_OK, "%s",
            spk_last_error(ctx));
    if (K) {
        run j = solve_with(K, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 0, 0, 2),
            b = solve_with(K, SPK_METHOD_CG, SPK_PRECOND_BJACOBI, 1, 0, 2);
        const int64_t tol = dev == SPK_DEVICE_CPU ? 0 : 1 + j.its / 50;
        T_CHECK(j.reason > 0 && llabs(b.its - j.its) <= tol, "bcsstk09: block-Jacobi(1)-CG "
                "%lld iterations, Jacobi-CG %lld", (long long)b.its, (long long)j.its);
        spk_matrix_destroy(K);
    }
}

static spk_matrix *small_csr(int64_t n, const int64_t *rp, const int32_t *ci, const double *v)
{
    spk_matrix *A = NULL;
    T_CHECK(spk_matrix_from_csr(ctx, n, n, rp, ci, v, 0, &A) == SPK_OK, "%s", spk_last_error(ctx));
    return A;
}

static void expect_refusal(spk_matrix *A, spk_method m, spk_precond pc, int bs, int degree,
                           spk_status want, const char *const *msgs, const char *what)
{
    const int64_t n = A->csr.nrows;
    spk_options opt;
    spk_options_default(&opt);
    opt.method = m;
    opt.precond = pc;
    opt.block_size = bs;
    opt.poly_degree = degree;
    double *b = t_rand_vec(n, 1), *x = calloc((size_t)n, sizeof *x);
    spk_result res;
    const spk_status st = spk_solve(ctx, A, b, x, &opt, &res);
    int found = st == want;
    for (int k = 0; found && msgs[k]; k++)
        found = strstr(spk_last_error(ctx), msgs[k]) != NULL;
    T_CHECK(found, "%s: %s, '%s'", what, spk_status_str(st), spk_last_error(ctx));
    free(b), free(x);
}

static void test_refusals(void)
{
    /* 9 x 9, blocks of 3: block 2 (rows 4..6) is [1 2 0; 2 4 0; 0 0 1], singular */
    const int64_t rp[] = {0, 1, 2, 3, 5, 7, 8, 9, 10, 11};
    const int32_t ci[] = {0, 1, 2, 3, 4, 3, 4, 5, 6, 7, 8};
    const double sv[] = {4, 4, 4, 1, 2, 2, 4, 1, 4, 4, 4};
    spk_matrix *A = small_csr(9, rp, ci, sv);
    const char *sing[] = {"block 2 (rows 4..6", "singular", NULL};
    if (A) {
        expect_refusal(A, SPK_METHOD_BICGSTAB, SPK_PRECOND_BJACOBI, 3, 0, SPK_ERR_UNSUPPORTED,
                       sing, "a singular block");
        spk_matrix_destroy(A);
    }
    /* the same block [1 2 0; 2 1 0; 0 0 1]: nonsingular but indefinite, refused for CG only */
    const double iv[] = {4, 4, 4, 1, 2, 2, 1, 1, 4, 4, 4};
    A = small_csr(9, rp, ci, iv);
    const char *spd[] = {"block 2 (rows 4..6)", "not positive definite", NULL};
    if (A) {
        expect_refusal(A, SPK_METHOD_CG, SPK_PRECOND_BJACOBI, 3, 0, SPK_ERR_UNSUPPORTED, spd,
                       "an indefinite block for CG");
        const char *none[] = {NULL};
        expect_refusal(A, SPK_METHOD_GMRES, SPK_PRECOND_BJACOBI, 3, 0, SPK_OK, none,
                       "the indefinite block for GMRES");
        /* a smaller last block is named with its rows: n = 9, d = 4 -> block 3 is row 9 */
        const char *lastb[] = {"block 3 (rows 9..9)", NULL};
        const double zv[] = {4, 4, 4, 1, 2, 2, 1, 1, 4, 4, -4};
        spk_matrix_update_values(ctx, A, 11, zv, 0);
        expect_refusal(A, SPK_METHOD_CG, SPK_PRECOND_BJACOBI, 4, 0, SPK_ERR_UNSUPPORTED, lastb,
                       "a negative last block of 1 for CG");
        spk_matrix_destroy(A);
    }
    /* Chebyshev: a zero diagonal for every method, a negative one for CG */
    const double zd[] = {4, 4, 4, 1, 2, 2, 1, 1, 4, 0, 4};
    A = small_csr(9, rp, ci, zd);
    const char *zero[] = {"nonzero diagonal", "a(8,8) = 0", NULL};
    const char *arg_bs[] = {"block_size = 65", NULL}, *arg_deg[] = {"poly_degree = 11", NULL};
    if (A) {
        expect_refusal(A, SPK_METHOD_BICGSTAB, SPK_PRECOND_CHEBYSHEV, 0, 0, SPK_ERR_UNSUPPORTED,
                       zero, "Chebyshev with a zero diagonal");
        expect_refusal(A, SPK_METHOD_BICGSTAB, SPK_PRECOND_BJACOBI, 65, 0, SPK_ERR_ARG, arg_bs,
                       "block_size 65");
        expect_refusal(A, SPK_METHOD_BICGSTAB, SPK_PRECOND_CHEBYSHEV, 0, 11, SPK_ERR_ARG, arg_deg,
                       "poly_degree 11");
        const double nd[] = {4, 4, 4, 1, 2, 2, 1, 1, 4, -1, 4};
        spk_matrix_update_values(ctx, A, 11, nd, 0);
        const char *neg[] = {"positive diagonal", "a(8,8) = -1", NULL};
        expect_refusal(A, SPK_METHOD_CG, SPK_PRECOND_CHEBYSHEV, 0, 0, SPK_ERR_UNSUPPORTED, neg,
                       "Chebyshev-CG with a negative diagonal");
        spk_matrix_destroy(A);
    }
}

/* ---- Chebyshev ----------------------------------------------------------------------------- */

/* b - A z for z = M^-1 b is D r_K(D^-1 A) D^-1 b with r_K(t) = T_K((theta - t) / delta) /
 * T_K(theta / delta): computed here by T_K's three-term recurrence in s = (theta - D^-1 A) /
 * delta, against the apply's residual. */
static void test_cheby_polynomial(void)
{
    spk_matrix *A = t_matrix(ctx, "poisson2d:12");
    const spk_csr *C = &A->csr;
    const int64_t n = C->nrows;
    double *dinv = malloc((size_t)n * sizeof *dinv), *work = malloc((size_t)(4 * n) * sizeof *work);
    spk_csr_diagonal(C, dinv);
    for (int64_t i = 0; i < n; i++)
        dinv[i] = 1.0 / dinv[i];
    const double rho = spk_amg_spectral_radius(C, dinv, 1, work);
    const double a = rho / 30.0, bnd = 1.1 * rho, theta = 0.5 * (a + bnd), delta = 0.5 * (bnd - a);
    for (int K = 1; K <= 5; K++) {
        spk_options opt;
        spk_options_default(&opt);
        opt.method = SPK_METHOD_CG;
        opt.precond = SPK_PRECOND_CHEBYSHEV;
        opt.poly_degree = K;
        double *b = t_rand_vec(n, 11), *z = malloc((size_t)n * sizeof *z);
        T_CHECK(apply_row(A, &opt, b, z) == SPK_OK, "degree %d: %s", K, spk_last_error(ctx));
        double *res = malloc((size_t)n * sizeof *res);          /* b - A z */
        memcpy(res, b, (size_t)n * sizeof *res);
        spk_csr_spmv_ref(C, -1.0, z, 1.0, res);
        /* T_0 v, T_1 v, ... with v = D^-1 b; s v = (theta v - D^-1 A v) / delta */
        double *t0 = malloc((size_t)n * sizeof *t0), *t1 = malloc((size_t)n * sizeof *t1),
               *av = malloc((size_t)n * sizeof *av);
        for (int64_t i = 0; i < n; i++)
            t0[i] = dinv[i] * b[i];
        spk_csr_spmv_ref(C, 1.0, t0, 0.0, av);
        for (int64_t i = 0; i < n; i++)
            t1[i] = (theta * t0[i] - dinv[i] * av[i]) / delta;
        double Tp = 1.0, Tc = theta / delta;                    /* T_k(theta / delta) */
        for (int k = 1; k < K; k++) {
            spk_csr_spmv_ref(C, 1.0, t1, 0.0, av);
            for (int64_t i = 0; i < n; i++) {
                const double nx = 2.0 * (theta * t1[i] - dinv[i] * av[i]) / delta - t0[i];
                t0[i] = t1[i];
                t1[i] = nx;
            }
            const double Tn = 2.0 * (theta / delta) * Tc - Tp;
            Tp = Tc;
            Tc = Tn;
        }
        for (int64_t i = 0; i < n; i++)
            t1[i] = t1[i] / dinv[i] / Tc;                        /* D r_K(D^-1 A) D^-1 b */
        T_CHECK(t_rel_diff(res, t1, n) < 1e-10, "degree %d: b - A M^-1 b is off the residual "
                "polynomial by %.3g", K, t_rel_diff(res, t1, n));
        free(b), free(z), free(res), free(t0), free(t1), free(av);
    }
    free(dinv), free(work);
    spk_matrix_destroy(A);
}

/* M symmetric and positive, as CG needs: v'M^-1 u = u'M^-1 v, u'M^-1 u > 0. */
static void test_cheby_symmetric(void)
{
    spk_matrix *A = t_matrix(ctx, "poisson3d:12");
    const int64_t n = A->csr.nrows;
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = SPK_PRECOND_CHEBYSHEV;
    opt.poly_degree = 4;
    double *u = t_rand_vec(n, 7), *v = t_rand_vec(n, 8), *Mu = malloc((size_t)n * sizeof *Mu),
           *Mv = malloc((size_t)n * sizeof *Mv);
    T_CHECK(apply_row(A, &opt, u, Mu) == SPK_OK && apply_row(A, &opt, v, Mv) == SPK_OK, "%s",
            spk_last_error(ctx));
    double vMu = 0, uMv = 0, uMu = 0;
    for (int64_t i = 0; i < n; i++) {
        vMu += v[i] * Mu[i];
        uMv += u[i] * Mv[i];
        uMu += u[i] * Mu[i];
    }
    T_CHECK(fabs(vMu - uMv) <= 1e-12 * fabs(vMu) && uMu > 0, "v'Mu = %.17g, u'Mv = %.17g, "
            "u'Mu = %g", vMu, uMv, uMu);
    free(u), free(v), free(Mu), free(Mv);
    spk_matrix_destroy(A);
}

/* Chebyshev-CG against Jacobi-CG on poisson3d (docs/solvers.md has 64 cells a side: 57
 * against 158); degree 1 is a multiple of Jacobi, which CG does not see. */
static void test_cheby_counts(void)
{
    spk_matrix *A = t_matrix(ctx, "poisson3d:32");
    run j = solve_with(A, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 0, 0, 1),
        c = solve_with(A, SPK_METHOD_CG, SPK_PRECOND_CHEBYSHEV, 0, 0, 1),
        c5 = solve_with(A, SPK_METHOD_CG, SPK_PRECOND_CHEBYSHEV, 0, 5, 1),
        c1 = solve_with(A, SPK_METHOD_CG, SPK_PRECOND_CHEBYSHEV, 0, 1, 1);
    T_CHECK(j.reason > 0 && c.reason > 0 && c.true_rel < 1e-8 && 2 * c.its < j.its,
            "poisson3d:32: Chebyshev(3)-CG %lld iterations (%s, true rel %.2e), Jacobi-CG %lld",
            (long long)c.its, spk_reason_str(c.reason), c.true_rel, (long long)j.its);
    T_CHECK(c5.reason > 0 && c5.true_rel < 1e-8 && c5.its < c.its, "degree 5: %lld iterations, "
            "degree 3: %lld", (long long)c5.its, (long long)c.its);
    T_CHECK(c1.reason > 0 && llabs(c1.its - j.its) <= 1, "degree 1: %lld iterations, Jacobi %lld",
            (long long)c1.its, (long long)j.its);
    printf("poisson3d:32 CG: jacobi %lld, chebyshev degree 1 %lld, 3 %lld, 5 %lld iterations\n",
           (long long)j.its, (long long)c1.its, (long long)c.its, (long long)c5.its);
    /* BiCGStab takes it on the right */
    run bc = solve_with(A, SPK_METHOD_BICGSTAB, SPK_PRECOND_CHEBYSHEV, 0, 0, 1);
    T_CHECK(bc.reason > 0 && bc.true_rel < 1e-8, "BiCGStab + Chebyshev: %s, true rel %.2e",
            spk_reason_str(bc.reason), bc.true_rel);
    spk_options opt;
    spk_options_default(&opt);
    opt.precond = SPK_PRECOND_CHEBYSHEV;
    spk_solver *S = NULL;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
    char buf[512];
    spk_solver_precond_describe(S, buf, sizeof buf);
    T_CHECK(strstr(buf, "chebyshev: degree 3") && strstr(buf, "[lmax/30, 1.1 lmax] = [") &&
                strstr(buf, "Lanczos"), "describe: '%s'", buf);
    spk_solver_destroy(S);
    spk_matrix_destroy(A);
}

/* ---- refresh ----------------------------------------------------------------------------- */

/* After a value update, refresh gives the iterations of a solver made afresh on the new
 * values, and the second refresh allocates nothing. */
static void refresh_case(const char *spec, spk_precond pc, int bs)
{
    spk_matrix *A = t_matrix(ctx, spec);
    const int64_t n = A->csr.nrows, nnz = A->csr.nnz;
    double *orig = malloc((size_t)nnz * sizeof *orig), *val = malloc((size_t)nnz * sizeof *val);
    memcpy(orig, A->csr.val, (size_t)nnz * sizeof *orig);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = pc;
    opt.block_size = bs;
    spk_solver *S = NULL;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
    double *b = t_rand_vec(n, 4), *x = calloc((size_t)n, sizeof *x);
    uint64_t before = 0;
    for (int round = 0; round < 3 && S; round++) {
        if (round > 0) {
            /* S A S with S diagonal, a node's unknowns scaled alike: still SPD, different
             * each round */
            for (int64_t i = 0; i < n; i++)
                for (int64_t p = A->csr.rowptr[i]; p < A->csr.rowptr[i + 1]; p++) {
                    const int64_t j = A->csr.colind[p];
                    const double si = 1.0 + 0.7 * (double)round * ((i / 3) % 4 == 0),
                                 sj = 1.0 + 0.7 * (double)round * ((j / 3) % 4 == 0);
                    val[p] = orig[p] * si * sj;
                }
            if (round == 2)
                before = spk_context_alloc_count(ctx);
            T_CHECK(spk_matrix_update_values(ctx, A, nnz, val, 0) == SPK_OK, "%s",
                    spk_last_error(ctx));
            T_CHECK(spk_solver_refresh(S) == SPK_OK, "refresh: %s", spk_last_error(ctx));
            if (round == 2)
                T_CHECK(spk_context_alloc_count(ctx) == before, "%s: the second update and "
                        "refresh allocated %llu times", spk_precond_str(pc),
                        (unsigned long long)(spk_context_alloc_count(ctx) - before));
        }
        spk_result res;
        memset(x, 0, (size_t)n * sizeof *x);
        T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0, "round %d: %s",
                round, spk_last_error(ctx));
        const int64_t its = res.iterations;
        spk_result_free(&res);
        double *xf = calloc((size_t)n, sizeof *xf);
        const int64_t fresh = t_fresh_solve(ctx, A, b, &opt, xf);
        T_CHECK(fresh == its && t_rel_diff(x, xf, n) < 1e-9, "%s %s round %d: refreshed "
                "%lld iterations, fresh %lld, x differs by %.2g", spec, spk_precond_str(pc),
                round, (long long)its, (long long)fresh, t_rel_diff(x, xf, n));
        free(xf);
    }
    free(b), free(x), free(val), free(orig);
    spk_solver_destroy(S);
    spk_matrix_destroy(A);
}

static void test_refresh(void)
{
    refresh_case("lame3d:6", SPK_PRECOND_BJACOBI, 3);
    refresh_case("poisson3d:12", SPK_PRECOND_CHEBYSHEV, 0);
}

int main(int argc, char **argv)
{
    dev = t_device_from_args(argc, argv);
    ctx = t_context(dev);
    test_bjacobi_apply();
    test_bjacobi_lame();
    test_bjacobi_d1();
    test_refusals();
    test_cheby_polynomial();
    test_cheby_symmetric();
    test_cheby_counts();
    test_refresh();
    spk_context_destroy(ctx);
    return t_done("test_pc");
}
