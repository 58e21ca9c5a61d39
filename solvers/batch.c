/* solvers/batch.c -- the host side of a method whose scalars live on the device (CG,
 * BiCGStab): queue batches of iterations, read the scalar block back after each, and hand
 * every read-back to the method, double-buffered so that the GPU never waits for the host.
 *
 * The host waits for batch j's read-back only once batch j + 1 is queued (depth 2); on the CPU
 * a step has run when it returns, so the read-back is taken at once (depth 1, batches of one).
 * On the GPU the batch is sized from the time per iteration measured between read-backs, to
 * about SPK_BATCH_SECONDS of work (the tuning knob SPK_BATCH_US, src/tuning.c), at most
 * `max_batch` iterations. The read-back after a batch sits in the stream between two kernels,
 * a few microseconds of idle GPU, so a batch is about a millisecond, not one iteration;
 * iterations queued past the stop cost a launch each (an SpMV without a fused skip runs in
 * full). */
#include "solver.h"

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
    spk_status st = SPK_OK;
    *last = -1;
    for (;;) {
        if (!done && launched < k->maxiter) {
            int64_t nb = k->maxiter - launched < batch ? k->maxiter - launched : batch;
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
        }
        if (nfifo == 0)
            break;
        if (nfifo < depth && !done && launched < k->maxiter)
            continue;
        const int s = fifo[0];
        fifo[0] = fifo[1];
        nfifo--;
        int64_t it = 0;
        if ((st = ops->fetch_wait(k->ctx, s)) || (st = m->take(m->self, s, &it, &done)))
            break;
        *last = s;
        if (!cpu && it > it_prev) {
            double t = spk_now(), per_it = (t - t_prev) / (double)(it - it_prev);
            double want = per_it > 0 ? batch_seconds / per_it : (double)max_batch;
            batch = want < 1 ? 1 : want > (double)max_batch ? max_batch : (int64_t)want;
            t_prev = t;
            it_prev = it;
        }
    }
    if (ops->graph_free)
        ops->graph_free(graph);
    return st;
}
