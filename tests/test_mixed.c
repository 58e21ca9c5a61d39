/* tests/test_mixed.c -- mixed precision (--precision mixed): the fp32 CSR operator against a
 * reference of its own definition and against the fp64 SpMV; the refinement loop on real and
 * generated systems, every method and preconditioner, with the true residual recomputed on the
 * host from the fp64 CSR; the fallbacks to double and what they say; a second solve and a
 * value refresh that allocate nothing; a tight rtol. On a CUDA context (--device gpu) the
 * same checks run on the CUDA rows' fp32 twins, and the operator named is one of them. */
#include "util.h"
#include "../kernels/formats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static spk_device dev;
static spk_context *ctx;

/* ---- csr32-cpu -------------------------------------------------------------------------- */

/* y = alpha A32 x + beta y by the definition: each value rounded to float, the products and
 * the row sum in double, in column order. */
static void ref32(const spk_csr *A, double alpha, const double *x, double beta, double *y)
{
    for (int64_t i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            s += (double)(float)A->val[p] * x[A->colind[p]];
        y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
    }
}

static void test_csr32(void)
{
    size_t nb = 0;
    const spk_spmv_backend *const *all = spk_backend_all(&nb);
    int listed = 0;
    for (size_t i = 0; i < nb; i++)
        listed |= all[i] == &spk_backend_csr32_cpu;
    T_CHECK(!listed, "csr32-cpu is not in the registry");
    T_CHECK(spk_backend_find(SPK_FMT_CSR, SPK_DEVICE_CPU) == &spk_backend_csr_cpu,
            "the CSR CPU row is still csr-cpu");

    /* 5000 rows of ~10: past the OpenMP threshold (32768 entries); 300: below it */
    const int64_t sizes[][2] = {{5000, 10}, {300, 4}, {1, 1}, {0, 3}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int64_t n = sizes[s][0];
        spk_csr A;
        t_random_csr(ctx, n, n, sizes[s][1], 100 + s, &A);
        uint64_t seed = 7 + s;
        for (int64_t p = 0; p < A.nnz; p++)         /* magnitudes over 1e-3 .. 1e3 */
            A.val[p] = t_randu(&seed) * pow(10.0, 3.0 * t_randu(&seed));
        double *x = t_rand_vec(n, 3 + s), *y = malloc((size_t)(n + 1) * sizeof *y),
               *yr = malloc((size_t)(n + 1) * sizeof *yr), *y64 = malloc((size_t)(n + 1) * sizeof *y64);
        void *state = NULL;
        T_CHECK(spk_backend_csr32_cpu.setup(ctx, &A, &state) == SPK_OK, "%s", spk_last_error(ctx));
        for (int64_t i = 0; i < n; i++)
            y[i] = NAN;                              /* beta = 0 must not read y */
        T_CHECK(spk_backend_csr32_cpu.spmv(ctx, state, 1.5, x, 0.0, y) == SPK_OK, "spmv");
        ref32(&A, 1.5, x, 0.0, yr);
        const double e32 = t_rel_diff(y, yr, n);
        T_CHECK(e32 <= 1e-15, "n = %lld: csr32 against its definition: %.2e", (long long)n, e32);
        spk_csr_spmv_ref(&A, 1.5, x, 0.0, y64);
        const double e64 = t_rel_diff(y, y64, n);
        T_CHECK(e64 <= 1e-6, "n = %lld: csr32 against the fp64 SpMV: %.2e", (long long)n, e64);
        if (n >= 300)
            T_CHECK(e64 > 0.0, "n = %lld: the fp32 values are not the fp64 ones (%.2e)",
                    (long long)n, e64);
        /* beta != 0, then the values refilled */
        for (int64_t i = 0; i < n; i++)
            y[i] = yr[i] = x[i];
        spk_backend_csr32_cpu.spmv(ctx, state, -1.0, x, 0.5, y);
        ref32(&A, -1.0, x, 0.5, yr);
        T_CHECK(t_rel_diff(y, yr, n) <= 1e-15, "beta = 0.5: %.2e", t_rel_diff(y, yr, n));
        for (int64_t p = 0; p < A.nnz; p++)
            A.val[p] = -2.0 * A.val[p] + 0.1;
        const uint64_t before = spk_context_alloc_count(ctx);
        T_CHECK(spk_backend_csr32_cpu.update(ctx, state, &A) == SPK_OK, "update");
        T_CHECK(spk_context_alloc_count(ctx) == before, "the update allocated");
        spk_backend_csr32_cpu.spmv(ctx, state, 1.0, x, 0.0, y);
        ref32(&A, 1.0, x, 0.0, yr);
        T_CHECK(t_rel_diff(y, yr, n) <= 1e-15, "after the update: %.2e", t_rel_diff(y, yr, n));
        spk_backend_csr32_cpu.destroy(state);
        spk_csr_free(&A);
        free(x);
        free(y);
        free(yr);
        free(y64);
    }
}

/* ---- the refinement loop ---------------------------------------------------------------- */

static void set_opt(spk_options *o, spk_method m, spk_precond pc, double rtol, spk_precision p)
{
    spk_options_default(o);
    o->method = m;
    o->precond = pc;
    o->rtol = rtol;
    o->precision = p;
}

/* Solve in double and in mixed from the same b: the mixed answer meets rtol against the fp64
 * A (recomputed here), lies within x_tol of the double one, and took >= 1 refinement step. */
