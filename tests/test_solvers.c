/* tests/test_solvers.c -- CG through the public API on real SPD matrices, with and without
 * Jacobi, in every format, on the device given by --device. Every check recomputes the true
 * residual ||b - A x|| / ||b|| on the host from the canonical CSR; on the GPU the iteration
 * count is compared with a CPU run of the same system. A preconditioner of the test's own,
 * plugged in through the public user-preconditioner API (Jacobi applied as an SpMV with
 * diag(A)^-1, so through each method's general path), must give the fused Jacobi's counts for
 * CG, BiCGStab and GMRES. --quick (for compute-sanitizer, whose racecheck of the full run took
 * more than 120 s) keeps the two inputs that converge fastest and one matrix a method. */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static spk_context *ctx, *cpu;
static spk_device dev;
static int quick;                    /* --quick: spd_inputs[0..1] only */

static const char *spd_inputs[] = {"LF10.mtx", "Journals.mtx", "bcsstk09.mtx", "nos5.mtx",
                                   "nos6.mtx", "bcsstk03.mtx", "Trefethen_2000.mtx", "1138_bus.mtx"};

static double *ones_rhs(spk_matrix *A, int64_t n)
{
    double *one = malloc((size_t)n * sizeof *one), *b = calloc((size_t)n, sizeof *b);
    for (int64_t i = 0; i < n; i++)
        one[i] = 1.0;
    spk_matrix_spmv(cpu, A, 1.0, one, 0.0, b);
    free(one);
    return b;
}

/* Solve on ctx c; returns iterations, checks reason RTOL and the host true residual. */
static int64_t solve_check(spk_context *c, spk_matrix *A, const char *name, spk_precond pc,
                           spk_format fmt, double rtol)
{
    spk_matrix_info info;
    spk_matrix_get_info(A, &info);
    int64_t n = info.nrows;
    double *b = ones_rhs(A, n), *x = calloc((size_t)n, sizeof *x);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = pc;
    opt.format = fmt;
    opt.rtol = rtol;
    opt.maxiter = 20 * n;
    spk_result res;
    spk_status st = spk_solve(c, A, b, x, &opt, &res);
    int64_t its = -1;
    if (!t_format_fits(spk_context_device(c), fmt, &info)) {
        T_CHECK(st == SPK_ERR_UNSUPPORTED, "%s %s: %s, expected the refusal of a format that "
                "does not fit", name, spk_format_str(fmt), spk_status_str(st));
        its = -2;                                   /* ELL / DIA guards: not a failure */
    } else {
        T_CHECK(st == SPK_OK, "%s %s: %s", name, spk_format_str(fmt), spk_last_error(c));
        double tr = t_true_rel(A, b, x);
        T_CHECK(res.reason == SPK_CONVERGED_RTOL, "%s %s jacobi=%d: %s after %lld", name,
                spk_format_str(fmt), pc, spk_reason_str(res.reason), (long long)res.iterations);
        T_CHECK(tr <= 10 * rtol, "%s %s jacobi=%d: true residual %.3e > 10 rtol", name,
                spk_format_str(fmt), pc, tr);
        T_CHECK(fabs(res.true_rel - tr) <= 1e-3 * tr + 1e-15, "%s: library true_rel %.6e vs host %.6e",
                name, res.true_rel, tr);
        its = res.iterations;
    }
    free(b);
    free(x);
    return its;
}

static int64_t spk_test_rows(spk_matrix *A)
{
    spk_matrix_info info;
    spk_matrix_get_info(A, &info);
    return info.nrows;
}

