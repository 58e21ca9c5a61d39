/* tests/test_spmv.c -- every SpMV backend of one device (--device cpu|gpu) against the host CSR
 * reference, on the shapes that break kernels first (0 x 0, 1 x 1, n x 0, empty rows, all
 * zero, one dense row, tall and wide, sizes off the block sizes, seeded random, generated, and
 * every real matrix of inputs/). Outputs are pre-filled with NaN, so an entry a kernel forgets
 * to write fails; y = A x and y = a A x + b y are both checked to 1e-12 relative, and where a
 * backend fuses the SpMV with the dot (spmv_dot: CUDA CSR and ELL), y, x'y and skip too.
 * On the CPU run also: every format converts back to exactly the original CSR, its *_bytes
 * equals the analytic spk_matrix_info.bytes[], ELL without its fill guard still computes, and
 * DIA (CPU only) gives the reference's bits, infinities and NaNs in x included. */
#include "util.h"
#include "../kernels/formats.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-12
/* ELL without the guard is built in the round-trip checks only up to this many slots. */
#define NOGUARD_MAX_SLOTS 4000000

static spk_context *ctx;
static spk_device dev;
static const spk_vec_ops *ops;

/* ---- building test matrices ------------------------------------------------------------ */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Row lengths len[i] (each <= ncols), distinct random sorted columns, values in [-1, 1). */
static void csr_from_lengths(int64_t nrows, int64_t ncols, const int64_t *len, uint64_t seed,
                             spk_csr *A)
{
    int64_t nnz = 0;
    for (int64_t i = 0; i < nrows; i++)
        nnz += len[i];
    if (spk_csr_alloc(ctx, nrows, ncols, nnz, A) != SPK_OK) {
        fprintf(stderr, "csr_from_lengths: %s\n", spk_last_error(ctx));
        exit(2);
    }
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < nrows; i++) {
        const int64_t L = len[i], p0 = A->rowptr[i];
        int32_t *c = A->colind + p0;
        A->rowptr[i + 1] = p0 + L;
        if (2 * L >= ncols) {                    /* selection sampling (Knuth's Algorithm S) */
            for (int64_t j = 0, k = 0; j < ncols && k < L; j++)
                if ((int64_t)(t_rand(&s) % (uint64_t)(ncols - j)) < L - k)
                    c[k++] = (int32_t)j;
        } else {                                  /* draw, sort, drop repeats, draw again */
            int64_t have = 0;
            while (have < L) {
                for (int64_t k = have; k < L; k++)
                    c[k] = (int32_t)(t_rand(&s) % (uint64_t)ncols);
                qsort(c, (size_t)L, sizeof *c, cmp_i32);
                have = 1;
                for (int64_t k = 1; k < L; k++)
                    if (c[k] != c[have - 1])
                        c[have++] = c[k];
            }
        }
        for (int64_t k = 0; k < L; k++)
            A->val[p0 + k] = t_randu(&s);
    }
}

static void csr_empty(int64_t nrows, int64_t ncols, spk_csr *A)
{
    int64_t *len = calloc((size_t)nrows + 1, sizeof *len);
    csr_from_lengths(nrows, ncols, len, 1, A);
    free(len);
}

/* nrows x ncols, short rows (0..6) and row `dense` holding every column. */
static void csr_dense_row(int64_t nrows, int64_t ncols, int64_t dense, spk_csr *A)
{
    int64_t *len = malloc((size_t)nrows * sizeof *len);
    uint64_t s = 77;
    for (int64_t i = 0; i < nrows; i++)
        len[i] = i == dense ? ncols : (int64_t)(t_rand(&s) % 7);
    csr_from_lengths(nrows, ncols, len, 5, A);
    free(len);
}

/* nrows x ncols with entries at the given column offsets from each row (those inside the
 * matrix), every `drop`-th of them left out when drop > 0; values in [-1, 1), and a 0 stored
 * on every 29th (an explicit zero is an entry: DIA must add its 0 * x). */
static void csr_band_rect(int64_t nrows, int64_t ncols, const int64_t *offs, int noffs,
                          int drop, spk_csr *A)
{
    int64_t nnz = 0, c = 0;
    for (int64_t i = 0; i < nrows; i++)
        for (int k = 0; k < noffs; k++)
            if (i + offs[k] >= 0 && i + offs[k] < ncols)
                nnz += !(drop > 0 && ++c % drop == 0);
    if (spk_csr_alloc(ctx, nrows, ncols, nnz, A) != SPK_OK) {
        fprintf(stderr, "csr_band_rect: %s\n", spk_last_error(ctx));
        exit(2);
    }
    uint64_t s = 37;
    int64_t p = 0;
    c = 0;
    for (int64_t i = 0; i < nrows; i++) {
        A->rowptr[i] = p;
        for (int k = 0; k < noffs; k++)
            if (i + offs[k] >= 0 && i + offs[k] < ncols && !(drop > 0 && ++c % drop == 0)) {
                A->colind[p] = (int32_t)(i + offs[k]);
                A->val[p] = p % 29 == 5 ? 0.0 : t_randu(&s);
                p++;
            }
    }
    A->rowptr[nrows] = p;
}

/* n x n with entries at the given column offsets from each row (those inside the matrix),
 * values in [-1, 1): the CUDA ELL layout keeps int16 offsets up to 32767 from the row, int32
 * columns past it. */
static void csr_band(int64_t n, const int64_t *offs, int noffs, spk_csr *A)
{
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < noffs; k++)
            nnz += i + offs[k] >= 0 && i + offs[k] < n;
    if (spk_csr_alloc(ctx, n, n, nnz, A) != SPK_OK) {
        fprintf(stderr, "csr_band: %s\n", spk_last_error(ctx));
        exit(2);
    }
    uint64_t s = 31;
    int64_t p = 0;
    for (int64_t i = 0; i < n; i++) {
        A->rowptr[i] = p;
        for (int k = 0; k < noffs; k++)              /* offs ascending: columns sorted */
            if (i + offs[k] >= 0 && i + offs[k] < n) {
                A->colind[p] = (int32_t)(i + offs[k]);
                A->val[p++] = t_randu(&s);
            }
    }
    A->rowptr[n] = p;
}

/* ---- one product through a backend ----------------------------------------------------- */

