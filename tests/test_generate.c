/* tests/test_generate.c -- the multigrid test problems lame3d and jump3d, and the node
 * coordinates of every grid generator (spk_generate_coords).
 *
 * lame3d is checked against an independent computation: the unit cube's Q1 element matrix
 * integrated here exactly, by factorising each entry into 1-D integrals of the linear shape
 * functions (the generator uses Gauss points and a strain matrix), must be symmetric positive
 * semidefinite of rank 18 with the six rigid-body motions as its null space, and lame3d:1 must
 * be its block of the four unclamped corners. The assembled matrix must map every rigid-body
 * motion to zero on each row whose node does not touch a clamped one, and CG must solve it.
 * jump3d: symmetric, positive diagonal, conservative (zero row sums inside), deterministic,
 * three distinct off-diagonal values, and exactly poisson3d at CONTRAST 1. */
#include "util.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

static spk_context *ctx;

/* ---- shared checks ------------------------------------------------------------------------ */

/* Rows sorted and unique, the diagonal present and positive. */
static int canonical_spd_pattern(const spk_csr *A)
{
    for (int64_t i = 0; i < A->nrows; i++) {
        int diag = 0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            if (p > A->rowptr[i] && A->colind[p] <= A->colind[p - 1])
                return 0;
            if (A->colind[p] == i)
                diag = A->val[p] > 0.0;
        }
        if (!diag)
            return 0;
    }
    return 1;
}

static double max_abs(const double *v, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        m = fabs(v[i]) > m ? fabs(v[i]) : m;
    return m;
}

static int generate(const char *spec, spk_csr *A)
{
    spk_status st = spk_generate_csr(ctx, spec, A);
    T_CHECK(st == SPK_OK, "%s: %s", spec, spk_last_error(ctx));
    return st == SPK_OK;
}

/* ---- lame3d: the element matrix, computed independently ----------------------------------- */

/* Integrals over [0, 1] of the linear shape functions phi_0 = 1 - t, phi_1 = t: of
 * phi_a phi_b, of phi_a' phi_b' and of phi_a' phi_b (phi_a' = -1 or +1). */
static double m0(int a, int b) { return a == b ? 1.0 / 3.0 : 1.0 / 6.0; }
static double d1(int a, int b) { return a == b ? 1.0 : -1.0; }
static double sgn(int a) { return a ? 1.0 : -1.0; }

/* G(a, b, i, j) = integral over the unit cube of dN_a/dx_i dN_b/dx_j, N_a the trilinear
 * function of corner a = ax + 2 ay + 4 az: a product of one 1-D integral per axis. */
static double grad_integral(int a, int b, int i, int j)
{
    double g = 1.0;
    for (int d = 0; d < 3; d++) {
        const int ad = (a >> d) & 1, bd = (b >> d) & 1;
        if (d == i && d == j)
            g *= d1(ad, bd);
        else if (d == i)
            g *= 0.5 * sgn(ad);
        else if (d == j)
            g *= 0.5 * sgn(bd);
        else
            g *= m0(ad, bd);
    }
    return g;
}

/* K[3a + i][3b + j] = lambda G(a,b,i,j) + mu G(a,b,j,i) + mu delta_ij sum_k G(a,b,k,k): the
 * bilinear form lambda div u div v + 2 mu eps(u) : eps(v) for u = N_b e_j, v = N_a e_i. */
static void exact_element(double nu, double K[24][24])
{
    const double lam = nu / ((1 + nu) * (1 - 2 * nu)), mu = 1 / (2 * (1 + nu));
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) {
                    double k = lam * grad_integral(a, b, i, j) + mu * grad_integral(a, b, j, i);
                    if (i == j)
                        for (int l = 0; l < 3; l++)
                            k += mu * grad_integral(a, b, l, l);
                    K[3 * a + i][3 * b + j] = k;
                }
}

/* Rigid-body motion m (0-2: translation along axis m; 3-5: rotation about axis m - 3) at x. */
static void rigid_motion(int m, const double x[3], double u[3])
{
    u[0] = u[1] = u[2] = 0.0;
    if (m < 3) {
        u[m] = 1.0;
        return;
    }
    const int p = (m - 3 + 1) % 3, q = (m - 3 + 2) % 3;   /* omega = e_(m-3): omega x x */
    u[p] = -x[q];
    u[q] = x[p];
}

