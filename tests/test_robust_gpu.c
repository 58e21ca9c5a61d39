/* tests/test_robust_gpu.c -- device faults: out of GPU memory at every allocation site.
 *
 * 1. Allocation-failure injection on a CUDA context, after CSparse's test suite and
 *    tests/test_robust.c: spk_malloc, spk_cuda_malloc and spk_cuda_malloc_host count on one
 *    ctx->alloc_count, and ctx->fail_alloc_at = k makes the k-th fail. For k = 1, 2, 3, ... a
 *    fresh context runs a pipeline that reaches every device allocation site: the context's
 *    CUDA state (spk_cuda_init again, after spk_cuda_fini), matrices from CSR arrays, COO
 *    triplets (with duplicates, so that value updates gather) and generators, spk_matrix_prepare
 *    in every format with an SpMV checked against the host reference (an arrow matrix takes
 *    CSR's row blocks, its long row a piece of its own, and CSR-vector's long-row tiles),
 *    value updates from host memory and twice from device memory (the first one may allocate
 *    lazily), a matrix from device CSR arrays, solver objects for CG,
 *    BiCGStab and GMRES with and without Jacobi (solve, solve_device, refresh), GMRES(80) to
 *    grow the context's small buffers, and a one-shot spk_solve with a history.
 *    Every call must return SPK_OK, or SPK_ERR_CUDA (a device or pinned allocation: the message
 *    says cudaMalloc / cudaMallocHost, how many bytes, for what, and which allocation) or
 *    SPK_ERR_NOMEM (a host one), and fail exactly when allocation k happened inside it. Then
 *    the injection is turned off and the SAME context must be usable: the failed call is made
 *    again and must succeed, and the rest of the pass (every SpMV compared, every solve's true
 *    residual recomputed on the host, a last solve at the end) runs on it. The loop ends at the
 *    first pass in which allocation k was never reached.
 * 2. Real out-of-device-memory (not injected): a vector larger than the whole GPU, and a GPU
 *    filled by another context while a solver is made, an SpMV run and a format prepared. Each
 *    fails with SPK_ERR_CUDA and "... GB free of ... GB"; after the memory is given back the same
 *    context solves.
 *
 * --device gpu (ctest robust_gpu; exit 77 without a GPU). --quick (for compute-sanitizer): every
 * 16th k only, and no filling of the GPU (the sanitizer needs device memory of its own);
 * --stride N: every Nth k (racecheck, whose every launch is slower, takes --quick --stride 64).
 * --device cpu runs part 1 on a CPU context (host allocations only): a check of the test itself
 * on a machine without a GPU. */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static spk_device dev;
static int quick;
static uint64_t stride_arg;         /* --stride N (0: 16 with --quick, else 1)                  */
static spk_context *aux;            /* owns the test's device arrays; never injected           */
static const spk_vec_ops *ops;      /* the vector table of dev (device arrays, copies)         */

/* ---- one call under injection ------------------------------------------------------------ */

typedef struct pass {
    spk_context *ctx;
    uint64_t     k;                 /* absolute number of the allocation made to fail (0: none) */
    uint64_t     before;            /* alloc_count when the call began                          */
    int          hit;               /* allocation k was reached in this pass                    */
} pass;

/* Tallies over the whole loop, and the distinct messages (allocation numbers cut off). */
static int64_t n_device_fail, n_host_fail, n_redone;
#define MAX_MSGS 160
static char seen_msg[MAX_MSGS][SPK_MSG_LEN];
static int n_seen;

static void remember(const char *msg)
{
    char m[SPK_MSG_LEN];
    snprintf(m, sizeof m, "%s", msg);
    char *cut = strstr(m, " (allocation ");
    if (cut)
        *cut = '\0';
    for (int i = 0; i < n_seen; i++)
        if (strcmp(seen_msg[i], m) == 0)
            return;
    if (n_seen < MAX_MSGS)
        snprintf(seen_msg[n_seen++], SPK_MSG_LEN, "%s", m);
}

static void begin(pass *P)
{
    P->ctx->msg[0] = '\0';                   /* a stale message must not pass the check */
    P->before = P->ctx->alloc_count;
}

/* Judge the status of the call since begin(); returns 1 if it succeeded. On a failure the
 * injection is turned off: from here on the pass shows that the context is still usable. */
