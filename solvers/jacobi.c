/* solvers/jacobi.c -- Jacobi (diagonal) preconditioning: M = diag(A), applied as z = D^-1 r.
 * Setup inverts the diagonal once on the device; a zero diagonal is an error for every method
 * (M would be singular), and a negative one for CG, whose M must be SPD. After a value update
 * the same device vector is refilled (spk_jacobi_refresh): n doubles up, one pass -- or, after
 * an update made on the GPU, filled there from the device values (src/solve.c) and inverted
 * by spk_jacobi_invert: nothing crosses the bus but the check's index. */
#include "solver.h"

spk_status spk_jacobi_invert(spk_context *ctx, const spk_vec_ops *ops, int64_t n,
                             int require_positive, double *dinv)
{
    int64_t bad = -1;
    spk_status st = ops->invert(ctx, n, dinv, !require_positive, &bad);
    if (st || bad < 0)
        return st;
    double v = 0.0;                      /* invert left d as it was: a_ii is still there */
    if ((st = ops->download(ctx, 1, dinv + bad, &v)))
        return st;
    return spk_fail(ctx, SPK_ERR_UNSUPPORTED,
                    "Jacobi needs a %s diagonal, but a(%lld,%lld) = %g (1-based); "
                    "use no preconditioner (SPK_PRECOND_NONE, solve --precond none)%s",
                    require_positive ? "positive" : "nonzero", (long long)bad + 1,
                    (long long)bad + 1, v,
                    require_positive ? ", or BiCGStab/GMRES if A is not SPD" : "");
}

spk_status spk_jacobi_refresh(spk_context *ctx, const spk_vec_ops *ops, const spk_csr *A,
                              int require_positive, double *dinv, double *work)
{
    const int64_t n = A->nrows;
    spk_csr_diagonal(A, work);
    spk_status st = ops->upload(ctx, n, work, dinv);
    return st ? st : spk_jacobi_invert(ctx, ops, n, require_positive, dinv);
}

spk_status spk_jacobi_setup(spk_context *ctx, const spk_vec_ops *ops, const spk_csr *A,
                            int require_positive, double **dinv)
{
    const int64_t n = A->nrows;
    *dinv = NULL;
    double *d = spk_malloc(ctx, (size_t)(n > 0 ? n : 1), sizeof *d);
    if (!d)
        return spk_fail(ctx, SPK_ERR_NOMEM, "Jacobi diagonal of %lld doubles: out of memory", (long long)n);
    spk_status st = ops->alloc(ctx, n, dinv);
    if (!st)
        st = spk_jacobi_refresh(ctx, ops, A, require_positive, *dinv, d);
    spk_free(d);
    if (st) {
        ops->free(ctx, *dinv);
        *dinv = NULL;
    }
    return st;
}

spk_status spk_precond_apply(spk_krylov *k, const double *r, double *z)
{
    if (k->dinv)
        return k->ops->pmul(k->ctx, k->n, k->dinv, r, z);
    return k->ops->copy(k->ctx, k->n, r, z);
}
