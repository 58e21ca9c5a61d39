/* kernels/ell_cuda.cu -- ELLPACK SpMV on the GPU, a thread per row (Bell & Garland,
 * "Implementing sparse matrix-vector multiplication on throughput-oriented processors", SC'09,
 * the ELL kernel; CUSP ell_spmv.h). The layout is column-major (slot k of row i at
 * k * nrows + i), so at every step the 32 threads of a warp read 32 consecutive columns and
 * values: fully coalesced with no index arithmetic beyond a stride. Where rows hold at most
 * SPK_ELL_PAIR_WIDTH slots a thread takes two adjacent rows and loads both slots at once.
 *
 * Cost per SpMV: 12 bytes per slot including padding (nrows * width slots), 10 when every
 * column lies within SPK_ELL_OFF16_MAX of its row and the device keeps int16 offsets from the
 * row instead of columns; a gather of x per real entry, y written once (read when beta != 0).
 * The host refuses ELL above SPK_ELL_MAX_FILL padding (formats.h), where HYB wins. The fp32
 * twin (ell32-cuda) stores the values as float: 6 bytes a slot with int16 offsets, 8 with
 * int32 columns; the same kernels, instantiated for float, sum in fp64.
 * The layout is built by spk_ell_from_csr (ell_cpu.c) and uploaded as is (the offsets are
 * the columns minus the row, nothing else), so the CPU and GPU backends can never disagree on
 * it. */
#include "cuda_common.h"

#include <atomic>
#include <stdlib.h>
#include <string.h>

/* Partial unroll of the slot loop: four independent column loads in flight per thread hide
 * the latency of the dependent x gathers; more only adds registers. */
static constexpr int SPK_ELL_UNROLL = 4;   /* a constant expression, as #pragma unroll needs */

/* Row i's sum. The value is loaded whether or not the slot is padding (padding holds 0), so
 * that the unrolled index and value loads carry no dependence on the test and all issue
 * ahead of the gathers; only the gather of x is conditional (no 0 * NaN from padding). The
 * slots are added in order k = 0, 1, ...: the CPU twin's sum, bit for bit, in either layout. */
template <class V, class Idx, bool STREAM, class X>
__device__ __forceinline__ double ell_row(int64_t i, int64_t nrows, int64_t width,
                                          const Idx *__restrict__ Aj,
                                          const V *__restrict__ Ax,
                                          const X *__restrict__ x)
{
    double s = 0.0;
#pragma unroll SPK_ELL_UNROLL
    for (int64_t k = 0; k < width; k++) {
        const int64_t slot = k * nrows + i;            /* 64-bit: nrows * width may pass 2^31 */
        int64_t c;
        const bool real = ell_real(spk_ldm<STREAM>(&Aj[slot]), i, c);   /* STREAM: evict-first */
        const double v = (double)spk_ldm<STREAM>(&Ax[slot]);   /* fp32: exact in fp64 */
        if (real)
            s += v * (double)__ldg(&x[c]);
    }
    return s;
}

/* Two rows per thread (spk_ell_dev.rows == 2): rows i and i + 1 hold adjacent slots, so one
 * 16-byte load brings both values of a slot and one 4- or 8-byte load both indices: half the
 * load instructions of two threads, and twice the gathers in flight per thread, which is what
 * rows of a few slots lack (measured on the H200: docs/benchmarks.md). Each row's slots are still
 * added in order k = 0, 1, ...: the same bits as ell_row. A vector load needs its address
 * aligned to the pair: with i even, slot k * nrows + i is even unless nrows and k are both
 * odd, and those slots are loaded one at a time (cudaMalloc aligns the arrays to 256 bytes). */
template <class T> struct ell_pair_of;
template <> struct ell_pair_of<double>  { typedef double2 type; };
template <> struct ell_pair_of<float>   { typedef float2 type; };
template <> struct ell_pair_of<int32_t> { typedef int2 type; };
template <> struct ell_pair_of<int16_t> { typedef short2 type; };

template <bool STREAM, class T>
__device__ __forceinline__ void ell_load2(const T *__restrict__ p, bool aligned, T &a, T &b)
{
    if (aligned) {
        typedef typename ell_pair_of<T>::type V;
        const V v = spk_ldm<STREAM>(reinterpret_cast<const V *>(p));
        a = v.x;
        b = v.y;
    } else {
        a = spk_ldm<STREAM>(p);
        b = spk_ldm<STREAM>(p + 1);
    }
}

template <class V, class Idx, bool STREAM, class X>
__device__ __forceinline__ void ell_pair(int64_t i, int64_t nrows, int64_t width,
                                         const Idx *__restrict__ Aj,
                                         const V *__restrict__ Ax,
                                         const X *__restrict__ x, double &s0, double &s1)
{
    s0 = 0.0;
    s1 = 0.0;
    const bool even = (nrows & 1) == 0;
#pragma unroll SPK_ELL_UNROLL
    for (int64_t k = 0; k < width; k++) {
        const int64_t slot = k * nrows + i;
        const bool aligned = even || (k & 1) == 0;      /* uniform over the warp */
        Idx j0, j1;
        V v0, v1;
        ell_load2<STREAM>(Aj + slot, aligned, j0, j1);
        ell_load2<STREAM>(Ax + slot, aligned, v0, v1);
        int64_t c;
        if (ell_real(j0, i, c))
            s0 += (double)v0 * (double)__ldg(&x[c]);
        if (ell_real(j1, i + 1, c))
            s1 += (double)v1 * (double)__ldg(&x[c]);
    }
}

