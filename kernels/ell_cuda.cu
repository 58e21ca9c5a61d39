/* kernels/ell_cuda.cu -- ELLPACK SpMV on the GPU, one thread per row (Bell & Garland,
 * "Implementing sparse matrix-vector multiplication on throughput-oriented processors", SC'09,
 * the ELL kernel; CUSP ell_spmv.h). The layout is column-major (slot k of row i at
 * k * nrows + i), so at every step the 32 threads of a warp read 32 consecutive columns and
 * values: fully coalesced with no index arithmetic beyond a stride.
 *
 * Cost per SpMV: 12 bytes per slot including padding (nrows * width slots), 10 when every
 * column lies within SPK_ELL_OFF16_MAX of its row and the device keeps int16 offsets from the
 * row instead of columns; a gather of x per real entry, y written once (read when beta != 0).
 * The host refuses ELL above SPK_ELL_MAX_FILL padding (formats.h), where HYB wins.
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

/* Column of slot `slot` in row i: the stored index (int32) or i plus the stored offset
 * (int16, the compact layout of spk_ell_dev). Padding: SPK_ELL_PAD, or SPK_ELL_PAD16.
 * STREAM: the load is evict-first (spk_ldm). */
template <bool STREAM>
__device__ __forceinline__ bool ell_col(const int32_t *__restrict__ Aj, int64_t slot, int64_t,
                                        int64_t &c)
{
    const int32_t j = spk_ldm<STREAM>(&Aj[slot]);
    c = j;
    return j != SPK_ELL_PAD;
}
template <bool STREAM>
__device__ __forceinline__ bool ell_col(const int16_t *__restrict__ Ao, int64_t slot, int64_t i,
                                        int64_t &c)
{
    const int16_t o = spk_ldm<STREAM>(&Ao[slot]);
    c = i + o;
    return o != SPK_ELL_PAD16;
}

/* Row i's sum. The value is loaded whether or not the slot is padding (padding holds 0), so
 * that the unrolled index and value loads carry no dependence on the test and all issue
 * ahead of the gathers; only the gather of x is conditional (no 0 * NaN from padding). The
 * slots are added in order k = 0, 1, ...: the CPU twin's sum, bit for bit, in either layout. */
template <class Idx, bool STREAM>
__device__ __forceinline__ double ell_row(int64_t i, int64_t nrows, int64_t width,
                                          const Idx *__restrict__ Aj,
                                          const double *__restrict__ Ax,
                                          const double *__restrict__ x)
{
    double s = 0.0;
#pragma unroll SPK_ELL_UNROLL
    for (int64_t k = 0; k < width; k++) {
        const int64_t slot = k * nrows + i;            /* 64-bit: nrows * width may pass 2^31 */
        int64_t c;
        const bool real = ell_col<STREAM>(Aj, slot, i, c);
        const double v = spk_ldm<STREAM>(&Ax[slot]);
        if (real)
            s += v * __ldg(&x[c]);
    }
    return s;
}

template <class Idx, bool STREAM>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
ell_kernel(int64_t nrows, int64_t width, const Idx *__restrict__ Aj,
           const double *__restrict__ Ax, const double *__restrict__ x, double alpha, double beta,
           double *__restrict__ y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nrows;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = spk_spmv_out(alpha, ell_row<Idx, STREAM>(i, nrows, width, Aj, Ax, x), beta, y, i);
}

/* y = A x and sink->out = x'y in the same pass (CG's q = A p, p'q): x_i is a coalesced load
 * beside the row's first slot, so the dot costs no pass of its own. */
template <class Idx>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
ell_dot_kernel(int64_t nrows, int64_t width, const Idx *__restrict__ Aj,
               const double *__restrict__ Ax, const double *__restrict__ x,
               double *__restrict__ y, spk_dot_sink sink)
{
    if (sink.skip && *sink.skip)
        return;                                        /* uniform over the grid */
    double d[1] = {0.0};
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nrows;
         i += (int64_t)gridDim.x * blockDim.x) {
        const double s = ell_row<Idx, false>(i, nrows, width, Aj, Ax, x);
        y[i] = s;
        d[0] += x[i] * s;
    }
    if (spk_last_block_sum<1>(d, sink.part, sink.count) && threadIdx.x == 0)
        *sink.out = d[0];
}

