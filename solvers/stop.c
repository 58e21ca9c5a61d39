/* solvers/stop.c -- the stopping tests and the per-iteration record, shared by every method.
 * Convergence: ||r|| <= max(rtol ||b||, atol) on the unpreconditioned residual, as SciPy and
 * PETSc (KSPConvergedDefault with KSP_NORM_UNPRECONDITIONED) define it; divergence: ||r|| >
 * dtol max(||b||, ||r0||), PETSc's test; stagnation and the time limit (include/spk.h). */
#include "solver.h"

#include <math.h>
#include <string.h>

double spk_stop_threshold(const spk_options *opt, double bnorm)
{
    double t = opt->rtol * bnorm;
    return t > opt->atol ? t : opt->atol;
}

spk_reason spk_stop_check(const spk_options *opt, double bnorm, double rnorm)
{
    if (!isfinite(rnorm))
        return SPK_DIVERGED_NANORINF;
    if (rnorm <= opt->rtol * bnorm)
        return SPK_CONVERGED_RTOL;
    if (rnorm <= opt->atol)
        return SPK_CONVERGED_ATOL;
    return SPK_REASON_NONE;
}

int spk_denominator_ok(double x, double scale)
{
    /* 1e-300 * scale: below it the quotient overflows or is noise; exact zero is the usual
     * breakdown, and NaN fails every comparison. */
    return isfinite(x) && fabs(x) > 1e-300 * (scale > 0 ? scale : 1.0);
}

spk_status spk_stop_record(spk_krylov *k, int64_t it, int64_t cycle, double rnorm)
{
    spk_result *res = k->outer ? k->outer : k->res;
    /* an inner solve's iteration 0 is a residual already recorded: the refinement loop's
     * first (src/mixed.c), or the last iteration of the step before */
    const int again = k->outer && it == 0;
    if (k->outer) {
        it += k->it_base;
        cycle = k->step;
    }
    double rel = res->bnorm > 0 ? rnorm / res->bnorm : rnorm;
    rnorm /= k->b_scale;                             /* in the caller's units (exact) */
    const double now = spk_now(), t = now - k->t0;
    spk_threads_tick(&k->threads, it, now);
    if (k->opt->history && !again) {
        if (res->history_len == k->hist_cap) {
            int64_t cap = k->hist_cap ? 2 * k->hist_cap : 256;
            /* spk_malloc + copy rather than realloc: a counted allocation, so that failure
             * injection reaches it (amortised O(1) per entry either way) */
            spk_history_entry *h = spk_malloc(k->ctx, (size_t)cap, sizeof *h);
            spk_status st = h ? SPK_OK
                              : spk_fail(k->ctx, SPK_ERR_NOMEM, "residual history of %lld "
                                         "entries: out of memory", (long long)cap);
            if (k->ops->distributed && k->ctx->comm)  /* every rank grows it at once */
                st = k->ctx->comm->agree(k->ctx, st);
            if (st) {
                spk_free(h);
                return st;
            }
            if (res->history_len)
                memcpy(h, res->history, (size_t)res->history_len * sizeof *h);
            spk_free(res->history);
            res->history = h;
            k->hist_cap = cap;
        }
        spk_history_entry *e = &res->history[res->history_len++];
        e->it = it;
        e->cycle = cycle;
        e->rnorm = rnorm;
        e->rel = rel;
        e->seconds = t;
    }
    const spk_options *opt = k->opt;
    const int64_t every = opt->monitor_every > 1 ? opt->monitor_every : 1;
    spk_reason want = SPK_REASON_NONE;
    if (opt->monitor && !again && it % every == 0 &&
        opt->monitor(opt->monitor_user, it, rnorm, rel, t))
        want = SPK_DIVERGED_INTERRUPTED;
    if (opt->max_time > 0 && t > opt->max_time && want == SPK_REASON_NONE)
        want = SPK_DIVERGED_TIME_LIMIT;
    spk_comm *cm = k->ctx->comm;
    if (k->ops->distributed && cm) {
        /* over ranks: the request waits for the next reduction; every rank stops on the one
         * they all saw (src/spk_internal.h, spk_comm) */
        if (want != SPK_REASON_NONE && cm->stop_local == SPK_REASON_NONE)
            cm->stop_local = want;
        want = cm->stop_seen;
    }
    if (want == SPK_DIVERGED_INTERRUPTED ||
        (want != SPK_REASON_NONE && k->host_stop == SPK_REASON_NONE))
        k->host_stop = want;
    return SPK_OK;
}

double spk_stop_dtol_threshold(const spk_options *opt, double bnorm, double r0norm)
{
    return opt->dtol > 0 ? opt->dtol * (bnorm > r0norm ? bnorm : r0norm) : INFINITY;
}

spk_status spk_apply_A(spk_krylov *k, const double *x, double *y)
{
    return k->be->spmv(k->ctx, k->state, k->a_scale, x, 0.0, y);
}

spk_pc_path spk_krylov_pc_path(const spk_krylov *k)
{
    if (k->pc->identity)
        return SPK_PC_IDENTITY;
    return spk_krylov_dinv(k) ? SPK_PC_DIAGONAL : SPK_PC_GENERAL;
}

const double *spk_krylov_dinv(const spk_krylov *k)
{
    if (!k->pc->diag)
        return NULL;
    return k->a_scale != 1.0 ? k->dinv_scaled : k->pc->diag(k->pc_state);
}

spk_status spk_precond_apply(spk_krylov *k, const double *r, double *z)
{
    spk_status st = k->pc->apply(k->pc_state, r, z);
    if (!st && k->a_scale != 1.0)                    /* M' = a_scale M */
        st = k->ops->scal(k->ctx, k->n, 1.0 / k->a_scale, z);
    return st;
}
