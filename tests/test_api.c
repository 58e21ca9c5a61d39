/* tests/test_api.c -- the public API on the device given by --device: every function, its error
 * paths (NULL arguments, dimension mismatch, a value update of the wrong length, a handle that
 * destroy has cleared), the value-update path against freshly made matrices (the canonical
 * values and every format's layout bit for bit, from host and device memory, with duplicates
 * and with the identity map; on --device gpu the device path), its refusals (NaN/Inf, a bad
 * Jacobi diagonal, allocation failures) leaving the matrix unchanged, the solver object
 * (several right-hand sides, warm start, Jacobi refresh, device vectors), and the promise
 * that an update-and-resolve loop allocates nothing after its first solve (on the GPU, after
 * its first update). --quick (for compute-sanitizer's racecheck, which slows every kernel
 * launch) runs the solver-object and no-allocation checks of CG in ELL and HYB only, not in
 * all formats: the other formats' kernels are race-checked by test_spmv and
 * test_krylov, and their value updates still run here. --part main|threads runs all but the
 * two-thread test, or that test alone (racecheck of both together takes more than 600 s). */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static spk_context *ctx;
static spk_device dev;
static int quick;                    /* --quick: see the top of the file */

/* ---- a small assembled system -------------------------------------------------------------- */

/* A weighted graph Laplacian of an m x m grid plus a diagonal shift, as an element assembly
 * writes it: each edge adds its 2 x 2 element matrix [w -w; -w w] (four triplets), each node
 * its shift (one triplet), so diagonal entries come as 3 to 5 duplicates. SPD. `seed` varies
 * the weights: the same pattern with other values. */
typedef struct fem {
    int64_t  n, nnz;
    int32_t *row, *col;
    double  *val;
} fem;

/* Unknowns per node (1, or 3 for test_update_formats' BSR pass): each triplet of the scalar
 * assembly then becomes a 3 x 3 block, its value times FEM_BLOCK (the Kronecker product of
 * the Laplacian with an SPD 3 x 3 matrix: still SPD), so that the pattern is made of blocks. */
static int fem_dofs = 1;
static const double FEM_BLOCK[3][3] = {{1.0, 0.1, 0.2}, {0.1, 1.0, 0.1}, {0.2, 0.1, 1.0}};

/* F->val[k] = v for the scalar assembly's triplet k, expanded to its block. */
static void fem_put(fem *F, int64_t k, double v)
{
    const int D = fem_dofs;
    if (D == 1) {
        F->val[k] = v;
        return;
    }
    for (int a = 0; a < D; a++)
        for (int b = 0; b < D; b++)
            F->val[k * D * D + a * D + b] = v * FEM_BLOCK[a][b];
}

static void fem_values(fem *F, int m, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7;
    int64_t k = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            const int a = i * m + j;
            for (int dir = 0; dir < 2; dir++) {
                const int b = dir == 0 ? (j + 1 < m ? a + 1 : -1) : (i + 1 < m ? a + m : -1);
                if (b < 0)
                    continue;
                const double w = 1.0 + 0.5 * t_randu(&s);
                fem_put(F, k++, w);
                fem_put(F, k++, w);
                fem_put(F, k++, -w);
                fem_put(F, k++, -w);
            }
            fem_put(F, k++, 0.1 + 0.05 * (t_randu(&s) + 1.0));
        }
}

static void fem_make(fem *F, int m, uint64_t seed)
{
    const int64_t edges = 2 * (int64_t)m * (m - 1), D = fem_dofs;
    F->n = (int64_t)m * m * D;
    F->nnz = (4 * edges + (int64_t)m * m) * D * D;
    F->row = malloc((size_t)F->nnz * sizeof *F->row);
    F->col = malloc((size_t)F->nnz * sizeof *F->col);
    F->val = malloc((size_t)F->nnz * sizeof *F->val);
    int64_t k = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            const int a = i * m + j;
            for (int dir = 0; dir < 2; dir++) {
                const int b = dir == 0 ? (j + 1 < m ? a + 1 : -1) : (i + 1 < m ? a + m : -1);
                if (b < 0)
                    continue;
                const int32_t r[4] = {a, b, a, b}, c[4] = {a, b, b, a};
                for (int e = 0; e < 4; e++)
                    for (int64_t p = 0; p < D; p++)
                        for (int64_t q = 0; q < D; q++, k++) {
                            F->row[k] = (int32_t)(r[e] * D + p);
                            F->col[k] = (int32_t)(c[e] * D + q);
                        }
            }
            for (int64_t p = 0; p < D; p++)
                for (int64_t q = 0; q < D; q++, k++) {
                    F->row[k] = (int32_t)(a * D + p);
                    F->col[k] = (int32_t)(a * D + q);
                }
        }
    fem_values(F, m, seed);
}

static void fem_free(fem *F)
{
    free(F->row);
    free(F->col);
    free(F->val);
}

static spk_matrix *fem_matrix(const fem *F)
{
    spk_matrix *A = NULL;
    spk_status st = spk_matrix_from_coo(ctx, F->n, F->n, F->nnz, F->row, F->col, F->val, 0, &A);
    T_CHECK(st == SPK_OK && A, "from_coo: %s", spk_last_error(ctx));
    return A;
}

static double *rhs(int64_t n, uint64_t seed)
{
    double *b = malloc((size_t)n * sizeof *b);
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++)
        b[i] = t_randu(&s);
    return b;
}

static int same_csr_values(const spk_matrix *A, const spk_matrix *B)
{
    const double *a, *b;
    spk_matrix_info ia, ib;
    spk_matrix_get_info(A, &ia);
    spk_matrix_get_info(B, &ib);
    spk_matrix_csr(A, NULL, NULL, &a);
    spk_matrix_csr(B, NULL, NULL, &b);
    return ia.nnz == ib.nnz && memcmp(a, b, (size_t)ia.nnz * sizeof *a) == 0;
}

/* Every value of A's prepared layout against B's (both prepared, in the same format), bit for
 * bit: y = A e_j is column j of A exactly -- one product a_ij * 1, the others +-0 -- whatever
 * order a kernel sums in (atomics included), so n SpMVs compare the layouts entry by entry. */
static int same_layout(spk_matrix *A, spk_matrix *B, int64_t n)
{
    double *x = calloc((size_t)n, sizeof *x), *ya = malloc((size_t)n * sizeof *ya),
           *yb = malloc((size_t)n * sizeof *yb);
    int same = spk_matrix_format(A) == spk_matrix_format(B);
    for (int64_t j = 0; j < n && same; j++) {
        x[j] = 1.0;
        same = spk_matrix_spmv(ctx, A, 1.0, x, 0.0, ya) == SPK_OK &&
               spk_matrix_spmv(ctx, B, 1.0, x, 0.0, yb) == SPK_OK;
        for (int64_t i = 0; i < n && same; i++)
            same = ya[i] == yb[i];
        x[j] = 0.0;
    }
    free(x);
    free(ya);
    free(yb);
    return same;
}

/* ---- context and names ----------------------------------------------------------------------- */

static void test_context(void)
{
    T_CHECK(spk_context_create(NULL, SPK_DEVICE_CPU) == SPK_ERR_ARG, "NULL out");
    spk_context *c = NULL;
    T_CHECK(spk_context_create(&c, (spk_device)42) == SPK_ERR_ARG, "bad device");
    T_CHECK(c && strstr(spk_last_error(c), "unknown device"), "message: %s", spk_last_error(c));
    spk_context_destroy(c);
    spk_context_destroy(NULL);
    T_CHECK(spk_context_device(ctx) == dev, "device %d", (int)spk_context_device(ctx));
    T_CHECK(strlen(spk_context_device_name(ctx)) > 0, "device name empty");
    T_CHECK(spk_context_alloc_count(NULL) == 0, "alloc count of NULL");
    T_CHECK(spk_last_error(NULL) != NULL && spk_last_error(NULL)[0] == '\0', "last_error(NULL)");
    if (!spk_has_cuda()) {
        c = NULL;
        T_CHECK(spk_context_create(&c, SPK_DEVICE_CUDA) == SPK_ERR_NOT_COMPILED, "cuda w/o CUDA");
        spk_context_destroy(c);
    }
    for (int s = SPK_OK; s <= SPK_ERR_MPI; s++)
        T_CHECK(strlen(spk_status_str((spk_status)s)) > 0, "status %d", s);
    T_CHECK(spk_status_str((spk_status)99) != NULL, "unknown status");
    T_CHECK(strcmp(spk_reason_str(SPK_CONVERGED_RTOL), "CONVERGED_RTOL") == 0, "reason str");
    T_CHECK(spk_reason_str((spk_reason)77) != NULL, "unknown reason");
    spk_format f;
    spk_method m;
    spk_device d;
    T_CHECK(spk_format_parse("hyb", &f) == SPK_OK && f == SPK_FMT_HYB, "format parse");
    T_CHECK(strcmp(spk_format_str(SPK_FMT_JDS), "jds") == 0, "format str");
    T_CHECK(spk_format_parse("bogus", &f) == SPK_ERR_ARG, "format parse bad");
    T_CHECK(spk_method_parse("gmres", &m) == SPK_OK && m == SPK_METHOD_GMRES, "method parse");
    T_CHECK(strcmp(spk_method_str(SPK_METHOD_CG), "cg") == 0, "method str");
    T_CHECK(spk_method_parse(NULL, &m) == SPK_ERR_ARG, "method parse NULL");
    T_CHECK(spk_device_parse("gpu", &d) == SPK_OK && d == SPK_DEVICE_CUDA, "device parse gpu");
    T_CHECK(strcmp(spk_device_str(SPK_DEVICE_CPU), "cpu") == 0, "device str");
    T_CHECK(spk_device_parse("tpu", &d) == SPK_ERR_ARG, "device parse bad");
    spk_options opt;
    spk_options_default(&opt);
    spk_options_default(NULL);
    T_CHECK(opt.rtol == 1e-8 && opt.restart == 30 && opt.method == SPK_METHOD_AUTO, "defaults");
    spk_result_free(NULL);
    /* preconditioner names come from the table; "user" is not a word to parse */
    spk_precond p;
    T_CHECK(spk_precond_parse("jacobi", &p) == SPK_OK && p == SPK_PRECOND_JACOBI &&
                spk_precond_parse("none", &p) == SPK_OK && p == SPK_PRECOND_NONE,
            "precond parse");
    T_CHECK(spk_precond_parse("user", &p) == SPK_ERR_ARG && spk_precond_parse("ilu", &p) ==
                SPK_ERR_ARG && spk_precond_parse(NULL, &p) == SPK_ERR_ARG, "precond parse bad");
    for (int k = 0; k < SPK_PRECOND_COUNT; k++)
        T_CHECK(strcmp(spk_precond_str((spk_precond)k), "unknown") != 0 &&
                    strlen(spk_precond_summary((spk_precond)k)) > 0, "precond %d has no row", k);
    T_CHECK(strcmp(spk_precond_str((spk_precond)SPK_PRECOND_COUNT), "unknown") == 0,
            "precond past the table");
}

