/* solvers/pc_jacobi.c -- Jacobi (diagonal) preconditioning: M = diag(A), applied as
 * z = D^-1 r. Setup inverts the diagonal once on the device; a zero diagonal is refused for
 * every method (M would be singular), and a negative one for CG and MINRES, whose M must be
 * SPD. A
 * refresh after a value update refills the same device vector: from the device values after
 * an update made on the GPU (nothing crosses the bus but the check's index), else from the
 * host CSR (n doubles up). Written over the vector-ops table, so one row serves every device;
 * its capability `diag` lets CG and BiCGStab fuse D^-1 into their vector steps. */
#include "precond.h"

#include <math.h>

typedef struct pc_jacobi {
    spk_context       *ctx;
    const spk_vec_ops *ops;
    int64_t            n;
    int                require_positive;   /* CG, MINRES: M must be SPD                      */
    double            *dinv;               /* 1 / diag(A), device                            */
    double            *work;               /* host n doubles: staging of a host refresh      */
} pc_jacobi;

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
    const int overflows = v != 0.0 && isfinite(v) && (v > 0.0 || !require_positive);
    return spk_fail(ctx, SPK_ERR_UNSUPPORTED,
                    "Jacobi needs a %s diagonal, but a(%lld,%lld) = %g%s; use no "
                    "preconditioner (SPK_PRECOND_NONE)%s",
                    require_positive ? "positive" : "nonzero", (long long)bad + 1,
                    (long long)bad + 1, v, overflows ? ", whose reciprocal overflows" : "",
                    require_positive ? ", or BiCGStab or GMRES if A is not SPD" : "");
}

/* dinv = 1 / diag(A) from A's current values, in place. */
static spk_status jacobi_fill(pc_jacobi *J, spk_matrix *A)
{
    int on_device = 0;
    spk_status st = spk_matrix_dev_diagonal(J->ctx, A, J->dinv, &on_device);
    if (!st && !on_device) {
        st = spk_matrix_host_values(J->ctx, A);
        if (!st) {
            spk_csr_diagonal(&A->csr, J->work);
            st = J->ops->upload(J->ctx, J->n, J->work, J->dinv);
        }
    }
    return st ? st : spk_jacobi_invert(J->ctx, J->ops, J->n, J->require_positive, J->dinv);
}

static void jacobi_destroy(void *state)
{
    pc_jacobi *J = state;
    if (!J)
        return;
    J->ops->free(J->ctx, J->dinv);
    spk_free(J->work);
    spk_free(J);
}

static spk_status jacobi_setup(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                               void **state)
{
    const int64_t n = A->csr.nrows;
    *state = NULL;
    pc_jacobi *J = spk_calloc(ctx, 1, sizeof *J);
    if (!J)
        return spk_fail(ctx, SPK_ERR_NOMEM, "Jacobi preconditioner: out of memory");
    J->ctx = ctx;
    J->ops = spk_vec_ops_for(ctx->device);
    J->n = n;
    J->require_positive = opt->method == SPK_METHOD_CG || opt->method == SPK_METHOD_MINRES;
    J->work = spk_malloc(ctx, (size_t)(n > 0 ? n : 1), sizeof *J->work);
    spk_status st = J->work ? SPK_OK
                            : spk_fail(ctx, SPK_ERR_NOMEM, "Jacobi diagonal of %lld doubles: "
                                       "out of memory", (long long)n);
    if (!st)
        st = J->ops->alloc(ctx, n, &J->dinv);
    if (!st)
        st = jacobi_fill(J, A);
    if (st) {
        jacobi_destroy(J);
        return st;
    }
    *state = J;
    return SPK_OK;
}

static spk_status jacobi_refresh(void *state, spk_matrix *A)
{
    return jacobi_fill(state, A);
}

static spk_status jacobi_apply(void *state, const double *r, double *z)
{
    const pc_jacobi *J = state;
    return J->ops->pmul(J->ctx, J->n, J->dinv, r, z);
}

static const double *jacobi_diag(const void *state)
{
    return ((const pc_jacobi *)state)->dinv;
}

const spk_precond_ops spk_pc_jacobi = {
    .name = "jacobi",
    .kind = SPK_PRECOND_JACOBI,
    .device = SPK_DEVICE_AUTO,
    .summary = "M = diag(A): one multiply per entry; evens out rows of different scale; "
               "needs a nonzero diagonal (positive for CG and MINRES)",
    .setup = jacobi_setup,
    .refresh = jacobi_refresh,
    .apply = jacobi_apply,
    .destroy = jacobi_destroy,
    .diag = jacobi_diag,
    .graph_safe = 1,
};
