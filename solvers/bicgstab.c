/* solvers/bicgstab.c -- preconditioned BiCGStab (van der Vorst, SIAM J. Sci. Stat. Comput.
 * 13(2), 1992; Barrett et al., Templates, 1994, fig. 2.10; Saad, Iterative Methods for Sparse
 * Linear Systems, 2nd ed., alg. 7.7). RIGHT preconditioning: the method runs on A M^-1 y = b
 * with x = M^-1 y, so r is the true unpreconditioned residual b - A x and the stopping test
 * sees the same number as SciPy and PETSc.
 *
 * One iteration = one full step, 2 SpMVs, as SciPy counts. The scalars live with the vectors
 * (spk_bicg_scalars, on the device for the CUDA table) and every scalar decision -- alpha,
 * omega, beta, the breakdown tests, both stopping tests -- is made by the step that finishes
 * the reduction it needs (solvers/bicgstab_scalar.h, written once for host and device), so
 * the host queues whole iterations without waiting and reads the block back once per batch,
 * as solvers/cg.c does. An iteration, 7 launches and no wait (bicg_step below):
 *
 *   update_p:   p = r + beta (p - omega v);  p^ = M^-1 p
 *   v = A p^                                            (backend SpMV)
 *   dots ALPHA: (r0, v), (v, v);  alpha = rho / (r0, v)
 *   update_s:   s = r - alpha v;  s^ = M^-1 s;  (s, s);  ||s|| passes: stop at the half step
 *   t = A s^                                            (backend SpMV)
 *   dots OMEGA: (t, s), (t, t);  omega = (t, s) / (t, t)
 *   update_xr:  x += alpha p^ + omega s^;  r = s - omega t;  (r0, r), (r, r);  ||r|| passes:
 *               stop; else the next rho = (r0, r) test and beta
 *
 * M comes through its row of the preconditioner table: M = I (p^ is p and s^ is s, nothing
 * stored), a diagonal fused into update_p and update_s, or the general path, where the row's
 * apply forms p^ and s^ between the steps.
 *
 * Memory traffic in n-doubles, beyond the matrix: update_p 4 (6 with a fused Jacobi), the
 * SpMVs' x and y 2 + 2, dots 2 + 2, update_s 3 (5), update_xr 7 (8): 22n, 27n with Jacobi (a
 * host-scalar loop moves 27n / 33n, in ~15 launches with 4 waits for the host). The general
 * path is 22n plus the two applies (a Jacobi applied there: 3n each, 28n).
 *
 * The convergence test is made twice per iteration: on s at the half step (x += alpha p^ and
 * stop when ||s|| passes, so omega = 0/0 never happens) and on r at the end. x += alpha p^ is
 * deferred to update_xr, which does only it when the iteration ended at s; x is rounded as
 * (x + alpha p^) + omega s^, as two separate updates would be.
 *
 * Breakdowns (SPK_DIVERGED_BREAKDOWN) use a RELATIVE test: an inner product (a, b) is taken as
 * zero when |(a, b)| <= SPK_BICG_BREAKDOWN_TOL * ||a|| ||b|| (the cosine of the angle between a
 * and b below eps^2: in practice an exact zero or an underflow). SciPy's bicgstab
 * (scipy/sparse/linalg/_isolve/iterative.py) tests |rho| < eps^2 and |omega| < eps^2 in
 * absolute terms, which depends on the scaling of A and b; the cosine form does not.
 *   rho   = (r0, r) ~ 0                 the shadow residual is orthogonal to r
 *   (r0, v) ~ 0                         alpha = rho / (r0, v) is undefined
 *   (t, s) ~ 0 (incl. t't = 0, s != 0)  omega = 0: the method stagnates (and beta = ../omega)
 * NaN or Inf in any of these, or in a norm, is SPK_DIVERGED_NANORINF; x is never updated with
 * a non-finite step. A vanishing rho while r does not vanish is BiCGStab's own breakdown (r
 * orthogonal to the shadow residual r0 = b: on a b that is zero on most rows, r can reach an
 * exact zero on the rows b lives on, and whether it does depends on rounding, so one device
 * met it where the other did not): the method then restarts its shadow residual, r0 = r,
 * p = r, rho = (r, r), up to SPK_BICG_MAX_RESTARTS times (orsirr_1 with Jacobi: the breakdown
 * at iteration 450, converged at 462). A breakdown before alpha ends the solve with x and the record of the
 * iteration before; one at omega keeps x + alpha p^ and records ||s|| for the iteration.
 * eps^2, not eps: the cosine of (r0, r) often sits near 1e-16 for many steps while the method
 * still converges; with eps, watt_2 + Jacobi broke down at step 2 (converges in 312 with
 * eps^2), sherman3 + Jacobi at 249 (630), sherman1 + Jacobi in HYB at 105 (230).
 *
 * Norms are square roots of the fused sums (||s|| too): ||s|| outside ~[1e-154, 1e154] is
 * then 0 or Inf, as ||r|| is. */