static void test_real_spd(void)
{
    const size_t count = quick ? 2 : sizeof spd_inputs / sizeof spd_inputs[0];
    for (size_t m = 0; m < count; m++) {
        spk_matrix *A = NULL;
        spk_status st = spk_matrix_read_mtx(ctx, t_input(spd_inputs[m]), &A);
        T_CHECK(st == SPK_OK, "read %s: %s", spd_inputs[m], spk_last_error(ctx));
        if (st)
            continue;
        for (int pc = SPK_PRECOND_NONE; pc <= SPK_PRECOND_JACOBI; pc++) {
            int64_t ref = solve_check(cpu, A, spd_inputs[m], (spk_precond)pc, SPK_FMT_CSR, 1e-8);
            for (int f = SPK_FMT_COO; f < SPK_FMT_COUNT; f++) {
                if (dev == SPK_DEVICE_CPU && f == SPK_FMT_CSR)
                    continue;
                int64_t its = solve_check(ctx, A, spd_inputs[m], (spk_precond)pc, (spk_format)f, 1e-8);
                /* +-1 on the CPU, where every format sums each row in CSR's order. +-2 on
                 * the GPU, whose kernels sum in other orders; and once CG needs more
                 * iterations than n (or ~500) on an ill-conditioned matrix it has lost
                 * orthogonality and the count moves with rounding by a few percent (seen:
                 * bcsstk03, n = 112, 408 iterations on the H200 against 420 on the CPU;
                 * 1138_bus, kappa 8.6e6, 2118 against 2204 when HYB summed its two parts
                 * separately; nos6, n = 675, 613 in CSR and ELL, 672 in COO against 666 on
                 * the CPU and 664 in SciPy, the residual histories parting at iteration 62 by
                 * 3e-6 and drifting from there: .ci/gpu_diag.sh), so the GPU gets 10% there. */
                int64_t n = A ? spk_test_rows(A) : 0;
                int64_t tol = dev == SPK_DEVICE_CPU ? 1 : 2 + (ref > 500 || ref > n ? ref / 10 : 0);
                if (its >= 0)
                    T_CHECK(llabs(its - ref) <= tol, "%s %s jacobi=%d: %lld iterations vs %lld (csr-cpu)",
                            spd_inputs[m], spk_format_str((spk_format)f), pc, (long long)its, (long long)ref);
            }
        }
        spk_matrix_destroy(A);
    }
}

static void test_reasons(void)
{
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    spk_result res;
    /* indefinite: diag(1, -1, 2) */
    int32_t r[] = {0, 1, 2};
    double v[] = {1, -1, 2}, b[] = {1, 1, 1}, x[3];
    spk_matrix *A = NULL;
    spk_matrix_from_coo(ctx, 3, 3, 3, r, r, v, 0, &A);
    T_CHECK(spk_solve(ctx, A, b, x, &opt, &res) == SPK_OK, "indefinite solve call");
    T_CHECK(res.reason == SPK_DIVERGED_INDEFINITE, "diag(1,-1,2): %s", spk_reason_str(res.reason));
    T_CHECK(isfinite(x[0]) && isfinite(x[1]) && isfinite(x[2]), "no NaN in x");

    /* Jacobi with a negative diagonal is an error for CG */
    opt.precond = SPK_PRECOND_JACOBI;
    T_CHECK(spk_solve(ctx, A, b, x, &opt, &res) == SPK_ERR_UNSUPPORTED, "Jacobi, negative diagonal");
    T_CHECK(strstr(spk_last_error(ctx), "a(2,2)") != NULL, "message names the entry: %s", spk_last_error(ctx));
    spk_matrix_destroy(A);

    /* zero right-hand side: x = 0 exactly, even from a nonzero guess */
    double v2[] = {2, 3, 4}, z[] = {0, 0, 0}, x2[] = {5, 5, 5};
    spk_matrix_from_coo(ctx, 3, 3, 3, r, r, v2, 0, &A);
    opt.precond = SPK_PRECOND_NONE;
    opt.use_x0 = 1;
    T_CHECK(spk_solve(ctx, A, z, x2, &opt, &res) == SPK_OK, "zero rhs call");
    T_CHECK(res.reason == SPK_CONVERGED_ZERO_RHS && res.iterations == 0, "zero rhs: %s",
            spk_reason_str(res.reason));
    T_CHECK(x2[0] == 0 && x2[1] == 0 && x2[2] == 0, "zero rhs gives x = 0");

    /* a diagonal system converges in one step; atol alone */
    opt.use_x0 = 0;
    opt.rtol = 0;
    opt.atol = 1e-12;
    T_CHECK(spk_solve(ctx, A, b, x, &opt, &res) == SPK_OK, "atol call");
    T_CHECK(res.reason == SPK_CONVERGED_ATOL, "atol: %s", spk_reason_str(res.reason));
    T_CHECK(fabs(x[0] - 0.5) < 1e-12 && fabs(x[2] - 0.25) < 1e-12, "diagonal solution");

    /* NaN in b is an argument error, not a NaN result */
    double bn[] = {1, NAN, 1};
    T_CHECK(spk_solve(ctx, A, bn, x, &opt, &res) == SPK_ERR_ARG, "NaN in b");
    T_CHECK(strstr(spk_last_error(ctx), "b(2)") != NULL, "message: %s", spk_last_error(ctx));
    spk_matrix_destroy(A);

    /* maxiter reached */
    spk_matrix_read_mtx(ctx, t_input("bcsstk09.mtx"), &A);
    int64_t n = 1083;
    double *bb = ones_rhs(A, n), *xx = calloc((size_t)n, sizeof *xx);
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.maxiter = 5;
    opt.history = 1;
    T_CHECK(spk_solve(ctx, A, bb, xx, &opt, &res) == SPK_OK, "maxiter call");
    T_CHECK(res.reason == SPK_DIVERGED_MAXIT && res.iterations == 5, "maxiter: %s %lld",
            spk_reason_str(res.reason), (long long)res.iterations);
    T_CHECK(res.history_len == 6 && res.history[5].rnorm == res.rnorm && res.history[0].it == 0,
            "history: %lld rows, last equals the reported residual", (long long)res.history_len);
    spk_result_free(&res);
    T_CHECK(res.history == NULL, "spk_result_free clears the history");

    /* non-square */
    spk_matrix *R = NULL;
    T_CHECK(spk_matrix_read_mtx(ctx, t_input("well1033.mtx"), &R) == SPK_OK, "read well1033");
    T_CHECK(spk_solve(ctx, R, bb, xx, &opt, &res) == SPK_ERR_ARG, "rectangular matrix is refused");
    spk_matrix_destroy(R);
    free(bb);
    free(xx);
    spk_matrix_destroy(A);
}

