/* kernels/csr_adaptive_cuda.cu -- row-block CSR SpMV, the CUDA CSR backend's kernel for
 * irregular rows (Greathouse & Daga, "Efficient sparse matrix-vector multiplication on GPUs
 * using the CSR storage format", SC'14: CSR-Adaptive's CSR-Stream; Daga & Greathouse, HiPC'15:
 * very long rows split across workgroups). The rows are cut at setup into blocks of
 * consecutive rows holding at most NB = SPK_CSR_ADAPT_ITEMS x 256 nonzeros (and at most NB
 * rows); one thread block per row block:
 *
 *  - stream block: its nonzeros are one contiguous range of the CSR arrays, so its 256
 *    threads load them coalesced, SPK_CSR_ADAPT_ITEMS each with every load in flight together,
 *    and leave the products a_ij x_j in shared memory beside the rows' offsets; then a group
 *    of g lanes per row (g = 32 for one row, down to 1 for >= 256 rows) sums each row's
 *    products in order and writes y, coalesced: no search, no scan. Where a row of the block is longer than SPK_CSR_ADAPT_SEG_TRIPS x g (a power-law block:
 *    a few rows of hundreds of nonzeros among hundreds of short ones, so g is 1 or 2 and one
 *    lane would walk such a row alone, a dependent shared load and add per nonzero), the
 *    block sums by nonzeros instead (segmented sums): each thread takes SPK_CSR_ADAPT_ITEMS
 *    consecutive products, finds its first row by a binary search of the block's row
 *    offsets, sums its rows' pieces in order, writes the rows that start and end in its
 *    range, and a segmented scan over the threads (warp shuffles, then the 8 warps' totals)
 *    carries the rows that cross threads to the thread where they end.
 *  - piece of a long row (more than NB nonzeros): the row is cut into pieces of at most
 *    SPK_CSR_ADAPT_PIECE nonzeros, one block each; a block sums its piece (block tree) and
 *    writes it to part[]; the last piece of the row to finish (counted by atomicInc, which
 *    returns the counter to 0) adds the pieces in order and writes y. The pieces are the
 *    first blocks of the grid, so the longest rows start first and never set the tail.
 *
 * Bytes: the stream blocks read the columns bit-packed (ceil(log2 ncols) bits each: 21 for
 * 2M columns, 2.6 bytes instead of 4) and each row's end as a 16-bit offset in its block
 * (2 bytes instead of 8); the values, 8 bytes a nonzero; 32 bytes of descriptor a block. The
 * matrix arrays are loaded evict-first (__ldcs), so that the streamed matrix does not push x
 * out of L2. Every sum has a fixed order (row entries in order, the shuffle tree of g, the
 * segmented sums' thread pieces and scan tree, the block tree, the pieces in order), so the
 * bits are the same on every call. Which blocks take the segmented sums depends on the row
 * lengths and, through the one-wave test, on the GPU's size, so two GPUs may differ in the
 * last bits. One launch. The layout holds only pattern data: value updates keep it.
 *
 * x: the gathers go to L2 only (__ldcg: under __ldg x's L1 hit rate is 9%, so L1 lines would be
 * filled for nothing). The x tile: a block's own rows' columns, x[r0 .. r0 + 255] -- where a
 * diagonal lies -- are loaded coalesced into shared memory first (L2 hits, back before the
 * columns come from DRAM) and the nonzeros whose column falls there read it from there; the
 * product and its place in the sum do not change, so neither do the bits. A warp's 32
 * consecutive nonzeros hold about 32 / L diagonals of consecutive rows (L the mean row length):
 * at L = 4 the gather already brings them 4 to a 32-byte sector and the tile only adds its
 * barrier; at L = 16 each diagonal costs a sector of its own, which the tile replaces by a
 * quarter of one. So the tile is used when the stream blocks' rows hold >= 8 nonzeros on
 * average (between the two measured points, not a fit). H200 (bench_spmv, 50 SpMVs, us),
 * powerlaw:2000000:16 (L = 16) / powerlaw:4000000:4 (L = 4): __ldg 254.6 / 144.7; __ldcg
 * 253.7 / 142.6; __ldcg + tile of 256 rows 247.2 / 145.2 (128: 247.3 / 145.4; 768: 247.8 /
 * 149.8); cuSPARSE 249.9 / 158.0.
 *
 * Measured on the H200 (bench_spmv, 50 SpMVs, us; docs/benchmarks.md, "GPU SpMV: irregular
 * rows"), on powerlaw:2000000:16 / powerlaw:4000000:4, cuSPARSE's CSR 250 / 158 in the same
 * runs: NB = 768 / 1024 / 1536 / 2048 nonzeros a block 255.0 / 256.2 / 261.2 / 263.1 and
 * 152.0 / 156.0 / 175.2 / 173.0; without evict-first (NB 1024) 258.2 / 175.4; a warp per row
 * block instead of a thread block (no block barrier) 258-268 / 150-200; packed columns (NB
 * 768) 254.4 / 144.6 against 254.9 / 151.6 unpacked. */
