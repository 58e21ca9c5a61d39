/* solvers/bicgstab.c -- preconditioned BiCGStab (van der Vorst, SIAM J. Sci. Stat. Comput.
 * 13(2), 1992; Barrett et al., Templates, 1994, fig. 2.10; Saad, Iterative Methods for Sparse
 * Linear Systems, 2nd ed., alg. 7.7). RIGHT preconditioning: the method runs on A M^-1 y = b
 * with x = M^-1 y, so r is the true unpreconditioned residual b - A x and the stopping test
 * sees the same number as SciPy and PETSc.
 *
 * Per iteration (one iteration = one full step, 2 SpMVs, as SciPy counts): 2 SpMVs, 2
 * preconditioner applies, 4 reductions -- (r0,v) with v'v, ||s||, (t,s) with t't, and the
 * next (r0,r) with r'r, each pair in one dot2 pass -- and 5 vector kernels. Memory traffic
 * beyond the matrix, in n-doubles: p update 4, Av 2, dot2 2, x += a p 3, s = r - a v 3,
 * ||s|| 1, As 2, dot2 2, x += w s 3, r = s - w t 3, dot2 2: 27n; Jacobi adds 2 x 3n = 33n.
 *
 * The convergence test is made twice per iteration: on s at the half step (x += alpha p_hat
 * and stop when ||s|| passes, so omega = 0/0 never happens) and on r at the end.
 *
 * Breakdowns (SPK_DIVERGED_BREAKDOWN) use a RELATIVE test: an inner product (a, b) is taken as
 * zero when |(a, b)| <= BICG_BREAKDOWN_TOL * ||a|| ||b|| (the cosine of the angle between a
 * and b below eps^2: in practice an exact zero or an underflow). SciPy's bicgstab
 * (scipy/sparse/linalg/_isolve/iterative.py) tests |rho| < eps^2 and |omega| < eps^2 in
 * absolute terms, which depends on the scaling of A and b; the cosine form does not.
 *   rho   = (r0, r) ~ 0                 the shadow residual is orthogonal to r
 *   (r0, v) ~ 0                         alpha = rho / (r0, v) is undefined
 *   (t, s) ~ 0 (incl. t't = 0, s != 0)  omega = 0: the method stagnates (and beta = ../omega)
 * NaN or Inf in any of these, or in a norm, is SPK_DIVERGED_NANORINF; x is never updated with
 * a non-finite step. */
#include "solver.h"

#include <float.h>
#include <math.h>

/* Cosine threshold of the breakdown test: eps^2 (SciPy's rhotol = omegatol, made relative).
 * Not eps: the cosine of (r0, r) often sits near 1e-16 for many steps while the method still
 * converges; with eps, watt_2 + Jacobi broke down at step 2 (converges in 312 with eps^2),
 * sherman3 + Jacobi at 249 (630), sherman1 + Jacobi in HYB at 105 (230). */
#define BICG_BREAKDOWN_TOL (DBL_EPSILON * DBL_EPSILON)

typedef struct bicg {
    spk_krylov *k;
    double *r, *r0, *p, *v, *t;  /* r holds s between the half steps                      */
    double *ph, *sh;             /* M^-1 p and M^-1 s: one buffer, or aliases without M  */
    double *buf;                 /* the Jacobi buffer behind ph/sh (NULL without M)      */
    double rho, rho_old, alpha, omega, r0norm, rnorm;
} bicg;

/* The reason an inner product `num` of vectors with norms na, nb gives, used as a divisor. */
static spk_reason dot_reason(double num, double na, double nb)
{
    if (!isfinite(num) || !isfinite(na) || !isfinite(nb))
        return SPK_DIVERGED_NANORINF;
    double scale = na * nb;
    if (!spk_denominator_ok(num, scale) || fabs(num) <= BICG_BREAKDOWN_TOL * scale)
        return SPK_DIVERGED_BREAKDOWN;
    return SPK_REASON_NONE;
}

/* The end of an iteration: the record, the stopping test. */
static spk_status bicg_finish(bicg *w, int64_t it, double rnorm)
{
    spk_result *res = w->k->res;
    res->iterations = it;
    res->rnorm = rnorm;
    res->reason = spk_stop_check(w->k->opt, res->bnorm, rnorm);
    return spk_stop_record(w->k, it, 0, rnorm);
}

/* First half: p = r + beta (p - omega v), v = A M^-1 p, alpha, x += alpha p_hat, s = r - alpha v.
 * Sets res->reason on breakdown (x untouched) or when ||s|| passes the test. */
