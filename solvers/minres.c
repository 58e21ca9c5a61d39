/* solvers/minres.c -- preconditioned MINRES (Paige & Saunders, SIAM J. Numer. Anal. 12(4),
 * 1975) for A symmetric, possibly indefinite, and M symmetric positive definite, written as
 * SciPy's scipy/sparse/linalg/_isolve/minres.py writes it (the same recurrences and names, so
 * that its iterates are ours): the preconditioned Lanczos process in the M^-1 inner product
 * builds T_k, whose QR factorization by reflections [cs sn; sn -cs] is updated one column a
 * step; x moves along the directions w = (v - epsln w'' - delta w') / gamma.
 *
 * The stopping test is the library's, on the unpreconditioned ||b - A x||: SciPy's phibar is
 * the preconditioned norm ||r||_M^-1, equal to ||r|| only for M = I. With M, the residual is
 * carried by r_k = sn^2 r_{k-1} - (cs phibar_{k-1} / gamma) r2 (from r_k = phibar_k V_{k+1}
 * Q_k' e_{k+1}; r2 is beta_{k+1} times M times the next Lanczos vector), and the caller
 * confirms convergence with the true residual, as for CG. SciPy's other tests (a least-squares
 * solution, cond(A) past 0.1/eps, ||A|| ||x|| eps past ||r0||) are not the library's and are
 * left out; dtol, stagnation, max_time and the monitor are the library's.
 *
 * A reason, never a NaN: r'M^-1 r < 0 is M indefinite (SciPy's "indefinite preconditioner",
 * SPK_DIVERGED_INDEFINITE with the value in reason_detail); M^-1 r = 0 for r != 0 or a
 * vanishing gamma is BREAKDOWN; beta_{k+1} = 0 is the invariant subspace, x exact
 * (HAPPY_BREAKDOWN once the true residual agrees).
 *
 * Per iteration: 1 SpMV, 1 preconditioner apply (none for M = I), 2 reductions (3 with M),
 * each read back to the host; traffic beyond the matrix, in n-doubles: v 2, A v 2, the two
 * Lanczos axpys 6, v't 2, ||r2|| 1 (r2'y 2), w 6, x 3: 22 for M = I; with M 27 plus the apply's
 * own (the residual's recurrence 3, its norm 1). Only the vector-ops table, spk_apply_A and
 * spk_precond_apply are used: it runs unchanged on every device. Memory: 6 vectors of n (8
 * with M) beside x and b. */
#include "solver.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

/* beta_{k+1} <= tol ||T_k||_F: the Krylov space is invariant to rounding (SciPy tests
 * beta_2 / beta_1 <= 10 eps at the first step only; GMRES's 16 eps applies at every step). */
#define MINRES_HAPPY_TOL (16.0 * DBL_EPSILON)
/* A happy breakdown is HAPPY_BREAKDOWN when ||b - A x|| <= this * ||b||, else BREAKDOWN. */
#define MINRES_HAPPY_RESID (1.0e4 * DBL_EPSILON)

typedef struct mr {
    spk_krylov *k;
    const double *b;
    double *x;
    double *r1, *r2, *t;       /* the Lanczos vectors before M^-1, and the next one       */
    double *y, *v;             /* y = M^-1 r2 (r2 itself for M = I); v = y / beta         */
    double *w1, *w2;           /* the directions w_{k-2}, w_{k-1}                          */
    double *r;                 /* the residual b - A x by its recurrence; NULL for M = I  */
    double beta1, beta, oldb, dbar, epsln, phibar, cs, sn, tnorm2;
    double div_thr, best;      /* dtol's threshold; the smallest residual, at best_it     */
    int64_t best_it;
} mr;

static spk_status mr_workspace(mr *m)
{
    spk_krylov *k = m->k;
    double **slot[] = {&m->r1, &m->r2, &m->t, &m->v, &m->w1, &m->w2, &m->y, &m->r};
    const int nslot = k->pc->identity ? 6 : 8;
    for (int i = 0; i < nslot; i++) {
        spk_status st = spk_krylov_vec(k, SPK_WS_METHOD + i, k->n, slot[i]);
        if (st)
            return st;
    }
    if (k->pc->identity)
        m->y = m->r = NULL;
    return SPK_OK;
}

/* r2 = b - A x, y = M^-1 r2, w1 = w2 = 0; *rnorm = ||r2||; m->beta1 = r2'y, whose sign the
 * caller checks before its root (for M = I: ||r2|| itself, never squared). */
static spk_status mr_start(mr *m, double *rnorm)
{
    spk_krylov *k = m->k;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    spk_status st = spk_apply_A(k, m->x, m->r2);
    if (!st)
        st = ops->axpby(k->ctx, n, 1.0, m->b, -1.0, m->r2);
    if (!st)
        st = ops->nrm2(k->ctx, n, m->r2, rnorm);
    if (!st)
        st = ops->fill(k->ctx, n, 0.0, m->w1);
    if (!st)
        st = ops->fill(k->ctx, n, 0.0, m->w2);
    if (st)
        return st;
    if (!m->y) {
        m->y = m->r2;
        m->beta1 = *rnorm;
        return SPK_OK;
    }
    if ((st = spk_precond_apply(k, m->r2, m->y)) || (st = ops->copy(k->ctx, n, m->r2, m->r)))
        return st;
    return ops->dot(k->ctx, n, m->r2, m->y, &m->beta1);
}

