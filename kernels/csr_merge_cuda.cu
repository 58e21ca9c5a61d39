/* kernels/csr_merge_cuda.cu -- merge-path CSR SpMV, kept beside the row blocks
 * (csr_adaptive_cuda.cu) for comparison, SPK_CSR_KERNEL=merge (Merrill & Garland,
 * "Merge-based Parallel Sparse Matrix-Vector Multiplication", SC'16; CUB
 * agent_spmv_orig.cuh). The SpMV is read as a merge of two sorted lists, the row ends
 * Ap[1..n] and the nonzero indices 0..nnz-1: walking the merge, an index is "add a_ij x_j to
 * the open row" and a row end is "the open row is done". The path has n + nnz items; cutting
 * it into equal tiles gives every block the same work whatever the row lengths, where a row
 * per (sub)warp leaves lanes idle beside short rows and waits on long ones.
 *
 *  - setup (host, once per pattern): tile t covers path items [t T, (t+1) T), T =
 *    SPK_CSR_MERGE_TILE; its start coordinate (row, nonzero) comes from a binary search along
 *    that diagonal. A row whose items fall in more than one tile is listed with its tiles.
 *  - csr_merge_kernel, one block per tile: (1) the tile's products a_ij x_j into shared memory
 *    (coalesced, SPK_CSR_MERGE_ITEMS independent loads per thread in flight) and its row ends
 *    beside them; (2) each thread finds its start on the path (binary search in shared
 *    memory) and walks SPK_CSR_MERGE_ITEMS items, summing rows; (3) the partial sum each thread
 *    leaves open is carried into the next threads' rows by a segmented scan over the block
 *    (warp shuffles, then the 8 warp totals in order); (4) the finished rows are staged in
 *    shared memory and written to y coalesced, y = alpha s + beta y. A tile writes no row it
 *    shares with another tile: it leaves the partial sum of its first row (`head`) and of its
 *    last, open row (`tail`).
 *  - csr_merge_fix_kernel, one warp per shared row: s = tails of the tiles before + head of
 *    the tile that ends it, in a fixed order; y = alpha s + beta y. With the fused dot (CG) it
 *    also sums the per-tile x'y partials and ends in spk_last_block_sum: the merge kernel has
 *    one block per tile, more than a resident wave, so the dot's last step lives here.
 *
 * No atomics: every sum has a fixed order (the walk, the scan tree, the tile order), so the
 * result has the same bits on every call. The row offsets stay int64 and every global nonzero
 * position is int64; inside a tile positions are int32 offsets (at most T). The layout holds
 * only pattern data (tile coordinates, shared rows): value updates leave it valid.
 *
 * Cost per SpMV: 12 bytes per entry + 8 per row of the matrix (as CSR-vector), a gather of x
 * per entry, y written once (read when beta != 0); per tile of T = 1792 path items, 16 bytes
 * of coordinates, 16-24 of partial sums and 16 per shared row: ~0.26% of the matrix's bytes.
 * A second launch (the fix-up) whenever a row crosses a tile edge, which is almost always. */
#include "cuda_common.h"

#include <string.h>

/* ---- the tile kernel --------------------------------------------------------------------- */

/* Items of one thread's walk: 7 x 256 = 1792 per tile. Odd, so that threads reading products
 * ~ITEMS apart in shared memory land on different banks (CUB's tunings are odd for the same
 * reason). Not yet tuned on the H200: -DSPK_CSR_MERGE_ITEMS=N (with N x 256 x 8 bytes of
 * shared memory per buffer, two buffers, under the 48 KB static limit: N <= 11). */
#ifndef SPK_CSR_MERGE_ITEMS
#define SPK_CSR_MERGE_ITEMS 7
#endif
#define SPK_CSR_MERGE_TILE (SPK_CSR_MERGE_ITEMS * SPK_CUDA_BLOCK)     /* path items per tile */
#define SPK_CSR_MERGE_WARPS (SPK_CUDA_BLOCK / 32)
/* Resident blocks per SM the registers must allow: 6 x 28.8 KB of shared memory fit beside a
 * useful L1, and 6 x 256 threads leave <= 40 registers, which the kernel needs without spills
 * (unbounded, nvcc took 64: 4 blocks). */
#ifndef SPK_CSR_MERGE_BLOCKS_PER_SM
#define SPK_CSR_MERGE_BLOCKS_PER_SM 6
#endif

