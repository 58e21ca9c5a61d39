/* solvers/cg.c -- preconditioned conjugate gradients (Hestenes & Stiefel 1952; Saad, Iterative
 * Methods for Sparse Linear Systems, 2nd ed., alg. 9.1). For A symmetric positive definite and
 * an SPD preconditioner M.
 *
 * The scalars live with the vectors (spk_cg_scalars, on the device for the CUDA table): alpha,
 * beta and the stopping test are computed by the steps themselves (solvers/cg_scalar.h), so
 * the host queues whole iterations without waiting and reads the scalars back once per batch
 * (Ginkgo's and MAGMA's device-side scalars; the batch and the double-buffered read-back are
 * ours, solvers/batch.c). An iteration is cg_step below, the textbook loop in order.
 *
 * M comes through its row of the preconditioner table, in one of three paths:
 *   M = I       z is r; nothing is applied
 *   diagonal    z = D^-1 r is never stored: r'z is summed in the r step, D^-1 r formed in xp
 *   general     z = M^-1 r by the row's apply into a vector of its own, then r'z (rz step)
 * Memory traffic per iteration beyond the SpMV, in n-doubles: r step 3 (4 with D), xp 5 (6):
 * 8n without M, 10n with Jacobi; the general path 10n plus the apply's own (a Jacobi applied
 * there: 13n).
 *
 * The batch aims at ~1 ms of work, at most SPK_CG_BATCH iterations: the read-back between two
 * batches idles the GPU for a few microseconds, and a small system would otherwise be bound by
 * round trips. Iterations queued past the stop see the state and return at once (but an SpMV
 * without a fused spmv_dot, and the preconditioner, run in full), and the driver queues none
 * far past the stop the residual's rate predicts; x, the iteration count and the residual are
 * those of the iteration that met the test, as in the textbook loop. The history and the
 * monitor see every iteration's residual, delivered batch by batch.
 *
 * The stopping test is on the recursive residual r (unpreconditioned), as SciPy and PETSc do;
 * the caller recomputes the true residual at the end.
 *
 * Over MPI ranks (a distributed vector table) CG runs in its single-reduction form,
 * solvers/cg_single.c: there a reduction is a message round over the ranks, and this loop's
 * p'q and r'r would be two in a row. */
#include "solver.h"

#include "cg_scalar.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SPK_CG_BATCH 32                  /* most iterations between read-backs; <= HIST / 2 */

/* What a nonpositive p'Ap or r'z means: NaN comes from a NaN/Inf in A or b; otherwise A (or M)
 * is not SPD. */
static spk_reason nonpositive_reason(double v)
{
    return isnan(v) || isinf(v) ? SPK_DIVERGED_NANORINF : SPK_DIVERGED_INDEFINITE;
}

/* A p'Ap or r'z of 0 with the residual at round-off is the end of what floating point gives
 * (rtol = atol = 0 asks for more), not an indefinite A: the detail says which it looks like. */
void spk_cg_indefinite_detail(spk_result *res, const char *what, double v, int64_t it,
                              double rnorm)
{
    if (res->reason != SPK_DIVERGED_INDEFINITE)
        return;
    const double rel = res->bnorm > 0 ? rnorm / res->bnorm : 0.0;
    snprintf(res->reason_detail, sizeof res->reason_detail,
             "%s = %.3e <= 0 at iteration %lld, ||r|| / ||b|| = %.3e%s", what, v, (long long)it,
             rel, v == 0.0 && rel < 1e-12 ? ": the residual is at round-off, where the "
                                            "tolerances (rtol, atol) could have stopped it"
                                          : "");
}

/* One solve's device-side state, for the batch driver (solvers/batch.c). */
typedef struct cg_run {
    spk_krylov       *k;
    const spk_cg_ops *co;
    spk_cg_scalars   *S;             /* device                                              */
    double           *part, *x, *r, *p, *q;
    double           *z;             /* M^-1 r on the general path, else NULL               */
    const double     *dinv;          /* D^-1 on the diagonal path, else NULL                */
    float            *x32, *r32, *p32, *q32, *d32;   /* spk_cg32's (d32: D^-1, or NULL)      */
    spk_cg_scalars    h[2];          /* read-backs, double-buffered                         */
    int64_t           recorded;      /* last iteration handed to history and monitor        */
} cg_run;

