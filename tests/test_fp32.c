/* tests/test_fp32.c -- the fp32 twins of the SpMV rows (spk_spmv_backend.fp32) of one device
 * (--device cpu|gpu): every row of the registry on that device that has a twin, whatever its
 * name. A twin is no registry row and has no twin of its own, has its row's format and
 * device, and is named as its row with "32" before the device ("ell-cpu": "ell32-cpu"). On a
 * Poisson stencil, power-law rows, a matrix with empty rows, one with a row long enough for
 * HYB's tail, and n = 0 and 1, with values whose rounding to float changes them:
 *   - y = alpha A32 x + beta y against the fp64 row run on A's values rounded to float: the
 *     same bits on the CPU (the same loop, in the same order), 1e-14 relative on a GPU;
 *     against the fp64 row on A itself, 1e-6 relative (each a_ij moves by 2^-24 at most);
 *     beta = 0 ignores a NaN y; an x with infinities and NaNs gives NaN where that reference
 *     does (a padding or empty slot adds nothing);
 *   - spmv_dot (where the twin has one): y and x'y, and nothing written under skip; the
 *     CPU DIA twin's plain row kernel gives the bits of the one chosen for this CPU;
 *   - update with new values of the same pattern allocates nothing and the products follow;
 *     update_device (a GPU twin that has one) from device values, its second call allocating
 *     nothing;
 *   - a twin made from its row's device layout (setup_from, the GPU twins): the same products,
 *     refill after the row's update (no allocation), a value past FLT_MAX reported;
 * then mixed-precision solves whose inner operator is each twin (the automatic format, and
 * each format asked for): precision_reason names the twin, the true residual meets rtol. A
 * context on which mixed is not built yet (SPK_ERR_UNSUPPORTED) skips the solves, saying so. */