/* Pivoted Cholesky of a copy of the symmetric S (n <= 24): the rank at tolerance tol * max
 * diagonal, and whether S is positive semidefinite (no Schur complement diagonal below -tol). */
static int psd_rank(double S[24][24], int n, double tol, int *psd)
{
    double A[24][24];
    memcpy(A, S, sizeof A);
    double dmax = 0.0;
    for (int i = 0; i < n; i++)
        dmax = A[i][i] > dmax ? A[i][i] : dmax;
    int done[24] = {0}, rank = 0;
    *psd = 1;
    for (;;) {
        int piv = -1;
        for (int i = 0; i < n; i++) {
            if (done[i])
                continue;
            if (A[i][i] < -tol * dmax)
                *psd = 0;
            if (piv < 0 || A[i][i] > A[piv][piv])
                piv = i;
        }
        if (piv < 0 || A[piv][piv] <= tol * dmax)
            return rank;
        done[piv] = 1;
        rank++;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (!done[i] && !done[j])
                    A[i][j] -= A[i][piv] * A[piv][j] / A[piv][piv];
    }
}

static void test_lame_element(void)
{
    const double nus[3] = {0.3, 0.0, 0.45};
    for (int t = 0; t < 3; t++) {
        double K[24][24];
        exact_element(nus[t], K);
        double asym = 0.0, kmax = 0.0;
        for (int p = 0; p < 24; p++)
            for (int s = 0; s < 24; s++) {
                asym = fmax(asym, fabs(K[p][s] - K[s][p]));
                kmax = fmax(kmax, fabs(K[p][s]));
            }
        T_CHECK(asym <= 1e-15 * kmax, "nu %g: element matrix asymmetric by %g", nus[t], asym);
        double worst = 0.0;
        for (int m = 0; m < 6; m++) {
            double r[24];
            for (int a = 0; a < 8; a++) {
                const double x[3] = {a & 1, (a >> 1) & 1, (a >> 2) & 1};
                rigid_motion(m, x, r + 3 * a);
            }
            for (int p = 0; p < 24; p++) {
                double y = 0.0;
                for (int s = 0; s < 24; s++)
                    y += K[p][s] * r[s];
                worst = fmax(worst, fabs(y));
            }
        }
        T_CHECK(worst <= 1e-14 * kmax, "nu %g: K * rigid motion = %g, expected 0", nus[t], worst);
        int psd, rank = psd_rank(K, 24, 1e-10, &psd);
        T_CHECK(psd && rank == 18, "nu %g: element matrix psd %d rank %d, expected 1 and 18",
                nus[t], psd, rank);

        /* lame3d:1 keeps the corners ax = 1, numbered (j, k) -> j + 2k: local a = 1 + 2j + 4k */
        char spec[64];
        snprintf(spec, sizeof spec, "lame3d:1:%g", nus[t]);
        spk_csr A;
        if (!generate(spec, &A))
            continue;
        double diff = A.nrows == 12 && A.nnz == 144 ? 0.0 : INFINITY;
        for (int64_t r = 0; r < A.nrows && diff < INFINITY; r++)
            for (int64_t p = A.rowptr[r]; p < A.rowptr[r + 1]; p++) {
                const int64_t c = A.colind[p];
                const int a = 1 + 2 * (int)(r / 3), b = 1 + 2 * (int)(c / 3);
                diff = fmax(diff, fabs(A.val[p] - K[3 * a + r % 3][3 * b + c % 3]));
            }
        T_CHECK(diff <= 1e-14 * kmax, "%s (n %lld, nnz %lld) differs from the exact element "
                "block by %g", spec, (long long)A.nrows, (long long)A.nnz, diff);
        spk_csr_free(&A);
    }
}

/* ---- lame3d: the assembled matrix --------------------------------------------------------- */