/* One iteration, queued (the scalars are the device's: nothing here waits for them). */
static spk_status cg_step(void *self)
{
    const cg_run *c = (const cg_run *)self;
    spk_krylov *k = c->k;
    spk_context *ctx = k->ctx;
    const int64_t n = k->n;
    spk_cg_scalars *S = c->S;
    spk_status st;

    /* q = A p and p'q in one pass where the backend fuses them */
    spk_dot_sink sink = {&S->state, &S->pq, &S->count[0], c->part};
    if (k->be->spmv_dot && k->a_scale == 1.0)       /* the fused pass has no scale */
        st = k->be->spmv_dot(ctx, k->state, c->p, c->q, &sink);
    else if (!(st = spk_apply_A(k, c->p, c->q)))
        st = k->ops->dot_sink(ctx, n, c->p, c->q, &sink);
    if (st)
        return st;
    /* alpha = r'z / p'q;  r -= alpha q;  r'r (and r'D^-1 r);  stop when ||r|| <= threshold */
    if ((st = c->co->r(ctx, n, S, c->q, c->r, c->dinv)))
        return st;
    if (c->z) {
        /* z = M^-1 r;  r'z */
        if ((st = spk_precond_apply(k, c->r, c->z)) || (st = c->co->rz(ctx, n, S, c->r, c->z)))
            return st;
    }
    /* x += alpha p;  beta = r'z_new / r'z;  p = z + beta p */
    return c->co->xp(ctx, n, S, c->x, c->p, c->z ? c->z : c->r, c->dinv);
}

/* Take in a read-back: record the iterations since the last one (history, monitor). */
static spk_status cg_take(void *self, int slot, int64_t *it, int *done, double *rnorm)
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
    *done = h->state == SPK_CG_DONE || c->k->host_stop != SPK_REASON_NONE;
    *rnorm = sqrt(h->rr);
    return SPK_OK;
}

/* r = b - A x;  z = M^-1 r;  p = z;  r'r, r'z (host scalars: once per solve). */
static spk_status cg_start(cg_run *c, const double *b, double *rr, double *rz)
{
    spk_krylov *k = c->k;
    spk_context *ctx = k->ctx;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    spk_status st = spk_apply_A(k, c->x, c->r);
    if (!st)
        st = ops->axpby(ctx, n, 1.0, b, -1.0, c->r);
    if (st)
        return st;
    if (!c->dinv && !c->z) {
        if (!(st = ops->copy(ctx, n, c->r, c->p)))
            st = ops->dot(ctx, n, c->r, c->r, rr);
        *rz = *rr;
        return st;
    }
    if (c->dinv)
        st = ops->pmul(ctx, n, c->dinv, c->r, c->p);
    else if (!(st = spk_precond_apply(k, c->r, c->z)))
        st = ops->copy(ctx, n, c->z, c->p);
    return st ? st : ops->dot2(ctx, n, c->r, c->r, c->p, rr, rz);
}

/* The workspace, kept by the solver object between solves; every vector is written before it
 * is read. */
static spk_status cg_workspace(cg_run *c)
{
    spk_krylov *k = c->k;
    const int64_t n = k->n;
    const int64_t s_len = (int64_t)((sizeof(spk_cg_scalars) + sizeof(double) - 1) / sizeof(double));
    double *sv = NULL;
    spk_status st = spk_krylov_vec(k, SPK_WS_METHOD + 0, n, &c->r);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 1, n, &c->p);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 2, n, &c->q);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 3, s_len, &sv);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 4, 2 * SPK_MAX_BLOCKS, &c->part);
    if (!st && spk_krylov_pc_path(k) == SPK_PC_GENERAL)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 5, n, &c->z);
    c->S = (spk_cg_scalars *)(void *)sv;
    return st;
}

/* From r'r and r'z at the start (S's scalars put by the caller's start, c->h[0] zero but
 * part): the stopping tests at iteration 0, then the batches of `step`, then the reason. */