static void check_pair(const char *what, spk_method m, spk_precond pc, double rtol, double x_tol)
{
    spk_matrix *A = t_matrix(ctx, what);
    const int64_t n = A->csr.nrows;
    double *b = t_rand_vec(n, 11), *xd = calloc((size_t)n, sizeof *xd),
           *xm = calloc((size_t)n, sizeof *xm);
    spk_options o;
    spk_result rd, rm;
    set_opt(&o, m, pc, rtol, SPK_PRECISION_DOUBLE);
    T_CHECK(spk_solve(ctx, A, b, xd, &o, &rd) == SPK_OK && rd.reason > 0, "%s %s double: %s %s",
            what, spk_method_str(m), spk_reason_str(rd.reason), spk_last_error(ctx));
    T_CHECK(rd.precision == SPK_PRECISION_DOUBLE && rd.refinement_steps == 0 &&
            rd.precision_reason[0] == '\0', "%s: a double solve says double", what);
    set_opt(&o, m, pc, rtol, SPK_PRECISION_MIXED);
    T_CHECK(spk_solve(ctx, A, b, xm, &o, &rm) == SPK_OK, "%s: %s", what, spk_last_error(ctx));
    const double tr = t_true_rel(A, b, xm), dx = t_rel_diff(xm, xd, n);
    T_CHECK(rm.reason > 0 && tr <= rtol, "%s %s mixed: %s, true rel %.2e (rtol %.0e): %s", what,
            spk_method_str(m), spk_reason_str(rm.reason), tr, rtol, rm.precision_reason);
    T_CHECK(rm.precision == SPK_PRECISION_MIXED && rm.refinement_steps >= 1 &&
            strncmp(rm.precision_reason, "mixed: ", 7) == 0, "%s: mixed ran (%lld steps): %s",
            what, (long long)rm.refinement_steps, rm.precision_reason);
    T_CHECK(dx <= x_tol, "%s %s: x mixed against x double: %.2e", what, spk_method_str(m), dx);
    T_CHECK(fabs(rm.true_rel - tr) <= 0.1 * tr + 1e-300, "%s: true_rel %.3e, recomputed %.3e",
            what, rm.true_rel, tr);
    printf("  %-18s %-8s %-7s double %5lld its, mixed %5lld its in %lld steps, true rel %.2e, "
           "|dx| %.1e\n", what, spk_method_str(m), spk_precond_str(pc), (long long)rd.iterations,
           (long long)rm.iterations, (long long)rm.refinement_steps, tr, dx);
    spk_matrix_destroy(A);
    free(b);
    free(xd);
    free(xm);
}

static void test_systems(void)
{
    /* x_tol: both answers meet rtol, so they differ by up to cond(A) rtol; 1e-10 keeps that
     * below 1e-6 for these matrices (measured: 1e-9 at most) */
    check_pair("poisson3d:20", SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-10, 1e-6);
    check_pair("bcsstk09.mtx", SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-10, 1e-6);
    check_pair("nos6.mtx", SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-10, 1e-6);
    check_pair("orsirr_1.mtx", SPK_METHOD_BICGSTAB, SPK_PRECOND_JACOBI, 1e-10, 1e-6);
    check_pair("orsirr_1.mtx", SPK_METHOD_GMRES, SPK_PRECOND_JACOBI, 1e-10, 1e-6);
    check_pair("sherman1.mtx", SPK_METHOD_BICGSTAB, SPK_PRECOND_JACOBI, 1e-10, 1e-6);
    check_pair("sherman1.mtx", SPK_METHOD_GMRES, SPK_PRECOND_JACOBI, 1e-10, 1e-6);
}

/* Every SPD matrix of inputs/ (their MANIFEST's SPD list), CG + Jacobi to rtol 1e-8: mixed
 * converges wherever double does, with the true residual against the fp64 A at rtol. */
static void test_spd_inputs(void)
{
    static const char *const spd[] = {"bcsstk13.mtx", "Trefethen_2000.mtx", "1138_bus.mtx",
                                      "bcsstk09.mtx", "nos6.mtx", "nos5.mtx", "bcsstk03.mtx",
                                      "LF10.mtx", "Trefethen_20b.mtx", "Journals.mtx"};
    for (size_t i = 0; i < sizeof spd / sizeof spd[0]; i++) {
        spk_matrix *A = t_matrix(ctx, spd[i]);
        const int64_t n = A->csr.nrows;
        double *b = t_rand_vec(n, 31), *x = calloc((size_t)n, sizeof *x);
        spk_options o;
        spk_result rd, rm;
        set_opt(&o, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-8, SPK_PRECISION_DOUBLE);
        T_CHECK(spk_solve(ctx, A, b, x, &o, &rd) == SPK_OK, "%s: %s", spd[i], spk_last_error(ctx));
        set_opt(&o, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-8, SPK_PRECISION_MIXED);
        memset(x, 0, (size_t)n * sizeof *x);
        T_CHECK(spk_solve(ctx, A, b, x, &o, &rm) == SPK_OK, "%s: %s", spd[i], spk_last_error(ctx));
        const double tr = t_true_rel(A, b, x);
        T_CHECK(rm.reason <= 0 || tr <= 1e-8, "%s: mixed says %s with true rel %.2e", spd[i],
                spk_reason_str(rm.reason), tr);
        T_CHECK(rd.reason <= 0 || (rm.reason > 0 && rm.precision == SPK_PRECISION_MIXED),
                "%s: double converged, mixed %s (%s): %s", spd[i], spk_reason_str(rm.reason),
                spk_precision_str(rm.precision), rm.precision_reason);
        printf("  %-18s double %5lld its, mixed %5lld its, true rel %.2e: %s\n", spd[i],
               (long long)rd.iterations, (long long)rm.iterations, tr, rm.precision_reason);
        spk_matrix_destroy(A);
        free(b);
        free(x);
    }
}

/* Every method with every preconditioner row (the preconditioner built on the fp64 A sees
 * the inner right-hand sides; AMG runs its cycle in fp32 inside the fp64 method instead). */
static void test_methods_preconds(void)
{
    const spk_method ms[] = {SPK_METHOD_CG, SPK_METHOD_BICGSTAB, SPK_METHOD_GMRES,
                             SPK_METHOD_FGMRES, SPK_METHOD_MINRES};
    const spk_precond pcs[] = {SPK_PRECOND_NONE, SPK_PRECOND_JACOBI, SPK_PRECOND_AMG,
                               SPK_PRECOND_ILU0, SPK_PRECOND_IC0, SPK_PRECOND_ILUT,
                               SPK_PRECOND_BJACOBI, SPK_PRECOND_CHEBYSHEV};
    spk_matrix *A = t_matrix(ctx, "poisson3d:12");
    const int64_t n = A->csr.nrows;
    double *b = t_rand_vec(n, 5), *x = calloc((size_t)n, sizeof *x);
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (size_t j = 0; j < sizeof pcs / sizeof pcs[0]; j++) {
            spk_options o;
            spk_result r;
            set_opt(&o, ms[i], pcs[j], 1e-9, SPK_PRECISION_MIXED);
            const spk_status st = spk_solve(ctx, A, b, x, &o, &r);
            const double tr = t_true_rel(A, b, x);
            /* AMG: the method in fp64 around the fp32 cycle, no refinement */
            const int amg = pcs[j] == SPK_PRECOND_AMG;
            T_CHECK(st == SPK_OK && r.reason > 0 && tr <= 1e-9 &&
                    (amg ? r.refinement_steps == 0 &&
                               strstr(r.precision_reason, "V-cycle in fp32 inside") != NULL
                         : r.refinement_steps >= 1) &&
                    r.precision == SPK_PRECISION_MIXED, "%s + %s: %s %s, true rel %.2e, %lld "
                    "steps: %s", spk_method_str(ms[i]), spk_precond_str(pcs[j]),
                    spk_status_str(st), spk_reason_str(r.reason), tr,
                    (long long)r.refinement_steps, r.precision_reason);
        }
    spk_matrix_destroy(A);
    free(b);
    free(x);
}