/* Block-wide inclusive scan of (key, v) by key: the result is the sum of v over the run of
 * equal keys that ends at this thread. Keys never decrease with threadIdx.x. Returns that
 * sum; *before gets the same for the previous thread (0 for thread 0). One barrier inside;
 * the caller puts another between two calls (s_* are rewritten by the next). */
__device__ __forceinline__ double merge_block_scan(int key, double v, double *before)
{
    __shared__ int s_key[SPK_CSR_MERGE_WARPS], s_full[SPK_CSR_MERGE_WARPS];
    __shared__ double s_val[SPK_CSR_MERGE_WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    /* within the warp: after the step with offset `off`, v covers the last 2 off lanes of
     * this thread's run (a run is contiguous, so a lane with another key ends it) */
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const double v_up = __shfl_up_sync(SPK_FULL_MASK, v, off);
        const int key_up = __shfl_up_sync(SPK_FULL_MASK, key, off);
        if (lane >= off && key_up == key)
            v = v_up + v;
    }
    const int key0 = __shfl_sync(SPK_FULL_MASK, key, 0);
    if (lane == 31) {
        s_key[warp] = key;
        s_val[warp] = v;
        s_full[warp] = key0 == key;          /* the run spans the whole warp */
    }
    __syncthreads();
    /* across warps, in order: the run ending at the last thread of warp w - 1 */
    int pk = -1;
    double pv = 0.0;
    for (int w = 0; w < warp; w++) {
        pv = s_full[w] && s_key[w] == pk ? pv + s_val[w] : s_val[w];
        pk = s_key[w];
    }
    if (key0 == key && pk == key)
        v = pv + v;
    const double up = __shfl_up_sync(SPK_FULL_MASK, v, 1);
    *before = lane == 0 ? pv : up;
    return v;
}

/* One block per tile (grid-stride over tiles). coord: tile t starts at row coord[t] and
 * nonzero coord[ntiles + 1 + t]; the tile's rows are those whose end item it holds. DOT:
 * y = A x (alpha 1, beta 0) and dotp[t] = sum of x_i y_i over the rows the tile wrote. */
