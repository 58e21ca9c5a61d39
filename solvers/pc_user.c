/* solvers/pc_user.c -- the caller's own preconditioner (spk_precond_user in include/spk.h),
 * PETSc's PCSHELL and SciPy's M = LinearOperator: apply and refresh are the caller's
 * callbacks, on the context's device vectors. The methods take it through their general path
 * (apply, then their fused vector steps); it is never captured into a CUDA graph, since its
 * apply may do host work that a replay would skip. */
#include "precond.h"

typedef struct pc_user {
    spk_context      *ctx;
    spk_precond_user  cb;                /* the caller's struct, copied at setup              */
    int64_t           n;
} pc_user;

static const char *user_name(const pc_user *U) { return U->cb.name ? U->cb.name : "user"; }

static spk_status user_setup(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                             void **state)
{
    *state = NULL;
    const spk_precond_user *cb = opt->precond_user;
    if (!cb || !cb->apply)
        return spk_fail(ctx, SPK_ERR_ARG, "SPK_PRECOND_USER needs spk_options.precond_user with "
                        "an apply callback");
    pc_user *U = spk_calloc(ctx, 1, sizeof *U);
    if (!U)
        return spk_fail(ctx, SPK_ERR_NOMEM, "user preconditioner: out of memory");
    U->ctx = ctx;
    U->cb = *cb;
    U->n = A->csr.nrows;
    *state = U;
    return SPK_OK;
}

/* A callback's failure, kept as its status with the library's message. */
static spk_status user_failed(const pc_user *U, const char *what, spk_status st)
{
    return spk_fail(U->ctx, st, "user preconditioner '%s': %s returned %s", user_name(U), what,
                    spk_status_str(st));
}

static spk_status user_refresh(void *state, spk_matrix *A)
{
    const pc_user *U = state;
    if (!U->cb.refresh)
        return SPK_OK;
    spk_status st = U->cb.refresh(U->cb.user, A);
    return st ? user_failed(U, "refresh", st) : SPK_OK;
}

static spk_status user_apply(void *state, const double *r, double *z)
{
    const pc_user *U = state;
    const spk_vec_ops *ops = spk_vec_ops_for(U->ctx->device);
    spk_status st;
    /* r is ready for host code once the queued work before it is done */
    if (!U->cb.stream_ordered && (st = ops->sync(U->ctx)))
        return st;
    st = U->cb.apply(U->cb.user, U->n, r, z);
    return st ? user_failed(U, "apply", st) : SPK_OK;
}

static void user_destroy(void *state) { spk_free(state); }

const spk_precond_ops spk_pc_user = {
    .name = "user",
    .kind = SPK_PRECOND_USER,
    .device = SPK_DEVICE_AUTO,
    .summary = "the caller's callbacks (spk_options.precond_user)",
    .setup = user_setup,
    .refresh = user_refresh,
    .apply = user_apply,
    .destroy = user_destroy,
};