#include "cuda_common.h"

#include <stdlib.h>
#include <string.h>

/* The partition's sizes are in src/spk_internal.h (bench_rowblocks restates the partition on
 * the host), with these measurements here.
 * Nonzeros per thread of a stream block: NB = SPK_CSR_ADAPT_ITEMS x 256 = 768 (measured best,
 * above). */
static_assert(SPK_CSR_ADAPT_THREADS == SPK_CUDA_BLOCK, "the row blocks' threads are a block's");
/* Pieces of a long row: SPK_CSR_ADAPT_PIECE_LOADS loads per thread of a 256-thread block.
 * Measured on the H200 (bench_spmv, 50 SpMVs, us, 32 / 3 loads -- pieces of 8192 / 768
 * nonzeros, the latter every load in flight at once): rmat:14:12 11.2 / 11.1, rmat:16:3
 * 13.2 / 13.3 (so the long rows' pieces are not what keeps those small graphs behind
 * cuSPARSE's COO, 8.3-10.3), rmat:20 249.9 / 269.2, rmat:22:8 584.0 / 608.1,
 * powerlaw:2000000:16 247.2 / 247.6. */
/* The x tile: a stream block's first SPK_CSR_ADAPT_TILE rows' own columns of x, staged in
 * shared memory, when the stream blocks' rows hold at least SPK_CSR_ADAPT_TILE_LEN nonzeros
 * on average (the header says why; 256 measured against 128 and 768). */
#define SPK_CSR_ADAPT_TILE 256
#define SPK_CSR_ADAPT_TILE_LEN 8
/* A stream block sums by nonzeros (segmented sums) when one of its rows would take one of its
 * g lanes more than SPK_CSR_ADAPT_SEG_TRIPS trips of the row loop: a trip is a dependent shared load and add
 * (~40 cycles), the segmented sums a search and a scan (~20 such steps), so a block whose
 * longest row takes under ~16 trips keeps the row loop. rmat:14:12 / rmat:16:3 have blocks of
 * up to 139 / 231 trips (437 of rmat:16:3's 591 stream blocks take 64-256); a stencil's
 * blocks 5 (`bench_rowblocks MATRIX` prints these).
 * Only where the grid is one wave (no more blocks than the GPU holds at once), where the
 * slowest block is the SpMV's time; with many waves other blocks hide a block's latency and
 * the segmented sums' extra instructions cost throughput. H200 (bench_spmv, 50 SpMVs, us),
 * every block by rows / skewed blocks segmented / every block segmented: rmat:14:12 11.5 /
 * 9.3 / 9.8, rmat:16:3 13.3 / 9.8 / 9.9 (one wave: 497 and 608 blocks); rmat:20 256.8 /
 * 267.6 / 268.2, powerlaw:4000000:4 144.3 / 151.9 / 148.9 (37,555 and 20,978 blocks). The
 * row loop's own kernel (SUMS = ROWS, what a grid of many waves runs) has no skew test at
 * all: with the test compiled in and never true, rmat:20 / rmat:22:8 took 255.1 / 607.8
 * against 250.0 / 584.4. */

/* ---- the kernel --------------------------------------------------------------------------- */

