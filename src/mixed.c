/* src/mixed.c -- mixed precision by iterative refinement (Wilkinson's defect correction;
 * Moler 1967; for Krylov inner solvers Anzt, Heuveline and Rocker, "Mixed precision iterative
 * refinement methods for linear systems", 2010). The method's SpMV reads A32 = fl32(A) in the
 * layout of A's own format, through the fp32 twin of A's backend row (spk_spmv_backend.fp32:
 * 4 bytes a DIA slot in place of 8, 8 an ELL slot or a CSR entry in place of 12); the
 * reductions and the preconditioner (built from the fp64 A) stay fp64. The inner vectors are
 * fp64, except for CG with no or a diagonal M on a twin with spmv_dot32 (ELL and BSR on a
 * GPU, csr32-cpu, dia32-cpu) where mixed_vectors32 says it pays: there the inner solve is
 * spk_cg32, its vectors stored in float (each product and sum still formed in fp64), which
 * halves the bytes of the iteration's vector steps and of the SpMV's x and y. Around it,
 * with the fp64 A:
 *
 *     r = b - A x;  until ||r|| <= max(rtol ||b||, atol):
 *         solve A32 d = r from d = 0 to max(1e-6, 0.5 thr / ||r||) relative;  x += d;
 *         r = b - A x
 *
 * Each step leaves r_new = (r - A32 d) + (A32 - A) d: the inner residual plus a term of about
 * 2^-24 ||A|| ||d||, so a step gains min(1e6, ~1 / (2^-24 cond(A))) and the loop reaches
 * the fp64 rtol whenever fp32 keeps A nonsingular (cond(A) well below 1e7). Convergence is
 * only ever declared on the fp64 residual. A step that gains less than a factor 2 (A32 too
 * far from A) or a fp32 breakdown finishes the solve in double from the x reached. Cost per
 * step: the inner iterations plus one fp64 SpMV, a copy and an axpy. */
#include "mixed.h"
#include "../kernels/formats.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* 1e-6: fp32's unit roundoff is 6e-8; an inner tolerance below ~10 of them would ask the fp32
 * operator for more than its values hold. */
#define MIXED_INNER_RTOL 1e-6
/* A step must cut ||b - A x|| by this factor, or the loop finishes in double. */
#define MIXED_MIN_GAIN 2.0
/* More steps than this: the fp32 operator is too far from A to be worth it. */
#define MIXED_MAX_STEPS 20
/* The inner tolerance's floor with fp32 vectors (spk_cg32): the recursive residual of float
 * vectors drifts from A32 d - r by some 2^-24 ||A|| ||d|| a step, so past what they hold an
 * inner solve spends iterations that the fp64 residual does not see, and how far they hold
 * depends on b. Measured, CG + Jacobi on poisson3d:150, rtol 1e-8, csr32-cpu (iterations;
 * double 387 and 518, fp64 vectors 421 and 568): with b = A x_rand, floor 1e-6 421, 3e-6
 * 426, 1e-5 465, 3e-5 497; with b uniform in [0, 1) (smooth), 1e-6 672, 3e-6 650, 1e-5 620
 * (3 steps). 3e-6 is the least total over the two. */
#define MIXED_INNER_RTOL32 3e-6

/* The first entry, in row order, that fp32 cannot hold to its relative precision. */
static int mixed_values_fit(const spk_csr *A, char *why, size_t len)
{
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const double a = fabs(A->val[p]);
            const char *what = a > FLT_MAX ? "does not fit fp32"
                             : a != 0.0 && a < FLT_MIN ? "is subnormal or zero in fp32" : NULL;
            if (what) {
                snprintf(why, len, "mixed: fell back to double: a(%lld,%d) = %.1e %s",
                         (long long)i + 1, A->colind[p] + 1, A->val[p], what);
                return 0;
            }
        }
    return 1;
}

/* The fp32 operator for the method's row: its twin, or csr32-cpu for a CPU row without one
 * (the CSR twin reads the canonical CSR, which every matrix has); NULL: none on its device. */
static const spk_spmv_backend *mixed_row(const spk_spmv_backend *be)
{
    if (be->fp32)
        return be->fp32;
    return be->device == SPK_DEVICE_CPU ? &spk_backend_csr32_cpu : NULL;
}