static int judge(pass *P, const char *what, spk_status st)
{
    const uint64_t after = P->ctx->alloc_count;
    const int injected = P->k && P->before < P->k && P->k <= after;
    const unsigned long long k = (unsigned long long)P->k;
    const char *msg = spk_last_error(P->ctx);
    P->hit |= injected;
    if (st == SPK_OK) {
        T_CHECK(!injected, "k=%llu %s: allocation %llu failed inside it, yet it returned OK", k,
                what, k);
        return 1;
    }
    T_CHECK(injected, "k=%llu %s: %s without an injected failure (allocations %llu..%llu): %s", k,
            what, spk_status_str(st), (unsigned long long)P->before + 1,
            (unsigned long long)after, msg);
    if (st == SPK_ERR_CUDA) {
        char tag[48];
        snprintf(tag, sizeof tag, "(allocation %llu)", k);
        n_device_fail++;
        T_CHECK(strstr(msg, "cudaMalloc") && strstr(msg, " bytes for ") && strstr(msg, tag),
                "k=%llu %s: the message does not name the device allocation, its size and its "
                "number: '%s'", k, what, msg);
    } else {
        n_host_fail++;
        T_CHECK(st == SPK_ERR_NOMEM, "k=%llu %s: status %s (%s), expected OK, CUDA or NOMEM", k,
                what, spk_status_str(st), msg);
        T_CHECK(strstr(msg, "memory") && !strstr(msg, "cudaMalloc") && strlen(msg) >= 20,
                "k=%llu %s: the message does not say what could not be allocated: '%s'", k, what,
                msg);
    }
    remember(msg);
    P->ctx->fail_alloc_at = 0;
    return 0;
}

/* The failed call made again with the injection off: it must succeed now. */
static spk_status redo(pass *P, const char *what, spk_status st)
{
    n_redone++;
    T_CHECK(st == SPK_OK, "k=%llu %s: failed again with the injection off: %s: %s",
            (unsigned long long)P->k, what, spk_status_str(st), spk_last_error(P->ctx));
    return st;
}

static int null_after_failure(pass *P, const char *what, int is_null)
{
    T_CHECK(is_null, "k=%llu %s: a failed call handed back a handle", (unsigned long long)P->k,
            what);
    return 0;
}

/* Make a call under injection; if it failed, make it again (it must then succeed). Evaluates
 * to the final status. STEP_NEW also checks that the failed call left its handle `out` NULL. */
#define STEP(P, what, call)                                                                   \
    (begin(P), judge((P), (what), (call)) ? SPK_OK : (begin(P), redo((P), (what), (call))))
#define STEP_NEW(P, what, call, out)                                                          \
    (begin(P), judge((P), (what), (call))                                                     \
         ? SPK_OK                                                                             \
         : (null_after_failure((P), (what), (out) == NULL), begin(P),                         \
            redo((P), (what), (call))))

/* ---- shared inputs ------------------------------------------------------------------------ */

static spk_csr lf10;                        /* LF10.mtx, 18 x 18 SPD, 82 entries              */
static double *d_rp, *d_ci, *d_v;           /* its arrays in device memory (aux)             */
#define ARROW_N 2000                        /* row 0 holds 2000 entries: a long row for CSR   */
#define ARROW_NNZ (4 * ARROW_N - 2)         /* triplets: each diagonal entry given as 2 halves */
static int32_t arrow_row[ARROW_NNZ], arrow_col[ARROW_NNZ];
static double arrow_val[ARROW_NNZ], arrow_scaled[ARROW_NNZ];
#define MAXN ARROW_N
static double *d_b, *d_x, *d_val;           /* device vectors of MAXN and ARROW_NNZ (aux)     */

/* The arrow matrix: a_00 = n + 1, a_ii = 4, a_0i = a_i0 = 1: SPD (diagonally dominant),
 * triplets in reverse order, each diagonal entry split into two halves (exact in binary). */
static void make_arrow(void)
{
    int64_t t = 0;
    for (int32_t i = ARROW_N - 1; i >= 0; i--) {
        const double d = i == 0 ? ARROW_N + 1.0 : 4.0;
        for (int h = 0; h < 2; h++, t++) {
            arrow_row[t] = arrow_col[t] = i;
            arrow_val[t] = 0.5 * d;
        }
        for (int h = 0; i > 0 && h < 2; h++, t++) {         /* a_0i, then a_i0 */
            arrow_row[t] = h ? i : 0;
            arrow_col[t] = h ? 0 : i;
            arrow_val[t] = 1.0;
        }
    }
}

/* Device copies through the aux context (bytes moved as doubles; padded when odd). */
static void to_device(double *d, const void *host, size_t bytes)
{
    size_t n = (bytes + 7) / 8;
    double *tmp = calloc(n ? n : 1, sizeof *tmp);
    memcpy(tmp, host, bytes);
    if (ops->upload(aux, (int64_t)n, tmp, d) != SPK_OK || ops->sync(aux) != SPK_OK) {
        fprintf(stderr, "upload: %s\n", spk_last_error(aux));
        exit(2);
    }
    free(tmp);
}

static double *device_vec(int64_t n)
{
    double *v = NULL;
    if (ops->alloc(aux, n, &v) != SPK_OK) {
        fprintf(stderr, "device vector of %lld: %s\n", (long long)n, spk_last_error(aux));
        exit(2);
    }
    return v;
}