/* Four rows per thread (spk_ell_dev.rows == 4, SPK_ELL_ROWS=4, fp32 values only): written
 * because a pair of fp32 rows loads 8 bytes of values a slot against the fp64 pair's 16; four
 * rows load one float4 of values and one short4 (or int4) of indices. Measured, it is no
 * faster on narrow rows (see spk_ell_dev_upload), so the rule does not choose it.
 * The same order of the sums as ell_row. Slot k * nrows + i with i a multiple of 4 is 16-byte
 * aligned when k * nrows is a multiple of 4 (uniform over the warp); else one at a time. */
template <class T> struct ell_quad_of;
template <> struct ell_quad_of<float>   { typedef float4 type; };
template <> struct ell_quad_of<int32_t> { typedef int4 type; };
template <> struct ell_quad_of<int16_t> { typedef short4 type; };

template <bool STREAM, class T>
__device__ __forceinline__ void ell_load4(const T *__restrict__ p, bool aligned, T (&a)[4])
{
    if (aligned) {
        typedef typename ell_quad_of<T>::type V;
        const V v = spk_ldm<STREAM>(reinterpret_cast<const V *>(p));
        a[0] = v.x;
        a[1] = v.y;
        a[2] = v.z;
        a[3] = v.w;
    } else {
#pragma unroll
        for (int q = 0; q < 4; q++)
            a[q] = spk_ldm<STREAM>(p + q);
    }
}

template <class V, class Idx, bool STREAM, class X>
__device__ __forceinline__ void ell_quad(int64_t i, int64_t nrows, int64_t width,
                                         const Idx *__restrict__ Aj,
                                         const V *__restrict__ Ax,
                                         const X *__restrict__ x, double (&s)[4])
{
#pragma unroll
    for (int q = 0; q < 4; q++)
        s[q] = 0.0;
#pragma unroll SPK_ELL_UNROLL
    for (int64_t k = 0; k < width; k++) {
        const int64_t slot = k * nrows + i;
        const bool aligned = ((k * nrows) & 3) == 0;   /* uniform over the warp */
        Idx j[4];
        V v[4];
        ell_load4<STREAM>(Aj + slot, aligned, j);
        ell_load4<STREAM>(Ax + slot, aligned, v);
#pragma unroll
        for (int q = 0; q < 4; q++) {
            int64_t c;
            if (ell_real(j[q], i + q, c))
                s[q] += (double)v[q] * (double)__ldg(&x[c]);
        }
    }
}

/* Rows i .. i + R - 1 (R = 1 or 2; with 2 and an odd row count the last thread takes one
 * row): their sums in s0 (and s1), their count returned. */
template <class V, class Idx, bool STREAM, int R, class X>
__device__ __forceinline__ int ell_group(int64_t i, int64_t nrows, int64_t width,
                                         const Idx *__restrict__ Aj,
                                         const V *__restrict__ Ax,
                                         const X *__restrict__ x, double &s0,
                                         double &s1)
{
    if (R == 2 && i + 1 < nrows) {
        ell_pair<V, Idx, STREAM>(i, nrows, width, Aj, Ax, x, s0, s1);
        return 2;
    }
    s0 = ell_row<V, Idx, STREAM>(i, nrows, width, Aj, Ax, x);
    return 1;
}

/* The pair written out here rather than through ell_group (which stores y[i + 1] first):
 * through it the SpMV on poisson3d:150 takes 82.6-82.8 us against this form's 79.2-79.5 (H200,
 * three interleaved rounds; docs/benchmarks.md). */
template <class V, class Idx, bool STREAM, int R>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
ell_kernel(int64_t nrows, int64_t width, const Idx *__restrict__ Aj,
           const V *__restrict__ Ax, const double *__restrict__ x, double alpha, double beta,
           double *__restrict__ y)
{
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < (nrows + R - 1) / R;
         g += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = g * R;
        if constexpr (R == 4) {
            if (i + 3 < nrows) {
                double s[4];
                ell_quad<V, Idx, STREAM>(i, nrows, width, Aj, Ax, x, s);
#pragma unroll
                for (int q = 0; q < 4; q++)
                    y[i + q] = spk_spmv_out(alpha, s[q], beta, y, i + q);
            } else {                                   /* the last rows, one at a time */
                for (int64_t r = i; r < nrows; r++)
                    y[r] = spk_spmv_out(alpha, ell_row<V, Idx, STREAM>(r, nrows, width, Aj, Ax, x),
                                        beta, y, r);
            }
        } else if (R == 2 && i + 1 < nrows) {
            double s0, s1;
            ell_pair<V, Idx, STREAM>(i, nrows, width, Aj, Ax, x, s0, s1);
            y[i] = spk_spmv_out(alpha, s0, beta, y, i);
            y[i + 1] = spk_spmv_out(alpha, s1, beta, y, i + 1);
        } else {
            y[i] = spk_spmv_out(alpha, ell_row<V, Idx, STREAM>(i, nrows, width, Aj, Ax, x), beta,
                                y, i);
        }
    }
}