/* ---- the fallbacks ---------------------------------------------------------------------- */

/* The 1-D Laplacian of n rows with a(i0, j0) (and a(j0, i0)) set to v, 1-based. */
static spk_matrix *laplace_with(int64_t n, int64_t i0, int64_t j0, double v)
{
    int32_t *ri = malloc((size_t)(3 * n) * sizeof *ri), *ci = malloc((size_t)(3 * n) * sizeof *ci);
    double *va = malloc((size_t)(3 * n) * sizeof *va);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i - 1; j <= i + 1; j++) {
            if (j < 0 || j >= n)
                continue;
            ri[k] = (int32_t)i;
            ci[k] = (int32_t)j;
            va[k++] = i == j ? 4.0 : -1.0;
        }
    for (int64_t q = 0; q < k; q++)
        if ((ri[q] == i0 - 1 && ci[q] == j0 - 1) || (ri[q] == j0 - 1 && ci[q] == i0 - 1))
            va[q] = v;
    spk_matrix *A = NULL;
    T_CHECK(spk_matrix_from_coo(ctx, n, n, k, ri, ci, va, 0, &A) == SPK_OK, "%s", spk_last_error(ctx));
    free(ri);
    free(ci);
    free(va);
    return A;
}

static void check_fallback(spk_matrix *A, const char *want)
{
    const int64_t n = A->csr.nrows;
    double *b = t_rand_vec(n, 9), *x = calloc((size_t)n, sizeof *x);
    spk_options o;
    spk_result r;
    set_opt(&o, SPK_METHOD_BICGSTAB, SPK_PRECOND_JACOBI, 1e-10, SPK_PRECISION_MIXED);
    T_CHECK(spk_solve(ctx, A, b, x, &o, &r) == SPK_OK, "%s", spk_last_error(ctx));
    const double tr = t_true_rel(A, b, x);
    T_CHECK(r.reason > 0 && tr <= 1e-10, "fallback: %s, true rel %.2e", spk_reason_str(r.reason), tr);
    T_CHECK(r.precision == SPK_PRECISION_DOUBLE && r.refinement_steps == 0, "ran in double");
    T_CHECK(strstr(r.precision_reason, "fell back to double") && strstr(r.precision_reason, want),
            "precision_reason '%s' names '%s'", r.precision_reason, want);
    free(b);
    free(x);
}

static void test_fallback(void)
{
    spk_matrix *A = laplace_with(50, 12, 12, 1e39);
    check_fallback(A, "a(12,12) = 1.0e+39 does not fit fp32");
    spk_matrix_destroy(A);
    A = laplace_with(50, 12, 11, 1e-50);
    check_fallback(A, "a(11,12) = 1.0e-50 is subnormal or zero in fp32");
    spk_matrix_destroy(A);
    A = laplace_with(50, 3, 2, -2e-39);              /* subnormal in fp32, not zero */
    check_fallback(A, "a(2,3) = -2.0e-39 is subnormal");
    spk_matrix_destroy(A);
}

/* ---- no allocation after the first solve; a value refresh refills A32 in place ---------- */
static void test_no_alloc(void)
{
    spk_matrix *A = t_matrix(ctx, "poisson3d:14");
    const int64_t n = A->csr.nrows, nnz = A->csr.nnz;
    spk_options o;
    set_opt(&o, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-10, SPK_PRECISION_MIXED);
    spk_solver *S = NULL;
    T_CHECK(spk_solver_create(ctx, A, &o, &S) == SPK_OK, "%s", spk_last_error(ctx));
    double *b = t_rand_vec(n, 2), *x = calloc((size_t)n, sizeof *x),
           *val = malloc((size_t)nnz * sizeof *val);
    spk_result r;
    T_CHECK(S && spk_solver_solve(S, b, x, &r) == SPK_OK && r.reason > 0, "first solve");
    uint64_t before = spk_context_alloc_count(ctx);
    T_CHECK(spk_solver_solve(S, b, x, &r) == SPK_OK && r.reason > 0 && r.refinement_steps >= 1,
            "second solve: %s", spk_reason_str(r.reason));
    T_CHECK(spk_context_alloc_count(ctx) == before, "the second solve allocated %llu times",
            (unsigned long long)(spk_context_alloc_count(ctx) - before));
    /* a first update of the same values: on a GPU the first one makes, counted, what the
     * device refills need (canonical values and row offsets on the device) */
    memcpy(val, A->csr.val, (size_t)nnz * sizeof *val);
    T_CHECK(spk_matrix_update_values(ctx, A, nnz, val, 0) == SPK_OK &&
            spk_solver_solve(S, b, x, &r) == SPK_OK && r.reason > 0, "the first update");
    /* new values: the diagonal doubled */
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = A->csr.rowptr[i]; p < A->csr.rowptr[i + 1]; p++)
            val[p] = A->csr.colind[p] == i ? 2.0 * A->csr.val[p] : A->csr.val[p];
    before = spk_context_alloc_count(ctx);
    T_CHECK(spk_matrix_update_values(ctx, A, nnz, val, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_solve(S, b, x, &r) == SPK_OK && r.reason > 0, "after the update");
    T_CHECK(spk_context_alloc_count(ctx) == before, "update + solve allocated %llu times",
            (unsigned long long)(spk_context_alloc_count(ctx) - before));
    const double tr = t_true_rel(A, b, x);
    T_CHECK(tr <= 1e-10, "after the update the answer is the new A's: true rel %.2e", tr);
    /* a value that no longer fits fp32 (the diagonal of row 1): the refresh sees it and the
     * next solve runs in double, saying so */
    for (int64_t p = A->csr.rowptr[0]; p < A->csr.rowptr[1]; p++)
        if (A->csr.colind[p] == 0)
            val[p] = 1e40;
    T_CHECK(spk_matrix_update_values(ctx, A, nnz, val, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_solve(S, b, x, &r) == SPK_OK && r.reason > 0 &&
            r.precision == SPK_PRECISION_DOUBLE && strstr(r.precision_reason, "a(1,1) = 1.0e+40"),
            "after an update to 1e40: %s, %s", spk_reason_str(r.reason), r.precision_reason);
    T_CHECK(t_true_rel(A, b, x) <= 1e-10, "true rel %.2e", t_true_rel(A, b, x));
    spk_solver_destroy(S);
    spk_matrix_destroy(A);
    free(b);
    free(x);
    free(val);
}

/* ---- rtol 1e-12: reached with more steps, or a reason that is no convergence ------------- */
static void test_tight(void)
{
    /* nos6 (cond ~ 8e6): 1e-12 lies below what double reaches there (its own CG ends with
     * DIVERGED_TRUE_RESIDUAL_MISMATCH): a reason, never a convergence above rtol */
    const char *mats[] = {"poisson3d:20", "nos6.mtx", "sherman1.mtx", "bcsstk09.mtx"};
    const spk_method ms[] = {SPK_METHOD_CG, SPK_METHOD_CG, SPK_METHOD_GMRES, SPK_METHOD_CG};
    const int must_converge[] = {1, 0, 1, 1};
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
        spk_matrix *A = t_matrix(ctx, mats[i]);
        const int64_t n = A->csr.nrows;
        double *b = t_rand_vec(n, 13), *x = calloc((size_t)n, sizeof *x);
        spk_options o;
        spk_result r, r8;
        set_opt(&o, ms[i], SPK_PRECOND_JACOBI, 1e-8, SPK_PRECISION_MIXED);
        spk_solve(ctx, A, b, x, &o, &r8);
        o.rtol = 1e-12;
        o.history = 1;
        T_CHECK(spk_solve(ctx, A, b, x, &o, &r) == SPK_OK, "%s", spk_last_error(ctx));
        const double tr = t_true_rel(A, b, x);
        T_CHECK(r.reason <= 0 || tr <= 1e-12, "%s: %s with true rel %.2e above 1e-12", mats[i],
                spk_reason_str(r.reason), tr);
        T_CHECK(r.reason > 0 || !must_converge[i], "%s at 1e-12: %s (%s)", mats[i],
                spk_reason_str(r.reason), r.precision_reason);
        /* a step gains at most 1e6 (the inner tolerance's floor): 1e-12 needs two at least */
        T_CHECK(r.refinement_steps >= r8.refinement_steps && r.refinement_steps >= 2,
                "%s: 1e-12 took %lld steps, 1e-8 %lld", mats[i], (long long)r.refinement_steps,
                (long long)r8.refinement_steps);
        /* the history: every inner iteration, numbered on, the step as the cycle */
        int ordered = r.history_len > 1 && r.history[0].it == 0 && r.history[0].cycle == 0;
        for (int64_t h = 1; h < r.history_len; h++)
            ordered &= r.history[h].it > r.history[h - 1].it &&
                       r.history[h].cycle >= r.history[h - 1].cycle && r.history[h].cycle >= 1;
        T_CHECK(ordered && r.history[r.history_len - 1].it == r.iterations &&
                r.history[r.history_len - 1].cycle >= r.refinement_steps,
                "%s: history of %lld rows, last it %lld of %lld, cycle %lld of %lld steps",
                mats[i], (long long)r.history_len,
                (long long)(r.history_len ? r.history[r.history_len - 1].it : -1),
                (long long)r.iterations,
                (long long)(r.history_len ? r.history[r.history_len - 1].cycle : -1),
                (long long)r.refinement_steps);
        printf("  %-14s rtol 1e-12: %s, %lld its, %lld steps (1e-8: %lld), true rel %.2e: %s\n",
               mats[i], spk_reason_str(r.reason), (long long)r.iterations,
               (long long)r.refinement_steps, (long long)r8.refinement_steps, tr, r.precision_reason);
        spk_result_free(&r);
        spk_matrix_destroy(A);
        free(b);
        free(x);
    }
}

