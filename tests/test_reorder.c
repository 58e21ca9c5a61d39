/* tests/test_reorder.c -- reordering at setup (spk_options.reorder): the RCM permutation (every
 * index once, deterministic, the bandwidth of a scrambled grid brought back near its natural
 * one, disconnected graphs), and solves on P A P^T through the API on the device given
 * (--device cpu|gpu): iteration counts and x (in the caller's order) against the unreordered
 * solve, the initial guess, a value update and refresh without allocation, and ILU(0)'s
 * dependence on the order. */
#include "util.h"
#include "../src/reorder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static spk_device dev;
static spk_context *ctx;

static int is_permutation(const int32_t *p, int64_t n)
{
    char *seen = calloc((size_t)n + 1, 1);
    int ok = 1;
    for (int64_t k = 0; k < n && ok; k++) {
        ok = p[k] >= 0 && p[k] < n && !seen[p[k]];
        if (ok)
            seen[p[k]] = 1;
    }
    free(seen);
    return ok;
}

/* A seeded random permutation (Fisher-Yates). */
static int32_t *random_perm(int64_t n, uint64_t seed)
{
    int32_t *p = malloc((size_t)n * sizeof *p);
    for (int64_t k = 0; k < n; k++)
        p[k] = (int32_t)k;
    for (int64_t k = n - 1; k > 0; k--) {
        const int64_t j = (int64_t)(t_rand(&seed) % (uint64_t)(k + 1));
        const int32_t t = p[k];
        p[k] = p[j];
        p[j] = t;
    }
    return p;
}

static void generate(const char *spec, spk_csr *out)
{
    if (spk_generate_csr(ctx, spec, out) != SPK_OK) {
        fprintf(stderr, "%s: %s\n", spec, spk_last_error(ctx));
        exit(2);
    }
}

/* The matrix of `spec` with its rows and columns in a seeded random order. */
static spk_matrix *scrambled(const char *spec, uint64_t seed)
{
    spk_csr a, s;
    generate(spec, &a);
    int32_t *p = random_perm(a.nrows, seed);
    int64_t *map = malloc(((size_t)a.nnz + 1) * sizeof *map);
    spk_matrix *A = NULL;
    T_CHECK(spk_csr_permute(ctx, &a, p, &s, map) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_matrix_from_canonical(ctx, &s, &A) == SPK_OK, "%s", spk_last_error(ctx));
    spk_csr_free(&a), spk_csr_free(&s);
    free(p), free(map);
    return A;
}