static void test_lame_assembled(void)
{
    const int64_t Ns[4] = {1, 2, 4, 5};
    for (int t = 0; t < 4; t++) {
        const int64_t N = Ns[t];
        char spec[32];
        snprintf(spec, sizeof spec, "lame3d:%lld", (long long)N);
        spk_csr A;
        if (!generate(spec, &A))
            continue;
        const int64_t n = 3 * N * (N + 1) * (N + 1), nnz = 9 * (3 * N - 2) * (3 * N + 1) * (3 * N + 1);
        T_CHECK(A.nrows == n && A.ncols == n && A.nnz == nnz, "%s: %lld x %lld, %lld entries; "
                "expected n = %lld, nnz = %lld", spec, (long long)A.nrows, (long long)A.ncols,
                (long long)A.nnz, (long long)n, (long long)nnz);
        T_CHECK(spk_csr_is_symmetric(&A), "%s: symmetric bit for bit", spec);
        T_CHECK(canonical_spd_pattern(&A), "%s: sorted rows, positive diagonal", spec);
        /* an interior node's own block is diagonal: its couplings cancel by the cube's mirror
         * symmetries, exactly (the element matrix keeps them bit for bit) */
        int64_t nonzero = 0, interior = 0;
        for (int64_t v = 0; v < n / 3; v++) {
            const int64_t i = 1 + v % N, j = (v / N) % (N + 1), k = v / (N * (N + 1));
            if (i == N || j == 0 || j == N || k == 0 || k == N)
                continue;
            interior++;
            for (int c = 0; c < 3; c++)
                for (int64_t p = A.rowptr[3 * v + c]; p < A.rowptr[3 * v + c + 1]; p++)
                    nonzero += A.colind[p] / 3 == v && A.colind[p] != 3 * v + c && A.val[p] != 0.0;
        }
        T_CHECK(nonzero == 0, "%s: %lld nonzero off-diagonal entries in the %lld interior "
                "nodes' own blocks", spec, (long long)nonzero, (long long)interior);

        double *xyz = NULL;
        int64_t nodes = 0;
        int dim = 0;
        spk_status st = spk_generate_coords(ctx, spec, &xyz, &nodes, &dim);
        T_CHECK(st == SPK_OK && nodes == n / 3 && dim == 3, "%s coordinates: %s, %lld nodes, "
                "dim %d", spec, spk_last_error(ctx), (long long)nodes, dim);
        if (st) {
            spk_csr_free(&A);
            continue;
        }
        /* the rows of nodes at x >= 2h couple to no clamped node: their rows are the
         * unconstrained stiffness's, which maps every rigid-body motion to zero */
        double *r = malloc((size_t)n * sizeof *r), *y = malloc((size_t)n * sizeof *y);
        const double scale = max_abs(A.val, A.nnz);
        for (int m = 0; m < 6; m++) {
            for (int64_t v = 0; v < nodes; v++)
                rigid_motion(m, xyz + 3 * v, r + 3 * v);
            spk_csr_spmv_ref(&A, 1.0, r, 0.0, y);
            double far = 0.0, near = 0.0;
            for (int64_t i = 0; i < n; i++) {
                if (xyz[3 * (i / 3)] > 1.5 / (double)N)
                    far = fmax(far, fabs(y[i]));
                else
                    near = fmax(near, fabs(y[i]));
            }
            T_CHECK(far <= 1e-13 * scale, "%s: rigid motion %d gives %g on rows away from the "
                    "clamped face", spec, m, far);
            if (m < 3)                           /* the clamp holds a translation back */
                T_CHECK(near > 1e-3 * scale, "%s: translation %d gives %g next to the clamp, "
                        "expected a reaction", spec, m, near);
        }
        free(r);
        free(y);
        free(xyz);
        spk_csr_free(&A);
    }
}