static void from_device(pass *P, double *host, const double *d, int64_t n)
{
    if (ops->sync(P->ctx) != SPK_OK || ops->download(aux, n, d, host) != SPK_OK) {
        fprintf(stderr, "download: %s / %s\n", spk_last_error(P->ctx), spk_last_error(aux));
        exit(2);
    }
}

/* ---- the steps ---------------------------------------------------------------------------- */

/* y = A x on the context's device in the prepared format against the host reference. */
static void check_spmv(pass *P, spk_matrix *A, const char *name)
{
    const int64_t m = A->csr.nrows, n = A->csr.ncols;
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)m * sizeof *y),
           *r = malloc((size_t)m * sizeof *r);
    for (int64_t i = 0; i < n; i++)
        x[i] = 1.0 + (double)(i % 7);
    for (int64_t i = 0; i < m; i++)
        y[i] = NAN;                                   /* beta = 0: an unwritten entry shows */
    (void)spk_matrix_host_values(NULL, A);            /* after an update on the GPU */
    spk_csr_spmv_ref(&A->csr, 1.0, x, 0.0, r);
    char what[128];
    snprintf(what, sizeof what, "%s: spmv in %s", name, spk_format_str(spk_matrix_format(A)));
    if (STEP(P, what, spk_matrix_spmv(P->ctx, A, 1.0, x, 0.0, y)) == SPK_OK)
        T_CHECK(t_rel_diff(y, r, m) <= 1e-12, "k=%llu %s: differs from the reference by %.3g",
                (unsigned long long)P->k, what, t_rel_diff(y, r, m));
    free(x);
    free(y);
    free(r);
}

static void prepare_check(pass *P, spk_matrix *A, const char *name, spk_format f)
{
    char what[128];
    snprintf(what, sizeof what, "%s: prepare %s", name, spk_format_str(f));
    if (STEP(P, what, spk_matrix_prepare(P->ctx, A, f)) != SPK_OK)
        return;
    T_CHECK(spk_matrix_format(A) == f, "%s: format not switched", what);
    check_spmv(P, A, name);
}

/* b = A xt with xt_i = 1 + (i mod 8) / 8, from the host CSR. */
static double *make_rhs(const spk_matrix *A)
{
    const int64_t n = A->csr.nrows;
    double *xt = malloc((size_t)n * sizeof *xt), *b = malloc((size_t)n * sizeof *b);
    for (int64_t i = 0; i < n; i++)
        xt[i] = 1.0 + (double)(i % 8) / 8.0;
    (void)spk_matrix_host_values(NULL, (spk_matrix *)A);   /* after an update on the GPU */
    spk_csr_spmv_ref(&A->csr, 1.0, xt, 0.0, b);
    free(xt);
    return b;
}

static void check_solution(pass *P, const spk_matrix *A, const char *what, const spk_result *res,
                           const double *b, const double *x, int must_converge)
{
    const double tr = t_true_rel(A, b, x);
    if (must_converge)
        T_CHECK(res->reason > 0 && tr <= 1e-6, "k=%llu %s: %s after %lld, true residual %.2e",
                (unsigned long long)P->k, what, spk_reason_str(res->reason),
                (long long)res->iterations, tr);
    else
        T_CHECK(isfinite(tr) && res->iterations > 0, "k=%llu %s: %s, true residual %.2e",
                (unsigned long long)P->k, what, spk_reason_str(res->reason), tr);
}

typedef struct solve_case {
    spk_method  method;
    spk_precond precond;
    spk_format  format;
    double      rtol;
    int64_t     maxiter;            /* 0: the default                                       */
    int         restart;            /* 0: the default                                       */
    int         must_converge;
} solve_case;

static void set_options(spk_options *o, const solve_case *c)
{
    spk_options_default(o);
    o->method = c->method;
    o->precond = c->precond;
    o->format = c->format;
    o->rtol = c->rtol;
    if (c->maxiter)
        o->maxiter = c->maxiter;
    if (c->restart)
        o->restart = c->restart;
}