/* ---- the stops of an inner solve end the whole solve ------------------------------------ */
typedef struct mon_state {
    int64_t calls, last_it, stop_at;
    int ordered;
} mon_state;

static int monitor(void *user, int64_t it, double rnorm, double rel, double seconds)
{
    (void)rnorm, (void)rel, (void)seconds;
    mon_state *m = user;
    m->ordered &= m->calls == 0 || it > m->last_it;
    m->calls++;
    m->last_it = it;
    return m->stop_at > 0 && it >= m->stop_at;
}

static void test_stops(void)
{
    spk_matrix *A = t_matrix(ctx, "poisson3d:20");
    const int64_t n = A->csr.nrows;
    double *b = t_rand_vec(n, 3), *x = calloc((size_t)n, sizeof *x);
    spk_options o;
    spk_result r;
    /* the iterations of every step, numbered on: the monitor sees them in order; five
     * iterations into the second step it stops the solve */
    set_opt(&o, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-12, SPK_PRECISION_MIXED);
    o.history = 1;
    T_CHECK(spk_solve(ctx, A, b, x, &o, &r) == SPK_OK && r.refinement_steps >= 2, "first run");
    int64_t first_end = 0;
    for (int64_t h = 0; h < r.history_len; h++)
        if (r.history[h].cycle == 1)
            first_end = r.history[h].it;
    spk_result_free(&r);
    mon_state m = {.ordered = 1, .stop_at = first_end + 5};
    o.history = 0;
    o.monitor = monitor;
    o.monitor_user = &m;
    T_CHECK(spk_solve(ctx, A, b, x, &o, &r) == SPK_OK, "%s", spk_last_error(ctx));
    /* the CPU stops at the iteration the monitor stopped; a GPU at the end of the batch of
     * iterations queued with it (solvers/batch.c: at most two batches of 32) */
    const int64_t late = dev == SPK_DEVICE_CPU ? 0 : 64;
    T_CHECK(r.reason == SPK_DIVERGED_INTERRUPTED && r.iterations >= first_end + 5 &&
            r.iterations <= first_end + 5 + late && r.refinement_steps == 2,
            "the monitor's stop: %s after %lld iterations, %lld steps", spk_reason_str(r.reason),
            (long long)r.iterations, (long long)r.refinement_steps);
    T_CHECK(m.ordered, "the monitor saw the iterations in increasing order");
    T_CHECK(fabs(r.true_rel - t_true_rel(A, b, x)) <= 0.1 * r.true_rel && r.true_rel > 1e-12,
            "the reason is on the fp64 residual of the x returned: %.2e", r.true_rel);
    /* maxiter bounds the sum of the inner iterations */
    set_opt(&o, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-12, SPK_PRECISION_MIXED);
    o.maxiter = 70;
    T_CHECK(spk_solve(ctx, A, b, x, &o, &r) == SPK_OK && r.reason == SPK_DIVERGED_MAXIT &&
            r.iterations == 70, "maxiter 70: %s after %lld", spk_reason_str(r.reason),
            (long long)r.iterations);
    spk_matrix_destroy(A);
    free(b);
    free(x);
}

