/* tests/test_robust.c -- robustness of the whole host pipeline:
 *
 * 1. Allocation-failure injection, after CSparse's test suite (which makes the k-th malloc
 *    fail): for k = 1, 2, 3, ... a fresh context with fail_alloc_at = k runs the pipeline --
 *    read (mapped file and pipe), vector read, generators, matrix from CSR arrays, prepare in
 *    every format with an SpMV check, and solves with CG, BiCGStab and GMRES, with and without
 *    Jacobi, with residual histories long enough to grow. Every call must return SPK_OK or
 *    SPK_ERR_NOMEM, NOMEM exactly when the failing allocation happened inside it, with a
 *    message that names what could not be allocated; whatever failed, the pipeline goes on
 *    with what it still holds, so a later call checks that a failure left the handles usable.
 *    The loop ends at the first pass in which allocation k was never reached: that pass ran
 *    clean and its results are checked. Leaks are LeakSanitizer's job (make test-asan).
 * 2. Size limits: a header announcing 2^40 entries or 2^31 rows, generator specs of 10^15 rows,
 *    and bad public-API arrays fail with a clear status before anything large is allocated;
 *    generator specs within the 32-bit indices but beyond the memory the process may hold
 *    (band:2147483647:1:1) fail within a second, before their rows are counted.
 * 3. The allocation counter stays exact when two threads share a context. */
#include "util.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- one call under injection ------------------------------------------------------------- */

typedef struct pass {
    spk_context *ctx;
    uint64_t     k;              /* allocation made to fail (0: none)                          */
    uint64_t     before;         /* alloc_count when the call began                            */
    int          hit;            /* the failing allocation was reached in this pass            */
    int          clean;          /* 1: no injection, every call must succeed                   */
} pass;

/* Distinct NOMEM messages (numbers and all), printed at the end for docs/robustness.md. */
#define MAX_MSGS 96
static char seen_msg[MAX_MSGS][SPK_MSG_LEN];
static int n_seen;
static int64_t history_after_failure;   /* failed solves that still handed back a history */

static void remember(const char *msg)
{
    for (int i = 0; i < n_seen; i++)
        if (strcmp(seen_msg[i], msg) == 0)
            return;
    if (n_seen < MAX_MSGS)
        snprintf(seen_msg[n_seen++], SPK_MSG_LEN, "%s", msg);
}

static void begin(pass *P)
{
    P->ctx->msg[0] = '\0';                   /* a stale message must not pass the check */
    P->before = P->ctx->alloc_count;
}

/* Judge the status of the call since begin(); returns 1 if it succeeded. */
static int judge(pass *P, const char *what, spk_status st)
{
    const uint64_t after = P->ctx->alloc_count;
    const int injected = P->k && P->before < P->k && P->k <= after;
    const char *msg = spk_last_error(P->ctx);
    P->hit |= injected;
    if (st == SPK_OK) {
        T_CHECK(!injected, "k=%llu %s: allocation %llu failed inside it, yet it returned OK",
                (unsigned long long)P->k, what, (unsigned long long)P->k);
        return 1;
    }
    T_CHECK(st == SPK_ERR_NOMEM, "k=%llu %s: status %s (%s), expected OK or NOMEM",
            (unsigned long long)P->k, what, spk_status_str(st), msg);
    T_CHECK(injected, "k=%llu %s: %s without an injected failure (allocations %llu..%llu): %s",
            (unsigned long long)P->k, what, spk_status_str(st),
            (unsigned long long)P->before + 1, (unsigned long long)after, msg);
    T_CHECK(strstr(msg, "memory") && strlen(msg) >= 20,
            "k=%llu %s: the message does not say what could not be allocated: '%s'",
            (unsigned long long)P->k, what, msg);
    remember(msg);
    return 0;
}

/* ---- the steps ---------------------------------------------------------------------------- */

static double *ones(int64_t n)
{
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = 1.0;
    return v;
}

