/* solvers/cg.c -- preconditioned conjugate gradients (Hestenes & Stiefel 1952; Saad, Iterative
 * Methods for Sparse Linear Systems, 2nd ed., alg. 9.1). For A symmetric positive definite and
 * an SPD preconditioner M.
 *
 * The scalars live with the vectors (spk_cg_scalars, on the device for the CUDA table): alpha,
 * beta and the stopping test are computed by the steps themselves, so the host queues whole
 * iterations without waiting and reads the scalars back once per batch (Ginkgo's and MAGMA's
 * device-side scalars; the batch and the double-buffered read-back are ours). An iteration:
 *
 *   q = A p and p'q in one pass   (backend spmv_dot; else spmv, then ops->dot_sink)
 *   ops->cg_r:  alpha = r'z / p'q;  r -= alpha q;  r'r, r'z;  stop when ||r|| <= threshold
 *   ops->cg_xp: x += alpha p;  p = M^-1 r + beta p
 *
 * Memory traffic beyond the SpMV: 8n doubles, 10n with Jacobi (z = M^-1 r is never stored).
 * The batch aims at ~1 ms of work (spk_batch_seconds), at most SPK_CG_BATCH iterations: the
 * read-back between two batches idles the GPU for a few microseconds, and a small system would
 * otherwise be bound by round trips. Iterations queued past the stop see the state and
 * return at once, so stopping costs at most two batches of launches (and of SpMVs, where the
 * backend has no fused spmv_dot to skip); x, the iteration count
 * and the residual are those of the iteration that met the test, as in the textbook loop.
 * The history and the monitor see every iteration's residual, delivered batch by batch.
 *
 * The stopping test is on the recursive residual r (unpreconditioned), as SciPy and PETSc do;
 * the caller recomputes the true residual at the end. */
#include "solver.h"

#include <math.h>
#include <string.h>

#define SPK_CG_BATCH 32                  /* most iterations between read-backs; <= HIST / 2 */

/* What a nonpositive p'Ap or r'z means: NaN comes from a NaN/Inf in A or b; otherwise A (or M)
 * is not SPD. */
static spk_reason nonpositive_reason(double v)
{
    return isnan(v) || isinf(v) ? SPK_DIVERGED_NANORINF : SPK_DIVERGED_INDEFINITE;
}

/* One solve's device-side state, for the batch driver (solvers/batch.c). */
typedef struct cg_run {
    spk_krylov     *k;
    spk_cg_scalars *S;               /* device                                              */
    double         *part, *x, *r, *p, *q;
    spk_cg_scalars  h[2];            /* read-backs, double-buffered                         */
    int64_t         recorded;        /* last iteration handed to history and monitor        */
} cg_run;

/* Queue one iteration. */
static spk_status cg_step(void *self)
{
    const cg_run *c = (const cg_run *)self;
    spk_krylov *k = c->k;
    const spk_vec_ops *ops = k->ops;
    spk_dot_sink sink = {&c->S->state, &c->S->pq, &c->S->count[0], c->part};
    spk_status st;
    if (k->be->spmv_dot)
        st = k->be->spmv_dot(k->ctx, k->state, c->p, c->q, &sink);
    else if (!(st = spk_apply_A(k, c->p, c->q)))
        st = ops->dot_sink(k->ctx, k->n, c->p, c->q, &sink);
    if (st || (st = ops->cg_r(k->ctx, k->n, c->S, c->q, c->r, k->dinv)))
        return st;
    return ops->cg_xp(k->ctx, k->n, c->S, c->x, c->p, c->r, k->dinv);
}