spk_status spk_mixed_prepare(spk_context *ctx, spk_mixed *m, spk_matrix *M, double a_scale)
{
    const spk_spmv_backend *be = M->be, *be32 = mixed_row(be);
    const int from_row = be32 && be32->setup_from;
    /* another layout than A32's: a borrowing twin must not outlive its row's state */
    if (m->be != be32 || (from_row && (m->row != M->state || m->gen != M->layout_gen))) {
        spk_mixed_free(m);
        m->be = be32;
        m->ok = 0;                       /* until A32 is made again below */
    }
    m->why[0] = '\0';
    if (!be32) {
        snprintf(m->why, sizeof m->why, "mixed: fell back to double: %s has no fp32 twin",
                 be->name);
        m->ok = 0;
        return SPK_OK;
    }
    spk_status st;
    if (from_row) {
        /* on the device, from the row's own values: nothing read on the host unless a value
         * does not fit (then its position, for the message) */
        int fits = 0;
        st = m->state ? be32->refill(ctx, m->state, M->state, &fits)
                      : be32->setup_from(ctx, M->state, &m->state, &fits);
        if (st) {                        /* solves run in double; the next prepare retries */
            m->ok = 0;
            m->gen = 0;
            return st;
        }
        m->row = M->state;
        m->gen = M->layout_gen;
        m->ok = fits;
        if (!fits) {
            if ((st = spk_matrix_host_values(ctx, M)))
                return st;
            if (mixed_values_fit(&M->csr, m->why, sizeof m->why))   /* cannot differ: said */
                snprintf(m->why, sizeof m->why, "mixed: fell back to double: a value of %s "
                         "leaves fp32's range", be->name);
        }
    } else {
        if ((st = spk_matrix_host_values(ctx, M)))
            return st;
        m->ok = mixed_values_fit(&M->csr, m->why, sizeof m->why);
    }
    /* a_scale != 1 needs max |a| outside [2^-128, 2^128], which the values check refuses
     * already; kept so that a change of either range cannot let a scaled system through */
    if (m->ok && a_scale != 1.0) {
        snprintf(m->why, sizeof m->why, "mixed: fell back to double: the system runs scaled by "
                 "2^%d (A's magnitudes leave fp32's range)", ilogb(a_scale));
        m->ok = 0;
    }
    if (from_row)
        return SPK_OK;
    m->gen = M->layout_gen;
    if (!m->ok)
        return SPK_OK;
    st = m->state ? m->be->update(ctx, m->state, &M->csr) : m->be->setup(ctx, &M->csr, &m->state);
    if (st) {                            /* solves run in double; the next prepare retries */
        m->ok = 0;
        m->gen = 0;
    }
    return st;
}

void spk_mixed_free(spk_mixed *m)
{
    if (!m)
        return;
    if (m->be)
        m->be->destroy(m->state);
    m->state = NULL;
    m->be = NULL;
    m->row = NULL;
}

/* The loop's state: the fp64 operator and the caller's settings, put back after each inner
 * solve. */
typedef struct mixed_run {
    spk_krylov             *k;
    const spk_mixed        *m;
    spk_method_fn           fn;
    spk_result             *res;
    const spk_options      *opt;
    const spk_spmv_backend *be;
    const void             *state;
    int64_t                 maxiter, used, steps;
    int                     vec32;   /* the inner solves are spk_cg32's (fp32 vectors)      */
} mixed_run;

/* fn on `sub` (a result of its own: bnorm = the norm of its right-hand side) from x, with
 * operator (be, state), options o and the iterations left; history and monitor go to the
 * caller's result, numbered on. */
static spk_status mixed_inner(mixed_run *w, const spk_spmv_backend *be, const void *state,
                              const spk_options *o, spk_result *sub, const double *rhs, double *x)
{
    spk_krylov *k = w->k;
    k->be = be;
    k->state = state;
    k->opt = o;
    k->res = sub;
    k->maxiter = w->maxiter - w->used;
    k->outer = w->res;
    k->it_base = w->used;
    k->step = w->steps + 1;
    spk_status st = be == w->m->be && w->vec32 ? spk_cg32(k, rhs, x) : w->fn(k, rhs, x);
    k->be = w->be;
    k->state = w->state;
    k->opt = w->opt;
    k->res = w->res;
    k->maxiter = w->maxiter;
    k->outer = NULL;
    w->used += sub->iterations;
    w->res->iterations = w->used;
    return st;
}