/* A solver object: create, solve from host arrays, solve on device arrays, destroy. */
static void solver_case(pass *P, spk_matrix *A, const char *name, const solve_case *c)
{
    const int64_t n = A->csr.nrows;
    spk_options opt;
    set_options(&opt, c);
    char what[160], tag[96];
    snprintf(tag, sizeof tag, "%s: %s%s", name, spk_method_str(c->method),
             c->precond == SPK_PRECOND_JACOBI ? "+jacobi" : "");
    if (c->restart)
        snprintf(tag + strlen(tag), sizeof tag - strlen(tag), "(%d)", c->restart);
    snprintf(tag + strlen(tag), sizeof tag - strlen(tag), " in %s", spk_format_str(c->format));
    spk_solver *S = NULL;
    snprintf(what, sizeof what, "%s: spk_solver_create", tag);
    if (STEP_NEW(P, what, spk_solver_create(P->ctx, A, &opt, &S), S) != SPK_OK)
        return;
    double *b = make_rhs(A), *x = calloc((size_t)n, sizeof *x);
    spk_result res;
    memset(&res, 0, sizeof res);
    snprintf(what, sizeof what, "%s: spk_solver_solve", tag);
    if (STEP(P, what, spk_solver_solve(S, b, x, &res)) == SPK_OK)
        check_solution(P, A, what, &res, b, x, c->must_converge);
    spk_result_free(&res);

    to_device(d_b, b, (size_t)n * sizeof *b);
    memset(x, 0, (size_t)n * sizeof *x);
    snprintf(what, sizeof what, "%s: spk_solver_solve_device", tag);
    if (STEP(P, what, spk_solver_solve_device(S, d_b, d_x, &res)) == SPK_OK) {
        from_device(P, x, d_x, n);
        check_solution(P, A, what, &res, b, x, c->must_converge);
    }
    spk_result_free(&res);
    spk_solver_destroy(S);
    free(b);
    free(x);
}

/* LF10 from CSR arrays, prepared in every format, each with an SpMV. */
static void csr_pipeline(pass *P)
{
    spk_matrix *A = NULL;
    if (STEP_NEW(P, "LF10: spk_matrix_from_csr",
                 spk_matrix_from_csr(P->ctx, lf10.nrows, lf10.ncols, lf10.rowptr, lf10.colind,
                                     lf10.val, 0, &A), A) != SPK_OK)
        return;
    spk_matrix_info in;
    spk_matrix_get_info(A, &in);
    for (int f = SPK_FMT_COO; f < SPK_FMT_COUNT; f++)
        if (t_format_fits(dev, (spk_format)f, &in))
            prepare_check(P, A, "LF10", (spk_format)f);
    spk_matrix_destroy(A);
}

/* The arrow matrix from COO triplets: CSR (CSR-vector's long-row tiles, forced by
 * SPK_CSR_KERNEL, then the row blocks its cv picks), and HYB with SpMV checks, value
 * updates from host memory and twice from device memory (each compared entry by entry with the
 * scaled canonical values, then an SpMV of the refilled layout), and a one-shot solve. */
static void coo_pipeline(pass *P)
{
    spk_matrix *A = NULL;
    if (STEP_NEW(P, "arrow: spk_matrix_from_coo",
                 spk_matrix_from_coo(P->ctx, ARROW_N, ARROW_N, ARROW_NNZ, arrow_row, arrow_col,
                                     arrow_val, 0, &A), A) != SPK_OK)
        return;
    const int64_t nnz = A->csr.nnz;
    double *canon = malloc((size_t)nnz * sizeof *canon);
    memcpy(canon, A->csr.val, (size_t)nnz * sizeof *canon);
    {
        const char *env = getenv("SPK_CSR_KERNEL");
        char *saved = env ? strdup(env) : NULL;
        setenv("SPK_CSR_KERNEL", "vector", 1);
        spk_tuning_read(P->ctx, &P->ctx->tune);
        prepare_check(P, A, "arrow (CSR-vector)", SPK_FMT_CSR);
        if (saved)
            setenv("SPK_CSR_KERNEL", saved, 1);
        else
            unsetenv("SPK_CSR_KERNEL");
        free(saved);
        spk_tuning_read(P->ctx, &P->ctx->tune);
    }
    prepare_check(P, A, "arrow", SPK_FMT_HYB);
    prepare_check(P, A, "arrow", SPK_FMT_CSR);

    static const struct { double scale; int on_device; const char *what; } upd[] = {
        {2.0, 0, "arrow: update from host memory"},
        {4.0, 1, "arrow: update from device memory (1st: may allocate)"},
        {0.5, 1, "arrow: update from device memory (2nd)"},
    };
    for (size_t u = 0; u < sizeof upd / sizeof upd[0]; u++) {
        for (int64_t t = 0; t < ARROW_NNZ; t++)
            arrow_scaled[t] = upd[u].scale * arrow_val[t];
        const double *src = arrow_scaled;
        if (upd[u].on_device) {
            to_device(d_val, arrow_scaled, sizeof arrow_scaled);
            src = d_val;
        }
        if (STEP(P, upd[u].what, spk_matrix_update_values(P->ctx, A, ARROW_NNZ, src,
                                                          upd[u].on_device)) != SPK_OK)
            continue;
        (void)spk_matrix_host_values(NULL, A);        /* an update on the GPU left them there */
        int64_t bad = -1;
        for (int64_t p = 0; p < nnz && bad < 0; p++)
            if (A->csr.val[p] != upd[u].scale * canon[p])
                bad = p;
        T_CHECK(bad < 0, "k=%llu %s: canonical entry %lld is %g, expected %g",
                (unsigned long long)P->k, upd[u].what, (long long)bad,
                bad >= 0 ? A->csr.val[bad] : 0.0, bad >= 0 ? upd[u].scale * canon[bad] : 0.0);
        check_spmv(P, A, upd[u].what);
    }

    /* one-shot solve with a history: b from the updated values */
    double *b = make_rhs(A), *x = calloc(ARROW_N, sizeof *x);
    const solve_case c = {SPK_METHOD_CG, SPK_PRECOND_JACOBI, SPK_FMT_CSR, 1e-10, 0, 0, 1};
    spk_options opt;
    set_options(&opt, &c);
    opt.history = 1;
    spk_result res;
    memset(&res, 0, sizeof res);
    if (STEP(P, "arrow: spk_solve cg+jacobi in csr", spk_solve(P->ctx, A, b, x, &opt, &res)) ==
        SPK_OK) {
        check_solution(P, A, "arrow: spk_solve", &res, b, x, 1);
        T_CHECK(res.history_len == res.iterations + 1, "arrow: %lld history rows after %lld",
                (long long)res.history_len, (long long)res.iterations);
    }
    spk_result_free(&res);
    free(b);
    free(x);
    free(canon);
    spk_matrix_destroy(A);
}

