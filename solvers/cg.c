/* solvers/cg.c -- preconditioned conjugate gradients (Hestenes & Stiefel 1952; Saad, Iterative
 * Methods for Sparse Linear Systems, 2nd ed., alg. 9.1). For A symmetric positive definite and
 * an SPD preconditioner M.
 *
 * Per iteration: 1 SpMV, 1 preconditioner apply (fused into the update), 2 reductions (p'Ap,
 * and r'r with r'z in one fused pass), 2 vector kernels. Memory traffic beyond the matrix:
 * q = Ap writes n; p'q reads 2n; the fused update reads p, q, x, r, dinv and writes x, r, z
 * (8n, 7n without Jacobi); p = z + beta p reads 2n, writes n: about 14n doubles.
 *
 * The stopping test is on the recursive residual r (unpreconditioned), as SciPy and PETSc do;
 * the caller recomputes the true residual at the end. */
#include "solver.h"

#include <math.h>

/* What p'Ap <= 0 means: NaN comes from a NaN/Inf in A or b; otherwise A (or M) is not SPD. */
static spk_reason nonpositive_reason(double pq)
{
    return isnan(pq) || isinf(pq) ? SPK_DIVERGED_NANORINF : SPK_DIVERGED_INDEFINITE;
}

spk_status spk_cg(spk_krylov *k, const double *b, double *x)
{
    spk_context *ctx = k->ctx;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    spk_result *res = k->res;
    double *r = NULL, *z = NULL, *p = NULL, *q = NULL;
    spk_status st;

    /* the workspace's vectors: kept by the solver object, every one written before read */
    if ((st = spk_krylov_vec(k, SPK_WS_METHOD + 0, n, &r)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 1, n, &p)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 2, n, &q)) ||
        (k->dinv && (st = spk_krylov_vec(k, SPK_WS_METHOD + 3, n, &z))))
        return st;
    if (!k->dinv)
        z = r;                                       /* M = I: z aliases r          */

    /* r = b - A x */
    if ((st = spk_apply_A(k, x, r)) || (st = ops->axpby(ctx, n, 1.0, b, -1.0, r)))
        return st;
    double rr, rz;
    if (k->dinv) {
        if ((st = ops->pmul(ctx, n, k->dinv, r, z)) || (st = ops->dot2(ctx, n, r, r, z, &rr, &rz)))
            return st;
    } else {
        if ((st = ops->dot(ctx, n, r, r, &rr)))
            return st;
        rz = rr;
    }
    double rnorm = sqrt(rr);
    res->rnorm = rnorm;
    if ((st = spk_stop_record(k, 0, 0, rnorm)))
        return st;
    res->reason = spk_stop_check(k->opt, res->bnorm, rnorm);
    if (res->reason != SPK_REASON_NONE)
        return SPK_OK;
    if ((st = ops->copy(ctx, n, z, p)))              /* p = z                       */
        return st;

    int64_t it;
    for (it = 1; it <= k->maxiter; it++) {
        double pq;
        if ((st = spk_apply_A(k, p, q)) || (st = ops->dot(ctx, n, p, q, &pq)))
            return st;                               /* q = A p, pq = p'q           */
        if (!(pq > 0)) {
            res->reason = nonpositive_reason(pq);
            break;
        }
        double alpha = rz / pq;                      /* alpha = r'z / p'Ap          */
        double rz_new;
        if ((st = ops->cg_update(ctx, n, alpha, p, q, x, r, k->dinv, z, &rr, &rz_new)))
            return st;                               /* x += a p, r -= a q, z = M\r */
        rnorm = sqrt(rr);
        res->iterations = it;
        res->rnorm = rnorm;
        if ((st = spk_stop_record(k, it, 0, rnorm)))
            return st;
        res->reason = spk_stop_check(k->opt, res->bnorm, rnorm);
        if (res->reason != SPK_REASON_NONE)
            break;
        if (!(rz_new > 0)) {                         /* r'M^-1 r <= 0: M not SPD    */
            res->reason = nonpositive_reason(rz_new);
            break;
        }
        double beta = rz_new / rz;                   /* beta = r'z (new) / r'z (old) */
        rz = rz_new;
        if ((st = ops->xpay(ctx, n, z, beta, p)))    /* p = z + beta p              */
            return st;
    }
    if (it > k->maxiter)
        res->reason = SPK_DIVERGED_MAXIT;
    return SPK_OK;
}
