/* src/solve.c -- spk_solve: check the arguments, choose the method and the format, set up the
 * preconditioner, move b and x to the device, run the method, recompute the true residual
 * ||b - A x|| and bring x back. Everything between upload and download stays on the device. */
#include "spk_internal.h"
#include "../solvers/solver.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef spk_status (*method_fn)(spk_krylov *k, const double *b, double *x);

/* --method auto: CG needs A SPD; symmetry with a positive diagonal is the cheap necessary
 * test (it is not sufficient: CG then reports INDEFINITE if p'Ap <= 0 shows up). */
static spk_method choose_method(const spk_matrix_info *info, char *why, size_t len)
{
    if (info->symmetric && info->diag_positive) {
        snprintf(why, len, "cg: the matrix is symmetric with a positive diagonal");
        return SPK_METHOD_CG;
    }
    snprintf(why, len, "bicgstab: the matrix is %s",
             !info->symmetric ? "not symmetric" : "symmetric but its diagonal is not positive");
    return SPK_METHOD_BICGSTAB;
}

static spk_status check_args(spk_context *ctx, spk_matrix *A, const double *b, double *x,
                             const spk_options *opt, spk_result *res)
{
    if (!ctx || !A || A->magic != SPK_MATRIX_MAGIC || !opt || !res)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_solve: NULL argument or destroyed matrix");
    if (A->csr.nrows != A->csr.ncols)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_solve: A is %lld x %lld, a square matrix is needed",
                        (long long)A->csr.nrows, (long long)A->csr.ncols);
    if (A->csr.nrows > 0 && (!b || !x))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_solve: b or x is NULL");
    if (!(opt->rtol >= 0) || !(opt->atol >= 0) || !isfinite(opt->rtol) || !isfinite(opt->atol))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_solve: rtol = %g and atol = %g must be finite and >= 0",
                        opt->rtol, opt->atol);
    if (opt->maxiter < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_solve: maxiter = %lld must be >= 0", (long long)opt->maxiter);
    if (opt->method == SPK_METHOD_GMRES && opt->restart < 1)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_solve: GMRES restart = %d must be >= 1", opt->restart);
    if ((unsigned)opt->method > SPK_METHOD_GMRES || (unsigned)opt->precond > SPK_PRECOND_JACOBI)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_solve: unknown method or preconditioner");
    for (int64_t i = 0; i < A->csr.nrows; i++) {
        if (!isfinite(b[i]))
            return spk_fail(ctx, SPK_ERR_ARG, "spk_solve: b[%lld] = %g: the right-hand side must be finite",
                            (long long)i + 1, b[i]);
        if (opt->use_x0 && !isfinite(x[i]))
            return spk_fail(ctx, SPK_ERR_ARG, "spk_solve: x0[%lld] = %g: the initial guess must be finite",
                            (long long)i + 1, x[i]);
    }
    return SPK_OK;
}

/* Run the method on device vectors and fill the true residual. */
static spk_status run_method(spk_krylov *k, method_fn fn, const double *d_b, double *d_x)
{
    spk_status st = fn(k, d_b, d_x);
    if (st)
        return st;
    double *d_r = NULL;
    const spk_vec_ops *ops = k->ops;
    if ((st = ops->alloc(k->ctx, k->n, &d_r)))
        return st;
    double tr = 0.0;
    if (!(st = spk_apply_A(k, d_x, d_r)) && !(st = ops->axpby(k->ctx, k->n, 1.0, d_b, -1.0, d_r)))
        st = ops->nrm2(k->ctx, k->n, d_r, &tr);       /* ||b - A x|| */
    ops->free(k->ctx, d_r);
    k->res->true_rnorm = tr;
    return st;
}

spk_status spk_solve(spk_context *ctx, spk_matrix *A, const double *b, double *x,
                     const spk_options *opt, spk_result *res)
{
    spk_status st = check_args(ctx, A, b, x, opt, res);
    if (st)
        return st;
    const int64_t n = A->csr.nrows;
    memset(res, 0, sizeof *res);                     /* overwritten: see spk.h        */
    res->device = ctx->device;

    double t0 = spk_now();
    spk_method method = opt->method;
    if (method == SPK_METHOD_AUTO)
        method = choose_method(&A->info, res->method_reason, sizeof res->method_reason);
    res->method = method;
    method_fn fn = method == SPK_METHOD_CG ? spk_cg : method == SPK_METHOD_GMRES ? spk_gmres : spk_bicgstab;

    if ((st = spk_matrix_prepare(ctx, A, opt->format)))
        return st;
    res->format = A->be->format;

    const spk_vec_ops *ops = spk_vec_ops_for(ctx->device);
    spk_krylov k = {ctx, ops, A->be, A->state, n, NULL, opt, res, 0, 0.0, 0};
    k.maxiter = opt->maxiter > 0 ? opt->maxiter : (10 * n > 1000 ? 10 * n : 1000);
    double *d_b = NULL, *d_x = NULL, *dinv = NULL;
    if (opt->precond == SPK_PRECOND_JACOBI &&
        (st = spk_jacobi_setup(ctx, ops, &A->csr, method == SPK_METHOD_CG, &dinv)))
        return st;
    k.dinv = dinv;
    if ((st = ops->alloc(ctx, n, &d_b)) || (st = ops->alloc(ctx, n, &d_x)) ||
        (st = ops->upload(ctx, n, b, d_b)) || (opt->use_x0 && (st = ops->upload(ctx, n, x, d_x))))
        goto out_free;
    if ((st = ops->nrm2(ctx, n, d_b, &res->bnorm)))
        goto out_free;
    if ((st = ops->sync(ctx)))
        goto out_free;
    double t1 = spk_now();
    res->setup_s = t1 - t0;
    k.t0 = t1;

    if (res->bnorm == 0.0) {                         /* b = 0: x = 0 exactly          */
        res->reason = SPK_CONVERGED_ZERO_RHS;
        st = ops->fill(ctx, n, 0.0, d_x);
        if (!st)
            st = spk_stop_record(&k, 0, 0, 0.0);
    } else {
        st = run_method(&k, fn, d_b, d_x);
    }
    if (!st)
        st = ops->download(ctx, n, d_x, x);
    res->solve_s = spk_now() - t1;
    res->per_iter_s = res->solve_s / (double)(res->iterations > 0 ? res->iterations : 1);
    double scale = res->bnorm > 0 ? res->bnorm : 1.0;
    res->rel = res->rnorm / scale;
    res->true_rel = res->true_rnorm / scale;
    /* the monitor always sees the final iteration */
    if (!st && opt->monitor && opt->monitor_every > 0 && res->iterations % opt->monitor_every)
        opt->monitor(opt->monitor_user, res->iterations, res->rnorm, res->rel, res->solve_s);

out_free:
    ops->free(ctx, d_b);
    ops->free(ctx, d_x);
    ops->free(ctx, dinv);
    return st;
}