static double *host_random(int64_t n, uint64_t seed)
{
    double *v = malloc(((size_t)n + 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = t_randu(&seed);
    v[n] = 0.0;                          /* the spare slot (n may be 0): nothing uninitialized */
    return v;
}

/* y = alpha A x + beta y by `spmv` on state (device vectors), compared with the reference. */
static void check_product(const char *be_name, const char *mname, const spk_spmv_backend *be,
                          const void *state, const spk_csr *A, double alpha, double beta)
{
    const int64_t m = A->nrows, n = A->ncols;
    double *x = host_random(n, 11), *y0 = host_random(m, 12);
    double *ref = malloc(((size_t)m + 1) * sizeof *ref), *got = malloc(((size_t)m + 1) * sizeof *got);
    if (beta == 0.0)
        for (int64_t i = 0; i < m; i++)
            y0[i] = NAN;                          /* beta 0 must not read the old y */
    memcpy(ref, y0, (size_t)m * sizeof *ref);
    spk_csr_spmv_ref(A, alpha, x, beta, ref);
    for (int64_t i = 0; i < m; i++)
        got[i] = NAN;

    double *d_x = NULL, *d_y = NULL;
    spk_status st = ops->alloc(ctx, n ? n : 1, &d_x);
    if (!st)
        st = ops->alloc(ctx, m ? m : 1, &d_y);
    if (!st && n)
        st = ops->upload(ctx, n, x, d_x);
    if (!st && m)
        st = ops->upload(ctx, m, y0, d_y);
    if (!st)
        st = be->spmv(ctx, state, alpha, d_x, beta, d_y);
    if (!st && m)
        st = ops->download(ctx, m, d_y, got);
    if (!st)
        st = ops->sync(ctx);
    T_CHECK(st == SPK_OK, "%s on %s (a %g, b %g): %s: %s", be_name, mname, alpha, beta,
            spk_status_str(st), spk_last_error(ctx));
    if (!st) {
        double d = t_rel_diff(got, ref, m);
        T_CHECK(d <= TOL, "%s on %s (a %g, b %g): relative difference %.3g", be_name, mname, alpha,
                beta, d);
    }
    ops->free(ctx, d_x);
    ops->free(ctx, d_y);
    free(x);
    free(y0);
    free(ref);
    free(got);
}

static void check_products(const char *be_name, const char *mname, const spk_spmv_backend *be,
                           const void *state, const spk_csr *A)
{
    check_product(be_name, mname, be, state, A, 1.0, 0.0);
    check_product(be_name, mname, be, state, A, -0.7, 1.3);
    check_product(be_name, mname, be, state, A, 0.5, 1.0);
}

/* ---- the CUDA CSR backend's kernels (SPK_CSR_KERNEL, read at setup) ---------------------- */

/* y = A x by `spmv` on state, x = host_random(ncols, 21), through device vectors. */
static spk_status product_on(const spk_spmv_backend *be, const void *state, const spk_csr *A,
                             double *y)
{
    const int64_t m = A->nrows, n = A->ncols;
    double *x = host_random(n, 21), *d_x = NULL, *d_y = NULL;
    spk_status st = ops->alloc(ctx, n ? n : 1, &d_x);
    if (!st)
        st = ops->alloc(ctx, m ? m : 1, &d_y);
    if (!st && n)
        st = ops->upload(ctx, n, x, d_x);
    if (!st)
        st = be->spmv(ctx, state, 1.0, d_x, 0.0, d_y);
    if (!st && m)
        st = ops->download(ctx, m, d_y, y);
    ops->free(ctx, d_x);
    ops->free(ctx, d_y);
    free(x);
    return st;
}

/* x with NaN and Inf in its first block of columns (x_0, x_1), which every padding slot of a
 * BSR layout gathers in the flat and split kernels: y against the reference, NaN where it
 * has NaN (a padded row must not catch one), else to 1e-12 (Inf where it has Inf). */
static void check_nan_x(const char *be_name, const char *mname, const spk_spmv_backend *be,
                        const void *state, const spk_csr *A)
{
    const int64_t m = A->nrows, n = A->ncols;
    if (m == 0 || n < 2)
        return;
    double *x = host_random(n, 23), *ref = malloc((size_t)m * sizeof *ref),
           *y = malloc((size_t)m * sizeof *y), *d_x = NULL, *d_y = NULL;
    x[0] = NAN;
    x[1] = INFINITY;
    spk_csr_spmv_ref(A, 1.0, x, 0.0, ref);
    spk_status st = ops->alloc(ctx, n, &d_x);
    if (!st)
        st = ops->alloc(ctx, m, &d_y);
    if (!st)
        st = ops->upload(ctx, n, x, d_x);
    if (!st)
        st = be->spmv(ctx, state, 1.0, d_x, 0.0, d_y);
    if (!st)
        st = ops->download(ctx, m, d_y, y);
    T_CHECK(st == SPK_OK, "%s on %s, NaN in x: %s", be_name, mname, spk_last_error(ctx));
    int64_t bad = -1;
    for (int64_t i = 0; i < m && !st && bad < 0; i++) {
        const int ok = isnan(ref[i]) ? isnan(y[i])
                       : isinf(ref[i]) ? y[i] == ref[i]
                                       : !isnan(y[i]) && fabs(y[i] - ref[i]) <= 1e-12 * (1.0 + fabs(ref[i]));
        if (!ok)
            bad = i;
    }
    T_CHECK(bad < 0, "%s on %s, NaN and Inf in x: row %lld gives %g, the reference %g", be_name,
            mname, (long long)bad, bad >= 0 ? y[bad] : 0.0, bad >= 0 ? ref[bad] : 0.0);
    ops->free(ctx, d_x);
    ops->free(ctx, d_y);
    free(x);
    free(ref);
    free(y);
}

/* Same inputs, same bits: the merge path's carries and every sum have a fixed order. */
static void check_repeatable(const char *be_name, const char *mname, const spk_spmv_backend *be,
                             const void *state, const spk_csr *A)
{
    const int64_t m = A->nrows;
    if (m == 0)
        return;
    double *y1 = malloc((size_t)m * sizeof *y1), *y2 = malloc((size_t)m * sizeof *y2);
    spk_status st = product_on(be, state, A, y1);
    if (!st)
        st = product_on(be, state, A, y2);
    T_CHECK(st == SPK_OK, "%s on %s (repeat): %s", be_name, mname, spk_last_error(ctx));
    if (!st)
        T_CHECK(memcmp(y1, y2, (size_t)m * sizeof *y1) == 0, "%s on %s: two SpMVs differ in bits",
                be_name, mname);
    free(y1);
    free(y2);
}

/* y = A x through a fresh setup of `be` (product_on); SPK_OK or the failure. */
static spk_status product_of(const spk_spmv_backend *be, const spk_csr *A, double *y)
{
    void *state = NULL;
    spk_status st = be->setup(ctx, A, &state);
    if (!st)
        st = product_on(be, state, A, y);
    be->destroy(state);
    return st;
}

/* Set or (value NULL) unset a tuning knob's environment variable and read the knobs into the
 * context again (they are read once per context); returns a copy of the old value. */
static char *env_swap(const char *name, const char *value)
{
    const char *old = getenv(name);
    char *saved = old ? strdup(old) : NULL;
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    T_CHECK(spk_tuning_read(ctx, &ctx->tune) == SPK_OK, "%s=%s: %s", name, value ? value : "",
            spk_last_error(ctx));
    return saved;
}

static void env_restore(const char *name, char *saved)
{
    if (saved)
        setenv(name, saved, 1);
    else
        unsetenv(name);
    free(saved);
    T_CHECK(spk_tuning_read(ctx, &ctx->tune) == SPK_OK, "%s restored: %s", name,
            spk_last_error(ctx));
}

/* Rows per thread the CUDA ELL or HYB setup chose for A under the current environment (-1 when
 * the setup fails). */
static int rows_of(const spk_spmv_backend *be, const spk_csr *A)
{
    void *state = NULL;
    int rows = -1;
    if (be->setup(ctx, A, &state) == SPK_OK)
        rows = be->format == SPK_FMT_ELL ? spk_ell_cuda_state_rows(state)
                                         : spk_hyb_cuda_state_rows(state);
    be->destroy(state);
    return rows;
}

/* ELL and HYB on this device give the same bits in every CUDA ELL variant: int16 offsets (the
 * default where they fit) or int32 columns (SPK_ELL_INDEX=32), and one or two rows per thread
 * (SPK_ELL_ROWS=1 / 2, whatever the width): the offsets encode the columns and every row's
 * slots are summed in the same order. (The CPU backends ignore the variables: there the check
 * is trivially true.) */
static void check_ell_layouts(const char *mname, const spk_csr *A)
{
    const spk_format fmts[] = {SPK_FMT_ELL, SPK_FMT_HYB};
    static const char *const index[2] = {NULL, "32"}, *const rows[2] = {"1", "2"};
    const size_t bytes = (size_t)(A->nrows ? A->nrows : 1) * sizeof(double);
    double *y0 = malloc(bytes), *y = malloc(bytes);
    char *saved_index = env_swap("SPK_ELL_INDEX", NULL);
    char *saved_rows = env_swap("SPK_ELL_ROWS", NULL);
    if (dev != SPK_DEVICE_CPU) {      /* the rule: two rows a thread up to SPK_ELL_PAIR_WIDTH */
        int64_t width = 0;
        for (int64_t i = 0; i < A->nrows; i++)
            if (A->rowptr[i + 1] - A->rowptr[i] > width)
                width = A->rowptr[i + 1] - A->rowptr[i];
        const int got = rows_of(spk_backend_find(SPK_FMT_ELL, dev), A);
        T_CHECK(got == (width <= SPK_ELL_PAIR_WIDTH ? 2 : 1),
                "ell on %s (width %lld): %d rows per thread",
                mname, (long long)width, got);
    }
    for (int f = 0; f < 2; f++) {
        const spk_spmv_backend *be = spk_backend_find(fmts[f], dev);
        for (int v = 0; v < 4; v++) {
            free(env_swap("SPK_ELL_INDEX", index[v / 2]));
            free(env_swap("SPK_ELL_ROWS", rows[v % 2]));
            spk_status st = product_of(be, A, v ? y : y0);
            if (!st && dev != SPK_DEVICE_CPU) {   /* the variant asked for is the one that ran */
                const int got = rows_of(be, A);
                T_CHECK(got == v % 2 + 1, "%s on %s: %d rows per thread with SPK_ELL_ROWS=%s",
                        be->name, mname, got, rows[v % 2]);
            }
            T_CHECK(st == SPK_OK, "%s on %s (index %s, rows %s): %s", be->name, mname,
                    index[v / 2] ? "int32" : "int16", rows[v % 2], spk_last_error(ctx));
            if (st)
                break;
            if (v)
                T_CHECK(memcmp(y0, y, (size_t)A->nrows * sizeof *y) == 0,
                        "%s on %s: ELL with %s indices and %s row(s) per thread differs in "
                        "bits from int16 and 1", be->name, mname,
                        index[v / 2] ? "int32" : "int16", rows[v % 2]);
        }
    }
    env_restore("SPK_ELL_INDEX", saved_index);
    env_restore("SPK_ELL_ROWS", saved_rows);
    free(y0);
    free(y);
}

/* SELL on this device gives the same bits with int16 offsets (the default where they fit) and
 * int32 columns (SPK_ELL_INDEX=32): the offsets encode the columns and every row is summed in
 * CSR's order. (Trivially true on the CPU, which ignores the variable.) */
static void check_sell_layouts(const char *mname, const spk_csr *A)
{
    const size_t bytes = (size_t)(A->nrows ? A->nrows : 1) * sizeof(double);
    double *y0 = malloc(bytes), *y = malloc(bytes);
    char *saved = env_swap("SPK_ELL_INDEX", NULL);
    const spk_spmv_backend *be = spk_backend_find(SPK_FMT_SELL, dev);
    spk_status st = product_of(be, A, y0);
    T_CHECK(st == SPK_OK, "%s on %s (int16 where they fit): %s", be->name, mname,
            spk_last_error(ctx));
    free(env_swap("SPK_ELL_INDEX", "32"));
    if (!st) {
        st = product_of(be, A, y);
        T_CHECK(st == SPK_OK, "%s on %s (int32): %s", be->name, mname, spk_last_error(ctx));
    }
    if (!st)
        T_CHECK(memcmp(y0, y, (size_t)A->nrows * sizeof *y) == 0,
                "%s on %s: int32 columns and int16 offsets differ in bits", be->name, mname);
    env_restore("SPK_ELL_INDEX", saved);
    free(y0);
    free(y);
}

/* spmv_dot (CG's q = A p and p'q, square A): y = A x against the reference, out = x'y to
 * 1e-12 of sum |x_i y_i|, the same bits on a second call, and nothing written when *skip. */
static void check_spmv_dot(const char *be_name, const char *mname, const spk_spmv_backend *be,
                           const void *state, const spk_csr *A)
{
    const int64_t n = A->nrows;
    if (!be->spmv_dot || n != A->ncols)
        return;
    double *x = host_random(n, 31), *ref = malloc(((size_t)n + 1) * sizeof *ref),
           *got = malloc(((size_t)n + 1) * sizeof *got);
    spk_csr_spmv_ref(A, 1.0, x, 0.0, ref);
    double want = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        want += x[i] * ref[i];
        scale += fabs(x[i] * ref[i]);
        got[i] = NAN;
    }
    const double poison = -12345.0;
    double out[2] = {NAN, NAN}, out_skip = NAN;
    const spk_status st = t_spmv_dot(ctx, be, state, n, x, got, out, poison, &out_skip);
    T_CHECK(st == SPK_OK, "%s spmv_dot on %s: %s: %s", be_name, mname, spk_status_str(st),
            spk_last_error(ctx));
    if (!st) {
        double d = t_rel_diff(got, ref, n);
        T_CHECK(d <= TOL, "%s spmv_dot on %s: y differs by %.3g", be_name, mname, d);
        T_CHECK(fabs(out[0] - want) <= TOL * (scale > 0.0 ? scale : 1.0),
                "%s spmv_dot on %s: x'y = %.17g, reference %.17g", be_name, mname, out[0], want);
        T_CHECK(memcmp(&out[0], &out[1], sizeof out[0]) == 0,
                "%s spmv_dot on %s: two calls gave %.17g and %.17g", be_name, mname, out[0],
                out[1]);
        T_CHECK(out_skip == poison, "%s on %s: spmv_dot wrote out with skip set", be_name, mname);
    }
    free(x);
    free(ref);
    free(got);
}

/* ---- AMG's fused step (spk_spmv_backend.spmv_step) ----------------------------------------- */

static void check_steps(const char *be_name, const char *mname, const spk_spmv_backend *be,
                        const void *state, const spk_csr *A);
/* Every value holds in fp32 (a twin's setup refuses none, but the reference must be exact). */
static int fits_fp32_values(const spk_csr *A)
{
    for (int64_t p = 0; p < A->nnz; p++) {
        const double a = fabs(A->val[p]);
        if (a > 3.4e38 || (a != 0.0 && a < 1.2e-38))
            return 0;
    }
    return 1;
}

/* n entries of v onto the device as doubles or (is32) floats, d holding n doubles. */
static spk_status put_typed(const double *v, int64_t n, int is32, double *d)
{
    if (n == 0)
        return SPK_OK;
    if (!is32)
        return ops->upload(ctx, n, v, d);
    float *f = calloc((size_t)n + 1, sizeof *f);       /* whole doubles: (n + 1) / 2 of them */
    for (int64_t i = 0; i < n; i++)
        f[i] = (float)v[i];
    spk_status st = ops->upload(ctx, (n + 1) / 2, (const double *)(const void *)f, d);
    free(f);
    return st;
}

/* v rounded as put_typed stores it */
static void round_typed(double *v, int64_t n, int is32)
{
    for (int64_t i = 0; is32 && i < n; i++)
        v[i] = (double)(float)v[i];
}

/* The step of one shape (residual: b - A x; Jacobi: u + w (b - A x); product: A x;
 * accumulate: y + A x, u = y) in one precision combination, against the host's arithmetic on
 * the same rounded inputs: to 1e-12 with an fp64 y, to two fp32 roundings with an fp32 one. A row may
 * refuse a shape (SPK_ERR_UNSUPPORTED: HYB's tail under w or b, CSR's long rows); then y must
 * be untouched. */
static void check_step(const char *be_name, const char *mname, const spk_spmv_backend *be,
                       const void *state, const spk_csr *A, int shape, int x32, int b32, int y32)
{
    static const char *const shapes[] = {"residual", "jacobi", "product", "accumulate"};
    const int64_t m = A->nrows, n = A->ncols;
    double *x = host_random(n, 41), *b = host_random(m, 42), *w = host_random(m, 43),
           *u = host_random(m, 44), *ref = malloc(((size_t)m + 1) * sizeof *ref),
           *got = malloc(((size_t)m + 1) * 2 * sizeof *got);
    round_typed(x, n, x32);
    round_typed(b, m, b32);
    round_typed(w, m, x32);
    round_typed(u, m, x32);
    spk_csr_spmv_ref(A, 1.0, x, 0.0, ref);             /* t = A x on the rounded x */
    const int has_b = shape <= 1, has_w = shape == 1, has_u = shape == 1 || shape == 3;
    const double alpha = shape <= 1 ? -1.0 : 1.0;
    for (int64_t i = 0; i < m; i++) {
        double v = alpha * ref[i];
        if (has_b)
            v = b[i] + v;
        if (has_w)
            v = w[i] * v;
        if (has_u)
            v = u[i] + v;
        ref[i] = y32 ? (double)(float)v : v;
    }
    double *d_x = NULL, *d_b = NULL, *d_w = NULL, *d_u = NULL, *d_y = NULL;
    spk_status st = ops->alloc(ctx, n + 1, &d_x);
    if (!st)
        st = ops->alloc(ctx, m + 1, &d_b);
    if (!st)
        st = ops->alloc(ctx, m + 1, &d_w);
    if (!st)
        st = ops->alloc(ctx, m + 1, &d_u);
    if (!st)
        st = ops->alloc(ctx, m + 1, &d_y);
    if (!st)
        st = put_typed(x, n, x32, d_x);
    if (!st)
        st = put_typed(b, m, b32, d_b);
    if (!st)
        st = put_typed(w, m, x32, d_w);
    /* accumulate: u is y, in y's type; else y poisoned (NaN) and u in x's */
    double *poison = malloc(((size_t)m + 1) * sizeof *poison);
    for (int64_t i = 0; i < m; i++)
        poison[i] = NAN;
    if (!st)
        st = shape == 3 ? put_typed(u, m, y32, d_y) : put_typed(poison, m, y32, d_y);
    if (!st && shape != 3)
        st = put_typed(u, m, x32, d_u);
    const spk_step s = {.x = d_x, .u = has_u ? (shape == 3 ? (void *)d_y : (void *)d_u) : NULL,
                        .w = has_w ? d_w : NULL, .b = has_b ? d_b : NULL, .y = d_y,
                        .alpha = alpha, .beta = 1.0, .x32 = x32, .b32 = b32, .y32 = y32};
    spk_status run = st ? st : be->spmv_step(ctx, state, &s);
    if (!st)
        st = ops->sync(ctx);
    if (!st && m)                                      /* m floats are (m + 1) / 2 doubles */
        st = ops->download(ctx, y32 ? (m + 1) / 2 : m, d_y, got);
    if (y32)                                           /* widen the floats in place, from the end */
        for (int64_t i = m - 1; i >= 0; i--)
            got[i] = (double)((const float *)got)[i];
    const char *what = shapes[shape];
    if (run == SPK_ERR_UNSUPPORTED) {
        T_CHECK(shape <= 1 || be->format != SPK_FMT_HYB,
                "%s step %s (x32 %d b32 %d y32 %d) on %s: refused", be_name, what, x32, b32, y32,
                mname);
        int untouched = 1;
        for (int64_t i = 0; i < m && shape != 3; i++)
            untouched &= isnan(got[i]);
        T_CHECK(untouched, "%s step %s on %s: refused but wrote y", be_name, what, mname);
    } else {
        T_CHECK(run == SPK_OK && st == SPK_OK, "%s step %s (x32 %d b32 %d y32 %d) on %s: %s: %s",
                be_name, what, x32, b32, y32, mname, spk_status_str(run ? run : st),
                spk_last_error(ctx));
        if (run == SPK_OK && st == SPK_OK) {
            /* fp32 y: a rounding of the sum; HYB adds its tail's runs to the rounded ELL part
             * in float, once for each tile a row spans (the dense rows here: hundreds) */
            const double d = t_rel_diff(got, ref, m),
                         tol = !y32 ? TOL : be->format == SPK_FMT_HYB ? 4e-6 : 2.5e-7;
            T_CHECK(d <= tol, "%s step %s (x32 %d b32 %d y32 %d) on %s: relative difference "
                    "%.3g", be_name, what, x32, b32, y32, mname, d);
        }
    }
    ops->free(ctx, d_x);
    ops->free(ctx, d_b);
    ops->free(ctx, d_w);
    ops->free(ctx, d_u);
    ops->free(ctx, d_y);
    free(x);
    free(b);
    free(w);
    free(u);
    free(ref);
    free(got);
    free(poison);
}

/* The steps of be's fp32 twin, made from A, against A with its values rounded to float. */
static void check_twin_steps(const char *mname, const spk_spmv_backend *be, const spk_csr *A)
{
    const spk_spmv_backend *tw = be->fp32;
    if (!tw || !tw->spmv_step || !fits_fp32_values(A))
        return;
    spk_csr R = *A;
    R.val = malloc(((size_t)A->nnz + 1) * sizeof *R.val);
    for (int64_t p = 0; p < A->nnz; p++)
        R.val[p] = (double)(float)A->val[p];
    void *state = NULL;
    spk_status st = tw->setup(ctx, A, &state);
    T_CHECK(st == SPK_OK, "%s setup on %s: %s: %s", tw->name, mname, spk_status_str(st),
            spk_last_error(ctx));
    if (st == SPK_OK)
        check_steps(tw->name, mname, tw, state, &R);
    tw->destroy(state);
    free(R.val);
}

/* Every shape in the four precision combinations the V-cycle runs (all fp64; all fp32; fp32
 * with an fp64 b; and an fp64 y too), for a row with spmv_step. */
static void check_steps(const char *be_name, const char *mname, const spk_spmv_backend *be,
                        const void *state, const spk_csr *A)
{
    static const int combo[4][3] = {{0, 0, 0}, {1, 1, 1}, {1, 0, 1}, {1, 0, 0}};
    if (!be->spmv_step)
        return;
    for (int shape = 0; shape < 4; shape++)
        for (int c = 0; c < 4; c++)
            if (shape != 3 || combo[c][0] == combo[c][2])   /* u = y: u takes x's type */
                check_step(be_name, mname, be, state, A, shape, combo[c][0], combo[c][1],
                           combo[c][2]);
}

/* The CUDA CSR backend picks CSR-vector, merge path or row blocks at setup (and the row
 * blocks their sums per block), the CUDA BSR backend one of three kernels; run each with every
 * kernel forced through its knob (SPK_CSR_KERNEL with SPK_CSR_SUMS, SPK_BSR_KERNEL; the
 * caller's values, if any, are put back) beside the run with its own choice. Other backends:
 * nothing. */
static void check_csr_kernels(const char *mname, const spk_spmv_backend *be, const spk_csr *A)
{
    static const char *const csr[] = {"vector", "merge", "adaptive", "adaptive", "adaptive",
                                      NULL};
    static const char *const csr_sums[] = {NULL, NULL, NULL, "rows", "segmented"};
    static const char *const bsr[] = {"branch", "flat", "split", NULL};
    if (be->device != SPK_DEVICE_CUDA || (be->format != SPK_FMT_CSR && be->format != SPK_FMT_BSR))
        return;
    const int is_csr = be->format == SPK_FMT_CSR;
    const char *knob = is_csr ? "SPK_CSR_KERNEL" : "SPK_BSR_KERNEL";
    const char *const *kernels = is_csr ? csr : bsr;
    char *saved = env_swap(knob, NULL);
    char *saved_sums = env_swap("SPK_CSR_SUMS", NULL);
    for (size_t k = 0; kernels[k]; k++) {
        char name[64];
        const char *sums = is_csr ? csr_sums[k] : NULL;
        snprintf(name, sizeof name, "%s[%s%s%s]", be->name, kernels[k], sums ? ", sums " : "",
                 sums ? sums : "");
        free(env_swap("SPK_CSR_SUMS", sums));
        free(env_swap(knob, kernels[k]));
        void *state = NULL;
        spk_status st = be->setup(ctx, A, &state);
        T_CHECK(st == SPK_OK, "%s setup on %s: %s: %s", name, mname, spk_status_str(st),
                spk_last_error(ctx));
        if (st == SPK_OK) {
            check_products(name, mname, be, state, A);
            check_repeatable(name, mname, be, state, A);
            check_spmv_dot(name, mname, be, state, A);
            check_steps(name, mname, be, state, A);
            if (be->format == SPK_FMT_BSR)
                check_nan_x(name, mname, be, state, A);
        }
        be->destroy(state);
    }
    env_restore(knob, saved);
    env_restore("SPK_CSR_SUMS", saved_sums);
}

/* Every backend of the device: setup, products, destroy. ELL past its fill guard must refuse
 * with a message that points to hyb. */
static void check_backends(const char *mname, const spk_csr *A, const spk_matrix_info *info)
{
    size_t count;
    const spk_spmv_backend *const *all = spk_backend_all(&count);
    for (size_t b = 0; b < count; b++) {
        const spk_spmv_backend *be = all[b];
        if (be->device != dev)
            continue;
        T_CHECK(spk_backend_find(be->format, dev) == be, "registry lookup of %s", be->name);
        void *state = NULL;
        spk_status st = be->setup(ctx, A, &state);
        if (be->format == SPK_FMT_ELL && info->ell_fill > SPK_ELL_MAX_FILL) {
            T_CHECK(st == SPK_ERR_UNSUPPORTED, "%s on %s (fill %.1f): expected the fill guard, got %s",
                    be->name, mname, info->ell_fill, spk_status_str(st));
            T_CHECK(strstr(spk_last_error(ctx), "hyb") && strstr(spk_last_error(ctx), "padding"),
                    "%s guard message: %s", be->name, spk_last_error(ctx));
            be->destroy(state);
            continue;
        }
        if (be->format == SPK_FMT_BSR && !t_format_fits(dev, SPK_FMT_BSR, info)) {
            T_CHECK(st == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "bsr") &&
                        strstr(spk_last_error(ctx), "use csr"),
                    "%s on %s (block %lld, fill %.2f): expected the refusal, got %s: %s",
                    be->name, mname, (long long)info->bsr_block, info->bsr_fill,
                    spk_status_str(st), spk_last_error(ctx));
            be->destroy(state);
            continue;
        }
        if (be->format == SPK_FMT_DIA &&
            (info->dia_diags > SPK_DIA_MAX_DIAGS || info->dia_fill > SPK_DIA_MAX_FILL)) {
            T_CHECK(st == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "use csr") &&
                        strstr(spk_last_error(ctx), "diagonals"),
                    "%s on %s (%lld diagonals, fill %.1f): expected the guard, got %s: %s",
                    be->name, mname, (long long)info->dia_diags, info->dia_fill,
                    spk_status_str(st), spk_last_error(ctx));
            be->destroy(state);
            continue;
        }
        T_CHECK(st == SPK_OK, "%s setup on %s: %s: %s", be->name, mname, spk_status_str(st),
                spk_last_error(ctx));
        if (st == SPK_OK) {
            check_products(be->name, mname, be, state, A);
            check_spmv_dot(be->name, mname, be, state, A);     /* backends that have one */
            check_steps(be->name, mname, be, state, A);
            check_twin_steps(mname, be, A);
            if (be->format == SPK_FMT_BSR)
                check_nan_x(be->name, mname, be, state, A);
        }
        be->destroy(state);
        check_csr_kernels(mname, be, A);
    }
}

