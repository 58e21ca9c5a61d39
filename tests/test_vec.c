/* tests/test_vec.c -- every operation of one device's vector-ops table (--device cpu|gpu)
 * against plain host loops on seeded random vectors: sizes around the warp and block
 * boundaries, an odd size past a thousand and 2^20. Reductions are compared with a long-double
 * host sum, scaled by sum |x_i y_i| (the size of the rounding error any order of summation
 * makes); fused steps are also compared with the same math done by the unfused ops; dot2 and
 * cg_update must give the same bits twice; invert must find the first bad entry. */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-13

static spk_context *ctx;
static const spk_vec_ops *ops;
/* Bit-for-bit repeatability is promised by the CUDA table (fixed-order two-stage reductions);
 * an OpenMP reduction combines the threads' sums in arrival order, so the CPU table is not
 * held to it. */
static int check_bits;

static const int64_t sizes[] = {0, 1, 2, 7, 31, 32, 33, 255, 257, 1000 + 97, 4099, 65537, 1 << 20};

#define T_OK(expr) T_CHECK((expr) == SPK_OK, "%s", spk_last_error(ctx))

/* ---- host and device vectors -------------------------------------------------------------- */

static double *h_new(int64_t n)
{
    double *h = calloc((size_t)(n > 0 ? n : 1), sizeof *h);
    if (!h) {
        fprintf(stderr, "test_vec: out of host memory\n");
        exit(2);
    }
    return h;
}

/* Uniform in [lo, hi). */
static double *h_rand(int64_t n, uint64_t seed, double lo, double hi)
{
    double *h = h_new(n);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 12345;
    for (int64_t i = 0; i < n; i++)
        h[i] = lo + (hi - lo) * 0.5 * (t_randu(&s) + 1.0);
    return h;
}

static double *h_dup(int64_t n, const double *a)
{
    double *h = h_new(n);
    if (n > 0)
        memcpy(h, a, (size_t)n * sizeof *h);
    return h;
}

/* A device vector holding h (or zeros when h is NULL); exits on failure (harness error). */
static double *d_new(int64_t n, const double *h)
{
    double *d = NULL;
    if (ops->alloc(ctx, n, &d) != SPK_OK || (h && ops->upload(ctx, n, h, d) != SPK_OK)) {
        fprintf(stderr, "test_vec: device vector of %lld: %s\n", (long long)n, spk_last_error(ctx));
        exit(2);
    }
    return d;
}

/* A fresh host copy of device vector d. */
static double *d_get(int64_t n, const double *d)
{
    double *h = h_new(n);
    if (ops->download(ctx, n, d, h) != SPK_OK) {
        fprintf(stderr, "test_vec: download of %lld: %s\n", (long long)n, spk_last_error(ctx));
        exit(2);
    }
    return h;
}