#include "solver.h"

#include "bicgstab_scalar.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SPK_BICG_BATCH 32                /* most iterations between read-backs; <= HIST / 2 */
#define SPK_BICG_BATCH_FIRST 2           /* the GPU's first batch, before any timing: 2 of
                                            its iterations are 4 SpMVs, as CG's first 4     */

typedef struct bicg {
    spk_krylov             *k;
    const spk_bicg_ops     *bops;
    spk_bicg_scalars       *S;           /* the block, device memory                          */
    double *r, *r0, *p, *v, *t;          /* r holds s between the half steps                  */
    double *ph, *sh;                     /* M^-1 p and M^-1 s; without M, aliases of p and r  */
    const double *dinv;                  /* D^-1, fused into update_p and update_s, or NULL   */
    int general;                         /* M applied by its row between the steps            */
} bicg;

/* Queue one iteration. */
static spk_status bicg_step(const bicg *w, double *x)
{
    spk_krylov *k = w->k;
    spk_context *ctx = k->ctx;
    const spk_bicg_ops *bo = w->bops;
    const int64_t n = k->n;
    spk_bicg_scalars *S = w->S;
    spk_status st;
    /* p = r + beta (p - omega v);  p^ = M^-1 p */
    if ((st = bo->update_p(ctx, n, S, w->r, w->v, w->p, w->dinv, w->ph, w->r0)))
        return st;
    if (w->general && (st = spk_precond_apply(k, w->p, w->ph)))
        return st;
    /* v = A p^;  alpha = rho / (r0, v) */
    if ((st = spk_apply_A(k, w->ph, w->v)) ||
        (st = bo->dots(ctx, n, S, SPK_BICG_ALPHA, w->v, w->r0)))
        return st;
    /* s = r - alpha v;  ||s|| passes: stop at the half step;  s^ = M^-1 s */
    if ((st = bo->update_s(ctx, n, S, w->v, w->r, w->dinv, w->sh)))
        return st;
    if (w->general && (st = spk_precond_apply(k, w->r, w->sh)))
        return st;
    /* t = A s^;  omega = (t, s) / (t, t) */
    if ((st = spk_apply_A(k, w->sh, w->t)) ||
        (st = bo->dots(ctx, n, S, SPK_BICG_OMEGA, w->t, w->r)))
        return st;
    /* x += alpha p^ + omega s^;  r = s - omega t;  ||r|| passes: stop;  beta */
    return bo->update_xr(ctx, n, S, x, w->ph, w->sh, w->t, w->r0, w->r);
}

/* One solve's state for the batch driver (solvers/batch.c). */
typedef struct bicg_run {
    const bicg       *w;
    double           *x;
    spk_bicg_scalars  h[2];          /* read-backs, double-buffered                         */
    int64_t           recorded;      /* last iteration handed to history and monitor        */
} bicg_run;

static spk_status bicg_run_step(void *self)
{
    const bicg_run *c = (const bicg_run *)self;
    return bicg_step(c->w, c->x);
}

/* Take in a read-back: record the iterations since the last one (history, monitor). */
static spk_status bicg_take(void *self, int slot, int64_t *it, int *done, double *rnorm)
{
    bicg_run *c = (bicg_run *)self;
    const spk_bicg_scalars *h = &c->h[slot];
    spk_krylov *k = c->w->k;
    spk_status st;
    for (int64_t i = c->recorded + 1; i <= h->it; i++)
        if ((st = spk_stop_record(k, i, 0, h->hist[i % SPK_BICG_HIST])))
            return st;
    if (h->it > c->recorded) {
        k->res->iterations = h->it;
        k->res->rnorm = h->rnorm;
    }
    c->recorded = h->it;
    *it = h->it;
    *done = h->state == SPK_BICG_DONE || k->host_stop != SPK_REASON_NONE;
    *rnorm = h->rnorm;
    return SPK_OK;
}