static void test_rcm(void)
{
    const int64_t N = 40;
    spk_matrix *A = scrambled("poisson2d:40", 7);
    const int64_t n = A->csr.nrows;
    int32_t *p = malloc((size_t)n * sizeof *p), *p2 = malloc((size_t)n * sizeof *p2);
    T_CHECK(spk_rcm(ctx, &A->csr, p) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(is_permutation(p, n), "RCM of the scrambled poisson2d:40 is a permutation");
    T_CHECK(spk_rcm(ctx, &A->csr, p2) == SPK_OK && !memcmp(p, p2, (size_t)n * sizeof *p),
            "RCM twice: the same order");
    spk_csr b;
    int64_t *map = malloc((size_t)A->csr.nnz * sizeof *map);
    T_CHECK(spk_csr_permute(ctx, &A->csr, p, &b, map) == SPK_OK, "%s", spk_last_error(ctx));
    int64_t bw0, pr0, bw1, pr1, bwn, prn;
    spk_csr_band(&A->csr, &bw0, &pr0);
    spk_csr_band(&b, &bw1, &pr1);
    spk_csr nat;
    generate("poisson2d:40", &nat);
    spk_csr_band(&nat, &bwn, &prn);
    printf("poisson2d:40 bandwidth / profile: natural %lld / %lld, scrambled %lld / %lld, "
           "rcm %lld / %lld\n", (long long)bwn, (long long)prn, (long long)bw0, (long long)pr0,
           (long long)bw1, (long long)pr1);
    T_CHECK(bwn == N, "the natural order's bandwidth is N = %lld: %lld", (long long)N, (long long)bwn);
    T_CHECK(bw1 <= 2 * N && bw0 > 20 * N, "bandwidth: rcm %lld (<= 2N), scrambled %lld (> 20N)",
            (long long)bw1, (long long)bw0);
    T_CHECK(pr1 <= 2 * prn && pr1 * 10 < pr0, "profile: rcm %lld, natural %lld, scrambled %lld",
            (long long)pr1, (long long)prn, (long long)pr0);
    /* B's entries are A's through the map */
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++)
        for (int64_t q = b.rowptr[i]; q < b.rowptr[i + 1]; q++) {
            const int64_t m = map[q];
            ok &= b.val[q] == A->csr.val[m] && A->csr.colind[m] == p[b.colind[q]] &&
                  m >= A->csr.rowptr[p[i]] && m < A->csr.rowptr[p[i] + 1];
            ok &= q == b.rowptr[i] || b.colind[q] > b.colind[q - 1];
        }
    T_CHECK(ok, "B(i, j) = A(perm i, perm j), columns sorted");
    spk_csr_free(&b), spk_csr_free(&nat);
    free(p), free(p2), free(map);
    spk_matrix_destroy(A);

    /* two grids side by side and an isolated row, with a one-sided off-diagonal entry (A +
     * A^T's pattern is what connects) */
    spk_csr g;
    generate("poisson2d:10", &g);
    const int64_t m = g.nrows, nn = 2 * m + 1, nnz = 2 * g.nnz + 2;
    int64_t *rp = calloc((size_t)nn + 1, sizeof *rp);
    int32_t *ci = malloc((size_t)nnz * sizeof *ci);
    double *va = malloc((size_t)nnz * sizeof *va);
    int64_t w = 0;
    for (int64_t i = 0; i < nn; i++) {
        const int64_t gi = i < 2 * m ? i % m : -1, off = i < m ? 0 : m;
        if (gi >= 0)
            for (int64_t q = g.rowptr[gi]; q < g.rowptr[gi + 1]; q++) {
                ci[w] = (int32_t)(g.colind[q] + off);
                va[w++] = g.val[q];
            }
        if (i == 2 * m) {                       /* the isolated row, and a(nn-1, 0) */
            ci[w] = 0;
            va[w++] = -0.5;
            ci[w] = (int32_t)i;
            va[w++] = 4.0;
        }
        rp[i + 1] = w;
    }
    spk_matrix *D = NULL;
    T_CHECK(spk_matrix_from_csr(ctx, nn, nn, rp, ci, va, 0, &D) == SPK_OK, "%s", spk_last_error(ctx));
    int32_t *pd = malloc((size_t)nn * sizeof *pd);
    T_CHECK(D && spk_rcm(ctx, &D->csr, pd) == SPK_OK && is_permutation(pd, nn),
            "two blocks and a row: a permutation");
    spk_matrix_destroy(D);
    spk_csr_free(&g);
    free(rp), free(ci), free(va), free(pd);
    int32_t none[1];
    spk_csr empty = {0};
    T_CHECK(spk_rcm(ctx, &empty, none) == SPK_OK, "0 x 0");
}

typedef struct run {
    spk_reason reason;
    int64_t its;
    double true_rel;
    spk_result res;
} run;

static run solve(spk_matrix *A, spk_method m, spk_precond pc, spk_reorder ro, const double *b,
                 double *x, int use_x0)
{
    spk_options opt;
    spk_options_default(&opt);
    opt.method = m;
    opt.precond = pc;
    opt.reorder = ro;
    opt.use_x0 = use_x0;
    run r;
    memset(&r, 0, sizeof r);
    const spk_status st = spk_solve(ctx, A, b, x, &opt, &r.res);
    T_CHECK(st == SPK_OK, "%s", spk_last_error(ctx));
    r.reason = r.res.reason;
    r.its = r.res.iterations;
    r.true_rel = t_true_rel(A, b, x);
    return r;
}