static int same_bits(const double *a, const double *b, int64_t n)
{
    return n == 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

/* |got - ref| <= TOL * scale (scale: sum of |terms| of the reduction). */
static int close_sum(double got, long double ref, long double scale)
{
    long double err = fabsl((long double)got - ref);
    return err <= TOL * scale || (scale == 0 && got == 0);
}

static long double ref_dot(int64_t n, const double *x, const double *y, long double *scale)
{
    long double s = 0, a = 0;
    for (int64_t i = 0; i < n; i++) {
        s += (long double)x[i] * y[i];
        a += fabsl((long double)x[i] * y[i]);
    }
    *scale = a;
    return s;
}

/* ---- the tests, one function per group of ops --------------------------------------------- */

static void test_memory(int64_t n)
{
    double *x = h_rand(n, 1 + n, -1, 1), *zero = h_new(n);
    double *dx = d_new(n, NULL);
    double *h = d_get(n, dx);
    T_CHECK(same_bits(h, zero, n), "n=%lld: alloc is not zero-filled", (long long)n);
    free(h);

    T_OK(ops->upload(ctx, n, x, dx));
    h = d_get(n, dx);
    T_CHECK(same_bits(h, x, n), "n=%lld: upload/download changed bits", (long long)n);
    free(h);

    double *dy = d_new(n, NULL);
    T_OK(ops->copy(ctx, n, dx, dy));
    h = d_get(n, dy);
    T_CHECK(same_bits(h, x, n), "n=%lld: copy", (long long)n);
    free(h);

    T_OK(ops->fill(ctx, n, 2.5, dy));
    h = d_get(n, dy);
    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        ok &= h[i] == 2.5;
    T_CHECK(ok, "n=%lld: fill 2.5", (long long)n);
    free(h);
    T_OK(ops->fill(ctx, n, 0.0, dy));
    h = d_get(n, dy);
    T_CHECK(same_bits(h, zero, n), "n=%lld: fill 0", (long long)n);
    free(h);

    ops->free(ctx, dx);
    ops->free(ctx, dy);
    free(x);
    free(zero);
}

static void test_reductions(int64_t n)
{
    double *x = h_rand(n, 2 + n, -1, 1), *y = h_rand(n, 3 + n, -1, 1), *z = h_rand(n, 4 + n, -2, 2);
    double *dx = d_new(n, x), *dy = d_new(n, y), *dz = d_new(n, z);
    long double sxy, sxz, sxx;
    long double rxy = ref_dot(n, x, y, &sxy), rxz = ref_dot(n, x, z, &sxz);
    long double rxx = ref_dot(n, x, x, &sxx);

    double d = NAN, nrm = NAN;
    T_OK(ops->dot(ctx, n, dx, dy, &d));
    T_CHECK(close_sum(d, rxy, sxy), "n=%lld: dot %.17g vs %.17Lg", (long long)n, d, rxy);
    T_OK(ops->nrm2(ctx, n, dx, &nrm));
    T_CHECK(fabsl(nrm - sqrtl(rxx)) <= TOL * sqrtl(rxx) || (n == 0 && nrm == 0),
            "n=%lld: nrm2 %.17g vs %.17Lg", (long long)n, nrm, sqrtl(rxx));
    double xx = NAN;                                  /* solvers compare the two exactly */
    T_OK(ops->dot(ctx, n, dx, dx, &xx));
    T_CHECK(nrm == sqrt(xx), "n=%lld: nrm2 %a != sqrt(dot(x, x)) %a", (long long)n, nrm, sqrt(xx));

    double r0 = NAN, r1 = NAN, s0 = NAN, s1 = NAN;
    T_OK(ops->dot2(ctx, n, dx, dy, dz, &r0, &r1));
    T_CHECK(close_sum(r0, rxy, sxy) && close_sum(r1, rxz, sxz),
            "n=%lld: dot2 (%.17g, %.17g) vs (%.17Lg, %.17Lg)", (long long)n, r0, r1, rxy, rxz);
    T_OK(ops->dot2(ctx, n, dx, dy, dz, &s0, &s1));
    T_CHECK(!check_bits || (memcmp(&r0, &s0, sizeof r0) == 0 && memcmp(&r1, &s1, sizeof r1) == 0),
            "n=%lld: dot2 not deterministic: %a %a vs %a %a", (long long)n, r0, r1, s0, s1);
    double u0 = NAN, u1 = NAN;                        /* fused against the unfused ops */
    T_OK(ops->dot(ctx, n, dx, dz, &u1));
    T_CHECK(close_sum(r0, d, sxy) && close_sum(r1, u1, sxz), "n=%lld: dot2 vs two dots",
            (long long)n);
    T_OK(ops->dot2(ctx, n, dx, dy, dx, &u0, &u1));    /* z = x: PETSc's VecDotNorm2 */
    T_CHECK(close_sum(u0, rxy, sxy) && close_sum(u1, rxx, sxx), "n=%lld: dot2 with z = x",
            (long long)n);

    ops->free(ctx, dx);
    ops->free(ctx, dy);
    ops->free(ctx, dz);
    free(x);
    free(y);
    free(z);
}

/* nrm2 where x'x over- or underflows: the scaled path must still give |(3, 4) s| = 5 s. */
static void test_nrm2_range(void)
{
    static const double scales[] = {1e200, 1e-170, 1.0};
    for (int k = 0; k < 3; k++) {
        double h[2] = {3 * scales[k], 4 * scales[k]}, r = NAN;
        double *d = d_new(2, h);
        T_OK(ops->nrm2(ctx, 2, d, &r));
        T_CHECK(fabs(r - 5 * scales[k]) <= TOL * 5 * scales[k], "nrm2 of (3, 4) * %g: %g",
                scales[k], r);
        ops->free(ctx, d);
    }
}

/* The element-wise ops against the same expression on the host. Differences come only from
 * fused multiply-adds, far below TOL. */
static void test_elementwise(int64_t n)
{
    const double a = 0.75, b = -1.25, omega = 0.3;
    double *x = h_rand(n, 5 + n, -1, 1), *y = h_rand(n, 6 + n, -1, 1), *d = h_rand(n, 7 + n, 0.5, 2);
    double *ref = h_new(n), *got;
    double *dx = d_new(n, x), *dy = d_new(n, y), *dd = d_new(n, d);

    T_OK(ops->axpy(ctx, n, a, dx, dy));
    for (int64_t i = 0; i < n; i++)
        ref[i] = y[i] + a * x[i];
    got = d_get(n, dy);
    T_CHECK(t_rel_diff(got, ref, n) <= TOL, "n=%lld: axpy", (long long)n);
    free(got);

    T_OK(ops->upload(ctx, n, y, dy));
    T_OK(ops->axpby(ctx, n, a, dx, b, dy));
    for (int64_t i = 0; i < n; i++)
        ref[i] = a * x[i] + b * y[i];
    got = d_get(n, dy);
    T_CHECK(t_rel_diff(got, ref, n) <= TOL, "n=%lld: axpby", (long long)n);
    free(got);

    T_OK(ops->fill(ctx, n, NAN, dy));                  /* b = 0 must not read the old y */
    T_OK(ops->axpby(ctx, n, a, dx, 0.0, dy));
    for (int64_t i = 0; i < n; i++)
        ref[i] = a * x[i];
    got = d_get(n, dy);
    T_CHECK(t_rel_diff(got, ref, n) <= TOL, "n=%lld: axpby with b = 0 over NaN", (long long)n);
    free(got);

    T_OK(ops->upload(ctx, n, y, dy));
    T_OK(ops->scal(ctx, n, b, dy));
    for (int64_t i = 0; i < n; i++)
        ref[i] = b * y[i];
    got = d_get(n, dy);
    T_CHECK(t_rel_diff(got, ref, n) <= TOL, "n=%lld: scal", (long long)n);
    free(got);

    T_OK(ops->pmul(ctx, n, dd, dx, dy));
    for (int64_t i = 0; i < n; i++)
        ref[i] = d[i] * x[i];
    got = d_get(n, dy);
    T_CHECK(t_rel_diff(got, ref, n) <= TOL, "n=%lld: pmul", (long long)n);
    free(got);
    T_OK(ops->upload(ctx, n, x, dy));
    T_OK(ops->pmul(ctx, n, dd, dy, dy));              /* in place, as Jacobi may */
    got = d_get(n, dy);
    T_CHECK(t_rel_diff(got, ref, n) <= TOL, "n=%lld: pmul in place", (long long)n);
    free(got);

    T_OK(ops->upload(ctx, n, y, dy));
    T_OK(ops->xpay(ctx, n, dx, b, dy));
    for (int64_t i = 0; i < n; i++)
        ref[i] = x[i] + b * y[i];
    got = d_get(n, dy);
    T_CHECK(t_rel_diff(got, ref, n) <= TOL, "n=%lld: xpay", (long long)n);
    free(got);

    T_OK(ops->upload(ctx, n, y, dy));
    T_OK(ops->bicg_p(ctx, n, dx, b, omega, dd, dy));  /* p = r + beta (p - omega v) */
    for (int64_t i = 0; i < n; i++)
        ref[i] = x[i] + b * (y[i] - omega * d[i]);
    got = d_get(n, dy);
    T_CHECK(t_rel_diff(got, ref, n) <= TOL, "n=%lld: bicg_p", (long long)n);
    free(got);

    ops->free(ctx, dx);
    ops->free(ctx, dy);
    ops->free(ctx, dd);
    free(x);
    free(y);
    free(d);
    free(ref);
}

static void test_invert(int64_t n)
{
    double *d = h_rand(n, 8 + n, 0.5, 2), *ref = h_new(n), *got;
    double *dd = d_new(n, d);
    int64_t bad = -7;
    T_OK(ops->invert(ctx, n, dd, 0, &bad));
    T_CHECK(bad == -1, "n=%lld: invert of a positive d found bad = %lld", (long long)n,
            (long long)bad);
    for (int64_t i = 0; i < n; i++)
        ref[i] = 1.0 / d[i];
    got = d_get(n, dd);
    T_CHECK(t_rel_diff(got, ref, n) <= TOL, "n=%lld: invert values", (long long)n);
    free(got);

    if (n >= 3) {
        /* a negative entry in the middle, a zero at the end */
        double *e = h_dup(n, d);
        e[n / 2] = -1.0;
        e[n - 1] = 0.0;
        T_OK(ops->upload(ctx, n, e, dd));
        T_OK(ops->invert(ctx, n, dd, 0, &bad));
        T_CHECK(bad == n / 2, "n=%lld: first d <= 0 at %lld, got %lld", (long long)n,
                (long long)(n / 2), (long long)bad);
        got = d_get(n, dd);
        T_CHECK(same_bits(got, e, n), "n=%lld: a failed invert changed d", (long long)n);
        free(got);
        T_OK(ops->invert(ctx, n, dd, 1, &bad));
        T_CHECK(bad == n - 1, "n=%lld: allow_negative: first zero at %lld, got %lld",
                (long long)n, (long long)(n - 1), (long long)bad);
        e[1] = NAN;                                   /* not finite: bad either way */
        T_OK(ops->upload(ctx, n, e, dd));
        T_OK(ops->invert(ctx, n, dd, 1, &bad));
        T_CHECK(bad == 1, "n=%lld: NaN at 1, got %lld", (long long)n, (long long)bad);
        free(e);
    } else if (n >= 1) {
        double zero = 0.0;
        T_OK(ops->upload(ctx, 1, &zero, dd));
        T_OK(ops->invert(ctx, n, dd, 1, &bad));
        T_CHECK(bad == 0, "n=%lld: zero at 0, got %lld", (long long)n, (long long)bad);
    }
    ops->free(ctx, dd);
    free(d);
    free(ref);
}

/* cg_update in its three shapes: with dinv into a separate z; no dinv with z = r (aliased);
 * no dinv with a separate z (z := r). */
static void test_cg_update(int64_t n, int shape)
{
    const double a = 0.37;
    double *p = h_rand(n, 9 + n, -1, 1), *q = h_rand(n, 10 + n, -1, 1);
    double *x = h_rand(n, 11 + n, -1, 1), *r = h_rand(n, 12 + n, -1, 1);
    double *dv = h_rand(n, 13 + n, 0.5, 2);
    double *dp = d_new(n, p), *dq = d_new(n, q), *dx = d_new(n, x), *dr = d_new(n, r);
    double *ddinv = shape == 0 ? d_new(n, dv) : NULL;
    double *dz = shape == 1 ? dr : d_new(n, NULL);

    double rr = NAN, rz = NAN;
    T_OK(ops->cg_update(ctx, n, a, dp, dq, dx, dr, ddinv, dz, &rr, &rz));

    /* host: the unfused math */
    double *xr = h_new(n), *rref = h_new(n), *zr = h_new(n);
    for (int64_t i = 0; i < n; i++) {
        xr[i] = x[i] + a * p[i];
        rref[i] = r[i] - a * q[i];
        zr[i] = shape == 0 ? dv[i] * rref[i] : rref[i];
    }
    long double srr, srz;
    long double rr_ref = ref_dot(n, rref, rref, &srr), rz_ref = ref_dot(n, rref, zr, &srz);
    double *gx = d_get(n, dx), *gr = d_get(n, dr), *gz = d_get(n, dz);
    T_CHECK(t_rel_diff(gx, xr, n) <= TOL && t_rel_diff(gr, rref, n) <= TOL &&
                t_rel_diff(gz, zr, n) <= TOL,
            "n=%lld shape %d: cg_update vectors", (long long)n, shape);
    T_CHECK(close_sum(rr, rr_ref, srr) && close_sum(rz, rz_ref, srz),
            "n=%lld shape %d: cg_update rr %.17g vs %.17Lg, rz %.17g vs %.17Lg", (long long)n,
            shape, rr, rr_ref, rz, rz_ref);

    /* against the unfused ops on the device, from the same inputs */
    double *ux = d_new(n, x), *ur = d_new(n, r), *uz = d_new(n, NULL);
    double urr = NAN, urz = NAN;
    T_OK(ops->axpy(ctx, n, a, dp, ux));
    T_OK(ops->axpy(ctx, n, -a, dq, ur));
    if (shape == 0)
        T_OK(ops->pmul(ctx, n, ddinv, ur, uz));
    else
        T_OK(ops->copy(ctx, n, ur, uz));
    T_OK(ops->dot(ctx, n, ur, ur, &urr));
    T_OK(ops->dot(ctx, n, ur, uz, &urz));
    T_CHECK(close_sum(rr, urr, srr) && close_sum(rz, urz, srz),
            "n=%lld shape %d: fused (%.17g, %.17g) vs unfused (%.17g, %.17g)", (long long)n,
            shape, rr, rz, urr, urz);

    /* the same inputs again give the same bits */
    double rr2 = NAN, rz2 = NAN;
    T_OK(ops->upload(ctx, n, x, dx));
    T_OK(ops->upload(ctx, n, r, dr));
    T_OK(ops->cg_update(ctx, n, a, dp, dq, dx, dr, ddinv, dz, &rr2, &rz2));
    T_CHECK(!check_bits || (memcmp(&rr, &rr2, sizeof rr) == 0 && memcmp(&rz, &rz2, sizeof rz) == 0),
            "n=%lld shape %d: cg_update not deterministic", (long long)n, shape);

    ops->free(ctx, ux);
    ops->free(ctx, ur);
    ops->free(ctx, uz);
    ops->free(ctx, dp);
    ops->free(ctx, dq);
    ops->free(ctx, dx);
    ops->free(ctx, dr);
    ops->free(ctx, ddinv);
    if (dz != dr)
        ops->free(ctx, dz);
    free(gx);
    free(gr);
    free(gz);
    free(xr);
    free(rref);
    free(zr);
    free(p);
    free(q);
    free(x);
    free(r);
    free(dv);
}

/* GMRES's classical Gram-Schmidt: h = V'w, then w -= V h, V column-major n x k with ldv > n. */
static void test_gemv(int64_t n, int k)
{
    const int64_t ldv = n + 3;
    double *V = h_rand(ldv * k, 14 + n + k, -1, 1), *w = h_rand(n, 15 + n + k, -1, 1);
    double *dV = d_new(ldv * k, V), *dw = d_new(n, w);
    double *h = h_new(k);
    for (int j = 0; j < k; j++)
        h[j] = NAN;
    T_OK(ops->gemv_t(ctx, n, k, dV, ldv, dw, h));
    int ok = 1;
    for (int j = 0; j < k; j++) {
        long double s;
        long double ref = ref_dot(n, V + (int64_t)j * ldv, w, &s);
        ok &= close_sum(h[j], ref, s);
    }
    T_CHECK(ok, "n=%lld k=%d: gemv_t", (long long)n, k);

    T_OK(ops->gemv_n_sub(ctx, n, k, dV, ldv, h, dw));
    double *got = d_get(n, dw);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        long double s = w[i], scale = fabs(w[i]);
        for (int j = 0; j < k; j++) {
            s -= (long double)V[(int64_t)j * ldv + i] * h[j];
            scale += fabsl((long double)V[(int64_t)j * ldv + i] * h[j]);
        }
        double e = (double)(fabsl(got[i] - s) / (scale > 0 ? scale : 1));
        if (!(e <= worst))
            worst = e;
    }
    T_CHECK(worst <= TOL, "n=%lld k=%d: gemv_n_sub error %.3g", (long long)n, k, worst);

    ops->free(ctx, dV);
    ops->free(ctx, dw);
    free(V);
    free(w);
    free(h);
    free(got);
}