/* Column of nonzero j: the `bits`-bit field j of the packed stream. Every lane of the warp
 * calls it with j = (the warp's first j) + lane, valid or not (the stream is padded past the
 * last nonzero): a field ends at most one word after its start word, and that word is the next
 * lane's start word whenever the field needs it, so it comes by a shuffle (lane 31 loads its
 * own). -1 where !valid. */
__device__ __forceinline__ int32_t ad_col(const uint32_t *__restrict__ pcol, int bits, int64_t j,
                                          bool valid)
{
    const uint64_t bit = (uint64_t)j * (unsigned)bits;
    const int64_t w = (int64_t)(bit >> 5);
    const uint32_t lo = spk_ldm<true>(&pcol[w]);
    uint32_t hi = __shfl_down_sync(SPK_FULL_MASK, lo, 1);
    if ((threadIdx.x & 31) == 31)
        hi = spk_ldm<true>(&pcol[w + 1]);
    const uint32_t v = __funnelshift_r(lo, hi, (unsigned)(bit & 31));
    return valid ? (int32_t)(bits >= 32 ? v : v & ((1u << bits) - 1u)) : -1;
}

/* A stream block's sums by nonzeros (the header): products s_prod[0 .. nz - 1] in order, row q
 * of the block over s_prod[s_ptr[q] .. s_ptr[q + 1] - 1], nz = s_ptr[nr]. Thread t takes
 * products ITEMS t .. ITEMS t + ITEMS - 1. Each row is written once: an empty row q by
 * thread q mod 256, a row inside one thread's range by that thread, a row that starts in
 * an earlier thread's range by the thread where it ends, with the sum of its earlier pieces
 * from the scan. A thread's last piece (its row started in its range or not) is what it gives
 * the scan: S_t = v_t + (f_t ? 0 : S_{t-1}), f_t = that row starts in thread t's range. The
 * scan's results go to s_prod, whose products are all read by then. */
template <int ITEMS>
__device__ __forceinline__ void ad_segmented_sums(double *s_prod, const int *s_ptr, int nr,
                                                  int64_t r0, double *s_wv, int *s_wf,
                                                  double alpha, double beta,
                                                  double *__restrict__ y)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nz = s_ptr[nr];
    for (int q = tid; q < nr; q += SPK_CUDA_BLOCK)
        if (s_ptr[q] == s_ptr[q + 1])
            y[r0 + q] = spk_spmv_out(alpha, 0.0, beta, y, r0 + q);
    const int k0 = tid * ITEMS, k1 = k0 + ITEMS < nz ? k0 + ITEMS : nz;
    double run = 0.0, head = 0.0;
    int headq = -1;                      /* a row begun before this range, ending in it      */
    int f = 1;                           /* the last piece's row starts in this range        */
    if (k0 < nz) {
        int lo = 0, hi = nr;             /* s_ptr[lo] <= k0 < s_ptr[hi]: row lo holds k0      */
        while (hi - lo > 1) {
            const int mid = (lo + hi) >> 1;
            if (s_ptr[mid] <= k0)
                lo = mid;
            else
                hi = mid;
        }
        int q = lo;
        const bool cont = s_ptr[q] < k0;
        bool first = true;
        for (int k = k0; k < k1; k++) {
            if (k >= s_ptr[q + 1]) {     /* row q ends before k: its piece here is its last  */
                if (first && cont) {
                    headq = q;
                    head = run;
                } else {
                    y[r0 + q] = spk_spmv_out(alpha, run, beta, y, r0 + q);
                }
                first = false;
                run = 0.0;
                do
                    q++;                 /* past the empty rows (written above)               */
                while (s_ptr[q + 1] <= k);
            }
            run += s_prod[k];
        }
        f = !(first && cont);
        if (s_ptr[q + 1] == k1) {        /* the last piece ends the row here                 */
            if (f)
                y[r0 + q] = spk_spmv_out(alpha, run, beta, y, r0 + q);
            else {
                headq = q;
                head = run;
            }
        }
    }
    double v = run;                      /* inclusive segmented scan over the warp ...       */
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const double vo = __shfl_up_sync(SPK_FULL_MASK, v, off);
        const int fo = __shfl_up_sync(SPK_FULL_MASK, f, off);
        if (lane >= off) {
            if (!f)
                v = vo + v;
            f |= fo;
        }
    }
    if (lane == 31) {
        s_wv[warp] = v;
        s_wf[warp] = f;
    }
    __syncthreads();
    if (!f)                              /* ... then the earlier warps' totals, nearest first */
        for (int w = warp - 1; w >= 0; w--) {
            v = s_wv[w] + v;
            if (s_wf[w])
                break;
        }
    double *s_carry = s_prod;            /* every product was read before the barrier above */
    s_carry[tid] = v;
    __syncthreads();
    if (headq >= 0)                      /* cont implies tid >= 1                             */
        y[r0 + headq] = spk_spmv_out(alpha, s_carry[tid - 1] + head, beta, y, r0 + headq);
}