/* A solve loop on the same matrix allocates the same each time: no growth */
static void test_generated(void)
{
    spk_matrix *A = NULL;
    T_CHECK(spk_matrix_generate(ctx, "poisson3d:20", &A) == SPK_OK, "%s", spk_last_error(ctx));
    if (!A)
        return;
    spk_matrix_info info;
    spk_matrix_get_info(A, &info);
    T_CHECK(info.nrows == 8000 && info.nnz == 7 * 8000 - 6 * 400, "poisson3d:20 size");
    int64_t its = solve_check(ctx, A, "poisson3d:20", SPK_PRECOND_NONE, SPK_FMT_AUTO, 1e-10);
    T_CHECK(its > 10 && its < 200, "poisson3d:20 CG iterations %lld", (long long)its);
    spk_matrix_destroy(A);
}

/* ---- a preconditioner of the caller's own: Jacobi as the SpMV z = D^-1 r ----------------- */

typedef struct user_jacobi {
    spk_context *ctx;
    spk_matrix  *Dinv;               /* diag(1 / a_ii) as an spk matrix on ctx                */
    int64_t      applies, refreshes;
} user_jacobi;

static spk_status uj_apply(void *user, int64_t n, const double *r, double *z)
{
    user_jacobi *u = user;
    u->applies++;
    return spk_matrix_spmv_device(u->ctx, u->Dinv, 1.0, r, 0.0, z);
}

static spk_status uj_refresh(void *user, const spk_matrix *A)
{
    ((user_jacobi *)user)->refreshes++;
    return SPK_OK;
}

static spk_status uj_fail(void *user, int64_t n, const double *r, double *z)
{
    return SPK_ERR_IO;
}

/* D^-1 of A as a diagonal matrix, prepared on ctx */
static spk_matrix *inverse_diagonal(spk_matrix *A)
{
    const int64_t *rp;
    const int32_t *ci;
    const double *va;
    T_CHECK(spk_matrix_csr(A, &rp, &ci, &va) == SPK_OK, "csr of A");
    spk_matrix_info info;
    spk_matrix_get_info(A, &info);
    const int64_t n = info.nrows;
    int32_t *idx = malloc((size_t)(n + 1) * sizeof *idx);
    double *d = calloc((size_t)(n + 1), sizeof *d);
    for (int64_t i = 0; i < n; i++) {
        idx[i] = (int32_t)i;
        for (int64_t p = rp[i]; p < rp[i + 1]; p++)
            if (ci[p] == i)
                d[i] = 1.0 / va[p];
    }
    spk_matrix *D = NULL;
    T_CHECK(spk_matrix_from_coo(ctx, n, n, n, idx, idx, d, 0, &D) == SPK_OK, "%s",
            spk_last_error(ctx));
    T_CHECK(D && spk_matrix_prepare(ctx, D, SPK_FMT_CSR) == SPK_OK, "%s", spk_last_error(ctx));
    free(idx);
    free(d);
    return D;
}

/* One solve of A x = A ones with method m and precond pc (user: u); the iteration count, the
 * reason converged and the host's true residual below rtol. */