/* A failed allocation (injected, and on the GPU a real out-of-memory) is reported with the
 * size, and the context keeps working. */
static void test_alloc_failure(spk_device dev)
{
    double *v = (double *)1;
    uint64_t before = spk_context_alloc_count(ctx);
    ctx->fail_alloc_at = before + 1;
    spk_status st = ops->alloc(ctx, 10, &v);
    ctx->fail_alloc_at = 0;
    T_CHECK(st != SPK_OK && v == NULL, "injected failure: status %d", (int)st);
    T_CHECK(spk_last_error(ctx)[0] != '\0', "injected failure left no message");
    if (dev == SPK_DEVICE_CUDA) {
        T_CHECK(st == SPK_ERR_CUDA, "injected failure: %s", spk_status_str(st));
        T_CHECK(strstr(spk_last_error(ctx), "80 bytes") != NULL, "message: %s",
                spk_last_error(ctx));
    }
    T_OK(ops->alloc(ctx, 10, &v));
    T_CHECK(spk_context_alloc_count(ctx) == before + 2, "alloc_count %llu, expected %llu",
            (unsigned long long)spk_context_alloc_count(ctx), (unsigned long long)before + 2);

    if (dev == SPK_DEVICE_CUDA) {
        double *huge = (double *)1;
        st = ops->alloc(ctx, (int64_t)1 << 44, &huge);            /* 128 TiB */
        T_CHECK(st == SPK_ERR_CUDA && huge == NULL, "128 TiB: %s", spk_status_str(st));
        T_CHECK(strstr(spk_last_error(ctx), "140737488355328 bytes") != NULL, "message: %s",
                spk_last_error(ctx));
        T_CHECK(ops->alloc(ctx, -1, &huge) == SPK_ERR_ARG, "n = -1 accepted");
        double one = 1.0, r = 0;                                  /* still usable */
        T_OK(ops->upload(ctx, 1, &one, v));
        T_OK(ops->dot(ctx, 1, v, v, &r));
        T_CHECK(r == 1.0, "dot after a failed alloc: %g", r);
    }
    ops->free(ctx, v);
}