/* y = A x and sink->out = x'y in the same pass (CG's q = A p, p'q): x_i is a coalesced load
 * beside the row's first slot, so the dot costs no pass of its own. X is the vectors' type:
 * double, or float for spk_cg32 (each row's fp64 sum rounded once into y, the dot over the
 * rounded y; for double both casts are the identity). */
template <class V, class Idx, int R, class X>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
ell_dot_kernel(int64_t nrows, int64_t width, const Idx *__restrict__ Aj,
               const V *__restrict__ Ax, const X *__restrict__ x,
               X *__restrict__ y, spk_dot_sink sink)
{
    if (sink.skip && *sink.skip)
        return;                                        /* uniform over the grid */
    double d[1] = {0.0};
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < (nrows + R - 1) / R;
         g += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = g * R;
        if constexpr (R == 4) {
            if (i + 3 < nrows) {
                double s[4];
                ell_quad<V, Idx, false>(i, nrows, width, Aj, Ax, x, s);
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    const X yq = (X)s[q];
                    y[i + q] = yq;
                    d[0] += (double)x[i + q] * (double)yq;
                }
            } else {
                for (int64_t r = i; r < nrows; r++) {
                    const X y0 = (X)ell_row<V, Idx, false>(r, nrows, width, Aj, Ax, x);
                    y[r] = y0;
                    d[0] += (double)x[r] * (double)y0;
                }
            }
            continue;
        }
        double s0, s1;
        const int m = ell_group<V, Idx, false, R>(i, nrows, width, Aj, Ax, x, s0, s1);
        const X y0 = (X)s0;
        y[i] = y0;
        d[0] += (double)x[i] * (double)y0;
        if (m == 2) {
            const X y1 = (X)s1;
            y[i + 1] = y1;
            d[0] += (double)x[i + 1] * (double)y1;
        }
    }
    if (spk_last_block_sum<1>(d, sink.part, sink.count) && threadIdx.x == 0)
        *sink.out = d[0];
}

/* Blocks of one resident wave of ell_dot_kernel<V, Idx, R>, from the occupancy API once per
 * process and instance (one GPU model assumed). */
template <class V, class Idx, int R, class X>
static int64_t ell_dot_wave(const spk_cuda_state *cs)
{
    static std::atomic<int> occupancy{0};
    int per_sm = occupancy.load(std::memory_order_relaxed);
    if (per_sm <= 0) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ell_dot_kernel<V, Idx, R, X>,
                                                          SPK_CUDA_BLOCK, 0) != cudaSuccess ||
            per_sm <= 0) {
            (void)cudaGetLastError();              /* not for the launch check to report */
            per_sm = 1;
        }
        occupancy.store(per_sm, std::memory_order_relaxed);
    }
    return (int64_t)cs->sm_count * per_sm;
}

/* The fused kernel on one resident wave, sized by the occupancy API. */
template <class V, class Idx, int R, class X>
static void ell_dot_launch(const spk_cuda_state *cs, const spk_ell_dev *A, const Idx *Aj,
                           const V *Av, const X *x, X *y, const spk_dot_sink *sink)
{
    /* One resident wave, sized by the occupancy API (the kernel has no register cap: capped
     * at 32 it ran elasticity3d:40's CG at 85 us per iteration, uncapped at 72). Measured on
     * poisson3d:150 (H200): one wave of a capped kernel 105.7 us (ncu), the SpMV's own grid of
     * 4224 blocks slower again inside CG (192.7 against ~175 us per iteration): the last block
     * then adds 4224 partials; the same grid with a two-level sum (one load per thread at each
     * level) still 120.5 us against 112.5 for the wave, capped or not. nrows == 0 still runs
     * one block, so that the sum (0) lands in *sink->out. */
    const int64_t want = ((A->nrows + R - 1) / R + SPK_CUDA_BLOCK - 1) / SPK_CUDA_BLOCK;
    int64_t cap = ell_dot_wave<V, Idx, R, X>(cs);
    cap = cap < SPK_MAX_BLOCKS ? cap : SPK_MAX_BLOCKS;
    const unsigned grid = (unsigned)(want < 1 ? 1 : want < cap ? want : cap);
    ell_dot_kernel<V, Idx, R, X><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(A->nrows, A->width,
                                                                          Aj, Av, x, y, *sink);
}