static void test_lame_cg(void)
{
    spk_matrix *A = NULL;
    spk_status st = spk_matrix_generate(ctx, "lame3d:4", &A);
    T_CHECK(st == SPK_OK, "lame3d:4: %s", spk_last_error(ctx));
    if (st)
        return;
    const int64_t n = 300;
    double *b = malloc(n * sizeof *b), *x = calloc(n, sizeof *x);
    for (int64_t i = 0; i < n; i++)
        b[i] = i % 3 == 2 ? -1.0 : 0.1;           /* mostly a downward load */
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = SPK_PRECOND_JACOBI;
    opt.rtol = 1e-10;
    spk_result res;
    st = spk_solve(ctx, A, b, x, &opt, &res);
    const double tr = t_true_rel(A, b, x);
    T_CHECK(st == SPK_OK && res.reason == SPK_CONVERGED_RTOL && tr <= 1e-9, "lame3d:4 CG+Jacobi: "
            "%s, %s after %lld iterations, true residual %.3e", spk_last_error(ctx),
            spk_reason_str(res.reason), (long long)res.iterations, tr);
    spk_result_free(&res);
    free(b);
    free(x);
    spk_matrix_destroy(A);
}

/* ---- jump3d ------------------------------------------------------------------------------- */

static void test_jump(void)
{
    const int64_t N = 12;
    const double C = 1e4, hm = 2.0 * C / (C + 1.0);
    spk_csr A, B, P;
    if (!generate("jump3d:12", &A))
        return;
    T_CHECK(A.nrows == N * N * N && A.nnz == 7 * N * N * N - 6 * N * N, "jump3d:12: n %lld nnz "
            "%lld", (long long)A.nrows, (long long)A.nnz);
    T_CHECK(spk_csr_is_symmetric(&A), "jump3d:12: symmetric");
    T_CHECK(canonical_spd_pattern(&A), "jump3d:12: sorted rows, positive diagonal");

    /* conservation: inside, the diagonal is the sum of the six face coefficients off it */
    double worst = 0.0;
    int64_t interior = 0, seen[3] = {0, 0, 0};
    for (int64_t i = 0; i < A.nrows; i++) {
        double sum = 0.0, diag = 0.0;
        for (int64_t p = A.rowptr[i]; p < A.rowptr[i + 1]; p++) {
            sum += A.val[p];
            if (A.colind[p] == i)
                diag = A.val[p];
            else
                for (int k = 0; k < 3; k++)
                    seen[k] += A.val[p] == -(k == 0 ? 1.0 : k == 1 ? C : hm);
        }
        if (A.rowptr[i + 1] - A.rowptr[i] == 7) {
            interior++;
            worst = fmax(worst, fabs(sum) / diag);
        } else {
            T_CHECK(sum > 0.0, "jump3d:12 boundary row %lld: row sum %g", (long long)i, sum);
        }
    }
    T_CHECK(interior == (N - 2) * (N - 2) * (N - 2) && worst <= 1e-15, "jump3d:12: %lld interior "
            "rows, largest |row sum| / diagonal %g", (long long)interior, worst);
    T_CHECK(seen[0] > 0 && seen[1] > 0 && seen[2] > 0 &&
                seen[0] + seen[1] + seen[2] == A.nnz - A.nrows,
            "jump3d:12: off-diagonals -1 (%lld), -CONTRAST (%lld), -harmonic mean (%lld) of %lld",
            (long long)seen[0], (long long)seen[1], (long long)seen[2],
            (long long)(A.nnz - A.nrows));

    if (generate("jump3d:12:1e4", &B)) {
        T_CHECK(B.nnz == A.nnz && !memcmp(B.rowptr, A.rowptr, (size_t)(A.nrows + 1) * 8) &&
                    !memcmp(B.colind, A.colind, (size_t)A.nnz * 4) &&
                    !memcmp(B.val, A.val, (size_t)A.nnz * 8),
                "jump3d:12 twice (default and explicit CONTRAST): the same arrays");
        spk_csr_free(&B);
    }
    spk_csr_free(&A);

    if (generate("jump3d:9:1", &A) && generate("poisson3d:9", &P)) {
        T_CHECK(P.nnz == A.nnz && !memcmp(P.rowptr, A.rowptr, (size_t)(A.nrows + 1) * 8) &&
                    !memcmp(P.colind, A.colind, (size_t)A.nnz * 4) &&
                    !memcmp(P.val, A.val, (size_t)A.nnz * 8),
                "jump3d:9:1 is poisson3d:9 bit for bit");
        spk_csr_free(&P);
    }
    spk_csr_free(&A);

    spk_matrix *M = NULL;
    T_CHECK(spk_matrix_generate(ctx, "jump3d:16", &M) == SPK_OK, "%s", spk_last_error(ctx));
    if (M) {
        const int64_t n = 4096;
        double *b = malloc(n * sizeof *b), *x = calloc(n, sizeof *x);
        for (int64_t i = 0; i < n; i++)
            b[i] = 1.0;
        spk_options opt;
        spk_options_default(&opt);
        opt.method = SPK_METHOD_CG;
        opt.precond = SPK_PRECOND_JACOBI;
        spk_result res;
        spk_status st = spk_solve(ctx, M, b, x, &opt, &res);
        T_CHECK(st == SPK_OK && res.reason == SPK_CONVERGED_RTOL && t_true_rel(M, b, x) <= 1e-7,
                "jump3d:16 CG+Jacobi: %s, %s after %lld", spk_last_error(ctx),
                spk_reason_str(res.reason), (long long)res.iterations);
        spk_result_free(&res);
        free(b);
        free(x);
        spk_matrix_destroy(M);
    }
}

