/* solvers/gmres.c -- restarted GMRES(m) (Saad & Schultz, SIAM J. Sci. Stat. Comput. 7(3),
 * 1986; Saad, Iterative Methods for Sparse Linear Systems, 2nd ed., alg. 6.9, 9.5), RIGHT
 * preconditioned: Arnoldi on A M^-1, so the least-squares residual is the unpreconditioned
 * one; M (any row of the preconditioner table, applied through it) is fixed, so a cycle ends
 * with x += M^-1 (V y) and no basis Z is kept. Orthogonalization by classical Gram-Schmidt
 * twice (CGS2; Giraud, Langou & Rozloznik, Comput. Math. Appl. 50, 2005): h1 = V'w, w -= V h1,
 * h2 = V'w, w -= V h2 over the contiguous column-major n x (m+1) basis, the two passes'
 * coefficients summed, then ||w||: one call of GMRES's cgs2 (solvers/gmres_ops.h), three
 * passes over V with one wait on the GPU (solvers/gmres_cuda.cu), the four loops on the CPU.
 *
 * Per inner iteration (k = j+1 basis vectors): 1 SpMV, 1 preconditioner apply (none for
 * M = I), 1 cgs2, 1 scal; traffic beyond the matrix (3k + 9) n doubles on the GPU, + 3n with
 * Jacobi. A cycle adds V y, the update and the true residual b - A x (1 SpMV, ~(m + 14) n).
 * `iterations` counts inner iterations over all cycles (SciPy's callback_type='pr_norm' count);
 * history rows carry the cycle, numbered from 1. Stopping, restart check and breakdown rules:
 * gm_after_cycle below and docs/solvers.md.
 *
 * FGMRES(m) (spk_fgmres; Saad, SIAM J. Sci. Comput. 14(2), 1993; Saad's book alg. 9.6) is the
 * same loop keeping Z = [M^-1 v_1 ... M^-1 v_m] (n x m) and ending a cycle with x += Z y, so M
 * may change from one application to the next (an inner iterative solve, a user
 * preconditioner that adapts). The Arnoldi step is GMRES's, bitwise: with a fixed M both take
 * the same iterations; only the update of x differs (Z y in one gemv in place of M^-1 (V y)).
 * Cost: GMRES's, less the apply of the cycle's update, plus the n x m doubles of Z (stored in
 * the apply, read once per cycle). With M = I it is GMRES. */
#include "solver.h"

#include "gmres_ops.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

/* Happy breakdown: h(j+1,j) <= tol ||A z_j|| (norm before orthogonalization): A z_j is in the
 * Krylov space to rounding. SciPy uses eps; CGS2 leaves a few eps of a vector in the span. */
#define GMRES_HAPPY_TOL (16.0 * DBL_EPSILON)
/* Singular least squares: the new diagonal of R, after the old rotations, below tol ||A z_j||
 * means A M^-1 is singular on the Krylov space (BREAKDOWN; PETSc's KSP_DIVERGED_NULL). */
#define GMRES_SINGULAR_TOL (16.0 * DBL_EPSILON)
/* A happy breakdown whose implicit residual misses the test (rtol at or below rounding) is
 * HAPPY_BREAKDOWN when ||b - A x|| <= this * ||b||; otherwise GMRES restarts. */
#define GMRES_HAPPY_RESID (1.0e4 * DBL_EPSILON)

typedef struct gm {
    spk_krylov *k;
    const spk_gmres_ops *go;
    int m;
    double *V;                 /* n x (m+1), column-major, leading dimension n            */
    double *z;                 /* M^-1 v_j; NULL for M = I or FGMRES                       */
    double *Z;                 /* FGMRES: n x m, Z[:,j] = M^-1 v_j as applied; else NULL   */
    double *H;                 /* (m+1) x m host, column-major: column j at H + j (m+1)     */
    double *cs, *sn, *g, *h, *y;   /* h: cgs2's h1, h2 and ||w||^2 (2 (m+1) + 1)           */
    int64_t it, cycle;
    int happy;                 /* this cycle ended on a happy breakdown                   */
    double div_thr;            /* diverged when the residual passes it (dtol)             */
    double best;               /* the smallest residual so far, and its iteration         */
    int64_t best_it;
} gm;

static double *col(const gm *w, int j) { return w->V + (int64_t)j * w->k->n; }

/* V[:,0] = b - A x, *beta = its norm (not yet normalized). */
static spk_status gm_residual(gm *w, const double *b, const double *x, double *beta)
{
    spk_krylov *k = w->k;
    spk_status st = spk_apply_A(k, x, w->V);
    if (!st)
        st = k->ops->axpby(k->ctx, k->n, 1.0, b, -1.0, w->V);
    if (!st)
        st = k->ops->nrm2(k->ctx, k->n, w->V, beta);
    return st;
}