/* y = A x in the prepared format against the reference CSR SpMV. */
static void check_spmv(pass *P, spk_matrix *A, const char *what)
{
    const int64_t n = A->csr.nrows;
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y),
           *r = malloc((size_t)n * sizeof *r);
    for (int64_t i = 0; i < n; i++) {
        x[i] = 1.0 + (double)(i % 7);
        y[i] = NAN;                           /* beta = 0: an unwritten entry shows */
    }
    spk_csr_spmv_ref(&A->csr, 1.0, x, 0.0, r);
    begin(P);
    if (judge(P, what, spk_matrix_spmv(P->ctx, A, 1.0, x, 0.0, y)))
        T_CHECK(t_rel_diff(y, r, n) <= 1e-13, "k=%llu %s: SpMV differs from the reference",
                (unsigned long long)P->k, what);
    free(x);
    free(y);
    free(r);
}

static void prepare_all(pass *P, spk_matrix *A, const char *name)
{
    spk_matrix_info in;
    spk_matrix_get_info(A, &in);
    for (int f = SPK_FMT_COO; f < SPK_FMT_COUNT; f++) {
        char what[96];
        if (!t_format_fits(spk_context_device(P->ctx), (spk_format)f, &in))
            continue;
        snprintf(what, sizeof what, "%s: prepare %s", name, spk_format_str((spk_format)f));
        begin(P);
        if (judge(P, what, spk_matrix_prepare(P->ctx, A, (spk_format)f))) {
            T_CHECK(spk_matrix_format(A) == (spk_format)f, "%s: format not switched", what);
            check_spmv(P, A, what);
        }
    }
}

typedef struct solve_case {
    spk_method  method;
    spk_precond precond;
    spk_format  format;
    double      rtol;
    int64_t     maxiter;            /* 0: the default                                       */
    int         restart;            /* 0: the default                                       */
    int         must_converge;      /* checked in the clean pass                            */
} solve_case;

static void solve_one(pass *P, spk_matrix *A, const char *name, const solve_case *c)
{
    const int64_t n = A->csr.nrows;
    double *e = ones(n), *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    spk_csr_spmv_ref(&A->csr, 1.0, e, 0.0, b);         /* b = A * ones, as the CLI does */
    free(e);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = c->method;
    opt.precond = c->precond;
    opt.format = c->format;
    opt.rtol = c->rtol;
    opt.history = 1;
    if (c->maxiter)
        opt.maxiter = c->maxiter;
    if (c->restart)
        opt.restart = c->restart;
    char what[128];
    snprintf(what, sizeof what, "%s: solve %s%s in %s", name, spk_method_str(c->method),
             c->precond == SPK_PRECOND_JACOBI ? "+jacobi" : "", spk_format_str(c->format));
    spk_result res;
    memset(&res, 0, sizeof res);
    begin(P);
    spk_status st = spk_solve(P->ctx, A, b, x, &opt, &res);
    if (judge(P, what, st)) {
        T_CHECK(res.history_len == res.iterations + 1 || c->method == SPK_METHOD_GMRES,
                "%s: history of %lld rows after %lld iterations", what,
                (long long)res.history_len, (long long)res.iterations);
        if (P->clean && c->must_converge)
            T_CHECK(res.reason > 0 && res.true_rel <= 1e-6, "%s: %s, true residual %.2e", what,
                    spk_reason_str(res.reason), res.true_rel);
    } else if (res.history) {
        history_after_failure++;
    }
    spk_result_free(&res);                   /* the documented release, on any status */
    free(b);
    free(x);
}