/* ---- coordinates -------------------------------------------------------------------------- */

static void test_coords(void)
{
    static const struct {
        const char *spec;
        int64_t     nodes;
        int         dim;
        double      first[3], last[3];
    } cases[] = {
        {"poisson2d:3", 9, 2, {0.25, 0.25, 0}, {0.75, 0.75, 0}},
        {"poisson3d:4", 64, 3, {0.2, 0.2, 0.2}, {0.8, 0.8, 0.8}},
        {"poisson3d27:3", 27, 3, {0.25, 0.25, 0.25}, {0.75, 0.75, 0.75}},
        {"elasticity3d:3", 27, 3, {0.25, 0.25, 0.25}, {0.75, 0.75, 0.75}},
        {"jump3d:4:10", 64, 3, {0.2, 0.2, 0.2}, {0.8, 0.8, 0.8}},
        {"lame3d:2", 18, 3, {0.5, 0, 0}, {1, 1, 1}},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        double *xyz = NULL;
        int64_t nodes = -1;
        int dim = -1;
        spk_status st = spk_generate_coords(ctx, cases[t].spec, &xyz, &nodes, &dim);
        T_CHECK(st == SPK_OK && nodes == cases[t].nodes && dim == cases[t].dim, "%s: %s, %lld "
                "nodes, dim %d", cases[t].spec, spk_last_error(ctx), (long long)nodes, dim);
        if (st)
            continue;
        double err = 0.0;
        for (int d = 0; d < dim; d++) {
            err = fmax(err, fabs(xyz[d] - cases[t].first[d]));
            err = fmax(err, fabs(xyz[(nodes - 1) * dim + d] - cases[t].last[d]));
        }
        /* x fastest: node 1 steps along x only */
        const double dx = xyz[dim] - xyz[0], dy = xyz[dim + 1] - xyz[1];
        T_CHECK(err <= 1e-15 && dx > 0 && dy == 0, "%s: first/last node off by %g, node 1 "
                "steps (%g, %g)", cases[t].spec, err, dx, dy);
        /* each node's point is where its matrix row says: lame3d's rows 3v..3v+2 */
        spk_csr A;
        if (generate(cases[t].spec, &A)) {
            T_CHECK(A.nrows == nodes * (strncmp(cases[t].spec, "elasticity3d", 12) == 0 ||
                                        strncmp(cases[t].spec, "lame3d", 6) == 0 ? 3 : 1),
                    "%s: %lld rows for %lld nodes", cases[t].spec, (long long)A.nrows,
                    (long long)nodes);
            spk_csr_free(&A);
        }
        free(xyz);
    }

    static const struct {
        const char *spec;
        spk_status  st;
        const char *msg;
    } bad[] = {
        {"powerlaw:100:5", SPK_ERR_UNSUPPORTED, "powerlaw matrices have no node coordinates"},
        {"band:100:1:5", SPK_ERR_UNSUPPORTED, "band matrices have no node coordinates"},
        {"powerlaw:100", SPK_ERR_ARG, "needs AVG"},
        {"lame3d:0", SPK_ERR_ARG, "lame3d:N[:NU] expects an integer N"},
        {"lame3d:2:0.5", SPK_ERR_ARG, "NU = 0.5"},
        {"poisson3d:4:1", SPK_ERR_ARG, "takes one parameter"},
        {"cube:3", SPK_ERR_ARG, "unknown generator 'cube'"},
        {"jump3d:2000", SPK_ERR_ARG, "32-bit"},
    };
    for (size_t t = 0; t < sizeof bad / sizeof bad[0]; t++) {
        double *xyz = (double *)&t;
        int64_t nodes = -1;
        int dim = -1;
        spk_status st = spk_generate_coords(ctx, bad[t].spec, &xyz, &nodes, &dim);
        T_CHECK(st == bad[t].st && strstr(spk_last_error(ctx), bad[t].msg) && !xyz && !nodes &&
                    !dim,
                "coords '%s': %s '%s', expected %s '%s'", bad[t].spec, spk_status_str(st),
                spk_last_error(ctx), spk_status_str(bad[t].st), bad[t].msg);
    }
    double *xyz;
    int64_t nodes;
    int dim;
    T_CHECK(spk_generate_coords(ctx, NULL, &xyz, &nodes, &dim) == SPK_ERR_ARG && !xyz,
            "NULL spec");
    T_CHECK(spk_generate_coords(ctx, "poisson2d:3", NULL, &nodes, &dim) == SPK_ERR_ARG &&
                !nodes && !dim,
            "NULL xyz");
    T_CHECK(spk_generate_coords(NULL, "poisson2d:3", &xyz, &nodes, &dim) == SPK_ERR_ARG,
            "NULL context");
}