/* r = b - A x with the fp64 A and *rn = ||r||: the only residual that decides convergence. */
static spk_status fp64_residual(spk_krylov *k, const double *b, const double *x, double *r,
                                double *rn)
{
    spk_status st = spk_apply_A(k, x, r);
    if (!st)
        st = k->ops->axpby(k->ctx, k->n, 1.0, b, -1.0, r);
    if (!st)
        st = k->ops->nrm2(k->ctx, k->n, r, rn);
    return st;
}

/* The method in double from the current x on b, to the caller's tolerances: its reason and
 * residual are the solve's. A convergence it reports is checked, as the loop's own, on the
 * fp64 residual against the threshold itself (not the SPK_MISMATCH_FACTOR margin the double
 * path allows its recursive residual): a mixed solve never reports a convergence above it. */
static spk_status mixed_finish_double(mixed_run *w, const double *b, double *x, double *r,
                                      double thr)
{
    spk_krylov *k = w->k;
    spk_result sub, *res = w->res;
    memset(&sub, 0, sizeof sub);
    sub.bnorm = res->bnorm;
    spk_status st = mixed_inner(w, w->be, w->state, w->opt, &sub, b, x);
    res->reason = sub.reason;
    res->rnorm = sub.rnorm;
    snprintf(res->reason_detail, sizeof res->reason_detail, "%s", sub.reason_detail);
    double rn = 0.0;
    if (st || sub.reason <= 0)
        return st;
    if ((st = fp64_residual(k, b, x, r, &rn)))
        return st;
    if (!(rn <= thr)) {
        res->reason = SPK_DIVERGED_TRUE_RESIDUAL_MISMATCH;
        res->rnorm = rn;
        snprintf(res->reason_detail, sizeof res->reason_detail, "%s's recursive residual passed "
                 "the threshold in double, ||b - Ax|| = %.3e did not (%.3e): the tolerance is "
                 "below what A's conditioning allows", spk_method_str(res->method), rn, thr);
    }
    return st;
}

/* What an inner solve's end means for the loop: go on (x += d), stop with `*stop` after
 * x += d, stop without it, or finish in double. */
enum { MIX_GO_ON, MIX_STOP_AFTER, MIX_STOP_KEEP_X, MIX_TO_DOUBLE };
static int mixed_verdict(spk_reason r)
{
    if (r > 0 || r == SPK_DIVERGED_MAXIT)           /* MAXIT: the budget is spent; r decides */
        return MIX_GO_ON;
    if (r == SPK_DIVERGED_TIME_LIMIT || r == SPK_DIVERGED_INTERRUPTED ||
        r == SPK_DIVERGED_STAGNATION)
        return MIX_STOP_AFTER;
    if (r == SPK_DIVERGED_DTOL)                      /* d grew past dtol: not a correction */
        return MIX_STOP_KEEP_X;
    return MIX_TO_DOUBLE;                            /* a breakdown, NaN, indefinite in fp32 */
}

/* Whether CG's inner vectors go to fp32 (spk_cg32), where it can run: SPK_MIXED_VECTORS=fp64
 * or fp32 says; by default on a GPU where its five fp64 vectors (x, r, p, q, D^-1: 40 bytes
 * a row) would pass the cache, so that halving them halves traffic to memory; below that they
 * stay in the L2 and fp32 vectors only cost iterations. Measured on the H200 (CG + Jacobi in
 * mixed, docs/benchmarks.md): poisson3d:150 (135 MB of vectors) 50.9 ms with fp32 vectors
 * against 64.1 with fp64 ones, poisson3d:200 128.5 against 177.6; lame3d:48 (14 MB, inside
 * the 50 MB L2) 45.7 against 43.8. On the CPU the default is fp64: on the 2-vCPU VM fp32
 * vectors made poisson3d:100's iteration only 5% faster (2.76 against 2.90 ms, DIA) for 8%
 * more iterations (409 against 379), and on the ill-conditioned nos6 they took 184
 * iterations against 123. */
static int mixed_vectors32(const spk_krylov *k)
{
    const int knob = k->ctx->tune.mixed_vectors;
    if (knob)
        return knob == 2;
    return k->ctx->device != SPK_DEVICE_CPU && 40.0 * (double)k->n > SPK_CACHE_BYTES_GPU;
}