static const solve_case spd_cases[] = {
    {SPK_METHOD_CG, SPK_PRECOND_NONE, SPK_FMT_ELL, 1e-10, 0, 0, 1},
    {SPK_METHOD_CG, SPK_PRECOND_JACOBI, SPK_FMT_JDS, 1e-10, 0, 0, 1},
    {SPK_METHOD_BICGSTAB, SPK_PRECOND_NONE, SPK_FMT_COO, 1e-10, 0, 0, 1},
};
static const solve_case nonsym_cases[] = {
    {SPK_METHOD_BICGSTAB, SPK_PRECOND_JACOBI, SPK_FMT_HYB, 1e-10, 0, 0, 1},
    {SPK_METHOD_GMRES, SPK_PRECOND_NONE, SPK_FMT_CSR, 1e-10, 0, 0, 1},
    {SPK_METHOD_GMRES, SPK_PRECOND_JACOBI, SPK_FMT_AUTO, 1e-10, 0, 0, 1},
    /* 70 inner iterations: h = V'w passes the context's 64 small-buffer slots, which grow */
    {SPK_METHOD_GMRES, SPK_PRECOND_NONE, SPK_FMT_CSR, 0.0, 70, 80, 0},
};

/* A generated matrix and its solver cases. */
static spk_matrix *generated(pass *P, const char *spec, const solve_case *cases, size_t ncases)
{
    spk_matrix *A = NULL;
    char what[96];
    snprintf(what, sizeof what, "%s: spk_matrix_generate", spec);
    if (STEP_NEW(P, what, spk_matrix_generate(P->ctx, spec, &A), A) != SPK_OK)
        return NULL;
    for (size_t c = 0; c < ncases; c++)
        solver_case(P, A, spec, &cases[c]);
    return A;
}

/* A solver kept across a value update: refresh (no allocation) and solve again. */
static void refresh_pipeline(pass *P, spk_matrix *A)
{
    const int64_t n = A->csr.nrows, nnz = A->csr.nnz;
    const solve_case c = {SPK_METHOD_CG, SPK_PRECOND_JACOBI, SPK_FMT_CSR, 1e-10, 0, 0, 1};
    spk_options opt;
    set_options(&opt, &c);
    spk_solver *S = NULL;
    if (STEP_NEW(P, "refresh: spk_solver_create", spk_solver_create(P->ctx, A, &opt, &S), S) !=
        SPK_OK)
        return;
    double *v = malloc((size_t)nnz * sizeof *v), *x = calloc((size_t)n, sizeof *x);
    for (int64_t p = 0; p < nnz; p++)
        v[p] = 2.0 * A->csr.val[p];
    if (STEP(P, "refresh: update from host memory",
             spk_matrix_update_values(P->ctx, A, nnz, v, 0)) == SPK_OK &&
        STEP(P, "refresh: spk_solver_refresh", spk_solver_refresh(S)) == SPK_OK) {
        double *b = make_rhs(A);
        spk_result res;
        memset(&res, 0, sizeof res);
        if (STEP(P, "refresh: spk_solver_solve", spk_solver_solve(S, b, x, &res)) == SPK_OK)
            check_solution(P, A, "refresh: solve", &res, b, x, 1);
        spk_result_free(&res);
        free(b);
    }
    spk_solver_destroy(S);
    free(v);
    free(x);
}