static spk_status bicg_half_step(bicg *w, int64_t it, double *x, double *snorm)
{
    spk_krylov *k = w->k;
    const spk_vec_ops *ops = k->ops;
    spk_context *ctx = k->ctx;
    const int64_t n = k->n;
    spk_status st;
    double beta = 0.0, r0v, vv;

    if ((k->res->reason = dot_reason(w->rho, w->r0norm, w->rnorm)))
        return SPK_OK;                               /* rho = (r0, r) ~ 0            */
    if (it > 1)                                      /* rho_old, omega passed before  */
        beta = (w->rho / w->rho_old) * (w->alpha / w->omega);
    if ((st = ops->bicg_p(ctx, n, w->r, beta, w->omega, w->v, w->p)) ||
        (k->dinv && (st = spk_precond_apply(k, w->p, w->ph))) ||
        (st = spk_apply_A(k, w->ph, w->v)) || (st = ops->dot2(ctx, n, w->v, w->r0, w->v, &r0v, &vv)))
        return st;
    if ((k->res->reason = dot_reason(r0v, w->r0norm, sqrt(vv))))
        return SPK_OK;                               /* (r0, v) ~ 0                  */
    w->alpha = w->rho / r0v;
    if (!isfinite(w->alpha)) {
        k->res->reason = SPK_DIVERGED_NANORINF;
        return SPK_OK;
    }
    if ((st = ops->axpy(ctx, n, w->alpha, w->ph, x)) ||          /* x += alpha p_hat  */
        (st = ops->axpy(ctx, n, -w->alpha, w->v, w->r)) ||       /* s = r - alpha v   */
        (st = ops->nrm2(ctx, n, w->r, snorm)))
        return st;
    if (spk_stop_check(k->opt, k->res->bnorm, *snorm) != SPK_REASON_NONE)
        return bicg_finish(w, it, *snorm);           /* converged (or NaN) at s      */
    return SPK_OK;
}

/* Second half: t = A M^-1 s, omega = (t,s)/(t,t), x += omega s_hat, r = s - omega t, and the
 * next rho = (r0, r) with r'r in one pass. On omega breakdown x = x + alpha p_hat (done) is
 * the iterate whose residual is s, so the iteration is recorded with ||s||. */
static spk_status bicg_second_half(bicg *w, int64_t it, double *x, double snorm)
{
    spk_krylov *k = w->k;
    const spk_vec_ops *ops = k->ops;
    spk_context *ctx = k->ctx;
    const int64_t n = k->n;
    spk_status st;
    double ts, tt, rr, rho_new;

    if ((k->dinv && (st = spk_precond_apply(k, w->r, w->sh))) ||
        (st = spk_apply_A(k, w->sh, w->t)) || (st = ops->dot2(ctx, n, w->t, w->r, w->t, &ts, &tt)))
        return st;
    spk_reason why = dot_reason(ts, snorm, sqrt(tt)); /* (t, s) ~ 0 or t = 0         */
    if (why == SPK_REASON_NONE) {
        w->omega = ts / tt;                          /* tt > 0 since (t, s) != 0      */
        if (!isfinite(w->omega))
            why = SPK_DIVERGED_NANORINF;
    }
    if (why != SPK_REASON_NONE) {
        st = bicg_finish(w, it, snorm);
        k->res->reason = why;
        return st;
    }
    if ((st = ops->axpy(ctx, n, w->omega, w->sh, x)) ||          /* x += omega s_hat  */
        (st = ops->axpy(ctx, n, -w->omega, w->t, w->r)) ||       /* r = s - omega t   */
        (st = ops->dot2(ctx, n, w->r, w->r0, w->r, &rho_new, &rr)))
        return st;
    w->rho_old = w->rho;
    w->rho = rho_new;
    w->rnorm = sqrt(rr);
    return bicg_finish(w, it, w->rnorm);
}

/* r = b - A x, r0 = r, rho = r'r; record iteration 0. */
static spk_status bicg_start(bicg *w, const double *b, const double *x)
{
    spk_krylov *k = w->k;
    spk_status st;
    double rr;
    if ((st = spk_apply_A(k, x, w->r)) || (st = k->ops->axpby(k->ctx, k->n, 1.0, b, -1.0, w->r)) ||
        (st = k->ops->copy(k->ctx, k->n, w->r, w->r0)) ||
        (st = k->ops->dot(k->ctx, k->n, w->r, w->r, &rr)))
        return st;
    w->rho = rr;
    w->rnorm = w->r0norm = sqrt(rr);
    return bicg_finish(w, 0, w->rnorm);
}

spk_status spk_bicgstab(spk_krylov *k, const double *b, double *x)
{
    spk_context *ctx = k->ctx;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    bicg w = {k, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    spk_status st;

    /* The solver's workspace (kept between solves). p and v start at zero, so that the first
     * p = r + 0 (p - 0 v) is r even when the last solve left NaN in them. */
    if ((st = spk_krylov_vec(k, SPK_WS_METHOD + 0, n, &w.r)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 1, n, &w.r0)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 2, n, &w.p)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 3, n, &w.v)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 4, n, &w.t)) ||
        (k->dinv && (st = spk_krylov_vec(k, SPK_WS_METHOD + 5, n, &w.buf))) ||
        (st = ops->fill(ctx, n, 0.0, w.p)) || (st = ops->fill(ctx, n, 0.0, w.v)))
        return st;
    /* x += alpha p_hat happens before s_hat is needed, so one buffer serves both; M = I
     * aliases p_hat to p and s_hat to s (= r) and skips the copies. */
    w.ph = k->dinv ? w.buf : w.p;
    w.sh = k->dinv ? w.buf : w.r;

    if ((st = bicg_start(&w, b, x)) || k->res->reason != SPK_REASON_NONE)
        return st;
    int64_t it;
    for (it = 1; it <= k->maxiter; it++) {
        double snorm = 0.0;
        if ((st = bicg_half_step(&w, it, x, &snorm)) || k->res->reason != SPK_REASON_NONE)
            break;
        if ((st = bicg_second_half(&w, it, x, snorm)) || k->res->reason != SPK_REASON_NONE)
            break;
    }
    if (!st && it > k->maxiter)
        k->res->reason = SPK_DIVERGED_MAXIT;
    return st;
}