/* w = A M^-1 v_j into V[:,j+1], orthogonalized against V[:,0..j] by CGS2; H(:,j) = h, and
 * *wnorm = ||A M^-1 v_j||, *hnext = ||w|| after orthogonalization. */
static spk_status gm_arnoldi(gm *w, int j, double *wnorm, double *hnext)
{
    spk_krylov *k = w->k;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    double *hj = w->H + (int64_t)j * (w->m + 1), *wv = col(w, j + 1);
    const double *zj = col(w, j);
    spk_status st;
    double *zout = w->Z ? w->Z + (int64_t)j * n : w->z;      /* FGMRES keeps z_j   */
    if (zout) {
        if ((st = spk_precond_apply(k, zj, zout)))           /* z = M^-1 v_j      */
            return st;
        zj = zout;
    }
    if ((st = spk_apply_A(k, zj, wv)))                       /* w = A z           */
        return st;
    if ((st = w->go->cgs2(k->ctx, n, j + 1, w->V, n, wv, w->h)))   /* h1, h2, ||w||^2 */
        return st;
    for (int i = 0; i <= j; i++)
        hj[i] = (0.0 + w->h[i]) + w->h[j + 1 + i];
    /* ||w|| from the sum of squares, unless it over- or underflowed: then the scaled nrm2 */
    const double ss = w->h[2 * (j + 1)];
    if (ss > 1e-280 && ss < 1e280)
        *hnext = sqrt(ss);
    else if ((st = ops->nrm2(k->ctx, n, wv, hnext)))
        return st;
    /* ||A z||^2 = ||h||^2 + ||w||^2 (Pythagoras, V orthonormal): no extra reduction; scaled
     * by the largest term, as LAPACK's dnrm2 is, when the plain sum of squares over- or
     * underflows */
    double s = (*hnext) * (*hnext);
    for (int i = 0; i <= j; i++)
        s += hj[i] * hj[i];
    if (!(s > 1e-280 && s < 1e280)) {
        double big = fabs(*hnext);
        for (int i = 0; i <= j; i++)
            big = fabs(hj[i]) > big ? fabs(hj[i]) : big;
        s = big > 0 && isfinite(big) ? (*hnext / big) * (*hnext / big) : s;
        for (int i = 0; big > 0 && isfinite(big) && i <= j; i++)
            s += (hj[i] / big) * (hj[i] / big);
        *wnorm = big > 0 && isfinite(big) ? big * sqrt(s) : sqrt(s);
    } else {
        *wnorm = sqrt(s);
    }
    hj[j + 1] = *hnext;
    return SPK_OK;
}

/* Apply the old rotations to H(:,j), make the one that zeroes H(j+1,j), update g.
 * Returns 0, or SPK_DIVERGED_BREAKDOWN when the new diagonal of R vanishes. */
static spk_reason gm_givens(gm *w, int j, double wnorm)
{
    double *hj = w->H + (int64_t)j * (w->m + 1);
    for (int i = 0; i < j; i++) {
        double t = w->cs[i] * hj[i] + w->sn[i] * hj[i + 1];
        hj[i + 1] = -w->sn[i] * hj[i] + w->cs[i] * hj[i + 1];
        hj[i] = t;
    }
    double d = hypot(hj[j], hj[j + 1]);
    if (!spk_denominator_ok(d, wnorm) || d <= GMRES_SINGULAR_TOL * wnorm)
        return SPK_DIVERGED_BREAKDOWN;
    w->cs[j] = hj[j] / d;
    w->sn[j] = hj[j + 1] / d;
    hj[j] = d;
    hj[j + 1] = 0.0;
    w->g[j + 1] = -w->sn[j] * w->g[j];
    w->g[j] = w->cs[j] * w->g[j];
    return SPK_REASON_NONE;
}

/* x += M^-1 V(:,0:jend) y with R y = g(0:jend) (back substitution on the host). The free
 * column V[:,jend] (never part of the solution) holds V y. FGMRES: x += Z(:,0:jend) y. */
static spk_status gm_update(gm *w, int jend, double *x)
{
    spk_krylov *k = w->k;
    const int ld = w->m + 1;
    if (jend == 0)
        return SPK_OK;
    for (int i = jend - 1; i >= 0; i--) {            /* R(i,i) passed gm_givens       */
        double s = w->g[i];
        for (int c = i + 1; c < jend; c++)
            s -= w->H[(int64_t)c * ld + i] * w->y[c];
        w->y[i] = s / w->H[(int64_t)i * ld + i];
    }
    for (int i = 0; i < jend; i++)
        w->h[i] = -w->y[i];                          /* u = 0 - V (-y) = V y          */
    if (w->Z)                                        /* x = x - Z (-y) = x + Z y      */
        return k->ops->gemv_n_sub(k->ctx, k->n, jend, w->Z, k->n, w->h, x);
    double *u = col(w, jend);
    spk_status st = k->ops->fill(k->ctx, k->n, 0.0, u);
    if (!st)
        st = k->ops->gemv_n_sub(k->ctx, k->n, jend, w->V, k->n, w->h, u);
    if (!st && w->z) {
        st = spk_precond_apply(k, u, w->z);
        u = w->z;
    }
    if (!st)
        st = k->ops->axpy(k->ctx, k->n, 1.0, u, x);
    return st;
}