/* The index layout and the rows per thread of A, for values of type V and vectors of X. */
template <class V, class X>
static void ell_dot_dispatch(const spk_cuda_state *cs, const spk_ell_dev *A, const V *Av,
                             const X *x, X *y, const spk_dot_sink *sink)
{
    if constexpr (sizeof(V) == 4) {                    /* four rows a thread: fp32 only */
        if (A->rows == 4) {
            if (A->off)
                ell_dot_launch<V, int16_t, 4>(cs, A, A->off, Av, x, y, sink);
            else
                ell_dot_launch<V, int32_t, 4>(cs, A, A->col, Av, x, y, sink);
            return;
        }
    }
    if (A->off && A->rows == 2)
        ell_dot_launch<V, int16_t, 2>(cs, A, A->off, Av, x, y, sink);
    else if (A->off)
        ell_dot_launch<V, int16_t, 1>(cs, A, A->off, Av, x, y, sink);
    else if (A->rows == 2)
        ell_dot_launch<V, int32_t, 2>(cs, A, A->col, Av, x, y, sink);
    else
        ell_dot_launch<V, int32_t, 1>(cs, A, A->col, Av, x, y, sink);
}

spk_status spk_ell_dev_spmv_dot(spk_context *ctx, const spk_ell_dev *A, const double *x,
                                double *y, const spk_dot_sink *sink)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (A->val32)
        ell_dot_dispatch(cs, A, A->val32, x, y, sink);
    else
        ell_dot_dispatch(cs, A, A->val, x, y, sink);
    return spk_cuda_launched(ctx, "ell_dot_kernel");
}

spk_status spk_ell_dev_spmv_dot32(spk_context *ctx, const spk_ell_dev *A, const float *x,
                                  float *y, const spk_dot_sink *sink)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (!A->val32 && A->nrows * A->width > 0)        /* an empty layout holds no values */
        return spk_fail(ctx, SPK_ERR_ARG, "ELL with fp32 vectors: the layout holds fp64 values");
    /* Four rows a thread on rows of at most SPK_ELL_PAIR_WIDTH slots, where the rule gives the
     * layout two: with fp32 vectors a row moves 4 + 4 bytes of x and y, and the quad's 16-byte
     * loads of values and indices carry the rest. Measured on the H200 (bench_spmv --fp32,
     * SPK_ELL_ROWS = 2 / 4): poisson3d:150's q = A p, p'q 65.2 / 58.8 us
     * (docs/benchmarks.md). The knob SPK_ELL_ROWS still forces its count. */
    spk_ell_dev quad = *A;
    if (!ctx->tune.ell_rows && A->width <= SPK_ELL_PAIR_WIDTH)
        quad.rows = 4;
    ell_dot_dispatch(cs, &quad, A->val32, x, y, sink);
    return spk_cuda_launched(ctx, "ell_dot_kernel");
}

template <class V, class Idx, int R>
static void ell_launch(const spk_cuda_state *cs, const spk_ell_dev *A, const Idx *Aj,
                       const V *Av, double alpha, const double *x, double beta, double *y)
{
    const unsigned grid = spk_cuda_grid(cs, (A->nrows + R - 1) / R, SPK_CUDA_BLOCK);
    if (A->stream)
        ell_kernel<V, Idx, true, R><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->width, Aj, Av, x, alpha, beta, y);
    else
        ell_kernel<V, Idx, false, R><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->width, Aj, Av, x, alpha, beta, y);
}

template <class V>
static void ell_dispatch(const spk_cuda_state *cs, const spk_ell_dev *A, const V *Av,
                         double alpha, const double *x, double beta, double *y)
{
    if constexpr (sizeof(V) == 4) {                    /* four rows a thread: fp32 only */
        if (A->rows == 4) {
            if (A->off)
                ell_launch<V, int16_t, 4>(cs, A, A->off, Av, alpha, x, beta, y);
            else
                ell_launch<V, int32_t, 4>(cs, A, A->col, Av, alpha, x, beta, y);
            return;
        }
    }
    if (A->off && A->rows == 2)
        ell_launch<V, int16_t, 2>(cs, A, A->off, Av, alpha, x, beta, y);
    else if (A->off)
        ell_launch<V, int16_t, 1>(cs, A, A->off, Av, alpha, x, beta, y);
    else if (A->rows == 2)
        ell_launch<V, int32_t, 2>(cs, A, A->col, Av, alpha, x, beta, y);
    else
        ell_launch<V, int32_t, 1>(cs, A, A->col, Av, alpha, x, beta, y);
}

spk_status spk_ell_dev_spmv(spk_context *ctx, const spk_ell_dev *A, double alpha,
                            const double *x, double beta, double *y)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || A->nrows == 0)                           /* never launch a zero-size grid */
        return st;
    if (A->val32)
        ell_dispatch(cs, A, A->val32, alpha, x, beta, y);
    else
        ell_dispatch(cs, A, A->val, alpha, x, beta, y);
    return spk_cuda_launched(ctx, "ell_kernel");
}

/* The fused step of AMG's V-cycle (spk_step): each row's sum as ell_kernel forms it, then
 * y_i from it in the same thread, vectors of the step's types. */