template <class V, bool DOT>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK, SPK_CSR_MERGE_BLOCKS_PER_SM)
csr_merge_kernel(int64_t ntiles, const int64_t *__restrict__ coord,
                 const int64_t *__restrict__ Ap, const int32_t *__restrict__ Aj,
                 const V *__restrict__ Ax, const double *__restrict__ x, double alpha,
                 double beta, double *__restrict__ y, double *__restrict__ head,
                 double *__restrict__ tail, double *__restrict__ dotp, const int32_t *skip)
{
    /* products (<= TILE doubles) then row ends (int32 offsets from the tile's first nonzero,
     * plus one sentinel): nnz_t + nrows_t = the tile's items <= TILE, so 8 TILE + 8 bytes */
    __shared__ __align__(8) unsigned char s_items[8 * SPK_CSR_MERGE_TILE + 8];
    __shared__ double s_row[SPK_CSR_MERGE_TILE];            /* finished rows, staged */
    if (DOT && skip && *skip)
        return;                                             /* grid-uniform */
    const int tid = threadIdx.x;
    const int64_t *row_of = coord, *nz_of = coord + ntiles + 1;

    for (int64_t t = blockIdx.x; t < ntiles; t += gridDim.x) {        /* block-uniform */
        const int64_t row0 = __ldg(&row_of[t]), nz0 = __ldg(&nz_of[t]);
        const int nrt = (int)(__ldg(&row_of[t + 1]) - row0);   /* rows ending in the tile */
        const int nnt = (int)(__ldg(&nz_of[t + 1]) - nz0);     /* its nonzeros            */
        const int len = nrt + nnt;
        /* the first row began in an earlier tile: its sum is finished by the fix-up */
        const bool open = nz0 > __ldg(&Ap[row0]);
        double *prod = (double *)s_items;
        int *re = (int *)(s_items + 8 * (size_t)nnt);

        /* (1) a_ij x_j for the tile's nonzeros and the row ends, in two waves of independent
         * loads: the columns and the row ends, then the values and the gathers of x. Each
         * thread has ITEMS loads of each kind in flight; positions past the tile load its
         * last nonzero again (no branch between the loads) and store nothing. */
        int32_t c[SPK_CSR_MERGE_ITEMS] = {0};
        if (nnt > 0) {                                        /* block-uniform */
#pragma unroll
            for (int q = 0; q < SPK_CSR_MERGE_ITEMS; q++)
                c[q] = spk_ldm<true>(&Aj[nz0 + min(tid + q * SPK_CUDA_BLOCK, nnt - 1)]);
        }
        for (int k = tid; k < nrt; k += SPK_CUDA_BLOCK)
            re[k] = (int)(__ldg(&Ap[row0 + 1 + k]) - nz0);
        if (nnt > 0) {                                        /* block-uniform */
            double p[SPK_CSR_MERGE_ITEMS];
#pragma unroll
            for (int q = 0; q < SPK_CSR_MERGE_ITEMS; q++)
                p[q] = (double)spk_ldm<true>(&Ax[nz0 + min(tid + q * SPK_CUDA_BLOCK, nnt - 1)]) * __ldg(&x[c[q]]);
#pragma unroll
            for (int q = 0; q < SPK_CSR_MERGE_ITEMS; q++)
                if (tid + q * SPK_CUDA_BLOCK < nnt)
                    prod[tid + q * SPK_CUDA_BLOCK] = p[q];
        }
        if (tid == 0)
            re[nrt] = nnt;            /* the row left open at the tile's end never ends here */
        __syncthreads();

        /* (2) this thread's start on the path: the split of diagonal `diag` between row ends
         * (x, taken first on a tie: a row ending at j ends before nonzero j) and nonzeros (y) */
        const int diag = min(tid * SPK_CSR_MERGE_ITEMS, len);
        int lo = max(diag - nnt, 0), hi = min(diag, nrt);
        while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (re[mid] <= diag - mid - 1)
                lo = mid + 1;
            else
                hi = mid;
        }
        const int i0 = lo;
        int i = lo, j = diag - lo;
        const int items = min(SPK_CSR_MERGE_ITEMS, len - diag);
        double run = 0.0;
        int row_end = re[i];
#pragma unroll
        for (int q = 0; q < SPK_CSR_MERGE_ITEMS; q++) {
            if (q < items) {
                if (j < row_end) {                   /* a nonzero of row i */
                    run += prod[j];
                    j++;
                } else {                             /* row i ends */
                    s_row[i] = run;
                    run = 0.0;
                    i++;
                    row_end = re[i];
                }
            }
        }

        /* (3) carry the open sums: `before` is what the threads before this one summed of
         * row i0; the block's last thread holds the tile's part of its last, open row */
        double before;
        const double last = merge_block_scan(i, run, &before);
        if (i > i0)
            s_row[i0] = before + s_row[i0];
        if (tid == SPK_CUDA_BLOCK - 1)
            tail[t] = last;
        __syncthreads();

        /* (4) the finished rows, coalesced; an open first row goes to the fix-up instead */
        if (open && nrt > 0 && tid == 0)
            head[t] = s_row[0];
        double d[1] = {0.0};
        for (int k = (open ? 1 : 0) + tid; k < nrt; k += SPK_CUDA_BLOCK) {
            const int64_t row = row0 + k;
            const double out = spk_spmv_out(alpha, s_row[k], beta, y, row);
            y[row] = out;
            if (DOT)
                d[0] += x[row] * out;
        }
        if (DOT) {
            spk_block_sum<1>(d);                     /* its barriers end the tile too */
            if (tid == 0)
                dotp[t] = d[0];
        } else {
            __syncthreads();                         /* s_items, s_row: the next tile's */
        }
    }
}

/* ---- the fix-up of rows shared by tiles ----------------------------------------------------- */

/* Shared row k: its first tile fix[k], its last fix[nfix + k]; its index is the start row of
 * the last. One warp per shared row (a dense row may cross thousands of tiles): lane l sums
 * the tails of tiles first + l, first + l + 32, ... before the last, the lanes' sums are
 * added by the fixed shuffle tree, then the last tile's head. DOT: also sink->out = x'y, with
 * the merge kernel's per-tile partials (a resident grid, spk_last_block_sum). */