/* Blocks of one resident wave of ell_dot_kernel<Idx>, from the occupancy API once per process
 * and instance (one GPU model assumed). */
template <class Idx>
static int64_t ell_dot_wave(const spk_cuda_state *cs)
{
    static std::atomic<int> occupancy{0};
    int per_sm = occupancy.load(std::memory_order_relaxed);
    if (per_sm <= 0) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ell_dot_kernel<Idx>,
                                                          SPK_CUDA_BLOCK, 0) != cudaSuccess ||
            per_sm <= 0) {
            (void)cudaGetLastError();              /* not for the launch check to report */
            per_sm = 1;
        }
        occupancy.store(per_sm, std::memory_order_relaxed);
    }
    return (int64_t)cs->sm_count * per_sm;
}

spk_status spk_ell_dev_spmv_dot(spk_context *ctx, const spk_ell_dev *A, const double *x,
                                double *y, const spk_dot_sink *sink)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    /* One resident wave, sized by the occupancy API (the kernel has no register cap: capped
     * at 32 it ran elasticity3d:40's CG at 85 us per iteration, uncapped at 72). Measured on
     * poisson3d:150 (H200): one wave of a capped kernel 105.7 us (ncu), the SpMV's own grid of
     * 4224 blocks slower again inside CG (192.7 against ~175 us per iteration): the last block
     * then adds 4224 partials; the same grid with a two-level sum (one load per thread at each
     * level) still 120.5 us against 112.5 for the wave, capped or not. nrows == 0 still runs
     * one block, so that the sum (0) lands in *sink->out. */
    int64_t want = (A->nrows + SPK_CUDA_BLOCK - 1) / SPK_CUDA_BLOCK;
    int64_t cap = A->off ? ell_dot_wave<int16_t>(cs) : ell_dot_wave<int32_t>(cs);
    cap = cap < SPK_CG_MAX_BLOCKS ? cap : SPK_CG_MAX_BLOCKS;
    const unsigned grid = (unsigned)(want < 1 ? 1 : want < cap ? want : cap);
    if (A->off)
        ell_dot_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(A->nrows, A->width, A->off,
                                                                A->val, x, y, *sink);
    else
        ell_dot_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(A->nrows, A->width, A->col,
                                                                A->val, x, y, *sink);
    return spk_cuda_launched(ctx, "ell_dot_kernel");
}

spk_status spk_ell_dev_spmv(spk_context *ctx, const spk_ell_dev *A, double alpha,
                            const double *x, double beta, double *y)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || A->nrows == 0)                           /* never launch a zero-size grid */
        return st;
    const unsigned grid = spk_cuda_grid(cs, A->nrows, SPK_CUDA_BLOCK);
    if (A->off && A->stream)
        ell_kernel<int16_t, true><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->width, A->off, A->val, x, alpha, beta, y);
    else if (A->off)
        ell_kernel<int16_t, false><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->width, A->off, A->val, x, alpha, beta, y);
    else if (A->stream)
        ell_kernel<int32_t, true><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->width, A->col, A->val, x, alpha, beta, y);
    else
        ell_kernel<int32_t, false><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            A->nrows, A->width, A->col, A->val, x, alpha, beta, y);
    return spk_cuda_launched(ctx, "ell_kernel");
}

/* The compact index layout: every real slot's column within SPK_ELL_OFF16_MAX of its row
 * (stencils and FEM meshes numbered by grid: poisson3d:150's farthest neighbour is 22,500
 * rows away), and SPK_ELL_INDEX=32 not set in the environment. Then the offsets are stored as
 * int16 and an ELL slot costs 10 bytes instead of 12. */
static bool ell_offsets_fit(const spk_ell_fmt *h)
{
    const char *e = getenv("SPK_ELL_INDEX");
    if (e && strcmp(e, "32") == 0)
        return false;
    for (int64_t k = 0; k < h->width; k++)
        for (int64_t i = 0; i < h->nrows; i++) {
            const int32_t c = h->col[k * h->nrows + i];
            if (c != SPK_ELL_PAD && (c - i > SPK_ELL_OFF16_MAX || i - c > SPK_ELL_OFF16_MAX))
                return false;
        }
    return true;
}