static spk_status cg_iterate(cg_run *c, spk_status (*step)(void *), double rr, double rz)
{
    spk_krylov *k = c->k;
    spk_result *res = k->res;
    spk_status st;
    res->rnorm = sqrt(rr);
    if ((st = spk_stop_record(k, 0, 0, res->rnorm)))
        return st;
    res->reason = spk_stop_check(k->opt, res->bnorm, res->rnorm);
    if (res->reason == SPK_REASON_NONE)
        res->reason = k->host_stop;                  /* the monitor's stop at iteration 0 */
    if (res->reason != SPK_REASON_NONE)
        return SPK_OK;
    if (!(rz > 0)) {                                 /* r'M^-1 r <= 0: M not SPD    */
        res->reason = nonpositive_reason(rz);
        return SPK_OK;
    }

    spk_cg_scalars *h = c->h;
    h[0].part = c->part;
    h[0].thr = spk_stop_threshold(k->opt, res->bnorm);
    h[0].div_thr = spk_stop_dtol_threshold(k->opt, res->bnorm, res->rnorm);
    h[0].stag_window = k->opt->stagnation;
    h[0].best = res->rnorm;
    h[0].rz = rz;
    h[0].rr = rr;
    h[0].state = SPK_CG_RUN;
    if ((st = k->ops->put(k->ctx, &h[0], sizeof h[0], c->S)))
        return st;

    const spk_batch_method m = {
        .self = c, .step = step, .take = cg_take, .dev_block = c->S, .bytes = sizeof *c->S,
        .host = {&h[0], &h[1]}, .no_graph = !k->pc->graph_safe, .thr = h[0].thr,
        .r0 = res->rnorm,
    };
    int last;
    if ((st = spk_batch_run(k, &m, 4, SPK_CG_BATCH, &last)))
        return st;
    if (last < 0 || h[last].state != SPK_CG_DONE) {
        /* the host stopped queuing (time limit, interrupt), or maxiter; x is the last
         * read-back's iterate */
        res->reason = k->host_stop != SPK_REASON_NONE ? k->host_stop : SPK_DIVERGED_MAXIT;
        return SPK_OK;
    }
    switch (h[last].why) {
    case SPK_CG_WHY_PQ:
    case SPK_CG_WHY_RZ: {
        const int pq = h[last].why == SPK_CG_WHY_PQ;
        const double v = pq ? h[last].pq : h[last].rz_new;
        res->reason = nonpositive_reason(v);
        spk_cg_indefinite_detail(res, pq ? "p'Ap" : "r'M^-1 r", v, h[last].it + 1,
                                 sqrt(h[last].rr));
        break;
    }
    case SPK_CG_WHY_DTOL: res->reason = SPK_DIVERGED_DTOL; break;
    case SPK_CG_WHY_STAG: res->reason = SPK_DIVERGED_STAGNATION; break;
    default:
        res->reason = spk_stop_check(k->opt, res->bnorm, res->rnorm);
        if (res->reason == SPK_REASON_NONE)          /* cannot happen: the same test */
            res->reason = SPK_DIVERGED_NANORINF;
        break;
    }
    return SPK_OK;
}

spk_status spk_cg(spk_krylov *k, const double *b, double *x)
{
    if (k->ops->distributed)                         /* over ranks: one reduction a step */
        return spk_cg_single(k, b, x);
    cg_run c;
    memset(&c, 0, sizeof c);                         /* h[] zero: counters at 0 */
    c.k = k;
    c.x = x;
    c.co = spk_cg_ops_for(k->ops->device);
    c.dinv = spk_krylov_dinv(k);
    if (!c.co)
        return spk_fail(k->ctx, SPK_ERR_NOT_COMPILED, "CG on the %s: not in this build",
                        spk_device_str(k->ops->device));
    spk_status st = cg_workspace(&c);
    double rr, rz;
    if (st || (st = cg_start(&c, b, &rr, &rz)))
        return st;
    return cg_iterate(&c, cg_step, rr, rz);
}