#include "util.h"
#include "../kernels/formats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A GPU kernel may sum a row in another order than its fp64 row: the bound on the rounded
 * matrix there (the CPU's is equality). */
#define GPU_TOL 1e-14
/* Each a_ij rounded to float moves by 2^-24 ~ 6e-8 relative: y by a few of those. */
#define FP64_TOL 1e-6

static spk_device dev;
static spk_context *ctx;
static const spk_vec_ops *ops;

/* ---- matrices -------------------------------------------------------------------------- */

/* Values scaled by factors over 1e-2 .. 1e2 with random signs: almost none stays exact in
 * float (a generated stencil's integers would). */
static void perturb(spk_csr *A, uint64_t seed)
{
    for (int64_t p = 0; p < A->nnz; p++)
        A->val[p] *= 1.0 / 3.0 + pow(10.0, 2.0 * t_randu(&seed));
}

/* A copy of A (same pattern) with values f(A's): rounded to float and back when `round`, else
 * -2 a + 0.1 (new values for an update). */
static void copy_values(const spk_csr *A, int round, spk_csr *B)
{
    if (spk_csr_alloc(ctx, A->nrows, A->ncols, A->nnz, B) != SPK_OK) {
        fprintf(stderr, "copy_values: %s\n", spk_last_error(ctx));
        exit(2);
    }
    memcpy(B->rowptr, A->rowptr, ((size_t)A->nrows + 1) * sizeof *B->rowptr);
    if (A->nnz)
        memcpy(B->colind, A->colind, (size_t)A->nnz * sizeof *B->colind);
    for (int64_t p = 0; p < A->nnz; p++)
        B->val[p] = round ? (double)(float)A->val[p] : -2.0 * A->val[p] + 0.1;
}

/* n x n tridiagonal with rows i % 3 == 1 left empty: DIA's fix rows, ELL's padding. */
static void csr_tri_holes(int64_t n, spk_csr *A)
{
    if (spk_csr_alloc(ctx, n, n, 3 * n, A) != SPK_OK) {
        fprintf(stderr, "csr_tri_holes: %s\n", spk_last_error(ctx));
        exit(2);
    }
    uint64_t s = 19;
    int64_t p = 0;
    for (int64_t i = 0; i < n; i++) {
        A->rowptr[i] = p;
        for (int64_t j = i - 1; j <= i + 1 && i % 3 != 1; j++)
            if (j >= 0 && j < n) {
                A->colind[p] = (int32_t)j;
                A->val[p++] = j == i ? 4.0 + t_randu(&s) : t_randu(&s);
            }
    }
    A->rowptr[n] = p;
    A->nnz = p;
}

/* n x n pentadiagonal (offsets -2 .. 2) with row `lng` holding every column: HYB's ELL part
 * keeps the band and its COO tail the long row's rest. */
static void csr_long_row(int64_t n, int64_t lng, spk_csr *A)
{
    if (spk_csr_alloc(ctx, n, n, 5 * n + n, A) != SPK_OK) {
        fprintf(stderr, "csr_long_row: %s\n", spk_last_error(ctx));
        exit(2);
    }
    uint64_t s = 23;
    int64_t p = 0;
    for (int64_t i = 0; i < n; i++) {
        A->rowptr[i] = p;
        const int64_t lo = i == lng ? 0 : i - 2, hi = i == lng ? n - 1 : i + 2;
        for (int64_t j = lo; j <= hi; j++)
            if (j >= 0 && j < n) {
                A->colind[p] = (int32_t)j;
                A->val[p++] = t_randu(&s);
            }
    }
    A->rowptr[n] = p;
    A->nnz = p;
}

/* ---- products through device vectors -------------------------------------------------- */

static double *host_random(int64_t n, uint64_t seed)
{
    double *v = malloc(((size_t)n + 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = t_randu(&seed);
    v[n] = 0.0;
    return v;
}

/* y = alpha A x + beta y0 by `be` on `state`, x, y0 and the result y on the host. */
static spk_status product(const spk_spmv_backend *be, const void *state, const spk_csr *A,
                          double alpha, const double *x, double beta, const double *y0,
                          double *y)
{
    const int64_t m = A->nrows, n = A->ncols;
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
        st = ops->download(ctx, m, d_y, y);
    if (!st)
        st = ops->sync(ctx);
    ops->free(ctx, d_x);
    ops->free(ctx, d_y);
    return st;
}

/* got against the reference on the rounded matrix: NaN where it is NaN, else the same bits
 * (CPU) or, on a GPU, the same infinity or within GPU_TOL of the largest finite |ref|. */
static int matches_rounded(const double *got, const double *ref, int64_t n)
{
    double scale = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(ref[i]) && fabs(ref[i]) > scale)
            scale = fabs(ref[i]);
    for (int64_t i = 0; i < n; i++) {
        if (isnan(ref[i]) || isnan(got[i])) {
            if (!(isnan(ref[i]) && isnan(got[i])))
                return 0;
        } else if (dev == SPK_DEVICE_CPU) {
            if (memcmp(&got[i], &ref[i], sizeof got[i]) != 0)
                return 0;
        } else if (got[i] != ref[i] &&
                   !(fabs(got[i] - ref[i]) <= GPU_TOL * (scale > 0.0 ? scale : 1.0))) {
            return 0;
        }
    }
    return 1;
}

/* One twin on one matrix: the states of the twin on A, the fp64 row on A's rounded values
 * (R) and on A. */
typedef struct case_ {
    const char             *mname;
    const spk_spmv_backend *be, *tw;
    const spk_csr          *A, *R;
    void                   *s32, *sR, *s64;
} case_;

/* The products of the twin for (alpha, beta), x finite or with Inf and NaN. */
static void check_products(const case_ *c, int special)
{
    static const double ab[3][2] = {{1.0, 0.0}, {-0.7, 1.3}, {0.5, 1.0}};
    const int64_t m = c->A->nrows, n = c->A->ncols;
    double *x = host_random(n, 11), *y0 = host_random(m, 12);
    double *got = malloc(((size_t)m + 1) * sizeof *got), *ref = malloc(((size_t)m + 1) * sizeof *ref),
           *r64 = malloc(((size_t)m + 1) * sizeof *r64);
    if (special)                              /* every 5th x infinite, every 11th NaN */
        for (int64_t j = 0; j < n; j++)
            x[j] = j % 11 == 3 ? NAN : j % 5 == 1 ? (j % 2 ? INFINITY : -INFINITY) : x[j];
    for (int k = 0; k < 3; k++) {
        const double alpha = ab[k][0], beta = ab[k][1];
        if (beta == 0.0)
            for (int64_t i = 0; i < m; i++)
                y0[i] = NAN;                  /* beta 0 must not read the old y */
        else
            for (int64_t i = 0; i < m; i++)
                y0[i] = t_randu(&(uint64_t){(uint64_t)i + 5});
        spk_status st = product(c->tw, c->s32, c->A, alpha, x, beta, y0, got);
        if (!st)
            st = product(c->be, c->sR, c->R, alpha, x, beta, y0, ref);
        if (!st)
            st = product(c->be, c->s64, c->A, alpha, x, beta, y0, r64);
        T_CHECK(st == SPK_OK, "%s on %s: %s", c->tw->name, c->mname, spk_last_error(ctx));
        if (st)
            continue;
        T_CHECK(matches_rounded(got, ref, m), "%s on %s (a %g, b %g, x %s): not %s's %s on the "
                "rounded values", c->tw->name, c->mname, alpha, beta,
                special ? "with inf and nan" : "finite", c->be->name,
                dev == SPK_DEVICE_CPU ? "bits" : "product");
        if (special)
            continue;
        int nan = 0;
        for (int64_t i = 0; i < m; i++)
            nan |= isnan(got[i]);
        T_CHECK(!nan, "%s on %s (a %g, b %g): NaN in y", c->tw->name, c->mname, alpha, beta);
        const double e = t_rel_diff(got, r64, m);
        T_CHECK(e <= FP64_TOL, "%s on %s (a %g, b %g): %.2e from %s on A", c->tw->name,
                c->mname, alpha, beta, e, c->be->name);
        if (m >= 100 && k == 0)
            T_CHECK(e > 0.0, "%s on %s: the product is the fp64 one: no value was rounded",
                    c->tw->name, c->mname);
    }
    free(x);
    free(y0);
    free(got);
    free(ref);
    free(r64);
}

/* spmv_dot: y with spmv's result (bits on the CPU), x'y to 1e-12 of sum |x_i y_i|, nothing
 * written under skip. */
static void check_spmv_dot(const case_ *c)
{
    const int64_t n = c->A->nrows;
    if (!c->tw->spmv_dot || n != c->A->ncols)
        return;
    double *x = host_random(n, 31), *ref = malloc(((size_t)n + 1) * sizeof *ref),
           *got = malloc(((size_t)n + 1) * sizeof *got), *zero = calloc((size_t)n + 1, sizeof *zero);
    spk_status st = product(c->tw, c->s32, c->A, 1.0, x, 0.0, zero, ref);
    double want = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        want += x[i] * ref[i];
        scale += fabs(x[i] * ref[i]);
        got[i] = NAN;
    }
    const double poison = -12345.0;
    double out[2] = {NAN, NAN}, out_skip = NAN;
    if (!st)
        st = t_spmv_dot(ctx, c->tw, c->s32, n, x, got, out, poison, &out_skip);
    T_CHECK(st == SPK_OK, "%s spmv_dot on %s: %s", c->tw->name, c->mname, spk_last_error(ctx));
    if (!st) {
        T_CHECK(matches_rounded(got, ref, n), "%s spmv_dot on %s: y is not spmv's",
                c->tw->name, c->mname);
        T_CHECK(fabs(out[0] - want) <= 1e-12 * (scale > 0.0 ? scale : 1.0),
                "%s spmv_dot on %s: x'y = %.17g, from y %.17g", c->tw->name, c->mname, out[0],
                want);
        T_CHECK(memcmp(&out[0], &out[1], sizeof out[0]) == 0, "%s spmv_dot on %s: two calls "
                "gave %.17g and %.17g", c->tw->name, c->mname, out[0], out[1]);
        T_CHECK(out_skip == poison, "%s spmv_dot on %s: wrote out with skip set", c->tw->name,
                c->mname);
    }
    free(x);
    free(ref);
    free(got);
    free(zero);
}

/* The CPU's DIA twin has two row kernels, as dia-cpu has (the one for this CPU runs in spmv
 * above): the plain one gives the same bits, x finite or not, in spk_dia_spmv_host and in
 * the fused spk_dia_spmv_dot_host. */
static void check_dia_kernels(const case_ *c)
{
    if (c->tw->device != SPK_DEVICE_CPU || c->tw->format != SPK_FMT_DIA)
        return;
    const spk_dia_fmt *f32 = c->s32, *fR = c->sR;
    const int64_t m = c->A->nrows, n = c->A->ncols;
    double *x = host_random(n, 17), *y0 = host_random(m, 18);
    double *ref = malloc(((size_t)m + 1) * sizeof *ref), *got = malloc(((size_t)m + 1) * sizeof *got);
    T_CHECK(f32->val32 && !f32->val && fR->val && !fR->val32, "%s on %s: the layout's values",
            c->tw->name, c->mname);
    for (int special = 0; special < 2; special++) {
        if (special)
            for (int64_t j = 0; j < n; j++)
                x[j] = j % 7 == 2 ? NAN : j % 4 == 1 ? (j % 2 ? INFINITY : -INFINITY) : x[j];
        for (int plain = 0; plain < 2; plain++) {
            memcpy(ref, y0, (size_t)m * sizeof *ref);
            memcpy(got, y0, (size_t)m * sizeof *got);
            spk_dia_spmv_host(fR, 1, -0.7, x, 1.3, ref);
            spk_dia_spmv_host(f32, plain, -0.7, x, 1.3, got);
            T_CHECK(matches_rounded(got, ref, m), "%s (%s kernel) on %s, x %s: not the plain "
                    "fp64 kernel's bits on the rounded values", c->tw->name,
                    plain ? "plain" : spk_dia_cpu_kernel(), c->mname,
                    special ? "with inf and nan" : "finite");
            if (m != n || special)
                continue;
            double pq = spk_dia_spmv_dot_host(f32, plain, x, got), pq_ref = NAN;
            spk_dia_spmv_host(fR, 1, 1.0, x, 0.0, ref);
            ops->dot(ctx, n, x, ref, &pq_ref);
            T_CHECK(matches_rounded(got, ref, m) && memcmp(&pq, &pq_ref, sizeof pq) == 0,
                    "%s spmv_dot (%s kernel) on %s: p'q %.17g, plain fp64 then dot %.17g",
                    c->tw->name, plain ? "plain" : spk_dia_cpu_kernel(), c->mname, pq, pq_ref);
        }
    }
    free(x);
    free(y0);
    free(ref);
    free(got);
}

/* y = A x of the twin on s32 against the fp64 row on a fresh layout of B rounded. */
static void check_against_fresh(const case_ *c, const spk_csr *B, const char *what)
{
    const int64_t m = B->nrows;
    spk_csr Br;
    copy_values(B, 1, &Br);
    void *s = NULL;
    double *x = host_random(B->ncols, 3), *zero = calloc((size_t)m + 1, sizeof *zero),
           *got = malloc(((size_t)m + 1) * sizeof *got), *ref = malloc(((size_t)m + 1) * sizeof *ref);
    spk_status st = c->be->setup(ctx, &Br, &s);
    if (!st)
        st = product(c->be, s, &Br, 1.0, x, 0.0, zero, ref);
    if (!st)
        st = product(c->tw, c->s32, B, 1.0, x, 0.0, zero, got);
    T_CHECK(st == SPK_OK, "%s %s on %s: %s", c->tw->name, what, c->mname, spk_last_error(ctx));
    if (!st)
        T_CHECK(matches_rounded(got, ref, m), "%s on %s after %s: not %s on the new rounded "
                "values", c->tw->name, c->mname, what, c->be->name);
    c->be->destroy(s);
    spk_csr_free(&Br);
    free(x);
    free(zero);
    free(got);
    free(ref);
}

/* New values of the same pattern: update (host) allocates nothing; update_device (a GPU
 * twin's) from device values, with A's stale host values beside them. */
static void check_updates(case_ *c)
{
    spk_csr B, C;
    copy_values(c->A, 0, &B);
    copy_values(&B, 0, &C);
    uint64_t before = spk_context_alloc_count(ctx);
    spk_status st = c->tw->update(ctx, c->s32, &B);
    T_CHECK(st == SPK_OK, "%s update on %s: %s", c->tw->name, c->mname, spk_last_error(ctx));
    T_CHECK(spk_context_alloc_count(ctx) == before, "%s update on %s allocated %llu times",
            c->tw->name, c->mname, (unsigned long long)(spk_context_alloc_count(ctx) - before));
    if (!st)
        check_against_fresh(c, &B, "update");
    if (c->tw->update_device && dev != SPK_DEVICE_CPU) {
        double *d_val = NULL;
        const int64_t nnz = C.nnz;
        st = ops->alloc(ctx, nnz ? nnz : 1, &d_val);
        if (!st && nnz)
            st = ops->upload(ctx, nnz, C.val, d_val);
        if (!st)
            st = c->tw->update_device(ctx, c->s32, &B, d_val);   /* B: the pattern, stale */
        if (!st)
            st = ops->sync(ctx);
        T_CHECK(st == SPK_OK, "%s update_device on %s: %s", c->tw->name, c->mname,
                spk_last_error(ctx));
        if (!st)
            check_against_fresh(c, &C, "update_device");
        /* the second: its index data made already, and A's values back from the device */
        before = spk_context_alloc_count(ctx);
        if (!st && nnz)
            st = ops->upload(ctx, nnz, c->A->val, d_val);
        if (!st)
            st = c->tw->update_device(ctx, c->s32, &C, d_val);
        if (!st)
            st = ops->sync(ctx);
        T_CHECK(st == SPK_OK && spk_context_alloc_count(ctx) == before,
                "%s second update_device on %s: %s, %llu allocations", c->tw->name, c->mname,
                spk_status_str(st), (unsigned long long)(spk_context_alloc_count(ctx) - before));
        if (!st)
            check_against_fresh(c, c->A, "a second update_device");
        ops->free(ctx, d_val);
    }
    spk_csr_free(&B);
    spk_csr_free(&C);
}

/* A twin made on the device from its row's layout (setup_from, the GPU's): the same products
 * as the twin of setup on the same values; refill after the row's update follows it and
 * allocates nothing; a value out of fp32's range is reported (fits 0); a twin's own state is
 * refused as a row. */
static void check_spmv_dot32(const spk_spmv_backend *tw, const void *s32, const spk_csr *A,
                             const char *mname);

static void check_from_row(const case_ *c)
{
    const spk_spmv_backend *tw = c->tw;
    T_CHECK(tw->refill != NULL, "%s: setup_from without refill", tw->name);
    case_ f = *c;
    int fits = 0;
    spk_status st = tw->setup_from(ctx, c->s64, &f.s32, &fits);
    T_CHECK(st == SPK_OK && fits == 1, "%s setup_from on %s: %s, fits %d", tw->name, c->mname,
            spk_last_error(ctx), fits);
    if (st)
        return;
    check_products(&f, 0);
    check_products(&f, 1);
    check_spmv_dot(&f);
    check_spmv_dot32(tw, f.s32, f.A, f.mname);
    void *twice = NULL;
    T_CHECK(tw->setup_from(ctx, f.s32, &twice, &fits) == SPK_ERR_ARG && !twice,
            "%s: setup_from took a twin's state as its row's", tw->name);
    spk_csr B;
    copy_values(c->A, 0, &B);
    st = c->be->update(ctx, c->s64, &B);
    const uint64_t before = spk_context_alloc_count(ctx);
    if (!st)
        st = tw->refill(ctx, f.s32, c->s64, &fits);
    T_CHECK(st == SPK_OK && fits == 1 && spk_context_alloc_count(ctx) == before,
            "%s refill on %s: %s, fits %d, %llu allocations", tw->name, c->mname,
            spk_status_str(st), fits, (unsigned long long)(spk_context_alloc_count(ctx) - before));
    if (!st)
        check_against_fresh(&f, &B, "refill");
    if (B.nnz > 0) {                         /* one value past FLT_MAX: fits 0 */
        B.val[B.nnz / 2] = 1e39;
        st = c->be->update(ctx, c->s64, &B);
        if (!st)
            st = tw->refill(ctx, f.s32, c->s64, &fits);
        T_CHECK(st == SPK_OK && fits == 0, "%s refill on %s with 1e39: %s, fits %d", tw->name,
                c->mname, spk_status_str(st), fits);
    }
    T_CHECK(c->be->update(ctx, c->s64, c->A) == SPK_OK, "%s: A's values back", c->be->name);
    tw->destroy(f.s32);
    spk_csr_free(&B);
}

/* spmv_dot32 (the ELL and BSR twins on a GPU, csr32-cpu): x and y in float. y against the
 * twin's fp64-vector product on the same float x, rounded once (the same bits on the CPU,
 * within an ulp and GPU_TOL on a GPU); x'y over the rounded y to 1e-12 of sum |x_i y_i|, the
 * same bits twice; nothing written under skip. */
static void check_spmv_dot32(const spk_spmv_backend *tw, const void *s32, const spk_csr *A,
                             const char *mname)
{
    const int64_t n = A->nrows;
    if (!tw->spmv_dot32 || n != A->ncols)
        return;
    float *x32 = calloc((size_t)n + 1, sizeof *x32), *y32 = calloc((size_t)n + 1, sizeof *y32);
    double *x0 = host_random(n, 41), *x = malloc(((size_t)n + 1) * sizeof *x),
           *zero = calloc((size_t)n + 1, sizeof *zero), *ref = malloc(((size_t)n + 1) * sizeof *ref);
    for (int special = 0; special < 2; special++) {
        for (int64_t i = 0; i < n; i++) {
            x32[i] = (float)(x0[i] - 0.5);
            if (special)                          /* every 11th NaN, every 5th infinite */
                x32[i] = i % 11 == 3 ? NAN : i % 5 == 1 ? (i % 2 ? INFINITY : -INFINITY) : x32[i];
            x[i] = (double)x32[i];
            y32[i] = NAN;
        }
        const double poison = -12345.0;
        double out[2] = {NAN, NAN}, out_skip = NAN;
        spk_status st = product(tw, s32, A, 1.0, x, 0.0, zero, ref);
        if (!st)
            st = t_spmv_dot32(ctx, tw, s32, n, x32, y32, out, poison, &out_skip);
        T_CHECK(st == SPK_OK, "%s spmv_dot32 on %s: %s", tw->name, mname, spk_last_error(ctx));
        if (st)
            continue;
        double want = 0.0, scale = 0.0, yscale = 0.0;
        int bad = 0;
        for (int64_t i = 0; i < n; i++)
            yscale = isfinite(ref[i]) && fabs(ref[i]) > yscale ? fabs(ref[i]) : yscale;
        for (int64_t i = 0; i < n && !bad; i++) {
            const float r32 = (float)ref[i];
            if (isnan(ref[i]) || isnan(y32[i]))
                bad = !(isnan(ref[i]) && isnan(y32[i]));
            else if (dev == SPK_DEVICE_CPU || isinf(ref[i]))
                bad = memcmp(&y32[i], &r32, sizeof r32) != 0;
            else
                bad = !(fabs((double)y32[i] - ref[i]) <= 0x1p-23 * fabs(ref[i]) + GPU_TOL * yscale);
            if (bad)
                T_CHECK(0, "%s spmv_dot32 on %s (x %s): y[%lld] = %.9g, the fp64-vector product "
                        "%.17g", tw->name, mname, special ? "with inf and nan" : "finite",
                        (long long)i, (double)y32[i], ref[i]);
            want += (double)x32[i] * (double)y32[i];
            scale += fabs((double)x32[i] * (double)y32[i]);
        }
        T_CHECK(out_skip == poison, "%s spmv_dot32 on %s: wrote out with skip set", tw->name,
                mname);
        if (special)
            continue;
        T_CHECK(fabs(out[0] - want) <= 1e-12 * (scale > 0.0 ? scale : 1.0),
                "%s spmv_dot32 on %s: x'y = %.17g, from y %.17g", tw->name, mname, out[0], want);
        T_CHECK(memcmp(&out[0], &out[1], sizeof out[0]) == 0, "%s spmv_dot32 on %s: two calls "
                "gave %.17g and %.17g", tw->name, mname, out[0], out[1]);
    }
    free(x32);
    free(y32);
    free(x0);
    free(x);
    free(zero);
    free(ref);
}

/* ---- each twin ------------------------------------------------------------------------- */

/* What a twin is, apart from its products: outside the registry, no twin of its own, its
 * row's format and device, its row's name with "32" before the device. */
static void check_identity(const spk_spmv_backend *be)
{
    const spk_spmv_backend *tw = be->fp32;
    size_t count;
    const spk_spmv_backend *const *all = spk_backend_all(&count);
    int listed = 0;
    for (size_t i = 0; i < count; i++)
        listed |= all[i] == tw;
    T_CHECK(!listed, "%s is in the registry", tw->name);
    T_CHECK(tw->fp32 == NULL, "%s has an fp32 twin of its own", tw->name);
    T_CHECK(tw->format == be->format && tw->device == be->device,
            "%s: format %s on %s, its row %s's %s on %s", tw->name, spk_format_str(tw->format),
            spk_device_str(tw->device), be->name, spk_format_str(be->format),
            spk_device_str(be->device));
    char want[64];
    const char *dash = strchr(be->name, '-');
    snprintf(want, sizeof want, "%.*s32%s", dash ? (int)(dash - be->name) : 0, be->name,
             dash ? dash : "");
    T_CHECK(dash && strcmp(tw->name, want) == 0, "the twin of %s is named %s, not %s", be->name,
            tw->name, want);
    T_CHECK(tw->setup && tw->spmv && tw->destroy && tw->update, "%s: a row without setup, "
            "spmv, destroy or update", tw->name);
}

static void check_twin_on(const spk_spmv_backend *be, const char *mname, const spk_csr *A)
{
    case_ c = {.mname = mname, .be = be, .tw = be->fp32, .A = A};
    spk_csr R;
    copy_values(A, 1, &R);
    c.R = &R;
    const spk_status st64 = be->setup(ctx, A, &c.s64);
    const spk_status st32 = c.tw->setup(ctx, A, &c.s32);
    /* a layout the fp64 row refuses (ELL's fill, DIA's diagonals) the twin refuses too */
    T_CHECK(st32 == st64, "%s on %s: setup %s, %s's %s: %s", c.tw->name, mname,
            spk_status_str(st32), be->name, spk_status_str(st64), spk_last_error(ctx));
    if (st64 == SPK_OK && st32 == SPK_OK) {
        const spk_status stR = be->setup(ctx, &R, &c.sR);
        T_CHECK(stR == SPK_OK, "%s on %s rounded: %s", be->name, mname, spk_last_error(ctx));
        if (!stR) {
            check_products(&c, 0);
            check_products(&c, 1);
            check_spmv_dot(&c);
            check_spmv_dot32(c.tw, c.s32, c.A, mname);
            check_dia_kernels(&c);
            check_updates(&c);
            if (c.tw->setup_from)
                check_from_row(&c);
        }
    }
    be->destroy(c.s64);
    c.tw->destroy(c.s32);
    be->destroy(c.sR);
    spk_csr_free(&R);
}

static void test_twins(void)
{
    typedef struct { const char *name, *spec; int rand_avg; } mat;
    static const mat mats[] = {
        {"poisson3d:30", "poisson3d:30", 0},  /* 27000 rows: DIA's chunks, OpenMP's regions */
        {"poisson2d:9", "poisson2d:9", 0},    /* 81 rows: one chunk, one thread             */
        {"powerlaw:4000:8", "powerlaw:4000:8", 0},
        {"lame3d:6", "lame3d:6", 0},          /* 3 x 3 blocks: BSR                          */
        {"random 5 x 5 blocks", NULL, -5},    /* BSR at d = 5, empty block rows             */
        {"random 3000, empty rows", NULL, 1}, /* row lengths 0 .. 2                         */
        {"tridiagonal, empty rows", NULL, -1},
        {"pentadiagonal, a full row", NULL, -2},
        {"1 x 1", NULL, -3},
        {"0 x 0", NULL, -4},
    };
    size_t count;
    const spk_spmv_backend *const *all = spk_backend_all(&count);
    int twins = 0;
    for (size_t b = 0; b < count; b++) {
        const spk_spmv_backend *be = all[b];
        if (be->device != dev || !be->fp32)
            continue;
        twins++;
        check_identity(be);
        for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
            spk_csr A;
            memset(&A, 0, sizeof A);
            spk_status st = SPK_OK;
            if (mats[k].spec)
                st = spk_generate_csr(ctx, mats[k].spec, &A);
            else if (mats[k].rand_avg > 0)
                t_random_csr(ctx, 3000, 3000, mats[k].rand_avg, 9, &A);
            else if (mats[k].rand_avg == -1)
                csr_tri_holes(10007, &A);
            else if (mats[k].rand_avg == -2)
                csr_long_row(2000, 7, &A);
            else if (mats[k].rand_avg == -5)
                t_block_csr(ctx, 301, 301, 5, 4, 12, &A);
            else if ((st = spk_csr_alloc(ctx, mats[k].rand_avg == -3, mats[k].rand_avg == -3,
                                         mats[k].rand_avg == -3, &A)) == SPK_OK && A.nrows) {
                A.rowptr[1] = 1;
                A.colind[0] = 0;
                A.val[0] = 2.5;
            }
            T_CHECK(st == SPK_OK, "%s: %s", mats[k].name, spk_last_error(ctx));
            if (st)
                continue;
            perturb(&A, 100 + k);
            check_twin_on(be, mats[k].name, &A);
            spk_csr_free(&A);
        }
    }
    printf("  %d rows on the %s have an fp32 twin\n", twins, spk_device_str(dev));
    if (dev == SPK_DEVICE_CPU)
        T_CHECK(twins > 0, "no CPU row has an fp32 twin");
}

