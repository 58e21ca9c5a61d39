/* kernels/vec_cuda.cu -- the vector-ops table on the GPU. dot, nrm2, axpy and scal go to
 * cuBLAS; GMRES's update w -= V h, dot2 (x'y and x'z in one read of x, PETSc's VecDotNorm2) and
 * the element-wise steps are our own kernels. The methods' fused steps live in their rooms
 * (solvers/<method>_cuda.cu), the device-resident scalars' machinery in kernels/steps_cuda.cu.
 *
 * nrm2 is sqrt of the cuBLAS dot (scaled cuBLAS nrm2 only on under/overflow), as the CPU
 * table does, so nrm2(x) == sqrt(dot(x, x)) holds on both.
 *
 * Reductions are two-stage (kernels/cuda_common.h): per-block partials in a fixed grid, then
 * one block sums them in order. No atomics on doubles, so the same call gives the same bits.
 *
 * Sizes: vectors are int64. cuBLAS's int API stops at 2^31-1 elements, so every cuBLAS call
 * uses the _64 entry points (cublasDdot_64 ..., cuBLAS 12+); our kernels index with int64 and
 * grid-stride, so no size is chunked. Every kernel and cuBLAS call runs on the context's
 * stream; download and the scalar results are the only points that wait. */
#include "cuda_common.h"

#include <float.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SPK_FUSED_OUT 2                  /* outputs of dot2 */

static spk_status vec_begin(spk_context *ctx, int64_t n, spk_cuda_state **cs, const char *op)
{
    spk_status st = spk_cuda_state_of(ctx, cs);
    if (st)
        return st;
    if (n < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: n = %lld must be >= 0", op, (long long)n);
    return SPK_OK;
}

/* ---- element-wise kernels (grid-stride, int64 index) --------------------------------------- */

#define SPK_GRID_STRIDE(i, n)                                                                  \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                 \
         i += (int64_t)gridDim.x * blockDim.x)

__global__ void yscale_kernel(int64_t n, double beta, double *__restrict__ y)
{
    SPK_GRID_STRIDE(i, n)
        y[i] = beta == 0.0 ? 0.0 : beta * y[i];
}

spk_status spk_cuda_yscale(spk_context *ctx, int64_t n, double beta, double *y)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "yscale");
    if (st || n == 0 || beta == 1.0)
        return st;
    yscale_kernel<<<spk_cuda_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(
        n, beta, y);
    return spk_cuda_launched(ctx, "yscale_kernel");
}

__global__ void round_kernel(int64_t n, const double *__restrict__ src, float *__restrict__ dst)
{
    SPK_GRID_STRIDE(i, n)
        dst[i] = (float)src[i];
}

spk_status spk_cuda_round_values(spk_context *ctx, int64_t n, const double *src, float *dst)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "round");
    if (st || n == 0)
        return st;
    round_kernel<<<spk_cuda_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(
        n, src, dst);
    return spk_cuda_launched(ctx, "round_kernel");
}

/* round_kernel and the first index of a value that leaves fp32's range into *first (the
 * value is still rounded: the caller drops or refuses the result). */
__global__ void round_check_kernel(int64_t n, const double *__restrict__ src,
                                   float *__restrict__ dst, unsigned long long *first)
{
    SPK_GRID_STRIDE(i, n) {
        const double v = src[i], a = fabs(v);
        dst[i] = (float)v;
        if (a > FLT_MAX || (a != 0.0 && a < FLT_MIN))
            atomicMin(first, (unsigned long long)i);
    }
}