static const solve_case spd_solves[] = {
    {SPK_METHOD_CG, SPK_PRECOND_NONE, SPK_FMT_COO, 1e-8, 0, 0, 1},
    {SPK_METHOD_CG, SPK_PRECOND_JACOBI, SPK_FMT_CSR, 1e-8, 0, 0, 1},
    {SPK_METHOD_BICGSTAB, SPK_PRECOND_NONE, SPK_FMT_ELL, 1e-8, 0, 0, 1},
    {SPK_METHOD_BICGSTAB, SPK_PRECOND_JACOBI, SPK_FMT_HYB, 1e-8, 0, 0, 1},
    {SPK_METHOD_GMRES, SPK_PRECOND_NONE, SPK_FMT_JDS, 1e-8, 0, 0, 1},
    {SPK_METHOD_GMRES, SPK_PRECOND_JACOBI, SPK_FMT_AUTO, 1e-8, 0, 0, 1},
    /* histories past 256 and 512 rows: the history grows twice */
    {SPK_METHOD_CG, SPK_PRECOND_NONE, SPK_FMT_CSR, 0.0, 600, 0, 0},
    {SPK_METHOD_GMRES, SPK_PRECOND_NONE, SPK_FMT_CSR, 0.0, 600, 5, 0},
};

static const solve_case nonsym_solves[] = {
    {SPK_METHOD_BICGSTAB, SPK_PRECOND_NONE, SPK_FMT_JDS, 1e-8, 0, 0, 1},
    {SPK_METHOD_BICGSTAB, SPK_PRECOND_JACOBI, SPK_FMT_COO, 1e-8, 0, 0, 1},
    {SPK_METHOD_GMRES, SPK_PRECOND_NONE, SPK_FMT_ELL, 1e-8, 0, 0, 1},
    {SPK_METHOD_GMRES, SPK_PRECOND_JACOBI, SPK_FMT_HYB, 1e-8, 0, 0, 1},
};

/* Read a file, prepare it in every format, run the solves, destroy. */
static void file_pipeline(pass *P, const char *file, const solve_case *cases, size_t ncases)
{
    spk_matrix *A = NULL;
    begin(P);
    if (!judge(P, file, spk_matrix_read_mtx(P->ctx, t_input(file), &A))) {
        T_CHECK(A == NULL, "%s: a failed read handed back a matrix", file);
        return;
    }
    prepare_all(P, A, file);
    for (size_t c = 0; c < ncases; c++)
        solve_one(P, A, file, &cases[c]);
    spk_matrix_destroy(A);
}

/* Read through a pipe: the file is read(), not mapped, into a buffer that doubles from 64 KiB
 * (LF10 padded with comments to 200 KB: three growths). A thread writes it; the reader always opens the pipe
 * before anything can fail, and a reader that stops early makes the writer's write() fail with
 * EPIPE (SIGPIPE is ignored), so the join cannot hang. */
static const char *pipe_bytes;
static size_t pipe_len;