/* The reason r'M^-1 r = q gives when it is not positive, with reason_detail. */
static spk_reason mr_pc_reason(mr *m, double q, int64_t it)
{
    spk_result *res = m->k->res;
    if (isnan(q) || isinf(q))
        return SPK_DIVERGED_NANORINF;
    if (q < 0)
        snprintf(res->reason_detail, sizeof res->reason_detail, "indefinite preconditioner: "
                 "r'M^-1 r = %.3e < 0 at iteration %lld; MINRES needs M symmetric positive "
                 "definite", q, (long long)it);
    else
        snprintf(res->reason_detail, sizeof res->reason_detail, "M^-1 r = 0 for r != 0 at "
                 "iteration %lld: the preconditioner is singular", (long long)it);
    return q < 0 ? SPK_DIVERGED_INDEFINITE : SPK_DIVERGED_BREAKDOWN;
}

/* One Lanczos step: v = y / beta;  t = A v - (beta / oldb) r1;  alfa = v't;
 * t -= (alfa / beta) r2;  (r1, r2) = (r2, t);  y = M^-1 r2;  beta = sqrt(r2'y). */
static spk_status mr_lanczos(mr *m, int64_t it, double *alfa, spk_reason *why)
{
    spk_krylov *k = m->k;
    spk_context *ctx = k->ctx;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    spk_status st;
    if (m->y == m->r2) {                             /* M = I: v apart from r2       */
        st = ops->axpby(ctx, n, 1.0 / m->beta, m->r2, 0.0, m->v);
    } else {                                         /* v takes y's vector           */
        double *s = m->v;
        m->v = m->y;
        m->y = s;
        st = ops->scal(ctx, n, 1.0 / m->beta, m->v);
    }
    if (!st)
        st = spk_apply_A(k, m->v, m->t);
    if (!st && it >= 2)
        st = ops->axpy(ctx, n, -m->beta / m->oldb, m->r1, m->t);
    if (!st)
        st = ops->dot(ctx, n, m->v, m->t, alfa);
    if (!st)
        st = ops->axpy(ctx, n, -*alfa / m->beta, m->r2, m->t);
    if (st)
        return st;
    double *free_vec = m->r1;
    const int identity = m->y == m->r2;
    m->r1 = m->r2;
    m->r2 = m->t;
    m->t = free_vec;
    m->oldb = m->beta;
    *why = SPK_REASON_NONE;
    if (identity) {
        m->y = m->r2;
        return ops->nrm2(ctx, n, m->r2, &m->beta);
    }
    double q;
    if ((st = spk_precond_apply(k, m->r2, m->y)) || (st = ops->dot(ctx, n, m->r2, m->y, &q)))
        return st;
    if (!(q >= 0) || !isfinite(q) || !isfinite(*alfa)) {
        *why = !isfinite(*alfa) ? SPK_DIVERGED_NANORINF : mr_pc_reason(m, q, it);
        return SPK_OK;
    }
    m->beta = sqrt(q);
    return SPK_OK;
}

/* The QR update of T_k and the step: the old reflection on column k, the new one, then
 * w = (v - oldeps w1 - delta w2) / gamma into w1's vector, x += phi w, and r by its
 * recurrence. *rnorm: ||r|| (phibar for M = I). *why: BREAKDOWN when gamma vanishes. */
static spk_status mr_step(mr *m, double alfa, double *rnorm, spk_reason *why)
{
    spk_krylov *k = m->k;
    spk_context *ctx = k->ctx;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    const double oldeps = m->epsln;
    const double delta = m->cs * m->dbar + m->sn * alfa;
    const double gbar = m->sn * m->dbar - m->cs * alfa;
    m->epsln = m->sn * m->beta;
    m->dbar = -m->cs * m->beta;
    m->tnorm2 += alfa * alfa + m->oldb * m->oldb + m->beta * m->beta;
    const double gamma = hypot(gbar, m->beta);
    *why = SPK_REASON_NONE;
    if (!isfinite(gamma) || !isfinite(m->tnorm2)) {
        *why = SPK_DIVERGED_NANORINF;
        return SPK_OK;
    }
    if (!spk_denominator_ok(gamma, sqrt(m->tnorm2))) {
        *why = SPK_DIVERGED_BREAKDOWN;              /* A singular on the Krylov space   */
        snprintf(k->res->reason_detail, sizeof k->res->reason_detail, "MINRES: gamma = %.3e "
                 "(the QR factor of T_k is singular): A looks singular", gamma);
        return SPK_OK;
    }
    const double phibar_old = m->phibar;
    m->cs = gbar / gamma;
    m->sn = m->beta / gamma;
    const double phi = m->cs * m->phibar;
    m->phibar = m->sn * m->phibar;
    double *w = m->w1;                               /* w_{k-2} is not needed after this */
    spk_status st = ops->axpby(ctx, n, -delta / gamma, m->w2, -oldeps / gamma, w);
    if (!st)
        st = ops->axpy(ctx, n, 1.0 / gamma, m->v, w);
    if (!st)
        st = ops->axpy(ctx, n, phi, w, m->x);
    if (st)
        return st;
    m->w1 = m->w2;
    m->w2 = w;
    if (!m->r) {
        *rnorm = fabs(m->phibar);
        return SPK_OK;
    }
    /* r_k = sn^2 r_{k-1} - (cs phibar_{k-1} / gamma) r2 */
    st = ops->axpby(ctx, n, -m->cs * phibar_old / gamma, m->r2, m->sn * m->sn, m->r);
    return st ? st : ops->nrm2(ctx, n, m->r, rnorm);
}