static int64_t slack(int64_t its)
{
    const int64_t p = (its * 2 + 99) / 100;
    return p > 2 ? p : 2;
}

static double *rand_vec(int64_t n, uint64_t seed)
{
    double *v = malloc((size_t)n * sizeof *v + 1);
    for (int64_t i = 0; i < n; i++)
        v[i] = t_randu(&seed);
    return v;
}

static spk_matrix *read(const char *name)
{
    spk_matrix *A = NULL;
    if (spk_matrix_read_mtx(ctx, t_input(name), &A) != SPK_OK) {
        fprintf(stderr, "%s: %s\n", name, spk_last_error(ctx));
        exit(2);
    }
    return A;
}

/* The same system with and without RCM: a permutation changes only the order of the sums,
 * so in exact arithmetic the iterations are the same. CG and GMRES keep that within 2% (or 2
 * iterations). BiCGStab on these nonsymmetric matrices does not, whatever the order: b
 * multiplied by 1 + 1e-15 u (u uniform in [-1, 1)), unreordered, moved its count from 73 to
 * 64-69 on pores_1, from 203 to 196-199 on sherman1 and from 671 to 890-1374 on orsirr_1
 * (CPU, 2026-12-01). So BiCGStab is held to 25% on pores_1 and sherman1, and on orsirr_1 to
 * convergence and x alone. */
static void test_counts(void)
{
    static const struct {
        const char *name;
        spk_method m;
        int strict;                              /* 1: 2%, 2: 25%, 0: converged */
    } cases[] = {
        {"bcsstk09.mtx", SPK_METHOD_CG, 1},      {"nos6.mtx", SPK_METHOD_CG, 1},
        {"pores_1.mtx", SPK_METHOD_GMRES, 1},    {"sherman1.mtx", SPK_METHOD_GMRES, 1},
        {"orsirr_1.mtx", SPK_METHOD_GMRES, 1},   {"pores_1.mtx", SPK_METHOD_BICGSTAB, 2},
        {"sherman1.mtx", SPK_METHOD_BICGSTAB, 2}, {"orsirr_1.mtx", SPK_METHOD_BICGSTAB, 0},
    };
    static const spk_reorder kinds[] = {SPK_REORDER_RCM, SPK_REORDER_DEGREE};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t k = 0; k < 2; k++) {
        const spk_reorder ro = kinds[k];
        const char *rn = ro == SPK_REORDER_RCM ? "rcm" : "degree";
        spk_matrix *A = read(cases[c].name);
        const int64_t n = A->csr.nrows;
        double *b = rand_vec(n, 3 + c), *x0 = calloc((size_t)n, sizeof *x0),
               *x1 = calloc((size_t)n, sizeof *x1);
        run r0 = solve(A, cases[c].m, SPK_PRECOND_JACOBI, SPK_REORDER_NONE, b, x0, 0);
        run r1 = solve(A, cases[c].m, SPK_PRECOND_JACOBI, ro, b, x1, 0);
        printf("%s %s + jacobi: %lld iterations, with %s %lld (bandwidth %lld -> %lld)\n",
               cases[c].name, spk_method_str(cases[c].m), (long long)r0.its, rn, (long long)r1.its,
               (long long)r1.res.bandwidth_before, (long long)r1.res.bandwidth_after);
        T_CHECK(r0.reason > 0 && r1.reason > 0, "%s: %s, with %s %s", cases[c].name,
                spk_reason_str(r0.reason), rn, spk_reason_str(r1.reason));
        const int64_t tol = cases[c].strict == 1 ? slack(r0.its) : r0.its / 4;
        if (cases[c].strict)
            T_CHECK(llabs(r1.its - r0.its) <= tol, "%s %s: %lld iterations, %s %lld",
                    cases[c].name, spk_method_str(cases[c].m), (long long)r0.its, rn,
                    (long long)r1.its);
        const double d = t_rel_diff(x1, x0, n);
        T_CHECK(d < 1e-6, "%s: x with %s differs by %.2e", cases[c].name, rn, d);
        T_CHECK(r1.true_rel <= 1e-8, "%s: true residual %.3e with %s", cases[c].name,
                r1.true_rel, rn);
        T_CHECK(fabs(r1.res.true_rel - r1.true_rel) <= 0.1 * r1.true_rel + 1e-15,
                "the result's true_rel %.6e is A's: %.6e", r1.res.true_rel, r1.true_rel);
        T_CHECK(r1.res.reorder == ro && r1.res.bandwidth_before > 0 &&
                r0.res.reorder == SPK_REORDER_NONE && r0.res.bandwidth_before == 0,
                "the result says the ordering");
        free(b), free(x0), free(x1);
        spk_matrix_destroy(A);
        }
}