/* SPK_CSR_KERNEL with an unknown value: the knobs are refused, naming the values, and the
 * context keeps the ones it had. */
static void check_csr_kernel_env(void)
{
    const spk_tuning before = ctx->tune;
    const char *env = getenv("SPK_CSR_KERNEL");
    char *saved = env ? strdup(env) : NULL;
    setenv("SPK_CSR_KERNEL", "fast", 1);
    spk_tuning t = before;
    spk_status st = spk_tuning_read(ctx, &t);
    T_CHECK(st == SPK_ERR_ARG && strstr(spk_last_error(ctx), "SPK_CSR_KERNEL=fast") &&
                strstr(spk_last_error(ctx), "merge"),
            "SPK_CSR_KERNEL=fast: %s: %s", spk_status_str(st), spk_last_error(ctx));
    T_CHECK(memcmp(&ctx->tune, &before, sizeof before) == 0, "the context's knobs changed");
    if (saved)
        setenv("SPK_CSR_KERNEL", saved, 1);
    else
        unsetenv("SPK_CSR_KERNEL");
    free(saved);
}

/* ---- conversions (host, CPU run only) ---------------------------------------------------- */

static int csr_equal(const spk_csr *a, const spk_csr *b)
{
    if (a->nrows != b->nrows || a->ncols != b->ncols || a->nnz != b->nnz)
        return 0;
    return memcmp(a->rowptr, b->rowptr, ((size_t)a->nrows + 1) * sizeof *a->rowptr) == 0 &&
           (a->nnz == 0 || (memcmp(a->colind, b->colind, (size_t)a->nnz * sizeof *a->colind) == 0 &&
                            memcmp(a->val, b->val, (size_t)a->nnz * sizeof *a->val) == 0));
}