static void *pipe_writer(void *fifo)
{
    int fd = open((const char *)fifo, O_WRONLY);
    for (size_t o = 0; fd >= 0 && o < pipe_len;) {
        ssize_t w = write(fd, pipe_bytes + o, pipe_len - o);
        if (w <= 0)
            break;
        o += (size_t)w;
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void pipe_pipeline(pass *P, const char *fifo)
{
    pthread_t writer;
    if (pthread_create(&writer, NULL, pipe_writer, (void *)fifo) != 0) {
        perror("pthread_create");
        exit(2);
    }
    spk_matrix *A = NULL;
    begin(P);
    if (judge(P, "LF10 through a pipe", spk_matrix_read_mtx(P->ctx, fifo, &A))) {
        T_CHECK(A->csr.nrows == 18 && A->csr.nnz == 82, "pipe read: %lld x %lld, nnz %lld",
                (long long)A->csr.nrows, (long long)A->csr.ncols, (long long)A->csr.nnz);
        spk_matrix_destroy(A);
    }
    pthread_join(writer, NULL);
}

static void vector_pipeline(pass *P)
{
    double *v = NULL;
    int64_t n = 0;
    begin(P);
    if (judge(P, "sherman1_rhs1 vector", spk_vector_read_mtx(P->ctx, t_input("sherman1_rhs1.mtx"),
                                                             &v, &n)))
        T_CHECK(n == 1000 && v[0] == 0.22540000E-04, "vector read: n = %lld", (long long)n);
    else
        T_CHECK(v == NULL && n == 0, "a failed vector read handed back a vector");
    free(v);
}

static void generator_pipeline(pass *P, const char *spec, const solve_case *c)
{
    spk_matrix *A = NULL;
    begin(P);
    if (!judge(P, spec, spk_matrix_generate(P->ctx, spec, &A)))
        return;
    solve_one(P, A, spec, c);
    spk_matrix_destroy(A);
}

/* spk_matrix_from_csr on a copy of LF10's arrays (the public path for callers' arrays). */
static void arrays_pipeline(pass *P, const spk_csr *src)
{
    spk_matrix *A = NULL;
    begin(P);
    if (judge(P, "spk_matrix_from_csr", spk_matrix_from_csr(P->ctx, src->nrows, src->ncols,
                                                            src->rowptr, src->colind, src->val,
                                                            0, &A))) {
        T_CHECK(A->csr.nnz == src->nnz, "from_csr: nnz %lld", (long long)A->csr.nnz);
        spk_matrix_destroy(A);
    } else {
        T_CHECK(A == NULL, "a failed spk_matrix_from_csr handed back a matrix");
    }
}

static const solve_case gen_cg = {SPK_METHOD_CG, SPK_PRECOND_JACOBI, SPK_FMT_ELL, 1e-8, 0, 0, 1};
static const solve_case gen_bicg = {SPK_METHOD_BICGSTAB, SPK_PRECOND_JACOBI, SPK_FMT_HYB, 1e-8,
                                    0, 0, 1};

/* One pass with allocation k failing (k = 0: none). Returns 1 if the failure was reached. */
static int run_pass(uint64_t k, const spk_csr *lf10, const char *fifo)
{
    pass P = {t_context(SPK_DEVICE_CPU), k, 0, 0, k == 0};
    P.ctx->fail_alloc_at = k;
    file_pipeline(&P, "LF10.mtx", spd_solves, sizeof spd_solves / sizeof spd_solves[0]);
    file_pipeline(&P, "pores_1.mtx", nonsym_solves, sizeof nonsym_solves / sizeof nonsym_solves[0]);
    pipe_pipeline(&P, fifo);
    vector_pipeline(&P);
    generator_pipeline(&P, "poisson3d:5", &gen_cg);
    generator_pipeline(&P, "powerlaw:200:6:3", &gen_bicg);
    arrays_pipeline(&P, lf10);
    uint64_t total = P.ctx->alloc_count;
    spk_context_destroy(P.ctx);
    if (k == 0)
        printf("clean pass: %llu counted allocations\n", (unsigned long long)total);
    return P.hit;
}

static void test_injection(void)
{
    char dir[] = "/tmp/spk_test_robust_XXXXXX", fifo[64];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }
    snprintf(fifo, sizeof fifo, "%s/pipe.mtx", dir);
    if (mkfifo(fifo, 0600) != 0) {
        perror("mkfifo");
        exit(2);
    }
    /* LF10 followed by 200 KB of comment lines: cheap to parse, three buffer growths */
    static char big[1 << 20];
    FILE *f = fopen(t_input("LF10.mtx"), "rb");
    pipe_len = f ? fread(big, 1, sizeof big / 2, f) : 0;
    if (f)
        fclose(f);
    T_CHECK(pipe_len > 0 && big[pipe_len - 1] == '\n', "LF10.mtx read (%zu bytes)", pipe_len);
    while (pipe_len < 200000)
        pipe_len += (size_t)sprintf(big + pipe_len, "%% padding line %zu, read through a pipe\n",
                                    pipe_len);
    pipe_bytes = big;

    spk_context *c0 = t_context(SPK_DEVICE_CPU);
    spk_csr lf10;
    t_read_csr(c0, "LF10.mtx", &lf10);

    int fails_before = t_fail;
    run_pass(0, &lf10, fifo);                 /* the reference: everything succeeds */
    uint64_t k = 1;
    while (run_pass(k, &lf10, fifo) && t_fail - fails_before < 50)
        k++;
    printf("failure injection: %llu passes with allocation k = 1..%llu failing, then a pass in "
           "which allocation %llu was never reached\n", (unsigned long long)(k - 1),
           (unsigned long long)(k - 1), (unsigned long long)k);
    printf("distinct out-of-memory messages (%d):\n", n_seen);
    for (int i = 0; i < n_seen; i++)
        printf("  %s\n", seen_msg[i]);
    if (history_after_failure)
        printf("NOTE: %lld failed solves handed back a residual history in res->history "
               "(released here by spk_result_free)\n", (long long)history_after_failure);
    spk_csr_free(&lf10);
    spk_context_destroy(c0);
    unlink(fifo);
    rmdir(dir);
}

/* ---- size limits -------------------------------------------------------------------------- */

static void test_size_limits(void)
{
    spk_context *ctx = t_context(SPK_DEVICE_CPU);
    char dir[] = "/tmp/spk_test_robust_XXXXXX", path[64];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }
    snprintf(path, sizeof path, "%s/huge.mtx", dir);
    static const struct { const char *name, *text, *detail; spk_status st; } files[] = {
        {"header only, 2^40 entries", "%%MatrixMarket matrix coordinate real general\n"
         "1 1 1099511627776\n", "announcing 1099511627776", SPK_ERR_PARSE},
        {"header only, 2^31 rows", "%%MatrixMarket matrix coordinate real general\n"
         "2147483648 2147483648 1\n", "2147483647", SPK_ERR_UNSUPPORTED},
        {"array of 2^62 values", "%%MatrixMarket matrix array real general\n"
         "2147483647 2147483647\n", "announcing 4611686014132420609", SPK_ERR_PARSE},
        {"entries past 2^63", "%%MatrixMarket matrix coordinate real general\n"
         "10 10 99999999999999999999\n", "below 2^63", SPK_ERR_PARSE},
    };
    for (size_t c = 0; c < sizeof files / sizeof files[0]; c++) {
        FILE *f = fopen(path, "w");
        if (!f || fputs(files[c].text, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            exit(2);
        }
        spk_matrix *A = NULL;
        uint64_t before = ctx->alloc_count;
        spk_status st = spk_matrix_read_mtx(ctx, path, &A);
        const char *msg = spk_last_error(ctx);
        T_CHECK(st == files[c].st && A == NULL, "%s: %s: %s", files[c].name, spk_status_str(st),
                msg);
        T_CHECK(strstr(msg, "huge.mtx:2:") && strstr(msg, files[c].detail), "%s: message '%s'",
                files[c].name, msg);
        T_CHECK(ctx->alloc_count == before, "%s: %llu allocations before failing", files[c].name,
                (unsigned long long)(ctx->alloc_count - before));
    }
    unlink(path);
    rmdir(dir);

    /* Generators whose size passes the 32-bit indices fail before allocating anything. */
    static const char *const specs[] = {
        "poisson3d:100000",   "poisson3d27:100000", "elasticity3d:100000",
        "poisson2d:100000",   "poisson3d:1291",     "elasticity3d:895",
        "poisson2d:46341",    "powerlaw:3000000000:4",
        "poisson3d:99999999999999999999999", "poisson3d:9223372036854775807",
    };
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        spk_matrix *A = NULL;
        uint64_t before = ctx->alloc_count;
        spk_status st = spk_matrix_generate(ctx, specs[s], &A);
        T_CHECK((st == SPK_ERR_ARG || st == SPK_ERR_UNSUPPORTED || st == SPK_ERR_NOMEM) && !A,
                "%s: %s: %s", specs[s], spk_status_str(st), spk_last_error(ctx));
        T_CHECK(ctx->alloc_count == before, "%s: %llu allocations before failing", specs[s],
                (unsigned long long)(ctx->alloc_count - before));
        T_CHECK(spk_last_error(ctx)[0] != '\0', "%s: no message", specs[s]);
    }

    /* Within the 32-bit indices but beyond the memory: refused from a bound on the entries,
     * before the pass that counts them (56 s for band's 2^31 rows) or any allocation. */
    static const char *const big[] = {
        "band:2147483647:1:1", "band:2147483647:5:9:100", "powerlaw:2147483647:3",
        "poisson3d:1290", "poisson2d:46340", "elasticity3d:894", "poisson3d27:1290",
    };
    ctx->host_memory_limit = 4e9;
    for (size_t s = 0; s < sizeof big / sizeof big[0]; s++) {
        spk_matrix *A = NULL;
        uint64_t before = ctx->alloc_count;
        const double t0 = spk_now();
        spk_status st = spk_matrix_generate(ctx, big[s], &A);
        const double secs = spk_now() - t0;
        T_CHECK(st == SPK_ERR_NOMEM && !A && strstr(spk_last_error(ctx), big[s]) &&
                strstr(spk_last_error(ctx), "more than the 4 GB this context may use"),
                "%s: %s: %s", big[s], spk_status_str(st), spk_last_error(ctx));
        T_CHECK(ctx->alloc_count == before && secs < 1.0, "%s: %llu allocations, %.2f s before "
                "failing", big[s], (unsigned long long)(ctx->alloc_count - before), secs);
    }
    ctx->host_memory_limit = 0;

    /* Caller arrays: 32-bit indices far outside the matrix, whatever the base, are refused
     * with a message (row[k] - base must not overflow on the way). */
    const int32_t bad_rows[][2] = {{INT32_MIN, 1}, {INT32_MAX, 1}, {-1, 1}, {0, 1}};
    for (size_t c = 0; c < sizeof bad_rows / sizeof bad_rows[0]; c++) {
        const int32_t r[2] = {bad_rows[c][0], 1}, col[2] = {1, 1};
        const double v[2] = {1.0, 2.0};
        spk_matrix *A = NULL;
        spk_status st = spk_matrix_from_coo(ctx, 2, 2, 2, r, col, v, 1, &A);
        T_CHECK(st == SPK_ERR_ARG && !A && strstr(spk_last_error(ctx), "outside"),
                "from_coo row %d, base 1: %s: %s", (int)bad_rows[c][0], spk_status_str(st),
                spk_last_error(ctx));
        spk_matrix_destroy(A);
    }
    const int64_t rp_bad[3] = {0, INT64_MIN, 1};
    const int32_t ci[1] = {0};
    const double va[1] = {1.0};
    spk_matrix *A = NULL;
    spk_status st = spk_matrix_from_csr(ctx, 2, 2, rp_bad, ci, va, 0, &A);
    T_CHECK(st == SPK_ERR_ARG && !A, "from_csr with a decreasing rowptr: %s: %s",
            spk_status_str(st), spk_last_error(ctx));
    const int64_t rp_min[3] = {1, 1, INT64_MIN};
    st = spk_matrix_from_csr(ctx, 2, 2, rp_min, ci, va, 1, &A);
    T_CHECK(st == SPK_ERR_ARG && !A, "from_csr with rowptr[n] = INT64_MIN: %s: %s",
            spk_status_str(st), spk_last_error(ctx));
    spk_context_destroy(ctx);
}

/* ---- the allocation counter under two threads ----------------------------------------------- */

enum { TICKS = 200000 };

static void *allocate_many(void *ctx)
{
    for (int k = 0; k < TICKS; k++)
        spk_free(spk_malloc(ctx, 1, 8));
    return NULL;
}

/* A context belongs to one thread at a time, but its allocation counter is the one field that
 * two threads sharing it by mistake would both write: it is atomic, so no count is lost (a
 * plain ++ loses thousands of the 400000 here). */
static void test_counter_threads(void)
{
    spk_context *ctx = t_context(SPK_DEVICE_CPU);
    const uint64_t before = spk_context_alloc_count(ctx);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, allocate_many, ctx) != 0) {
            perror("pthread_create");
            exit(2);
        }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    const uint64_t counted = spk_context_alloc_count(ctx) - before;
    T_CHECK(counted == 2 * TICKS, "two threads made %d allocations, the counter says %llu",
            2 * TICKS, (unsigned long long)counted);
    spk_context_destroy(ctx);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);                 /* the pipe's writer sees EPIPE instead */
    test_counter_threads();
    test_size_limits();
    test_injection();
    return t_done("test_robust");
}