spk_status spk_mixed_solve(spk_krylov *k, const spk_mixed *m, spk_method_fn fn, const double *b,
                           double *x)
{
    spk_context *ctx = k->ctx;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    mixed_run w = {.k = k, .m = m, .fn = fn, .res = k->res, .opt = k->opt, .be = k->be,
                   .state = k->state, .maxiter = k->maxiter};
    spk_result *res = w.res;
    const double thr = spk_stop_threshold(k->opt, res->bnorm);
    if (fn == spk_cg) {                              /* spk_cg32_ok reads the operator */
        k->be = m->be;
        w.vec32 = spk_cg32_ok(k) && mixed_vectors32(k);
        k->be = w.be;
    }
    const double inner_floor = w.vec32 ? MIXED_INNER_RTOL32 : MIXED_INNER_RTOL;
    double *r, *d, rn = 0.0, prev = INFINITY;
    spk_reason stop = SPK_REASON_NONE;
    spk_status st = spk_krylov_vec(k, SPK_WS_MIX_R, n, &r);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_MIX_D, n, &d);
    res->iterations = 0;                             /* a second method (auto) starts over */
    res->refinement_steps = 0;
    res->precision_reason[0] = '\0';
    for (; !st; prev = rn) {
        if ((st = fp64_residual(k, b, x, r, &rn)))
            break;
        res->rnorm = rn;
        if (w.steps == 0 && (st = spk_stop_record(k, 0, 0, rn)))
            break;
        res->reason = spk_stop_check(k->opt, res->bnorm, rn);
        if (res->reason == SPK_REASON_NONE && stop == SPK_REASON_NONE)
            stop = k->host_stop;
        if (res->reason == SPK_REASON_NONE && stop == SPK_REASON_NONE && w.used >= w.maxiter)
            stop = SPK_DIVERGED_MAXIT;
        if (res->reason != SPK_REASON_NONE || stop != SPK_REASON_NONE) {
            if (res->reason == SPK_REASON_NONE)
                res->reason = stop;
            break;
        }
        if (w.steps > 0 && !(rn * MIXED_MIN_GAIN <= prev)) {
            snprintf(res->precision_reason, sizeof res->precision_reason, "mixed: step %lld "
                     "reduced ||b - Ax|| by only %.2gx (fp32 values too far from A): finished "
                     "in double from there", (long long)w.steps, prev / rn);
            return mixed_finish_double(&w, b, x, r, thr);
        }
        if (w.steps == MIXED_MAX_STEPS) {
            snprintf(res->precision_reason, sizeof res->precision_reason, "mixed: %d refinement "
                     "steps left ||b - Ax|| / thr = %.2g: finished in double from there",
                     MIXED_MAX_STEPS, rn / thr);
            return mixed_finish_double(&w, b, x, r, thr);
        }
        /* A32 d = r from d = 0, the last step aiming just below the threshold */
        spk_options o = *w.opt;
        o.atol = 0.0;
        o.rtol = 0.5 * thr / rn > inner_floor ? 0.5 * thr / rn : inner_floor;
        spk_result sub;
        memset(&sub, 0, sizeof sub);
        sub.bnorm = rn;
        if ((st = ops->fill(ctx, n, 0.0, d)))
            break;
        if ((st = mixed_inner(&w, m->be, m->state, &o, &sub, r, d)))
            break;
        w.steps++;
        res->refinement_steps = w.steps;
        const int v = mixed_verdict(sub.reason);
        if (v == MIX_TO_DOUBLE) {
            snprintf(res->precision_reason, sizeof res->precision_reason, "mixed: step %lld's "
                     "fp32 solve stopped with %s: finished in double from there",
                     (long long)w.steps, spk_reason_str(sub.reason));
            return mixed_finish_double(&w, b, x, r, thr);
        }
        if (v != MIX_GO_ON) {
            stop = sub.reason;
            snprintf(res->reason_detail, sizeof res->reason_detail, "%s", sub.reason_detail);
        }
        if (v != MIX_STOP_KEEP_X && (st = ops->axpy(ctx, n, 1.0, d, x)))
            break;
    }
    if (!st && !res->precision_reason[0])
        snprintf(res->precision_reason, sizeof res->precision_reason, "mixed: %lld refinement "
                 "step%s in fp64 around %s on fp32 values%s (%s)", (long long)w.steps,
                 w.steps == 1 ? "" : "s", spk_method_str(res->method),
                 w.vec32 ? " and vectors" : "", m->be->name);
    return st;
}