int main(int argc, char **argv)
{
    spk_device dev = t_device_from_args(argc, argv);
    ctx = t_context(dev);
    ops = spk_vec_ops_for(dev);
    check_bits = dev == SPK_DEVICE_CUDA;
    T_CHECK(ops->device == dev, "table of device %d for %d", (int)ops->device, (int)dev);
    printf("test_vec on %s\n", spk_context_device_name(ctx));

    test_alloc_failure(dev);
    test_nrm2_range();
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        test_memory(n);
        test_reductions(n);
        test_elementwise(n);
        test_invert(n);
        for (int shape = 0; shape < 3; shape++)
            test_cg_update(n, shape);
    }
    static const int64_t gemv_n[] = {0, 1, 33, 1000 + 97, 65537, 1 << 20};
    static const int gemv_k[] = {1, 5, 31};
    for (size_t s = 0; s < sizeof gemv_n / sizeof gemv_n[0]; s++)
        for (size_t j = 0; j < 3; j++)
            if (gemv_n[s] < (1 << 20) || gemv_k[j] <= 5)   /* keep V under ~50 MB */
                test_gemv(gemv_n[s], gemv_k[j]);
    T_OK(ops->sync(ctx));

    spk_context_destroy(ctx);
    return t_done("test_vec");
}