template <class V, class Idx, bool STREAM, int R, class X, class S>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
ell_step_kernel(int64_t nrows, int64_t width, const Idx *__restrict__ Aj,
                const V *__restrict__ Ax, const X *__restrict__ x, S s)
{
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < (nrows + R - 1) / R;
         g += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = g * R;
        if constexpr (R == 4) {
            if (i + 3 < nrows) {
                double q4[4];
                ell_quad<V, Idx, STREAM>(i, nrows, width, Aj, Ax, x, q4);
#pragma unroll
                for (int q = 0; q < 4; q++)
                    s.put(i + q, q4[q]);
            } else {
                for (int64_t r = i; r < nrows; r++)
                    s.put(r, ell_row<V, Idx, STREAM>(r, nrows, width, Aj, Ax, x));
            }
        } else {
            double s0, s1;
            if (ell_group<V, Idx, STREAM, R>(i, nrows, width, Aj, Ax, x, s0, s1) == 2) {
                s.put(i, s0);
                s.put(i + 1, s1);
            } else {
                s.put(i, s0);
            }
        }
    }
}

template <class V, class Idx, int R, class X, class S>
static void ell_step_launch(const spk_cuda_state *cs, const spk_ell_dev *A, const Idx *Aj,
                            const V *Av, const X *x, const S &s)
{
    const unsigned grid = spk_cuda_grid(cs, (A->nrows + R - 1) / R, SPK_CUDA_BLOCK);
    if (A->stream)
        ell_step_kernel<V, Idx, true, R><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->width, Aj, Av, x, s);
    else
        ell_step_kernel<V, Idx, false, R><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->width, Aj, Av, x, s);
}

template <class V, class X, class S>
static void ell_step_dispatch(const spk_cuda_state *cs, const spk_ell_dev *A, const V *Av,
                              const X *x, const S &s)
{
    if constexpr (sizeof(V) == 4) {
        if (A->rows == 4) {
            if (A->off)
                ell_step_launch<V, int16_t, 4>(cs, A, A->off, Av, x, s);
            else
                ell_step_launch<V, int32_t, 4>(cs, A, A->col, Av, x, s);
            return;
        }
    }
    if (A->off && A->rows == 2)
        ell_step_launch<V, int16_t, 2>(cs, A, A->off, Av, x, s);
    else if (A->off)
        ell_step_launch<V, int16_t, 1>(cs, A, A->off, Av, x, s);
    else if (A->rows == 2)
        ell_step_launch<V, int32_t, 2>(cs, A, A->col, Av, x, s);
    else
        ell_step_launch<V, int32_t, 1>(cs, A, A->col, Av, x, s);
}

spk_status spk_ell_dev_spmv_step(spk_context *ctx, const spk_ell_dev *A, const spk_step *s)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || A->nrows == 0)
        return st;
    const bool fused = spk_step_dispatch(s, [&](const auto &typed, const auto *x) {
        if (A->val32)
            ell_step_dispatch(cs, A, A->val32, x, typed);
        else
            ell_step_dispatch(cs, A, A->val, x, typed);
    });
    return fused ? spk_cuda_launched(ctx, "ell_step_kernel") : SPK_ERR_UNSUPPORTED;
}

/* Rows per thread: two where the rows hold at most SPK_ELL_PAIR_WIDTH slots, one otherwise
 * (measured: docs/benchmarks.md); the knob SPK_ELL_ROWS=1 or 2 forces either, for A/B runs and
 * tests. */
static int ell_rows_per_thread(const spk_context *ctx, const spk_ell_fmt *h)
{
    if (ctx->tune.ell_rows)
        return ctx->tune.ell_rows;
    return h->width <= SPK_ELL_PAIR_WIDTH ? 2 : 1;
}

/* The compact index layout: every real slot's column within SPK_ELL_OFF16_MAX of its row
 * (stencils and FEM meshes numbered by grid: poisson3d:150's farthest neighbour is 22,500
 * rows away), and not the knob SPK_ELL_INDEX=32. Then the offsets are stored as int16 and an
 * ELL slot costs 10 bytes instead of 12. */
static bool ell_offsets_fit(const spk_context *ctx, const spk_ell_fmt *h)
{
    if (ctx->tune.ell_index32)
        return false;
    for (int64_t k = 0; k < h->width; k++)
        for (int64_t i = 0; i < h->nrows; i++) {
            const int32_t c = h->col[k * h->nrows + i];
            if (c != SPK_ELL_PAD && (c - i > SPK_ELL_OFF16_MAX || i - c > SPK_ELL_OFF16_MAX))
                return false;
        }
    return true;
}

