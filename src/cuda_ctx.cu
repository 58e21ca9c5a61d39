/* src/cuda_ctx.cu -- the CUDA side of a context: probing for a usable GPU, creating the
 * stream, the cuBLAS handle and the reduction scratch a context owns, and the checked-call
 * and counted-allocation helpers of kernels/cuda_common.h. Nothing here prints or exits; every
 * CUDA and cuBLAS call is checked and turned into an spk_status with the detail on ctx. */
#include "../kernels/cuda_common.h"

#include <stdio.h>
#include <string.h>

/* ---- checked calls ------------------------------------------------------------------------- */

spk_status spk_cuda(spk_context *ctx, cudaError_t e, const char *fmt, ...)
{
    if (e == cudaSuccess)
        return SPK_OK;
    (void)cudaGetLastError();            /* clear a non-sticky error; a sticky one stays */
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return spk_fail(ctx, SPK_ERR_CUDA, "%s: %s (%s)", what, cudaGetErrorString(e),
                    cudaGetErrorName(e));
}

spk_status spk_cublas(spk_context *ctx, cublasStatus_t s, const char *fmt, ...)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return SPK_OK;
    (void)cudaGetLastError();
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return spk_fail(ctx, SPK_ERR_CUDA, "%s: cuBLAS: %s (status %d)", what,
                    cublasGetStatusString(s), (int)s);
}

spk_status spk_cuda_launched(spk_context *ctx, const char *kernel)
{
    spk_status st = spk_cuda(ctx, cudaPeekAtLastError(), "launch of %s", kernel);
#if !defined(NDEBUG) || defined(SPK_CUDA_SYNC_CHECK)
    /* not while the stream is being captured into a CUDA graph (a sync there would end the
     * capture): the graph's launches are checked as they run */
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (st == SPK_OK && ctx && ctx->cuda) {
        cudaStream_t s = ((spk_cuda_state *)ctx->cuda)->stream;
        if (cudaStreamIsCapturing(s, &cap) != cudaSuccess || cap == cudaStreamCaptureStatusNone)
            st = spk_cuda(ctx, cudaStreamSynchronize(s),
                          "%s (checked by a stream sync after the launch)", kernel);
    }
#endif
    return st;
}

/* Same rule as alloc_should_fail in context.c: count, and fail the k-th when asked. */
static int cuda_alloc_should_fail(spk_context *ctx)
{
    if (!ctx)
        return 0;
    const uint64_t k = spk_alloc_tick(ctx);
    return ctx->fail_alloc_at && k == ctx->fail_alloc_at;
}

spk_status spk_cuda_malloc(spk_context *ctx, void **p, size_t bytes, const char *what)
{
    *p = NULL;
    size_t ask = bytes ? bytes : sizeof(double);
    if (cuda_alloc_should_fail(ctx))
        return spk_fail(ctx, SPK_ERR_CUDA,
                        "cudaMalloc of %zu bytes for %s: failure injected (allocation %llu)",
                        bytes, what, (unsigned long long)ctx->fail_alloc_at);
    cudaError_t e = cudaMalloc(p, ask);
    if (e == cudaSuccess)
        return SPK_OK;
    *p = NULL;
    (void)cudaGetLastError();            /* out of memory is not sticky: keep the context usable */
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        (void)cudaGetLastError();
        free_b = total_b = 0;
    }
    return spk_fail(ctx, SPK_ERR_CUDA,
                    "cudaMalloc of %zu bytes (%.3g GB) for %s: %s (%.3g GB free of %.3g GB)",
                    bytes, 1e-9 * (double)bytes, what, cudaGetErrorString(e),
                    1e-9 * (double)free_b, 1e-9 * (double)total_b);
}

spk_status spk_cuda_malloc_host(spk_context *ctx, void **p, size_t bytes, const char *what)
{
    *p = NULL;
    size_t ask = bytes ? bytes : sizeof(double);
    if (cuda_alloc_should_fail(ctx))
        return spk_fail(ctx, SPK_ERR_CUDA,
                        "cudaMallocHost of %zu bytes for %s: failure injected (allocation %llu)",
                        bytes, what, (unsigned long long)ctx->fail_alloc_at);
    cudaError_t e = cudaMallocHost(p, ask);
    if (e != cudaSuccess)
        *p = NULL;
    return spk_cuda(ctx, e, "cudaMallocHost of %zu bytes for %s", bytes, what);
}

