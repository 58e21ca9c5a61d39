/* kernels/cuda_common.h -- what the CUDA files share and nothing else sees: the per-context
 * CUDA state (stream, cuBLAS handle, reduction scratch), the checked-call helpers that turn a
 * cudaError_t / cublasStatus_t into an spk_status with the message on the context, the counted
 * device allocation, the device layouts of ELL and COO (HYB reuses both), and the small device
 * helpers every kernel uses (the y = alpha*s + beta*y epilogue, warp and block sums).
 *
 * C++ only: included by the .cu files (src/cuda_ctx.cu, kernels/<fmt>_cuda.cu, the methods'
 * solvers/<method>_cuda.cu). None of these
 * helpers returns from its caller; each returns a status the caller tests, as STYLE.md asks. */
#ifndef SPK_CUDA_COMMON_H
#define SPK_CUDA_COMMON_H

#include "formats.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

/* Threads per block of every spk kernel: 8 warps, enough for the block reductions to hide
 * latency, small enough that 8 blocks fill an SM (2048 threads on Hopper). */
#define SPK_CUDA_BLOCK 256

/* Grid-stride kernels are launched with at most this many blocks per SM (4 waves of full
 * occupancy); more blocks only add scheduling cost, fewer leave SMs idle at the tail. */
#define SPK_CUDA_GRID_PER_SM 32

/* Two-stage reductions: stage 1 runs at most min(8 blocks per SM, SPK_CUDA_RED_MAX_BLOCKS)
 * blocks (one resident wave) and writes one partial per block and output; stage 2, one block,
 * sums the partials in a fixed order. No atomics on doubles, so a reduction gives the same
 * bits on every call for the same n on the same GPU. */
#define SPK_CUDA_RED_BLOCKS_PER_SM 8
#define SPK_CUDA_RED_MAX_BLOCKS 2048
#define SPK_CUDA_RED_MAX_OUT 2

/* First capacity of the small vector buffers (GMRES's h = V'w): restart 30 needs 31. */
#define SPK_CUDA_SMALL_INIT 64

/* Device-side scratch, carved from one allocation. */
typedef struct spk_cuda_scratch {
    double             part[SPK_CUDA_RED_MAX_OUT * SPK_CUDA_RED_MAX_BLOCKS]; /* stage-1 sums */
    double             res[SPK_CUDA_RED_MAX_OUT];                            /* stage-2 sums */
    unsigned long long flag;                                    /* invert's first bad index  */
} spk_cuda_scratch;

/* Pinned host mirror of the results: a copy into pinned memory is a true DMA, and the one
 * stream synchronisation after it is the only wait a reduction costs. */
/* Bytes one fetch (vec ops fetch / fetch_wait) can carry: a method's scalar block. */
#define SPK_CUDA_FETCH_MAX 2048

typedef struct spk_cuda_host_scratch {
    double             res[SPK_CUDA_RED_MAX_OUT];
    unsigned long long flag;
    double             fetch[2][SPK_CUDA_FETCH_MAX / sizeof(double)];   /* the fetch slots    */
} spk_cuda_host_scratch;

typedef struct spk_cuda_state {
    int              device;           /* the CUDA device ordinal the context is bound to      */
    int              sm_count;
    int              cc_major, cc_minor;
    int              max_threads_sm;
    size_t           l2_bytes;
    size_t           total_mem;
    size_t           smem_optin;       /* shared memory a block may opt in to (bytes)          */
    int              gs_tile_opt;      /* cgs2's tile kernel: 0 not asked yet, 1 opted in to its
                                        * largest tile, -1 refused (the device's limit is lower) */
    int              gs_tile_occ[33];  /* its blocks per SM for k = 0..32 columns (0: not asked) */
    cudaStream_t     stream;           /* every spk launch and copy of this context             */
    cudaStream_t     capture;          /* non-blocking, made at the first CUDA-graph capture:
                                        * `stream` stands in for it while the steps are queued
                                        * into the graph (kernels/steps_cuda.cu)                */
    cublasHandle_t   blas;             /* bound to `stream`, host pointer mode                  */
    spk_cuda_scratch      *d_scratch;  /* device                                                */
    spk_cuda_host_scratch *h_scratch;  /* pinned host                                           */
    double          *d_small;          /* small device vector (gemv's h), capacity small_cap   */
    double          *h_small;          /* its pinned host mirror                               */
    int64_t          small_cap;
    cudaEvent_t      small_ev;         /* recorded after the last copy out of h_small          */
    double          *d_part;           /* per-block partials of cgs2's multi-dots (grows)      */
    int64_t          part_cap;
    int              small_ev_live;    /* 1 once small_ev was recorded at least once           */
    cudaEvent_t      fetch_ev[2];      /* recorded after the copy into h_scratch->fetch[slot]  */
    void            *fetch_dst[2];     /* where fetch_wait(slot) puts it, and how much         */
    size_t           fetch_bytes[2];
} spk_cuda_state;