/* The tests on the residual res->rnorm of iteration w->it beyond convergence: divergence,
 * stagnation, and the host's (time limit, the monitor's stop); SPK_REASON_NONE to go on. */
static spk_reason gm_progress(gm *w)
{
    spk_krylov *k = w->k;
    const double r = k->res->rnorm;
    if (r > w->div_thr)
        return SPK_DIVERGED_DTOL;
    if (r < SPK_STAG_FACTOR * w->best) {
        w->best = r;
        w->best_it = w->it;
    } else if (k->opt->stagnation > 0 && w->it - w->best_it >= k->opt->stagnation) {
        return SPK_DIVERGED_STAGNATION;
    }
    return k->host_stop;
}

/* One cycle from V[:,0] = r, ||r|| = beta: inner iterations until the implicit residual
 * passes, a breakdown, m steps or maxiter; then the update of x. Sets res->reason to what
 * the inner iterations found (NONE when the cycle just ran out). */
static spk_status gm_cycle(gm *w, double beta, double *x)
{
    spk_krylov *k = w->k;
    spk_result *res = k->res;
    spk_status st;
    int j, jend = 0;
    if ((st = k->ops->scal(k->ctx, k->n, 1.0 / beta, w->V)))  /* beta checked by caller */
        return st;
    w->g[0] = beta;
    w->happy = 0;
    w->cycle++;
    for (j = 0; j < w->m; j++) {
        double wnorm, hnext;
        if ((st = gm_arnoldi(w, j, &wnorm, &hnext)))
            return st;
        if (!isfinite(wnorm) || !isfinite(hnext)) {
            res->reason = SPK_DIVERGED_NANORINF;     /* column j is dropped: x stays finite */
            break;
        }
        if ((res->reason = gm_givens(w, j, wnorm)))
            break;                                   /* singular: keep columns 0..j-1 */
        jend = j + 1;
        w->it++;
        res->iterations = w->it;
        res->rnorm = fabs(w->g[j + 1]);
        if ((st = spk_stop_record(k, w->it, w->cycle, res->rnorm)))
            return st;
        res->reason = spk_stop_check(k->opt, res->bnorm, res->rnorm);
        if (res->reason == SPK_REASON_NONE)
            res->reason = gm_progress(w);
        w->happy = hnext <= GMRES_HAPPY_TOL * wnorm || !spk_denominator_ok(hnext, wnorm);
        if (!w->happy && (st = k->ops->scal(k->ctx, k->n, 1.0 / hnext, col(w, j + 1))))
            return st;
        if (res->reason != SPK_REASON_NONE || w->happy || w->it >= k->maxiter)
            break;
    }
    return gm_update(w, jend, x);
}

/* After a cycle: recompute the true residual (into V[:,0], norm *beta) when it decides
 * anything, and whether to stop. Returns 1 to stop (res->reason final), 0 to restart. */
static spk_status gm_after_cycle(gm *w, const double *b, const double *x, double *beta,
                                 int *stop)
{
    spk_krylov *k = w->k;
    spk_result *res = k->res;
    spk_reason implicit = res->reason;
    int conv = implicit == SPK_CONVERGED_RTOL || implicit == SPK_CONVERGED_ATOL;
    *stop = 1;
    if (implicit < 0)              /* breakdown, NaN/Inf, dtol, stagnation, the host's stop */
        return SPK_OK;
    if (!conv && !w->happy && w->it >= k->maxiter) {
        res->reason = SPK_DIVERGED_MAXIT;            /* no restart: skip the SpMV      */
        return SPK_OK;
    }
    spk_status st = gm_residual(w, b, x, beta);
    if (st)
        return st;
    double thr = spk_stop_threshold(k->opt, res->bnorm);
    spk_reason truth = spk_stop_check(k->opt, res->bnorm, *beta);
    if (truth == SPK_DIVERGED_NANORINF || (conv && truth != SPK_REASON_NONE)) {
        /* both agree: converged; or the true residual is NaN/Inf (x overflowed), whatever
         * the implicit one says */
        res->reason = truth == SPK_DIVERGED_NANORINF ? truth : implicit;
        return SPK_OK;
    }
    if (conv && *beta > SPK_MISMATCH_FACTOR * thr) {
        res->reason = SPK_DIVERGED_TRUE_RESIDUAL_MISMATCH;
        return SPK_OK;
    }
    if (!conv && w->happy && *beta <= GMRES_HAPPY_RESID * res->bnorm) {
        res->reason = SPK_CONVERGED_HAPPY_BREAKDOWN;
        return SPK_OK;
    }
    if (w->it >= k->maxiter) {
        res->reason = SPK_DIVERGED_MAXIT;
        return SPK_OK;
    }
    /* Restart from the true residual. One that is exactly zero (or too small to normalize)
     * cannot start a Krylov space: x is then exact to rounding. */
    if (!spk_denominator_ok(*beta, res->bnorm)) {
        res->rnorm = *beta;
        res->reason = truth != SPK_REASON_NONE ? truth : SPK_CONVERGED_HAPPY_BREAKDOWN;
        return spk_stop_record(k, w->it, w->cycle + 1, *beta);
    }
    res->reason = SPK_REASON_NONE;
    *stop = 0;
    return SPK_OK;
}