/* blk: 4 int64 per block: first row, then (stream) one past the last row or (piece) -1 - the
 * long row's index, then the block's first and one-past-last nonzero. lfirst: long row l's
 * pieces are blocks lfirst[l] .. lfirst[l + 1] - 1 (the grid's first blocks, so part is
 * indexed by block). rend: a stream-block row's end, from its block's first nonzero. The
 * pieces read the int32 columns Aj (a warp's lanes there are not one run of j). */
template <class V, int TS, int SUMS>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
csr_adaptive_kernel(const int64_t *__restrict__ blk, const int64_t *__restrict__ lfirst,
                    uint32_t *__restrict__ count, double *__restrict__ part,
                    const uint16_t *__restrict__ rend, const int32_t *__restrict__ Aj,
                    const uint32_t *__restrict__ pcol, int bits, const V *__restrict__ Ax,
                    const double *__restrict__ x, int64_t ncols, double alpha, double beta,
                    double *__restrict__ y)
{
    constexpr int ITEMS = SPK_CSR_ADAPT_ITEMS, NB = SPK_CSR_ADAPT_NB;
    constexpr int XT = (TS + SPK_CUDA_BLOCK - 1) / SPK_CUDA_BLOCK;    /* tile loads a thread */
    __shared__ double s_prod[NB];
    __shared__ int s_ptr[NB + 1];
    __shared__ double s_x[TS > 0 ? TS : 1];
    __shared__ double s_wv[SPK_CUDA_BLOCK / 32];
    __shared__ int s_wf[SPK_CUDA_BLOCK / 32];
    __shared__ bool s_last;
    const int tid = threadIdx.x;
    const int64_t b = blockIdx.x;
    const int64_t r0 = __ldg(&blk[4 * b]), aux = __ldg(&blk[4 * b + 1]);
    const int64_t e0 = __ldg(&blk[4 * b + 2]), e1 = __ldg(&blk[4 * b + 3]);

    if (aux < 0) {                                      /* a piece of long row l (uniform) */
        const int64_t l = -1 - aux;
        double s[1] = {0.0};
#pragma unroll ITEMS
        for (int64_t j = e0 + tid; j < e1; j += SPK_CUDA_BLOCK)
            s[0] += (double)spk_ldm<true>(&Ax[j]) * __ldg(&x[spk_ldm<true>(&Aj[j])]);
        spk_block_sum<1>(s);
        const int64_t f0 = __ldg(&lfirst[l]), f1 = __ldg(&lfirst[l + 1]);
        if (f1 - f0 == 1) {
            if (tid == 0)
                y[r0] = spk_spmv_out(alpha, s[0], beta, y, r0);
            return;
        }
        if (tid == 0) {
            part[b] = s[0];
            __threadfence();                 /* the partial is visible before the count says so */
            s_last = atomicInc(&count[l], (unsigned)(f1 - f0 - 1)) == (unsigned)(f1 - f0 - 1);
        }
        __syncthreads();
        if (s_last && tid == 0) {
            __threadfence();
            double t = 0.0;
            for (int64_t p = f0; p < f1; p++)           /* in order: the same bits every call */
                t += __ldcg(&part[p]);
            y[r0] = spk_spmv_out(alpha, t, beta, y, r0);
        }
        return;
    }

    /* stream block: rows r0 .. aux - 1, nonzeros e0 .. e1 - 1 (at most NB of each); g lanes
     * per row in the row loop, g the largest power of two <= 256 / nr, at most 32 */
    const int nr = (int)(aux - r0);
    int g = 32;                  /* the lanes, now for the skew test, else after the barrier */
    if (SUMS != SPK_CSR_SUMS_ROWS)
        while (g > 1 && g * nr > SPK_CUDA_BLOCK)
            g >>= 1;
    bool skew = SUMS == SPK_CSR_SUMS_SEGMENTED;   /* a row too long for the row loop (header) */
    {
        /* the tile: x[r0 .. r0 + nt - 1], the block's own rows' columns, loaded coalesced
         * before anything else (L2 hits, back before the columns come from DRAM) */
        int nt = 0;
        double xt[XT > 0 ? XT : 1];
        if (TS > 0) {
            nt = (int)(ncols - r0 < nr ? (ncols > r0 ? ncols - r0 : 0) : nr);
            nt = nt < TS ? nt : TS;
#pragma unroll
            for (int k = 0; k < XT; k++) {
                const int i = k * SPK_CUDA_BLOCK + tid;
                xt[k] = i < nt ? __ldcg(&x[r0 + i]) : 0.0;
            }
        }
        int32_t c[ITEMS];
        double a[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; k++) {              /* the indices and values first ... */
            const int64_t j = e0 + k * SPK_CUDA_BLOCK + tid;
            c[k] = ad_col(pcol, bits, j, j < e1);
            a[k] = j < e1 ? (double)spk_ldm<true>(&Ax[j]) : 0.0;
        }
        if (TS > 0) {
#pragma unroll
            for (int k = 0; k < XT; k++)
                if (k * SPK_CUDA_BLOCK + tid < nt)
                    s_x[k * SPK_CUDA_BLOCK + tid] = xt[k];
            __syncthreads();
        }
#pragma unroll
        for (int k = 0; k < ITEMS; k++)                /* ... then every gather in flight */
            if (c[k] >= 0) {
                const unsigned u = (unsigned)((int64_t)c[k] - r0);
                const double xv = TS > 0 && u < (unsigned)nt ? s_x[u] : __ldcg(&x[c[k]]);
                s_prod[k * SPK_CUDA_BLOCK + tid] = a[k] * xv;
            }
        for (int i = tid; i <= nr; i += SPK_CUDA_BLOCK) {
            const int end = i == 0 ? 0 : (int)__ldg(&rend[r0 + i - 1]);
            s_ptr[i] = end;
            if (SUMS == SPK_CSR_SUMS_AUTO && i > 0)
                skew |= end - (i == 1 ? 0 : (int)__ldg(&rend[r0 + i - 2])) >
                        SPK_CSR_ADAPT_SEG_TRIPS * g;
        }
    }
    if (SUMS == SPK_CSR_SUMS_ROWS) {    /* the row loop's kernel: no test (the header) */
        (void)skew;
        __syncthreads();
    } else if (__syncthreads_or(skew)) {                               /* block-uniform */
        ad_segmented_sums<ITEMS>(s_prod, s_ptr, nr, r0, s_wv, s_wf, alpha, beta, y);
        return;
    }

    /* the row loop advances a whole warp at a time so that every lane reaches the shuffles */
    if (SUMS == SPK_CSR_SUMS_ROWS)
        while (g > 1 && g * nr > SPK_CUDA_BLOCK)
            g >>= 1;
    const int lane = tid & (g - 1);
    const int rows_per_pass = SPK_CUDA_BLOCK / g;
    for (int base = (tid & ~31) / g; base < nr; base += rows_per_pass) {   /* warp-uniform */
        const int q = base + (tid & 31) / g;
        double s = 0.0;
        if (q < nr)
            for (int k = s_ptr[q] + lane; k < s_ptr[q + 1]; k += g)
                s += s_prod[k];
        for (int off = g / 2; off > 0; off >>= 1)
            s += __shfl_down_sync(SPK_FULL_MASK, s, off, g);
        if (lane == 0 && q < nr)
            y[r0 + q] = spk_spmv_out(alpha, s, beta, y, r0 + q);
    }
}