spk_status spk_cuda_round_checked(spk_context *ctx, int64_t n, const double *src, float *dst,
                                  int *fits)
{
    spk_cuda_state *cs;
    *fits = 1;
    spk_status st = vec_begin(ctx, n, &cs, "round");
    if (st || n == 0)
        return st;
    if ((st = spk_cuda(ctx, cudaMemsetAsync(&cs->d_scratch->flag, 0xff, sizeof(unsigned long long),
                                            cs->stream),
                       "round: resetting the index")))
        return st;
    round_check_kernel<<<spk_cuda_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(
        n, src, dst, &cs->d_scratch->flag);
    if ((st = spk_cuda_launched(ctx, "round_check_kernel")) ||
        (st = spk_cuda(ctx, cudaMemcpyAsync(&cs->h_scratch->flag, &cs->d_scratch->flag,
                                            sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                            cs->stream),
                       "round: reading the index back")) ||
        (st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "round_check_kernel")))
        return st;
    *fits = cs->h_scratch->flag == ~0ull;
    return SPK_OK;
}

__global__ void fill_kernel(int64_t n, double a, double *__restrict__ y)
{
    SPK_GRID_STRIDE(i, n)
        y[i] = a;
}

/* y = a x + b y; b == 0 ignores the old y, as the CPU table does. */
__global__ void axpby_kernel(int64_t n, double a, const double *__restrict__ x, double b,
                             double *__restrict__ y)
{
    SPK_GRID_STRIDE(i, n)
        y[i] = b == 0.0 ? a * x[i] : a * x[i] + b * y[i];
}

/* y = d .* x; y may be x, so no __restrict__ on them. */
__global__ void pmul_kernel(int64_t n, const double *__restrict__ d, const double *x, double *y)
{
    SPK_GRID_STRIDE(i, n)
        y[i] = d[i] * x[i];
}

__global__ void pmul_axpby_kernel(int64_t n, double a, const double *__restrict__ d,
                                  const double *x, double b, double *y)
{
    SPK_GRID_STRIDE(i, n)
        y[i] = b == 0.0 ? a * (d[i] * x[i]) : a * (d[i] * x[i]) + b * y[i];
}

/* The first index whose diagonal entry cannot be inverted (the CPU table's rule: zero or
 * non-finite; also negative unless allow_negative). atomicMin on an integer is exact, so the
 * answer is the first such index whatever order the threads run in. */
__global__ void invert_check_kernel(int64_t n, const double *__restrict__ d, int allow_negative,
                                    unsigned long long *__restrict__ first_bad)
{
    SPK_GRID_STRIDE(i, n) {
        double di = d[i];
        /* 1 / d finite: neither 0 nor a subnormal whose reciprocal overflows (vec_cpu.c) */
        int ok = (allow_negative || di > 0.0) && isfinite(di) && isfinite(1.0 / di);
        if (!ok)
            atomicMin(first_bad, (unsigned long long)i);
    }
}

__global__ void invert_kernel(int64_t n, double *__restrict__ d)
{
    SPK_GRID_STRIDE(i, n)
        d[i] = 1.0 / d[i];
}

/* ---- reductions ---------------------------------------------------------------------------- */

/* Stage 1 of dot2: part[b] = sum over block b of x.*y, part[nb + b] = of x.*z. z may be x or
 * y (read-only aliasing is allowed under __restrict__). */
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
dot2_kernel(int64_t n, const double *__restrict__ x, const double *__restrict__ y,
            const double *__restrict__ z, double *__restrict__ part)
{
    double s[SPK_FUSED_OUT] = {0.0, 0.0};
    SPK_GRID_STRIDE(i, n) {
        double xi = x[i];
        s[0] += xi * y[i];
        s[1] += xi * z[i];
    }
    spk_block_sum<SPK_FUSED_OUT>(s);
    if (threadIdx.x == 0) {
        part[blockIdx.x] = s[0];
        part[gridDim.x + blockIdx.x] = s[1];
    }
}

/* Stage 2: one block sums the nb partials of each output in a fixed order. */
template <int NOUT>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
reduce_finish_kernel(int nb, const double *__restrict__ part, double *__restrict__ res)
{
    double s[NOUT];
#pragma unroll
    for (int o = 0; o < NOUT; o++)
        s[o] = 0.0;
    for (int b = threadIdx.x; b < nb; b += blockDim.x) {
#pragma unroll
        for (int o = 0; o < NOUT; o++)
            s[o] += part[(int64_t)o * nb + b];
    }
    spk_block_sum<NOUT>(s);
    if (threadIdx.x == 0) {
#pragma unroll
        for (int o = 0; o < NOUT; o++)
            res[o] = s[o];
    }
}