/* The CPU's thread count during a solve is the library's (src/threads.c): the caller's is put
 * back after it, and the iterates do not depend on it: x after a solve on all threads (the
 * count tried and chosen as it goes) has the bits of x after one on a single thread. */
static void test_threads(void)
{
#ifdef _OPENMP
    if (dev != SPK_DEVICE_CPU)
        return;
    const int caller = omp_get_max_threads();
    spk_matrix *A = NULL;
    T_CHECK(spk_matrix_generate(ctx, "poisson3d:30", &A) == SPK_OK, "%s", spk_last_error(ctx));
    const int64_t n = 27000;
    double *b = malloc((size_t)n * sizeof *b), *x1 = calloc((size_t)n, sizeof *x1),
           *x2 = calloc((size_t)n, sizeof *x2);
    for (int64_t i = 0; i < n; i++)
        b[i] = 1.0 + (double)(i % 7);
    spk_options o;
    spk_options_default(&o);
    o.method = SPK_METHOD_CG;
    o.precond = SPK_PRECOND_NONE;
    spk_result r1, r2;
    T_CHECK(spk_solve(ctx, A, b, x1, &o, &r1) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(omp_get_max_threads() == caller, "the caller's %d threads became %d", caller,
            omp_get_max_threads());
    omp_set_num_threads(1);
    T_CHECK(spk_solve(ctx, A, b, x2, &o, &r2) == SPK_OK, "%s", spk_last_error(ctx));
    omp_set_num_threads(caller);
    T_CHECK(r1.iterations == r2.iterations && memcmp(x1, x2, (size_t)n * sizeof *x1) == 0,
            "x on %d threads (adapted) and on 1: %lld and %lld iterations, bits %s", caller,
            (long long)r1.iterations, (long long)r2.iterations,
            memcmp(x1, x2, (size_t)n * sizeof *x1) ? "differ" : "equal");
    free(b);
    free(x1);
    free(x2);
    spk_matrix_destroy(A);
#endif
}

#ifdef _OPENMP
/* The thread count each recorded iteration leaves for the next (the fit sets it on the
 * calling thread, which runs the monitor), by iteration. */
typedef struct thread_log {
    int     count[64];
    int64_t last;
} thread_log;

static int log_threads(void *user, int64_t it, double rnorm, double rel, double seconds)
{
    (void)rnorm;
    (void)rel;
    (void)seconds;
    thread_log *l = (thread_log *)user;
    if (it >= 0 && it < 64)
        l->count[it] = omp_get_max_threads();
    l->last = it;
    return 0;
}

/* log_threads for the second method of --method auto only: the records after the iteration
 * number first goes back (count[0] stays -1 until then) */
static int log_second_run(void *user, int64_t it, double rnorm, double rel, double seconds)
{
    thread_log *l = (thread_log *)user;
    if (l->count[0] == 0 && it < l->last)
        l->count[0] = -1;             /* the handover seen; count[0] is the marker */
    l->last = it;
    if (l->count[0] < 0 && it > 0 && it < 64)
        l->count[it] = omp_get_max_threads();
    (void)rnorm, (void)rel, (void)seconds;
    return 0;
}

/* z = r after 12 ms: an iteration long enough that a probe of the fit ends by time */
static spk_status slow_identity(void *user, int64_t n, const double *r, double *z)
{
    (void)user;
    const struct timespec wait = {0, 12000000};
    nanosleep(&wait, NULL);
    memcpy(z, r, (size_t)n * sizeof *z);
    return SPK_OK;
}
#endif

/* The fit of the thread count (src/threads.c) belongs to the solver: a second solve starts on
 * the count the first one chose, and a probe of long iterations ends after two of them, not
 * after eight (on two threads or more: the first round starts on one, then tries all). */
static void test_threads_fit(void)
{
#ifdef _OPENMP
    if (dev != SPK_DEVICE_CPU)
        return;
    const int caller = omp_get_max_threads();
    omp_set_num_threads(caller < 2 ? 2 : caller);
    const int p = omp_get_max_threads();
    spk_matrix *A = NULL;
    T_CHECK(spk_matrix_generate(ctx, "poisson3d:30", &A) == SPK_OK, "%s", spk_last_error(ctx));
    const int64_t n = 27000;
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    for (int64_t i = 0; i < n; i++)
        b[i] = 1.0 + (double)(i % 7);
    thread_log l1, l2;
    memset(&l1, 0, sizeof l1);
    memset(&l2, 0, sizeof l2);
    spk_options o;
    spk_options_default(&o);
    o.method = SPK_METHOD_CG;
    o.precond = SPK_PRECOND_NONE;
    o.rtol = 1e-6;               /* two solves within the 128 iterations before a next round */
    o.monitor = log_threads;
    o.monitor_user = &l1;
    spk_solver *S = NULL;
    spk_result r;
    T_CHECK(spk_solver_create(ctx, A, &o, &S) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_solve(S, b, x, &r) == SPK_OK, "%s", spk_last_error(ctx));
    spk_result_free(&r);
    T_CHECK(l1.count[1] == 1, "the first solve's first iterations on %d threads, not 1",
            l1.count[1]);
    spk_solver_destroy(S);
    /* the same options, another log: a solver of its own, two solves */
    o.monitor_user = &l2;
    T_CHECK(spk_solver_create(ctx, A, &o, &S) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_solve(S, b, x, &r) == SPK_OK, "%s", spk_last_error(ctx));
    spk_result_free(&r);
    const int chosen = l2.count[l2.last < 63 ? l2.last : 63];
    T_CHECK(l2.last >= 20 && l2.last < 63, "CG on poisson3d:30: %lld iterations",
            (long long)l2.last);
    memset(&l2, 0, sizeof l2);
    T_CHECK(spk_solver_solve(S, b, x, &r) == SPK_OK, "%s", spk_last_error(ctx));
    spk_result_free(&r);
    int same = 1;
    for (int64_t i = 0; i <= l2.last && i < 64; i++)
        same &= l2.count[i] == chosen;
    T_CHECK(same, "the second solve left the first one's choice (%d threads): %d at its "
            "iteration 1", chosen, l2.count[1]);
    spk_solver_destroy(S);

    /* iterations of 12 ms: one thread for two of them (24 ms > the probe's 20), then all */
    const spk_precond_user slow = {"slow identity", slow_identity, NULL, NULL, 0};
    memset(&l1, 0, sizeof l1);
    o.monitor_user = &l1;
    o.precond = SPK_PRECOND_USER;
    o.precond_user = &slow;
    o.maxiter = 4;
    T_CHECK(spk_solve(ctx, A, b, x, &o, &r) == SPK_OK, "%s", spk_last_error(ctx));
    spk_result_free(&r);
    T_CHECK(l1.count[1] == 1 && l1.count[2] == p, "long iterations: %d threads after the "
            "first, %d after the second (want 1, then %d)", l1.count[1], l1.count[2], p);
    free(b);
    free(x);
    spk_matrix_destroy(A);

    /* --method auto's handover from BiCGStab to GMRES starts the fit again: GMRES's first
     * probe is a whole cycle (restart iterations), on one thread, whatever BiCGStab chose */
    T_CHECK(spk_matrix_read_mtx(ctx, t_input("bayer10.mtx"), &A) == SPK_OK, "%s",
            spk_last_error(ctx));
    const int64_t nb = A->csr.nrows;
    b = malloc((size_t)nb * sizeof *b), x = calloc((size_t)nb, sizeof *x);
    for (int64_t i = 0; i < nb; i++)
        b[i] = 1.0;
    thread_log h;
    memset(&h, 0, sizeof h);
    h.last = -1;
    spk_options_default(&o);
    o.method = SPK_METHOD_AUTO;
    o.precond = SPK_PRECOND_NONE;
    o.restart = 20;
    o.maxiter = 200;
    o.monitor = log_second_run;
    o.monitor_user = &h;
    T_CHECK(spk_solve(ctx, A, b, x, &o, &r) == SPK_OK, "%s", spk_last_error(ctx));
    const int handed = r.method == SPK_METHOD_GMRES;
    spk_result_free(&r);
    int one = handed && h.count[0] < 0;
    for (int i = 1; i < 20; i++)
        one &= h.count[i] == 1;
    T_CHECK(one, "GMRES after BiCGStab (%s): its first cycle's threads %d %d ... %d (want 1)",
            handed ? "handed over" : "no handover", h.count[1], h.count[2], h.count[19]);
    omp_set_num_threads(caller);
    free(b);
    free(x);
    spk_matrix_destroy(A);
#endif
}

/* Every tuning knob is read at spk_context_create: an unknown value fails it with a message
 * naming the variable and what it takes; the knob's own values and an empty one are taken. */
static void test_knobs(void)
{
    static const struct {
        const char *name, *good, *bad, *said;  /* said: what the message must name */
    } knobs[] = {
        {"SPK_BATCH_US", "500", "fast", "microseconds"}, {"SPK_CUDA_GRAPH", "0", "off", "0, 1"},
        {"SPK_BATCH_SLACK_US", "0", "-1", "[0, 1e7)"},   {"SPK_BATCH_US", "1e3", "0", "(0, 1e7)"},
        {"SPK_CSR_KERNEL", "merge", "x", "adaptive"},    {"SPK_ELL_INDEX", "32", "16", "32"},
        {"SPK_ELL_ROWS", "2", "3", "1, 2"},              {"SPK_GS_ROWS", "4", "8", "4"},
        {"SPK_GS_KERNEL", "rows", "tile", "rows"},       {"SPK_HUGEPAGES", "0", "no", "0, 1"},
        {"SPK_HOST_MEMORY", "8e9", "lots", "bytes"},    {"SPK_AMG_VECTORS", "fp32", "f32", "fp64"},
        {"SPK_AMG_STEPS", "plain", "fast", "auto, fused"}, {"SPK_CSR_GROUP", "4", "3", "16"},
        {"SPK_CSR_SUMS", "segmented", "scan", "rows"},
    };
    for (size_t k = 0; k < sizeof knobs / sizeof knobs[0]; k++) {
        const char *old = getenv(knobs[k].name);
        char *saved = old ? strdup(old) : NULL;
        const char *values[] = {knobs[k].good, "", knobs[k].bad};
        for (int v = 0; v < 3; v++) {
            setenv(knobs[k].name, values[v], 1);
            spk_context *c = NULL;
            spk_status st = spk_context_create(&c, SPK_DEVICE_CPU);
            if (v < 2)
                T_CHECK(st == SPK_OK, "%s=%s refused: %s", knobs[k].name, values[v],
                        spk_last_error(c));
            else
                T_CHECK(st == SPK_ERR_ARG && strstr(spk_last_error(c), knobs[k].name) &&
                            strstr(spk_last_error(c), knobs[k].said),
                        "%s=%s: %s: %s", knobs[k].name, values[v], spk_status_str(st),
                        spk_last_error(c));
            spk_context_destroy(c);
        }
        if (saved)
            setenv(knobs[k].name, saved, 1);
        else
            unsetenv(knobs[k].name);
        free(saved);
    }
}

/* ---- matrices ------------------------------------------------------------------------------ */

static void test_matrix_make(void)
{
    spk_matrix *A = (spk_matrix *)1;
    /* from_csr: 3 x 3, 1-based, row 1 with unsorted and repeated columns */
    const int64_t rp1[4] = {1, 4, 5, 7};
    const int32_t ci1[6] = {3, 1, 3, 2, 1, 3};
    const double v1[6] = {1, 2, 3, 4, 5, 6};
    T_CHECK(spk_matrix_from_csr(ctx, 3, 3, rp1, ci1, v1, 1, &A) == SPK_OK, "%s", spk_last_error(ctx));
    spk_matrix_info info;
    T_CHECK(spk_matrix_get_info(A, &info) == SPK_OK && info.nnz == 5, "nnz %lld", (long long)info.nnz);
    const int64_t *rp;
    const int32_t *ci;
    const double *v;
    T_CHECK(spk_matrix_csr(A, &rp, &ci, &v) == SPK_OK, "csr");
    T_CHECK(rp[1] == 2 && ci[0] == 0 && v[0] == 2 && ci[1] == 2 && v[1] == 4, "canonical row 0: "
            "(%d %g) (%d %g)", ci[0], v[0], ci[1], v[1]);
    /* the update takes the 6 input values in input order, repeats summed again */
    const double v2[6] = {10, 20, 30, 40, 50, 60};
    T_CHECK(spk_matrix_update_values(ctx, A, 6, v2, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(v[0] == 20 && v[1] == 40 && v[2] == 40 && v[3] == 50 && v[4] == 60, "updated "
            "%g %g %g %g %g", v[0], v[1], v[2], v[3], v[4]);
    T_CHECK(spk_matrix_update_values(ctx, A, 6, NULL, 0) == SPK_ERR_ARG, "update with NULL val");
    T_CHECK(spk_matrix_update_values(NULL, A, 6, v2, 0) == SPK_ERR_ARG, "update with NULL ctx");
    T_CHECK(spk_matrix_update_values(ctx, NULL, 6, v2, 0) == SPK_ERR_ARG, "update of NULL");
    T_CHECK(spk_matrix_update_values(ctx, A, 5, v2, 0) == SPK_ERR_ARG, "5 values for 6 entries");
    T_CHECK(strstr(spk_last_error(ctx), "made from 6"), "message: %s", spk_last_error(ctx));
    spk_matrix_destroy(A);

    /* argument errors of the makers; *A is NULL after each */
    A = (spk_matrix *)1;
    T_CHECK(spk_matrix_from_csr(ctx, 3, 3, NULL, ci1, v1, 1, &A) == SPK_ERR_ARG && !A, "NULL rowptr");
    T_CHECK(spk_matrix_from_csr(NULL, 3, 3, rp1, ci1, v1, 1, &A) == SPK_ERR_ARG, "NULL ctx");
    T_CHECK(spk_matrix_from_csr(ctx, 3, 3, rp1, ci1, v1, 2, &A) == SPK_ERR_ARG, "base 2");
    T_CHECK(spk_matrix_from_csr(ctx, 3, 3, rp1, ci1, v1, 0, &A) == SPK_ERR_ARG, "rowptr[0] != base");
    T_CHECK(spk_matrix_from_csr(ctx, -1, 3, rp1, ci1, v1, 1, &A) == SPK_ERR_ARG, "negative rows");
    T_CHECK(spk_matrix_from_csr(ctx, 3, 2, rp1, ci1, v1, 1, &A) == SPK_ERR_ARG && !A,
            "column 3 in a 3 x 2 matrix");
    const int32_t r3[2] = {0, 5}, c3[2] = {0, 0};
    const double v3[2] = {1, NAN};
    T_CHECK(spk_matrix_from_coo(ctx, 3, 3, 2, r3, c3, v3, 0, &A) == SPK_ERR_ARG && !A, "row 5");
    T_CHECK(spk_matrix_from_coo(ctx, 6, 3, 2, r3, c3, v3, 0, &A) == SPK_ERR_ARG && !A, "NaN value");
    T_CHECK(spk_matrix_from_coo(ctx, 3, 3, -1, r3, c3, v3, 0, &A) == SPK_ERR_ARG, "nnz < 0");
    T_CHECK(spk_matrix_from_coo(ctx, 3, 3, 2, NULL, c3, v3, 0, &A) == SPK_ERR_ARG, "NULL row");
    T_CHECK(spk_matrix_from_coo(ctx, 3, 3, 0, NULL, NULL, NULL, 0, &A) == SPK_OK && A, "empty");
    T_CHECK(spk_matrix_update_values(ctx, A, 0, NULL, 0) == SPK_OK, "empty update");
    spk_matrix_destroy(A);
    spk_matrix_destroy(NULL);

    /* files and generators */
    T_CHECK(spk_matrix_read_mtx(ctx, "/nonexistent/x.mtx", &A) == SPK_ERR_IO && !A, "missing file");
    T_CHECK(spk_matrix_read_mtx(ctx, NULL, &A) == SPK_ERR_ARG, "NULL path");
    T_CHECK(spk_matrix_generate(ctx, "poisson2d:-3", &A) == SPK_ERR_ARG && !A, "bad spec");
    T_CHECK(spk_matrix_generate(ctx, "poisson2d:4", &A) == SPK_OK && A, "%s", spk_last_error(ctx));
    spk_matrix_get_info(A, &info);
    T_CHECK(info.nrows == 16, "poisson2d:4 has %lld rows", (long long)info.nrows);
    spk_matrix_destroy(A);
    T_CHECK(spk_is_generator_spec("poisson3d:10") && !spk_is_generator_spec("a.mtx"), "spec test");
    T_CHECK(spk_matrix_get_info(NULL, &info) == SPK_ERR_ARG, "info NULL");
    T_CHECK(spk_matrix_csr(NULL, &rp, &ci, &v) == SPK_ERR_ARG, "csr NULL");
    T_CHECK(spk_matrix_format(NULL) == SPK_FMT_AUTO, "format NULL");
    T_CHECK(strcmp(spk_matrix_backend_name(NULL), "none") == 0, "backend name NULL");
}

/* read / write round trips, an update in canonical order, spmv and prepare */
static void test_matrix_file(void)
{
    spk_matrix *A = NULL, *B = NULL;
    T_CHECK(spk_matrix_read_mtx(ctx, t_input("bcsstk09.mtx"), &A) == SPK_OK, "%s", spk_last_error(ctx));
    if (!A)
        return;
    spk_matrix_info info;
    spk_matrix_get_info(A, &info);
    T_CHECK(info.symmetric && info.diag_positive, "bcsstk09 is SPD-looking");
    char reason[160] = "";
    spk_format f = spk_select_format(&info, dev, reason, sizeof reason);
    T_CHECK(f != SPK_FMT_AUTO && reason[0], "select: %d '%s'", (int)f, reason);

    char dir[] = "/tmp/spk_test_api_XXXXXX", path[96], vpath[96];
    T_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/A.mtx", dir);
    snprintf(vpath, sizeof vpath, "%s/v.mtx", dir);
    T_CHECK(spk_matrix_write_mtx(ctx, path, A) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_matrix_read_mtx(ctx, path, &B) == SPK_OK && same_csr_values(A, B), "round trip");
    spk_matrix_destroy(B);
    double w[3] = {1.5, -2.0, 1e-300}, *r = NULL;
    int64_t rn = 0;
    T_CHECK(spk_vector_write_mtx(ctx, vpath, w, 3, "test") == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_vector_read_mtx(ctx, vpath, &r, &rn) == SPK_OK && rn == 3 && r &&
            memcmp(r, w, sizeof w) == 0, "vector round trip");
    free(r);
    unlink(path);
    unlink(vpath);
    rmdir(dir);

    /* spmv on host arrays; NULL and bad format */
    const int64_t n = info.nrows;
    double *x = rhs(n, 3), *y = malloc((size_t)n * sizeof *y), *y2 = malloc((size_t)n * sizeof *y2);
    T_CHECK(spk_matrix_spmv(ctx, A, 1.0, NULL, 0.0, y) == SPK_ERR_ARG, "spmv NULL x");
    T_CHECK(spk_matrix_prepare(ctx, A, (spk_format)17) == SPK_ERR_ARG, "prepare bad format");
    T_CHECK(spk_matrix_prepare(NULL, A, SPK_FMT_CSR) == SPK_ERR_ARG, "prepare NULL ctx");
    T_CHECK(spk_matrix_spmv(ctx, A, 1.0, x, 0.0, y) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_matrix_format(A) != SPK_FMT_AUTO && strstr(spk_matrix_backend_name(A), "-"),
            "prepared %s", spk_matrix_backend_name(A));

    /* a file matrix updates in the order of spk_matrix_csr's arrays: doubling doubles A x */
    const double *v;
    spk_matrix_csr(A, NULL, NULL, &v);
    double *v2 = malloc((size_t)info.nnz * sizeof *v2);
    for (int64_t p = 0; p < info.nnz; p++)
        v2[p] = 2.0 * v[p];
    T_CHECK(spk_matrix_update_values(ctx, A, info.nnz + 1, v2, 0) == SPK_ERR_ARG, "nnz + 1");
    const double v7 = v[7];
    v2[7] = INFINITY;
    T_CHECK(spk_matrix_update_values(ctx, A, info.nnz, v2, 0) == SPK_ERR_ARG, "Inf value");
    T_CHECK(strstr(spk_last_error(ctx), "val[7]"), "message: %s", spk_last_error(ctx));
    T_CHECK(v[7] == v7 && v[0] * 2.0 == v2[0], "a refused update changed the matrix");
    v2[7] = 2.0 * v[7];
    T_CHECK(spk_matrix_update_values(ctx, A, info.nnz, v2, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_matrix_spmv(ctx, A, 1.0, x, 0.0, y2) == SPK_OK, "%s", spk_last_error(ctx));
    double e = 0;
    for (int64_t i = 0; i < n; i++)
        e = fmax(e, fabs(y2[i] - 2.0 * y[i]) / (fabs(y[i]) + 1e-300));
    T_CHECK(e < 1e-14, "after doubling, A x differs by %.3g", e);
    free(v2);
    free(x);
    free(y);
    free(y2);
    spk_matrix_destroy(A);
}

/* 1 if fmt fits the element matrices of these tests on dev (t_format_fits: no DIA on the
 * GPU). They are P1 matrices of square grids, as many diagonals at every size, so one of
 * m = 8 answers for all; the loops over formats skip the others, test_dia_refusals checks
 * the refusals. */
static int fits_here(spk_format fmt)
{
    fem F;
    fem_make(&F, 8, 1);
    spk_matrix *B = fem_matrix(&F);
    spk_matrix_info in;
    int ok = spk_matrix_get_info(B, &in) == SPK_OK && t_format_fits(dev, fmt, &in);
    spk_matrix_destroy(B);
    fem_free(&F);
    return ok;
}

/* A fresh matrix of F's values, prepared in fmt. */
static spk_matrix *fem_prepared(const fem *F, spk_format fmt)
{
    spk_matrix *B = fem_matrix(F);
    T_CHECK(spk_matrix_prepare(ctx, B, fmt) == SPK_OK, "%s: %s", spk_format_str(fmt),
            spk_last_error(ctx));
    return B;
}

/* An update refused for a NaN/Inf: SPK_ERR_ARG naming `entry` (the first bad one). */
static int refused_at(spk_status st, int64_t entry)
{
    char want[64];
    snprintf(want, sizeof want, "val[%lld] = ", (long long)entry);
    return st == SPK_ERR_ARG && strstr(spk_last_error(ctx), want) != NULL;
}

/* Every format: update the prepared layout in place -- from host memory, then from device
 * memory, with the element triplets (duplicates summed by the map) and with an input in
 * canonical order (the identity map) -- and compare it bit for bit with a fresh matrix of the
 * same values prepared in the same format: the canonical values and every value of the layout
 * (same_layout). On the GPU these updates run on the device (the host values are stale until
 * read, which spk_matrix_csr does). A refused update (NaN/Inf, from either memory) changes
 * nothing; a change of format after a device update builds the new layout from its values. */
static void update_formats(void)
{
    const spk_vec_ops *ops = spk_vec_ops_for(dev);
    fem F;
    fem_make(&F, 13, 1);
    double *d_val = NULL, *canon = malloc((size_t)F.nnz * sizeof *canon);
    T_CHECK(ops->alloc(ctx, F.nnz, &d_val) == SPK_OK, "%s", spk_last_error(ctx));
    for (int f = SPK_FMT_COO; f < SPK_FMT_COUNT; f++) {
        const spk_format fmt = (spk_format)f;
        const char *fn = spk_format_str(fmt);
        if (!fits_here(fmt) || (fem_dofs > 1 && fmt != SPK_FMT_BSR))
            continue;
        fem_values(&F, 13, 1);
        spk_matrix *A = fem_prepared(&F, fmt);

        /* triplets from host memory */
        fem_values(&F, 13, 2);
        T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK, "%s: %s", fn,
                spk_last_error(ctx));
        T_CHECK(spk_matrix_format(A) == fmt, "%s: the update dropped the layout", fn);
        T_CHECK(dev != SPK_DEVICE_CUDA || (A->dev_current && A->host_stale),
                "%s: the update did not run on the device", fn);
        spk_matrix *B = fem_prepared(&F, fmt);
        T_CHECK(same_layout(A, B, F.n), "%s: the updated layout differs from a fresh one", fn);
        T_CHECK(same_csr_values(A, B), "%s: updated values differ from a fresh assembly", fn);

        /* triplets from device memory (a host pointer on a CPU context) */
        fem_values(&F, 13, 3);
        ops->upload(ctx, F.nnz, F.val, d_val);
        T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, d_val, 1) == SPK_OK, "%s: %s", fn,
                spk_last_error(ctx));
        spk_matrix *C = fem_prepared(&F, fmt);
        T_CHECK(same_layout(A, C, F.n), "%s: layout after a device-memory update", fn);
        T_CHECK(same_csr_values(A, C), "%s: values after a device-memory update", fn);

        /* refused: the first bad entry is named, nothing changes (host, then device memory) */
        const int64_t k = F.nnz / 2;
        F.val[k] = NAN;
        T_CHECK(refused_at(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0), k), "%s NaN: %s",
                fn, spk_last_error(ctx));
        F.val[3] = -INFINITY;
        ops->upload(ctx, F.nnz, F.val, d_val);
        T_CHECK(refused_at(spk_matrix_update_values(ctx, A, F.nnz, d_val, 1), 3), "%s -Inf: %s",
                fn, spk_last_error(ctx));
        T_CHECK(same_layout(A, C, F.n) && same_csr_values(A, C), "%s: a refused update changed A",
                fn);
        T_CHECK(spk_matrix_format(A) == fmt, "%s: a refused update dropped the layout", fn);
        fem_values(&F, 13, 3);

        /* an input in canonical order: the identity map (no gather) */
        const int64_t *rp;
        const int32_t *ci;
        const double *cv;
        spk_matrix_info info;
        spk_matrix_get_info(B, &info);
        spk_matrix_csr(B, &rp, &ci, &cv);
        spk_matrix *I = NULL;
        T_CHECK(spk_matrix_from_csr(ctx, F.n, F.n, rp, ci, cv, 0, &I) == SPK_OK, "%s", spk_last_error(ctx));
        T_CHECK(spk_matrix_prepare(ctx, I, fmt) == SPK_OK, "%s", spk_last_error(ctx));
        spk_matrix_csr(C, NULL, NULL, &cv);
        memcpy(canon, cv, (size_t)info.nnz * sizeof *canon);
        T_CHECK(spk_matrix_update_values(ctx, I, info.nnz, canon, 0) == SPK_OK, "%s", spk_last_error(ctx));
        T_CHECK(same_layout(I, C, F.n) && same_csr_values(I, C), "%s: identity-map update", fn);
        spk_matrix_csr(B, NULL, NULL, &cv);
        ops->upload(ctx, info.nnz, cv, d_val);
        T_CHECK(spk_matrix_update_values(ctx, I, info.nnz, d_val, 1) == SPK_OK, "%s", spk_last_error(ctx));
        T_CHECK(same_layout(I, B, F.n) && same_csr_values(I, B), "%s: identity-map update from "
                "device memory", fn);
        canon[1] = NAN;
        T_CHECK(refused_at(spk_matrix_update_values(ctx, I, info.nnz, canon, 0), 1), "%s: %s", fn,
                spk_last_error(ctx));
        T_CHECK(same_layout(I, B, F.n) && same_csr_values(I, B), "%s: a refused identity-map "
                "update changed the matrix", fn);
        spk_matrix_destroy(I);

        /* another format, built from the values of the last (device) update */
        fem_values(&F, 13, 4);
        T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK, "%s", spk_last_error(ctx));
        spk_format g = f + 1 < SPK_FMT_COUNT ? (spk_format)(f + 1) : SPK_FMT_COO;
        if (!fits_here(g))
            g = SPK_FMT_COO;
        spk_matrix *D = fem_prepared(&F, g);
        T_CHECK(spk_matrix_prepare(ctx, A, g) == SPK_OK, "%s", spk_last_error(ctx));
        T_CHECK(same_layout(A, D, F.n) && same_csr_values(A, D), "%s -> %s after an update", fn,
                spk_format_str(g));
        spk_matrix_destroy(A);
        spk_matrix_destroy(B);
        spk_matrix_destroy(C);
        spk_matrix_destroy(D);
    }
    ops->free(ctx, d_val);
    free(canon);
    fem_free(&F);
}