spk_status spk_ell_dev_upload(spk_context *ctx, const spk_ell_fmt *h, spk_ell_dev *d)
{
    d->nrows = h->nrows;
    d->ncols = h->ncols;
    d->width = h->width;
    d->nnz = h->nnz;
    d->stream = 0;
    d->col = NULL;
    d->off = NULL;
    d->val = NULL;
    const size_t slots = (size_t)h->nrows * (size_t)h->width;
    spk_status st;
    if (slots > 0 && ell_offsets_fit(h)) {
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
    if (st ||
        (st = spk_cuda_upload_new(ctx, &d->val, h->val, slots * sizeof(double), "ELL values")))
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
    d->col = NULL;
    d->off = NULL;
    d->val = NULL;
}

/* ---- value refill on the device -------------------------------------------------------------- */

/* One thread per slot s = k * nrows + i: the slot takes entry k of row i of the canonical CSR
 * (Ap, Av), or 0 past the row's end (spk_ell_fill_values' rule, so a row longer than the
 * width keeps its first `width` entries: HYB's ELL part). Consecutive threads store
 * consecutive slots; the reads of Av are the gather. */
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
ell_refill_kernel(int64_t nrows, int64_t slots, const int64_t *__restrict__ Ap,
                  const double *__restrict__ Av, double *__restrict__ val)
{
    for (int64_t s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; s < slots;
         s += (int64_t)gridDim.x * blockDim.x) {
        const int64_t k = s / nrows, i = s - k * nrows;
        const int64_t p = __ldg(&Ap[i]) + k;
        val[s] = p < __ldg(&Ap[i + 1]) ? __ldg(&Av[p]) : 0.0;
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
    ell_refill_kernel<<<spk_cuda_grid(cs, slots, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0,
                        cs->stream>>>(E->nrows, slots, d_rowptr, d_val, E->val);
    return spk_cuda_launched(ctx, "ell_refill_kernel");
}

/* ---- the backend row --------------------------------------------------------------------- */

/* The device layout and the host mirror of its values, kept from setup (the host layout's
 * value array, not freed) so that a value update refills it and uploads it, allocating
 * nothing: 8 bytes per slot of host memory for an update path without re-analysis. */
typedef struct ell_cuda {
    spk_ell_dev dev;
    double     *h_val;                  /* nrows * width, the layout of dev.val on the host */
    int64_t    *d_rowptr;               /* nrows + 1: made at the first update on the device */
} ell_cuda;

static void ell_destroy(void *state)
{
    ell_cuda *d = (ell_cuda *)state;
    if (!d)
        return;
    spk_ell_dev_free(&d->dev);
    spk_free(d->h_val);
    (void)cudaFree(d->d_rowptr);
    spk_free(d);
}

static spk_status ell_setup(spk_context *ctx, const spk_csr *A, void **state)
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
    if (!d) {
        spk_ell_fmt_free(&h);
        return spk_fail(ctx, SPK_ERR_NOMEM, "ell-cuda state: out of host memory");
    }
    st = spk_ell_dev_upload(ctx, &h, &d->dev);
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

static spk_status ell_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    return spk_ell_dev_spmv(ctx, &((const ell_cuda *)state)->dev, alpha, x, beta, y);
}

static spk_status ell_spmv_dot(spk_context *ctx, const void *state, const double *x, double *y,
                               const spk_dot_sink *sink)
{
    return spk_ell_dev_spmv_dot(ctx, &((const ell_cuda *)state)->dev, x, y, sink);
}

static spk_status ell_update(spk_context *ctx, void *state, const spk_csr *A)
{
    ell_cuda *d = (ell_cuda *)state;
    if (!d || d->dev.nrows != A->nrows || d->dev.nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "ell-cuda update: the layout does not match the matrix");
    spk_ell_fill_values(A, d->dev.width, d->h_val);
    return spk_cuda_upload_into(ctx, d->dev.val, d->h_val,
                                (size_t)d->dev.nrows * (size_t)d->dev.width * sizeof(double),
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

extern "C" const spk_spmv_backend spk_backend_ell_cuda = {
    "ell-cuda", SPK_FMT_ELL, SPK_DEVICE_CUDA, ell_setup, ell_spmv, ell_destroy, ell_update,
    ell_spmv_dot,
    ell_update_device,
};