/* ---- options ------------------------------------------------------------------------------ */
static void test_options(void)
{
    spk_matrix *A = t_matrix(ctx, "poisson3d:6");
    spk_options o;
    spk_solver *S = NULL;
    set_opt(&o, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-8, (spk_precision)7);
    T_CHECK(spk_solver_create(ctx, A, &o, &S) == SPK_ERR_ARG && !S, "precision 7 refused");
    spk_options_default(&o);
    T_CHECK(o.precision == SPK_PRECISION_DOUBLE, "the default is double");
    T_CHECK(!strcmp(spk_precision_str(SPK_PRECISION_MIXED), "mixed") &&
            !strcmp(spk_precision_str(SPK_PRECISION_DOUBLE), "double"), "names");
    spk_matrix_destroy(A);
}

/* The inner method runs on the fp32 twin of the row the double solve runs on: on the GPU a
 * CUDA twin (ell32-cuda for a stencil, csr32-cuda when CSR is asked for), named in the
 * reason; AMG's cycle takes fp32 values with it. */
static void test_twin_named(void)
{
    spk_matrix *A = t_matrix(ctx, "poisson3d:16");
    const int64_t n = A->csr.nrows;
    double *b = t_rand_vec(n, 4), *x = calloc((size_t)n, sizeof *x);
    const char *dev_s = dev == SPK_DEVICE_CPU ? "-cpu" : "-cuda";
    const spk_format fmts[] = {SPK_FMT_AUTO, SPK_FMT_CSR, SPK_FMT_ELL, SPK_FMT_HYB};
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        spk_options o;
        spk_result r;
        set_opt(&o, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-10, SPK_PRECISION_MIXED);
        o.format = fmts[f];
        T_CHECK(spk_solve(ctx, A, b, x, &o, &r) == SPK_OK && r.reason > 0 &&
                r.precision == SPK_PRECISION_MIXED, "%s: %s %s", spk_format_str(fmts[f]),
                spk_reason_str(r.reason), spk_last_error(ctx));
        const char *want = dev == SPK_DEVICE_CPU || fmts[f] == SPK_FMT_AUTO
                               ? dev_s : spk_format_str(fmts[f]);
        char named[32];
        snprintf(named, sizeof named, "%s32%s", fmts[f] == SPK_FMT_AUTO || dev == SPK_DEVICE_CPU
                                                   ? "" : want, dev_s);
        T_CHECK(strstr(r.precision_reason, named) != NULL, "%s: the operator is %s: %s",
                spk_format_str(fmts[f]), named, r.precision_reason);
        T_CHECK(t_true_rel(A, b, x) <= 1e-10, "%s: true rel %.2e", spk_format_str(fmts[f]),
                t_true_rel(A, b, x));
    }
    /* AMG in mixed: the cycle's values in fp32 where the formats have twins, said by
     * describe; the answer meets rtol */
    spk_options o;
    spk_result r;
    set_opt(&o, SPK_METHOD_CG, SPK_PRECOND_AMG, 1e-10, SPK_PRECISION_MIXED);
    spk_solver *S = NULL;
    T_CHECK(spk_solver_create(ctx, A, &o, &S) == SPK_OK, "%s", spk_last_error(ctx));
    char text[4096];
    spk_solver_precond_describe(S, text, sizeof text);
    const char *v = strstr(text, "values: fp32 in the cycle for ");
    int n32 = -1, nmat = -1;
    T_CHECK(v && sscanf(v, "values: fp32 in the cycle for %d of its %d", &n32, &nmat) == 2,
            "describe: %s", text);
    /* every level matrix of a Poisson hierarchy fits fp32, and every format has a twin */
    T_CHECK(nmat >= 3 && n32 == nmat, "fp32 values for %d of the cycle's %d matrices", n32, nmat);
    T_CHECK(spk_solver_solve(S, b, x, &r) == SPK_OK && r.reason > 0 &&
            t_true_rel(A, b, x) <= 1e-10, "AMG mixed: %s, true rel %.2e",
            spk_reason_str(r.reason), t_true_rel(A, b, x));
    spk_solver_destroy(S);
    /* block-Jacobi in mixed: its M^-1 applied through the fp32 twin; in double, not */
    for (int p = 0; p < 2; p++) {
        set_opt(&o, SPK_METHOD_CG, SPK_PRECOND_BJACOBI, 1e-10,
                p ? SPK_PRECISION_MIXED : SPK_PRECISION_DOUBLE);
        o.block_size = 4;
        S = NULL;
        T_CHECK(spk_solver_create(ctx, A, &o, &S) == SPK_OK, "%s", spk_last_error(ctx));
        spk_solver_precond_describe(S, text, sizeof text);
        T_CHECK((strstr(text, "applied in fp32 values") != NULL) == p, "bjacobi (%s): %s",
                p ? "mixed" : "double", text);
        T_CHECK(spk_solver_solve(S, b, x, &r) == SPK_OK && r.reason > 0 &&
                t_true_rel(A, b, x) <= 1e-10, "bjacobi %s: %s, true rel %.2e",
                p ? "mixed" : "double", spk_reason_str(r.reason), t_true_rel(A, b, x));
        spk_solver_destroy(S);
    }
    /* IC(0) and ILU(0) with the Jacobi sweeps in mixed: the factors' products through their
     * fp32 twins, in double not; after a value update and a refresh still; A scaled by 1e-39
     * takes U_s below FLT_MIN (fp64) while the unit L's strict part keeps its scale (fp32),
     * and U_s goes back to fp32 once it fits again; the answer at rtol each time. */
    const int64_t nnz = A->csr.nnz;
    double *val = malloc((size_t)nnz * sizeof *val), *a0 = malloc((size_t)nnz * sizeof *a0);
    memcpy(a0, A->csr.val, (size_t)nnz * sizeof *a0);
    const spk_precond ilus[] = {SPK_PRECOND_IC0, SPK_PRECOND_ILU0};
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 2; p++) {
            const char *pn = spk_precond_str(ilus[k]), *prec = p ? "mixed" : "double";
            set_opt(&o, k ? SPK_METHOD_GMRES : SPK_METHOD_CG, ilus[k], 1e-10,
                    p ? SPK_PRECISION_MIXED : SPK_PRECISION_DOUBLE);
            o.ilu.trisolve = SPK_TRISOLVE_JACOBI;
            S = NULL;
            T_CHECK(spk_solver_create(ctx, A, &o, &S) == SPK_OK, "%s: %s", pn, spk_last_error(ctx));
            static const double scale[] = {1.0, 0.5, 1e-39, 2.0};
            for (int u = 0; u < 4 && S; u++) {
                if (u > 0) {
                    for (int64_t q = 0; q < nnz; q++)
                        val[q] = scale[u] * a0[q];
                    T_CHECK(spk_matrix_update_values(ctx, A, nnz, val, 0) == SPK_OK &&
                            spk_solver_refresh(S) == SPK_OK, "%s %s refresh %d: %s", pn, prec, u,
                            spk_last_error(ctx));
                }
                spk_solver_precond_describe(S, text, sizeof text);
                const char *want = !p ? NULL
                                   : scale[u] > 1e-30 ? "the factors' products in fp32 values"
                                                      : "L_s's products in fp32 values (U_s's in fp64)";
                T_CHECK(want ? strstr(text, want) != NULL : strstr(text, "fp32") == NULL,
                        "%s %s, values x %g: %s", pn, prec, scale[u], text);
                T_CHECK(spk_solver_solve(S, b, x, &r) == SPK_OK && r.reason > 0 &&
                        t_true_rel(A, b, x) <= 1e-10, "%s %s, values x %g: %s, true rel %.2e",
                        pn, prec, scale[u], spk_reason_str(r.reason), t_true_rel(A, b, x));
            }
            spk_solver_destroy(S);
            T_CHECK(spk_matrix_update_values(ctx, A, nnz, a0, 0) == SPK_OK, "%s",
                    spk_last_error(ctx));
        }
    free(val);
    free(a0);
    spk_matrix_destroy(A);
    free(b);
    free(x);
}