/* The scalar assembly in every format that holds it, then its 3 x 3 block version in BSR. */
static void test_update_formats(void)
{
    update_formats();
    fem_dofs = 3;
    T_CHECK(fits_here(SPK_FMT_BSR), "the 3 x 3 block assembly does not fit bsr");
    update_formats();
    fem_dofs = 1;
}

/* Device memory short at the first update on the GPU (an allocation failure injected at each
 * allocation the device path makes, in turn): the update fails (SPK_ERR_CUDA or NOMEM, the
 * allocation named) and changes nothing; the same call made again succeeds (the matrix now
 * takes the host path) and gives the fresh matrix's values, and so does the next update. On a
 * CPU context the update allocates nothing, so nothing fails. */
static void test_update_fallback(void)
{
    fem F;
    fem_make(&F, 9, 1);
    int failed = 0;
    for (uint64_t k = 1; k <= 12; k++) {
        fem_values(&F, 9, 1);
        spk_matrix *A = fem_prepared(&F, SPK_FMT_HYB), *A0 = fem_prepared(&F, SPK_FMT_HYB);
        fem_values(&F, 9, 2);
        const uint64_t at = spk_context_alloc_count(ctx) + k;
        ctx->fail_alloc_at = at;
        spk_status st = spk_matrix_update_values(ctx, A, F.nnz, F.val, 0);
        const int hit = spk_context_alloc_count(ctx) >= at;
        ctx->fail_alloc_at = 0;
        if (hit) {
            char tag[48];
            snprintf(tag, sizeof tag, "(allocation %llu)", (unsigned long long)at);
            failed++;
            T_CHECK((st == SPK_ERR_CUDA && strstr(spk_last_error(ctx), tag)) || st == SPK_ERR_NOMEM,
                    "allocation %llu of the update failed: %s: %s", (unsigned long long)k,
                    spk_status_str(st), spk_last_error(ctx));
            T_CHECK(same_layout(A, A0, F.n) && same_csr_values(A, A0), "allocation %llu failed: "
                    "the update changed the matrix", (unsigned long long)k);
            st = spk_matrix_update_values(ctx, A, F.nnz, F.val, 0);
        }
        T_CHECK(st == SPK_OK, "k = %llu: %s", (unsigned long long)k, spk_last_error(ctx));
        spk_matrix *B = fem_prepared(&F, SPK_FMT_HYB);
        T_CHECK(same_layout(A, B, F.n) && same_csr_values(A, B), "k = %llu: the update differs "
                "from a fresh matrix", (unsigned long long)k);
        fem_values(&F, 9, 3);
        T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK, "%s", spk_last_error(ctx));
        spk_matrix *C = fem_prepared(&F, SPK_FMT_HYB);
        T_CHECK(same_layout(A, C, F.n) && same_csr_values(A, C), "k = %llu: the next update "
                "differs from a fresh matrix", (unsigned long long)k);
        spk_matrix_destroy(A);
        spk_matrix_destroy(A0);
        spk_matrix_destroy(B);
        spk_matrix_destroy(C);
    }
    /* on the GPU the first update makes 8 allocations for HYB (a host one, the staging, value
     * and map arrays, HYB's tail offsets on the host and both offset arrays on the device) */
    T_CHECK(dev == SPK_DEVICE_CUDA ? failed >= 6 : failed == 0, "%d injected failures hit the "
            "update", failed);
    fem_free(&F);
}