spk_status spk_cuda_upload_new(spk_context *ctx, void **d, const void *host, size_t bytes,
                               const char *what)
{
    *d = NULL;
    if (bytes == 0)
        return SPK_OK;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if ((st = spk_cuda_malloc(ctx, d, bytes, what)))
        return st;
    st = spk_cuda(ctx, cudaMemcpyAsync(*d, host, bytes, cudaMemcpyHostToDevice, cs->stream),
                  "upload of %zu bytes for %s", bytes, what);
    if (st) {
        (void)cudaFree(*d);
        *d = NULL;
    }
    return st;
}

spk_status spk_cuda_upload_into(spk_context *ctx, void *d, const void *host, size_t bytes,
                                const char *what)
{
    if (bytes == 0)
        return SPK_OK;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if ((st = spk_cuda(ctx, cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, cs->stream),
                       "upload of %zu bytes for %s", bytes, what)))
        return st;
    return spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "upload of %zu bytes for %s", bytes,
                    what);
}

spk_status spk_cuda_upload_values(spk_context *ctx, void **d, const double *host, size_t n,
                                  int fp32, const char *what)
{
    *d = NULL;
    if (!fp32)
        return spk_cuda_upload_new(ctx, d, host, n * sizeof(double), what);
    if (n == 0)
        return SPK_OK;
    float *h = (float *)spk_malloc(ctx, n, sizeof *h);
    if (!h)
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s in fp32: out of host memory (%zu bytes)", what,
                        n * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)host[i];
    /* pageable memory: the driver has staged the copy when cudaMemcpyAsync returns */
    spk_status st = spk_cuda_upload_new(ctx, d, (const void *)h, n * sizeof *h, what);
    spk_free(h);
    return st;
}

spk_status spk_cuda_upload_values_into(spk_context *ctx, void *d, const double *host,
                                       float *stage, size_t n, int fp32, const char *what)
{
    if (!fp32)
        return spk_cuda_upload_into(ctx, d, host, n * sizeof(double), what);
    for (size_t i = 0; i < n; i++)
        stage[i] = (float)host[i];
    return spk_cuda_upload_into(ctx, d, stage, n * sizeof *stage, what);
}

spk_status spk_cuda_download_bytes(spk_context *ctx, void *host, const void *dev, size_t bytes)
{
    if (bytes == 0)
        return SPK_OK;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    /* cudaMemcpyDefault: the pointer's kind comes from unified addressing, so a caller's
     * managed or pinned array works as well as a cudaMalloc one. */
    if ((st = spk_cuda(ctx, cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDefault, cs->stream),
                       "copy of %zu bytes from device memory", bytes)))
        return st;
    return spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "copy of %zu bytes from device memory",
                    bytes);
}

extern "C" void *spk_context_stream(const spk_context *ctx)
{
    const spk_cuda_state *cs = ctx ? (const spk_cuda_state *)ctx->cuda : NULL;
    return cs ? (void *)cs->stream : NULL;
}

spk_status spk_cuda_state_of(spk_context *ctx, spk_cuda_state **cs)
{
    *cs = ctx ? (spk_cuda_state *)ctx->cuda : NULL;
    if (*cs)
        return SPK_OK;
    return spk_fail(ctx, SPK_ERR_ARG, "a CUDA operation on a context without CUDA (device %s)",
                    ctx ? spk_device_str(ctx->device) : "none");
}

spk_status spk_cuda_small_reserve(spk_context *ctx, spk_cuda_state *cs, int64_t k)
{
    if (k <= cs->small_cap)
        return SPK_OK;
    int64_t cap = cs->small_cap ? cs->small_cap : SPK_CUDA_SMALL_INIT;
    while (cap < k)
        cap *= 2;
    /* The old pinned buffer may still be the source of a queued copy: wait for it first. */
    spk_status st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "small buffer resize");
    if (st)
        return st;
    double *d = NULL, *h = NULL;
    size_t bytes = (size_t)cap * sizeof(double);
    if ((st = spk_cuda_malloc(ctx, &d, bytes, "small device vector")))
        return st;
    if ((st = spk_cuda_malloc_host(ctx, (void **)&h, bytes, "small pinned vector"))) {
        (void)cudaFree(d);
        return st;
    }
    (void)cudaFree(cs->d_small);
    (void)cudaFreeHost(cs->h_small);
    cs->d_small = d;
    cs->h_small = h;
    cs->small_cap = cap;
    return SPK_OK;
}