/* ---- bad specs, sizes, memory ------------------------------------------------------------- */

static void expect_error(const char *spec, spk_status want, const char *msg)
{
    spk_csr A;
    const double t0 = spk_now();
    spk_status st = spk_generate_csr(ctx, spec, &A);
    const double secs = spk_now() - t0;
    T_CHECK(st == want && strstr(spk_last_error(ctx), msg) && secs < 0.1, "'%s': %s '%s' in "
            "%.3f s, expected %s '%s'", spec, spk_status_str(st), spk_last_error(ctx), secs,
            spk_status_str(want), msg);
    if (st == SPK_OK)
        spk_csr_free(&A);
}

static void test_errors(void)
{
    expect_error("rmat:0", SPK_ERR_ARG, "expects 1 <= SCALE <= 30");
    expect_error("rmat:31", SPK_ERR_ARG, "expects 1 <= SCALE <= 30");
    expect_error("rmat:10:0", SPK_ERR_ARG, "EF >= 1");
    expect_error("rmat:10:2:3:4", SPK_ERR_ARG, "rmat:SCALE[:EF[:SEED]] expects integers");
    expect_error("rmat:x", SPK_ERR_ARG, "rmat:SCALE[:EF[:SEED]] expects integers");
    expect_error("mesh2d:1", SPK_ERR_ARG, "expects 2 <= N");
    expect_error("mesh2d:46341", SPK_ERR_ARG, "expects 2 <= N");
    expect_error("mesh2d:10:x", SPK_ERR_ARG, "mesh2d:N[:SEED] expects integers");
    expect_error("mesh2d:", SPK_ERR_ARG, "mesh2d:N[:SEED] expects integers");
    expect_error("lame3d:", SPK_ERR_ARG, "lame3d:N[:NU] expects an integer N in [1, 2^63), got ''");
    expect_error("lame3d:4:0.5", SPK_ERR_ARG, "NU = 0.5: a Poisson ratio in (-1, 0.5)");
    expect_error("lame3d:4:-1", SPK_ERR_ARG, "NU = -1");
    expect_error("lame3d:4:abc", SPK_ERR_ARG, "expects NU as a number, got 'abc'");
    expect_error("lame3d:4:", SPK_ERR_ARG, "expects NU as a number, got ''");
    expect_error("lame3d:4:0.3:1", SPK_ERR_ARG, "expects nothing after NU");
    expect_error("lame3d:894", SPK_ERR_ARG, "32-bit");
    expect_error("lame3d:99999999999", SPK_ERR_ARG, "32-bit");
    expect_error("jump3d:4:0", SPK_ERR_ARG, "CONTRAST = 0");
    expect_error("jump3d:4:1e200", SPK_ERR_ARG, "CONTRAST = 1e+200");
    expect_error("jump3d:4:nan", SPK_ERR_ARG, "expects CONTRAST as a number, got 'nan'");
    expect_error("jump3d:1291", SPK_ERR_ARG, "32-bit");
    expect_error("jump3d:x", SPK_ERR_ARG, "jump3d:N[:CONTRAST] expects an integer N");
    expect_error("lame3d4", SPK_ERR_ARG, "lame3d:N[:NU], jump3d:N[:CONTRAST]");

    /* sizes that fit the indices but not the memory: refused before any work */
    const uint64_t before = spk_context_alloc_count(ctx);
    expect_error("lame3d:893", SPK_ERR_NOMEM, "needs");
    ctx->host_memory_limit = 1e9;
    expect_error("lame3d:200", SPK_ERR_NOMEM, "more than the 1 GB this context may use");
    expect_error("jump3d:1000", SPK_ERR_NOMEM, "more than the 1 GB this context may use");
    ctx->host_memory_limit = 1e3;
    double *xyz;
    int64_t nodes;
    int dim;
    T_CHECK(spk_generate_coords(ctx, "lame3d:10", &xyz, &nodes, &dim) == SPK_ERR_NOMEM && !xyz,
            "coordinates past the memory limit: %s", spk_last_error(ctx));
    ctx->host_memory_limit = 0;
    T_CHECK(spk_context_alloc_count(ctx) == before, "%llu allocations before the refusals",
            (unsigned long long)(spk_context_alloc_count(ctx) - before));

    T_CHECK(spk_is_generator_spec("lame3d:4") && spk_is_generator_spec("jump3d:") &&
                spk_is_generator_spec("lame3d:4:0.2") && !spk_is_generator_spec("lame3d") &&
                !spk_is_generator_spec("jump3d.mtx"),
            "generator specs");

    /* every allocation failing in turn: NOMEM, nothing left behind */
    const char *specs[] = {"lame3d:3", "jump3d:5"};
    for (int g = 0; g < 2; g++)
        T_CHECK(t_generate_under_failures(ctx, specs[g]), "%s under failing allocations", specs[g]);
    ctx->fail_alloc_at = spk_context_alloc_count(ctx) + 1;
    spk_status st = spk_generate_coords(ctx, "jump3d:5", &xyz, &nodes, &dim);
    ctx->fail_alloc_at = 0;
    T_CHECK(st == SPK_ERR_NOMEM && !xyz && !nodes, "coordinates, allocation failing: %s",
            spk_status_str(st));
}