/* ---- launcher ------------------------------------------------------------------------------ */

template <class V>
static spk_status adaptive_launch(spk_context *ctx, const spk_csr_adaptive *M,
                                  const int32_t *d_col, const V *d_val, double alpha,
                                  const double *x, double beta, double *y)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || M->nblk == 0)                      /* no rows: never launch a zero-size grid */
        return st;
#define SPK_AD_LAUNCH(TS, SUMS)                                                            \
    csr_adaptive_kernel<V, TS, SUMS><<<(unsigned)M->nblk, SPK_CUDA_BLOCK, 0, cs->stream>>>(      \
        M->blk, M->lfirst, M->count, M->part, M->rend, d_col, M->pcol, M->bits, d_val, x,      \
        M->ncols, alpha, beta, y)
#define SPK_AD_LAUNCH_SUMS(TS)                                                             \
    do {                                                                                   \
        if (M->sums == SPK_CSR_SUMS_ROWS)                                                  \
            SPK_AD_LAUNCH(TS, SPK_CSR_SUMS_ROWS);                                          \
        else if (M->sums == SPK_CSR_SUMS_SEGMENTED)                                        \
            SPK_AD_LAUNCH(TS, SPK_CSR_SUMS_SEGMENTED);                                     \
        else                                                                               \
            SPK_AD_LAUNCH(TS, SPK_CSR_SUMS_AUTO);                                          \
    } while (0)
    if (M->tile)
        SPK_AD_LAUNCH_SUMS(SPK_CSR_ADAPT_TILE);
    else
        SPK_AD_LAUNCH_SUMS(0);
