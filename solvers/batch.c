/* solvers/batch.c -- the host side of a method whose scalars live on the device (CG,
 * BiCGStab): queue batches of iterations, read the scalar block back after each, and hand
 * every read-back to the method, double-buffered so that the GPU never waits for the host.
 *
 * The host waits for batch j's read-back only once batch j + 1 is queued (depth 2); on the CPU
 * a step has run when it returns, so the read-back is taken at once (depth 1, batches of one).
 * On the GPU the batch is sized from the time per iteration measured between read-backs, to
 * about SPK_BATCH_SECONDS of work (the tuning knob SPK_BATCH_US, src/tuning.c), at most
 * `max_batch` iterations. The read-back after a batch sits in the stream between two kernels,
 * a few microseconds of idle GPU, so a batch is about a millisecond, not one iteration.
 *
 * Iterations queued past the stop run their kernels for nothing: the method's own steps
 * return at once, but an SpMV without a fused skip, or a preconditioner, runs in full. With
 * two batches of ~1 ms in flight that was up to two milliseconds at the end of every solve:
 * one wasted V-cycle or more of an AMG-CG solve (5-10% of a large one, a third to a half of
 * a small one, on an H100). So the driver predicts the stop: log ||r||
 * against the iteration is fitted through the newest read-back and the oldest one kept within
 * SPK_BATCH_RATE_SPAN iterations of it (the residual's geometric rate, which CG and BiCGStab
 * with a good preconditioner follow closely), and no iteration is queued past the predicted
 * one plus a slack, the iterations that cost the round trip a wrong prediction costs
 * (SPK_BATCH_SLACK_US of GPU work: a missed prediction idles the GPU for one read-back; a
 * slack of two batches or more is the driver without the prediction).
 * Where the prediction was short, one more iteration is queued and the prediction made again,
 * with twice the slack each time it missed. A residual that did not decrease over the span
 * predicts nothing, and the batches go on as before. */
#include "solver.h"

#include <math.h>

/* Iterations over which the residual's rate is taken: a window of several read-backs, short
 * enough to follow a rate that changes (CG's superlinear end). */
#define SPK_BATCH_RATE_SPAN 16
/* Read-backs kept for the rate. */
#define SPK_BATCH_MARKS 8

typedef struct batch_mark {
    int64_t it;
    double  log_r;                 /* log ||r|| at iteration it                             */
} batch_mark;

/* The iteration at which ||r|| reaches e^log_thr, from the line through the newest mark and
 * the oldest within SPK_BATCH_RATE_SPAN iterations of it; -1 when there is no such pair or
 * the residual did not decrease between them. */
static int64_t predicted_stop(const batch_mark *m, int count, double log_thr)
{
    if (count < 2)
        return -1;
    const batch_mark *b = &m[count - 1];
    for (int i = 0; i < count - 1; i++) {
        const int64_t span = b->it - m[i].it;
        if (span > SPK_BATCH_RATE_SPAN || span < 1)
            continue;
        const double slope = (b->log_r - m[i].log_r) / (double)span;
        if (!(slope < 0))
            return -1;
        const double rest = (log_thr - b->log_r) / slope;   /* <= 0: met already */
        if (!(rest < 1e9))
            return -1;
        return b->it + (rest > 0 ? (int64_t)ceil(rest) : 0);
    }
    return -1;
}

/* Keep (it, log rnorm) as the newest mark, the oldest dropped when full; a residual of 0,
 * NaN or Inf ends the prediction (count 0). */
static void mark(batch_mark *m, int *count, int64_t it, double rnorm)
{
    if (!(rnorm > 0) || isinf(rnorm)) {
        *count = 0;
        return;
    }
    if (*count > 0 && m[*count - 1].it == it)
        return;
    if (*count == SPK_BATCH_MARKS) {
        for (int i = 1; i < SPK_BATCH_MARKS; i++)
            m[i - 1] = m[i];
        (*count)--;
    }
    m[(*count)++] = (batch_mark){it, log(rnorm)};
}

spk_status spk_batch_run(spk_krylov *k, const spk_batch_method *m, int64_t first_batch,
                         int64_t max_batch, int *last)
{
    const spk_vec_ops *ops = k->ops;
    /* the composed steps over ranks (GPU ranks) reduce on the host in every step: one
     * iteration a batch, as on the CPU */
    const int cpu = (ops->device == SPK_DEVICE_CPU || ops->distributed == SPK_DIST_COMPOSED) &&
                    !m->gpu_shape;
    const int depth = cpu ? 1 : 2;
    const double batch_seconds = k->ctx->tune.batch_s;
    int64_t launched = 0, batch = cpu ? 1 : first_batch, it_prev = 0;
    int fifo[2], nfifo = 0, next = 0, done = 0;
    double t_prev = spk_now();
    void *graph = NULL;                   /* ops->steps' captured iterations, for this solve  */
    /* the predicted stop: marks of the residual, the stop they give, the slack after it */
    const int predict = !cpu && m->thr > 0 && isfinite(m->thr);
    const double log_thr = predict ? log(m->thr) : 0.0;
    batch_mark marks[SPK_BATCH_MARKS];
    int nmarks = 0;
    int64_t stop_at = -1, slack = 0, extra = 0;
    if (predict)
        mark(marks, &nmarks, 0, m->r0);
    spk_status st = SPK_OK;
    *last = -1;
    for (;;) {
        int queued = 0;
        if (!done && launched < k->maxiter) {
            int64_t nb = k->maxiter - launched < batch ? k->maxiter - launched : batch;
            if (stop_at >= 0 && stop_at + slack + extra - launched < nb) {
                nb = stop_at + slack + extra - launched;
                if (nb <= 0 && nfifo == 0) {
                    /* the prediction was short: one more, and more slack the next time */
                    nb = 1;
                    extra = extra ? 2 * extra : 1;
                }
            }
            if (nb > 0) {
                /* on an error, a read-back in flight only lands in pinned scratch */
                if (ops->steps && !cpu && !m->no_graph)
                    st = ops->steps(k->ctx, &graph, m->step, m->self, nb);
                else
                    for (int64_t j = 0; j < nb && !st; j++)
                        st = m->step(m->self);
                if (st)
                    break;
                launched += nb;
                if ((st = ops->fetch(k->ctx, m->dev_block, m->bytes, next, m->host[next])))
                    break;
                fifo[nfifo++] = next;
                next ^= 1;
                queued = 1;
            }
        }
        if (nfifo == 0)
            break;
        if (queued && nfifo < depth && !done && launched < k->maxiter)
            continue;
        const int s = fifo[0];
        fifo[0] = fifo[1];
        nfifo--;
        int64_t it = 0;
        double rnorm = NAN;
        if ((st = ops->fetch_wait(k->ctx, s)) ||
            (st = m->take(m->self, s, &it, &done, &rnorm)))
            break;
        *last = s;
        if (!cpu && it > it_prev) {
            double t = spk_now(), per_it = (t - t_prev) / (double)(it - it_prev);
            double want = per_it > 0 ? batch_seconds / per_it : (double)max_batch;
            batch = want < 1 ? 1 : want > (double)max_batch ? max_batch : (int64_t)want;
            if (predict) {
                const double sl = per_it > 0 ? k->ctx->tune.batch_slack_s / per_it : 0.0;
                slack = sl < (double)(2 * max_batch) ? (int64_t)sl : 2 * max_batch;
                mark(marks, &nmarks, it, rnorm);
                stop_at = predicted_stop(marks, nmarks, log_thr);
            }
            t_prev = t;
            it_prev = it;
        }
    }
    if (ops->graph_free)
        ops->graph_free(graph);
    return st;
}