/* Per format, with a CG + Jacobi solver on the matrix: a refused update (NaN) leaves the
 * matrix, its layout and the solution as they were; a zero diagonal is taken by the update but
 * refused by the refresh and by every solve (naming the row) until an update repairs it; a
 * negative diagonal is refused by CG's refresh with the row and its value, and so is a
 * subnormal one, whose reciprocal overflows. On the GPU the
 * diagonal comes from the device values. */
static void test_update_errors(spk_format fmt)
{
    const char *fn = spk_format_str(fmt);
    fem F;
    fem_make(&F, 8, 1);
    spk_matrix *A = fem_prepared(&F, fmt), *R = fem_prepared(&F, fmt);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = SPK_PRECOND_JACOBI;
    opt.format = fmt;
    opt.rtol = 1e-10;
    spk_solver *S = NULL;
    spk_result res;
    const int64_t n = F.n;
    double *b = rhs(n, 4), *x0 = calloc((size_t)n, sizeof *x0), *x = calloc((size_t)n, sizeof *x);
    const double tol =
        (fmt == SPK_FMT_COO || fmt == SPK_FMT_HYB) && dev == SPK_DEVICE_CUDA ? 1e-8 : 1e-12;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s: %s", fn, spk_last_error(ctx));
    if (!S)
        return;
    T_CHECK(spk_solver_solve(S, b, x0, &res) == SPK_OK && res.reason > 0, "%s", spk_last_error(ctx));
    /* a device update of the same values first, so that the refused one meets device values */
    T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK, "%s", spk_last_error(ctx));

    F.val[7] = NAN;
    T_CHECK(refused_at(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0), 7), "%s: %s", fn,
            spk_last_error(ctx));
    T_CHECK(same_layout(A, R, n) && same_csr_values(A, R), "%s: a refused update changed A", fn);
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0 &&
            t_rel_diff(x, x0, n) <= tol, "%s: after a refused update x differs by %.3g", fn,
            t_rel_diff(x, x0, n));

    /* zero diagonal a(1,1) */
    fem_values(&F, 8, 1);
    for (int64_t k = 0; k < F.nnz; k++)
        if (F.row[k] == 0 && F.col[k] == 0)
            F.val[k] = 0.0;
    T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_refresh(S) == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "a(1,1) = 0"),
            "%s zero diagonal: %s", fn, spk_last_error(ctx));
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_ERR_UNSUPPORTED, "%s: solve with a zero "
            "diagonal", fn);
    spk_matrix *Z = fem_prepared(&F, fmt);
    T_CHECK(same_layout(A, Z, n) && same_csr_values(A, Z), "%s: the matrix after a refused "
            "refresh", fn);
    spk_matrix_destroy(Z);

    /* negative diagonal a(4,4) for CG */
    fem_values(&F, 8, 1);
    for (int64_t k = 0; k < F.nnz; k++)
        if (F.row[k] == 3 && F.col[k] == 3)
            F.val[k] = -1.0;
    T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_refresh(S) == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "a(4,4) = -") &&
            strstr(spk_last_error(ctx), "positive"), "%s negative diagonal: %s", fn,
            spk_last_error(ctx));

    /* a subnormal diagonal a(5,5) (the sum of its triplets), whose reciprocal overflows:
     * refused as a zero one is */
    fem_values(&F, 8, 1);
    for (int64_t k = 0; k < F.nnz; k++)
        if (F.row[k] == 4 && F.col[k] == 4)
            F.val[k] = 1e-310;
    T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_refresh(S) == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "a(5,5) = ") &&
            strstr(spk_last_error(ctx), "e-310, whose reciprocal overflows"),
            "%s subnormal diagonal: %s", fn, spk_last_error(ctx));

    /* repaired: the first solution again */
    fem_values(&F, 8, 1);
    T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0 &&
            t_rel_diff(x, x0, n) <= tol, "%s repaired: %s, x differs by %.3g", fn,
            spk_last_error(ctx), t_rel_diff(x, x0, n));
    spk_solver_destroy(S);
    spk_matrix_destroy(A);
    spk_matrix_destroy(R);
    free(b);
    free(x0);
    free(x);
    fem_free(&F);
}