#define ROUND_TRIP(fmt, FMT, f, to_csr, bytes_fn)                                                \
    do {                                                                                     \
        spk_csr back;                                                                        \
        spk_status st_ = to_csr(ctx, &f, &back);                                             \
        T_CHECK(st_ == SPK_OK && csr_equal(A, &back), "%s -> csr on %s differs (%s)", fmt,   \
                mname, spk_last_error(ctx));                                                 \
        T_CHECK(bytes_fn(&f) == info->bytes[FMT], "%s bytes on %s: layout %zu, stats %zu",   \
                fmt, mname, bytes_fn(&f), info->bytes[FMT]);                                 \
        spk_csr_free(&back);                                                                 \
    } while (0)

static void check_jds_order(const char *mname, const spk_csr *A, const spk_jds_fmt *f)
{
    char *seen = calloc((size_t)f->nrows + 1, 1);
    int ok = 1;
    for (int64_t k = 0; k < f->nrows; k++) {
        int32_t r = f->perm[k];
        if (r < 0 || r >= f->nrows || seen[r]) {
            ok = 0;
            break;
        }
        seen[r] = 1;
        if (k > 0) {
            int32_t q = f->perm[k - 1];
            int64_t lq = A->rowptr[q + 1] - A->rowptr[q], lr = A->rowptr[r + 1] - A->rowptr[r];
            if (lq < lr || (lq == lr && q > r))   /* descending, stable */
                ok = 0;
        }
    }
    T_CHECK(ok, "jds on %s: perm is not a stable descending sort by row length", mname);
    free(seen);
}

