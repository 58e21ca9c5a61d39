/* tests/test_vec.c -- every operation of one device's vector-ops table (--device cpu|gpu), and
 * the methods' fused steps (CG's, BiCGStab's, GMRES's CGS2, from their rooms under solvers/),
 * against plain host loops on seeded random vectors: sizes around the warp and block
 * boundaries, an odd size past a thousand and 2^20. Reductions are compared with a long-double
 * host sum, scaled by sum |x_i y_i| (the size of the rounding error any order of summation
 * makes); dot2 and the fused steps must give the same bits twice, and the CPU tables' sums the
 * same bits on 1 to 16 OpenMP threads; invert must find the first bad entry. The fused steps
 * with device scalars go through every state transition. */
#include "util.h"

#include "../solvers/bicgstab_scalar.h"
#include "../solvers/cg_scalar.h"
#include "../solvers/gmres_ops.h"
#include "../solvers/solver.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define TOL 1e-13

static spk_context *ctx;
static const spk_vec_ops *ops;
static const spk_cg_ops *co;
static const spk_gmres_ops *go;

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
    T_CHECK(memcmp(&r0, &s0, sizeof r0) == 0 && memcmp(&r1, &s1, sizeof r1) == 0,
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
    /* a NaN anywhere gives NaN, an Inf (and no NaN) Inf: the "b holds NaN" checks rely on it */
    static const double nan_first[4] = {NAN, 0, 0, 0}, nan_mid[3] = {1, NAN, 0},
                        inf_nan[2] = {INFINITY, NAN}, inf_zero[3] = {0, -INFINITY, 0};
    const struct { const double *v; int n, want_nan; const char *what; } cases[] = {
        {nan_first, 4, 1, "(NaN, 0, 0, 0)"}, {nan_mid, 3, 1, "(1, NaN, 0)"},
        {inf_nan, 2, 1, "(Inf, NaN)"}, {inf_zero, 3, 0, "(0, -Inf, 0)"}};
    for (int k = 0; k < 4; k++) {
        double r = 0.0, *d = d_new(cases[k].n, cases[k].v);
        T_OK(ops->nrm2(ctx, cases[k].n, d, &r));
        T_CHECK(cases[k].want_nan ? isnan(r) : isinf(r) && r > 0, "nrm2 of %s: %g",
                cases[k].what, r);
        ops->free(ctx, d);
    }
}

/* The element-wise ops against the same expression on the host. Differences come only from
 * fused multiply-adds, far below TOL. */