/* Blocks of a reduction's stage 1: one resident wave, capped by the scratch size. */
static int red_blocks(const spk_cuda_state *cs, int64_t n)
{
    int64_t want = (n + SPK_CUDA_BLOCK - 1) / SPK_CUDA_BLOCK;
    int64_t cap = (int64_t)cs->sm_count * SPK_CUDA_RED_BLOCKS_PER_SM;
    if (cap > SPK_CUDA_RED_MAX_BLOCKS)
        cap = SPK_CUDA_RED_MAX_BLOCKS;
    if (want > cap)
        want = cap;
    return (int)(want > 0 ? want : 1);
}

/* Stage 2 and the read-back of two results into host doubles (the one wait). */
static spk_status red_finish2(spk_context *ctx, spk_cuda_state *cs, int nb, const char *op,
                              double *r0, double *r1)
{
    reduce_finish_kernel<SPK_FUSED_OUT><<<1, SPK_CUDA_BLOCK, 0, cs->stream>>>(
        nb, cs->d_scratch->part, cs->d_scratch->res);
    spk_status st = spk_cuda_launched(ctx, "reduce_finish_kernel");
    if (st)
        return st;
    if ((st = spk_cuda(ctx, cudaMemcpyAsync(cs->h_scratch->res, cs->d_scratch->res,
                                            SPK_FUSED_OUT * sizeof(double),
                                            cudaMemcpyDeviceToHost, cs->stream),
                       "%s: reading the result back", op)) ||
        (st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "%s", op)))
        return st;
    *r0 = cs->h_scratch->res[0];
    *r1 = cs->h_scratch->res[1];
    return SPK_OK;
}

/* ---- the table's functions ------------------------------------------------------------------ */

static spk_status c_alloc(spk_context *ctx, int64_t n, double **v)
{
    spk_cuda_state *cs;
    *v = NULL;
    spk_status st = vec_begin(ctx, n, &cs, "alloc");
    if (st)
        return st;
    if ((uint64_t)n > SIZE_MAX / sizeof(double))
        return spk_fail(ctx, SPK_ERR_ARG, "alloc: %lld doubles overflow size_t", (long long)n);
    size_t bytes = (size_t)n * sizeof(double);
    char what[64];
    snprintf(what, sizeof what, "a vector of %lld doubles", (long long)n);
    if ((st = spk_cuda_malloc(ctx, v, bytes, what)))
        return st;
    if (bytes && (st = spk_cuda(ctx, cudaMemsetAsync(*v, 0, bytes, cs->stream),
                                "alloc: zeroing %zu bytes", bytes))) {
        (void)cudaFree(*v);
        *v = NULL;
    }
    return st;
}

static void c_free(spk_context *ctx, double *v)
{
    if (v)
        (void)cudaFree(v);           /* no status to return; a failure here is not sticky */
}

static spk_status c_upload(spk_context *ctx, int64_t n, const double *host, double *v)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "upload");
    if (st || n == 0)
        return st;
    /* Pageable source: the driver stages it before returning, so `host` may change after. */
    return spk_cuda(ctx, cudaMemcpyAsync(v, host, (size_t)n * sizeof(double),
                                         cudaMemcpyHostToDevice, cs->stream),
                    "upload of %lld doubles", (long long)n);
}

static spk_status c_download(spk_context *ctx, int64_t n, const double *v, double *host)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "download");
    if (st || n == 0)
        return st;
    if ((st = spk_cuda(ctx, cudaMemcpyAsync(host, v, (size_t)n * sizeof(double),
                                            cudaMemcpyDeviceToHost, cs->stream),
                       "download of %lld doubles", (long long)n)))
        return st;
    return spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "download of %lld doubles",
                    (long long)n);
}