/* ---- probe, init, fini --------------------------------------------------------------------- */

/* An empty kernel: asking for its attributes tells whether this binary holds code the GPU can
 * run (cudaErrorNoKernelImageForDevice when it was built for another architecture). */
__global__ void spk_probe_kernel(void) {}

extern "C" int spk_has_cuda(void) { return 1; }

extern "C" int spk_cuda_probe(char *name, size_t name_len, char *why, size_t why_len)
{
    if (name && name_len)
        name[0] = '\0';
    if (why && why_len)
        why[0] = '\0';
    int count = 0, dev = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    const char *call = "cudaGetDeviceCount";
    if (e == cudaSuccess && count == 0) {
        if (why && why_len)
            snprintf(why, why_len, "no GPU found (the CUDA runtime sees no device)");
        return 0;
    }
    if (e != cudaSuccess) {            /* no driver, or a driver older than the runtime: */
        (void)cudaGetLastError();      /* on a machine without a GPU, the usual answer   */
        if (why && why_len)
            snprintf(why, why_len, "no GPU found (the CUDA runtime says: %s)",
                     cudaGetErrorString(e));
        return 0;
    }
    cudaDeviceProp prop;
    if (e == cudaSuccess) {
        call = "cudaGetDevice";
        e = cudaGetDevice(&dev);
    }
    if (e == cudaSuccess) {
        call = "cudaGetDeviceProperties";
        e = cudaGetDeviceProperties(&prop, dev);
    }
    if (e == cudaSuccess) {
        cudaFuncAttributes attr;
        call = "a test kernel";
        e = cudaFuncGetAttributes(&attr, spk_probe_kernel);
        if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) {
            (void)cudaGetLastError();
            if (why && why_len)
                snprintf(why, why_len,
                         "%s (cc %d.%d) cannot run this build's kernels: rebuild with "
                         "-DCMAKE_CUDA_ARCHITECTURES=%d%d",
                         prop.name, prop.major, prop.minor, prop.major, prop.minor);
            return 0;
        }
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (why && why_len)
            snprintf(why, why_len, "%s: %s", call, cudaGetErrorString(e));
        return 0;
    }
    if (name && name_len)
        snprintf(name, name_len, "%s (cc %d.%d, %d SMs, %.0f GiB)", prop.name, prop.major,
                 prop.minor, prop.multiProcessorCount,
                 (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    return 1;
}

extern "C" int spk_cuda_select(int local_rank, int *ordinal, char *why, size_t why_len)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (ordinal)
        *ordinal = -1;
    if (e == cudaSuccess && count > 0) {
        const int dev = (local_rank < 0 ? 0 : local_rank) % count;
        if ((e = cudaSetDevice(dev)) == cudaSuccess) {
            if (ordinal)
                *ordinal = dev;
            return 1;
        }
    }
    (void)cudaGetLastError();
    if (why && why_len)
        snprintf(why, why_len, "%s", e != cudaSuccess ? cudaGetErrorString(e)
                                                     : "the CUDA runtime sees no device");
    return 0;
}

