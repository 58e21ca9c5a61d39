/* solvers/gmres_cpu.c -- GMRES's CGS2 on the host (solvers/gmres_ops.h): the four passes
 * h1 = V'w, w -= V h1, h2 = V'w, w -= V h2 and the norm, each a call of the CPU vector-ops
 * table (its dot products summed in a fixed order: the same bits whatever the thread count),
 * the specification solvers/gmres_cuda.cu is tested against. */
#include "gmres_ops.h"

/* h[0..k) = V' w, one dot product a column */
static spk_status gemv_t(spk_context *ctx, const spk_vec_ops *ops, int64_t n, int k,
                         const double *V, int64_t ldv, const double *w, double *h)
{
    spk_status st = SPK_OK;
    for (int j = 0; j < k && !st; j++)
        st = ops->dot(ctx, n, V + (int64_t)j * ldv, w, &h[j]);
    return st;
}

/* dist: the rows of a distributed vector, on the context's device (a GPU rank's passes are
 * its own table's calls, a dot product a column). The local dot products of a pass are summed
 * over the ranks in one reduction of k values, so a CGS2 step reduces three times. */
static spk_status cgs2_step(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                            double *w, double *out, int dist)
{
    if (n < 0 || k < 1 || (n > 0 && ldv < n))
        return spk_fail(ctx, SPK_ERR_ARG, "cgs2: n = %lld, k = %d, ldv = %lld (need n >= 0, "
                        "k >= 1, ldv >= n)", (long long)n, k, (long long)ldv);
    const spk_vec_ops *ops = spk_vec_ops_for(ctx->device);   /* local: a GPU rank's own */
    spk_status st = gemv_t(ctx, ops, n, k, V, ldv, w, out);            /* h1 = V'w   */
    if (!st && dist)
        st = spk_comm_allreduce(ctx, out, k);
    if (!st)
        st = ops->gemv_n_sub(ctx, n, k, V, ldv, out, w);                /* w -= V h1  */
    if (!st)
        st = gemv_t(ctx, ops, n, k, V, ldv, w, out + k);                /* h2 = V'w   */
    if (!st && dist)
        st = spk_comm_allreduce(ctx, out + k, k);
    if (!st)
        st = ops->gemv_n_sub(ctx, n, k, V, ldv, out + k, w);            /* w -= V h2  */
    if (!st)
        st = ops->dot(ctx, n, w, w, &out[2 * k]);                       /* ss = w'w   */
    return st || !dist ? st : spk_comm_allreduce(ctx, &out[2 * k], 1);
}

static spk_status h_cgs2(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                         double *w, double *out)
{
    return cgs2_step(ctx, n, k, V, ldv, w, out, 0);
}

static spk_status d_cgs2(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                         double *w, double *out)
{
    return cgs2_step(ctx, n, k, V, ldv, w, out, 1);
}

static const spk_gmres_ops cpu_gmres_ops = {
    .device = SPK_DEVICE_CPU,
    .cgs2 = h_cgs2,
};

static const spk_gmres_ops dist_gmres_ops = {
    .device = SPK_DEVICE_CPU,
    .cgs2 = d_cgs2,
};

const spk_gmres_ops *spk_gmres_ops_cpu(void) { return &cpu_gmres_ops; }

const spk_gmres_ops *spk_gmres_ops_of(const spk_vec_ops *ops)
{
    return ops->distributed ? &dist_gmres_ops : spk_gmres_ops_for(ops->device);
}

const spk_gmres_ops *spk_gmres_ops_for(spk_device dev)
{
    return dev == SPK_DEVICE_CUDA ? spk_gmres_ops_cuda() : &cpu_gmres_ops;
}