static spk_status c_copy(spk_context *ctx, int64_t n, const double *x, double *y)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "copy");
    if (st || n == 0 || x == y)
        return st;
    return spk_cuda(ctx, cudaMemcpyAsync(y, x, (size_t)n * sizeof(double),
                                         cudaMemcpyDeviceToDevice, cs->stream),
                    "copy of %lld doubles", (long long)n);
}

static spk_status c_fill(spk_context *ctx, int64_t n, double a, double *y)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "fill");
    if (st || n == 0)
        return st;
    if (a == 0.0 && !signbit(a))         /* +0.0 is all zero bits: the copy engine does it */
        return spk_cuda(ctx, cudaMemsetAsync(y, 0, (size_t)n * sizeof(double), cs->stream),
                        "fill of %lld doubles", (long long)n);
    fill_kernel<<<spk_cuda_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, a, y);
    return spk_cuda_launched(ctx, "fill_kernel");
}

static spk_status c_dot(spk_context *ctx, int64_t n, const double *x, const double *y, double *r)
{
    spk_cuda_state *cs;
    *r = 0.0;
    spk_status st = vec_begin(ctx, n, &cs, "dot");
    if (st || n == 0)
        return st;
    return spk_cublas(ctx, cublasDdot_64(cs->blas, n, x, 1, y, 1, r), "cublasDdot_64(n = %lld)",
                      (long long)n);
}

/* sqrt(x'x) from the same cuBLAS dot as `dot`, so that nrm2(x) == sqrt(dot(x, x)) bit for bit,
 * as on the CPU table (a solver may compare the two). The plain sum is exact enough for
 * |x_i| in [1e-154, 1e154]; when it overflows, or is so small that it may have underflowed
 * (an exact 0 included: every square may have underflowed), cuBLAS's scaled nrm2 answers. */
static spk_status c_nrm2(spk_context *ctx, int64_t n, const double *x, double *r)
{
    spk_cuda_state *cs;
    *r = 0.0;
    spk_status st = vec_begin(ctx, n, &cs, "nrm2");
    if (st || n == 0)
        return st;
    double s = 0.0;
    if ((st = spk_cublas(ctx, cublasDdot_64(cs->blas, n, x, 1, x, 1, &s),
                         "nrm2: cublasDdot_64(n = %lld)", (long long)n)))
        return st;
    if (isfinite(s) && s > 1e-290) {
        *r = sqrt(s);
        return SPK_OK;
    }
    return spk_cublas(ctx, cublasDnrm2_64(cs->blas, n, x, 1, r), "cublasDnrm2_64(n = %lld)",
                      (long long)n);
}

static spk_status c_dot2(spk_context *ctx, int64_t n, const double *x, const double *y,
                         const double *z, double *r0, double *r1)
{
    spk_cuda_state *cs;
    *r0 = *r1 = 0.0;
    spk_status st = vec_begin(ctx, n, &cs, "dot2");
    if (st || n == 0)
        return st;
    int nb = red_blocks(cs, n);
    dot2_kernel<<<nb, SPK_CUDA_BLOCK, 0, cs->stream>>>(n, x, y, z, cs->d_scratch->part);
    if ((st = spk_cuda_launched(ctx, "dot2_kernel")))
        return st;
    return red_finish2(ctx, cs, nb, "dot2", r0, r1);
}

static spk_status c_axpy(spk_context *ctx, int64_t n, double a, const double *x, double *y)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "axpy");
    if (st || n == 0)
        return st;
    return spk_cublas(ctx, cublasDaxpy_64(cs->blas, n, &a, x, 1, y, 1),
                      "cublasDaxpy_64(n = %lld)", (long long)n);
}

static spk_status c_axpby(spk_context *ctx, int64_t n, double a, const double *x, double b,
                          double *y)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "axpby");
    if (st || n == 0)
        return st;
    axpby_kernel<<<spk_cuda_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(
        n, a, x, b, y);
    return spk_cuda_launched(ctx, "axpby_kernel");
}