/* ---- checked calls (src/cuda_ctx.cu) ------------------------------------------------------ */

/* SPK_OK if e == cudaSuccess, else record "<what>: <cudaGetErrorString> (<name>)" on ctx and
 * return SPK_ERR_CUDA. The runtime's non-sticky last error is cleared, so a later launch check
 * does not report this failure a second time. */
spk_status spk_cuda(spk_context *ctx, cudaError_t e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The same for a cuBLAS status. */
spk_status spk_cublas(spk_context *ctx, cublasStatus_t s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* After a kernel launch: cudaPeekAtLastError (bad configuration, no kernel image). In debug
 * builds (NDEBUG not defined) or with -DSPK_CUDA_SYNC_CHECK, also synchronise the stream and
 * check, so that a fault is reported at the kernel that made it. */
spk_status spk_cuda_launched(spk_context *ctx, const char *kernel);

/* Counted device allocation: bumps ctx->alloc_count and fails on ctx->fail_alloc_at like
 * spk_malloc. Failure (injected or out of memory) gives SPK_ERR_CUDA with a message naming
 * `what` and the size in bytes; *p is NULL and the context stays usable. bytes == 0 still
 * allocates (one element's worth) so that callers can treat NULL as "not allocated". */
spk_status spk_cuda_malloc(spk_context *ctx, void **p, size_t bytes, const char *what);
template <class T>
static inline spk_status spk_cuda_malloc(spk_context *ctx, T **p, size_t bytes, const char *what)
{
    void *v = NULL;
    spk_status st = spk_cuda_malloc(ctx, &v, bytes, what);
    *p = (T *)v;
    return st;
}
/* Counted pinned host allocation (cudaMallocHost), same contract. */
spk_status spk_cuda_malloc_host(spk_context *ctx, void **p, size_t bytes, const char *what);

/* Allocate `bytes` on the device and queue a copy of `host` into it on the context's stream.
 * bytes == 0 leaves *d NULL and allocates nothing. Copies from pageable memory are staged by
 * the driver before cudaMemcpyAsync returns, so `host` may be freed right after. */
spk_status spk_cuda_upload_new(spk_context *ctx, void **d, const void *host, size_t bytes,
                               const char *what);
template <class T>
static inline spk_status spk_cuda_upload_new(spk_context *ctx, T **d, const T *host, size_t bytes,
                                             const char *what)
{
    void *v = NULL;
    spk_status st = spk_cuda_upload_new(ctx, &v, (const void *)host, bytes, what);
    *d = (T *)v;
    return st;
}

/* spk_cuda_upload_new, then wait for the copy (the host array may go right after): on any
 * failure *d is NULL and nothing is kept (src/update_cuda.cu). */
spk_status spk_cuda_upload_wait(spk_context *ctx, void **d, const void *host, size_t bytes,
                                const char *what);
template <class T>
static inline spk_status spk_cuda_upload_wait(spk_context *ctx, T **d, const T *host,
                                              size_t bytes, const char *what)
{
    void *v = NULL;
    spk_status st = spk_cuda_upload_wait(ctx, &v, (const void *)host, bytes, what);
    *d = (T *)v;
    return st;
}

/* Copy `bytes` from host memory into the existing device array `d` on the context's stream and
 * wait for it (a value update: the layout stays, only its values are replaced). bytes == 0 is
 * a no-op. */
spk_status spk_cuda_upload_into(spk_context *ctx, void *d, const void *host, size_t bytes,
                                const char *what);

/* The values of a device layout, in fp64 or, for an fp32 twin row (spk_spmv_backend.fp32),
 * rounded to fp32 on the way. upload_values: a new device array of n values from n host
 * doubles (the rounded copy staged in a temporary host array). upload_values_into: into an
 * existing array, waiting; `stage` holds n floats of host memory kept by the caller, so that a
 * value update allocates nothing. (src/cuda_ctx.cu) */
spk_status spk_cuda_upload_values(spk_context *ctx, void **d, const double *host, size_t n,
                                  int fp32, const char *what);
spk_status spk_cuda_upload_values_into(spk_context *ctx, void *d, const double *host,
                                       float *stage, size_t n, int fp32, const char *what);
/* dst = (float)src, n values on the device, queued on the context's stream (the device
 * value update of a twin whose layout is the canonical value array: CSR, COO's order)
 * (kernels/vec_cuda.cu). */
spk_status spk_cuda_round_values(spk_context *ctx, int64_t n, const double *src, float *dst);
/* The same, then waits and sets *fits = 0 when a value leaves fp32's range (|v| > FLT_MAX, or
 * v != 0 with |v| < FLT_MIN), else 1 (a twin's setup_from and refill). */
spk_status spk_cuda_round_checked(spk_context *ctx, int64_t n, const double *src, float *dst,
                                  int *fits);

/* The context's CUDA state, or SPK_ERR_ARG with a message when ctx has none (a CPU context
 * handed to a CUDA backend, or a failed spk_cuda_init). */
spk_status spk_cuda_state_of(spk_context *ctx, spk_cuda_state **cs);

/* Make the small buffers hold at least k doubles (grows once, counted). */
spk_status spk_cuda_small_reserve(spk_context *ctx, spk_cuda_state *cs, int64_t k);
/* Make d_part hold at least `count` doubles (grows, counted; waits for queued work first). */
spk_status spk_cuda_part_reserve(spk_context *ctx, spk_cuda_state *cs, int64_t count);

/* Blocks for a grid-stride kernel over `items` work items, `per_block` items per block at a
 * time. Never 0 for items > 0; callers return before launching when items == 0. */
static inline unsigned spk_cuda_grid(const spk_cuda_state *cs, int64_t items, int64_t per_block)
{
    int64_t want = (items + per_block - 1) / per_block;
    int64_t cap = (int64_t)cs->sm_count * SPK_CUDA_GRID_PER_SM;
    if (want > cap)
        want = cap;
    return (unsigned)(want > 0 ? want : 1);
}

/* Blocks of a kernel that ends in a fused reduction (spk_last_block_sum): at most one
 * resident wave and never more than the partials' room, SPK_MAX_BLOCKS. Such kernels are
 * declared SPK_RESIDENT_BOUNDS, so that a wave of max_threads_sm / SPK_CUDA_BLOCK blocks per SM
 * really is resident: at 40 registers only 6 of 8 blocks fit, and the last quarter of a
 * grid-stride grid then runs as a second, mostly empty wave (measured: CG on poisson3d:150,
 * 218 us per iteration where the traffic asks for ~150). */
#define SPK_RESIDENT_BOUNDS __launch_bounds__(SPK_CUDA_BLOCK, 2048 / SPK_CUDA_BLOCK)
static inline unsigned spk_cuda_red_grid(const spk_cuda_state *cs, int64_t items,
                                         int64_t per_block)
{
    int64_t want = (items + per_block - 1) / per_block;
    int64_t cap = (int64_t)cs->sm_count * (cs->max_threads_sm / SPK_CUDA_BLOCK);
    if (cap > SPK_MAX_BLOCKS)
        cap = SPK_MAX_BLOCKS;
    if (want > cap)
        want = cap;
    return (unsigned)(want > 0 ? want : 1);
}

/* Device-resident scalars (kernels/steps_cuda.cu), rows of the CUDA vec-ops table. */
spk_status spk_cuda_dot_sink(spk_context *ctx, int64_t n, const double *x, const double *y,
                             const spk_dot_sink *sink);
spk_status spk_cuda_fetch(spk_context *ctx, const void *dev, size_t bytes, int slot, void *host);
spk_status spk_cuda_fetch_wait(spk_context *ctx, int slot);
spk_status spk_cuda_put(spk_context *ctx, const void *host, size_t bytes, void *dev);
spk_status spk_cuda_steps(spk_context *ctx, void **graph, spk_status (*step)(void *), void *self,
                          int64_t count);
void spk_cuda_graph_free(void *graph);

/* ---- shared launchers ---------------------------------------------------------------------- */

/* y = beta * y, with beta == 0 writing zeros (NaN in y does not survive) (kernels/vec_cuda.cu).
 * The COO kernels pre-scale y with it before they accumulate. */
spk_status spk_cuda_yscale(spk_context *ctx, int64_t n, double beta, double *y);

/* ELL on the device (kernels/ell_cuda.cu), also HYB's first part. */
#define SPK_ELL_PAD16 (-32768)           /* padding in the int16 offset layout               */
typedef struct spk_ell_dev {
    int64_t  nrows, ncols, width, nnz;
    int32_t *col;                       /* width * nrows, column-major, SPK_ELL_PAD in padding */
    int16_t *off;                       /* or (col NULL): column - row, SPK_ELL_PAD16 padding  */
    double  *val;
    float   *val32;                     /* or (val NULL): the values in fp32 (a twin's layout) */
    int      stream;                    /* 1: loaded evict-first (HYB's part beside a tail)    */
    int      rows;                      /* rows per thread: 1 or 2 (ell_rows_per_thread; 2 for
                                         * fp32 values), 4 (fp32, SPK_ELL_ROWS=4, ell_quad)    */
} spk_ell_dev;
/* fp32: the values rounded to float into val32 (val stays NULL). */
spk_status spk_ell_dev_upload(spk_context *ctx, const spk_ell_fmt *h, int fp32, spk_ell_dev *d);
void spk_ell_dev_free(spk_ell_dev *d);
/* Value update on the device: refill E's values from canonical CSR values on the device
 * (d_rowptr, d_val of the matrix E was built from), slot k of row i = the row's entry k or 0;
 * a row longer than the width keeps its first `width` entries (HYB). Queued, not waited for. */
spk_status spk_ell_dev_refill(spk_context *ctx, spk_ell_dev *E, const int64_t *d_rowptr,
                              const double *d_val);
/* y = alpha*A*x + beta*y over all nrows rows (width 0 only scales y). */
spk_status spk_ell_dev_spmv(spk_context *ctx, const spk_ell_dev *A, double alpha,
                            const double *x, double beta, double *y);
/* y = A x and sink->out = x'y in one pass (spk_spmv_backend.spmv_dot). */
spk_status spk_ell_dev_spmv_dot(spk_context *ctx, const spk_ell_dev *A, const double *x,
                                double *y, const spk_dot_sink *sink);
/* The same with x and y in float (spmv_dot32): fp32 values only. */
/* AMG's fused step (spk_spmv_backend.spmv_step) over the layout. */
spk_status spk_ell_dev_spmv_step(spk_context *ctx, const spk_ell_dev *A, const spk_step *s);
spk_status spk_ell_dev_spmv_dot32(spk_context *ctx, const spk_ell_dev *A, const float *x,
                                  float *y, const spk_dot_sink *sink);

/* COO on the device (kernels/coo_cuda.cu), also HYB's tail. */
typedef struct spk_coo_dev {
    int64_t  nrows, ncols, nnz;
    int32_t *row, *col;                 /* sorted by row, then column                          */
    double  *val;
    float   *val32;                     /* or (val NULL): the values in fp32 (a twin's layout) */
} spk_coo_dev;
/* fp32: the values rounded to float into val32 (val stays NULL). */
spk_status spk_coo_dev_upload(spk_context *ctx, const spk_coo_fmt *h, int fp32, spk_coo_dev *d);
void spk_coo_dev_free(spk_coo_dev *d);
/* accumulate == 0: y = alpha*A*x + beta*y. accumulate == 1: y += alpha*A*x (beta unused),
 * which is how HYB adds its COO tail to the ELL part's result. */
spk_status spk_coo_dev_spmv(spk_context *ctx, const spk_coo_dev *A, double alpha,
                            const double *x, double beta, double *y, int accumulate);
/* y += alpha A x with x and y each fp64 or (x32, y32) fp32: HYB's tail in AMG's fused step. */
spk_status spk_coo_dev_accumulate(spk_context *ctx, const spk_coo_dev *A, double alpha,
                                  const void *x, int x32, void *y, int y32);

/* Merge-path CSR SpMV (kernels/csr_merge_cuda.cu), the CSR backend's kernel for irregular
 * rows when SPK_CSR_KERNEL=merge. Pattern data only (tile coordinates, rows shared by tiles), so value updates keep it;
 * the matrix arrays are the backend's own (d_rowptr, d_col, d_val). */
typedef struct spk_csr_merge {
    int64_t  nrows, ntiles, nfix;
    int64_t *coord;                     /* 2 (ntiles + 1): tile start rows, then start nonzeros */
    int64_t *fix;                       /* 2 nfix: shared rows' first tiles, then last tiles    */
    double  *part;                      /* 3 ntiles scratch: head, tail, dotp below point in it  */
    double  *head, *tail, *dotp;        /* per tile: first row's part, last row's part, x'y      */
} spk_csr_merge;
/* Build and upload the layout for A's pattern (counted allocations; on failure M is empty). */
spk_status spk_csr_merge_setup(spk_context *ctx, const spk_csr *A, spk_csr_merge *M);
void spk_csr_merge_free(spk_csr_merge *M);                                    /* NULL-safe */
/* y = alpha*A*x + beta*y; beta == 0 does not read y. Deterministic (no atomics). */
spk_status spk_csr_merge_spmv(spk_context *ctx, const spk_csr_merge *M, const int64_t *d_rowptr,
                              const int32_t *d_col, const double *d_val, double alpha,
                              const double *x, double beta, double *y);
/* y = A x and sink->out = x'y (spk_spmv_backend.spmv_dot). */
spk_status spk_csr_merge_spmv_dot(spk_context *ctx, const spk_csr_merge *M,
                                  const int64_t *d_rowptr, const int32_t *d_col,
                                  const double *d_val, const double *x, double *y,
                                  const spk_dot_sink *sink);

/* The same over fp32 values (csr32-cuda; products and sums in fp64). */
spk_status spk_csr_merge_spmv(spk_context *ctx, const spk_csr_merge *M, const int64_t *d_rowptr,
                              const int32_t *d_col, const float *d_val, double alpha,
                              const double *x, double beta, double *y);
spk_status spk_csr_merge_spmv_dot(spk_context *ctx, const spk_csr_merge *M,
                                  const int64_t *d_rowptr, const int32_t *d_col,
                                  const float *d_val, const double *x, double *y,
                                  const spk_dot_sink *sink);

/* Row-block CSR SpMV (kernels/csr_adaptive_cuda.cu, CSR-Adaptive), the CSR backend's default
 * kernel for irregular rows. Pattern data only, like the merge path's. */
typedef struct spk_csr_adaptive {
    int64_t   nblk, nlong, ncols;
    int       tile;                     /* 1: stream blocks stage their own columns of x       */
    int       bits;                     /* bits per packed column index                        */
    int       sums;                     /* SPK_CSR_SUMS_*: the stream blocks' sums (the knob)  */
    uint32_t *pcol;                     /* bit-packed column indices, padded past the end      */
    uint16_t *rend;                     /* nrows: row end - its stream block's first nonzero    */
    int64_t  *blk;                      /* 4 nblk: first row, end row or -1 - long row, nz range */
    int64_t  *lfirst;                   /* nlong + 1: the long rows' first piece blocks        */
    uint32_t *count;                    /* nlong: pieces done (the last one resets it to 0)    */
    double   *part;                     /* one sum per piece (the grid's first blocks)         */
} spk_csr_adaptive;
spk_status spk_csr_adaptive_setup(spk_context *ctx, const spk_csr *A, spk_csr_adaptive *M);
void spk_csr_adaptive_free(spk_csr_adaptive *M);                              /* NULL-safe */
/* y = alpha*A*x + beta*y; beta == 0 does not read y. Deterministic (fixed-order sums). */
spk_status spk_csr_adaptive_spmv(spk_context *ctx, const spk_csr_adaptive *M,
                                 const int64_t *d_rowptr, const int32_t *d_col,
                                 const double *d_val, double alpha, const double *x,
                                 double beta, double *y);
spk_status spk_csr_adaptive_spmv(spk_context *ctx, const spk_csr_adaptive *M,
                                 const int64_t *d_rowptr, const int32_t *d_col,
                                 const float *d_val, double alpha, const double *x,
                                 double beta, double *y);

/* A csr-cuda state (spk_backend_csr_cuda's) over a CSR already on the device: d_rp's 32-bit
 * offsets widened into its own array, d_col and d_val used in place and never freed (they
 * must outlive the state); A the same matrix on the host, for the kernel plan. */
spk_status spk_csr_dev_adopt(spk_context *ctx, const spk_csr *A, const int32_t *d_rp,
                             int32_t *d_col, double *d_val, void **state);

/* The CUDA CSR backend's kernels. */
enum { SPK_CSR_VECTOR = 0, SPK_CSR_MERGE = 1, SPK_CSR_ADAPTIVE = 2 };

/* ---- device helpers ------------------------------------------------------------------------ */
#ifdef __CUDACC__

#define SPK_FULL_MASK 0xffffffffu

/* Loads of matrix data (indices, values), read once per SpMV: __ldg, or with STREAM the
 * streaming (evict-first) load __ldcs, so that the streamed matrix does not push the gathered
 * x out of L2. Measured on the H200 (bench_spmv --reps 30, two interleaved runs each, us,
 * __ldg / __ldcs everywhere; docs/benchmarks.md): powerlaw:4000000:4 HYB 186.2 /
 * 162.9-163.0 (x is 32 MB: ncu showed HYB reading ~220 MB more than its bytes from DRAM),
 * merge-path CSR 224.1 / 200.2; powerlaw:2000000:16 HYB 278.5 / 269.9-270.1; poisson3d:150
 * ELL 83.4 / 84.3 (1% slower where x is reused from L1). So the irregular layouts stream --
 * COO, the merge path, CSR's row blocks, and HYB's ELL part when HYB has a tail
 * (spk_ell_dev.stream) -- and plain ELL keeps __ldg. */
template <bool STREAM, class T>
__device__ __forceinline__ T spk_ldm(const T *p)
{
    return STREAM ? __ldcs(p) : __ldg(p);
}

/* Column of a slot of row i from its stored index: the column (int32) or i plus the stored
 * offset (int16, the compact layouts of ELL and SELL); false for padding (SPK_ELL_PAD or
 * SPK_ELL_PAD16). */
__device__ __forceinline__ bool ell_real(int32_t j, int64_t, int64_t &c)
{
    c = j;
    return j != SPK_ELL_PAD;
}
__device__ __forceinline__ bool ell_real(int16_t o, int64_t i, int64_t &c)
{
    c = i + o;
    return o != SPK_ELL_PAD16;
}

/* A fused step's vectors with their types (spk_step): X for x, u and w, B for b, Y for y;
 * put() is spk_step_put's expression, the same order of operations. */
template <class X, class B, class Y>
struct spk_step_t {
    const X *u, *w;
    const B *b;
    Y *y;
    double alpha, beta;
    __device__ __forceinline__ void put(int64_t i, double t) const
    {
        double v = alpha * t;
        if (b)
            v = (double)b[i] + v;
        if (w)
            v = (double)w[i] * v;
        if (u)
            v = beta * (double)u[i] + v;
        y[i] = (Y)v;
    }
};

template <class X, class B, class Y>
static inline spk_step_t<X, B, Y> spk_step_typed(const spk_step *s)
{
    return spk_step_t<X, B, Y>{(const X *)s->u, (const X *)s->w, (const B *)s->b, (Y *)s->y,
                               s->alpha, s->beta};
}

/* f(step, x) with s's vectors typed: all fp64; all fp32; fp32 but b (the V-cycle's finest
 * level, whose b is the method's residual), and y too (its last sweep, into the method's z).
 * false, nothing called: another combination (the caller composes it). */
template <class F>
static inline bool spk_step_dispatch(const spk_step *s, F &&f)
{
    const bool b32 = s->b ? s->b32 != 0 : s->x32 && s->y32;   /* no b: either type */
    if (!s->x32 && !b32 && !s->y32)
        f(spk_step_typed<double, double, double>(s), (const double *)s->x);
    else if (s->x32 && b32 && s->y32)
        f(spk_step_typed<float, float, float>(s), (const float *)s->x);
    else if (s->x32 && !b32 && s->y32)
        f(spk_step_typed<float, double, float>(s), (const float *)s->x);
    else if (s->x32 && !b32 && !s->y32)
        f(spk_step_typed<float, double, double>(s), (const float *)s->x);
    else
        return false;
    return true;
}

/* The SpMV epilogue, the same expression as spk_csr_spmv_ref: beta == 0 never reads y. */
__device__ __forceinline__ double spk_spmv_out(double alpha, double s, double beta,
                                               const double *y, int64_t i)
{
    return beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
}

/* Sum over the 32 lanes, result in lane 0; fixed order, so deterministic. */
__device__ __forceinline__ double spk_warp_sum(double v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(SPK_FULL_MASK, v, off);
    return v;
}

/* Sum each of NOUT values over the block, results in thread 0. Every thread of the block must
 * call it (it holds two barriers); blockDim.x a multiple of 32, at most 1024. */
template <int NOUT>
__device__ __forceinline__ void spk_block_sum(double (&v)[NOUT])
{
    __shared__ double sh[NOUT][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
#pragma unroll
    for (int o = 0; o < NOUT; o++)
        v[o] = spk_warp_sum(v[o]);
    if (lane == 0) {
#pragma unroll
        for (int o = 0; o < NOUT; o++)
            sh[o][warp] = v[o];
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int o = 0; o < NOUT; o++)
            v[o] = spk_warp_sum(lane < nwarps ? sh[o][lane] : 0.0);
    }
    __syncthreads();                     /* sh may be reused by the caller's next iteration */
}

/* The end of a fused reduction of NOUT sums, after a grid of at most SPK_MAX_BLOCKS
 * blocks: every thread of every block calls it once with its own sums. Block b leaves its
 * block sums in part[o * SPK_MAX_BLOCKS + b]; the last block to arrive (counted in *count,
 * which atomicInc returns to 0) adds the partials in block order, so the totals have the same
 * bits whatever order the blocks ran in. Returns true in every thread of that last block,
 * with the totals in v; false elsewhere (v then holds nothing useful). */
template <int NOUT>
__device__ __forceinline__ bool spk_last_block_sum(double (&v)[NOUT], double *part,
                                                   uint32_t *count)
{
    __shared__ bool last;
    __shared__ double tot[NOUT];
    spk_block_sum<NOUT>(v);
    if (threadIdx.x == 0) {
#pragma unroll
        for (int o = 0; o < NOUT; o++)
            part[o * SPK_MAX_BLOCKS + blockIdx.x] = v[o];
        __threadfence();                 /* the partial is visible before the count says so */
        last = atomicInc(count, gridDim.x - 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last)
        return false;
    __threadfence();
    double s[NOUT];
#pragma unroll
    for (int o = 0; o < NOUT; o++)
        s[o] = 0.0;
    /* PER loads per thread are issued before the first add: a loop of dependent L2 round trips
     * (~0.7 us each) made the tail of a wave of 1056 blocks ~3 us. The additions keep their
     * order (block b, b + blockDim, ...), so the bits are those of the plain loop. */
    constexpr int PER = 4 / NOUT > 0 ? 4 / NOUT : 1;
    for (unsigned base = 0; base < gridDim.x; base += PER * blockDim.x) {
        double got[NOUT][PER];
#pragma unroll
        for (int k = 0; k < PER; k++) {
            const unsigned b = base + k * blockDim.x + threadIdx.x;
#pragma unroll
            for (int o = 0; o < NOUT; o++)          /* L2: other SMs wrote them */
                got[o][k] = b < gridDim.x ? __ldcg(&part[o * SPK_MAX_BLOCKS + b]) : 0.0;
        }
#pragma unroll
        for (int k = 0; k < PER; k++) {
#pragma unroll
            for (int o = 0; o < NOUT; o++)
                s[o] += got[o][k];
        }
    }
    spk_block_sum<NOUT>(s);
    if (threadIdx.x == 0) {
#pragma unroll
        for (int o = 0; o < NOUT; o++)
            tot[o] = s[o];
    }
    __syncthreads();
#pragma unroll
    for (int o = 0; o < NOUT; o++)
        v[o] = tot[o];
    return true;
}

#endif /* __CUDACC__ */

#endif /* SPK_CUDA_COMMON_H */