spk_status spk_bicgstab(spk_krylov *k, const double *b, double *x)
{
    spk_context *ctx = k->ctx;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    spk_result *res = k->res;
    const spk_pc_path path = spk_krylov_pc_path(k);
    bicg w = {k, spk_bicg_ops_of(ops), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
              spk_krylov_dinv(k), path == SPK_PC_GENERAL};
    double *sv = NULL;
    spk_status st;
    if (!w.bops)
        return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "BiCGStab on the %s: not in this build",
                        spk_device_str(ops->device));

    /* The solver's workspace (kept between solves): the block and the reductions' partials
     * share one vector. p and v start at zero, so that the first p = r + 0 (p - 0 v) is r even
     * when the last solve left NaN in them. */
    const int64_t s_len =
        (int64_t)((sizeof(spk_bicg_scalars) + sizeof(double) - 1) / sizeof(double));
    if ((st = spk_krylov_vec(k, SPK_WS_METHOD + 0, n, &w.r)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 1, n, &w.r0)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 2, n, &w.p)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 3, n, &w.v)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 4, n, &w.t)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 5, s_len + 2 * SPK_MAX_BLOCKS, &sv)) ||
        (path != SPK_PC_IDENTITY && (st = spk_krylov_vec(k, SPK_WS_METHOD + 6, n, &w.ph))) ||
        (path != SPK_PC_IDENTITY && (st = spk_krylov_vec(k, SPK_WS_METHOD + 7, n, &w.sh))) ||
        (st = ops->fill(ctx, n, 0.0, w.p)) || (st = ops->fill(ctx, n, 0.0, w.v)))
        return st;
    w.S = (spk_bicg_scalars *)(void *)sv;
    if (path == SPK_PC_IDENTITY) {                   /* M = I: no copies, p^ = p, s^ = s */
        w.ph = w.p;
        w.sh = w.r;
    }

    /* r = b - A x, r0 = r, rho = r'r (host scalars: once per solve); record iteration 0 */
    double rr;
    if ((st = spk_apply_A(k, x, w.r)) || (st = ops->axpby(ctx, n, 1.0, b, -1.0, w.r)) ||
        (st = ops->copy(ctx, n, w.r, w.r0)) || (st = ops->dot(ctx, n, w.r, w.r, &rr)))
        return st;
    res->iterations = 0;
    res->rnorm = sqrt(rr);
    res->reason = spk_stop_check(k->opt, res->bnorm, res->rnorm);
    if ((st = spk_stop_record(k, 0, 0, res->rnorm)))
        return st;
    if (res->reason == SPK_REASON_NONE)
        res->reason = k->host_stop;                  /* the monitor's stop at iteration 0 */
    if (res->reason != SPK_REASON_NONE)
        return SPK_OK;

    bicg_run c = {&w, x, {{0}}, 0};                  /* h[] zero: counters at 0 */
    spk_bicg_scalars *h = c.h;
    h[0].part = sv + s_len;
    h[0].tol_rtol = k->opt->rtol * res->bnorm;       /* spk_stop_check's two thresholds */
    h[0].tol_atol = k->opt->atol;
    h[0].maxit = k->maxiter;
    h[0].div_thr = spk_stop_dtol_threshold(k->opt, res->bnorm, res->rnorm);
    h[0].stag_window = k->opt->stagnation;
    h[0].best = res->rnorm;
    h[0].rho = rr;
    h[0].r0norm = h[0].rnorm = res->rnorm;
    h[0].state = SPK_BICG_RUN;
    spk_bicg_next(&h[0]);                            /* maxiter 0, rho ~ 0; beta = 0    */
    if (h[0].state != SPK_BICG_RUN) {
        res->reason = (spk_reason)h[0].why;
        return SPK_OK;
    }
    if ((st = ops->put(ctx, &h[0], sizeof h[0], w.S)))
        return st;

    const spk_batch_method m = {
        .self = &c, .step = bicg_run_step, .take = bicg_take, .dev_block = w.S,
        .bytes = sizeof *w.S, .host = {&h[0], &h[1]}, .no_graph = !k->pc->graph_safe,
        .thr = spk_stop_threshold(k->opt, res->bnorm), .r0 = res->rnorm,
    };
    int last;
    if ((st = spk_batch_run(k, &m, SPK_BICG_BATCH_FIRST, SPK_BICG_BATCH, &last)))
        return st;
    if (last < 0 || h[last].state != SPK_BICG_DONE) {   /* the host stopped queuing */
        res->reason = k->host_stop != SPK_REASON_NONE ? k->host_stop : SPK_DIVERGED_MAXIT;
        return SPK_OK;
    }
    if (h[last].why != SPK_REASON_NONE) {
        res->reason = (spk_reason)h[last].why;  /* MAXIT, BREAKDOWN, NANORINF, DTOL, STAGNATION */
        if (h[last].bk_which != SPK_BICG_BK_NONE &&
            (res->reason == SPK_DIVERGED_BREAKDOWN || res->reason == SPK_DIVERGED_NANORINF)) {
            static const char *const what[] = {"", "(r0, r)", "(r0, v)", "(t, s)"};
            snprintf(res->reason_detail, sizeof res->reason_detail, "%s = %.3g at iteration "
                     "%lld, against %.3g for the product of the norms: %s", what[h[last].bk_which],
                     h[last].bk_num, (long long)h[last].it + 1, h[last].bk_scale,
                     res->reason == SPK_DIVERGED_BREAKDOWN ? "their cosine fell below eps^2"
                                                           : "not finite");
        }
    } else {
        res->reason = spk_stop_check(k->opt, res->bnorm, res->rnorm);
        if (res->reason == SPK_REASON_NONE)             /* cannot happen: the same test */
            res->reason = SPK_DIVERGED_NANORINF;
    }
    return SPK_OK;
}