/* SELL: each window's rows a stable descending sort by length, each slice as wide as its
 * first (longest) row, and the statistics' fill the layout's. */
static void check_sell_order(const char *mname, const spk_csr *A, const spk_sell_fmt *f,
                             const spk_matrix_info *info)
{
    char *seen = calloc((size_t)f->nrows + 1, 1);
    int ok = 1;
    for (int64_t k = 0; k < f->nrows && ok; k++) {
        const int64_t w0 = k - k % SPK_SELL_SIGMA, r = w0 + f->perm[k];
        const int64_t lr = A->rowptr[r + 1] - A->rowptr[r];
        if (r >= f->nrows || seen[r])
            ok = 0;
        else
            seen[r] = 1;
        if (ok && k > w0) {
            const int64_t q = w0 + f->perm[k - 1], lq = A->rowptr[q + 1] - A->rowptr[q];
            if (lq < lr || (lq == lr && q > r))
                ok = 0;
        }
        const int64_t s = k / SPK_SELL_C;
        const int64_t width = (f->slice_ptr[s + 1] - f->slice_ptr[s]) / SPK_SELL_C;
        if (ok && k % SPK_SELL_C == 0 && width != lr)
            ok = 0;
    }
    T_CHECK(ok, "sell on %s: not a stable descending sort within windows, slices as wide as "
            "their first row", mname);
    T_CHECK(f->nnz == 0 || info->sell_fill == (double)f->slots / (double)f->nnz,
            "sell fill on %s: stats %.6f, layout %lld slots for %lld entries", mname,
            info->sell_fill, (long long)f->slots, (long long)f->nnz);
    free(seen);
}

/* Equal bit for bit, except that any NaN matches any NaN (the payload of a NaN made from two
 * NaNs depends on the order of an add's operands, which C leaves to the compiler). */
static int same_bits(const double *a, const double *b, int64_t m)
{
    for (int64_t i = 0; i < m; i++)
        if (!(isnan(a[i]) && isnan(b[i])) && memcmp(&a[i], &b[i], sizeof *a) != 0)
            return 0;
    return 1;
}

/* The diagonals by brute force: distinct offsets (-1 past SPK_DIA_MAX_DIAGS) and the rows
 * that lack one of them. */
static int64_t brute_diagonals(const spk_csr *A, int64_t *partial)
{
    const int64_t span = A->nrows + A->ncols + 1;
    char *seen = calloc((size_t)span, 1);
    int64_t nd = 0;
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            char *c = &seen[A->colind[p] - i + A->nrows];
            nd += !*c;
            *c = 1;
        }
    *partial = 0;
    for (int64_t i = 0; i < A->nrows; i++)
        *partial += A->rowptr[i + 1] - A->rowptr[i] < nd;
    free(seen);
    return nd > SPK_DIA_MAX_DIAGS ? -1 : nd;
}

/* BSR: the statistics' block size against a brute-force test of every d, and where there are
 * blocks, the round trip, the bytes, and y with the reference's bits. */
static int blocks_brute(const spk_csr *A, int64_t d)
{
    if (A->nnz == 0 || A->nrows % d || A->ncols % d)
        return 0;
    /* every stored (i, j): its whole aligned block stored, i.e. each row's count of entries
     * in each block column is d and the d rows of a block row agree */
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const int64_t I = i / d, J = A->colind[p] / d;
            for (int64_t a = 0; a < d; a++)
                for (int64_t c = 0; c < d; c++) {
                    const int64_t r = I * d + a, col = J * d + c;
                    int found = 0;
                    for (int64_t q = A->rowptr[r]; q < A->rowptr[r + 1]; q++)
                        found |= A->colind[q] == col;
                    if (!found)
                        return 0;
                }
        }
    return 1;
}