/* The tests beyond convergence on rnorm at iteration it: dtol, stagnation, the host's. */
static spk_reason mr_progress(mr *m, int64_t it, double rnorm)
{
    spk_krylov *k = m->k;
    if (rnorm > m->div_thr)
        return SPK_DIVERGED_DTOL;
    if (rnorm < SPK_STAG_FACTOR * m->best) {
        m->best = rnorm;
        m->best_it = it;
    } else if (k->opt->stagnation > 0 && it - m->best_it >= k->opt->stagnation) {
        return SPK_DIVERGED_STAGNATION;
    }
    return k->host_stop;
}

/* beta_{k+1} = 0: the Krylov space is invariant and x is exact to rounding if the true
 * residual (into the free vector t) agrees. */
static spk_status mr_happy(mr *m, spk_reason *why)
{
    spk_krylov *k = m->k;
    double tr;
    spk_status st = spk_apply_A(k, m->x, m->t);
    if (!st)
        st = k->ops->axpby(k->ctx, k->n, 1.0, m->b, -1.0, m->t);
    if (!st)
        st = k->ops->nrm2(k->ctx, k->n, m->t, &tr);
    if (st)
        return st;
    *why = spk_stop_check(k->opt, k->res->bnorm, tr);
    if (*why == SPK_REASON_NONE)
        *why = tr <= MINRES_HAPPY_RESID * k->res->bnorm ? SPK_CONVERGED_HAPPY_BREAKDOWN
                                                        : SPK_DIVERGED_BREAKDOWN;
    return SPK_OK;
}

spk_status spk_minres(spk_krylov *k, const double *b, double *x)
{
    spk_result *res = k->res;
    mr m = {.k = k, .b = b, .x = x, .cs = -1.0};
    double rnorm;
    spk_status st = mr_workspace(&m);
    if (st || (st = mr_start(&m, &rnorm)))
        return st;
    res->rnorm = rnorm;
    m.div_thr = spk_stop_dtol_threshold(k->opt, res->bnorm, rnorm);
    m.best = rnorm;
    if ((st = spk_stop_record(k, 0, 0, rnorm)))
        return st;
    res->reason = spk_stop_check(k->opt, res->bnorm, rnorm);
    if (res->reason == SPK_REASON_NONE)
        res->reason = k->host_stop;
    if (res->reason == SPK_REASON_NONE && !(m.beta1 > 0 && isfinite(m.beta1)))
        res->reason = mr_pc_reason(&m, m.beta1, 0);
    if (res->reason != SPK_REASON_NONE)
        return SPK_OK;
    if (m.y != m.r2)
        m.beta1 = sqrt(m.beta1);
    m.beta = m.phibar = m.beta1;
    for (int64_t it = 1; it <= k->maxiter; it++) {
        double alfa;
        spk_reason why;
        if ((st = mr_lanczos(&m, it, &alfa, &why)))
            return st;
        if (why == SPK_REASON_NONE && (st = mr_step(&m, alfa, &rnorm, &why)))
            return st;
        if (why != SPK_REASON_NONE) {                /* x is the last iterate's         */
            res->reason = why;
            return SPK_OK;
        }
        res->iterations = it;
        res->rnorm = rnorm;
        if ((st = spk_stop_record(k, it, 0, rnorm)))
            return st;
        why = spk_stop_check(k->opt, res->bnorm, rnorm);
        if (why == SPK_REASON_NONE)
            why = mr_progress(&m, it, rnorm);
        if (why == SPK_REASON_NONE && m.beta <= MINRES_HAPPY_TOL * sqrt(m.tnorm2))
            st = mr_happy(&m, &why);
        if (st || why != SPK_REASON_NONE) {
            res->reason = why;
            break;
        }
    }
    if (st)
        return st;
    if (res->reason == SPK_REASON_NONE)
        res->reason = SPK_DIVERGED_MAXIT;
    return SPK_OK;
}