static spk_status c_scal(spk_context *ctx, int64_t n, double a, double *x)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "scal");
    if (st || n == 0)
        return st;
    return spk_cublas(ctx, cublasDscal_64(cs->blas, n, &a, x, 1), "cublasDscal_64(n = %lld)",
                      (long long)n);
}

static spk_status c_pmul(spk_context *ctx, int64_t n, const double *d, const double *x,
                         double *y)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "pmul");
    if (st || n == 0)
        return st;
    pmul_kernel<<<spk_cuda_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(n, d, x,
                                                                                        y);
    return spk_cuda_launched(ctx, "pmul_kernel");
}

static spk_status c_pmul_axpby(spk_context *ctx, int64_t n, double a, const double *d,
                               const double *x, double b, double *y)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "pmul_axpby");
    if (st || n == 0)
        return st;
    pmul_axpby_kernel<<<spk_cuda_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(
        n, a, d, x, b, y);
    return spk_cuda_launched(ctx, "pmul_axpby_kernel");
}

/* The vector part of a fused step (spk_vec_ops.step): t NULL reads as 0. */
template <class X, class B, class Y>
__global__ void step_kernel(int64_t n, const double *__restrict__ t, spk_step_t<X, B, Y> s)
{
    SPK_GRID_STRIDE(i, n)
        s.put(i, t ? t[i] : 0.0);
}

template <class X, class B, class Y>
static void step_launch(const spk_cuda_state *cs, int64_t n, const double *t, const spk_step *s)
{
    step_kernel<X, B, Y><<<spk_cuda_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(
        n, t, spk_step_typed<X, B, Y>(s));
}

/* Every combination of precisions (the SpMV kernels fuse four of them, and compose the rest
 * from this): x's flag types u and w. */
static spk_status c_step(spk_context *ctx, int64_t n, const double *t, const spk_step *s)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "step");
    if (st || n == 0)
        return st;
    switch ((s->x32 ? 4 : 0) | (s->b32 ? 2 : 0) | (s->y32 ? 1 : 0)) {
    case 0: step_launch<double, double, double>(cs, n, t, s); break;
    case 1: step_launch<double, double, float>(cs, n, t, s); break;
    case 2: step_launch<double, float, double>(cs, n, t, s); break;
    case 3: step_launch<double, float, float>(cs, n, t, s); break;
    case 4: step_launch<float, double, double>(cs, n, t, s); break;
    case 5: step_launch<float, double, float>(cs, n, t, s); break;
    case 6: step_launch<float, float, double>(cs, n, t, s); break;
    default: step_launch<float, float, float>(cs, n, t, s); break;
    }
    return spk_cuda_launched(ctx, "step_kernel");
}

/* Two passes, as the CPU table: find the first bad entry; invert only when there is none, so
 * a failed check leaves d as it was. Runs once per solve setup, so the extra pass is cheap. */
static spk_status c_invert(spk_context *ctx, int64_t n, double *d, int allow_negative,
                           int64_t *bad)
{
    spk_cuda_state *cs;
    *bad = -1;
    spk_status st = vec_begin(ctx, n, &cs, "invert");
    if (st || n == 0)
        return st;
    unsigned grid = spk_cuda_grid(cs, n, SPK_CUDA_BLOCK);
    if ((st = spk_cuda(ctx, cudaMemsetAsync(&cs->d_scratch->flag, 0xff, sizeof(unsigned long long),
                                            cs->stream),
                       "invert: resetting the index")))
        return st;
    invert_check_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(n, d, allow_negative,
                                                                 &cs->d_scratch->flag);
    if ((st = spk_cuda_launched(ctx, "invert_check_kernel")) ||
        (st = spk_cuda(ctx, cudaMemcpyAsync(&cs->h_scratch->flag, &cs->d_scratch->flag,
                                            sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                            cs->stream),
                       "invert: reading the index back")) ||
        (st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "invert_check_kernel")))
        return st;
    unsigned long long first = cs->h_scratch->flag;
    if (first != ~0ull) {
        *bad = (int64_t)first;
        return SPK_OK;
    }
    invert_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(n, d);
    return spk_cuda_launched(ctx, "invert_kernel");
}