static void check_bsr_layout(const char *mname, const spk_csr *A, const spk_matrix_info *info)
{
    int64_t want = 1;
    if (A->nnz <= 200000)
        for (int64_t d = SPK_BSR_MAX_D; d >= SPK_BSR_MIN_D && want == 1; d--)
            if (blocks_brute(A, d))
                want = d;
    T_CHECK(A->nnz > 200000 || info->bsr_block == want, "bsr block of %s: %lld, brute force %lld",
            mname, (long long)info->bsr_block, (long long)want);
    spk_bsr_fmt bsr;
    spk_status st = spk_bsr_from_csr(ctx, A, 0, &bsr);
    if (info->bsr_block < 2 || info->bsr_fill > SPK_BSR_MAX_FILL) {
        T_CHECK(st == SPK_ERR_UNSUPPORTED, "bsr from %s (block %lld, fill %.2f) not refused",
                mname, (long long)info->bsr_block, info->bsr_fill);
        return;
    }
    T_CHECK(st == SPK_OK && bsr.d == info->bsr_block, "bsr from %s: %s", mname,
            spk_last_error(ctx));
    if (st)
        return;
    ROUND_TRIP("bsr", SPK_FMT_BSR, bsr, spk_bsr_to_csr, spk_bsr_bytes);
    /* a smaller block size the pattern also has: the same products */
    if (bsr.d % 2 == 0 && bsr.d >= 4) {
        spk_bsr_fmt half;
        T_CHECK(spk_bsr_from_csr(ctx, A, bsr.d / 2, &half) == SPK_OK && half.d == bsr.d / 2,
                "bsr of %s with d = %lld: %s", mname, (long long)bsr.d / 2, spk_last_error(ctx));
        spk_bsr_fmt_free(&half);
    }
    const int64_t m = A->nrows, n = A->ncols;
    double *x = host_random(n, 43), *y0 = host_random(m, 44);
    double *ref = malloc(((size_t)m + 1) * sizeof *ref), *got = malloc(((size_t)m + 1) * sizeof *got);
    void *state = NULL;
    st = spk_backend_bsr_cpu.setup(ctx, A, &state);
    static const double ab[2][2] = {{1.0, 0.0}, {-0.7, 1.3}};
    for (int k = 0; k < 2 && st == SPK_OK; k++) {
        memcpy(ref, y0, (size_t)m * sizeof *ref);
        memcpy(got, y0, (size_t)m * sizeof *got);
        spk_csr_spmv_ref(A, ab[k][0], x, ab[k][1], ref);
        T_CHECK(spk_backend_bsr_cpu.spmv(ctx, state, ab[k][0], x, ab[k][1], got) == SPK_OK &&
                    same_bits(ref, got, m),
                "bsr-cpu on %s (a %g, b %g): not the reference's bits", mname, ab[k][0], ab[k][1]);
    }
    spk_backend_bsr_cpu.destroy(state);
    free(x);
    free(y0);
    free(ref);
    free(got);
    spk_bsr_fmt_free(&bsr);
}

/* y = alpha A x + beta y in DIA has the reference's bits, with the plain and the chosen row
 * kernel, x finite and x with infinities and NaNs (a slot without an entry must add nothing,
 * not 0 * inf); the statistics count the diagonals as brute force does. */
static void check_dia_layout(const char *mname, const spk_csr *A, const spk_matrix_info *info)
{
    int64_t partial;
    const int64_t nd = brute_diagonals(A, &partial);
    T_CHECK(nd < 0 ? info->dia_diags == SPK_DIA_MAX_DIAGS + 1 :
                     info->dia_diags == nd && info->dia_partial_rows == partial,
            "dia statistics on %s: %lld diagonals, %lld partial rows; brute force %lld, %lld",
            mname, (long long)info->dia_diags, (long long)info->dia_partial_rows, (long long)nd,
            (long long)partial);
    spk_dia_fmt dia;
    spk_status st = spk_dia_from_csr(ctx, A, &dia);
    if (nd < 0 || info->dia_fill > SPK_DIA_MAX_FILL) {
        T_CHECK(st == SPK_ERR_UNSUPPORTED, "dia from %s (%lld diagonals, fill %.2f) not refused",
                mname, (long long)info->dia_diags, info->dia_fill);
        return;
    }
    T_CHECK(st == SPK_OK, "dia from %s: %s", mname, spk_last_error(ctx));
    if (st)
        return;
    ROUND_TRIP("dia", SPK_FMT_DIA, dia, spk_dia_to_csr, spk_dia_bytes);
    T_CHECK(dia.nfix == partial, "dia on %s: %lld fix rows, %lld partial", mname,
            (long long)dia.nfix, (long long)partial);
    const int64_t m = A->nrows, n = A->ncols;
    double *x = host_random(n, 41), *y0 = host_random(m, 42);
    double *ref = malloc(((size_t)m + 1) * sizeof *ref), *got = malloc(((size_t)m + 1) * sizeof *got);
    static const double ab[3][2] = {{1.0, 0.0}, {-0.7, 1.3}, {0.5, 1.0}};
    for (int special = 0; special < 2; special++) {
        if (special)                       /* every 5th x infinite, every 11th NaN */
            for (int64_t j = 0; j < n; j++)
                x[j] = j % 11 == 3 ? NAN : j % 5 == 1 ? (j % 2 ? INFINITY : -INFINITY) : x[j];
        for (int k = 0; k < 3; k++)
            for (int plain = 0; plain < 2; plain++) {
                memcpy(ref, y0, (size_t)m * sizeof *ref);
                memcpy(got, y0, (size_t)m * sizeof *got);
                spk_csr_spmv_ref(A, ab[k][0], x, ab[k][1], ref);
                spk_dia_spmv_host(&dia, plain, ab[k][0], x, ab[k][1], got);
                T_CHECK(same_bits(ref, got, m),
                        "dia (%s kernel) on %s (a %g, b %g, x %s): not the reference's bits",
                        plain ? "plain" : spk_dia_cpu_kernel(), mname, ab[k][0], ab[k][1],
                        special ? "with inf and nan" : "finite");
            }
    }
    /* the fused q = A p, p'q of CG (square): q and p'q with the bits of the SpMV, then the
     * CPU's dot */
    if (m == n) {
        for (int64_t j = 0; j < n; j++)
            x[j] = t_randu(&(uint64_t){(uint64_t)j + 7});
        for (int plain = 0; plain < 2; plain++) {
            double pq_ref = NAN, pq;
            spk_dia_spmv_host(&dia, plain, 1.0, x, 0.0, ref);
            ops->dot(ctx, n, x, ref, &pq_ref);
            for (int64_t i = 0; i < m; i++)
                got[i] = NAN;
            pq = spk_dia_spmv_dot_host(&dia, plain, x, got);
            T_CHECK(same_bits(ref, got, m) && memcmp(&pq, &pq_ref, sizeof pq) == 0,
                    "dia spmv_dot (%s kernel) on %s: p'q %.17g against spmv + dot %.17g%s",
                    plain ? "plain" : spk_dia_cpu_kernel(), mname, pq, pq_ref,
                    same_bits(ref, got, m) ? "" : ", q differs");
        }
    }
    /* new values, same pattern: the refill equals a fresh layout */
    spk_csr B;
    T_CHECK(spk_csr_alloc(ctx, A->nrows, A->ncols, A->nnz, &B) == SPK_OK, "csr alloc");
    memcpy(B.rowptr, A->rowptr, ((size_t)A->nrows + 1) * sizeof *B.rowptr);
    if (A->nnz)
        memcpy(B.colind, A->colind, (size_t)A->nnz * sizeof *B.colind);
    for (int64_t p = 0; p < A->nnz; p++)
        B.val[p] = 2.0 * A->val[p] + 1.0;
    spk_dia_fmt fresh;
    if (spk_dia_from_csr(ctx, &B, &fresh) == SPK_OK) {
        spk_dia_fill_values(&B, &dia, dia.val);
        T_CHECK(memcmp(dia.val, fresh.val, (size_t)(dia.ndiag * dia.nrows) * sizeof *dia.val) == 0,
                "dia refill on %s differs from a fresh layout", mname);
        spk_dia_fmt_free(&fresh);
    }
    spk_csr_free(&B);
    free(x);
    free(y0);
    free(ref);
    free(got);
    spk_dia_fmt_free(&dia);
}