/* LF10 from its CSR arrays in device memory, then an SpMV on the device. */
static void device_csr_pipeline(pass *P)
{
    if (dev != SPK_DEVICE_CUDA)
        return;
    spk_matrix *A = NULL;
    if (STEP_NEW(P, "LF10: spk_matrix_from_csr_device",
                 spk_matrix_from_csr_device(P->ctx, lf10.nrows, lf10.ncols,
                                            (const int64_t *)(void *)d_rp,
                                            (const int32_t *)(void *)d_ci, d_v, 0, &A), A) !=
        SPK_OK)
        return;
    T_CHECK(A->csr.nnz == lf10.nnz && memcmp(A->csr.val, lf10.val, (size_t)lf10.nnz * 8) == 0,
            "from_csr_device: not LF10's values");
    check_spmv(P, A, "LF10 from device arrays");
    spk_matrix_destroy(A);
}

/* The last step of every pass: a solve on the context, whatever happened before. */
static void final_solve(pass *P, spk_matrix *A)
{
    const int64_t n = A->csr.nrows;
    const solve_case c = {SPK_METHOD_CG, SPK_PRECOND_NONE, SPK_FMT_HYB, 1e-10, 0, 0, 1};
    spk_options opt;
    set_options(&opt, &c);
    double *b = make_rhs(A), *x = calloc((size_t)n, sizeof *x);
    spk_result res;
    memset(&res, 0, sizeof res);
    if (STEP(P, "final spk_solve cg in hyb", spk_solve(P->ctx, A, b, x, &opt, &res)) == SPK_OK)
        check_solution(P, A, "final solve", &res, b, x, 1);
    spk_result_free(&res);
    free(b);
    free(x);
}

/* One pass with allocation k (counted from the fresh context) failing; k = 0: none. Returns 1
 * if the failure was reached. */
static int run_pass(uint64_t k, uint64_t *count)
{
    pass P = {t_context(dev), 0, 0, 0};
    const uint64_t base = P.ctx->alloc_count;
    P.k = k ? base + k : 0;
    P.ctx->fail_alloc_at = P.k;
    if (dev == SPK_DEVICE_CUDA) {
        spk_cuda_fini(P.ctx);                 /* made again under injection: every allocation */
        STEP(&P, "context: spk_cuda_init", spk_cuda_init(P.ctx));   /* of the context's state */
    }
    csr_pipeline(&P);
    coo_pipeline(&P);
    spk_matrix *A = generated(&P, "poisson3d:6", spd_cases, sizeof spd_cases / sizeof spd_cases[0]);
    spk_matrix *B = generated(&P, "powerlaw:300:6:3", nonsym_cases,
                              sizeof nonsym_cases / sizeof nonsym_cases[0]);
    if (A)
        refresh_pipeline(&P, A);
    device_csr_pipeline(&P);
    if (A)
        final_solve(&P, A);
    T_CHECK(A && B, "k=%llu: a generator failed twice", (unsigned long long)k);
    spk_matrix_destroy(A);
    spk_matrix_destroy(B);
    *count = P.ctx->alloc_count - base;
    spk_context_destroy(P.ctx);
    return P.hit;
}

static void test_injection(void)
{
    const uint64_t stride = stride_arg ? stride_arg : quick ? 16 : 1;
    uint64_t total = 0, count = 0, k = 1, passes = 0;
    const int fails_before = t_fail;
    const double t0 = spk_now();
    run_pass(0, &total);                         /* the reference: everything succeeds */
    printf("clean pass: %llu counted allocations\n", (unsigned long long)total);
    T_CHECK(t_fail == fails_before, "the pass without injection failed");
    while (run_pass(k, &count) && t_fail - fails_before < 50 && k < 1000000) {
        passes++;
        k += stride;
    }
    T_CHECK(count == total, "the last pass made %llu allocations, the clean one %llu",
            (unsigned long long)count, (unsigned long long)total);
    printf("failure injection on %s: %llu passes with allocation k = 1..%llu failing%s "
           "(%lld device or pinned -> SPK_ERR_CUDA, %lld host -> SPK_ERR_NOMEM; each call made "
           "again on the same context: %lld), then a pass in which allocation %llu was never "
           "reached (%.1f s)\n", spk_context_device_name(aux), (unsigned long long)passes,
           (unsigned long long)(k - stride), stride > 1 ? " in steps of 16" : "",
           (long long)n_device_fail, (long long)n_host_fail, (long long)n_redone,
           (unsigned long long)k, spk_now() - t0);
    if (dev == SPK_DEVICE_CUDA)
        T_CHECK(n_device_fail > 0, "no device allocation was reached");
    printf("distinct messages (%d):\n", n_seen);
    for (int i = 0; i < n_seen; i++)
        printf("  %s\n", seen_msg[i]);
}

/* ---- real out-of-device-memory ------------------------------------------------------------- */