static spk_status gm_alloc(gm *w, int flexible)
{
    spk_krylov *k = w->k;
    const int m = w->m;
    const int64_t cols = (int64_t)m + 1;
    const char *name = flexible ? "FGMRES" : "GMRES";
    if (k->n > INT64_MAX / cols)
        return spk_fail(k->ctx, SPK_ERR_NOMEM, "%s(%d) basis of %lld x %lld doubles: too large",
                        name, m, (long long)k->n, (long long)cols);
    /* the solver's workspace, kept between solves; every entry is written before it is read */
    spk_status st = spk_krylov_vec(k, SPK_WS_METHOD + 0, k->n * cols, &w->V);
    if (!st && !k->pc->identity && flexible)         /* Z: n x m, inside the basis's bound */
        st = spk_krylov_vec(k, SPK_WS_METHOD + 2, k->n * (int64_t)m, &w->Z);
    else if (!st && !k->pc->identity)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 1, k->n, &w->z);
    if (!st)                                         /* H, then cs sn g y, h (2 cols + 1) */
        st = spk_krylov_host(k, cols * ((int64_t)m + 6) + 1, &w->H);
    if (st)
        return st;
    w->cs = w->H + cols * m;
    w->sn = w->cs + cols;
    w->g = w->sn + cols;
    w->y = w->g + cols;
    w->h = w->y + cols;
    return SPK_OK;
}

/* GMRES (flexible = 0) or FGMRES (1) from x. */
static spk_status gm_run(spk_krylov *k, const double *b, double *x, int flexible)
{
    spk_result *res = k->res;
    const char *name = flexible ? "FGMRES" : "GMRES";
    int m = k->opt->restart;
    if (m < 1)
        return spk_fail(k->ctx, SPK_ERR_ARG, "%s restart = %d must be >= 1", name, m);
    const int64_t n_all = k->n_all > k->n ? k->n_all : k->n;  /* every rank alike */
    if ((int64_t)m > n_all)
        m = (int)n_all;                              /* the Krylov space has at most n  */
    gm w = {.k = k, .go = spk_gmres_ops_of(k->ops), .m = m};
    if (!w.go)
        return spk_fail(k->ctx, SPK_ERR_NOT_COMPILED, "%s on the %s: not in this build", name,
                        spk_device_str(k->ops->device));
    spk_status st = gm_alloc(&w, flexible);
    double beta;
    if (st || (st = gm_residual(&w, b, x, &beta)))
        return st;
    res->rnorm = beta;
    w.div_thr = spk_stop_dtol_threshold(k->opt, res->bnorm, beta);
    w.best = beta;
    if ((st = spk_stop_record(k, 0, 1, beta)))
        return st;
    res->reason = spk_stop_check(k->opt, res->bnorm, beta);
    if (res->reason == SPK_REASON_NONE)
        res->reason = k->host_stop;
    if (res->reason == SPK_REASON_NONE && !spk_denominator_ok(beta, res->bnorm))
        res->reason = SPK_CONVERGED_HAPPY_BREAKDOWN; /* rtol = atol = 0, r at underflow   */
    int stop = res->reason != SPK_REASON_NONE;
    while (!stop && !(st = gm_cycle(&w, beta, x)) &&
           !(st = gm_after_cycle(&w, b, x, &beta, &stop)))
        ;
    return st;
}

spk_status spk_gmres(spk_krylov *k, const double *b, double *x)
{
    return gm_run(k, b, x, 0);
}

spk_status spk_fgmres(spk_krylov *k, const double *b, double *x)
{
    return gm_run(k, b, x, 1);
}