static void check_conversions(const char *mname, const spk_csr *A, const spk_matrix_info *info)
{
    spk_coo_fmt coo;
    spk_status st = spk_coo_from_csr(ctx, A, &coo);
    T_CHECK(st == SPK_OK, "coo from %s: %s", mname, spk_last_error(ctx));
    if (!st)
        ROUND_TRIP("coo", SPK_FMT_COO, coo, spk_coo_to_csr, spk_coo_bytes);
    spk_coo_fmt_free(&coo);

    spk_ell_fmt ell;
    st = spk_ell_from_csr(ctx, A, -1, 0, &ell);
    if (info->ell_fill > SPK_ELL_MAX_FILL) {
        T_CHECK(st == SPK_ERR_UNSUPPORTED, "ell from %s (fill %.1f) not refused", mname, info->ell_fill);
        if (info->nrows * info->row_max <= NOGUARD_MAX_SLOTS) {
            st = spk_ell_from_csr(ctx, A, -1, 1, &ell);   /* the guard off: still correct */
            T_CHECK(st == SPK_OK, "ell (no guard) from %s: %s", mname, spk_last_error(ctx));
            if (!st) {
                ROUND_TRIP("ell (no guard)", SPK_FMT_ELL, ell, spk_ell_to_csr, spk_ell_bytes);
                check_products("ell-cpu (no guard)", mname, &spk_backend_ell_cpu, &ell, A);
            }
            spk_ell_fmt_free(&ell);
        }
    } else {
        T_CHECK(st == SPK_OK, "ell from %s: %s", mname, spk_last_error(ctx));
        if (!st)
            ROUND_TRIP("ell", SPK_FMT_ELL, ell, spk_ell_to_csr, spk_ell_bytes);
        spk_ell_fmt_free(&ell);
    }

    spk_hyb_fmt hyb;
    st = spk_hyb_from_csr(ctx, A, &hyb);
    T_CHECK(st == SPK_OK, "hyb from %s: %s", mname, spk_last_error(ctx));
    if (!st) {
        ROUND_TRIP("hyb", SPK_FMT_HYB, hyb, spk_hyb_to_csr, spk_hyb_bytes);
        T_CHECK(hyb.ell.width == info->hyb_width && hyb.coo.nnz == info->hyb_coo_nnz,
                "hyb split on %s: width %lld tail %lld, stats say %lld and %lld", mname,
                (long long)hyb.ell.width, (long long)hyb.coo.nnz, (long long)info->hyb_width,
                (long long)info->hyb_coo_nnz);
    }
    spk_hyb_fmt_free(&hyb);

    spk_jds_fmt jds;
    st = spk_jds_from_csr(ctx, A, &jds);
    T_CHECK(st == SPK_OK, "jds from %s: %s", mname, spk_last_error(ctx));
    if (!st) {
        ROUND_TRIP("jds", SPK_FMT_JDS, jds, spk_jds_to_csr, spk_jds_bytes);
        check_jds_order(mname, A, &jds);
    }
    spk_jds_fmt_free(&jds);

    spk_sell_fmt sell;
    st = spk_sell_from_csr(ctx, A, &sell);
    T_CHECK(st == SPK_OK, "sell from %s: %s", mname, spk_last_error(ctx));
    if (!st) {
        ROUND_TRIP("sell", SPK_FMT_SELL, sell, spk_sell_to_csr, spk_sell_bytes);
        check_sell_order(mname, A, &sell, info);
    }
    spk_sell_fmt_free(&sell);

    check_dia_layout(mname, A, info);
    check_bsr_layout(mname, A, info);

    T_CHECK(info->bytes[SPK_FMT_CSR] == (size_t)(8 * (A->nrows + 1) + 12 * A->nnz),
            "csr bytes on %s", mname);
}

/* Make each allocation of a setup fail in turn: SPK_ERR_NOMEM every time, nothing leaked
 * (the sanitizer build checks the leaks), then a clean setup once the failures run out. */
static void check_nomem(void)
{
    spk_csr A;
    t_random_csr(ctx, 500, 400, 6, 31, &A);
    spk_csr band;
    const int64_t offs[] = {-40, -1, 0, 3, 17};
    csr_band(700, offs, 5, &band);
    spk_csr blk;
    t_block_csr(ctx, 150, 150, 3, 4, 32, &blk);
    for (int f = SPK_FMT_COO; f < SPK_FMT_COUNT; f++) {
        const spk_spmv_backend *be = spk_backend_find((spk_format)f, SPK_DEVICE_CPU);
        int k, failed = 0;
        for (k = 1; k <= 20; k++) {
            void *state = NULL;
            ctx->fail_alloc_at = spk_context_alloc_count(ctx) + (uint64_t)k;
            spk_status st = be->setup(ctx, f == SPK_FMT_DIA ? &band : f == SPK_FMT_BSR ? &blk : &A,
                                      &state);
            ctx->fail_alloc_at = 0;
            if (st == SPK_OK) {
                be->destroy(state);
                break;
            }
            failed += st == SPK_ERR_NOMEM && state == NULL && strstr(spk_last_error(ctx), "memory");
        }
        T_CHECK(k <= 20 && failed == k - 1, "%s: %d of %d failed allocations reported NOMEM (%s)",
                be->name, failed, k - 1, spk_last_error(ctx));
    }
    spk_csr_free(&band);
    spk_csr_free(&blk);
    spk_csr_free(&A);
}

/* ---- driver ------------------------------------------------------------------------------ */

static void check_matrix(const char *mname, spk_csr *A)
{
    spk_matrix_info info;
    spk_stats_compute(A, &info);
    check_backends(mname, A, &info);
    if (dev == SPK_DEVICE_CPU)
        check_conversions(mname, A, &info);
    spk_csr_free(A);
}

static void check_random(int64_t nrows, int64_t ncols, int64_t avg, uint64_t seed)
{
    char name[96];
    spk_csr A;
    snprintf(name, sizeof name, "random %lldx%lld avg %lld seed %llu", (long long)nrows,
             (long long)ncols, (long long)avg, (unsigned long long)seed);
    t_random_csr(ctx, nrows, ncols, avg, seed, &A);
    check_matrix(name, &A);
}

static void check_generated(const char *spec)
{
    spk_csr A;
    spk_status st = spk_generate_csr(ctx, spec, &A);
    T_CHECK(st == SPK_OK, "generate %s: %s", spec, spk_last_error(ctx));
    if (!st)
        check_matrix(spec, &A);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every real matrix of inputs/, skipping the complex one and the right-hand sides. */
static void check_inputs(void)
{
    DIR *d = opendir(SPK_INPUTS_DIR);
    T_CHECK(d != NULL, "cannot open %s", SPK_INPUTS_DIR);
    if (!d)
        return;
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 4, ".mtx") != 0 || strcmp(e->d_name, "w156.mtx") == 0 ||
            (len >= 9 && strcmp(e->d_name + len - 9, "_rhs1.mtx") == 0))
            continue;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    T_CHECK(n >= 15, "only %d matrices found in inputs/", n);
    for (int k = 0; k < n; k++) {
        spk_csr A;
        t_read_csr(ctx, names[k], &A);
        check_matrix(names[k], &A);
        free(names[k]);
    }
}

/* The CUDA CSR row blocks' segmented sums (a row longer than 16 lanes' trips in its block):
 * runs of short and empty rows around rows of 17 to 700 nonzeros, so that rows start and end
 * inside a thread's three products, on its edges and across many threads, and empty rows lie
 * at block and thread edges; 900 empty rows in a row (a block of 768 rows and no nonzeros,
 * then one that starts with empty rows) and a row of exactly 768 nonzeros (a block of one
 * row). In the quick run too (the sanitizers'). */
static void check_skewed_blocks(void)
{
    const int64_t n = 12000;
    int64_t *len = malloc((size_t)n * sizeof *len);
    spk_csr A;
    for (int64_t i = 0; i < n; i++)
        len[i] = i >= 3000 && i < 3900 ? 0 : i == 5000 ? 768
               : i % 97 == 0 ? 17 + (i * 7) % 683 : i % 41 == 5 ? 3 : i % 13 == 0 ? 0 : i % 3;
    csr_from_lengths(n, 15000, len, 10, &A);
    check_matrix("12000x15000 short rows around long ones", &A);
    free(len);
}