/* ---- solver -------------------------------------------------------------------------------- */

static void test_solver_errors(void)
{
    fem F;
    fem_make(&F, 6, 1);
    spk_matrix *A = fem_matrix(&F);
    spk_options opt;
    spk_options_default(&opt);
    spk_solver *S = (spk_solver *)1;
    spk_result res;
    T_CHECK(spk_solver_create(ctx, NULL, &opt, &S) == SPK_ERR_ARG && !S, "NULL matrix");
    T_CHECK(spk_solver_create(ctx, A, &opt, NULL) == SPK_ERR_ARG, "NULL out");
    T_CHECK(spk_solver_create(NULL, A, &opt, &S) == SPK_ERR_ARG, "NULL ctx");
    opt.rtol = -1;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_ERR_ARG && strstr(spk_last_error(ctx), "rtol"),
            "rtol < 0: %s", spk_last_error(ctx));
    spk_options_default(&opt);
    opt.method = SPK_METHOD_GMRES;
    opt.restart = 0;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_ERR_ARG, "restart 0");
    spk_options_default(&opt);
    opt.format = (spk_format)9;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_ERR_ARG, "format 9");
    spk_options_default(&opt);
    opt.maxiter = -1;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_ERR_ARG, "maxiter -1");
    /* fields out of range are refused with the field named, never taken as the default */
    for (int k = 0; k < 13; k++) {
        spk_options_default(&opt);
        const char *field = "";
        switch (k) {
        case 0: opt.history = 7; field = "history"; break;
        case 1: opt.use_x0 = 5; field = "use_x0"; break;
        case 2: opt.monitor_every = -3; field = "monitor_every"; break;
        case 3: opt.block_size = -1; field = "block_size"; break;
        case 4: opt.precond = SPK_PRECOND_AMG; opt.amg.max_levels = -1; field = "max_levels"; break;
        case 5: opt.precond = SPK_PRECOND_AMG; opt.amg.sweeps = -1; field = "sweeps"; break;
        case 6: opt.precond = SPK_PRECOND_AMG; opt.amg.max_coarse = -1; field = "max_coarse"; break;
        case 7: opt.precond = SPK_PRECOND_AMG; opt.amg.degree = -1; field = "degree"; break;
        case 8: opt.precond = SPK_PRECOND_AMG; opt.amg.rebuild = 5; field = "rebuild"; break;
        case 9: opt.precond = SPK_PRECOND_AMG; opt.amg.nullspace_cols = 3; field = "nullspace"; break;
        case 10: opt.precond = SPK_PRECOND_ILUT; opt.ilu.fill_factor = NAN; field = "fill_factor"; break;
        case 11: opt.method = (spk_method)77; field = "method = 77"; break;
        default: opt.precond = (spk_precond)77; field = "precond = 77"; break;
        }
        S = (spk_solver *)1;
        const spk_status st = spk_solver_create(ctx, A, &opt, &S);
        T_CHECK(st == SPK_ERR_ARG && !S && strstr(spk_last_error(ctx), field),
                "option %d (%s): %s: %s", k, field, spk_status_str(st), spk_last_error(ctx));
        if (st == SPK_OK)
            spk_solver_destroy(S);
    }

    /* non-square */
    const int64_t rp[3] = {0, 1, 2};
    const int32_t ci[2] = {0, 2};
    const double v[2] = {1, 1};
    spk_matrix *R = NULL;
    const int32_t ci_bad[2] = {0, 3};
    T_CHECK(spk_matrix_from_csr(ctx, 2, 3, rp, ci_bad, v, 0, &R) == SPK_ERR_ARG && !R &&
                strstr(spk_last_error(ctx), "spk_matrix_from_csr: colind[1] = 3 (row 1)"),
            "a CSR column out of range is named as given: %s", spk_last_error(ctx));
    spk_matrix_from_csr(ctx, 2, 3, rp, ci, v, 0, &R);
    T_CHECK(spk_solver_create(ctx, R, NULL, &S) == SPK_ERR_ARG && strstr(spk_last_error(ctx), "square"),
            "2 x 3: %s", spk_last_error(ctx));
    double b3[2] = {1, 1}, x3[3];
    T_CHECK(spk_solve(ctx, R, b3, x3, &opt, &res) == SPK_ERR_ARG, "spk_solve 2 x 3");
    spk_matrix_destroy(R);

    /* a handle that destroy cleared (magic 0) is refused, never used */
    spk_matrix dead;
    memset(&dead, 0, sizeof dead);
    double *b = rhs(F.n, 1), *x = calloc((size_t)F.n, sizeof *x);
    T_CHECK(spk_solver_create(ctx, &dead, NULL, &S) == SPK_ERR_ARG, "destroyed matrix");
    T_CHECK(spk_matrix_update_values(ctx, &dead, 0, NULL, 0) == SPK_ERR_ARG, "update destroyed");
    T_CHECK(spk_matrix_prepare(ctx, &dead, SPK_FMT_CSR) == SPK_ERR_ARG, "prepare destroyed");
    T_CHECK(spk_solve(ctx, &dead, b, x, &opt, &res) == SPK_ERR_ARG, "solve destroyed");
    spk_matrix_destroy(&dead);                      /* a no-op: nothing is freed */
    /* the solver's magic is its first field: a zeroed block stands for a destroyed solver */
    uint64_t dead_solver[64];
    memset(dead_solver, 0, sizeof dead_solver);
    spk_solver *DS = (spk_solver *)dead_solver;
    T_CHECK(spk_solver_solve(DS, b, x, &res) == SPK_ERR_ARG, "solve with a destroyed solver");
    T_CHECK(spk_solver_solve_device(DS, b, x, &res) == SPK_ERR_ARG, "device solve destroyed");
    T_CHECK(spk_solver_refresh(DS) == SPK_ERR_ARG, "refresh destroyed");
    T_CHECK(spk_solver_method(DS) == SPK_METHOD_AUTO && spk_solver_format(DS) == SPK_FMT_AUTO,
            "getters of a destroyed solver");
    spk_solver_destroy(DS);                         /* a no-op */
    spk_solver_destroy(NULL);

    T_CHECK(spk_solver_create(ctx, A, NULL, &S) == SPK_OK && S, "defaults: %s", spk_last_error(ctx));
    T_CHECK(spk_solver_method(S) == SPK_METHOD_CG, "AUTO on an SPD matrix: %s",
            spk_method_str(spk_solver_method(S)));
    T_CHECK(spk_solver_format(S) == spk_matrix_format(A), "format %d", (int)spk_solver_format(S));
    T_CHECK(spk_solver_solve(NULL, b, x, &res) == SPK_ERR_ARG, "NULL solver");
    T_CHECK(spk_solver_solve(S, NULL, x, &res) == SPK_ERR_ARG, "NULL b");
    T_CHECK(spk_solver_solve(S, b, x, NULL) == SPK_ERR_ARG, "NULL res");
    T_CHECK(spk_solver_solve_device(S, NULL, x, &res) == SPK_ERR_ARG, "device NULL b");
    b[3] = NAN;
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_ERR_ARG && strstr(spk_last_error(ctx), "b(4)"),
            "NaN in b: %s", spk_last_error(ctx));
    b[3] = 1.0;
    T_CHECK(spk_solver_refresh(NULL) == SPK_ERR_ARG, "refresh NULL");
    T_CHECK(spk_solver_refresh(S) == SPK_OK, "refresh without change");
    spk_solver_destroy(S);

    /* Jacobi: a zero diagonal after an update is refused by the refresh and by every solve,
     * until an update repairs it */
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = SPK_PRECOND_JACOBI;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
    for (int64_t k = 0; k < F.nnz; k++)             /* every triplet of a(0,0): a zero diagonal */
        if (F.row[k] == 0 && F.col[k] == 0)
            F.val[k] = 0.0;
    T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_refresh(S) == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "a(1,1)"),
            "zero diagonal: %s", spk_last_error(ctx));
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_ERR_UNSUPPORTED, "solve with a zero diagonal");
    spk_matrix_info info;
    spk_matrix_get_info(A, &info);
    T_CHECK(!info.diag_positive, "diag_positive not recomputed after the update");
    fem_values(&F, 6, 1);
    T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0, "repaired: %s %s",
            spk_last_error(ctx), spk_reason_str(res.reason));
    /* a refused solve leaves no earlier result behind in *res */
    b[2] = NAN;
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_ERR_ARG && res.reason == 0 &&
                res.iterations == 0,
            "a refused solve after a converged one: reason %s, %lld iterations",
            spk_reason_str(res.reason), (long long)res.iterations);
    b[2] = 1.0;
    T_CHECK(spk_solve(ctx, A, b, x, &opt, &res) == SPK_OK && res.reason > 0, "spk_solve: %s",
            spk_last_error(ctx));
    b[2] = NAN;
    T_CHECK(spk_solve(ctx, A, b, x, &opt, &res) == SPK_ERR_ARG && res.reason == 0 &&
                res.iterations == 0,
            "spk_solve refused after a converged solve: reason %s", spk_reason_str(res.reason));
    b[2] = 1.0;
    double a_s, op_s;
    T_CHECK(spk_solver_spmv_seconds(S, 0, &a_s, &op_s) == SPK_ERR_ARG &&
                strstr(spk_last_error(ctx), "reps = 0 must be >= 1"),
            "spmv_seconds reps 0: %s", spk_last_error(ctx));
    T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 7) == SPK_ERR_ARG &&
                strstr(spk_last_error(ctx), "val_on_device = 7"),
            "val_on_device 7: %s", spk_last_error(ctx));
    spk_matrix_get_info(A, &info);
    T_CHECK(info.diag_positive && info.symmetric, "statistics after the repair");
    spk_solver_destroy(S);
    free(b);
    free(x);
    spk_matrix_destroy(A);
    fem_free(&F);
}

