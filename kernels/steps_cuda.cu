/* kernels/steps_cuda.cu -- the GPU side of device-resident scalars, for every method whose
 * scalars stay in device memory (CG, BiCGStab): the fused dot into a scalar block (dot_sink,
 * after an SpMV without a fused spmv_dot), the read-back of a block into a double-buffered
 * pinned slot (fetch, fetch_wait), its first upload (put), and the iterations replayed as a
 * CUDA graph (steps). The methods' own kernels live in their rooms (solvers/cg_cuda.cu,
 * solvers/bicgstab_cuda.cu).
 *
 * After the stop a dot_sink reads `skip` (the method's state) and returns, so iterations
 * queued past it cost a launch each. */
#include "cuda_common.h"

#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

/* Blocks of the element-wise steps: one resident wave (their reductions need it too). */
static unsigned vec_grid(const spk_cuda_state *cs, int64_t n)
{
    return spk_cuda_red_grid(cs, n, SPK_CUDA_BLOCK);
}

#define SPK_GRID_STRIDE(i, n)                                                                  \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                 \
         i += (int64_t)gridDim.x * blockDim.x)

/* sink->out = x'y (the fallback after an SpMV without a fused dot). */
__global__ void SPK_RESIDENT_BOUNDS
dot_sink_kernel(int64_t n, const double *__restrict__ x, const double *__restrict__ y,
                spk_dot_sink sink)
{
    if (sink.skip && *sink.skip)
        return;                                   /* uniform: every block reads the same */
    double s[1] = {0.0};
    SPK_GRID_STRIDE(i, n)
        s[0] += x[i] * y[i];
    if (spk_last_block_sum<1>(s, sink.part, sink.count) && threadIdx.x == 0)
        *sink.out = s[0];
}

spk_status spk_cuda_dot_sink(spk_context *ctx, int64_t n, const double *x, const double *y,
                             const spk_dot_sink *sink)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    /* n == 0 still launches one block: the sum (0) must land in *sink->out */
    dot_sink_kernel<<<vec_grid(cs, n), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, x, y, *sink);
    return spk_cuda_launched(ctx, "dot_sink_kernel");
}

/* ---- the header's trips between host and device ---------------------------------------- */

spk_status spk_cuda_fetch(spk_context *ctx, const void *dev, size_t bytes, int slot, void *host)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (slot < 0 || slot > 1 || bytes > SPK_CUDA_FETCH_MAX)
        return spk_fail(ctx, SPK_ERR_ARG, "fetch: slot %d of %zu bytes (at most 2 slots of %d)",
                        slot, bytes, SPK_CUDA_FETCH_MAX);
    cs->fetch_dst[slot] = host;
    cs->fetch_bytes[slot] = bytes;
    if ((st = spk_cuda(ctx, cudaMemcpyAsync(cs->h_scratch->fetch[slot], dev, bytes,
                                            cudaMemcpyDeviceToHost, cs->stream),
                       "fetch of %zu bytes", bytes)))
        return st;
    return spk_cuda(ctx, cudaEventRecord(cs->fetch_ev[slot], cs->stream), "fetch: event");
}

spk_status spk_cuda_fetch_wait(spk_context *ctx, int slot)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (slot < 0 || slot > 1 || !cs->fetch_dst[slot])
        return spk_fail(ctx, SPK_ERR_ARG, "fetch_wait: slot %d has no fetch in flight", slot);
    if ((st = spk_cuda(ctx, cudaEventSynchronize(cs->fetch_ev[slot]), "fetch: waiting")))
        return st;
    memcpy(cs->fetch_dst[slot], cs->h_scratch->fetch[slot], cs->fetch_bytes[slot]);
    cs->fetch_dst[slot] = NULL;
    return SPK_OK;
}

/* ---- iterations as a CUDA graph --------------------------------------------------------- */