#undef SPK_AD_LAUNCH_SUMS
#undef SPK_AD_LAUNCH
    return spk_cuda_launched(ctx, "csr_adaptive_kernel");
}

spk_status spk_csr_adaptive_spmv(spk_context *ctx, const spk_csr_adaptive *M,
                                 const int64_t *d_rowptr, const int32_t *d_col,
                                 const double *d_val, double alpha, const double *x,
                                 double beta, double *y)
{
    (void)d_rowptr;
    return adaptive_launch(ctx, M, d_col, d_val, alpha, x, beta, y);
}

spk_status spk_csr_adaptive_spmv(spk_context *ctx, const spk_csr_adaptive *M,
                                 const int64_t *d_rowptr, const int32_t *d_col,
                                 const float *d_val, double alpha, const double *x,
                                 double beta, double *y)
{
    (void)d_rowptr;
    return adaptive_launch(ctx, M, d_col, d_val, alpha, x, beta, y);
}

/* ---- setup (host) --------------------------------------------------------------------------- */

void spk_csr_adaptive_free(spk_csr_adaptive *M)
{
    if (!M)
        return;
    (void)cudaFree(M->blk);
    (void)cudaFree(M->lfirst);
    (void)cudaFree(M->count);
    (void)cudaFree(M->part);
    (void)cudaFree(M->pcol);
    (void)cudaFree(M->rend);
    memset(M, 0, sizeof *M);
}