/* The degree ordering: a permutation, row lengths of A(perm, perm) non-increasing, ties in
 * index order, deterministic; the empty matrix. */
static void test_degree_order(void)
{
    static const char *const specs[] = {"powerlaw:5000:6", "poisson2d:20", "lame3d:3"};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        spk_matrix *A = t_matrix(ctx, specs[k]);
        const spk_csr *C = &A->csr;
        const int64_t n = C->nrows;
        int32_t *p = malloc((size_t)n * sizeof *p + 4);
        T_CHECK(spk_degree_order(ctx, C, p) == SPK_OK && is_permutation(p, n), "%s: %s",
                specs[k], spk_last_error(ctx));
        int sorted = 1;
        for (int64_t i = 1; i < n; i++) {
            const int64_t a = C->rowptr[p[i - 1] + 1] - C->rowptr[p[i - 1]],
                          b = C->rowptr[p[i] + 1] - C->rowptr[p[i]];
            sorted &= a > b || (a == b && p[i - 1] < p[i]);
        }
        T_CHECK(sorted, "%s: rows not by length, longest first, ties by index", specs[k]);
        free(p);
        spk_matrix_destroy(A);
    }
    spk_csr empty;
    memset(&empty, 0, sizeof empty);
    int64_t zero = 0;
    empty.rowptr = &zero;
    int32_t none[1];
    T_CHECK(spk_degree_order(ctx, &empty, none) == SPK_OK, "0 x 0");
}

/* The initial guess is taken in the caller's order, and the device entry point stages the
 * permutation too: an x0 that solves the system already takes no iteration. */
static void test_x0(void)
{
    spk_matrix *A = scrambled("poisson2d:30", 11);
    const int64_t n = A->csr.nrows;
    double *b = rand_vec(n, 5), *x = calloc((size_t)n, sizeof *x), *y = malloc((size_t)n * sizeof *y);
    run r = solve(A, SPK_METHOD_CG, SPK_PRECOND_JACOBI, SPK_REORDER_RCM, b, x, 0);
    T_CHECK(r.reason > 0 && r.true_rel <= 1e-8, "from zero: %s, %.2e", spk_reason_str(r.reason),
            r.true_rel);
    memcpy(y, x, (size_t)n * sizeof *y);
    run r2 = solve(A, SPK_METHOD_CG, SPK_PRECOND_JACOBI, SPK_REORDER_RCM, b, y, 1);
    T_CHECK(r2.reason > 0 && r2.its <= 1 && t_rel_diff(y, x, n) < 1e-10,
            "x0 = the solution: %lld iterations, x moved by %.2e", (long long)r2.its,
            t_rel_diff(y, x, n));
    /* half way: x0 = x / 2 converges, to the same x */
    for (int64_t i = 0; i < n; i++)
        y[i] = 0.5 * x[i];
    run r3 = solve(A, SPK_METHOD_CG, SPK_PRECOND_JACOBI, SPK_REORDER_RCM, b, y, 1);
    T_CHECK(r3.reason > 0 && r3.true_rel <= 1e-8 && t_rel_diff(y, x, n) < 1e-6,
            "x0 = x / 2: %s, x differs by %.2e", spk_reason_str(r3.reason), t_rel_diff(y, x, n));

    /* spk_solver_solve_device: b and x in the device's memory */
    const spk_vec_ops *ops = spk_vec_ops_for(dev);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = SPK_PRECOND_JACOBI;
    opt.reorder = SPK_REORDER_RCM;
    opt.use_x0 = 1;
    spk_solver *S = NULL;
    double *d_b = NULL, *d_x = NULL, *z = malloc((size_t)n * sizeof *z), *x3 = y;
    y = malloc((size_t)n * sizeof *y);
    for (int64_t i = 0; i < n; i++)
        y[i] = 0.5 * x[i];
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(ops->alloc(ctx, n, &d_b) == SPK_OK && ops->alloc(ctx, n, &d_x) == SPK_OK &&
            ops->upload(ctx, n, b, d_b) == SPK_OK && ops->upload(ctx, n, y, d_x) == SPK_OK,
            "device vectors: %s", spk_last_error(ctx));
    spk_result res;
    T_CHECK(S && spk_solver_solve_device(S, d_b, d_x, &res) == SPK_OK && res.reason > 0,
            "solve_device: %s", spk_last_error(ctx));
    ops->download(ctx, n, d_x, z);
    T_CHECK(res.iterations == r3.its && t_rel_diff(z, x3, n) < 1e-12,
            "solve_device: %lld iterations (host %lld), x differs by %.2e from the host solve's",
            (long long)res.iterations, (long long)r3.its, t_rel_diff(z, x3, n));
    spk_solver_destroy(S);
    ops->free(ctx, d_b), ops->free(ctx, d_x);
    free(b), free(x), free(y), free(z), free(x3);
    spk_matrix_destroy(A);
}