/* precision AUTO: mixed for CG (none or Jacobi) on a matrix past the device's cache, double
 * for a small one, for AMG and for the other methods; precision_choice says which and why,
 * and is empty without AUTO. */
static void check_auto(const char *what, spk_method m, spk_precond pc, int want_mixed,
                       const char *says)
{
    spk_matrix *A = t_matrix(ctx, what);
    const int64_t n = A->csr.nrows;
    double *b = t_rand_vec(n, 21), *x = calloc((size_t)n, sizeof *x);
    spk_options o;
    spk_result r;
    set_opt(&o, m, pc, 1e-8, SPK_PRECISION_AUTO);
    T_CHECK(spk_solve(ctx, A, b, x, &o, &r) == SPK_OK && r.reason > 0, "%s auto: %s %s", what,
            spk_reason_str(r.reason), spk_last_error(ctx));
    T_CHECK(r.precision == (want_mixed ? SPK_PRECISION_MIXED : SPK_PRECISION_DOUBLE) &&
            (r.refinement_steps > 0) == (want_mixed && pc != SPK_PRECOND_AMG),
            "%s %s + %s auto ran %s (%lld steps): %s",
            what, spk_method_str(m), spk_precond_str(pc), spk_precision_str(r.precision),
            (long long)r.refinement_steps, r.precision_choice);
    T_CHECK(strstr(r.precision_choice, says) != NULL, "%s: the choice '%s' says '%s'", what,
            r.precision_choice, says);
    T_CHECK(t_true_rel(A, b, x) <= 1e-8, "%s auto: true rel %.2e", what, t_true_rel(A, b, x));
    set_opt(&o, m, pc, 1e-8, SPK_PRECISION_DOUBLE);
    T_CHECK(spk_solve(ctx, A, b, x, &o, &r) == SPK_OK && r.precision_choice[0] == '\0',
            "no choice without auto: '%s'", r.precision_choice);
    spk_matrix_destroy(A);
    free(b);
    free(x);
}

static void test_auto(void)
{
    /* past the cache: 15 MB of DIA slots on the CPU (the rule's 8 MB), 84 MB of ELL on a
     * GPU (its 64 MB) */
    const char *big = dev == SPK_DEVICE_CPU ? "poisson3d:64" : "poisson3d:100";
    check_auto(big, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1, "auto: mixed: CG + Jacobi on ");
    check_auto(big, SPK_METHOD_CG, SPK_PRECOND_NONE, 1, "auto: mixed: CG on ");
    check_auto("poisson3d:20", SPK_METHOD_CG, SPK_PRECOND_JACOBI, 0, "auto: double: the matrix "
               "is below the size");
    check_auto(big, SPK_METHOD_CG, SPK_PRECOND_AMG, 1, "auto: mixed: AMG's V-cycle in fp32");
    {   /* AUTO's AMG-CG runs the cycle in fp32; amg.fp32 = -1 keeps it fp64, and double */
        spk_matrix *A = t_matrix(ctx, "poisson3d:20");
        char text[4096];
        for (int k = 0; k < 2; k++) {
            spk_options o;
            set_opt(&o, SPK_METHOD_CG, SPK_PRECOND_AMG, 1e-8, SPK_PRECISION_AUTO);
            o.amg.fp32 = k ? -1 : 0;
            spk_solver *S = NULL;
            T_CHECK(spk_solver_create(ctx, A, &o, &S) == SPK_OK, "%s", spk_last_error(ctx));
            if (!S)
                continue;
            spk_solver_precond_describe(S, text, sizeof text);
            T_CHECK((strstr(text, "values: fp32 in the cycle") != NULL) == !k, "AUTO AMG-CG, "
                    "amg.fp32 = %d: %s", o.amg.fp32, text);
            spk_solver_destroy(S);
        }
        spk_matrix_destroy(A);
    }
    check_auto(big, SPK_METHOD_BICGSTAB, SPK_PRECOND_JACOBI, 0, "auto: double: mixed was measured "
               "faster for CG");
    T_CHECK(!strcmp(spk_precision_str(SPK_PRECISION_AUTO), "auto"), "the name of AUTO");
}

/* Solve with S and check it converges to 1e-8 against A; its result into *r. */
static void solve_ok(spk_solver *S, spk_matrix *A, const double *b, double *x, spk_result *r,
                     const char *what)
{
    memset(x, 0, (size_t)A->csr.nrows * sizeof *x);
    const spk_status st = spk_solver_solve(S, b, x, r);
    T_CHECK(st == SPK_OK && r->reason > 0 && t_true_rel(A, b, x) <= 1e-8,
            "%s: %s %s, true rel %.2e: %s", what, spk_status_str(st), spk_reason_str(r->reason),
            t_true_rel(A, b, x), spk_last_error(ctx));
}

/* What borrows from a matrix's layout follows it when the layout is made again: another
 * solver on the same A in another format (spk_matrix_prepare replaces A's layout), an update
 * made on a second context (the layout is dropped and rebuilt at the next use), values that
 * leave fp32's range (AMG's fp32 cycle keeps fp64 for those matrices). Each solver then
 * still converges, and destroying them touches only what is theirs (ASan's run checks). */