static void check_oom_message(const char *what, spk_status st, const char *msg, const char *size)
{
    T_CHECK(st == SPK_ERR_CUDA, "%s: %s (%s), expected SPK_ERR_CUDA", what, spk_status_str(st),
            msg);
    T_CHECK(strstr(msg, "cudaMalloc of ") && strstr(msg, " bytes") && strstr(msg, "GB free of") &&
                (!size || strstr(msg, size)),
            "%s: message '%s'", what, msg);
    printf("  %s: %s\n", what, msg);
}

/* A solve on ctx with solver S (made beforehand), checked on the host. */
static spk_status solve_with(spk_context *ctx, spk_solver *S, spk_matrix *A, const char *what,
                             int must_work)
{
    double *b = make_rhs(A), *x = calloc((size_t)A->csr.nrows, sizeof *x);
    spk_result res;
    memset(&res, 0, sizeof res);
    spk_status st = spk_solver_solve(S, b, x, &res);
    if (must_work) {
        const double tr = t_true_rel(A, b, x);
        T_CHECK(st == SPK_OK && res.reason > 0 && tr <= 1e-6, "%s: %s (%s), %s, true residual "
                "%.2e", what, spk_status_str(st), spk_last_error(ctx), spk_reason_str(res.reason),
                tr);
    } else {        /* a full GPU: the workspace cannot be made (OK if it needed none) */
        T_CHECK(st == SPK_OK || (st == SPK_ERR_CUDA && spk_last_error(ctx)[0]), "%s: %s (%s)",
                what, spk_status_str(st), spk_last_error(ctx));
        printf("  %s: %s\n", what,
               st == SPK_OK ? "ran (it allocated nothing)" : spk_last_error(ctx));
    }
    spk_result_free(&res);
    free(b);
    free(x);
    return st;
}

static spk_solver *make_solver(spk_context *ctx, spk_matrix *A)
{
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = SPK_PRECOND_JACOBI;
    opt.format = SPK_FMT_CSR;
    opt.rtol = 1e-10;
    spk_solver *S = (spk_solver *)1;
    spk_status st = spk_solver_create(ctx, A, &opt, &S);
    T_CHECK(st == SPK_OK, "spk_solver_create: %s", spk_last_error(ctx));
    return st == SPK_OK ? S : NULL;
}

/* The GPU filled by another context (every block it gives, 1 GiB down to 64 KiB, so that no
 * 64 KiB allocation is left), then a solve whose workspace does not fit, an SpMV whose device
 * temporaries do not fit, a prepare in another format and a new solver (the uploads do not
 * fit). After the memory is given back, the same context, solver and matrix work. A holds a
 * solver S made before the filling; B is a matrix never prepared. */
static void full_gpu(spk_context *ctx, spk_matrix *A, spk_solver *S, spk_matrix *B)
{
    enum { MAX_FILL = 8192 };
    static double *fill[MAX_FILL];
    const spk_vec_ops *cu = spk_vec_ops_cuda();
    int nfill = 0;
    double filled = 0;
    int64_t chunk = (int64_t)1 << 27;                    /* doubles: 1 GiB */
    while (chunk >= 8192 && nfill < MAX_FILL) {
        if (cu->alloc(aux, chunk, &fill[nfill]) == SPK_OK) {
            nfill++;
            filled += 8.0 * (double)chunk;
        } else {
            chunk /= 2;
        }
    }
    printf("  the GPU filled by another context: %.1f GB in %d blocks; last refusal: %s\n",
           1e-9 * filled, nfill, spk_last_error(aux));
    T_CHECK(nfill < MAX_FILL, "the GPU was not filled in %d blocks", MAX_FILL);

    solve_with(ctx, S, A, "spk_solver_solve (first: its workspace) on a full GPU", 0);
    const int64_t n = A->csr.nrows;
    double *x = calloc((size_t)n, sizeof *x), *y = calloc((size_t)n, sizeof *y);
    spk_status st = spk_matrix_spmv(ctx, A, 1.0, x, 0.0, y);
    check_oom_message("spk_matrix_spmv (first: its device x and y) on a full GPU", st,
                      spk_last_error(ctx), NULL);
    st = spk_matrix_prepare(ctx, A, SPK_FMT_ELL);
    check_oom_message("spk_matrix_prepare ell (from csr) on a full GPU", st, spk_last_error(ctx),
                      NULL);
    T_CHECK(spk_matrix_format(A) == SPK_FMT_CSR, "a failed prepare did not keep the CSR layout");
    spk_options opt;
    spk_options_default(&opt);
    spk_solver *S2 = (spk_solver *)1;
    st = spk_solver_create(ctx, B, &opt, &S2);
    check_oom_message("spk_solver_create (uploads the matrix) on a full GPU", st,
                      spk_last_error(ctx), NULL);
    T_CHECK(S2 == NULL, "a failed spk_solver_create handed back a solver");

    for (int i = 0; i < nfill; i++)
        cu->free(aux, fill[i]);

    solve_with(ctx, S, A, "the same solver after the GPU was freed", 1);
    for (int64_t i = 0; i < n; i++)
        x[i] = 1.0 + (double)(i % 5);
    double *r = malloc((size_t)n * sizeof *r);
    spk_csr_spmv_ref(&A->csr, 1.0, x, 0.0, r);
    st = spk_matrix_spmv(ctx, A, 1.0, x, 0.0, y);
    T_CHECK(st == SPK_OK && t_rel_diff(y, r, n) <= 1e-12, "spmv after the GPU was freed: %s",
            spk_last_error(ctx));
    st = spk_matrix_prepare(ctx, A, SPK_FMT_ELL);
    T_CHECK(st == SPK_OK, "prepare ell after the GPU was freed: %s", spk_last_error(ctx));
    spk_solver *S3 = make_solver(ctx, B);
    if (S3)
        solve_with(ctx, S3, B, "a new solver after the GPU was freed", 1);
    spk_solver_destroy(S3);
    free(x);
    free(y);
    free(r);
}