/* Take in a read-back: record the iterations since the last one (history, monitor). */
static spk_status cg_take(void *self, int slot, int64_t *it, int *done)
{
    cg_run *c = (cg_run *)self;
    const spk_cg_scalars *h = &c->h[slot];
    spk_status st;
    for (int64_t i = c->recorded + 1; i <= h->it; i++)
        if ((st = spk_stop_record(c->k, i, 0, sqrt(h->hist[i % SPK_CG_HIST]))))
            return st;
    if (h->it > c->recorded) {
        c->k->res->iterations = h->it;
        c->k->res->rnorm = sqrt(h->rr);
    }
    c->recorded = h->it;
    *it = h->it;
    *done = h->state == SPK_CG_DONE;
    return SPK_OK;
}

spk_status spk_cg(spk_krylov *k, const double *b, double *x)
{
    spk_context *ctx = k->ctx;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    spk_result *res = k->res;
    double *r = NULL, *p = NULL, *q = NULL, *sv = NULL, *part = NULL;
    spk_status st;

    /* the workspace: kept by the solver object, every vector written before it is read */
    const int64_t s_len = (int64_t)((sizeof(spk_cg_scalars) + sizeof(double) - 1) / sizeof(double));
    if ((st = spk_krylov_vec(k, SPK_WS_METHOD + 0, n, &r)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 1, n, &p)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 2, n, &q)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 3, s_len, &sv)) ||
        (st = spk_krylov_vec(k, SPK_WS_METHOD + 4, 2 * SPK_CG_MAX_BLOCKS, &part)))
        return st;
    spk_cg_scalars *S = (spk_cg_scalars *)(void *)sv;

    /* r = b - A x; p = z = M^-1 r; rr = r'r, rz = r'z (host scalars: once per solve) */
    if ((st = spk_apply_A(k, x, r)) || (st = ops->axpby(ctx, n, 1.0, b, -1.0, r)))
        return st;
    double rr, rz;
    if (k->dinv) {
        if ((st = ops->pmul(ctx, n, k->dinv, r, p)) || (st = ops->dot2(ctx, n, r, r, p, &rr, &rz)))
            return st;
    } else {
        if ((st = ops->copy(ctx, n, r, p)) || (st = ops->dot(ctx, n, r, r, &rr)))
            return st;
        rz = rr;
    }
    res->rnorm = sqrt(rr);
    if ((st = spk_stop_record(k, 0, 0, res->rnorm)))
        return st;
    res->reason = spk_stop_check(k->opt, res->bnorm, res->rnorm);
    if (res->reason != SPK_REASON_NONE)
        return SPK_OK;
    if (!(rz > 0)) {                                 /* r'M^-1 r <= 0: M not SPD    */
        res->reason = nonpositive_reason(rz);
        return SPK_OK;
    }

    cg_run c = {k, S, part, x, r, p, q, {{0}}, 0};     /* h[] zero: counters at 0 */
    spk_cg_scalars *h = c.h;
    h[0].part = part;
    h[0].thr = spk_stop_threshold(k->opt, res->bnorm);
    h[0].rz = rz;
    h[0].rr = rr;
    h[0].state = SPK_CG_RUN;
    if ((st = ops->put(ctx, &h[0], sizeof h[0], S)))
        return st;

    const spk_batch_method m = {&c, cg_step, cg_take, S, sizeof *S, {&h[0], &h[1]}, 0};
    int last;
    if ((st = spk_batch_run(k, &m, 4, SPK_CG_BATCH, &last)))
        return st;
    if (last < 0 || h[last].state != SPK_CG_DONE) {
        res->reason = SPK_DIVERGED_MAXIT;
        return SPK_OK;
    }
    switch (h[last].why) {
    case SPK_CG_WHY_PQ: res->reason = nonpositive_reason(h[last].pq); break;
    case SPK_CG_WHY_RZ: res->reason = nonpositive_reason(h[last].rz_new); break;
    default:
        res->reason = spk_stop_check(k->opt, res->bnorm, res->rnorm);
        if (res->reason == SPK_REASON_NONE)          /* cannot happen: the same test */
            res->reason = SPK_DIVERGED_NANORINF;
        break;
    }
    return SPK_OK;
}