/* After a value update of A, the refresh refills B through the map: the solve takes the
 * iterations of a solver made afresh on the new values, and from the second refresh on
 * nothing is allocated. */
static void test_refresh(void)
{
    spk_matrix *A = scrambled("poisson2d:40", 13);
    const int64_t n = A->csr.nrows, nnz = A->csr.nnz;
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = SPK_PRECOND_JACOBI;
    opt.reorder = SPK_REORDER_RCM;
    spk_solver *S = NULL;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
    double *b = rand_vec(n, 4), *x = calloc((size_t)n, sizeof *x), *xf = calloc((size_t)n, sizeof *xf),
           *val = malloc((size_t)nnz * sizeof *val);
    spk_result res;
    uint64_t before = 0;
    for (int round = 0; round < 3 && S; round++) {
        if (round > 0) {
            /* symmetric new values (rows and columns scaled alike), different each round */
            for (int64_t i = 0; i < n; i++)
                for (int64_t p = A->csr.rowptr[i]; p < A->csr.rowptr[i + 1]; p++) {
                    const int64_t j = A->csr.colind[p];
                    const double si = 1.0 + 0.7 * (double)round * (i % 3 == 0),
                                 sj = 1.0 + 0.7 * (double)round * (j % 3 == 0);
                    val[p] = (j == i ? 4.0 + 0.1 * round : -1.0) * si * sj;
                }
            if (round == 2)
                before = spk_context_alloc_count(ctx);
            T_CHECK(spk_matrix_update_values(ctx, A, nnz, val, 0) == SPK_OK, "%s",
                    spk_last_error(ctx));
            T_CHECK(spk_solver_refresh(S) == SPK_OK, "refresh: %s", spk_last_error(ctx));
            if (round == 2)
                T_CHECK(spk_context_alloc_count(ctx) == before, "the second refresh allocated %llu "
                        "times", (unsigned long long)(spk_context_alloc_count(ctx) - before));
        }
        T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0, "round %d: %s",
                round, spk_last_error(ctx));
        if (round == 2)
            T_CHECK(spk_context_alloc_count(ctx) == before, "the solve after the second refresh "
                    "allocated");
        run fresh = solve(A, SPK_METHOD_CG, SPK_PRECOND_JACOBI, SPK_REORDER_RCM, b, xf, 0);
        T_CHECK(res.iterations == fresh.its && t_rel_diff(x, xf, n) < 1e-12 &&
                t_true_rel(A, b, x) <= 1e-8, "round %d: %lld iterations, fresh %lld; x differs "
                "by %.2e", round, (long long)res.iterations, (long long)fresh.its,
                t_rel_diff(x, xf, n));
    }
    spk_solver_destroy(S);
    free(b), free(x), free(xf), free(val);
    spk_matrix_destroy(A);
}