static void test_real_oom(void)
{
    spk_context *ctx = t_context(SPK_DEVICE_CUDA);
    spk_matrix *A = NULL, *B = NULL;
    if (spk_matrix_generate(ctx, "poisson3d:60", &A) != SPK_OK ||     /* 216000 rows */
        spk_matrix_generate(ctx, "poisson3d:40", &B) != SPK_OK) {     /*  64000 rows */
        T_CHECK(0, "generate: %s", spk_last_error(ctx));
        spk_matrix_destroy(A);
        spk_context_destroy(ctx);
        return;
    }
    printf("real out of device memory:\n");
    spk_solver *S = make_solver(ctx, A);                 /* A prepared in CSR, no workspace yet */
    if (S && !quick)
        full_gpu(ctx, A, S, B);

    /* one vector larger than the whole GPU ("..., 140 GiB)" ends the device's name) */
    double gib = 0;
    const char *comma = strrchr(spk_context_device_name(ctx), ',');
    if (!comma || sscanf(comma + 1, " %lf GiB", &gib) != 1 || !(gib > 0))
        gib = 131072;                                    /* 128 TiB */
    const int64_t n = (int64_t)((gib + 8.0) * 1073741824.0 / 8.0);
    char size[48];
    snprintf(size, sizeof size, "%lld bytes", (long long)n * 8);
    double *v = (double *)1;
    spk_status st = spk_vec_ops_cuda()->alloc(ctx, n, &v);
    check_oom_message("a vector of the GPU's memory + 8 GiB", st, spk_last_error(ctx), size);
    T_CHECK(v == NULL, "a failed allocation handed back a pointer");
    if (S)
        solve_with(ctx, S, A, "a solve after a vector larger than the GPU", 1);

    spk_solver_destroy(S);
    spk_matrix_destroy(A);
    spk_matrix_destroy(B);
    spk_context_destroy(ctx);
}

int main(int argc, char **argv)
{
    dev = t_device_from_args(argc, argv);
    for (int a = 1; a < argc; a++) {
        quick |= strcmp(argv[a], "--quick") == 0;
        if (strcmp(argv[a], "--stride") == 0 && a + 1 < argc)
            stride_arg = strtoull(argv[++a], NULL, 10);
    }
    aux = t_context(dev);
    ops = spk_vec_ops_for(dev);
    printf("test_robust_gpu on %s%s, every %lluth allocation injected\n",
           spk_context_device_name(aux), quick ? " (--quick: no filling of the GPU)" : "",
           (unsigned long long)(stride_arg ? stride_arg : quick ? 16 : 1));

    t_read_csr(aux, "LF10.mtx", &lf10);
    make_arrow();
    d_rp = device_vec(lf10.nrows + 1);
    d_ci = device_vec((lf10.nnz + 1) / 2);
    d_v = device_vec(lf10.nnz);
    to_device(d_rp, lf10.rowptr, ((size_t)lf10.nrows + 1) * sizeof *lf10.rowptr);
    to_device(d_ci, lf10.colind, (size_t)lf10.nnz * sizeof *lf10.colind);
    to_device(d_v, lf10.val, (size_t)lf10.nnz * sizeof *lf10.val);
    d_b = device_vec(MAXN);
    d_x = device_vec(MAXN);
    d_val = device_vec(ARROW_NNZ);

    test_injection();
    if (dev == SPK_DEVICE_CUDA)
        test_real_oom();

    double *vs[] = {d_rp, d_ci, d_v, d_b, d_x, d_val};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
        ops->free(aux, vs[i]);
    spk_csr_free(&lf10);
    spk_context_destroy(aux);
    return t_done(dev == SPK_DEVICE_CUDA ? "test_robust_gpu (gpu)" : "test_robust_gpu (cpu)");
}