/* Solver object: several right-hand sides, warm start, the one-shot spk_solve agrees, and
 * update_values + solve gives the x of a freshly made matrix. */
static void test_solver_use(spk_method method, spk_format fmt)
{
    const char *mn = spk_method_str(method), *fn = spk_format_str(fmt);
    fem F;
    fem_make(&F, 16, 3);
    spk_matrix *A = fem_matrix(&F);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = method;
    opt.precond = SPK_PRECOND_JACOBI;
    opt.format = fmt;
    opt.rtol = 1e-10;
    opt.restart = 20;
    spk_solver *S = NULL;
    spk_result res;
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s %s: %s", mn, fn, spk_last_error(ctx));
    if (!S)
        return;
    const int64_t n = F.n;
    double *x = calloc((size_t)n, sizeof *x), *x1 = calloc((size_t)n, sizeof *x1);
    for (int rhs_i = 0; rhs_i < 3; rhs_i++) {     /* several right-hand sides, one setup */
        double *b = rhs(n, 100 + rhs_i);
        T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK, "%s", spk_last_error(ctx));
        T_CHECK(res.reason > 0 && t_true_rel(A, b, x) < 1e-9, "%s %s rhs %d: %s, true rel %.3g", mn,
                fn, rhs_i, spk_reason_str(res.reason), t_true_rel(A, b, x));
        T_CHECK(res.method == method && res.format == fmt && res.device == dev, "result fields");
        T_CHECK(rhs_i == 0 || res.setup_s < 0.5, "setup_s %.3g on a reused solver", res.setup_s);
        T_CHECK(rhs_i == 0 || !res.cold, "%s %s rhs %d: a second solve with the method is warm",
                mn, fn, rhs_i);
        if (rhs_i == 0) {                          /* the one-shot form agrees */
            spk_result r1;
            T_CHECK(spk_solve(ctx, A, b, x1, &opt, &r1) == SPK_OK, "%s", spk_last_error(ctx));
            T_CHECK(r1.iterations == res.iterations && t_rel_diff(x1, x, n) <= 1e-12,
                    "%s %s: spk_solve %lld its vs solver %lld, x differs %.3g", mn, fn,
                    (long long)r1.iterations, (long long)res.iterations, t_rel_diff(x1, x, n));
        }
        free(b);
    }
    /* warm start from the solution: no iteration needed */
    double *b = rhs(n, 102);
    opt.use_x0 = 1;
    opt.rtol = 1e-8;                                 /* x's residual is ~1e-10 already */
    spk_solver *W = NULL;
    spk_solver_create(ctx, A, &opt, &W);
    T_CHECK(spk_solver_solve(W, b, x, &res) == SPK_OK && res.iterations == 0 && res.reason > 0,
            "%s %s warm start: %lld iterations, %s", mn, fn, (long long)res.iterations,
            spk_reason_str(res.reason));
    spk_solver_destroy(W);
    opt.use_x0 = 0;
    opt.rtol = 1e-10;

    /* update + solve == fresh matrix + solve */
    fem_values(&F, 16, 4);
    T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_refresh(S) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0, "%s", spk_last_error(ctx));
    spk_matrix *B = fem_matrix(&F);
    spk_result rb;
    T_CHECK(spk_solve(ctx, B, b, x1, &opt, &rb) == SPK_OK, "%s", spk_last_error(ctx));
    if (fmt == SPK_FMT_CSR && method == SPK_METHOD_CG) {   /* opt NULL: the defaults */
        spk_result rn;
        double *xn = calloc((size_t)n, sizeof *xn);
        T_CHECK(spk_solve(ctx, B, b, xn, NULL, &rn) == SPK_OK && rn.reason > 0 &&
                    rn.method == SPK_METHOD_CG,
                "spk_solve with NULL options: %s, %s", spk_reason_str(rn.reason),
                spk_last_error(ctx));
        spk_result_free(&rn);
        free(xn);
    }
    /* COO (and HYB's tail) on the GPU add rows that cross a tile with atomics: not bitwise
     * repeatable, so the iterates may part at rounding level */
    const double tol =
        (fmt == SPK_FMT_COO || fmt == SPK_FMT_HYB) && dev == SPK_DEVICE_CUDA ? 1e-8 : 1e-12;
    T_CHECK(t_rel_diff(x, x1, n) <= tol, "%s %s: updated vs fresh x differ by %.3g (%lld vs %lld "
            "its)", mn, fn, t_rel_diff(x, x1, n), (long long)res.iterations, (long long)rb.iterations);
    spk_matrix_destroy(B);
    free(b);
    free(x);
    free(x1);
    spk_solver_destroy(S);
    spk_matrix_destroy(A);
    fem_free(&F);
}

/* After the first solve, a loop of { update values; refresh; solve; spmv } allocates nothing. */
static void test_no_alloc(spk_method method, spk_format fmt)
{
    const char *mn = spk_method_str(method), *fn = spk_format_str(fmt);
    fem F;
    fem_make(&F, 12, 7);
    spk_matrix *A = fem_matrix(&F);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = method;
    opt.precond = SPK_PRECOND_JACOBI;
    opt.format = fmt;
    spk_solver *S = NULL;
    spk_result res;
    double *b = rhs(F.n, 9), *x = calloc((size_t)F.n, sizeof *x), *y = calloc((size_t)F.n, 8);
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0, "%s", spk_last_error(ctx));
    spk_matrix_spmv(ctx, A, 1.0, x, 0.0, y);
    /* On the GPU the first update makes the device side of the update (map, staging, each
     * layout's index data, the diagonal's positions): step 0 may allocate there, and only
     * there; on a CPU it may not. */
    const uint64_t first = spk_context_alloc_count(ctx);
    uint64_t before = first;
    int ok = 1;
    for (int step = 0; step < 5; step++) {
        if (step == 1)
            before = spk_context_alloc_count(ctx);
        fem_values(&F, 12, 20 + (uint64_t)step);
        ok &= spk_matrix_update_values(ctx, A, F.nnz, F.val, 0) == SPK_OK;
        ok &= spk_solver_refresh(S) == SPK_OK;
        ok &= spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0;
        ok &= t_true_rel(A, b, x) < 1e-7;
        ok &= spk_matrix_spmv(ctx, A, 1.0, x, 0.0, y) == SPK_OK;
    }
    const uint64_t after = spk_context_alloc_count(ctx);
    T_CHECK(ok, "%s %s: the loop failed: %s", mn, fn, spk_last_error(ctx));
    T_CHECK(after == before, "%s %s: %llu allocations in update + solve steps 1-4", mn, fn,
            (unsigned long long)(after - before));
    T_CHECK(dev == SPK_DEVICE_CUDA || before == first, "%s %s: %llu allocations in the first "
            "update + solve on the cpu", mn, fn, (unsigned long long)(before - first));
    printf("no-alloc %s %s: %llu allocations at the first update, %llu after it (of %llu)\n", mn,
           fn, (unsigned long long)(before - first), (unsigned long long)(after - before),
           (unsigned long long)after);
    spk_solver_destroy(S);
    free(b);
    free(x);
    free(y);
    spk_matrix_destroy(A);
    fem_free(&F);
}