static spk_status gemv_args(spk_context *ctx, int64_t n, int k, int64_t ldv, const char *op)
{
    if (k < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: k = %d must be >= 0", op, k);
    if (n > 0 && ldv < n)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: ldv = %lld must be >= n = %lld", op,
                        (long long)ldv, (long long)n);
    return SPK_OK;
}

/* w -= V h, one row a thread, the k products summed in column order. Our own kernel, not
 * cublasDgemv: GMRES calls it once a cycle, k <= restart columns read once each, which is
 * the bandwidth a gemv needs anyway, and a one-shot GMRES then loads no cuBLAS gemv module
 * (docs/benchmarks.md, cold against warm). */
__global__ void gemv_n_sub_kernel(int64_t n, int k, const double *__restrict__ V, int64_t ldv,
                                  const double *__restrict__ h, double *__restrict__ w)
{
    SPK_GRID_STRIDE(i, n) {
        double s = 0.0;
        for (int j = 0; j < k; j++)
            s += V[(int64_t)j * ldv + i] * h[j];
        w[i] -= s;
    }
}

/* w = w - V h: h through the pinned mirror to the device (no wait), then gemv_n_sub_kernel.
 * The mirror is reused, so the previous copy out of it must be done before it is overwritten:
 * an event marks that copy. */
static spk_status c_gemv_n_sub(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                               const double *h, double *w)
{
    spk_cuda_state *cs;
    spk_status st = vec_begin(ctx, n, &cs, "gemv_n_sub");
    if (st || (st = gemv_args(ctx, n, k, ldv, "gemv_n_sub")) || k == 0 || n == 0)
        return st;
    if ((st = spk_cuda_small_reserve(ctx, cs, k)))
        return st;
    if (cs->small_ev_live &&
        (st = spk_cuda(ctx, cudaEventSynchronize(cs->small_ev), "gemv_n_sub: waiting for h")))
        return st;
    memcpy(cs->h_small, h, (size_t)k * sizeof *h);
    if ((st = spk_cuda(ctx, cudaMemcpyAsync(cs->d_small, cs->h_small, (size_t)k * sizeof(double),
                                            cudaMemcpyHostToDevice, cs->stream),
                       "gemv_n_sub: sending h")) ||
        (st = spk_cuda(ctx, cudaEventRecord(cs->small_ev, cs->stream), "gemv_n_sub: event")))
        return st;
    cs->small_ev_live = 1;
    gemv_n_sub_kernel<<<spk_cuda_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(
        n, k, V, ldv, cs->d_small, w);
    return spk_cuda_launched(ctx, "gemv_n_sub_kernel");
}

static spk_status c_sync(spk_context *ctx)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    return spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "stream synchronize");
}

static const spk_vec_ops cuda_ops = {
    .device = SPK_DEVICE_CUDA,
    .alloc = c_alloc,
    .free = c_free,
    .upload = c_upload,
    .download = c_download,
    .copy = c_copy,
    .fill = c_fill,
    .dot = c_dot,
    .nrm2 = c_nrm2,
    .dot2 = c_dot2,
    .axpy = c_axpy,
    .axpby = c_axpby,
    .scal = c_scal,
    .pmul = c_pmul,
    .pmul_axpby = c_pmul_axpby,
    .step = c_step,
    .invert = c_invert,
    .gemv_n_sub = c_gemv_n_sub,
    .sync = c_sync,
    .dot_sink = spk_cuda_dot_sink,
    .fetch = spk_cuda_fetch,
    .fetch_wait = spk_cuda_fetch_wait,
    .put = spk_cuda_put,
    .steps = spk_cuda_steps,
    .graph_free = spk_cuda_graph_free,
    .distributed = SPK_DIST_NONE,    /* a rank's composed table is made from this one */
};

extern "C" const spk_vec_ops *spk_vec_ops_cuda(void) { return &cuda_ops; }