spk_status spk_ell_dev_upload(spk_context *ctx, const spk_ell_fmt *h, int fp32, spk_ell_dev *d)
{
    d->nrows = h->nrows;
    d->ncols = h->ncols;
    d->width = h->width;
    d->nnz = h->nnz;
    d->stream = 0;
    d->rows = ell_rows_per_thread(ctx, h);
    /* fp32 values: two rows a thread at every width. Measured on the H200 (bench_spmv --fp32,
     * SPK_ELL_ROWS = the rule / 2 / 4, us): poisson3d:150 (width 7) 62.2 / 61.1 / 62.0,
     * poisson3d27:100 (27) 57.2 / 52.7 / 66.8, lame3d:48 (81) 66.1 / 60.4 / 78.4,
     * elasticity3d:60 (81) 102.6 / 115.9 / 96.1 (docs/benchmarks.md). Four rows (ell_quad)
     * gained nothing on the narrow rows it was written for; it stays behind the knob. */
    if (fp32 && !ctx->tune.ell_rows)
        d->rows = 2;
    if (!fp32 && d->rows == 4)                         /* the knob's 4 is for fp32 values */
        d->rows = 2;
    d->col = NULL;
    d->off = NULL;
    d->val = NULL;
    d->val32 = NULL;
    const size_t slots = (size_t)h->nrows * (size_t)h->width;
    spk_status st;
    if (slots > 0 && ell_offsets_fit(ctx, h)) {
        int16_t *off = (int16_t *)spk_malloc(ctx, slots, sizeof *off);
        if (!off)
            return spk_fail(ctx, SPK_ERR_NOMEM, "ELL column offsets: out of host memory "
                            "(%zu bytes)", slots * sizeof *off);
        for (int64_t k = 0; k < h->width; k++)
            for (int64_t i = 0; i < h->nrows; i++) {
                const int64_t slot = k * h->nrows + i;
                off[slot] = h->col[slot] == SPK_ELL_PAD ? (int16_t)SPK_ELL_PAD16
                                                        : (int16_t)(h->col[slot] - i);
            }
        st = spk_cuda_upload_new(ctx, &d->off, off, slots * sizeof *off, "ELL column offsets");
        spk_free(off);                                 /* staged by the driver already */
    } else {
        st = spk_cuda_upload_new(ctx, &d->col, h->col, slots * sizeof(int32_t),
                                 "ELL column indices");
    }
    void *v = NULL;
    if (!st)
        st = spk_cuda_upload_values(ctx, &v, h->val, slots, fp32, "ELL values");
    if (fp32)
        d->val32 = (float *)v;
    else
        d->val = (double *)v;
    if (st)
        spk_ell_dev_free(d);
    return st;
}

void spk_ell_dev_free(spk_ell_dev *d)
{
    if (!d)
        return;
    (void)cudaFree(d->col);
    (void)cudaFree(d->off);
    (void)cudaFree(d->val);
    (void)cudaFree(d->val32);
    d->col = NULL;
    d->off = NULL;
    d->val = NULL;
    d->val32 = NULL;
}

/* ---- value refill on the device -------------------------------------------------------------- */

/* One thread per slot s = k * nrows + i: the slot takes entry k of row i of the canonical CSR
 * (Ap, Av), or 0 past the row's end (spk_ell_fill_values' rule, so a row longer than the
 * width keeps its first `width` entries: HYB's ELL part). Consecutive threads store
 * consecutive slots; the reads of Av are the gather. */
template <class V>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
ell_refill_kernel(int64_t nrows, int64_t slots, const int64_t *__restrict__ Ap,
                  const double *__restrict__ Av, V *__restrict__ val)
{
    for (int64_t s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; s < slots;
         s += (int64_t)gridDim.x * blockDim.x) {
        const int64_t k = s / nrows, i = s - k * nrows;
        const int64_t p = __ldg(&Ap[i]) + k;
        val[s] = (V)(p < __ldg(&Ap[i + 1]) ? __ldg(&Av[p]) : 0.0);
    }
}

spk_status spk_ell_dev_refill(spk_context *ctx, spk_ell_dev *E, const int64_t *d_rowptr,
                              const double *d_val)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    const int64_t slots = E->nrows * E->width;         /* <= 3 nnz (fill guard) or HYB's part */
    if (st || slots == 0)                              /* never launch a zero-size grid */
        return st;
    const unsigned grid = spk_cuda_grid(cs, slots, SPK_CUDA_BLOCK);
    if (E->val32)
        ell_refill_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(E->nrows, slots, d_rowptr,
                                                                   d_val, E->val32);
    else
        ell_refill_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(E->nrows, slots, d_rowptr,
                                                                   d_val, E->val);
    return spk_cuda_launched(ctx, "ell_refill_kernel");
}

/* ---- the backend row --------------------------------------------------------------------- */

/* The device layout and the host mirror of its values, kept from setup (the host layout's
 * value array, not freed) so that a value update refills it and uploads it, allocating
 * nothing: 8 bytes per slot of host memory for an update path without re-analysis, and 4
 * more for the fp32 twin's rounded copy. */
typedef struct ell_cuda {
    spk_ell_dev dev;
    double     *h_val;                  /* nrows * width, the layout of dev.val on the host */
    float      *h_val32;                /* the fp32 twin: the rounded values' staging       */
    int64_t    *d_rowptr;               /* nrows + 1: made at the first update on the device */
    int         borrowed;               /* a twin of setup_from: dev's indices and h_val are
                                         * its row's; only dev.val32, h_val32, d_rowptr its own */
} ell_cuda;