/* Vectors and values already on the device (the CPU context takes host pointers). */
static void test_device_vectors(void)
{
    const spk_vec_ops *ops = spk_vec_ops_for(dev);
    fem F;
    fem_make(&F, 10, 11);
    spk_matrix *A = fem_matrix(&F);
    const int64_t n = F.n;
    spk_options opt;
    spk_options_default(&opt);
    opt.precond = SPK_PRECOND_JACOBI;
    opt.rtol = 1e-10;
    spk_solver *S = NULL;
    spk_result res;
    double *b = rhs(n, 13), *x = calloc((size_t)n, sizeof *x), *xd = calloc((size_t)n, sizeof *xd);
    double *d_b = NULL, *d_x = NULL, *d_val = NULL;
    T_CHECK(ops->alloc(ctx, n, &d_b) == SPK_OK && ops->alloc(ctx, n, &d_x) == SPK_OK &&
            ops->alloc(ctx, F.nnz, &d_val) == SPK_OK, "device vectors: %s", spk_last_error(ctx));
    ops->upload(ctx, n, b, d_b);
    T_CHECK(spk_solver_create(ctx, A, &opt, &S) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_solver_solve_device(S, d_b, d_x, &res) == SPK_OK && res.reason > 0, "device: %s",
            spk_last_error(ctx));
    ops->download(ctx, n, d_x, xd);
    T_CHECK(t_rel_diff(xd, x, n) <= 1e-12, "device solve differs from host solve by %.3g",
            t_rel_diff(xd, x, n));
    /* a NaN in a device b is found through its norm, and x is left as it was */
    double nan = NAN;
    ops->upload(ctx, 1, &nan, d_b);
    T_CHECK(spk_solver_solve_device(S, d_b, d_x, &res) == SPK_ERR_ARG, "NaN in device b");
    double *kept = calloc((size_t)n, sizeof *kept);
    ops->download(ctx, n, d_x, kept);
    ops->sync(ctx);
    T_CHECK(memcmp(kept, xd, (size_t)n * sizeof *kept) == 0,
            "a solve refused for its b must leave the device x as it was");
    free(kept);
    ops->upload(ctx, n, b, d_b);

    /* values from device memory */
    fem_values(&F, 10, 12);
    ops->upload(ctx, F.nnz, F.val, d_val);
    T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, d_val, 1) == SPK_OK, "%s", spk_last_error(ctx));
    spk_matrix *B = fem_matrix(&F);
    T_CHECK(same_csr_values(A, B), "update from device values differs from a fresh assembly");
    T_CHECK(spk_solver_solve_device(S, d_b, d_x, &res) == SPK_OK && res.reason > 0, "%s",
            spk_last_error(ctx));
    ops->download(ctx, n, d_x, xd);
    T_CHECK(t_true_rel(B, b, xd) < 1e-9, "after a device update: true rel %.3g", t_true_rel(B, b, xd));

    /* a matrix from device CSR arrays (bytes moved through the double-vector table) */
    const int64_t *rp;
    const int32_t *ci;
    const double *v;
    spk_matrix_info info;
    spk_matrix_get_info(B, &info);
    spk_matrix_csr(B, &rp, &ci, &v);
    double *d_rp = NULL, *d_ci = NULL, *d_v = NULL;
    ops->alloc(ctx, n + 1, &d_rp);
    ops->alloc(ctx, (info.nnz + 1) / 2, &d_ci);
    ops->alloc(ctx, info.nnz, &d_v);
    ops->upload(ctx, n + 1, (const double *)(const void *)rp, d_rp);
    if (info.nnz & 1) {                              /* an odd count: pad through a copy */
        int32_t *tmp = calloc((size_t)info.nnz + 1, sizeof *tmp);
        memcpy(tmp, ci, (size_t)info.nnz * sizeof *tmp);
        ops->upload(ctx, (info.nnz + 1) / 2, (const double *)(void *)tmp, d_ci);
        free(tmp);
    } else {
        ops->upload(ctx, info.nnz / 2, (const double *)(const void *)ci, d_ci);
    }
    ops->upload(ctx, info.nnz, v, d_v);
    spk_matrix *C = NULL;
    spk_status st = spk_matrix_from_csr_device(ctx, n, n, (const int64_t *)(void *)d_rp,
                                               (const int32_t *)(void *)d_ci, d_v, 0, &C);
    if (dev == SPK_DEVICE_CUDA) {
        T_CHECK(st == SPK_OK && C && same_csr_values(B, C), "from_csr_device: %s", spk_last_error(ctx));
    } else {
        T_CHECK(st == (spk_has_cuda() ? SPK_ERR_ARG : SPK_ERR_NOT_COMPILED) && !C,
                "from_csr_device on the CPU: %s (%s)", spk_status_str(st), spk_last_error(ctx));
    }
    T_CHECK(spk_matrix_from_csr_device(ctx, n, n, NULL, NULL, NULL, 0, &C) == SPK_ERR_ARG, "NULL");
    spk_matrix_destroy(C);
    ops->free(ctx, d_rp);
    ops->free(ctx, d_ci);
    ops->free(ctx, d_v);

    /* an update through another context drops the layout; the next solve prepares again */
    spk_context *other = t_context(SPK_DEVICE_CPU);
    T_CHECK(spk_matrix_update_values(other, A, F.nnz, F.val, 0) == SPK_OK, "%s", spk_last_error(other));
    T_CHECK(spk_matrix_format(A) == SPK_FMT_AUTO, "the layout of another context was kept");
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0 &&
            spk_matrix_format(A) == spk_solver_format(S), "re-prepared: %s", spk_last_error(ctx));
    spk_context_destroy(other);
    /* and back on this context: a device update again (the device side made before is reused) */
    fem_values(&F, 10, 14);
    ops->upload(ctx, F.nnz, F.val, d_val);
    T_CHECK(spk_matrix_update_values(ctx, A, F.nnz, d_val, 1) == SPK_OK, "%s", spk_last_error(ctx));
    spk_matrix *E = fem_matrix(&F);
    T_CHECK(same_csr_values(A, E), "device update after a host one differs from a fresh assembly");
    T_CHECK(spk_solver_solve(S, b, x, &res) == SPK_OK && res.reason > 0 && t_true_rel(E, b, x) < 1e-9,
            "after a device update following a host one: %s, true rel %.3g", spk_last_error(ctx),
            t_true_rel(E, b, x));
    spk_matrix_destroy(E);

    spk_solver_destroy(S);
    spk_matrix_destroy(A);
    spk_matrix_destroy(B);
    ops->free(ctx, d_b);
    ops->free(ctx, d_x);
    ops->free(ctx, d_val);
    free(b);
    free(x);
    free(xd);
    fem_free(&F);
}

/* The history stays per result: each solve hands back its own, freed by spk_result_free. */
static void test_history(void)
{
    fem F;
    fem_make(&F, 8, 5);
    spk_options opt;
    spk_options_default(&opt);
    opt.history = 1;
    spk_solver *S = NULL;
    spk_result r1, r2;
    double *b = rhs(F.n, 2), *x = calloc((size_t)F.n, sizeof *x);
    spk_context *fresh = NULL;                      /* cold: the context's first CG solve */
    T_CHECK(spk_context_create(&fresh, dev) == SPK_OK, "%s", spk_last_error(NULL));
    spk_matrix *FA = NULL;
    T_CHECK(spk_matrix_from_coo(fresh, F.n, F.n, F.nnz, F.row, F.col, F.val, 0, &FA) == SPK_OK,
            "%s", spk_last_error(fresh));
    opt.method = SPK_METHOD_CG;
    spk_solver_create(fresh, FA, &opt, &S);
    T_CHECK(spk_solver_solve(S, b, x, &r1) == SPK_OK && r1.history_len == r1.iterations + 1,
            "history of %lld for %lld iterations", (long long)r1.history_len, (long long)r1.iterations);
    T_CHECK(spk_solver_solve(S, b, x, &r2) == SPK_OK && r2.history && r2.history != r1.history &&
            r2.history_len == r1.history_len, "second history");
    T_CHECK(r1.cold && !r2.cold, "cold flags %d %d: the first solve cold, the second warm", r1.cold,
            r2.cold);
    spk_result_free(&r1);
    spk_result_free(&r2);
    T_CHECK(r1.history == NULL && r1.history_len == 0, "result_free");
    spk_solver_destroy(S);
    spk_matrix_destroy(FA);
    spk_context_destroy(fresh);
    free(b);
    free(x);
    fem_free(&F);
}

/* Two contexts in two threads, which docs/api.md supports. Thread A solves with CG over and
 * over; on the GPU each solve captures its iterations into a CUDA graph once. Thread B, on its
 * own context, meanwhile updates a matrix's values on its GPU and reads them back
 * (spk_matrix_csr: a plain cudaMemcpy on the legacy default stream), over and over. Every
 * call of both must succeed (a capture on a blocking stream makes the legacy stream unusable
 * process-wide: B's reads then failed), B must read back what it wrote, and A's solves must
 * give the bits of a solve made alone. */