/* ---- mixed-precision solves on the twins ---------------------------------------------- */

/* CG + Jacobi in mixed precision with A in `fmt` (AUTO: the format chosen): the operator of
 * the inner solves is the twin of the row A is prepared in, which precision_reason names. 0:
 * mixed is not built on this context. */
static int check_mixed_solve(spk_matrix *A, spk_format fmt, const double *b, double rtol)
{
    const int64_t n = A->csr.nrows;
    double *x = calloc((size_t)n, sizeof *x);
    spk_options o;
    spk_options_default(&o);
    o.method = SPK_METHOD_CG;
    o.precond = SPK_PRECOND_JACOBI;
    o.rtol = rtol;
    o.format = fmt;
    o.precision = SPK_PRECISION_MIXED;
    spk_result r;
    const spk_status st = spk_solve(ctx, A, b, x, &o, &r);
    if (st == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "mixed")) {
        printf("  mixed solves skipped: %s\n", spk_last_error(ctx));
        free(x);
        return 0;
    }
    T_CHECK(st == SPK_OK, "mixed in %s: %s", spk_format_str(fmt), spk_last_error(ctx));
    if (!st) {
        const spk_spmv_backend *be = spk_backend_find(r.format, dev);
        const char *tw = be && be->fp32 ? be->fp32->name : "(no twin)";
        const double tr = t_true_rel(A, b, x);
        T_CHECK(fmt == SPK_FMT_AUTO || r.format == fmt, "asked for %s, ran %s",
                spk_format_str(fmt), spk_format_str(r.format));
        T_CHECK(r.precision == SPK_PRECISION_MIXED && r.refinement_steps >= 1 &&
                strstr(r.precision_reason, tw), "%s: mixed on %s: %s", spk_format_str(fmt), tw,
                r.precision_reason);
        T_CHECK(r.reason > 0 && tr <= rtol, "%s: %s, true rel %.2e (rtol %.0e)",
                spk_format_str(r.format), spk_reason_str(r.reason), tr, rtol);
        printf("  mixed %-4s (%-4s) %4lld its, %lld steps, true rel %.2e: %s\n",
               spk_format_str(fmt), spk_format_str(r.format), (long long)r.iterations,
               (long long)r.refinement_steps, tr, r.precision_reason);
    }
    free(x);
    return 1;
}