int main(int argc, char **argv)
{
    dev = t_device_from_args(argc, argv);
    ctx = t_context(dev);
    ops = spk_vec_ops_for(dev);
    int quick = 0;                       /* --quick: a sanitizer's run, the first shapes only */
    for (int a = 1; a < argc; a++)
        quick |= !strcmp(argv[a], "--quick");
    spk_csr A;

    /* degenerate shapes first */
    csr_empty(0, 0, &A);
    check_matrix("0x0", &A);
    csr_empty(5, 0, &A);
    check_matrix("5x0", &A);
    csr_empty(0, 5, &A);
    check_matrix("0x5", &A);
    csr_empty(1, 1, &A);
    check_matrix("1x1 zero", &A);
    {
        int64_t one = 1;
        csr_from_lengths(1, 1, &one, 3, &A);
        check_matrix("1x1", &A);
    }
    csr_empty(100, 100, &A);
    check_matrix("100x100 all zero", &A);
    csr_empty(1000, 7, &A);
    check_matrix("1000x7 all zero", &A);
    {
        int64_t len[300];
        uint64_t s = 9;
        for (int i = 0; i < 300; i++)
            len[i] = i % 3 == 0 || i >= 250 ? 0 : (int64_t)(t_rand(&s) % 12);
        csr_from_lengths(300, 300, len, 4, &A);
        check_matrix("300x300 empty rows", &A);
    }

    /* one dense row: ELL refuses it; HYB and COO carry it */
    csr_dense_row(3000, 100000, 17, &A);
    check_matrix("3000x100000 dense row", &A);
    csr_dense_row(500, 2000, 250, &A);
    check_matrix("500x2000 dense row", &A);
    csr_dense_row(200, 200, 0, &A);
    check_matrix("200x200 dense first row", &A);

    /* tall, wide, and sizes off the CPU blocks (128) and GPU warps / blocks */
    check_random(1000, 37, 5, 1);
    check_random(37, 1000, 40, 2);
    check_random(5000, 3, 1, 3);
    check_random(3, 5000, 2000, 4);
    const int64_t sizes[] = {97, 32 + 97, 128 + 97, 1000 + 97, 4096 + 97};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        check_random(sizes[k], sizes[k], 4, 10 + k);
        check_random(sizes[k], sizes[k] + 13, 30, 20 + k);
    }
    for (uint64_t seed = 100; seed < 108; seed++)
        check_random(200 + (int64_t)(seed % 5) * 111, 300 + (int64_t)(seed % 3) * 77,
                     1 + (int64_t)(seed % 4) * 7, seed);

    if (quick) {
        check_generated("poisson3d:9");
        check_skewed_blocks();
        check_generated("lame3d:5");
        spk_context_destroy(ctx);
        return t_done("spmv_quick");
    }
    check_generated("poisson2d:31");
    check_generated("poisson3d:20");          /* DIA: 8 blocks, parallel, 27% partial rows */
    {
        /* DIA: rectangular bands, holes inside the band, a fill past DIA's guard */
        const int64_t offs[] = {-300, -7, -1, 0, 2, 64, 513};
        csr_band_rect(2000, 2600, offs, 7, 0, &A);
        check_matrix("2000x2600 band", &A);
        csr_band_rect(2600, 2000, offs, 7, 0, &A);
        check_matrix("2600x2000 band", &A);
        csr_band_rect(3000, 3000, offs, 7, 13, &A);
        check_matrix("3000x3000 band, every 13th entry dropped", &A);
        const int64_t far[] = {-550, 550};
        csr_band_rect(600, 600, far, 2, 0, &A);
        check_matrix("600x600 two far diagonals (fill 6)", &A);
    }
    check_generated("poisson3d:9");
    check_generated("poisson3d27:6");
    check_generated("elasticity3d:4");
    check_generated("lame3d:5");              /* BSR: 3 x 3 blocks, the clamped face's rows */
    /* BSR: random d x d blocks for every d, empty block rows, rectangular, sizes off the
     * CPU chunks and GPU warps; one entry missing or one block misaligned: no blocks */
    for (int64_t d = SPK_BSR_MIN_D; d <= SPK_BSR_MAX_D; d++) {
        char nm[64];
        t_block_csr(ctx, 211, 211, d, 5, 50 + (uint64_t)d, &A);
        snprintf(nm, sizeof nm, "211 block rows of %lldx%lld blocks", (long long)d, (long long)d);
        check_matrix(nm, &A);
        t_block_csr(ctx, 40, 97, d, 3, 60 + (uint64_t)d, &A);
        snprintf(nm, sizeof nm, "40 x 97 blocks of %lldx%lld", (long long)d, (long long)d);
        check_matrix(nm, &A);
    }
    {
        t_block_csr(ctx, 300, 300, 3, 6, 70, &A);
        spk_csr B;
        T_CHECK(spk_csr_alloc(ctx, A.nrows, A.ncols, A.nnz - 1, &B) == SPK_OK, "alloc");
        /* drop entry 5 of row 100: its block is no longer full */
        const int64_t drop = A.rowptr[100] + 5;
        B.rowptr[0] = 0;
        for (int64_t i = 0; i < A.nrows; i++)
            B.rowptr[i + 1] = A.rowptr[i + 1] - (A.rowptr[i + 1] > drop);
        for (int64_t p = 0, q = 0; p < A.nnz; p++)
            if (p != drop) {
                B.colind[q] = A.colind[p];
                B.val[q++] = A.val[p];
            }
        check_matrix("3x3 blocks, one entry missing", &B);
        spk_csr_free(&A);
        /* every column shifted by one: blocks of 3 no longer start at multiples of 3 */
        t_block_csr(ctx, 300, 300, 3, 6, 71, &B);
        B.ncols = 903;
        for (int64_t p = 0; p < B.nnz; p++)
            B.colind[p]++;
        check_matrix("3x3 blocks shifted by a column", &B);
    }
    check_generated("powerlaw:3000:8:5");
    check_generated("powerlaw:200:150:2");
    check_generated("powerlaw:20000:8");
    check_generated("powerlaw:50000:4:3");

    /* shapes for the merge path's tiles (7 x 256 path items): one row across ~30 tiles, tiles
     * of nothing but empty rows, long rows between runs of empty ones, a row per tile edge */
    csr_dense_row(1, 50000, 0, &A);
    check_matrix("1x50000 dense", &A);
    csr_empty(20000, 3, &A);
    check_matrix("20000x3 all zero", &A);
    {
        int64_t *len = malloc(6000 * sizeof *len);
        for (int i = 0; i < 6000; i++)
            len[i] = i % 1000 == 999 ? 3000 : i % 1000 == 500 ? 1791 : 0;
        csr_from_lengths(6000, 4000, len, 6, &A);
        check_matrix("6000x4000 long rows between empty ones", &A);
        for (int i = 0; i < 6000; i++)
            len[i] = i % 7 == 3 ? 1792 - 1 : i % 5;
        csr_from_lengths(6000, 2000, len, 8, &A);
        check_matrix("6000x2000 tile-sized rows", &A);
        free(len);
    }
    {
        /* shapes for the CUDA CSR row blocks (768 nonzeros or rows a block, longer rows cut
         * into pieces of 8192): rows of exactly a block and one past it, of one piece and one
         * past it, a run of 2400 empty rows, a long row last */
        const int64_t n = 9000;
        int64_t *len = malloc((size_t)n * sizeof *len);
        for (int64_t i = 0; i < n; i++)
            len[i] = i == 5 ? 768 : i == 7 ? 769 : i == 9 ? 2049 : i == 11 ? 8192 : i == 13 ? 8193
                   : i == 15 ? 16385 : (i >= 100 && i < 2500) ? 0 : i == n - 1 ? 3000 : i % 4;
        csr_from_lengths(n, 20000, len, 9, &A);
        check_matrix("9000x20000 block- and piece-sized rows", &A);
        free(len);
    }
    check_skewed_blocks();

    /* the CUDA ELL index layouts: int16 offsets at the edge of their range (+-32767), int32
     * columns one past it, int32 forced by SPK_ELL_INDEX=32 on a stencil, and the two layouts
     * giving the same bits */
    {
        const int64_t fit[] = {-32767, -1, 0, 32767}, past[] = {-32768, 0, 1, 32768};
        csr_band(70000, fit, 4, &A);
        check_ell_layouts("70000 band at offsets +-32767", &A);
        check_sell_layouts("70000 band at offsets +-32767", &A);
        check_matrix("70000 band at offsets +-32767", &A);
        csr_band(70000, past, 4, &A);
        check_matrix("70000 band at offsets +-32768", &A);
        char *saved = env_swap("SPK_ELL_INDEX", "32");
        check_generated("poisson3d:9");
        env_restore("SPK_ELL_INDEX", saved);
    }

    /* and its rows per thread: two on narrow rows by default, either forced by SPK_ELL_ROWS;
     * odd and even row counts (an odd one has unaligned slots in odd columns and a last row
     * alone), widths on both sides of SPK_ELL_PAIR_WIDTH, padding, empty rows */
    {
        const char *specs[] = {"poisson3d:9", "poisson2d:31", "poisson2d:32", "poisson3d27:5",
                               "elasticity3d:3"};
        for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++)
            if (spk_generate_csr(ctx, specs[k], &A) == SPK_OK) {
                check_ell_layouts(specs[k], &A);
                check_sell_layouts(specs[k], &A);
                spk_csr_free(&A);
            }
        const int64_t rows_n[] = {1, 2, 3, 97, 4096 + 97, 4096 + 98};
        for (size_t k = 0; k < sizeof rows_n / sizeof rows_n[0]; k++) {
            char name[64];
            snprintf(name, sizeof name, "random %lldx%lld avg 4", (long long)rows_n[k],
                     (long long)rows_n[k]);
            t_random_csr(ctx, rows_n[k], rows_n[k], 4, 40 + k, &A);
            check_ell_layouts(name, &A);
            check_sell_layouts(name, &A);
            spk_csr_free(&A);
        }
        char *saved = env_swap("SPK_ELL_ROWS", "2");
        check_generated("poisson3d27:5");
        check_random(4096 + 97, 4096 + 97, 12, 50);
        env_restore("SPK_ELL_ROWS", saved);
    }

    check_inputs();
    if (dev == SPK_DEVICE_CPU)
        check_nomem();
    check_csr_kernel_env();

    spk_context_destroy(ctx);
    return t_done(dev == SPK_DEVICE_CPU ? "spmv_cpu" : "spmv_gpu");
}