extern "C" spk_status spk_cuda_init(spk_context *ctx)
{
    if (!ctx)
        return SPK_ERR_ARG;
    if (ctx->cuda)
        return SPK_OK;
    spk_cuda_state *cs = (spk_cuda_state *)spk_calloc(ctx, 1, sizeof *cs);
    if (!cs)
        return spk_fail(ctx, SPK_ERR_NOMEM, "CUDA context state (%zu bytes): out of host memory",
                        sizeof *cs);
    ctx->cuda = cs;                      /* from here spk_cuda_fini undoes whatever was made */

    cudaDeviceProp prop;
    spk_status st;
    if ((st = spk_cuda(ctx, cudaGetDevice(&cs->device), "cudaGetDevice")) ||
        (st = spk_cuda(ctx, cudaGetDeviceProperties(&prop, cs->device),
                       "cudaGetDeviceProperties(%d)", cs->device)))
        goto fail;
    cs->sm_count = prop.multiProcessorCount;
    cs->cc_major = prop.major;
    cs->cc_minor = prop.minor;
    cs->max_threads_sm = prop.maxThreadsPerMultiProcessor;
    cs->l2_bytes = (size_t)prop.l2CacheSize;
    cs->total_mem = prop.totalGlobalMem;
    cs->smem_optin = prop.sharedMemPerBlockOptin;

    /* A blocking stream (not cudaStreamNonBlocking): it stays ordered with the legacy default
     * stream, so a caller's plain cudaMemcpy on an spk vector sees the kernels before it. */
    if ((st = spk_cuda(ctx, cudaStreamCreate(&cs->stream), "cudaStreamCreate")))
        goto fail;
    for (int e = 0; e < 3; e++) {
        cudaEvent_t *ev = e < 2 ? &cs->fetch_ev[e] : &cs->small_ev;
        if ((st = spk_cuda(ctx, cudaEventCreateWithFlags(ev, cudaEventDisableTiming),
                           "cudaEventCreate")))
            goto fail;
    }
    if ((st = spk_cublas(ctx, cublasCreate(&cs->blas), "cublasCreate")))
        goto fail;
    /* Host pointer mode: alpha, beta and the results of dot / nrm2 are host doubles (the call
     * waits for its result). Atomics stay disallowed (the default): results are reproducible. */
    if ((st = spk_cublas(ctx, cublasSetStream(cs->blas, cs->stream), "cublasSetStream")) ||
        (st = spk_cublas(ctx, cublasSetPointerMode(cs->blas, CUBLAS_POINTER_MODE_HOST),
                         "cublasSetPointerMode")))
        goto fail;
    if ((st = spk_cuda_malloc(ctx, &cs->d_scratch, sizeof(spk_cuda_scratch),
                              "reduction scratch")) ||
        (st = spk_cuda_malloc_host(ctx, (void **)&cs->h_scratch, sizeof(spk_cuda_host_scratch),
                                   "pinned reduction results")) ||
        (st = spk_cuda_small_reserve(ctx, cs, SPK_CUDA_SMALL_INIT)))
        goto fail;
    return SPK_OK;

fail:
    spk_cuda_fini(ctx);
    return st;
}

spk_status spk_cuda_part_reserve(spk_context *ctx, spk_cuda_state *cs, int64_t count)
{
    if (count <= cs->part_cap)
        return SPK_OK;
    int64_t cap = cs->part_cap ? cs->part_cap : count;
    while (cap < count)
        cap *= 2;
    /* queued kernels may still write the old buffer */
    spk_status st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "partials buffer resize");
    double *d = NULL;
    if (st || (st = spk_cuda_malloc(ctx, &d, (size_t)cap * sizeof(double),
                                    "per-block partials (Gram-Schmidt)")))
        return st;
    (void)cudaFree(cs->d_part);
    cs->d_part = d;
    cs->part_cap = cap;
    return SPK_OK;
}

extern "C" void spk_cuda_fini(spk_context *ctx)
{
    spk_cuda_state *cs = ctx ? (spk_cuda_state *)ctx->cuda : NULL;
    if (!cs)
        return;
    if (cs->stream)
        (void)cudaStreamSynchronize(cs->stream);
    (void)cudaFree(cs->d_scratch);
    (void)cudaFree(cs->d_small);
    (void)cudaFree(cs->d_part);
    (void)cudaFreeHost(cs->h_scratch);
    (void)cudaFreeHost(cs->h_small);
    if (cs->blas)
        (void)cublasDestroy(cs->blas);
    if (cs->small_ev)
        (void)cudaEventDestroy(cs->small_ev);
    for (int e = 0; e < 2; e++)
        if (cs->fetch_ev[e])
            (void)cudaEventDestroy(cs->fetch_ev[e]);
    if (cs->stream)
        (void)cudaStreamDestroy(cs->stream);
    if (cs->capture)
        (void)cudaStreamDestroy(cs->capture);
    (void)cudaGetLastError();            /* leave no stale error for the next context */
    spk_free(cs);
    ctx->cuda = NULL;
}
