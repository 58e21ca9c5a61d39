/* solvers/cheby.c -- the Chebyshev iteration of solvers/cheby.h. With theta = (lmax + lmin) / 2,
 * delta = (lmax - lmin) / 2, sigma = theta / delta (Saad, alg. 12.1, preconditioned by D):
 *     d_0 = D^-1 r_0 / theta,                          x_1 = x_0 + d_0
 *     rho_k = 1 / (2 sigma - rho_{k-1}),  rho_0 = 1 / sigma
 *     d_k = rho_k rho_{k-1} d_{k-1} + (2 rho_k / delta) D^-1 (b - A x_k),   x_{k+1} = x_k + d_k
 * Cost of a sweep of degree K: K SpMVs with A (K - 1 from x = 0) and 3K vector passes. */
#include "cheby.h"

/* r = b - A x */
static spk_status residual(const spk_cheby *c, const double *b, const double *x, double *r)
{
    spk_status st = c->ops->copy(c->ctx, c->n, b, r);
    return st ? st : c->be->spmv(c->ctx, c->state, -1.0, x, 1.0, r);
}

spk_status spk_cheby_sweep(const spk_cheby *c, const double *b, double *x, int zero_x)
{
    const spk_vec_ops *o = c->ops;
    spk_context *ctx = c->ctx;
    const double theta = 0.5 * (c->lmax + c->lmin), delta = 0.5 * (c->lmax - c->lmin);
    const double sigma = theta / delta;
    double rho_old = 1.0 / sigma;
    spk_status st;
    if (zero_x)
        st = o->pmul_axpby(ctx, c->n, 1.0 / theta, c->dinv, b, 0.0, c->d);
    else if (!(st = residual(c, b, x, c->r)))
        st = o->pmul_axpby(ctx, c->n, 1.0 / theta, c->dinv, c->r, 0.0, c->d);
    if (!st)
        st = o->axpby(ctx, c->n, 1.0, c->d, zero_x ? 0.0 : 1.0, x);
    for (int k = 1; k < c->degree && !st; k++) {
        const double rho = 1.0 / (2.0 * sigma - rho_old);
        if (!(st = residual(c, b, x, c->r)) &&
            !(st = o->pmul_axpby(ctx, c->n, 2.0 * rho / delta, c->dinv, c->r, rho * rho_old,
                                 c->d)))
            st = o->axpby(ctx, c->n, 1.0, c->d, 1.0, x);
        rho_old = rho;
    }
    return st;
}