/* ---- rmat and mesh2d: graphs ---------------------------------------------------------------
 * Each row sorted and unique with its diagonal, the matrix symmetric bit for bit, the diagonal
 * 1 + the sum of the off-diagonal magnitudes (exactly, summed in row order), the same bits on
 * 1 thread as on 3 and from the same seed, another pattern from another seed; mesh2d's
 * degrees 3..9 with its nonzero count exact; rmat's 2^SCALE rows and a heavy tail. */
static int graph_checks(const char *spec, const spk_csr *A)
{
    int ok = canonical_spd_pattern(A) && A->nrows == A->ncols;
    for (int64_t i = 0; ok && i < A->nrows; i++) {
        double off = 0.0, diag = 0.0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const int32_t j = A->colind[p];
            if (j == i) {
                diag = A->val[p];
                continue;
            }
            off += fabs(A->val[p]);
            /* (j, i) holds the same value */
            int64_t lo = A->rowptr[j], hi = A->rowptr[j + 1] - 1, found = -1;
            while (lo <= hi) {
                const int64_t mid = (lo + hi) / 2;
                if (A->colind[mid] == i) {
                    found = mid;
                    break;
                }
                if (A->colind[mid] < i)
                    lo = mid + 1;
                else
                    hi = mid - 1;
            }
            ok = found >= 0 && memcmp(&A->val[found], &A->val[p], sizeof A->val[p]) == 0;
            if (!ok)
                break;
        }
        ok = ok && diag == 1.0 + off;
    }
    T_CHECK(ok, "%s: not a symmetric, sorted, strictly diagonally dominant matrix", spec);
    return ok;
}