spk_status spk_csr_adaptive_setup(spk_context *ctx, const spk_csr *A, spk_csr_adaptive *M)
{
    memset(M, 0, sizeof *M);
    const int64_t n = A->nrows, NB = SPK_CSR_ADAPT_NB, PIECE = SPK_CSR_ADAPT_PIECE;
    const int64_t *Ap = A->rowptr;
    if (n == 0)
        return SPK_OK;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    /* the partition (spk_row_blocks_walk, src/csr.c, checked by test_csr): count, then fill */
    spk_row_blocks c, f;
    spk_row_blocks_walk(Ap, n, NB, PIECE, 0, &c, NULL, NULL);
    const int64_t nlong = c.nlong, npieces = c.npieces, nblk = c.npieces + c.nstream;
    if (nblk > 0x7fffffff)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "csr-cuda row blocks: %lld blocks, more than "
                        "a grid holds", (long long)nblk);
    uint32_t *pw = NULL;
    uint16_t *re = NULL;
    int64_t *blk = (int64_t *)spk_malloc(ctx, 4 * (size_t)nblk, sizeof *blk);
    int64_t *lfirst = (int64_t *)spk_malloc(ctx, (size_t)nlong + 1, sizeof *lfirst);
    if (!blk || !lfirst) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "csr-cuda row blocks: %lld blocks: out of host memory",
                      (long long)nblk);
        goto out;
    }
    spk_row_blocks_walk(Ap, n, NB, PIECE, npieces, &f, blk, lfirst);
    if (memcmp(&c, &f, sizeof c) != 0) {
        st = spk_fail(ctx, SPK_ERR_ARG, "csr-cuda row blocks: internal count mismatch");
        goto out;
    }
    M->nblk = nblk;
    M->nlong = nlong;
    M->ncols = A->ncols;
    M->tile = c.stream_nnz >= SPK_CSR_ADAPT_TILE_LEN * c.stream_rows;
    M->sums = ctx->tune.csr_sums;
    if (M->sums == SPK_CSR_SUMS_AUTO) {
        /* segmented sums only where the grid is one wave (the header) */
        int per_sm = 0;
        if ((st = spk_cuda(ctx, cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                    &per_sm,
                                    M->tile ? csr_adaptive_kernel<double, SPK_CSR_ADAPT_TILE,
                                                                  SPK_CSR_SUMS_AUTO>
                                            : csr_adaptive_kernel<double, 0, SPK_CSR_SUMS_AUTO>,
                                    SPK_CUDA_BLOCK, 0),
                                "csr-cuda row blocks: occupancy")))
            goto out;
        if (nblk > (int64_t)per_sm * cs->sm_count)
            M->sums = SPK_CSR_SUMS_ROWS;
    }
    if ((st = spk_cuda_upload_new(ctx, &M->blk, blk, 4 * (size_t)nblk * sizeof *blk,
                                  "CSR row-block descriptors")) ||
        (st = spk_cuda_upload_new(ctx, &M->lfirst, lfirst, ((size_t)nlong + 1) * sizeof *lfirst,
                                  "CSR row-block long-row pieces")))
        goto out;
    if (npieces > 0 &&
        ((st = spk_cuda_malloc(ctx, &M->count, (size_t)nlong * sizeof(uint32_t),
                               "CSR row-block piece counters")) ||
         (st = spk_cuda_malloc(ctx, &M->part, (size_t)npieces * sizeof(double),
                               "CSR row-block piece sums")) ||
         (st = spk_cuda(ctx, cudaMemsetAsync(M->count, 0, (size_t)nlong * sizeof(uint32_t),
                                             cs->stream), "CSR row-block piece counters"))))
        goto out;
    {
        /* bit-packed columns, bits = those of ncols - 1, padded by a block past the end; and
         * each row's end offset from its stream block's first nonzero (< 2^16) */
        int bits = 1;
        while (bits < 32 && ((int64_t)1 << bits) < A->ncols)
            bits++;
        const size_t words = (size_t)(((A->nnz + NB) * (int64_t)bits + 31) / 32 + 2);
        pw = (uint32_t *)spk_malloc(ctx, words, sizeof *pw);
        re = (uint16_t *)spk_calloc(ctx, (size_t)n, sizeof *re);
        if (!pw || !re) {
            st = spk_fail(ctx, SPK_ERR_NOMEM, "csr-cuda packed columns: out of host memory");
            goto out;
        }
        spk_pack_bits(A->colind, A->nnz, bits, pw, words);   /* OpenMP, src/csr.c */
        for (int64_t b = npieces; b < nblk; b++)
            for (int64_t i = blk[4 * b]; i < blk[4 * b + 1]; i++)
                re[i] = (uint16_t)(Ap[i + 1] - blk[4 * b + 2]);
        M->bits = bits;
        if ((st = spk_cuda_upload_new(ctx, &M->pcol, pw, words * sizeof *pw,
                                      "CSR packed column indices")) ||
            (st = spk_cuda_upload_new(ctx, &M->rend, re, (size_t)n * sizeof *re,
                                      "CSR row-block row ends")))
            goto out;
    }
    /* The host arrays are freed below: wait until the copies out of them are done. */
    st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "csr-cuda row-block upload");
out:
    spk_free(blk);
    spk_free(lfirst);
    spk_free(pw);
    spk_free(re);
    if (st)
        spk_csr_adaptive_free(M);
    return st;
}