/* A small system's iteration is a few launches of a few microseconds each, so queuing them one
 * by one from the host costs more than running them. SPK_CUDA_GRAPH_STEPS iterations are
 * captured once per solve (stream capture, relaxed mode, so that a cached occupancy query or
 * a first-call attribute set in a step stays legal) and replayed by one cudaGraphLaunch each.
 * The captured arguments are the solve's own: the step queues the same launches with the same
 * pointers every iteration, its scalars living on the device. A capture that fails (an API
 * the capture refuses; a Debug build's sync after each launch is skipped while capturing)
 * leaves the solve on plain launches: a captured step never runs, so nothing is lost or run
 * twice. The knob SPK_CUDA_GRAPH=0 turns graphs off (for comparison). */
#define SPK_CUDA_GRAPH_STEPS 8

/* *graph: NULL before the first run long enough, then the captured cudaGraphExec_t or
 * &graph_off (capture failed or graphs are off: plain launches). No allocation of ours. */
static char graph_off;

void spk_cuda_graph_free(void *graph)
{
    if (graph && graph != (void *)&graph_off)
        (void)cudaGraphExecDestroy((cudaGraphExec_t)graph);   /* freed once its launches ran */
}

/* SPK_CUDA_GRAPH_STEPS steps captured and instantiated, or &graph_off with the error state
 * cleared. The capture runs on the context's non-blocking `capture` stream, standing in for
 * `stream` (and cuBLAS's) while the steps queue their launches: while a blocking stream is
 * being captured the legacy default stream is unusable in the whole process, so another
 * thread's plain cudaMemcpy (or spk's own download of updated values, on another context)
 * would fail, and break this capture too. Kernel nodes keep no stream: the graph is launched
 * on `stream`, in order with everything else. */
static void *graph_capture(spk_cuda_state *cs, spk_status (*step)(void *), void *self)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    if (!cs->capture &&
        cudaStreamCreateWithFlags(&cs->capture, cudaStreamNonBlocking) != cudaSuccess)
        cs->capture = NULL;
    const cudaStream_t own = cs->stream;
    if (cs->capture && cublasSetStream(cs->blas, cs->capture) == CUBLAS_STATUS_SUCCESS) {
        cs->stream = cs->capture;
        if (cudaStreamBeginCapture(cs->stream, cudaStreamCaptureModeRelaxed) == cudaSuccess) {
            spk_status st = SPK_OK;
            for (int i = 0; i < SPK_CUDA_GRAPH_STEPS && !st; i++)
                st = step(self);
            const cudaError_t e = cudaStreamEndCapture(cs->stream, &graph);
            if (st || e != cudaSuccess || !graph ||
                cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess)
                exec = NULL;
            if (graph)
                (void)cudaGraphDestroy(graph);
        }
        cs->stream = own;
        (void)cublasSetStream(cs->blas, own);   /* a valid handle stores it; it cannot fail */
    }
    if (!exec) {
        (void)cudaGetLastError();
        return &graph_off;
    }
    return (void *)exec;
}

spk_status spk_cuda_steps(spk_context *ctx, void **graph, spk_status (*step)(void *), void *self,
                          int64_t count)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    int64_t i = 0;
    /* a graph for runs of at least two captures' worth: a short solve does not pay the
     * capture (tens of microseconds) */
    if (count >= 2 * SPK_CUDA_GRAPH_STEPS) {
        if (!*graph) {
            char msg[sizeof ctx->msg];
            memcpy(msg, ctx->msg, sizeof msg);
            *graph = !ctx->tune.cuda_graph ? (void *)&graph_off : graph_capture(cs, step, self);
            if (*graph == (void *)&graph_off)   /* a refused capture is no failure of the solve: */
                memcpy(ctx->msg, msg, sizeof msg);   /* spk_last_error keeps what it said */
        }
        for (; *graph != (void *)&graph_off && i + SPK_CUDA_GRAPH_STEPS <= count;
             i += SPK_CUDA_GRAPH_STEPS)
            if ((st = spk_cuda(ctx, cudaGraphLaunch((cudaGraphExec_t)*graph, cs->stream),
                               "launch of the iteration's CUDA graph")))
                return st;
    }
    for (; i < count; i++)
        if ((st = step(self)))
            return st;
    return SPK_OK;
}

spk_status spk_cuda_put(spk_context *ctx, const void *host, size_t bytes, void *dev)
{
    return spk_cuda_upload_into(ctx, dev, host, bytes, "solver scalars");
}