static void test_elementwise(int64_t n)
{
    const double a = 0.75, b = -1.25;
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
    T_OK(ops->pmul_axpby(ctx, n, a, dd, dx, b, dy));  /* y = a (d .* x) + b y */
    for (int64_t i = 0; i < n; i++)
        ref[i] = a * (d[i] * x[i]) + b * y[i];
    got = d_get(n, dy);
    T_CHECK(t_rel_diff(got, ref, n) <= TOL, "n=%lld: pmul_axpby", (long long)n);
    free(got);
    T_OK(ops->fill(ctx, n, NAN, dy));                  /* b = 0 must not read the old y */
    T_OK(ops->pmul_axpby(ctx, n, a, dd, dx, 0.0, dy));
    for (int64_t i = 0; i < n; i++)
        ref[i] = a * (d[i] * x[i]);
    got = d_get(n, dy);
    T_CHECK(t_rel_diff(got, ref, n) <= TOL, "n=%lld: pmul_axpby with b = 0 over NaN", (long long)n);
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

static const int64_t s_doubles = (int64_t)((sizeof(spk_cg_scalars) + 7) / 8);

static void s_put(double *dS, const spk_cg_scalars *h)
{
    T_OK(ops->put(ctx, h, sizeof *h, dS));
}

static spk_cg_scalars s_get(const double *dS)
{
    spk_cg_scalars h;
    memset(&h, 0xff, sizeof h);
    T_OK(ops->fetch(ctx, dS, sizeof h, 1, &h));
    T_OK(ops->fetch_wait(ctx, 1));
    return h;
}

/* dot_sink and CG's steps r, rz and xp against the host math, with (shape 0) and without
 * Jacobi: every state transition (RUN -> RUN, RUN -> LAST -> DONE on the threshold, p'Ap <= 0,
 * r'z <= 0, nothing done once DONE), the scalars' bits repeatable, the counters back at 0; the
 * general path's rz with a stored z. */
static void test_cg_fused(int64_t n, int shape)
{
    double *p = h_rand(n, 21 + n, -1, 1), *q = h_rand(n, 22 + n, -1, 1);
    double *x = h_rand(n, 23 + n, -1, 1), *r = h_rand(n, 24 + n, -1, 1);
    double *dv = h_rand(n, 25 + n, 0.5, 2);
    double *dp = d_new(n, p), *dq = d_new(n, q), *dx = d_new(n, x), *dr = d_new(n, r);
    double *ddinv = shape == 0 ? d_new(n, dv) : NULL;
    double *dS = d_new(s_doubles, NULL), *dpart = d_new(2 * SPK_MAX_BLOCKS, NULL);
    spk_cg_scalars *S = (spk_cg_scalars *)(void *)dS;

    /* dot_sink: p'q into S->pq; skipped while S->state != RUN */
    spk_cg_scalars h0;
    memset(&h0, 0, sizeof h0);
    h0.part = dpart;
    h0.thr = 0.0;
    h0.div_thr = INFINITY;                           /* no divergence test, no stagnation */
    h0.best = INFINITY;
    h0.rz = 0.75 * (double)(n + 1);
    h0.state = SPK_CG_DONE;
    h0.pq = -7.0;
    s_put(dS, &h0);
    spk_dot_sink sink = {&S->state, &S->pq, &S->count[0], dpart};
    T_OK(ops->dot_sink(ctx, n, dp, dq, &sink));
    spk_cg_scalars h = s_get(dS);
    T_CHECK(h.pq == -7.0, "n=%lld: dot_sink ran although skipped (pq %g)", (long long)n, h.pq);
    h0.state = SPK_CG_RUN;
    s_put(dS, &h0);
    T_OK(ops->dot_sink(ctx, n, dp, dq, &sink));
    h = s_get(dS);
    long double spq, pq_ref = ref_dot(n, p, q, &spq);
    T_CHECK(close_sum(h.pq, pq_ref, spq), "n=%lld: dot_sink %.17g vs %.17Lg", (long long)n, h.pq,
            pq_ref);
    T_CHECK(h.count[0] == 0, "n=%lld: dot_sink left its counter at %u", (long long)n, h.count[0]);
    const double pq = h.pq;
    T_OK(ops->dot_sink(ctx, n, dp, dq, &sink));
    h = s_get(dS);
    T_CHECK(memcmp(&h.pq, &pq, sizeof pq) == 0, "n=%lld: dot_sink not deterministic",
            (long long)n);

    /* cg_r from RUN with a positive p'q (forced, so every n has one) */
    h0.pq = 0.5 * (double)(n + 1);
    h0.it = 41;
    s_put(dS, &h0);
    T_OK(co->r(ctx, n, S, dq, dr, ddinv));
    h = s_get(dS);
    const double alpha = h0.rz / h0.pq;
    double *rref = h_new(n), *zr = h_new(n);
    for (int64_t i = 0; i < n; i++) {
        rref[i] = r[i] - alpha * q[i];
        zr[i] = shape == 0 ? dv[i] * rref[i] : rref[i];
    }
    long double srr, srz;
    long double rr_ref = ref_dot(n, rref, rref, &srr), rz_ref = ref_dot(n, rref, zr, &srz);
    double *gr = d_get(n, dr);
    T_CHECK(t_rel_diff(gr, rref, n) <= TOL, "n=%lld shape %d: cg_r r", (long long)n, shape);
    T_CHECK(h.alpha == alpha && h.it == 42 && close_sum(h.rr, rr_ref, srr) &&
                close_sum(h.rz_new, rz_ref, srz) && h.hist[42 % SPK_CG_HIST] == h.rr,
            "n=%lld shape %d: cg_r alpha %.17g it %lld rr %.17g vs %.17Lg rz %.17g vs %.17Lg",
            (long long)n, shape, h.alpha, (long long)h.it, h.rr, rr_ref, h.rz_new, rz_ref);
    /* thr = 0: converged only for r = 0 (n == 0); r'z > 0 otherwise, so RUN goes on */
    int want_state = n == 0 ? SPK_CG_LAST : SPK_CG_RUN;
    T_CHECK(h.state == want_state && h.count[1] == 0, "n=%lld: cg_r state %d (want %d), counter %u",
            (long long)n, h.state, want_state, h.count[1]);
    const spk_cg_scalars after_r = h;

    /* cg_xp from RUN: x += alpha p, p = M^-1 r + beta p, rz = rz_new */
    T_OK(co->xp(ctx, n, S, dx, dp, dr, ddinv));
    h = s_get(dS);
    double *xr = h_new(n), *pr = h_new(n);
    const double beta = after_r.rz_new / after_r.rz;
    for (int64_t i = 0; i < n; i++) {
        xr[i] = x[i] + alpha * p[i];
        pr[i] = (shape == 0 ? dv[i] * gr[i] : gr[i]) + beta * p[i];
    }
    double *gx = d_get(n, dx), *gp = d_get(n, dp);
    if (n > 0) {
        T_CHECK(t_rel_diff(gx, xr, n) <= TOL && t_rel_diff(gp, pr, n) <= TOL,
                "n=%lld shape %d: cg_xp vectors", (long long)n, shape);
        T_CHECK(h.rz == after_r.rz_new && h.state == SPK_CG_RUN && h.count[2] == 0,
                "n=%lld: cg_xp rz %.17g (want %.17g) state %d counter %u", (long long)n, h.rz,
                after_r.rz_new, h.state, h.count[2]);
    }

    /* the threshold met: cg_r -> LAST (WHY_STOP); cg_xp updates x only, -> DONE; then both
     * do nothing */
    double *x1 = d_get(n, dx), *p1 = d_get(n, dp), *r1 = d_get(n, dr);
    h0 = h;
    h0.thr = INFINITY;
    h0.pq = 2.0;
    h0.state = SPK_CG_RUN;
    s_put(dS, &h0);
    T_OK(co->r(ctx, n, S, dq, dr, ddinv));
    h = s_get(dS);
    T_CHECK(h.state == SPK_CG_LAST && h.why == SPK_CG_WHY_STOP, "n=%lld: stop: state %d why %d",
            (long long)n, h.state, h.why);
    const double a2 = h.alpha;
    double *r2 = d_get(n, dr);
    T_OK(co->xp(ctx, n, S, dx, dp, dr, ddinv));
    h = s_get(dS);
    double *x2 = d_get(n, dx), *p2 = d_get(n, dp);
    int ok = h.state == SPK_CG_DONE && same_bits(p2, p1, n);
    for (int64_t i = 0; i < n; i++)
        ok &= fabs(x2[i] - (x1[i] + a2 * p1[i])) <= 1e-15 * (fabs(x1[i]) + fabs(a2 * p1[i]));
    T_CHECK(ok, "n=%lld: LAST: x only, then DONE (state %d)", (long long)n, h.state);
    T_OK(co->r(ctx, n, S, dq, dr, ddinv));
    T_OK(co->xp(ctx, n, S, dx, dp, dr, ddinv));
    spk_cg_scalars h2 = s_get(dS);
    double *x3 = d_get(n, dx), *r3 = d_get(n, dr);
    T_CHECK(memcmp(&h2, &h, sizeof h) == 0 && same_bits(x3, x2, n) && same_bits(r3, r2, n),
            "n=%lld: DONE: cg_r / cg_xp changed something", (long long)n);

    /* the general path's rz: r'z with z stored (z = dv .* r here), RUN stays RUN; a negative
     * z gives LAST with WHY_RZ; in another state nothing happens */
    double *dz = d_new(n, NULL);
    {
        double *zh = h_new(n);
        for (int64_t i = 0; i < n; i++)
            zh[i] = dv[i] * r3[i];
        T_OK(ops->upload(ctx, n, zh, dz));
        spk_cg_scalars hz = h2;
        hz.state = SPK_CG_RUN;
        hz.rz_new = -3.0;
        s_put(dS, &hz);
        T_OK(co->rz(ctx, n, S, dr, dz));
        h = s_get(dS);
        long double szz, rz_z = ref_dot(n, r3, zh, &szz);
        const int want = n == 0 ? SPK_CG_LAST : SPK_CG_RUN;   /* r'z = 0 for n = 0 */
        T_CHECK(close_sum(h.rz_new, rz_z, szz) && h.state == want && h.count[3] == 0,
                "n=%lld: rz %.17g vs %.17Lg, state %d, counter %u", (long long)n, h.rz_new, rz_z,
                h.state, h.count[3]);
        for (int64_t i = 0; i < n; i++)
            zh[i] = -zh[i];
        T_OK(ops->upload(ctx, n, zh, dz));
        s_put(dS, &hz);
        T_OK(co->rz(ctx, n, S, dr, dz));
        h = s_get(dS);
        T_CHECK(n == 0 || (h.state == SPK_CG_LAST && h.why == SPK_CG_WHY_RZ),
                "n=%lld: rz < 0: state %d why %d", (long long)n, h.state, h.why);
        hz.state = SPK_CG_DONE;
        s_put(dS, &hz);
        T_OK(co->rz(ctx, n, S, dr, dz));
        h = s_get(dS);
        T_CHECK(h.rz_new == -3.0, "n=%lld: rz ran in state DONE", (long long)n);
        free(zh);
    }
    ops->free(ctx, dz);

    /* p'q <= 0: DONE with WHY_PQ, r untouched; r'z <= 0 (dinv negative): LAST with WHY_RZ */
    h0.thr = 0.0;
    h0.pq = -1.0;
    h0.it = 5;
    s_put(dS, &h0);
    T_OK(co->r(ctx, n, S, dq, dr, ddinv));
    h = s_get(dS);
    double *r4 = d_get(n, dr);
    T_CHECK(h.state == SPK_CG_DONE && h.why == SPK_CG_WHY_PQ && h.it == 5 && same_bits(r4, r3, n),
            "n=%lld: p'q < 0: state %d why %d it %lld", (long long)n, h.state, h.why,
            (long long)h.it);
    if (shape == 0 && n > 0) {
        for (int64_t i = 0; i < n; i++)
            dv[i] = -dv[i];
        T_OK(ops->upload(ctx, n, dv, ddinv));
        h0.pq = 1.0;
        s_put(dS, &h0);
        T_OK(co->r(ctx, n, S, dq, dr, ddinv));
        h = s_get(dS);
        T_CHECK(h.state == SPK_CG_LAST && h.why == SPK_CG_WHY_RZ && h.rz_new < 0,
                "n=%lld: r'z < 0: state %d why %d rz %g", (long long)n, h.state, h.why, h.rz_new);
    }

    double *hv[] = {p, q, x, r, dv, rref, zr, gr, xr, pr, gx, gp, x1, p1, r1, r2, x2, p2, x3, r3, r4};
    for (size_t i = 0; i < sizeof hv / sizeof hv[0]; i++)
        free(hv[i]);
    double *dvs[] = {dp, dq, dx, dr, ddinv, dS, dpart};
    for (size_t i = 0; i < sizeof dvs / sizeof dvs[0]; i++)
        ops->free(ctx, dvs[i]);
}

/* ---- the fused BiCGStab steps, scalars in device memory (solvers/bicgstab.c) ------------- */

static const int64_t b_doubles = (int64_t)((sizeof(spk_bicg_scalars) + 7) / 8);

static void b_put(double *dS, const spk_bicg_scalars *h)
{
    T_OK(ops->put(ctx, h, sizeof *h, dS));
}

static spk_bicg_scalars b_get(const double *dS)
{
    spk_bicg_scalars h;
    memset(&h, 0xff, sizeof h);
    T_OK(ops->fetch(ctx, dS, sizeof h, 1, &h));
    T_OK(ops->fetch_wait(ctx, 1));
    return h;
}

static int b_deq(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* Every field equal (NaN equal to NaN): the counters back at 0 included. */
static int b_same(const spk_bicg_scalars *a, const spk_bicg_scalars *b)
{
    int ok = a->part == b->part && b_deq(a->tol_rtol, b->tol_rtol) &&
             b_deq(a->tol_atol, b->tol_atol) && a->maxit == b->maxit &&
             b_deq(a->r0norm, b->r0norm) && b_deq(a->rho, b->rho) &&
             b_deq(a->rho_old, b->rho_old) && b_deq(a->alpha, b->alpha) &&
             b_deq(a->omega, b->omega) && b_deq(a->beta, b->beta) && b_deq(a->r0v, b->r0v) &&
             b_deq(a->vv, b->vv) && b_deq(a->ss, b->ss) && b_deq(a->snorm, b->snorm) &&
             b_deq(a->ts, b->ts) && b_deq(a->tt, b->tt) && b_deq(a->rr, b->rr) &&
             b_deq(a->rnorm, b->rnorm) && a->it == b->it && a->state == b->state &&
             a->why == b->why;
    for (int i = 0; i < 4; i++)
        ok &= a->count[i] == b->count[i];
    for (int i = 0; i < SPK_BICG_HIST; i++)
        ok &= b_deq(a->hist[i], b->hist[i]);
    return ok;
}

/* The step `op` of the table on block `in` (put first); the block after it, and whether it
 * equals the host's scalar step applied to `in` with the sums the device stored (the scalar
 * logic is the same code on both sides; the sums are checked against the host separately). */
enum { B_P, B_ALPHA, B_S, B_OMEGA, B_XR };
typedef struct b_vecs {
    double *r, *r0, *p, *v, *t, *x, *dinv, *ph, *sh, *zero;
} b_vecs;

static spk_bicg_scalars b_run(const spk_bicg_ops *bo, int op, int64_t n, double *dS,
                              const spk_bicg_scalars *in, const b_vecs *d, const char *what)
{
    spk_bicg_scalars *S = (spk_bicg_scalars *)(void *)dS;
    b_put(dS, in);
    switch (op) {
    case B_P: T_OK(bo->update_p(ctx, n, S, d->r, d->v, d->p, d->dinv, d->ph, d->r0)); break;
    case B_ALPHA: T_OK(bo->dots(ctx, n, S, SPK_BICG_ALPHA, d->v, d->r0)); break;
    case B_S: T_OK(bo->update_s(ctx, n, S, d->v, d->r, d->dinv, d->sh)); break;
    case B_OMEGA: T_OK(bo->dots(ctx, n, S, SPK_BICG_OMEGA, d->t, d->r)); break;
    default: T_OK(bo->update_xr(ctx, n, S, d->x, d->ph, d->sh, d->t, d->r0, d->r)); break;
    }
    spk_bicg_scalars got = b_get(dS), want = *in;
    if (in->state == SPK_BICG_RUN) {
        switch (op) {
        case B_ALPHA: spk_bicg_alpha(&want, got.r0v, got.vv); break;
        case B_S: spk_bicg_half(&want, got.ss); break;
        case B_OMEGA: spk_bicg_omega(&want, got.ts, got.tt); break;
        case B_XR:                               /* a restart keeps the sum it met */
            spk_bicg_end(&want, got.restarts > in->restarts ? got.bk_num : got.rho, got.rr);
            break;
        default: break;
        }
    } else if (in->state == SPK_BICG_LAST && op == B_XR) {
        want.state = SPK_BICG_DONE;
    }
    T_CHECK(b_same(&got, &want), "n=%lld %s: block (state %d why %d it %lld) differs from the "
            "host step (state %d why %d it %lld)", (long long)n, what, got.state, got.why,
            (long long)got.it, want.state, want.why, (long long)want.it);
    return got;
}

/* update_p, dots, update_s, update_xr against the host math, with (shape 0) and without
 * Jacobi, and every state transition: RUN -> RUN through a whole iteration (alpha, omega,
 * beta); the half-step stop (-> LAST); breakdown and NaN at alpha (-> DONE) and at omega
 * (-> LAST, ||s|| recorded); the end: stop, maxiter, the next rho ~ 0 (-> DONE); LAST ->
 * DONE with x += alpha p^ only; nothing done once DONE. */
static void test_bicg_fused(int64_t n, int shape)
{
    const spk_bicg_ops *bo = spk_bicg_ops_for(ops->device);
    T_CHECK(bo->device == ops->device, "bicg table of device %d", (int)bo->device);
    double *r = h_rand(n, 31 + n, -1, 1), *r0 = h_rand(n, 32 + n, -1, 1);
    double *p = h_rand(n, 33 + n, -1, 1), *v = h_rand(n, 34 + n, -1, 1);
    double *t = h_rand(n, 35 + n, -1, 1), *x = h_rand(n, 36 + n, -1, 1);
    double *dv = h_rand(n, 37 + n, 0.5, 2), *ph = h_rand(n, 38 + n, -1, 1);
    double *sh = h_rand(n, 39 + n, -1, 1);
    b_vecs d = {d_new(n, r), d_new(n, r0), d_new(n, p), d_new(n, v), d_new(n, t), d_new(n, x),
                shape == 0 ? d_new(n, dv) : NULL, NULL, NULL, d_new(n, NULL)};
    d.ph = shape == 0 ? d_new(n, ph) : d.p;          /* without M: p^ = p, s^ = s = r */
    d.sh = shape == 0 ? d_new(n, sh) : d.r;
    double *dS = d_new(b_doubles + 2 * SPK_MAX_BLOCKS, NULL);

    spk_bicg_scalars in;
    memset(&in, 0, sizeof in);
    in.part = dS + b_doubles;
    in.maxit = 1000;
    in.div_thr = INFINITY;                           /* no divergence test, no stagnation */
    in.best = INFINITY;
    in.r0norm = 2.0;
    in.rho = 0.75 * (double)(n + 1);
    in.rho_old = 0.5 * (double)(n + 1);
    in.alpha = 0.3;
    in.omega = 0.7;
    in.beta = 0.4;
    in.rnorm = 1.0;
    in.it = 41;
    in.state = SPK_BICG_RUN;

    /* update_p: p = r + beta (p - omega v), p^ = M^-1 p; the block unchanged */
    spk_bicg_scalars h = b_run(bo, B_P, n, dS, &in, &d, "update_p");
    double *pw = h_new(n), *phw = h_new(n);
    for (int64_t i = 0; i < n; i++) {
        pw[i] = r[i] + in.beta * (p[i] - in.omega * v[i]);
        phw[i] = shape == 0 ? dv[i] * pw[i] : pw[i];
    }
    double *gp = d_get(n, d.p), *gph = d_get(n, d.ph);
    T_CHECK(t_rel_diff(gp, pw, n) <= TOL && t_rel_diff(gph, phw, n) <= TOL,
            "n=%lld shape %d: update_p vectors", (long long)n, shape);

    /* dots(ALPHA): (v, r0), (v, v) -> alpha; the same bits twice */
    h = b_run(bo, B_ALPHA, n, dS, &in, &d, "dots alpha");
    long double sc0, sc1, ref0 = ref_dot(n, v, r0, &sc0), ref1 = ref_dot(n, v, v, &sc1);
    T_CHECK(close_sum(h.r0v, ref0, sc0) && close_sum(h.vv, ref1, sc1),
            "n=%lld: dots alpha %.17g %.17g vs %.17Lg %.17Lg", (long long)n, h.r0v, h.vv, ref0,
            ref1);
    spk_bicg_scalars h2 = b_run(bo, B_ALPHA, n, dS, &in, &d, "dots alpha again");
    T_CHECK(memcmp(&h.r0v, &h2.r0v, sizeof h.r0v) == 0 && memcmp(&h.vv, &h2.vv, sizeof h.vv) == 0,
            "n=%lld: dots alpha not deterministic", (long long)n);
    if (n > 0)
        T_CHECK(h.state == SPK_BICG_RUN && h.alpha == in.rho / h.r0v,
                "n=%lld: alpha: state %d alpha %g", (long long)n, h.state, h.alpha);
    else
        T_CHECK(h.state == SPK_BICG_DONE && h.why == SPK_DIVERGED_BREAKDOWN,
                "n=0: (r0, v) = 0 must break down (state %d)", h.state);
    in.alpha = n > 0 ? h.alpha : 0.3;

    /* update_s: s = r - alpha v (in r), s^ = M^-1 s, (s, s); thresholds 0: RUN goes on */
    h = b_run(bo, B_S, n, dS, &in, &d, "update_s");
    double *sw = h_new(n), *shw = h_new(n);
    for (int64_t i = 0; i < n; i++) {
        sw[i] = r[i] - in.alpha * v[i];
        shw[i] = shape == 0 ? dv[i] * sw[i] : sw[i];
    }
    double *gs = d_get(n, d.r), *gsh = d_get(n, d.sh);
    T_CHECK(t_rel_diff(gs, sw, n) <= TOL && t_rel_diff(gsh, shw, n) <= TOL,
            "n=%lld shape %d: update_s vectors", (long long)n, shape);
    long double ssc, ssr = ref_dot(n, sw, sw, &ssc);
    T_CHECK(close_sum(h.ss, ssr, ssc) && h.snorm == sqrt(h.ss), "n=%lld: (s, s) %.17g vs %.17Lg",
            (long long)n, h.ss, ssr);
    T_CHECK(h.state == (n > 0 ? SPK_BICG_RUN : SPK_BICG_LAST) && h.it == in.it + (n == 0),
            "n=%lld: half step: state %d it %lld", (long long)n, h.state, (long long)h.it);
    in.ss = h.ss;
    in.snorm = h.snorm;

    /* dots(OMEGA): (t, s), (t, t) -> omega */
    h = b_run(bo, B_OMEGA, n, dS, &in, &d, "dots omega");
    ref0 = ref_dot(n, t, gs, &sc0);
    ref1 = ref_dot(n, t, t, &sc1);
    T_CHECK(close_sum(h.ts, ref0, sc0) && close_sum(h.tt, ref1, sc1),
            "n=%lld: dots omega %.17g %.17g vs %.17Lg %.17Lg", (long long)n, h.ts, h.tt, ref0,
            ref1);
    if (n > 0) {
        T_CHECK(h.state == SPK_BICG_RUN && h.omega == h.ts / h.tt, "n=%lld: omega: state %d",
                (long long)n, h.state);
        in.omega = h.omega;
    }

    /* update_xr from RUN: x = (x + alpha p^) + omega s^, r = s - omega t, (r0, r), (r, r);
     * the next iteration's beta */
    double *gx0 = d_get(n, d.x);
    h = b_run(bo, B_XR, n, dS, &in, &d, "update_xr");
    double *xw = h_new(n), *rw = h_new(n);
    for (int64_t i = 0; i < n; i++) {
        xw[i] = (x[i] + in.alpha * gph[i]) + in.omega * gsh[i];
        rw[i] = gs[i] - in.omega * t[i];
    }
    double *gx = d_get(n, d.x), *gr = d_get(n, d.r);
    if (n == 1) {
        /* omega = s/t makes r = s - omega t pure cancellation: 0 on the host, the rounding
         * error of omega t where the device fuses it into an FMA (seen: 1.1e-16 on the H200).
         * Held to that size; the sums of such an r say nothing. */
        T_CHECK(t_rel_diff(gx, xw, n) <= TOL && fabs(gr[0] - rw[0]) <= 4e-16 * fabs(gs[0]),
                "n=1 shape %d: update_xr vectors (r %.17g vs %.17g)", shape, gr[0], rw[0]);
    } else {
        T_CHECK(t_rel_diff(gx, xw, n) <= TOL && t_rel_diff(gr, rw, n) <= TOL,
                "n=%lld shape %d: update_xr vectors", (long long)n, shape);
        ref0 = ref_dot(n, r0, rw, &sc0);
        ref1 = ref_dot(n, rw, rw, &sc1);
        T_CHECK(close_sum(h.rho, ref0, sc0) && close_sum(h.rr, ref1, sc1),
                "n=%lld: update_xr sums %.17g %.17g vs %.17Lg %.17Lg", (long long)n, h.rho, h.rr,
                ref0, ref1);
    }
    if (n > 1)                                       /* n = 1: omega makes r = 0, DONE */
        T_CHECK(h.state == SPK_BICG_RUN && h.it == in.it + 1 && h.rho_old == in.rho &&
                    h.rnorm == sqrt(h.rr) && h.hist[h.it % SPK_BICG_HIST] == h.rnorm &&
                    h.beta == (h.rho / in.rho) * (in.alpha / in.omega),
                "n=%lld: end of iteration: state %d it %lld beta %g", (long long)n, h.state,
                (long long)h.it, h.beta);
    free(gx0);

    /* LAST: x += alpha p^ only, r untouched, -> DONE */
    spk_bicg_scalars last = in;
    last.state = SPK_BICG_LAST;
    double *x1 = d_get(n, d.x), *r1 = d_get(n, d.r), *ph1 = d_get(n, d.ph);
    h = b_run(bo, B_XR, n, dS, &last, &d, "update_xr LAST");
    double *x2 = d_get(n, d.x), *r2 = d_get(n, d.r);
    int ok = h.state == SPK_BICG_DONE && same_bits(r2, r1, n);
    for (int64_t i = 0; i < n; i++)
        ok &= fabs(x2[i] - (x1[i] + in.alpha * ph1[i])) <=
              1e-15 * (fabs(x1[i]) + fabs(in.alpha * ph1[i]));
    T_CHECK(ok, "n=%lld: LAST: x += alpha p^ only, then DONE (state %d)", (long long)n, h.state);

    /* DONE: no step changes a vector or the block */
    spk_bicg_scalars done = in;
    done.state = SPK_BICG_DONE;
    done.why = SPK_DIVERGED_BREAKDOWN;
    double *p3 = d_get(n, d.p), *ph3 = d_get(n, d.ph), *sh3 = d_get(n, d.sh);
    for (int op = B_P; op <= B_XR; op++)
        b_run(bo, op, n, dS, &done, &d, "DONE");
    double *x4 = d_get(n, d.x), *r4 = d_get(n, d.r), *p4 = d_get(n, d.p);
    double *ph4 = d_get(n, d.ph), *sh4 = d_get(n, d.sh);
    T_CHECK(same_bits(x4, x2, n) && same_bits(r4, r2, n) && same_bits(p4, p3, n) &&
                same_bits(ph4, ph3, n) && same_bits(sh4, sh3, n),
            "n=%lld: DONE: a step changed a vector", (long long)n);
    /* LAST: the steps that only run in RUN do nothing either */
    for (int op = B_P; op < B_XR; op++)
        b_run(bo, op, n, dS, &last, &d, "LAST");

    if (n > 0) {
        /* alpha: (r0, v) = 0 -> BREAKDOWN; rho NaN -> NANORINF; neither records */
        b_vecs z = d;
        z.r0 = d.zero;
        h = b_run(bo, B_ALPHA, n, dS, &in, &z, "alpha breakdown");
        T_CHECK(h.state == SPK_BICG_DONE && h.why == SPK_DIVERGED_BREAKDOWN && h.it == in.it,
                "n=%lld: (r0, v) = 0: state %d why %d", (long long)n, h.state, h.why);
        spk_bicg_scalars nan_rho = in;
        nan_rho.rho = NAN;
        h = b_run(bo, B_ALPHA, n, dS, &nan_rho, &d, "alpha NaN");
        T_CHECK(h.state == SPK_BICG_DONE && h.why == SPK_DIVERGED_NANORINF && h.it == in.it,
                "n=%lld: rho NaN: state %d why %d", (long long)n, h.state, h.why);
        /* the half step passes: LAST, ||s|| recorded */
        spk_bicg_scalars easy = in;
        easy.tol_rtol = INFINITY;
        h = b_run(bo, B_S, n, dS, &easy, &d, "half-step stop");
        T_CHECK(h.state == SPK_BICG_LAST && h.why == SPK_REASON_NONE && h.it == in.it + 1 &&
                    h.rnorm == h.snorm && h.hist[h.it % SPK_BICG_HIST] == h.snorm,
                "n=%lld: half-step stop: state %d it %lld", (long long)n, h.state,
                (long long)h.it);
        /* omega: (t, s) = 0 -> LAST with BREAKDOWN, ||s|| recorded */
        b_vecs z2 = d;
        z2.r = d.zero;
        h = b_run(bo, B_OMEGA, n, dS, &in, &z2, "omega breakdown");
        T_CHECK(h.state == SPK_BICG_LAST && h.why == SPK_DIVERGED_BREAKDOWN &&
                    h.it == in.it + 1 && h.rnorm == in.snorm,
                "n=%lld: (t, s) = 0: state %d why %d it %lld", (long long)n, h.state, h.why,
                (long long)h.it);
    }
    if (n > 1) {
        /* the end: ||r|| passes -> DONE (the stop test decides the reason) */
        spk_bicg_scalars easy = in;
        easy.tol_atol = INFINITY;
        h = b_run(bo, B_XR, n, dS, &easy, &d, "end stop");
        T_CHECK(h.state == SPK_BICG_DONE && h.why == SPK_REASON_NONE && h.it == in.it + 1,
                "n=%lld: end stop: state %d why %d", (long long)n, h.state, h.why);
        /* maxiter reached -> DONE with MAXIT */
        spk_bicg_scalars lim = in;
        lim.maxit = in.it + 1;
        h = b_run(bo, B_XR, n, dS, &lim, &d, "end maxit");
        T_CHECK(h.state == SPK_BICG_DONE && h.why == SPK_DIVERGED_MAXIT && h.it == lim.maxit,
                "n=%lld: maxit: state %d why %d", (long long)n, h.state, h.why);
        /* the next rho = (r0, r) = 0 with r != 0: the shadow residual restarts (RUN, r0 = r
         * at the next update_p, rho = (r, r), beta = 0), the iteration recorded; with the
         * restarts used up, DONE with BREAKDOWN */
        b_vecs z = d;
        z.r0 = d.zero;
        h = b_run(bo, B_XR, n, dS, &in, &z, "next rho restart");
        T_CHECK(h.state == SPK_BICG_RUN && h.restart == 1 && h.restarts == in.restarts + 1 &&
                    h.it == in.it + 1 && h.rho == h.rr && h.beta == 0.0 && h.bk_num == 0.0,
                "n=%lld: rho = 0: state %d restart %lld rho %g rr %g", (long long)n, h.state,
                (long long)h.restart, h.rho, h.rr);
        spk_bicg_scalars used = in;
        used.restarts = SPK_BICG_MAX_RESTARTS;
        h = b_run(bo, B_XR, n, dS, &used, &z, "next rho breakdown");
        T_CHECK(h.state == SPK_BICG_DONE && h.why == SPK_DIVERGED_BREAKDOWN &&
                    h.it == in.it + 1 && h.rho == 0.0,
                "n=%lld: rho = 0, no restart left: state %d why %d", (long long)n, h.state, h.why);
        /* update_p with restart set copies r into r0 */
        spk_bicg_scalars rs = in;
        rs.restart = 1;
        b_vecs y = d;
        double *r0w = d_new(n, NULL);
        y.r0 = r0w;
        b_run(bo, B_P, n, dS, &rs, &y, "update_p restart");
        double *got_r0 = d_get(n, r0w), *got_r = d_get(n, d.r);
        T_CHECK(same_bits(got_r0, got_r, n), "n=%lld: update_p restart: r0 != r", (long long)n);
        free(got_r0);
        free(got_r);
        ops->free(ctx, r0w);
    }

    double *hv[] = {r, r0, p, v, t, x, dv, ph, sh, pw, phw, gp, gph, sw, shw, gs, gsh, xw, rw,
                    gx, gr, x1, r1, ph1, x2, r2, p3, ph3, sh3, x4, r4, p4, ph4, sh4};
    for (size_t i = 0; i < sizeof hv / sizeof hv[0]; i++)
        free(hv[i]);
    double *dvs[] = {d.r, d.r0, d.p, d.v, d.t, d.x, d.dinv, d.zero, dS};
    for (size_t i = 0; i < sizeof dvs / sizeof dvs[0]; i++)
        ops->free(ctx, dvs[i]);
    if (shape == 0) {
        ops->free(ctx, d.ph);
        ops->free(ctx, d.sh);
    }
}

/* GMRES's update w -= V h, V column-major n x k with ldv > n. */
static void test_gemv(int64_t n, int k)
{
    const int64_t ldv = n + 3;
    double *V = h_rand(ldv * k, 14 + n + k, -1, 1), *w = h_rand(n, 15 + n + k, -1, 1);
    double *dV = d_new(ldv * k, V), *dw = d_new(n, w);
    double *h = h_rand(k, 16 + n + k, -1, 1);

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

/* cgs2: h1 = V'w, w -= V h1, h2 = V'w, w -= V h2, ss = w'w, against the same in long double
 * on the host, each result relative to the sum of the magnitudes it adds up. */
static void test_cgs2(int64_t n, int k)
{
    const int64_t ldv = n + 3;
    double *V = h_rand(ldv * k, 24 + n + k, -1, 1), *w = h_rand(n, 25 + n + k, -1, 1);
    const double unit = n > 0 ? sqrt(3.0 / (double)n) : 1.0;   /* columns of norm ~1, as in GMRES */
    for (int64_t e = 0; e < ldv * k; e++)
        V[e] *= unit;
    double *dV = d_new(ldv * k, V), *dw = d_new(n, w);
    double *out = h_new(2 * k + 1);
    long double *rw = malloc(((size_t)n + 1) * sizeof *rw), *rh = malloc(2 * (size_t)k * sizeof *rh);
    long double *hscale = malloc(2 * (size_t)k * sizeof *hscale), ss = 0, ss_scale = 0;
    for (int64_t i = 0; i < n; i++)
        rw[i] = w[i];
    double worst_w = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int j = 0; j < k; j++) {
            long double s = 0, a = 0;
            for (int64_t i = 0; i < n; i++) {
                s += (long double)V[(int64_t)j * ldv + i] * rw[i];
                a += fabsl((long double)V[(int64_t)j * ldv + i] * rw[i]);
            }
            rh[pass * k + j] = s;
            hscale[pass * k + j] = a;
        }
        for (int64_t i = 0; i < n; i++)
            for (int j = 0; j < k; j++)
                rw[i] -= (long double)V[(int64_t)j * ldv + i] * rh[pass * k + j];
    }
    for (int64_t i = 0; i < n; i++) {
        ss += rw[i] * rw[i];
        ss_scale += rw[i] * rw[i];
    }
    for (int j = 0; j < 2 * k + 1; j++)
        out[j] = NAN;
    T_OK(go->cgs2(ctx, n, k, dV, ldv, dw, out));
    double worst_h = 0;
    for (int j = 0; j < 2 * k; j++) {
        double e = (double)(fabsl(out[j] - rh[j]) / (hscale[j] > 0 ? hscale[j] : 1));
        if (!(e <= worst_h))
            worst_h = e;
    }
    double *got = d_get(n, dw);
    for (int64_t i = 0; i < n; i++) {
        long double scale = fabs(w[i]);
        for (int j = 0; j < k; j++)
            scale += fabsl((long double)V[(int64_t)j * ldv + i] * rh[j]) +
                     fabsl((long double)V[(int64_t)j * ldv + i] * rh[k + j]);
        double e = (double)(fabsl(got[i] - rw[i]) / (scale > 0 ? scale : 1));
        if (!(e <= worst_w))
            worst_w = e;
    }
    const double e_ss = (double)(fabsl(out[2 * k] - ss) / (ss_scale > 0 ? ss_scale : 1));
    T_CHECK(worst_h <= 1e-12 && worst_w <= 1e-12 && e_ss <= 1e-10,
            "n=%lld k=%d: cgs2 errors h %.3g, w %.3g, ss %.3g", (long long)n, k, worst_h, worst_w,
            e_ss);
    /* a second call from the same w: the same bits (fixed summation order) */
    double *dw2 = d_new(n, w), *out2 = h_new(2 * k + 1);
    T_OK(go->cgs2(ctx, n, k, dV, ldv, dw2, out2));
    double *got2 = d_get(n, dw2);
    T_CHECK(memcmp(out, out2, (size_t)(2 * k + 1) * sizeof *out) == 0 &&
                (n == 0 || memcmp(got, got2, (size_t)n * sizeof *got) == 0),
            "n=%lld k=%d: two cgs2 calls differ in bits", (long long)n, k);
    ops->free(ctx, dw2);
    free(out2);
    free(got2);
    ops->free(ctx, dV);
    ops->free(ctx, dw);
    free(V);
    free(w);
    free(out);
    free(rw);
    free(rh);
    free(hscale);
    free(got);
}

/* cgs2 with k = 0 is refused, with a message. */
static void test_cgs2_args(void)
{
    double out[1], *dw = d_new(4, NULL);
    T_CHECK(go->cgs2(ctx, 4, 0, dw, 4, dw, out) == SPK_ERR_ARG && strstr(spk_last_error(ctx), "k = 0"),
            "cgs2 k = 0: %s", spk_last_error(ctx));
    ops->free(ctx, dw);
}

/* ---- the CPU tables' sums whatever the thread count -------------------------------------
 * The CPU tables sum over chunks fixed by n and add the partials in chunk order
 * (src/spk_internal.h), so every sum must give the 1-thread run's bits on 2, 3, 7 and 16
 * threads. An OpenMP reduction clause fails this from 2 threads on: it splits the sum where
 * the thread count splits it, and from 3 threads adds the parts in the order they finish. */
#ifdef _OPENMP
enum { T_NSUMS = 22 };
static const char *const t_sum_name[T_NSUMS] = {
    "dot", "nrm2", "dot2 x'y", "dot2 x'd", "dot_sink", "cg r r'r", "cg r r'z", "cg r r'r (no M)",
    "cg rz", "cgs2 h1[0]", "cgs2 h1[1]", "cgs2 h1[2]", "cgs2 h2[0]", "cgs2 h2[1]", "cgs2 h2[2]",
    "cgs2 w'w", "bicg dots (r0, v)", "bicg dots (v, v)", "bicg update_s (s, s)",
    "bicg update_xr (r0, r)", "bicg update_xr (r, r)", "gemv_n_sub w[0]"};

/* Every sum of the CPU tables once, in the order of t_sum_name, from x, y, the positive
 * diagonal d and V (n x 3); the steps that write vectors write fresh copies. */
static void cpu_sums(int64_t n, const double *x, const double *y, const double *d,
                     const double *V, double *s)
{
    const spk_vec_ops *c = spk_vec_ops_cpu();
    const spk_cg_ops *cc = spk_cg_ops_cpu();
    const spk_bicg_ops *bo = spk_bicg_ops_cpu();
    double *u = h_dup(n, x), *r = h_dup(n, y), *z = h_new(n);
    T_OK(c->dot(ctx, n, x, y, &s[0]));
    T_OK(c->nrm2(ctx, n, x, &s[1]));
    T_OK(c->dot2(ctx, n, x, y, d, &s[2], &s[3]));

    spk_cg_scalars S;                                 /* host memory is the CPU's device */
    memset(&S, 0, sizeof S);
    S.state = SPK_CG_RUN;
    spk_dot_sink sink = {&S.state, &S.pq, &S.count[0], NULL};
    T_OK(c->dot_sink(ctx, n, x, y, &sink));
    s[4] = S.pq;
    S.pq = 2.0;                                       /* alpha = r'z / p'Ap = 0.5 */
    S.rz = 1.0;
    T_OK(cc->r(ctx, n, &S, y, r, d));
    s[5] = S.rr;
    s[6] = S.rz_new;
    S.state = SPK_CG_RUN;
    T_OK(cc->r(ctx, n, &S, y, r, NULL));
    s[7] = S.rr;
    S.state = SPK_CG_RUN;
    T_OK(cc->rz(ctx, n, &S, r, x));
    s[8] = S.rz_new;

    T_OK(spk_gmres_ops_cpu()->cgs2(ctx, n, 3, V, n, u, &s[9]));   /* h1, h2, w'w: 7 sums */

    spk_bicg_scalars B;
    memset(&B, 0, sizeof B);
    B.maxit = 1000;
    B.div_thr = INFINITY;
    B.best = INFINITY;
    B.r0norm = B.rho = B.rho_old = B.snorm = B.rnorm = 1.0;
    B.alpha = 0.3;
    B.omega = 0.7;
    B.state = SPK_BICG_RUN;
    T_OK(bo->dots(ctx, n, &B, SPK_BICG_ALPHA, x, y));   /* (v, r0) with v = x, r0 = y */
    s[16] = B.r0v;
    s[17] = B.vv;
    B.state = SPK_BICG_RUN;
    B.alpha = 0.3;
    T_OK(bo->update_s(ctx, n, &B, x, r, d, z));         /* s = r - alpha v in r, s^ in z */
    s[18] = B.ss;
    B.state = SPK_BICG_RUN;
    free(u);
    u = h_dup(n, x);
    T_OK(bo->update_xr(ctx, n, &B, u, x, z, d, y, r));  /* p^ = x, t = d, r0 = y */
    s[19] = B.rho;
    s[20] = B.rr;
    const double hk[3] = {0.25, -0.5, 0.125};
    T_OK(c->gemv_n_sub(ctx, n, 3, V, n, hk, u));
    s[21] = u[0];
    free(u);
    free(r);
    free(z);
}

static void test_cpu_threads(void)
{
    const int64_t n = ((int64_t)1 << 20) + 3;
    double *x = h_rand(n, 51, -1, 1), *y = h_rand(n, 52, -1, 1), *d = h_rand(n, 53, 0.5, 2);
    double *V = h_rand(3 * n, 54, -1, 1);
    static const int threads[] = {1, 2, 3, 7, 16};
    const int saved = omp_get_max_threads();
    double want[T_NSUMS], got[T_NSUMS];
    omp_set_num_threads(threads[0]);
    cpu_sums(n, x, y, d, V, want);
    for (size_t t = 1; t < sizeof threads / sizeof threads[0]; t++) {
        omp_set_num_threads(threads[t]);
        cpu_sums(n, x, y, d, V, got);
        for (int k = 0; k < T_NSUMS; k++)
            T_CHECK(memcmp(&got[k], &want[k], sizeof got[k]) == 0,
                    "n=%lld: %s on %d threads %a, on 1 thread %a", (long long)n, t_sum_name[k],
                    threads[t], got[k], want[k]);
    }
    omp_set_num_threads(saved);
    free(x);
    free(y);
    free(d);
    free(V);
}
#else
static void test_cpu_threads(void) {}                /* one thread: nothing to compare */
#endif

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

/* ---- the batch driver of the device-scalar methods (solvers/batch.c) ---------------------
 * A fake method whose "device block" is an iteration counter that stops at stop_at, driven on
 * the CPU table in both shapes: the CPU's (depth 1, batches of 1) and the GPU's (depth 2,
 * timed batches up to max_batch). Every iteration must reach `take` exactly once and in
 * order, the run must end at min(stop_at, maxiter), and the iterations queued past the stop
 * at most two batches. Its residual is rate^it, or a rate that slows down at `bend` (a
 * prediction from the early rate is short), or none (NAN: nothing to predict from); with a
 * steady rate the driver queues nothing past the stop once it has two read-backs. */
typedef struct fake_block {
    int64_t it;
    int32_t done;
} fake_block;

typedef struct fake_method {
    fake_block dev;                  /* the "device" block                                   */
    fake_block host[2];
    int64_t    stop_at, steps, seen, takes, bend;
    int        order_ok, residual;   /* residual: 0 none, 1 steady, 2 slowing at bend        */
} fake_method;

/* The fake's ||r|| at iteration it: 0.5^it, or after `bend` 0.95 a step; thr puts the stop
 * at stop_at. */
static double fake_rnorm(const fake_method *f, int64_t it)
{
    if (f->residual == 1 || it <= f->bend)
        return pow(0.5, (double)it);
    return pow(0.5, (double)f->bend) * pow(0.95, (double)(it - f->bend));
}

static spk_status fake_step(void *self)
{
    fake_method *f = (fake_method *)self;
    f->steps++;
    if (!f->dev.done && ++f->dev.it == f->stop_at)
        f->dev.done = 1;
    return SPK_OK;
}

static spk_status fake_take(void *self, int slot, int64_t *it, int *done, double *rnorm)
{
    fake_method *f = (fake_method *)self;
    const fake_block *h = &f->host[slot];
    f->order_ok &= h->it >= f->seen;                 /* never backwards                   */
    f->seen = h->it;
    f->takes++;
    *it = h->it;
    *done = h->done;
    *rnorm = f->residual ? fake_rnorm(f, h->it) : NAN;
    return SPK_OK;
}

static void test_batch_driver(void)
{
    static const int64_t stops[] = {1, 2, 7, 33, 100, 1000000};
    static const int64_t maxits[] = {0, 1, 50, 500};
    const double slack = ctx->tune.batch_slack_s;
    ctx->tune.batch_slack_s = 0.0;                   /* no slack: the prediction alone     */
    for (int residual = 0; residual < 3; residual++)
        for (int shape = 0; shape < 2; shape++)
            for (size_t a = 0; a < sizeof stops / sizeof stops[0]; a++)
                for (size_t b = 0; b < sizeof maxits / sizeof maxits[0]; b++) {
                    spk_krylov k;
                    memset(&k, 0, sizeof k);
                    k.ctx = ctx;
                    k.ops = spk_vec_ops_cpu();
                    k.maxiter = maxits[b];
                    fake_method f;
                    memset(&f, 0, sizeof f);
                    f.stop_at = stops[a];
                    f.order_ok = 1;
                    f.residual = residual;
                    f.bend = stops[a] / 2;
                    const spk_batch_method m = {
                        .self = &f, .step = fake_step, .take = fake_take, .dev_block = &f.dev,
                        .bytes = sizeof f.dev, .host = {&f.host[0], &f.host[1]},
                        .gpu_shape = shape,
                        .thr = residual && stops[a] < 1000 ? fake_rnorm(&f, stops[a]) * 1.0001
                                                           : 0.0,
                        .r0 = 1.0,
                    };
                    int last = 7;
                    T_OK(spk_batch_run(&k, &m, 3, 8, &last));
                    const int64_t want = stops[a] < maxits[b] ? stops[a] : maxits[b];
                    /* a steady rate, predicted from the read-backs of iterations 0 and 3:
                     * nothing past the stop after the first two batches (6 iterations) */
                    const int64_t past = !shape            ? 0
                                         : residual == 1 ? (want < 6 ? 6 - want : 0)
                                                         : 2 * 8;
                    T_CHECK(f.order_ok && f.seen == want && f.dev.it == want &&
                                (want == 0 ? last == -1 : last == 0 || last == 1) &&
                                f.steps - want <= past && f.steps <= maxits[b],
                            "batch driver residual %d shape %d stop %lld maxiter %lld: seen "
                            "%lld, steps %lld, last %d, order %d", residual, shape,
                            (long long)stops[a], (long long)maxits[b], (long long)f.seen,
                            (long long)f.steps, last, f.order_ok);
                }
    ctx->tune.batch_slack_s = slack;
}

int main(int argc, char **argv)
{
    spk_device dev = t_device_from_args(argc, argv);
    ctx = t_context(dev);
    ops = spk_vec_ops_for(dev);
    co = spk_cg_ops_for(dev);
    go = spk_gmres_ops_for(dev);
    T_CHECK(ops->device == dev && co && co->device == dev && go && go->device == dev,
            "tables of device %d for %d", (int)ops->device, (int)dev);
    printf("test_vec on %s\n", spk_context_device_name(ctx));

    test_alloc_failure(dev);
    test_nrm2_range();
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        test_memory(n);
        test_reductions(n);
        test_elementwise(n);
        test_invert(n);
        for (int shape = 0; shape < 2; shape++)
            test_cg_fused(n, shape);
        for (int shape = 0; shape < 2; shape++)
            test_bicg_fused(n, shape);
    }
    test_batch_driver();
    static const int64_t gemv_n[] = {0, 1, 33, 1000 + 97, 65537, 1 << 20};
    static const int gemv_k[] = {1, 5, 31};
    for (size_t s = 0; s < sizeof gemv_n / sizeof gemv_n[0]; s++)
        for (size_t j = 0; j < 3; j++)
            if (gemv_n[s] < (1 << 20) || gemv_k[j] <= 5)   /* keep V under ~50 MB */
                test_gemv(gemv_n[s], gemv_k[j]);
    /* cgs2 over the same sizes, and past one launch's GS_CHUNK = 128 columns on the GPU */
    for (size_t s = 0; s < sizeof gemv_n / sizeof gemv_n[0]; s++)
        for (size_t j = 0; j < 3; j++)
            if (gemv_n[s] < (1 << 20) || gemv_k[j] <= 5)
                test_cgs2(gemv_n[s], gemv_k[j]);
    test_cgs2(1000 + 97, 130);
    test_cgs2(300, 257);
    /* the CUDA tile kernel of pass 2 takes k <= 32 in three register widths (8, 16, 32),
     * with threads per column that divide 256 or not; k = 33 is the rows kernel's again.
     * The default kernels, whatever the caller's environment. */
    unsetenv("SPK_GS_KERNEL");
    unsetenv("SPK_GS_ROWS");
    T_OK(spk_tuning_read(ctx, &ctx->tune));
    static const int tile_k[] = {8, 9, 16, 17, 32, 33};
    for (size_t j = 0; j < sizeof tile_k / sizeof tile_k[0]; j++) {
        test_cgs2(1000 + 97, tile_k[j]);
        test_cgs2(65537, tile_k[j]);
    }
    test_cgs2(300000, 32);                               /* several tiles per block */
    test_cgs2_args();
    if (dev == SPK_DEVICE_CPU)
        test_cpu_threads();
    /* every row count per lane of the CUDA rows kernel (SPK_GS_ROWS; the CPU ignores it),
     * each also over 2^20 rows, where a warp takes several steps of the row loop; with
     * SPK_GS_KERNEL=rows the rows kernel runs pass 2 too */
    static const char *const gs_rows[] = {"1", "2", "4"};
    setenv("SPK_GS_KERNEL", "rows", 1);
    for (size_t r = 0; r < 3; r++) {
        setenv("SPK_GS_ROWS", gs_rows[r], 1);
        T_OK(spk_tuning_read(ctx, &ctx->tune));
        test_cgs2(1, 1);
        test_cgs2(1000 + 97, 31);
        test_cgs2(65537, 5);
        test_cgs2(300, 257);
        test_cgs2(1 << 20, 3);
    }
    unsetenv("SPK_GS_ROWS");
    unsetenv("SPK_GS_KERNEL");
    T_OK(spk_tuning_read(ctx, &ctx->tune));
    T_OK(ops->sync(ctx));

    spk_context_destroy(ctx);
    return t_done("test_vec");
}