static void ell_destroy(void *state)
{
    ell_cuda *d = (ell_cuda *)state;
    if (!d)
        return;
    if (d->borrowed) {
        (void)cudaFree(d->dev.val32);
        spk_free(d->h_val32);
        (void)cudaFree(d->d_rowptr);
        spk_free(d);
        return;
    }
    spk_ell_dev_free(&d->dev);
    spk_free(d->h_val);
    spk_free(d->h_val32);
    (void)cudaFree(d->d_rowptr);
    spk_free(d);
}

/* The layout with fp64 values (ell-cuda) or fp32 ones (ell32-cuda). */
static spk_status ell_setup_as(spk_context *ctx, const spk_csr *A, int fp32, void **state)
{
    *state = NULL;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    spk_ell_fmt h;
    memset(&h, 0, sizeof h);
    if ((st = spk_ell_from_csr(ctx, A, -1, 0, &h)))     /* the longest row; fill guard on */
        return st;
    ell_cuda *d = (ell_cuda *)spk_calloc(ctx, 1, sizeof *d);
    const size_t slots = (size_t)h.nrows * (size_t)h.width;
    if (!d || (fp32 && !(d->h_val32 = (float *)spk_malloc(ctx, slots > 0 ? slots : 1,
                                                            sizeof(float))))) {
        spk_ell_fmt_free(&h);
        ell_destroy(d);
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s state: out of host memory",
                        fp32 ? "ell32-cuda" : "ell-cuda");
    }
    st = spk_ell_dev_upload(ctx, &h, fp32, &d->dev);
    if (!st)    /* the copies are staged already; the sync surfaces a failed one here */
        st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "ell-cuda upload");
    d->h_val = h.val;                                  /* kept for value updates */
    h.val = NULL;
    spk_ell_fmt_free(&h);
    if (st) {
        ell_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status ell_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return ell_setup_as(ctx, A, 0, state);
}

static spk_status ell32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return ell_setup_as(ctx, A, 1, state);
}

/* ell32-cuda from an ell-cuda state on the device (spk_spmv_backend.setup_from). */
static spk_status ell32_setup_from(spk_context *ctx, const void *row, void **state, int *fits)
{
    *state = NULL;
    *fits = 0;
    const ell_cuda *r = (const ell_cuda *)row;
    if (!r || r->borrowed || r->dev.val32)
        return spk_fail(ctx, SPK_ERR_ARG, "ell32-cuda: setup_from needs an ell-cuda state");
    const size_t slots = (size_t)r->dev.nrows * (size_t)r->dev.width;
    ell_cuda *d = (ell_cuda *)spk_calloc(ctx, 1, sizeof *d);
    if (!d || !(d->h_val32 = (float *)spk_malloc(ctx, slots > 0 ? slots : 1, sizeof(float)))) {
        spk_free(d);
        return spk_fail(ctx, SPK_ERR_NOMEM, "ell32-cuda state: out of host memory");
    }
    d->dev = r->dev;
    d->dev.val = NULL;
    d->dev.val32 = NULL;
    d->dev.rows = ctx->tune.ell_rows ? ctx->tune.ell_rows : 2;   /* spk_ell_dev_upload's rule */
    d->h_val = r->h_val;
    d->borrowed = 1;
    spk_status st = spk_cuda_malloc(ctx, &d->dev.val32, (slots > 0 ? slots : 1) * sizeof(float),
                                    "ELL values in fp32");
    if (!st)
        st = spk_cuda_round_checked(ctx, (int64_t)slots, r->dev.val, d->dev.val32, fits);
    if (st) {
        ell_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status ell32_refill(spk_context *ctx, void *state, const void *row, int *fits)
{
    ell_cuda *d = (ell_cuda *)state;
    const ell_cuda *r = (const ell_cuda *)row;
    *fits = 0;
    if (!d || !d->borrowed || !r || r->borrowed || r->dev.val32 || r->dev.col != d->dev.col ||
        r->dev.off != d->dev.off || r->dev.nrows != d->dev.nrows ||
        r->dev.width != d->dev.width)
        return spk_fail(ctx, SPK_ERR_ARG, "ell32-cuda refill: the row's layout is not this one's");
    return spk_cuda_round_checked(ctx, d->dev.nrows * d->dev.width, r->dev.val, d->dev.val32,
                                  fits);
}

/* spmv, spmv_dot and the updates serve both rows: the state says which values it holds. */
static spk_status ell_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    return spk_ell_dev_spmv(ctx, &((const ell_cuda *)state)->dev, alpha, x, beta, y);
}

static spk_status ell_spmv_step(spk_context *ctx, const void *state, const spk_step *s)
{
    return spk_ell_dev_spmv_step(ctx, &((const ell_cuda *)state)->dev, s);
}

static spk_status ell_spmv_dot(spk_context *ctx, const void *state, const double *x, double *y,
                               const spk_dot_sink *sink)
{
    return spk_ell_dev_spmv_dot(ctx, &((const ell_cuda *)state)->dev, x, y, sink);
}

static spk_status ell_spmv_dot32(spk_context *ctx, const void *state, const float *x, float *y,
                                 const spk_dot_sink *sink)
{
    return spk_ell_dev_spmv_dot32(ctx, &((const ell_cuda *)state)->dev, x, y, sink);
}

static spk_status ell_update(spk_context *ctx, void *state, const spk_csr *A)
{
    ell_cuda *d = (ell_cuda *)state;
    if (!d || d->dev.nrows != A->nrows || d->dev.nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "ell-cuda update: the layout does not match the matrix");
    spk_ell_fill_values(A, d->dev.width, d->h_val);
    const size_t slots = (size_t)d->dev.nrows * (size_t)d->dev.width;
    return d->dev.val32 ? spk_cuda_upload_values_into(ctx, d->dev.val32, d->h_val, d->h_val32,
                                                      slots, 1, "ELL values (update)")
                        : spk_cuda_upload_values_into(ctx, d->dev.val, d->h_val, NULL, slots, 0,
                                                      "ELL values (update)");
}

/* The update on the device: the slots refilled from the canonical values by a kernel, which
 * needs A's row offsets on the device (uploaded at the first call). */
static spk_status ell_update_device(spk_context *ctx, void *state, const spk_csr *A,
                                    const double *d_val)
{
    ell_cuda *d = (ell_cuda *)state;
    if (!d || d->dev.nrows != A->nrows || d->dev.nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "ell-cuda update: the layout does not match the matrix");
    spk_status st;
    if (!d->d_rowptr &&
        (st = spk_cuda_upload_wait(ctx, &d->d_rowptr, A->rowptr,
                                   ((size_t)A->nrows + 1) * sizeof(int64_t),
                                   "ELL refill row offsets")))
        return st;
    return d_val ? spk_ell_dev_refill(ctx, &d->dev, d->d_rowptr, d_val) : SPK_OK;
}

/* A's CSR from the layout (spk_spmv_backend.csr_device): a row's entries are its slots
 * before the first padding, in the CSR's order. */
__global__ void ell_csr_kernel(int64_t n, int64_t width, const int32_t *__restrict__ col,
                               const int16_t *__restrict__ off, const double *__restrict__ val,
                               int fill, int32_t *__restrict__ rp, int32_t *__restrict__ ci,
                               double *__restrict__ v)
{
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < n;
         r += (int64_t)gridDim.x * blockDim.x) {
        int32_t p = fill ? rp[r] : 0;
        for (int64_t s = 0; s < width; s++) {
            const int64_t q = s * n + r;
            const int64_t j = col ? col[q] : (off[q] == SPK_ELL_PAD16 ? -1 : r + off[q]);
            if (col ? j == SPK_ELL_PAD : j < 0)
                break;
            if (fill) {
                ci[p] = (int32_t)j;
                v[p] = val[q];
            }
            p++;
        }
        if (!fill)
            rp[r] = p;
    }
}