/* ---- CG with fp32 vectors (the inner solve of a mixed solve, src/mixed.c) ----------------
 * The same iteration on float vectors x, r, p, q (and D^-1 rounded to float): the operator's
 * spmv_dot32 and the cg ops' r32 and xp32, every product and sum in fp64, each stored value
 * rounded once. An iteration moves half the vector bytes of the fp64 loop (Jacobi: 10 floats
 * a row beyond the SpMV against 10 doubles, the SpMV's x and y 4 bytes each). The recursive
 * residual keeps falling past what the float vectors hold (the gap between it and b - A x
 * grows as about 2^-24 ||A|| ||x|| a step); the caller, the mixed loop, measures each
 * correction by the fp64 residual and aims the inner tolerance no lower than that allows. */

int spk_cg32_ok(const spk_krylov *k)
{
    const spk_cg_ops *co = spk_cg_ops_for(k->ops->device);
    return !k->ops->distributed && co && co->r32 && k->be->spmv_dot32 && k->a_scale == 1.0 &&
           spk_krylov_pc_path(k) != SPK_PC_GENERAL;
}

/* The workspace's float vectors, each of n rounded up to 64 floats (256 bytes: every one
 * 16-byte aligned for the steps' vector loads). */
#define CG32_ALIGN 64

static spk_status cg32_step(void *self)
{
    const cg_run *c = (const cg_run *)self;
    spk_krylov *k = c->k;
    spk_cg_scalars *S = c->S;
    spk_dot_sink sink = {&S->state, &S->pq, &S->count[0], c->part};
    spk_status st = k->be->spmv_dot32(k->ctx, k->state, c->p32, c->q32, &sink);
    if (!st)
        st = c->co->r32(k->ctx, k->n, S, c->q32, c->r32, c->d32);
    if (!st)
        st = c->co->xp32(k->ctx, k->n, S, c->x32, c->p32, c->r32, c->d32);
    return st;
}

spk_status spk_cg32(spk_krylov *k, const double *b, double *x)
{
    if (!spk_cg32_ok(k))
        return spk_fail(k->ctx, SPK_ERR_UNSUPPORTED, "CG with fp32 vectors: not for this operator "
                        "(%s) or preconditioner", k->be->name);
    cg_run c;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.x = x;
    c.co = spk_cg_ops_for(k->ops->device);
    const double *dinv = spk_krylov_dinv(k);
    const int64_t n = k->n, m = (n + CG32_ALIGN - 1) / CG32_ALIGN * CG32_ALIGN;
    const int64_t s_len = (int64_t)((sizeof(spk_cg_scalars) + sizeof(double) - 1) / sizeof(double));
    double *sv = NULL, *fv = NULL;
    spk_status st = spk_krylov_vec(k, SPK_WS_METHOD + 3, s_len, &sv);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 4, 2 * SPK_MAX_BLOCKS, &c.part);
    if (!st)                                         /* x, r, p, q, D^-1: 5 m floats */
        st = spk_krylov_vec(k, SPK_WS_METHOD + 6, 5 * m / 2 + 1, &fv);
    if (st)
        return st;
    c.S = (spk_cg_scalars *)(void *)sv;
    float *f = (float *)(void *)fv;
    c.x32 = f;
    c.r32 = f + m;
    c.p32 = f + 2 * m;
    c.q32 = f + 3 * m;
    c.d32 = dinv ? f + 4 * m : NULL;
    /* the scalars' counters at 0 and part set before begin32's sums land in S */
    c.h[0].part = c.part;
    spk_cg_scalars got;
    if ((st = k->ops->put(k->ctx, &c.h[0], sizeof c.h[0], c.S)) ||
        (st = c.co->begin32(k->ctx, n, c.S, b, dinv, c.x32, c.r32, c.p32, c.d32 ? c.d32 : c.x32)) ||
        (st = k->ops->fetch(k->ctx, c.S, sizeof got, 0, &got)) ||
        (st = k->ops->fetch_wait(k->ctx, 0)))
        return st;
    memset(&c.h[0], 0, sizeof c.h[0]);
    st = cg_iterate(&c, cg32_step, got.rr, got.rz);
    spk_status st2 = c.co->widen(k->ctx, n, c.x32, x);  /* the iterate reached, whatever ended it */
    return st ? st : st2;
}