template <bool DOT>
__global__ void SPK_RESIDENT_BOUNDS
csr_merge_fix_kernel(int64_t nfix, const int64_t *__restrict__ fix,
                     const int64_t *__restrict__ coord, const double *head, const double *tail,
                     double alpha, const double *x, double beta, double *y, int64_t ntiles,
                     const double *dotp, spk_dot_sink sink)
{
    if (DOT && sink.skip && *sink.skip)
        return;                                             /* grid-uniform */
    const int lane = threadIdx.x & 31;
    const int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    double d[1] = {0.0};
    for (int64_t k = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; k < nfix;
         k += nwarps) {                                     /* warp-uniform */
        const int64_t t0 = __ldg(&fix[k]), t1 = __ldg(&fix[nfix + k]);
        double s = 0.0;
        for (int64_t t = t0 + lane; t < t1; t += 32)
            s += tail[t];
        s = spk_warp_sum(s);
        if (lane == 0) {
            const int64_t row = __ldg(&coord[t1]);
            const double out = spk_spmv_out(alpha, s + head[t1], beta, y, row);
            y[row] = out;
            if (DOT)
                d[0] += x[row] * out;
        }
    }
    if (DOT) {
        for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < ntiles;
             t += (int64_t)gridDim.x * blockDim.x)
            d[0] += dotp[t];
        if (spk_last_block_sum<1>(d, sink.part, sink.count) && threadIdx.x == 0)
            *sink.out = d[0];
    }
}

/* ---- launchers ------------------------------------------------------------------------------ */

template <class V>
static spk_status merge_launch(spk_context *ctx, const spk_csr_merge *M, const int64_t *Ap,
                               const int32_t *Aj, const V *Ax, double alpha,
                               const double *x, double beta, double *y,
                               const spk_dot_sink *sink)
{
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (M->nrows == 0)                       /* no tile: never launch a zero-size grid */
        return sink ? spk_cuda_dot_sink(ctx, 0, x, y, sink) : SPK_OK;
    const unsigned grid = spk_cuda_grid(cs, M->ntiles, 1);
    if (sink)
        csr_merge_kernel<V, true><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            M->ntiles, M->coord, Ap, Aj, Ax, x, 1.0, 0.0, y, M->head, M->tail, M->dotp,
            sink->skip);
    else
        csr_merge_kernel<V, false><<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            M->ntiles, M->coord, Ap, Aj, Ax, x, alpha, beta, y, M->head, M->tail, NULL, NULL);
    if ((st = spk_cuda_launched(ctx, "csr_merge_kernel")))
        return st;
    if (sink) {
        /* always (a block at least): the dot's total is written here, even with no shared
         * row; a warp per shared row, the tiles' partials grid-strided */
        const unsigned fgrid = spk_cuda_red_grid(cs, M->nfix, SPK_CUDA_BLOCK / 32);
        csr_merge_fix_kernel<true><<<fgrid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            M->nfix, M->fix, M->coord, M->head, M->tail, 1.0, x, 0.0, y, M->ntiles, M->dotp,
            *sink);
    } else {
        if (M->nfix == 0)
            return SPK_OK;
        const unsigned fgrid = spk_cuda_grid(cs, M->nfix, SPK_CUDA_BLOCK / 32);
        csr_merge_fix_kernel<false><<<fgrid, SPK_CUDA_BLOCK, 0, cs->stream>>>(
            M->nfix, M->fix, M->coord, M->head, M->tail, alpha, x, beta, y, M->ntiles, NULL,
            spk_dot_sink{});
    }
    return spk_cuda_launched(ctx, "csr_merge_fix_kernel");
}

spk_status spk_csr_merge_spmv(spk_context *ctx, const spk_csr_merge *M, const int64_t *d_rowptr,
                              const int32_t *d_col, const double *d_val, double alpha,
                              const double *x, double beta, double *y)
{
    return merge_launch(ctx, M, d_rowptr, d_col, d_val, alpha, x, beta, y, NULL);
}

spk_status spk_csr_merge_spmv_dot(spk_context *ctx, const spk_csr_merge *M,
                                  const int64_t *d_rowptr, const int32_t *d_col,
                                  const double *d_val, const double *x, double *y,
                                  const spk_dot_sink *sink)
{
    return merge_launch(ctx, M, d_rowptr, d_col, d_val, 1.0, x, 0.0, y, sink);
}

/* The same over fp32 values (csr32-cuda). */
spk_status spk_csr_merge_spmv(spk_context *ctx, const spk_csr_merge *M, const int64_t *d_rowptr,
                              const int32_t *d_col, const float *d_val, double alpha,
                              const double *x, double beta, double *y)
{
    return merge_launch(ctx, M, d_rowptr, d_col, d_val, alpha, x, beta, y, NULL);
}

