/* solvers/cg_single.c -- preconditioned CG with one reduction per iteration (Chronopoulos and
 * Gear, J. Comput. Appl. Math. 25, 1989; PETSc's KSPCG with single reduction), the form spk_cg
 * takes over ranks. The textbook loop (solvers/cg.c) needs p'Ap before it can form r and then
 * r'z: two reductions in a row. Here the next A u is made before its scalars are known, and
 * r'u, (A u)'u and r'r go over the ranks in one MPI_Allreduce:
 *
 *     x += alpha p;  r -= alpha s;  u = M^-1 r;  w = A u;
 *     gamma' = r'u,  delta = w'u,  r'r                         one reduction
 *     beta = gamma' / gamma;  alpha = gamma' / (delta - beta gamma' / alpha)
 *     p = u + beta p;  s = w + beta s                           (s = A p by recurrence)
 *
 * In exact arithmetic alpha and beta are the textbook's, so the iterates are CG's; rounding
 * differs only in the last bits (tests/test_mpi.c holds the counts to the one-rank CG's within
 * 2). The price: two more vectors (w, s) and one more axpby a step, nothing a halo exchange
 * and a reduction's latency do not outweigh over ranks. The stopping tests (rtol, atol, dtol,
 * stagnation, the host's) are the textbook loop's, on the recursive residual r. */
#include "solver.h"

#include <math.h>

static spk_reason nonpositive(double v)
{
    return isnan(v) || isinf(v) ? SPK_DIVERGED_NANORINF : SPK_DIVERGED_INDEFINITE;
}

/* u = M^-1 r (u is r for M = I), w = A u, and the three sums over the ranks. */
static spk_status cg1_sums(spk_krylov *k, const double *r, double *u, double *w, double v[3])
{
    spk_status st = k->pc->identity ? SPK_OK : spk_precond_apply(k, r, u);
    const double *uu = k->pc->identity ? r : u;
    if (!st)
        st = spk_apply_A(k, uu, w);
    if (st)
        return st;
    spk_host_dot2(k->n, uu, r, w, &v[0], &v[1]);     /* u'r, u'w: the fixed-order sums */
    if ((st = spk_vec_ops_cpu()->dot(k->ctx, k->n, r, r, &v[2])))
        return st;
    return spk_comm_allreduce(k->ctx, v, 3);
}

spk_status spk_cg_single(spk_krylov *k, const double *b, double *x)
{
    spk_context *ctx = k->ctx;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    spk_result *res = k->res;
    double *r, *u = NULL, *w, *p, *s;
    spk_status st = spk_krylov_vec(k, SPK_WS_METHOD + 0, n, &r);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 1, n, &w);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 2, n, &p);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 3, n, &s);
    if (!st && !k->pc->identity)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 4, n, &u);
    if (!st && !(st = spk_apply_A(k, x, r)))
        st = ops->axpby(ctx, n, 1.0, b, -1.0, r);
    double v[3];
    if (st || (st = cg1_sums(k, r, u, w, v)))
        return st;
    const double *uu = u ? u : r;
    double gamma = v[0], delta = v[1];
    res->rnorm = sqrt(v[2]);
    if ((st = spk_stop_record(k, 0, 0, res->rnorm)))
        return st;
    res->reason = spk_stop_check(k->opt, res->bnorm, res->rnorm);
    if (res->reason == SPK_REASON_NONE)
        res->reason = k->host_stop;
    if (res->reason == SPK_REASON_NONE && !(gamma > 0))
        res->reason = nonpositive(gamma);            /* r'M^-1 r <= 0: M not SPD */
    if (res->reason == SPK_REASON_NONE && !(delta > 0))
        res->reason = nonpositive(delta);            /* u'A u <= 0: A not SPD    */
    if (res->reason != SPK_REASON_NONE)
        return SPK_OK;
    const double div_thr = spk_stop_dtol_threshold(k->opt, res->bnorm, res->rnorm);
    double best = res->rnorm, alpha = gamma / delta;
    int64_t best_it = 0;
    if ((st = ops->copy(ctx, n, uu, p)) || (st = ops->copy(ctx, n, w, s)))
        return st;
    for (int64_t it = 1; it <= k->maxiter; it++) {
        if ((st = ops->axpy(ctx, n, alpha, p, x)) || (st = ops->axpy(ctx, n, -alpha, s, r)) ||
            (st = cg1_sums(k, r, u, w, v)))
            return st;
        const double rnorm = sqrt(v[2]);
        res->iterations = it;
        res->rnorm = rnorm;
        if ((st = spk_stop_record(k, it, 0, rnorm)))
            return st;
        spk_reason why = spk_stop_check(k->opt, res->bnorm, rnorm);
        if (why == SPK_REASON_NONE && rnorm > div_thr)
            why = SPK_DIVERGED_DTOL;
        if (why == SPK_REASON_NONE) {
            if (rnorm < SPK_STAG_FACTOR * best) {
                best = rnorm;
                best_it = it;
            } else if (k->opt->stagnation > 0 && it - best_it >= k->opt->stagnation) {
                why = SPK_DIVERGED_STAGNATION;
            }
        }
        if (why == SPK_REASON_NONE)
            why = k->host_stop;
        const double gamma_new = v[0];
        delta = v[1];
        if (why == SPK_REASON_NONE && !(gamma_new > 0))
            why = nonpositive(gamma_new);
        const double beta = gamma_new / gamma;
        const double denom = delta - beta * gamma_new / alpha;
        if (why == SPK_REASON_NONE && !(denom > 0))
            why = nonpositive(denom);                /* p'A p <= 0 */
        if (why != SPK_REASON_NONE) {
            res->reason = why;
            return SPK_OK;
        }
        alpha = gamma_new / denom;
        gamma = gamma_new;
        if ((st = ops->axpby(ctx, n, 1.0, uu, beta, p)) || (st = ops->axpby(ctx, n, 1.0, w, beta, s)))
            return st;
    }
    res->reason = SPK_DIVERGED_MAXIT;
    return SPK_OK;
}