/* ILU(0)'s dropped fill depends on the order: on a scrambled grid it is a poor factorization,
 * after RCM close to the natural order's. */
static void test_ilu(void)
{
    static const char *specs[] = {"poisson2d:60", "poisson3d:16"};
    for (int s = 0; s < 2; s++) {
        spk_matrix *A = scrambled(specs[s], 17);
        spk_matrix *N = NULL;
        spk_matrix_generate(ctx, specs[s], &N);
        const int64_t n = A->csr.nrows;
        double *b = rand_vec(n, 6), *x = calloc((size_t)n, sizeof *x);
        run rs = solve(A, SPK_METHOD_GMRES, SPK_PRECOND_ILU0, SPK_REORDER_NONE, b, x, 0);
        run rr = solve(A, SPK_METHOD_GMRES, SPK_PRECOND_ILU0, SPK_REORDER_RCM, b, x, 0);
        run rn = solve(N, SPK_METHOD_GMRES, SPK_PRECOND_ILU0, SPK_REORDER_NONE, b, x, 0);
        printf("%s ILU(0)-GMRES(30): scrambled %lld iterations, rcm %lld, natural %lld\n",
               specs[s], (long long)rs.its, (long long)rr.its, (long long)rn.its);
        T_CHECK(rs.reason > 0 && rr.reason > 0 && rr.true_rel <= 1e-8, "%s: %s, rcm %s",
                specs[s], spk_reason_str(rs.reason), spk_reason_str(rr.reason));
        T_CHECK(rr.its < rs.its, "%s: rcm %lld iterations, scrambled %lld", specs[s],
                (long long)rr.its, (long long)rs.its);
        free(b), free(x);
        spk_matrix_destroy(A);
        spk_matrix_destroy(N);
    }
}

static void test_bad_option(void)
{
    spk_matrix *A = NULL;
    spk_matrix_generate(ctx, "poisson2d:5", &A);
    spk_options opt;
    spk_options_default(&opt);
    T_CHECK(opt.reorder == SPK_REORDER_NONE, "the default is none");
    opt.reorder = (spk_reorder)7;
    spk_solver *S = NULL;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_ERR_ARG && !S &&
            strstr(spk_last_error(ctx), "reorder"), "reorder = 7: %s", spk_last_error(ctx));
    spk_matrix_destroy(A);
}

/* What is given in A's order row by row cannot go with a reorder: refused, with the reason. */
static void test_refused(void)
{
    spk_matrix *A = NULL;
    spk_matrix_generate(ctx, "poisson2d:6", &A);
    double ones[36];
    for (int i = 0; i < 36; i++)
        ones[i] = 1.0;
    spk_precond_user user = {.apply = NULL};
    for (int c = 0; c < 3; c++) {
        spk_options opt;
        spk_options_default(&opt);
        opt.reorder = SPK_REORDER_RCM;
        if (c == 0) {
            opt.precond = SPK_PRECOND_USER;
            opt.precond_user = &user;
        } else if (c == 1) {
            opt.precond = SPK_PRECOND_BJACOBI;
            opt.block_size = 2;
        } else {
            opt.precond = SPK_PRECOND_AMG;
            opt.amg.nullspace = ones;
            opt.amg.nullspace_cols = 1;
        }
        spk_solver *S = NULL;
        const spk_status st = spk_solver_create(ctx, A, &opt, &S);
        T_CHECK(st == SPK_ERR_ARG && !S && strstr(spk_last_error(ctx), "in A's order"),
                "case %d: %s: %s", c, spk_status_str(st), spk_last_error(ctx));
    }
    spk_matrix_destroy(A);
}