static spk_status ell_csr_device(spk_context *ctx, const void *state, int fill, int32_t *rp,
                                 int32_t *col, double *val)
{
    const spk_ell_dev *E = &((const ell_cuda *)state)->dev;
    if (!E->val)
        return SPK_ERR_UNSUPPORTED;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || E->nrows == 0)
        return st;
    ell_csr_kernel<<<spk_cuda_grid(cs, E->nrows, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0,
                     cs->stream>>>(E->nrows, E->width, E->col, E->off, E->val, fill, rp, col,
                                   val);
    return spk_cuda_launched(ctx, "ell_csr_kernel");
}

extern "C" int spk_ell_cuda_state_rows(const void *state)
{
    return ((const ell_cuda *)state)->dev.rows;
}

extern "C" const spk_spmv_backend spk_backend_ell32_cuda = {
    .name = "ell32-cuda",
    .format = SPK_FMT_ELL,
    .device = SPK_DEVICE_CUDA,
    .setup = ell32_setup,
    .spmv = ell_spmv,
    .destroy = ell_destroy,
    .update = ell_update,
    .spmv_dot = ell_spmv_dot,
    .update_device = ell_update_device,
    .fp32 = NULL,
    .setup_from = ell32_setup_from,
    .refill = ell32_refill,
    .spmv_dot32 = ell_spmv_dot32,
    .spmv_step = ell_spmv_step,
    .csr_device = NULL,
};

extern "C" const spk_spmv_backend spk_backend_ell_cuda = {
    .name = "ell-cuda",
    .format = SPK_FMT_ELL,
    .device = SPK_DEVICE_CUDA,
    .setup = ell_setup,
    .spmv = ell_spmv,
    .destroy = ell_destroy,
    .update = ell_update,
    .spmv_dot = ell_spmv_dot,
    .update_device = ell_update_device,
    .fp32 = &spk_backend_ell32_cuda,
    .setup_from = NULL,              /* a twin's entries */
    .refill = NULL,
    .spmv_dot32 = NULL,
    .spmv_step = ell_spmv_step,
    .csr_device = ell_csr_device,
};