static void test_relayout(void)
{
    spk_matrix *A = t_matrix(ctx, "poisson2d:60");
    const int64_t n = A->csr.nrows, nnz = A->csr.nnz;
    double *b = t_rand_vec(n, 41), *x = calloc((size_t)n, sizeof *x),
           *val = malloc((size_t)nnz * sizeof *val);
    spk_options o[4];
    set_opt(&o[0], SPK_METHOD_CG, SPK_PRECOND_AMG, 1e-8, SPK_PRECISION_DOUBLE);
    o[0].amg.fp32 = 1;
    set_opt(&o[1], SPK_METHOD_CG, SPK_PRECOND_CHEBYSHEV, 1e-8, SPK_PRECISION_DOUBLE);
    set_opt(&o[2], SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-8, SPK_PRECISION_MIXED);
    set_opt(&o[3], SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-8, SPK_PRECISION_DOUBLE);
    for (int k = 0; k < 3; k++)
        o[k].format = SPK_FMT_ELL;
    o[3].format = SPK_FMT_CSR;
    spk_solver *S[4] = {NULL, NULL, NULL, NULL};
    for (int k = 0; k < 4; k++)
        T_CHECK(spk_solver_create(ctx, A, &o[k], &S[k]) == SPK_OK, "solver %d: %s", k,
                spk_last_error(ctx));
    spk_result r;
    const char *names[4] = {"AMG fp32", "Chebyshev", "mixed", "CSR"};
    /* S[3] made A CSR; each solve of the others makes it ELL again, then S[3]'s CSR */
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < 4; k++)
            if (S[k]) {
                solve_ok(S[k], A, b, x, &r, names[k]);
                if (k == 2)
                    T_CHECK(r.precision == SPK_PRECISION_MIXED && strstr(r.precision_reason,
                            "ell32-"), "mixed after a relayout: %s", r.precision_reason);
            }
    /* an update on a second context drops A's layout; refresh and solve build it again */
    spk_context *ctx2 = t_context(SPK_DEVICE_CPU);
    for (int64_t p = 0; p < nnz; p++)
        val[p] = 2.0 * A->csr.val[p];
    T_CHECK(spk_matrix_update_values(ctx2, A, nnz, val, 0) == SPK_OK, "%s", spk_last_error(ctx2));
    for (int k = 0; k < 4; k++)          /* every refresh meets the dropped layout */
        T_CHECK(S[k] && spk_solver_refresh(S[k]) == SPK_OK, "%s refresh after a drop: %s",
                names[k], spk_last_error(ctx));
    for (int k = 0; k < 4; k++)
        if (S[k])
            solve_ok(S[k], A, b, x, &r, names[k]);
    /* values below FLT_MIN: AMG's fp32 matrices go back to fp64, the solve still runs */
    for (int64_t p = 0; p < nnz; p++)
        val[p] = 1e-39 * A->csr.val[p];
    T_CHECK(spk_matrix_update_values(ctx, A, nnz, val, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(S[0] && spk_solver_refresh(S[0]) == SPK_OK, "AMG fp32 refresh to 1e-39: %s",
            spk_last_error(ctx));
    char text[4096];
    if (S[0]) {
        spk_solver_precond_describe(S[0], text, sizeof text);
        /* the levels' A and the coarse inverse scale with the values and go back to fp64;
         * P and R (made from D^-1 A) do not scale and keep theirs */
        const char *v = strstr(text, "values: fp32 in the cycle for ");
        int n32 = -1, nmat = -1;
        T_CHECK(v && sscanf(v, "values: fp32 in the cycle for %d of its %d", &n32, &nmat) == 2 &&
                n32 > 0 && n32 < nmat, "after values below FLT_MIN: %s", text);

        solve_ok(S[0], A, b, x, &r, "AMG fp32 at 1e-39");
        /* the values back in range: every matrix of the cycle in fp32 again */
        for (int64_t p = 0; p < nnz; p++)
            val[p] = 1e39 * A->csr.val[p];
        T_CHECK(spk_matrix_update_values(ctx, A, nnz, val, 0) == SPK_OK &&
                spk_solver_refresh(S[0]) == SPK_OK, "AMG fp32 refresh back: %s",
                spk_last_error(ctx));
        spk_solver_precond_describe(S[0], text, sizeof text);
        v = strstr(text, "values: fp32 in the cycle for ");
        T_CHECK(v && sscanf(v, "values: fp32 in the cycle for %d of its %d", &n32, &nmat) == 2 &&
                n32 == nmat, "the values back in fp32's range: %s", text);
        solve_ok(S[0], A, b, x, &r, "AMG fp32 back");
    }
    /* block-Jacobi in mixed: its fp32 M^-1 goes while an inverse entry leaves fp32's range
     * (A scaled by 1e-40: inverses near 1e39), and comes back with the values */
    spk_options ob;
    set_opt(&ob, SPK_METHOD_CG, SPK_PRECOND_BJACOBI, 1e-8, SPK_PRECISION_MIXED);
    ob.block_size = 2;
    spk_solver *SB = NULL;
    T_CHECK(spk_solver_create(ctx, A, &ob, &SB) == SPK_OK, "%s", spk_last_error(ctx));
    const double scale[3] = {1.0, 1e-40, 1e40};
    const int want32[3] = {1, 0, 1};
    for (int k = 0; k < 3 && SB; k++) {
        for (int64_t p = 0; p < nnz; p++)
            val[p] = scale[k] * A->csr.val[p];
        T_CHECK(spk_matrix_update_values(ctx, A, nnz, val, 0) == SPK_OK &&
                spk_solver_refresh(SB) == SPK_OK, "bjacobi refresh %d: %s", k, spk_last_error(ctx));
        spk_solver_precond_describe(SB, text, sizeof text);
        T_CHECK((strstr(text, "applied in fp32 values") != NULL) == want32[k], "bjacobi %d: %s",
                k, text);
    }
    spk_solver_destroy(SB);
    for (int k = 0; k < 4; k++)
        spk_solver_destroy(S[k]);
    spk_context_destroy(ctx2);
    spk_matrix_destroy(A);
    free(b);
    free(x);
    free(val);
}

/* CG's inner solves with fp32 vectors (spk_cg32): where the operator has spmv_dot32 (csr32-cpu,
 * dia32-cpu; ell32-cuda and bsr32-cuda) and M is none or Jacobi, SPK_MIXED_VECTORS=fp32
 * (ctx->tune.mixed_vectors 2) makes precision_reason say "and vectors", the answer meets rtol
 * against the fp64 A, the iterations stay within 1.3x (+ 10) of the fp64-vector loop's
 * (mixed_vectors 1) where `bounded`, and a second solve allocates nothing. A general M
 * (Chebyshev) keeps fp64 vectors. */
static void vec32_case(const char *what, spk_format fmt, spk_precond pc, int bounded)
{
    spk_matrix *A = t_matrix(ctx, what);
    const int64_t n = A->csr.nrows;
    double *b = t_rand_vec(n, 7), *x = calloc((size_t)n, sizeof *x);
    spk_options o;
    set_opt(&o, SPK_METHOD_CG, pc, 1e-9, SPK_PRECISION_MIXED);
    o.format = fmt;
    spk_result r32, r64;
    int64_t its[2] = {0, 0};
    for (int v = 0; v < 2; v++) {
        ctx->tune.mixed_vectors = v ? 1 : 2;
        spk_solver *S = NULL;
        spk_result *r = v ? &r64 : &r32;
        T_CHECK(spk_solver_create(ctx, A, &o, &S) == SPK_OK, "%s: %s", what, spk_last_error(ctx));
        if (!S)
            continue;
        memset(x, 0, (size_t)n * sizeof *x);
        T_CHECK(spk_solver_solve(S, b, x, r) == SPK_OK, "%s: %s", what, spk_last_error(ctx));
        const double tr = t_true_rel(A, b, x);
        T_CHECK(r->reason > 0 && tr <= 1e-9 && r->precision == SPK_PRECISION_MIXED, "%s %s %s: %s, "
                "true rel %.2e: %s", what, spk_format_str(fmt), v ? "fp64 vectors" : "fp32 vectors",
                spk_reason_str(r->reason), tr, r->precision_reason);
        const int want32 = !v && pc != SPK_PRECOND_CHEBYSHEV;
        T_CHECK((strstr(r->precision_reason, "and vectors") != NULL) == want32, "%s %s %s: %s",
                what, spk_format_str(fmt), spk_precond_str(pc), r->precision_reason);
        its[v] = r->iterations;
        const uint64_t before = spk_context_alloc_count(ctx);
        memset(x, 0, (size_t)n * sizeof *x);
        T_CHECK(spk_solver_solve(S, b, x, r) == SPK_OK && r->reason > 0 &&
                spk_context_alloc_count(ctx) == before, "%s: a second solve allocated %llu times",
                what, (unsigned long long)(spk_context_alloc_count(ctx) - before));
        spk_solver_destroy(S);
    }
    ctx->tune.mixed_vectors = 0;
    T_CHECK(!bounded || (its[0] <= 1.3 * its[1] + 10 && its[1] <= 1.3 * its[0] + 10),
            "%s %s: %lld iterations with fp32 vectors, %lld with fp64 ones", what,
            spk_format_str(fmt), (long long)its[0], (long long)its[1]);
    printf("  %-14s %-4s %-7s fp32 vectors %4lld its (%s), fp64 vectors %4lld its\n", what,
           spk_format_str(fmt), spk_precond_str(pc), (long long)its[0], r32.precision_reason,
           (long long)its[1]);
    spk_matrix_destroy(A);
    free(b);
    free(x);
}

/* By default (SPK_MIXED_VECTORS unset) fp32 vectors on a GPU where the five fp64 ones would
 * pass its cache (src/mixed.c): not on a small system, on one of 40 n > 64 MiB; fp64 ones on
 * the CPU. */
static void vec32_auto(const char *what, spk_format fmt, int want32)
{
    spk_matrix *A = t_matrix(ctx, what);
    const int64_t n = A->csr.nrows;
    double *b = t_rand_vec(n, 8), *x = calloc((size_t)n, sizeof *x);
    spk_options o;
    set_opt(&o, SPK_METHOD_CG, SPK_PRECOND_JACOBI, 1e-8, SPK_PRECISION_MIXED);
    o.format = fmt;
    spk_result r;
    T_CHECK(spk_solve(ctx, A, b, x, &o, &r) == SPK_OK && r.reason > 0 && t_true_rel(A, b, x) <= 1e-8,
            "%s: %s %s", what, spk_reason_str(r.reason), spk_last_error(ctx));
    T_CHECK((strstr(r.precision_reason, "and vectors") != NULL) == want32, "%s (%lld rows): %s",
            what, (long long)n, r.precision_reason);
    spk_matrix_destroy(A);
    free(b);
    free(x);
}

static void test_vectors32(void)
{
    if (dev == SPK_DEVICE_CPU) {
        vec32_case("poisson3d:20", SPK_FMT_CSR, SPK_PRECOND_JACOBI, 1);
        vec32_case("poisson3d:20", SPK_FMT_CSR, SPK_PRECOND_NONE, 1);
        vec32_case("poisson3d:20", SPK_FMT_DIA, SPK_PRECOND_JACOBI, 1);
        vec32_case("bcsstk09.mtx", SPK_FMT_CSR, SPK_PRECOND_JACOBI, 1);
        /* cond ~ 8e6: fp32 vectors cost iterations (184 against 123), the answer holds */
        vec32_case("nos6.mtx", SPK_FMT_DIA, SPK_PRECOND_JACOBI, 0);
        vec32_case("poisson3d:20", SPK_FMT_CSR, SPK_PRECOND_CHEBYSHEV, 1);
        vec32_auto("poisson3d:20", SPK_FMT_DIA, 0);
        vec32_auto("poisson3d:60", SPK_FMT_DIA, 0);   /* the CPU's default: fp64 vectors */
    } else {
        vec32_case("poisson3d:21", SPK_FMT_ELL, SPK_PRECOND_JACOBI, 1);
        vec32_case("poisson3d:21", SPK_FMT_ELL, SPK_PRECOND_NONE, 1);
        vec32_case("bcsstk09.mtx", SPK_FMT_ELL, SPK_PRECOND_JACOBI, 1);
        vec32_case("lame3d:7", SPK_FMT_BSR, SPK_PRECOND_JACOBI, 1);
        vec32_case("poisson3d:20", SPK_FMT_ELL, SPK_PRECOND_CHEBYSHEV, 1);
        vec32_auto("poisson3d:21", SPK_FMT_ELL, 0);
        vec32_auto("poisson3d:120", SPK_FMT_ELL, 1);  /* 1,728,000 x 40 bytes > 64 MiB */
    }
}

int main(int argc, char **argv)
{
    dev = t_device_from_args(argc, argv);
    ctx = t_context(dev);
    if (dev == SPK_DEVICE_CPU)
        test_csr32();
    test_systems();
    test_spd_inputs();
    test_methods_preconds();
    test_fallback();
    test_no_alloc();
    test_tight();
    test_stops();
    test_options();
    test_twin_named();
    test_auto();
    test_relayout();
    test_vectors32();
    spk_context_destroy(ctx);
    return t_done("test_mixed");
}