/* Every format that holds A: its twin's mixed solve. */
static void mixed_solves_on(const char *spec)
{
    spk_matrix *A = t_matrix(ctx, spec);
    const int64_t n = A->csr.nrows;
    double *b = t_rand_vec(n, 7);
    spk_matrix_info in;
    T_CHECK(spk_matrix_get_info(A, &in) == SPK_OK, "%s", spk_last_error(ctx));
    /* the automatic format on a stencil: DIA on the CPU, whose twin moves 4 bytes a slot */
    if (check_mixed_solve(A, SPK_FMT_AUTO, b, 1e-10)) {
        if (dev == SPK_DEVICE_CPU && strncmp(spec, "poisson3d", 9) == 0)
            T_CHECK(spk_matrix_format(A) == SPK_FMT_DIA, "poisson3d on the CPU is in %s",
                    spk_format_str(spk_matrix_format(A)));
        size_t count;
        const spk_spmv_backend *const *all = spk_backend_all(&count);
        for (size_t k = 0; k < count; k++)
            if (all[k]->device == dev && all[k]->fp32 && t_format_fits(dev, all[k]->format, &in))
                check_mixed_solve(A, all[k]->format, b, 1e-10);
    }
    spk_matrix_destroy(A);
    free(b);
}

static void test_mixed_solves(void)
{
    mixed_solves_on("poisson3d:16");
    mixed_solves_on("lame3d:8");          /* 3 x 3 blocks: the BSR twin too */
}

int main(int argc, char **argv)
{
    dev = t_device_from_args(argc, argv);
    ctx = t_context(dev);
    ops = spk_vec_ops_for(dev);
    test_twins();
    test_mixed_solves();
    spk_context_destroy(ctx);
    return t_done(dev == SPK_DEVICE_CPU ? "fp32_cpu" : "fp32_gpu");
}