/* Every allocation of a reordering solver's creation failing in turn: SPK_ERR_NOMEM (or the
 * device's failure), no solver, and the next attempt succeeds. */
static void test_alloc_failures(void)
{
    spk_matrix *A = scrambled("poisson2d:12", 19);
    spk_options opt;
    spk_options_default(&opt);
    opt.reorder = SPK_REORDER_RCM;
    int failed = 0, done = 0;
    for (uint64_t k = 1; k <= 60 && !done; k++) {
        const uint64_t at = spk_context_alloc_count(ctx) + k;
        ctx->fail_alloc_at = at;
        spk_solver *S = NULL;
        const spk_status st = spk_solver_create(ctx, A, &opt, &S);
        const int hit = spk_context_alloc_count(ctx) >= at;
        ctx->fail_alloc_at = 0;
        if (hit) {
            failed++;
            T_CHECK((st == SPK_ERR_NOMEM || st == SPK_ERR_CUDA) && !S, "allocation %llu: %s",
                    (unsigned long long)k, spk_status_str(st));
        } else {
            done = 1;
            T_CHECK(st == SPK_OK && S, "no allocation failed: %s", spk_last_error(ctx));
        }
        spk_solver_destroy(S);
    }
    T_CHECK(done && failed >= 10, "%d allocations failed in turn, then creation succeeded", failed);
    spk_matrix_destroy(A);
}

/* The operator the method runs on, and the SpMV timing of A beside it. */
static void test_operator(void)
{
    spk_matrix *A = scrambled("poisson2d:50", 23);
    spk_options opt;
    spk_options_default(&opt);
    spk_solver *S = NULL, *S0 = NULL;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S0) == SPK_OK && spk_solver_operator(S0) == A,
            "without a reorder the operator is A");
    opt.reorder = SPK_REORDER_RCM;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
    spk_matrix *B = spk_solver_operator(S);
    T_CHECK(B && B != A, "with rcm the operator is the solver's own");
    const int64_t *rp;
    const int32_t *ci;
    const double *va;
    spk_csr b = {0};
    if (B && spk_matrix_csr(B, &rp, &ci, &va) == SPK_OK) {
        b = (spk_csr){.nrows = A->csr.nrows, .ncols = A->csr.ncols, .nnz = A->csr.nnz,
                      .rowptr = (int64_t *)rp, .colind = (int32_t *)ci, .val = (double *)va};
    }
    int64_t bw, pr;
    spk_csr_band(&b, &bw, &pr);
    double *x = calloc((size_t)A->csr.nrows, sizeof *x), *rhs = rand_vec(A->csr.nrows, 8);
    spk_result res;
    T_CHECK(spk_solver_solve(S, rhs, x, &res) == SPK_OK && res.bandwidth_after == bw &&
            res.profile_after == pr && bw <= 100 && res.bandwidth_before > 40 * 50,
            "the result's bandwidth %lld -> %lld, the operator's %lld", (long long)res.bandwidth_before,
            (long long)res.bandwidth_after, (long long)bw);
    double ta = 0, tb = 0;
    T_CHECK(spk_solver_spmv_seconds(S, 5, &ta, &tb) == SPK_OK && ta > 0 && tb > 0,
            "spmv seconds: %g, %g: %s", ta, tb, spk_last_error(ctx));
    T_CHECK(spk_solver_spmv_seconds(S, 0, &ta, &tb) == SPK_ERR_ARG, "reps = 0 is refused");
    spk_solver_destroy(S), spk_solver_destroy(S0);
    free(x), free(rhs);
    spk_matrix_destroy(A);
}

int main(int argc, char **argv)
{
    dev = t_device_from_args(argc, argv);
    ctx = t_context(dev);
    if (dev == SPK_DEVICE_CPU)                       /* host code: once is enough */
        test_rcm();
    test_bad_option();
    test_refused();
    test_alloc_failures();
    test_counts();
    test_degree_order();
    test_x0();
    test_refresh();
    test_operator();
    test_ilu();
    spk_context_destroy(ctx);
    return t_done("test_reorder");
}