static void test_two_threads(void)
{
#ifdef _OPENMP
    enum { MAX_ROUNDS = 200000 };
    const int SOLVES = quick ? 1 : 40;              /* racecheck: each launch is slow */
    spk_context *ca = NULL, *cb = NULL;
    spk_matrix *A = NULL, *B = NULL;
    spk_solver *S = NULL;
    spk_options o;
    spk_options_default(&o);
    o.method = SPK_METHOD_CG;
    o.rtol = 1e-10;
    int ok = spk_context_create(&ca, dev) == SPK_OK && spk_context_create(&cb, dev) == SPK_OK &&
             spk_matrix_generate(ca, "poisson3d:24", &A) == SPK_OK &&
             spk_matrix_generate(cb, "poisson2d:40", &B) == SPK_OK &&
             spk_matrix_prepare(cb, B, SPK_FMT_CSR) == SPK_OK &&
             spk_solver_create(ca, A, &o, &S) == SPK_OK;
    T_CHECK(ok, "two threads: setup: %s / %s", ca ? spk_last_error(ca) : "-",
            cb ? spk_last_error(cb) : "-");
    spk_matrix_info ia = {0}, ib = {0};
    if (ok)
        ok = spk_matrix_get_info(A, &ia) == SPK_OK && spk_matrix_get_info(B, &ib) == SPK_OK;
    const int64_t n = ia.nrows, nnz = ib.nnz;
    double *b = ok ? rhs(n, 21) : NULL, *x0 = calloc((size_t)n + 1, sizeof *x0),
           *x = calloc((size_t)n + 1, sizeof *x), *vals = malloc(((size_t)nnz + 1) * sizeof *vals);
    spk_result r0;
    memset(&r0, 0, sizeof r0);
    if (ok)
        ok = spk_solver_solve(S, b, x0, &r0) == SPK_OK && r0.reason > 0 && r0.iterations >= 40;
    T_CHECK(ok, "two threads: the solve alone: %s after %lld iterations (%s)",
            spk_reason_str(r0.reason), (long long)r0.iterations, spk_last_error(ca));
    const double *base = NULL;
    if (ok) {
        const int64_t *rp;
        const int32_t *ci;
        ok = spk_matrix_csr(B, &rp, &ci, &base) == SPK_OK;
        if (ok)
            memcpy(vals, base, (size_t)nnz * sizeof *vals);   /* the values' scale, kept */
    }
    int threads = 0, a_failed = 0, a_differs = 0, done = 0;
    long rounds = 0, b_failed = 0, b_differs = 0;
    char a_msg[256] = "", b_msg[256] = "";
    if (ok) {
#pragma omp parallel num_threads(2)
        {
#pragma omp single
            threads = omp_get_num_threads();
            if (threads == 2 && omp_get_thread_num() == 0) {            /* A: solves */
                for (int k = 0; k < SOLVES; k++) {
                    spk_result r;
                    memset(x, 0, (size_t)n * sizeof *x);
                    if (spk_solver_solve(S, b, x, &r) != SPK_OK) {
                        a_failed++;
                        snprintf(a_msg, sizeof a_msg, "%s", spk_last_error(ca));
                    } else if (r.iterations != r0.iterations ||
                               memcmp(x, x0, (size_t)n * sizeof *x) != 0) {
                        a_differs++;
                    }
                }
#pragma omp atomic write
                done = 1;
            } else if (threads == 2) {                                   /* B: update, read */
                for (int stop = 0; !stop && rounds < MAX_ROUNDS; rounds++) {
                    for (int64_t k = 0; k < nnz; k++)
                        vals[k] = vals[k] * 1.0000001;   /* new values, the same signs */
                    const double *got;
                    const int64_t *rp;
                    const int32_t *ci;
                    spk_status su = spk_matrix_update_values(cb, B, nnz, vals, 0), sr = SPK_OK;
                    if (su == SPK_OK)
                        sr = spk_matrix_csr(B, &rp, &ci, &got);     /* no context: no message */
                    if (su != SPK_OK || sr != SPK_OK) {
                        if (!b_failed++)
                            snprintf(b_msg, sizeof b_msg, "%s: %s %s", su ? "the update" :
                                     "spk_matrix_csr's read-back", spk_status_str(su ? su : sr),
                                     su ? spk_last_error(cb) : "");
                    } else if (memcmp(got, vals, (size_t)nnz * sizeof *got) != 0) {
                        b_differs++;
                    }
#pragma omp atomic read
                    stop = done;
                }
            }
        }
    }
    if (ok) {
        T_CHECK(threads == 2, "two threads: OpenMP gave %d", threads);
        T_CHECK(a_failed == 0 && a_differs == 0, "two threads: A's %d solves: %d failed (%s), %d "
                "differ from the solve alone", SOLVES, a_failed, a_msg, a_differs);
        T_CHECK(rounds >= 10 && b_failed == 0 && b_differs == 0, "two threads: B's %ld rounds of "
                "update + read-back: %ld failed (first: %s), %ld read back other values", rounds,
                b_failed, b_msg, b_differs);
    }
    spk_result_free(&r0);
    spk_solver_destroy(S);
    spk_matrix_destroy(A);
    spk_matrix_destroy(B);
    spk_context_destroy(ca);
    spk_context_destroy(cb);
    free(b);
    free(x0);
    free(x);
    free(vals);
#endif
}

/* DIA through the public API: refused on the GPU (no backend) and past its limits, with a
 * message that names the way out; on the CPU, auto picks it for a stencil and the solve takes
 * CSR's iterations and residuals to the bit (every row summed in CSR's order). */
static void test_dia_refusals(void)
{
    spk_matrix *S = NULL, *R = NULL;
    T_CHECK(spk_matrix_generate(ctx, "poisson3d:24", &S) == SPK_OK, "%s", spk_last_error(ctx));
    T_CHECK(spk_matrix_generate(ctx, "powerlaw:3000:8", &R) == SPK_OK, "%s", spk_last_error(ctx));
    spk_status st = spk_matrix_prepare(ctx, R, SPK_FMT_DIA);
    T_CHECK(st == SPK_ERR_UNSUPPORTED && (dev != SPK_DEVICE_CPU ||
                                          strstr(spk_last_error(ctx), "more than 64 diagonals")),
            "dia of a power-law matrix: %s: %s", spk_status_str(st), spk_last_error(ctx));
    st = spk_matrix_prepare(ctx, S, SPK_FMT_DIA);
    if (dev != SPK_DEVICE_CPU) {
        T_CHECK(st == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "dia") &&
                    strstr(spk_last_error(ctx), "cpu"),
                "dia on the GPU: %s: %s", spk_status_str(st), spk_last_error(ctx));
        /* a layout made in dia on a CPU context, then an SpMV on the GPU context: the GPU's
         * own choice, not a refusal */
        spk_context *cpu = NULL;
        T_CHECK(spk_context_create(&cpu, SPK_DEVICE_CPU) == SPK_OK &&
                    spk_matrix_prepare(cpu, S, SPK_FMT_AUTO) == SPK_OK &&
                    spk_matrix_format(S) == SPK_FMT_DIA,
                "dia on a cpu context: %s", cpu ? spk_last_error(cpu) : "no context");
        spk_matrix_info in;
        spk_matrix_get_info(S, &in);
        double *x = malloc((size_t)in.ncols * sizeof *x), *y = malloc((size_t)in.nrows * sizeof *y);
        for (int64_t i = 0; i < in.ncols; i++)
            x[i] = 1.0;
        st = spk_matrix_spmv(ctx, S, 1.0, x, 0.0, y);
        T_CHECK(st == SPK_OK && spk_matrix_format(S) != SPK_FMT_DIA && y[0] == 3.0,
                "spmv on the gpu after dia on the cpu: %s (%s), format %s, y0 %g",
                spk_status_str(st), spk_last_error(ctx), spk_format_str(spk_matrix_format(S)),
                y[0]);
        free(x);
        free(y);
        spk_context_destroy(cpu);
    } else {
        T_CHECK(st == SPK_OK, "dia of poisson3d:24: %s", spk_last_error(ctx));
        spk_matrix_info in;
        spk_matrix_get_info(S, &in);
        char why[256];
        T_CHECK(spk_select_format(&in, SPK_DEVICE_CPU, why, sizeof why) == SPK_FMT_DIA &&
                    spk_select_format(&in, SPK_DEVICE_CUDA, NULL, 0) != SPK_FMT_DIA,
                "auto on poisson3d:24: cpu %s", why);
        const int64_t n = in.nrows;
        double *b = malloc((size_t)n * sizeof *b), *x1 = calloc((size_t)n, sizeof *x1),
               *x2 = calloc((size_t)n, sizeof *x2);
        for (int64_t i = 0; i < n; i++)
            b[i] = 1.0 + (double)(i % 7);
        spk_options o;
        spk_options_default(&o);
        o.method = SPK_METHOD_CG;
        o.rtol = 1e-10;
        spk_result r1, r2;
        o.format = SPK_FMT_DIA;
        T_CHECK(spk_solve(ctx, S, b, x1, &o, &r1) == SPK_OK, "%s", spk_last_error(ctx));
        o.format = SPK_FMT_CSR;
        T_CHECK(spk_solve(ctx, S, b, x2, &o, &r2) == SPK_OK, "%s", spk_last_error(ctx));
        T_CHECK(r1.iterations == r2.iterations && r1.rnorm == r2.rnorm &&
                    memcmp(x1, x2, (size_t)n * sizeof *x1) == 0,
                "cg in dia and csr: %lld / %lld iterations, rnorm %.17g / %.17g, x %s",
                (long long)r1.iterations, (long long)r2.iterations, r1.rnorm, r2.rnorm,
                memcmp(x1, x2, (size_t)n * sizeof *x1) ? "differs" : "same");
        free(b);
        free(x1);
        free(x2);
    }
    spk_matrix_destroy(S);
    spk_matrix_destroy(R);
}

int main(int argc, char **argv)
{
    dev = t_device_from_args(argc, argv);
    int part_main = 1, part_threads = 1;        /* --part main|threads: one half alone */
    for (int a = 1; a < argc; a++) {
        quick |= strcmp(argv[a], "--quick") == 0;
        if (strcmp(argv[a], "--part") == 0) {
            const char *v = a + 1 < argc ? argv[a + 1] : "";
            if (strcmp(v, "main") != 0 && strcmp(v, "threads") != 0) {
                fprintf(stderr, "test_api: --part expects main or threads, got '%s'\n", v);
                return 2;
            }
            part_main = strcmp(v, "main") == 0;
            part_threads = !part_main;
        }
    }
    ctx = t_context(dev);
    if (part_main) {
        test_context();
        test_knobs();
        test_threads();
        test_threads_fit();
        test_matrix_make();
        test_matrix_file();
        test_update_formats();
        test_update_fallback();
        for (int f = SPK_FMT_COO; f < SPK_FMT_COUNT; f++)
            if (fits_here((spk_format)f))
                test_update_errors((spk_format)f);
        test_solver_errors();
        test_dia_refusals();
        for (int f = SPK_FMT_COO; f < SPK_FMT_COUNT; f++)
            if ((!quick || f == SPK_FMT_ELL || f == SPK_FMT_HYB) && fits_here((spk_format)f))
                test_solver_use(SPK_METHOD_CG, (spk_format)f);
        test_solver_use(SPK_METHOD_BICGSTAB, SPK_FMT_CSR);
        test_solver_use(SPK_METHOD_GMRES, SPK_FMT_HYB);
        for (int f = SPK_FMT_COO; f < SPK_FMT_COUNT; f++)
            if ((!quick || f == SPK_FMT_ELL || f == SPK_FMT_HYB) && fits_here((spk_format)f))
                test_no_alloc(SPK_METHOD_CG, (spk_format)f);
        test_no_alloc(SPK_METHOD_BICGSTAB, SPK_FMT_CSR);
        test_no_alloc(SPK_METHOD_GMRES, SPK_FMT_ELL);
        test_device_vectors();
        test_history();
    }
    if (part_threads)
        test_two_threads();
    spk_context_destroy(ctx);
    return t_done("test_api");
}