static int csr_equal(const spk_csr *a, const spk_csr *b)
{
    return a->nrows == b->nrows && a->nnz == b->nnz &&
           memcmp(a->rowptr, b->rowptr, ((size_t)a->nrows + 1) * sizeof *a->rowptr) == 0 &&
           memcmp(a->colind, b->colind, (size_t)a->nnz * sizeof *a->colind) == 0 &&
           memcmp(a->val, b->val, (size_t)a->nnz * sizeof *a->val) == 0;
}

static void test_graphs(void)
{
    static const char *const specs[] = {"rmat:12", "rmat:11:4:9", "mesh2d:40", "mesh2d:33:5"};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        spk_csr A, B;
#ifdef _OPENMP
        const int saved = omp_get_max_threads();
        omp_set_num_threads(1);
#endif
        const int got = generate(specs[k], &A);
#ifdef _OPENMP
        omp_set_num_threads(3);
#endif
        const int got2 = generate(specs[k], &B);
#ifdef _OPENMP
        omp_set_num_threads(saved);
#endif
        if (!got || !got2)
            continue;
        graph_checks(specs[k], &A);
        T_CHECK(csr_equal(&A, &B), "%s: another matrix on 3 threads than on 1", specs[k]);
        spk_csr_free(&B);
        int64_t maxlen = 0, minlen = A.nrows;
        for (int64_t i = 0; i < A.nrows; i++) {
            const int64_t l = A.rowptr[i + 1] - A.rowptr[i];
            maxlen = l > maxlen ? l : maxlen;
            minlen = l < minlen ? l : minlen;
        }
        if (specs[k][0] == 'm') {                     /* mesh2d:N */
            const int64_t N = atoll(specs[k] + 7);
            T_CHECK(A.nrows == N * N && A.nnz == N * N + 6 * (N - 1) * (N - 1) + 4 * (N - 1) &&
                    minlen == 3 && maxlen <= 9, "%s: %lld rows, %lld entries, rows of %lld..%lld",
                    specs[k], (long long)A.nrows, (long long)A.nnz, (long long)minlen,
                    (long long)maxlen);
        } else {                                      /* rmat:SCALE[:EF] */
            const int scale = atoi(specs[k] + 5);
            const char *ef_s = strchr(specs[k] + 5, ':');
            const int64_t ef = ef_s ? atoll(ef_s + 1) : 16;
            const double mean = (double)A.nnz / (double)A.nrows;
            T_CHECK(A.nrows == (int64_t)1 << scale && A.nnz <= A.nrows * (1 + 2 * ef) &&
                    (double)maxlen > 10.0 * mean, "%s: %lld rows, %lld entries, longest row "
                    "%lld against a mean of %.1f", specs[k], (long long)A.nrows,
                    (long long)A.nnz, (long long)maxlen, mean);
        }
        /* another seed, another pattern */
        char other[64];
        snprintf(other, sizeof other, "%s:%s", specs[k][0] == 'm' ? "mesh2d:40" : "rmat:12",
                 specs[k][0] == 'm' ? "2" : "16:2");
        if (k == 0 || k == 2) {
            spk_csr C;
            if (generate(other, &C)) {
                T_CHECK(C.nnz != A.nnz || memcmp(C.colind, A.colind, (size_t)A.nnz *
                        sizeof *A.colind) != 0, "%s and %s: the same pattern", specs[k], other);
                spk_csr_free(&C);
            }
        }
        spk_csr_free(&A);
    }
    double *xyz = NULL;
    int64_t nodes = 0;
    int dim = 0;
    T_CHECK(spk_generate_coords(ctx, "mesh2d:10", &xyz, &nodes, &dim) == SPK_ERR_UNSUPPORTED &&
            !xyz, "mesh2d has no coordinates to give");
}

int main(void)
{
    ctx = t_context(SPK_DEVICE_CPU);
    test_lame_element();
    test_lame_assembled();
    test_lame_cg();
    test_jump();
    test_coords();
    test_errors();
    test_graphs();
    spk_context_destroy(ctx);
    return t_done("test_generate");
}