static int64_t user_solve(spk_matrix *A, const char *name, spk_method m, spk_precond pc,
                          const spk_precond_user *u, double rtol)
{
    const int64_t n = spk_test_rows(A);
    double *b = ones_rhs(A, n), *x = calloc((size_t)n, sizeof *x);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = m;
    opt.precond = pc;
    opt.precond_user = u;
    opt.rtol = rtol;
    opt.maxiter = 4000;
    spk_result res;
    spk_status st = spk_solve(ctx, A, b, x, &opt, &res);
    T_CHECK(st == SPK_OK, "%s %s %s: %s", name, spk_method_str(m), spk_precond_str(pc),
            spk_last_error(ctx));
    const double tr = t_true_rel(A, b, x);
    T_CHECK(st || (res.reason == SPK_CONVERGED_RTOL && tr <= rtol && res.precond == pc),
            "%s %s %s: %s after %lld, true residual %.3e", name, spk_method_str(m),
            spk_precond_str(pc), spk_reason_str(res.reason), (long long)res.iterations, tr);
    free(b);
    free(x);
    return st ? -1 : res.iterations;
}

static void test_user_precond(void)
{
    static const struct {
        spk_method m;
        const char *file;
    } cases[] = {
        {SPK_METHOD_CG, "bcsstk09.mtx"},       {SPK_METHOD_CG, "nos6.mtx"},
        {SPK_METHOD_CG, "nos5.mtx"},           {SPK_METHOD_CG, "1138_bus.mtx"},
        {SPK_METHOD_BICGSTAB, "bcsstk09.mtx"}, {SPK_METHOD_BICGSTAB, "pores_1.mtx"},
        {SPK_METHOD_BICGSTAB, "sherman1.mtx"}, {SPK_METHOD_BICGSTAB, "cage8.mtx"},
        {SPK_METHOD_GMRES, "orsirr_1.mtx"},    {SPK_METHOD_GMRES, "pores_1.mtx"},
        {SPK_METHOD_GMRES, "nos5.mtx"},        {SPK_METHOD_GMRES, "bcsstk09.mtx"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (quick && c % 4 != 0)
            continue;
        spk_matrix *A = NULL;
        T_CHECK(spk_matrix_read_mtx(ctx, t_input(cases[c].file), &A) == SPK_OK, "read %s: %s",
                cases[c].file, spk_last_error(ctx));
        if (!A)
            continue;
        user_jacobi uj = {ctx, inverse_diagonal(A), 0, 0};
        /* stream_ordered: the SpMV queues on the context's stream; the other shape (the
         * stream synchronised before each apply) once per method */
        const spk_precond_user u = {"test-jacobi", uj_apply, uj_refresh, &uj, c % 4 != 1};
        const int64_t fused = user_solve(A, cases[c].file, cases[c].m, SPK_PRECOND_JACOBI, NULL, 1e-8);
        const int64_t general = user_solve(A, cases[c].file, cases[c].m, SPK_PRECOND_USER, &u, 1e-8);
        const int64_t tol = fused / 100 > 1 ? fused / 100 : 1;
        printf("user preconditioner: %s %s: %lld iterations, fused Jacobi %lld\n", cases[c].file, spk_method_str(cases[c].m), (long long)general, (long long)fused);
        T_CHECK(fused > 0 && llabs(general - fused) <= tol && uj.applies >= general,
                "%s %s: user Jacobi %lld iterations (%lld applies), fused Jacobi %lld",
                cases[c].file, spk_method_str(cases[c].m), (long long)general,
                (long long)uj.applies, (long long)fused);
        spk_matrix_destroy(uj.Dinv);
        spk_matrix_destroy(A);
    }

    /* the callbacks' contract: apply required; its failure ends the solve with its status and
     * a message naming it; refresh called after a value update */
    spk_matrix *A = NULL;
    T_CHECK(spk_matrix_read_mtx(ctx, t_input("LF10.mtx"), &A) == SPK_OK, "read LF10");
    if (!A)
        return;
    const int64_t n = spk_test_rows(A);
    double *b = ones_rhs(A, n), *x = calloc((size_t)n, sizeof *x);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = SPK_PRECOND_USER;
    spk_result res;
    spk_solver *S = NULL;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_ERR_ARG && !S &&
                strstr(spk_last_error(ctx), "precond_user"),
            "USER without callbacks: %s", spk_last_error(ctx));
    spk_precond_user bad = {"broken", uj_fail, NULL, NULL, 1};
    opt.precond_user = &bad;
    T_CHECK(spk_solve(ctx, A, b, x, &opt, &res) == SPK_ERR_IO &&
                strstr(spk_last_error(ctx), "'broken'") && strstr(spk_last_error(ctx), "apply"),
            "a failing apply: %s", spk_last_error(ctx));
    user_jacobi uj = {ctx, inverse_diagonal(A), 0, 0};
    spk_precond_user good = {NULL, uj_apply, uj_refresh, &uj, 1};
    opt.precond_user = &good;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(S && spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason == SPK_CONVERGED_RTOL,
            "user Jacobi on LF10: %s", spk_last_error(ctx));
    const int64_t *rp;
    const int32_t *ci;
    const double *va;
    spk_matrix_csr(A, &rp, &ci, &va);
    const int64_t nnz = rp[n];
    double *v2 = malloc((size_t)nnz * sizeof *v2);
    for (int64_t p = 0; p < nnz; p++)
        v2[p] = 2.0 * va[p];
    T_CHECK(spk_matrix_update_values(ctx, A, nnz, v2, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(S && spk_solver_solve(S, b, x, &res) == SPK_OK && uj.refreshes == 1,
            "refresh after an update: %lld calls", (long long)uj.refreshes);
    spk_solver_destroy(S);
    spk_matrix_destroy(uj.Dinv);
    spk_matrix_destroy(A);
    free(v2);
    free(b);
    free(x);
}

/* ---- systems near the ends of the double range ------------------------------------------
 * A scaled by 1e200 or 1e-200 (b = A ones scaled with it) must converge as A does: the same
 * iterations within rounding (within 2, or 10%: the scaled entries are rounded, a relative
 * change of 1e-16 each, which moves BiCGStab on pores_1 from 59 to 63), and exactly the same
 * under a power of two;
 * the 1 x 1 [1e250] in one iteration; diag(1e300, 1e-300) converges too, and where a method
 * cannot (BiCGStab without M: ||A p||^2 passes 1e308 whatever the scaling) the reason's
 * detail says why. */
static spk_matrix *scaled_copy(spk_matrix *A, double f)
{
    const int64_t *rp;
    const int32_t *ci;
    const double *va;
    spk_matrix_csr(A, &rp, &ci, &va);
    const int64_t n = spk_test_rows(A), nnz = rp[n];
    double *v = malloc((size_t)(nnz + 1) * sizeof *v);
    for (int64_t p = 0; p < nnz; p++)
        v[p] = va[p] * f;
    spk_matrix *B = NULL;
    T_CHECK(spk_matrix_from_csr(ctx, n, n, rp, ci, v, 0, &B) == SPK_OK, "%s", spk_last_error(ctx));
    free(v);
    return B;
}

static int64_t scaled_solve(spk_matrix *A, spk_method m, spk_precond pc, double *true_rel,
                            spk_reason *reason, char *detail, size_t len)
{
    const int64_t n = spk_test_rows(A);
    const int64_t *rp;
    const int32_t *ci;
    const double *va;
    spk_matrix_csr(A, &rp, &ci, &va);
    double *b = calloc((size_t)n + 1, sizeof *b), *x = calloc((size_t)n + 1, sizeof *x);
    for (int64_t i = 0; i < n; i++)           /* b = A ones on the host, no SpMV overflow */
        for (int64_t p = rp[i]; p < rp[i + 1]; p++)
            b[i] += va[p];
    spk_options opt;
    spk_options_default(&opt);
    opt.method = m;
    opt.precond = pc;
    opt.maxiter = 3000;
    spk_result res;
    spk_status st = spk_solve(ctx, A, b, x, &opt, &res);
    T_CHECK(st == SPK_OK, "scaled solve: %s", spk_last_error(ctx));
    *true_rel = t_true_rel(A, b, x);
    *reason = res.reason;
    if (detail)
        snprintf(detail, len, "%s", res.reason_detail);
    free(b);
    free(x);
    return st ? -1 : res.iterations;
}

static void test_extreme_scales(void)
{
    static const struct {
        const char *file;
        spk_method m;
        spk_precond pc;
    } cases[] = {
        {"bcsstk09.mtx", SPK_METHOD_CG, SPK_PRECOND_NONE},
        {"bcsstk09.mtx", SPK_METHOD_CG, SPK_PRECOND_JACOBI},
        {"pores_1.mtx", SPK_METHOD_BICGSTAB, SPK_PRECOND_JACOBI},
        {"cage8.mtx", SPK_METHOD_BICGSTAB, SPK_PRECOND_NONE},
        {"pores_1.mtx", SPK_METHOD_GMRES, SPK_PRECOND_JACOBI},
        {"cage8.mtx", SPK_METHOD_GMRES, SPK_PRECOND_NONE},
    };
    const double factors[] = {1e200, 1e-200, 0x1p664, 0x1p-700};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (quick && c % 3 != 0)
            continue;
        spk_matrix *A = NULL;
        T_CHECK(spk_matrix_read_mtx(ctx, t_input(cases[c].file), &A) == SPK_OK, "read %s",
                cases[c].file);
        if (!A)
            continue;
        double tr1, tr;
        spk_reason why1, why;
        const int64_t ref = scaled_solve(A, cases[c].m, cases[c].pc, &tr1, &why1, NULL, 0);
        T_CHECK(why1 == SPK_CONVERGED_RTOL, "%s %s at scale 1: %s", cases[c].file,
                spk_method_str(cases[c].m), spk_reason_str(why1));
        for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++) {
            spk_matrix *B = scaled_copy(A, factors[f]);
            if (!B)
                continue;
            const int64_t its = scaled_solve(B, cases[c].m, cases[c].pc, &tr, &why, NULL, 0);
            const int exact = f >= 2;                /* a power of two: the same iterations */
            const int64_t tol = exact ? 0 : ref / 10 > 2 ? ref / 10 : 2;
            T_CHECK(why == SPK_CONVERGED_RTOL && llabs(its - ref) <= tol && tr <= 1e-8,
                    "%s %s %s x %g: %s after %lld (%lld at scale 1), true residual %.2e",
                    cases[c].file, spk_method_str(cases[c].m), spk_precond_str(cases[c].pc),
                    factors[f], spk_reason_str(why), (long long)its, (long long)ref, tr);
            spk_matrix_destroy(B);
        }
        spk_matrix_destroy(A);
    }

    /* 1 x 1 [1e250]; diag(1e300, 1e-300) */
    int32_t r[] = {0, 1};
    double one[] = {1e250}, d[] = {1e300, 1e-300};
    spk_matrix *A1 = NULL, *D = NULL;
    spk_matrix_from_coo(ctx, 1, 1, 1, r, r, one, 0, &A1);
    spk_matrix_from_coo(ctx, 2, 2, 2, r, r, d, 0, &D);
    for (int m = SPK_METHOD_CG; m <= SPK_METHOD_GMRES; m++) {
        double tr;
        spk_reason why;
        const int64_t its = scaled_solve(A1, (spk_method)m, SPK_PRECOND_NONE, &tr, &why, NULL, 0);
        T_CHECK(why == SPK_CONVERGED_RTOL && its == 1 && tr <= 1e-8, "[1e250] %s: %s after %lld",
                spk_method_str((spk_method)m), spk_reason_str(why), (long long)its);
        if (m == SPK_METHOD_BICGSTAB)
            continue;
        scaled_solve(D, (spk_method)m, SPK_PRECOND_NONE, &tr, &why, NULL, 0);
        T_CHECK(why == SPK_CONVERGED_RTOL && tr <= 1e-8, "diag(1e300, 1e-300) %s: %s, %.2e",
                spk_method_str((spk_method)m), spk_reason_str(why), tr);
    }
    /* BiCGStab without M on diag(1e300, 1e-300), b = ones: ||A p||^2 overflows */
    const double bb[] = {1.0, 1.0};
    double xx[2];
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_BICGSTAB;
    opt.precond = SPK_PRECOND_NONE;
    spk_result res;
    T_CHECK(spk_solve(ctx, D, bb, xx, &opt, &res) == SPK_OK && res.reason < 0 &&
                strstr(res.reason_detail, "equilibrate"),
            "diag(1e300, 1e-300) BiCGStab: %s, detail '%s'", spk_reason_str(res.reason),
            res.reason_detail);
    spk_matrix_destroy(A1);
    spk_matrix_destroy(D);
}

int main(int argc, char **argv)
{
    dev = t_device_from_args(argc, argv);
    for (int a = 1; a < argc; a++)
        quick |= strcmp(argv[a], "--quick") == 0;
    ctx = t_context(dev);
    cpu = t_context(SPK_DEVICE_CPU);
    test_real_spd();
    test_reasons();
    test_generated();
    test_user_precond();
    test_extreme_scales();
    spk_context_destroy(ctx);
    spk_context_destroy(cpu);
    return t_done(dev == SPK_DEVICE_CPU ? "test_solvers (cpu)" : "test_solvers (gpu)");
}