spk_status spk_csr_merge_spmv_dot(spk_context *ctx, const spk_csr_merge *M,
                                  const int64_t *d_rowptr, const int32_t *d_col,
                                  const float *d_val, const double *x, double *y,
                                  const spk_dot_sink *sink)
{
    return merge_launch(ctx, M, d_rowptr, d_col, d_val, 1.0, x, 0.0, y, sink);
}

/* ---- setup (host) --------------------------------------------------------------------------- */

/* The merge-path coordinate on diagonal `diag`: row ends taken (= the row it is in) and
 * nonzeros taken. The same search as the kernel's, over the whole matrix. */
static void merge_coord(const int64_t *Ap, int64_t nrows, int64_t nnz, int64_t diag,
                        int64_t *row, int64_t *nz)
{
    int64_t lo = diag > nnz ? diag - nnz : 0, hi = diag < nrows ? diag : nrows;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (Ap[mid + 1] <= diag - mid - 1)
            lo = mid + 1;
        else
            hi = mid;
    }
    *row = lo;
    *nz = diag - lo;
}

void spk_csr_merge_free(spk_csr_merge *M)
{
    if (!M)
        return;
    (void)cudaFree(M->coord);
    (void)cudaFree(M->fix);
    (void)cudaFree(M->part);
    memset(M, 0, sizeof *M);
}

spk_status spk_csr_merge_setup(spk_context *ctx, const spk_csr *A, spk_csr_merge *M)
{
    memset(M, 0, sizeof *M);
    M->nrows = A->nrows;
    if (A->nrows == 0)
        return SPK_OK;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    const int64_t T = SPK_CSR_MERGE_TILE, n = A->nrows, nnz = A->nnz;
    const int64_t *Ap = A->rowptr;
    const int64_t ntiles = (n + nnz + T - 1) / T;
    /* row i's items run from diagonal i + Ap[i] (its first nonzero, or its end when empty)
     * to i + Ap[i+1] (its end): it is shared when they fall in different tiles */
    int64_t nfix = 0;
    for (int64_t i = 0; i < n; i++)
        nfix += (i + Ap[i]) / T < (i + Ap[i + 1]) / T;
    M->ntiles = ntiles;
    M->nfix = nfix;

    int64_t *coord = (int64_t *)spk_malloc(ctx, 2 * ((size_t)ntiles + 1), sizeof *coord);
    int64_t *fix = nfix ? (int64_t *)spk_malloc(ctx, 2 * (size_t)nfix, sizeof *fix) : NULL;
    if (!coord || (nfix && !fix)) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "csr-cuda merge path: %lld tiles: out of host memory",
                      (long long)ntiles);
        goto out;
    }
    for (int64_t t = 0; t <= ntiles; t++) {
        const int64_t diag = t * T < n + nnz ? t * T : n + nnz;
        merge_coord(Ap, n, nnz, diag, &coord[t], &coord[ntiles + 1 + t]);
    }
    for (int64_t i = 0, k = 0; i < n; i++) {
        const int64_t t0 = (i + Ap[i]) / T, t1 = (i + Ap[i + 1]) / T;
        if (t0 < t1) {
            fix[k] = t0;
            fix[nfix + k] = t1;
            k++;
        }
    }
    if ((st = spk_cuda_upload_new(ctx, &M->coord, coord, 2 * ((size_t)ntiles + 1) * sizeof *coord,
                                  "CSR merge-path tile coordinates")) ||
        (nfix && (st = spk_cuda_upload_new(ctx, &M->fix, fix, 2 * (size_t)nfix * sizeof *fix,
                                           "CSR merge-path shared rows"))) ||
        (st = spk_cuda_malloc(ctx, &M->part, 3 * (size_t)ntiles * sizeof(double),
                              "CSR merge-path partial sums")))
        goto out;
    M->head = M->part;
    M->tail = M->part + ntiles;
    M->dotp = M->part + 2 * ntiles;
    /* The host arrays are freed below: wait until the copies out of them are done. */
    st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "csr-cuda merge-path upload");
out:
    spk_free(coord);
    spk_free(fix);
    if (st)
        spk_csr_merge_free(M);
    return st;
}
