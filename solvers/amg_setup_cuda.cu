/* solvers/amg_setup_cuda.cu -- the smoothed-aggregation hierarchy built on the GPU
 * (spk_amg_build_device, solvers/amg.h): the steps of solvers/amg_setup.c, level by level, on
 * the context's stream, with MIS(2) aggregation in place of the host's sequential standard
 * aggregation:
 *   strength     one thread a node merges its bs rows as the host does (the same sums in the
 *                same order: this file is built without FMA contraction, so the graph and T
 *                have the host's bits);
 *   aggregates   the MIS(2) rounds and joins of solvers/amg.h, one kernel a step;
 *   T            the nodes sorted by aggregate (CUB's stable radix sort keeps node order),
 *                one thread an aggregate runs the host's modified Gram-Schmidt in T's values;
 *   rho          20 Lanczos steps (30 power steps when A is not symmetric) from the host's
 *                start vector, dots by cuBLAS;
 *   S, P, R, Ac  S = I - omega D^-1 A on A's pattern with its diagonal; P = S T, A P and
 *                R (A P) by cuSPARSE's SpGEMM (its default algorithm, deterministic), R = P^T
 *                by cuSPARSE's csr2csc. Their rounding differs from the host's products; their
 *                patterns are the same.
 * Row offsets are 32-bit (cuSPARSE's SpGEMM takes one index type), so a level of 2^31 entries
 * or more is refused with SPK_ERR_UNSUPPORTED and the caller builds on the host. What the
 * V-cycle and a refresh need (each level's A, P, R, aggregates, B, D^-1 and rho) is copied
 * into the host hierarchy, where the coarsest level's inverse is made. */
#include "../kernels/cuda_common.h"
#include "amg.h"

#include <cub/cub.cuh>
#include <cusparse.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AMG_DEV_MAX_BS 8           /* a node's rows merged in registers                     */

typedef struct dcsr {
    int64_t  m, n, nnz;
    int32_t *rp, *ci;
    double  *v;
} dcsr;

typedef struct dev_build {
    spk_context      *ctx;
    spk_cuda_state   *cs;
    cudaStream_t      s;
    cusparseHandle_t  h;
    void             *tmp;         /* CUB's temporary storage (grows)                       */
    size_t            tmp_bytes;
    double            peak;        /* the largest SpGEMM working memory                      */
    double            bound;       /* what a product's working memory may take (bytes)       */
    int               chunked;     /* products made by the chunked algorithm                 */
    double            xfer_s;      /* the level matrices' copies between host and device     */
    double            up_s;        /* of which the uploads (A's)                             */
    int               from_layout; /* level 0 taken from the matrix's device layout          */
    double            step_s[SPK_AMG_DEV_STEPS];   /* seconds per step (amg.h), all levels  */
    double            mark;        /* when the step being timed began                       */
} dev_build;

static spk_status cusp(spk_context *ctx, cusparseStatus_t s, const char *what)
{
    if (s == CUSPARSE_STATUS_SUCCESS)
        return SPK_OK;
    (void)cudaGetLastError();
    return spk_fail(ctx, SPK_ERR_CUDA, "AMG setup on the GPU: %s: cuSPARSE: %s (status %d)",
                    what, cusparseGetErrorString(s), (int)s);
}

static spk_status cu(dev_build *B, cudaError_t e, const char *what)
{
    return spk_cuda(B->ctx, e, "AMG setup on the GPU: %s", what);
}

static spk_status launched(dev_build *B, const char *k) { return spk_cuda_launched(B->ctx, k); }

static unsigned blocks(int64_t n)
{
    const int64_t b = (n + SPK_CUDA_BLOCK - 1) / SPK_CUDA_BLOCK;
    return (unsigned)(b > 0 ? b : 1);
}

template <class T> static spk_status dalloc(dev_build *B, T **p, int64_t count, const char *what)
{
    return spk_cuda_malloc(B->ctx, p, (size_t)(count > 0 ? count : 1) * sizeof(T), what);
}

static void dfree(void *p)
{
    if (p)
        (void)cudaFree(p);
}

static void dcsr_free(dcsr *A)
{
    dfree(A->rp);
    dfree(A->ci);
    dfree(A->v);
    memset(A, 0, sizeof *A);
}

static spk_status dcsr_alloc(dev_build *B, int64_t m, int64_t n, int64_t nnz, dcsr *A)
{
    memset(A, 0, sizeof *A);
    A->m = m;
    A->n = n;
    A->nnz = nnz;
    spk_status st;
    if ((st = dalloc(B, &A->rp, m + 1, "AMG level row offsets")) ||
        (st = dalloc(B, &A->ci, nnz, "AMG level columns")) ||
        (st = dalloc(B, &A->v, nnz, "AMG level values")))
        dcsr_free(A);
    return st;
}

static spk_status wait(dev_build *B) { return cu(B, cudaStreamSynchronize(B->s), "stream"); }

/* The step that ends here: its work done (the stream drained), its time to step_s[step]. */
static spk_status step_done(dev_build *B, int step)
{
    const spk_status st = wait(B);
    const double t = spk_now();
    B->step_s[step] += t - B->mark;
    B->mark = t;
    return st;
}

/* Device to host; the host pages faulted in first by all threads (spk_touch_pages: the copy
 * overwrites them all, and into untouched pageable memory it faults them one by one). */
static spk_status get(dev_build *B, void *host, const void *dev, size_t bytes)
{
    if (bytes >= ((size_t)1 << 20))
        spk_touch_pages(host, bytes);
    spk_status st = cu(B, cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, B->s), "copy");
    return st ? st : wait(B);
}

static spk_status put(dev_build *B, void *dev, const void *host, size_t bytes)
{
    spk_status st = cu(B, cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, B->s), "copy");
    return st ? st : wait(B);
}

/* Host CSR (64-bit offsets) to the device (32-bit). */
static spk_status dcsr_upload(dev_build *B, const spk_csr *h, dcsr *A)
{
    const double t0 = spk_now();
    spk_status st = dcsr_alloc(B, h->nrows, h->ncols, h->nnz, A);
    if (st)
        return st;
    int32_t *rp = (int32_t *)spk_malloc(B->ctx, (size_t)h->nrows + 1, sizeof *rp);
    if (!rp) {
        dcsr_free(A);
        return spk_fail(B->ctx, SPK_ERR_NOMEM, "AMG setup on the GPU: row offsets: out of memory");
    }
    for (int64_t i = 0; i <= h->nrows; i++)
        rp[i] = (int32_t)h->rowptr[i];
    if (!(st = put(B, A->rp, rp, ((size_t)h->nrows + 1) * sizeof *rp)) &&
        !(st = put(B, A->ci, h->colind, (size_t)h->nnz * sizeof *h->colind)))
        st = put(B, A->v, h->val, (size_t)h->nnz * sizeof *h->val);
    spk_free(rp);
    if (st)
        dcsr_free(A);
    B->xfer_s += spk_now() - t0;
    B->up_s += spk_now() - t0;
    return st;
}

/* Row offsets widened to the host CSR's 64 bits, on the device */
__global__ void k_widen(int64_t n, const int32_t *in, int64_t *out)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i];
}

static spk_status tmp_for(dev_build *B, size_t bytes);
static unsigned blocks(int64_t n);

/* The device CSR into a new host CSR: what 0, its row offsets only (h->colind NULL, the
 * values unset: a caller that fetches the columns when something reads them); 1, its pattern
 * (the values unset); 2, pattern and values. The offsets are widened on the device (in the
 * setup's scratch), so that they come down into the host's array with no pass over them
 * there. */
static spk_status dcsr_download(dev_build *B, const dcsr *A, spk_csr *h, int what)
{
    const double t0 = spk_now();
    spk_status st = spk_csr_alloc(B->ctx, A->m, A->n, A->nnz, h);
    if (st)
        return st;
    if (what == 0) {
        spk_free(h->colind);
        h->colind = NULL;
    }
    if (!(st = tmp_for(B, ((size_t)A->m + 1) * sizeof(int64_t)))) {
        k_widen<<<blocks(A->m + 1), SPK_CUDA_BLOCK, 0, B->s>>>(A->m + 1, A->rp,
                                                              (int64_t *)B->tmp);
        st = spk_cuda_launched(B->ctx, "k_widen");
    }
    if (!st && !(st = get(B, h->rowptr, B->tmp, ((size_t)A->m + 1) * sizeof *h->rowptr)) &&
        what > 0 && !(st = get(B, h->colind, A->ci, (size_t)A->nnz * sizeof *h->colind)) &&
        what > 1)
        st = get(B, h->val, A->v, (size_t)A->nnz * sizeof *h->val);
    if (st)
        spk_csr_free(h);
    B->xfer_s += spk_now() - t0;
    return st;
}

/* CUB's temporary storage of `bytes` (kept, grown). */
static spk_status tmp_for(dev_build *B, size_t bytes)
{
    if (bytes <= B->tmp_bytes && B->tmp)
        return SPK_OK;
    dfree(B->tmp);
    B->tmp = NULL;
    B->tmp_bytes = 0;
    spk_status st = spk_cuda_malloc(B->ctx, &B->tmp, bytes > 0 ? bytes : 1, "AMG setup scratch");
    if (!st)
        B->tmp_bytes = bytes;
    return st;
}

/* x[0 .. n] = exclusive prefix sums of x[0 .. n) (x[n] is overwritten); returns x[n]. */
static spk_status scan(dev_build *B, int32_t *x, int64_t n, int64_t *total)
{
    size_t bytes = 0;
    spk_status st = cu(B, cub::DeviceScan::ExclusiveSum(NULL, bytes, x, x, (int)(n + 1), B->s),
                       "scan");
    if (st || (st = tmp_for(B, bytes)))
        return st;
    if ((st = cu(B, cudaMemsetAsync(x + n, 0, sizeof *x, B->s), "scan")) ||
        (st = cu(B, cub::DeviceScan::ExclusiveSum(B->tmp, bytes, x, x, (int)(n + 1), B->s),
                 "scan")))
        return st;
    int32_t t = 0;
    st = get(B, &t, x + n, sizeof t);
    *total = t;
    return st;
}

/* M's layout where it is prepared on this GPU and can give A's CSR (csr_device), else NULL */
static const spk_spmv_backend *csr_layout(const dev_build *B, const spk_csr *A,
                                          const spk_matrix *M)
{
    const spk_spmv_backend *be = M && M->ctx_prepared == B->ctx ? M->be : NULL;
    if (!be || !be->csr_device || be->device != SPK_DEVICE_CUDA || !M->state ||
        M->csr.nrows != A->nrows || M->csr.nnz != A->nnz)
        return NULL;
    return be;
}

/* Level 0's device CSR: from M's layout where it can give it (spk_spmv_backend.csr_device: a
 * pass over device memory), else A's host CSR uploaded. */
static spk_status level0(dev_build *B, const spk_csr *A, const spk_matrix *M, dcsr *D0)
{
    const spk_spmv_backend *be = csr_layout(B, A, M);
    if (!be)
        return dcsr_upload(B, A, D0);
    const double t0 = spk_now();
    spk_status st = dcsr_alloc(B, A->nrows, A->ncols, A->nnz, D0);
    int64_t total = -1;
    if (!st && !(st = be->csr_device(B->ctx, M->state, 0, D0->rp, D0->ci, D0->v)) &&
        !(st = scan(B, D0->rp, A->nrows, &total)) && total == A->nnz)
        st = be->csr_device(B->ctx, M->state, 1, D0->rp, D0->ci, D0->v);
    if (!st && total == A->nnz && !(st = wait(B))) {
        B->from_layout = 1;
        B->xfer_s += spk_now() - t0;
        B->up_s += spk_now() - t0;
        return SPK_OK;
    }
    dcsr_free(D0);
    if (st && st != SPK_ERR_UNSUPPORTED)
        return st;
    return dcsr_upload(B, A, D0);    /* a twin's layout, or one that is not A's: the host's */
}

/* ---- strength of connection ------------------------------------------------------------- */

__global__ void k_node_diag(int64_t nn, int bs, const int32_t *rp, const int32_t *ci,
                            const double *v, double *cd)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nn;
         i += (int64_t)gridDim.x * blockDim.x) {
        double s = 0.0;
        for (int64_t r = i * bs; r < (i + 1) * bs; r++)
            for (int32_t p = rp[r]; p < rp[r + 1]; p++)
                if (ci[p] / bs == i)
                    s += v[p] * v[p];
        cd[i] = sqrt(s);
    }
}

/* Node i's strong neighbours (the host's strong_of, on the fly: a node's sum is tested when
 * the merge leaves it). out NULL: count only. */
__device__ int32_t strong_node(const int32_t *rp, const int32_t *ci, const double *v, int bs,
                               double theta, const double *cd, int64_t i, int32_t *out)
{
    int32_t pos[AMG_DEV_MAX_BS], end[AMG_DEV_MAX_BS];
    for (int c = 0; c < bs; c++) {
        pos[c] = rp[i * bs + c];
        end[c] = rp[i * bs + c + 1];
    }
    int32_t kept = 0, cur = -1;
    double sum = 0.0;
    for (;;) {
        int best = -1;
        int32_t bj = 0;
        for (int c = 0; c < bs; c++)
            if (pos[c] < end[c]) {
                const int32_t j = ci[pos[c]] / bs;
                if (best < 0 || j < bj) {
                    best = c;
                    bj = j;
                }
            }
        if (cur >= 0 && (best < 0 || bj != cur)) {
            if (theta == 0.0 || sqrt(sum) >= theta * sqrt(cd[i] * cd[cur])) {
                if (out)
                    out[kept] = cur;
                kept++;
            }
            cur = -1;
        }
        if (best < 0)
            break;
        const double a = v[pos[best]++];
        if (bj == i)
            continue;
        if (cur < 0) {
            cur = bj;
            sum = 0.0;
        }
        sum += a * a;
    }
    return kept;
}

__global__ void k_strength(int64_t nn, int bs, double theta, const int32_t *rp,
                           const int32_t *ci, const double *v, const double *cd,
                           const int32_t *gptr, int32_t *cnt_or_gcol)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nn;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (gptr)
            strong_node(rp, ci, v, bs, theta, cd, i, cnt_or_gcol + gptr[i]);
        else
            cnt_or_gcol[i] = strong_node(rp, ci, v, bs, theta, cd, i, NULL);
    }
}

/* ---- MIS(2) aggregation ------------------------------------------------------------------ */

__global__ void k_mis_init(int64_t nn, const int32_t *gptr, int8_t *state)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nn;
         i += (int64_t)gridDim.x * blockDim.x)
        state[i] = gptr[i + 1] > gptr[i] ? SPK_AMG_MIS_UNDECIDED : SPK_AMG_MIS_OUT;
}

__global__ void k_mis_m1(int64_t nn, const int32_t *gptr, const int32_t *gcol,
                         const int8_t *state, uint64_t *m1)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nn;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint64_t m = spk_amg_key(state[i], i);
        for (int32_t p = gptr[i]; p < gptr[i + 1]; p++) {
            const uint64_t k = spk_amg_key(state[gcol[p]], gcol[p]);
            m = k > m ? k : m;
        }
        m1[i] = m;
    }
}

__global__ void k_mis_update(int64_t nn, const int32_t *gptr, const int32_t *gcol,
                             const uint64_t *m1, int8_t *state, int32_t *left)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nn;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (state[i] != SPK_AMG_MIS_UNDECIDED)
            continue;
        uint64_t m = m1[i];
        for (int32_t p = gptr[i]; p < gptr[i + 1]; p++)
            m = m1[gcol[p]] > m ? m1[gcol[p]] : m;
        if (m == spk_amg_key(SPK_AMG_MIS_UNDECIDED, i))
            state[i] = SPK_AMG_MIS_IN;
        else if ((m >> 62) == SPK_AMG_MIS_IN)
            state[i] = SPK_AMG_MIS_OUT;
        else
            atomicAdd(left, 1);
    }
}

__global__ void k_root_flags(int64_t nn, const int8_t *state, int32_t *flag)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nn;
         i += (int64_t)gridDim.x * blockDim.x)
        flag[i] = state[i] == SPK_AMG_MIS_IN;
}

/* ids: the scan of the flags (read where state is in); a node next to a root joins it */
__global__ void k_join(int64_t nn, const int32_t *gptr, const int32_t *gcol, const int8_t *state,
                       const int32_t *ids, int32_t *agg)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nn;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (state[i] == SPK_AMG_MIS_IN) {
            agg[i] = ids[i];
            continue;
        }
        uint64_t best = 0;
        int32_t a = -1;
        for (int32_t p = gptr[i]; p < gptr[i + 1]; p++) {
            const int32_t j = gcol[p];
            if (state[j] == SPK_AMG_MIS_IN && spk_amg_key(SPK_AMG_MIS_IN, j) > best) {
                best = spk_amg_key(SPK_AMG_MIS_IN, j);
                a = ids[j];
            }
        }
        agg[i] = a;
    }
}

/* two steps away: the aggregate most neighbours joined (first: a copy of the joins) */
__global__ void k_join_rest(int64_t nn, const int32_t *gptr, const int32_t *gcol,
                            const int32_t *first, int32_t *agg)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nn;
         i += (int64_t)gridDim.x * blockDim.x)
        if (first[i] < 0)
            agg[i] = spk_amg_join_most(first, gptr[i], gptr[i + 1], gcol);
}

/* ---- the tentative prolongator ----------------------------------------------------------- */

__global__ void k_agg_keys(int64_t nn, const int32_t *agg, uint32_t *key, int32_t *node)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nn;
         i += (int64_t)gridDim.x * blockDim.x) {
        key[i] = (uint32_t)(agg[i] + 1);
        node[i] = (int32_t)i;
    }
}

/* start[a] = the first sorted position of aggregate a; start[naggs] = nn */
__global__ void k_agg_start(int64_t nn, int64_t naggs, const uint32_t *skey, int32_t *start)
{
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < nn;
         p += (int64_t)gridDim.x * blockDim.x) {
        const uint32_t k = skey[p];
        if (k > 0 && (p == 0 || skey[p - 1] != k))
            start[k - 1] = (int32_t)p;
        if (p == 0)
            start[naggs] = (int32_t)nn;
    }
}

__global__ void k_t_rows(int64_t n, int bs, int k, const int32_t *agg, int32_t *len)
{
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < n;
         r += (int64_t)gridDim.x * blockDim.x)
        len[r] = agg[r / bs] >= 0 ? k : 0;
}

/* T's pattern and B's rows in its values (Q before the Gram-Schmidt) */
__global__ void k_t_fill(int64_t n, int bs, int k, const int32_t *agg, const double *Bm,
                         const int32_t *rp, int32_t *ci, double *v)
{
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < n;
         r += (int64_t)gridDim.x * blockDim.x) {
        const int32_t a = agg[r / bs];
        if (a < 0)
            continue;
        for (int j = 0; j < k; j++) {
            ci[rp[r] + j] = a * k + j;
            v[rp[r] + j] = Bm[(int64_t)j * n + r];
        }
    }
}

/* The host's qr_aggregate on aggregate a's rows of T (row q bs + c of Q is unknown
 * nodes[q] bs + c). */
__global__ void k_qr(int64_t naggs, int64_t nc, int bs, int k, const int32_t *start,
                     const int32_t *nodes, const int32_t *rp, double *v, double *Bc)
{
    for (int64_t a = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; a < naggs;
         a += (int64_t)gridDim.x * blockDim.x) {
        const int32_t q0 = start[a], cnt = start[a + 1] - start[a];
#define QE(q, c, j) v[rp[(int64_t)nodes[q0 + (q)] * bs + (c)] + (j)]
        double *Ra = Bc + a * k;
        for (int j = 0; j < k; j++) {
            double s = 0.0;
            for (int32_t q = 0; q < cnt; q++)
                for (int c = 0; c < bs; c++)
                    s += QE(q, c, j) * QE(q, c, j);
            const double threshold = AMG_QR_DROP * sqrt(s);
            for (int i = 0; i < j; i++) {
                double d = 0.0;
                for (int32_t q = 0; q < cnt; q++)
                    for (int c = 0; c < bs; c++)
                        d += QE(q, c, i) * QE(q, c, j);
                for (int32_t q = 0; q < cnt; q++)
                    for (int c = 0; c < bs; c++)
                        QE(q, c, j) -= d * QE(q, c, i);
                Ra[(int64_t)j * nc + i] = d;
            }
            s = 0.0;
            for (int32_t q = 0; q < cnt; q++)
                for (int c = 0; c < bs; c++)
                    s += QE(q, c, j) * QE(q, c, j);
            const double nrm = sqrt(s);
            const double scale = nrm > threshold && nrm > 0.0 ? 1.0 / nrm : 0.0;
            for (int32_t q = 0; q < cnt; q++)
                for (int c = 0; c < bs; c++)
                    QE(q, c, j) *= scale;
            Ra[(int64_t)j * nc + j] = scale > 0.0 ? nrm : 0.0;
        }
#undef QE
    }
}

/* ---- the diagonal, the spectral estimate, S ---------------------------------------------- */

__global__ void k_dinv(int64_t n, const int32_t *rp, const int32_t *ci, const double *v,
                       double *dinv, int32_t *negative)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        double d = 0.0;
        for (int32_t p = rp[i]; p < rp[i + 1]; p++)
            if (ci[p] == i)
                d = v[p];
        const double di = d != 0.0 ? 1.0 / d : 0.0;
        dinv[i] = di;
        if (di < 0.0)
            *negative = 1;
    }
}

/* y = D^s A D^s x with s = 1/2 (scaled) or y = D A x (not): G lanes a row */
template <int G>
__global__ void k_spmv(int64_t n, const int32_t *rp, const int32_t *ci, const double *v,
                       const double *dinv, int scaled, const double *x, double *y)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i = t / G;
    const int lane = (int)(t % G);
    double s = 0.0;
    if (i < n)
        for (int32_t p = rp[i] + lane; p < rp[i + 1]; p += G)
            s += v[p] * (scaled ? sqrt(dinv[ci[p]]) : 1.0) * x[ci[p]];
    for (int o = G / 2; o > 0; o /= 2)
        s += __shfl_down_sync(0xffffffffu, s, o, G);
    if (i < n && lane == 0)
        y[i] = (scaled ? sqrt(dinv[i]) : dinv[i]) * s;
}

static spk_status spmv(dev_build *B, const dcsr *A, const double *dinv, int scaled,
                       const double *x, double *y)
{
    const double avg = A->m > 0 ? (double)A->nnz / (double)A->m : 0.0;
    const int64_t n = A->m;
    if (avg <= 8.0)
        k_spmv<4><<<blocks(4 * n), SPK_CUDA_BLOCK, 0, B->s>>>(n, A->rp, A->ci, A->v, dinv, scaled,
                                                               x, y);
    else if (avg <= 16.0)
        k_spmv<8><<<blocks(8 * n), SPK_CUDA_BLOCK, 0, B->s>>>(n, A->rp, A->ci, A->v, dinv, scaled,
                                                               x, y);
    else if (avg <= 32.0)
        k_spmv<16><<<blocks(16 * n), SPK_CUDA_BLOCK, 0, B->s>>>(n, A->rp, A->ci, A->v, dinv,
                                                                 scaled, x, y);
    else
        k_spmv<32><<<blocks(32 * n), SPK_CUDA_BLOCK, 0, B->s>>>(n, A->rp, A->ci, A->v, dinv,
                                                                 scaled, x, y);
    return launched(B, "AMG setup spmv");
}

/* w -= alpha v + beta vp */
__global__ void k_lanczos_orth(int64_t n, double alpha, double beta, const double *v,
                               const double *vp, double *w)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        w[i] -= alpha * v[i] + beta * vp[i];
}

/* vp = v; v = w / beta */
__global__ void k_lanczos_next(int64_t n, double beta, const double *w, double *v, double *vp)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        vp[i] = v[i];
        v[i] = w[i] / beta;
    }
}

__global__ void k_scale(int64_t n, double s, double *x)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        x[i] *= s;
}

static spk_status dot(dev_build *B, int64_t n, const double *x, const double *y, double *r)
{
    return spk_cublas(B->ctx, cublasDdot(B->cs->blas, (int)n, x, 1, y, 1, r), "AMG setup dot");
}

/* Level 0's near-null space by default: the bs translations (spk_amg_begin's) */
__global__ void k_translations(int64_t n, int k, double *Bl)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int c = 0; c < k; c++)
            Bl[(int64_t)c * n + i] = i % k == c ? 1.0 : 0.0;
}

/* The start vector's entries (amg.h), made where they are read */
__global__ void k_start(int64_t n, double *v)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = spk_amg_start_entry(i);
}

/* spk_amg_spectral_radius on the device. work: 4 n doubles (device). */
static spk_status spectral_radius(dev_build *B, const dcsr *A, const double *dinv, int sym,
                                  double *work, double *rho)
{
    const int64_t n = A->m;
    *rho = 1.0;
    if (n == 0)
        return SPK_OK;
    double *v = work, *vp = work + n, *w = work + 2 * n;
    k_start<<<blocks(n), SPK_CUDA_BLOCK, 0, B->s>>>(n, v);
    spk_status st = launched(B, "AMG start vector");
    double nv = 0.0;
    if (st || (st = dot(B, n, v, v, &nv)))
        return st;
    k_scale<<<blocks(n), SPK_CUDA_BLOCK, 0, B->s>>>(n, 1.0 / sqrt(nv), v);
    if ((st = launched(B, "AMG setup scale")))
        return st;
    if (!sym) {
        double r = 0.0;
        for (int it = 0; it < AMG_POWER_STEPS; it++) {
            if ((st = spmv(B, A, dinv, 0, v, w)) || (st = dot(B, n, w, w, &r)))
                return st;
            r = sqrt(r);
            if (!(r > 0.0) || !isfinite(r)) {
                *rho = r > 0.0 ? r : 1.0;
                return SPK_OK;
            }
            if ((st = cu(B, cudaMemcpyAsync(v, w, (size_t)n * sizeof *v,
                                            cudaMemcpyDeviceToDevice, B->s), "copy")))
                return st;
            k_scale<<<blocks(n), SPK_CUDA_BLOCK, 0, B->s>>>(n, 1.0 / r, v);
            if ((st = launched(B, "AMG setup scale")))
                return st;
        }
        *rho = r;
        return SPK_OK;
    }
    double al[AMG_LANCZOS_STEPS], be[AMG_LANCZOS_STEPS];
    int m = 0;
    double beta = 0.0;
    if ((st = cu(B, cudaMemsetAsync(vp, 0, (size_t)n * sizeof *vp, B->s), "memset")))
        return st;
    const int steps = n < AMG_LANCZOS_STEPS ? (int)n : AMG_LANCZOS_STEPS;
    for (int j = 0; j < steps; j++) {
        double alpha = 0.0;
        if ((st = spmv(B, A, dinv, 1, v, w)) || (st = dot(B, n, w, v, &alpha)))
            return st;
        k_lanczos_orth<<<blocks(n), SPK_CUDA_BLOCK, 0, B->s>>>(n, alpha, beta, v, vp, w);
        if ((st = launched(B, "AMG setup Lanczos")))
            return st;
        al[m++] = alpha;
        double bb = 0.0;
        if ((st = dot(B, n, w, w, &bb)))
            return st;
        beta = sqrt(bb);
        if (!(beta > 1e-14 * fabs(alpha)) || j == steps - 1)
            break;
        be[m - 1] = beta;
        k_lanczos_next<<<blocks(n), SPK_CUDA_BLOCK, 0, B->s>>>(n, beta, w, v, vp);
        if ((st = launched(B, "AMG setup Lanczos")))
            return st;
    }
    if (m > 0) {
        const double r = spk_amg_tridiag_max(al, be, m);
        *rho = r > 0.0 && isfinite(r) ? r : 1.0;
    }
    return SPK_OK;
}

__global__ void k_s_rows(int64_t n, const int32_t *rp, const int32_t *ci, int32_t *len)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int has = 0;
        for (int32_t p = rp[i]; p < rp[i + 1] && !has; p++)
            has = ci[p] == i;
        len[i] = rp[i + 1] - rp[i] + !has;
    }
}

/* S = I - omega D^-1 A on A's pattern with (i, i) put in its place (smoother_pattern and
 * smoother_values of the host) */
__global__ void k_s_fill(int64_t n, const int32_t *rp, const int32_t *ci, const double *v,
                         const double *dinv, double omega, const int32_t *srp, int32_t *sci,
                         double *sv)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int32_t q = srp[i];
        int done = 0;
        const double wd = omega * dinv[i];
        for (int32_t p = rp[i]; p < rp[i + 1]; p++) {
            if (!done && ci[p] > i) {
                sci[q] = (int32_t)i;
                sv[q++] = 1.0;
                done = 1;
            }
            done |= ci[p] == i;
            sci[q] = ci[p];
            sv[q++] = (ci[p] == i ? 1.0 : 0.0) - wd * v[p];
        }
        if (!done) {
            sci[q] = (int32_t)i;
            sv[q] = 1.0;
        }
    }
}

/* ---- the products ------------------------------------------------------------------------ */

/* Rows whose columns are not strictly increasing: *bad = 1. */
__global__ void k_check_sorted(int64_t m, const int32_t *rp, const int32_t *ci, int32_t *bad)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < m;
         i += (int64_t)gridDim.x * blockDim.x)
        for (int32_t p = rp[i] + 1; p < rp[i + 1]; p++)
            if (ci[p] <= ci[p - 1])
                *bad = 1;
}

/* Insertion sort of each row by column (a product's rows, should they come unsorted). */
__global__ void k_sort_rows(int64_t m, const int32_t *rp, int32_t *ci, double *v)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < m;
         i += (int64_t)gridDim.x * blockDim.x)
        for (int32_t p = rp[i] + 1; p < rp[i + 1]; p++) {
            const int32_t c = ci[p];
            const double x = v[p];
            int32_t q = p - 1;
            for (; q >= rp[i] && ci[q] > c; q--) {
                ci[q + 1] = ci[q];
                v[q + 1] = v[q];
            }
            ci[q + 1] = c;
            v[q + 1] = x;
        }
}

static spk_status mat(dev_build *B, const dcsr *A, cusparseSpMatDescr_t *d)
{
    return cusp(B->ctx, cusparseCreateCsr(d, A->m, A->n, A->nnz, A->rp, A->ci, A->v,
                                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                          CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F),
                "cusparseCreateCsr");
}

/* C = A B (C allocated here), rows sorted. cuSPARSE's first algorithm keeps every partial
 * product (some 16 bytes each: 22 GB for lame3d:48's A P); where its buffers would pass the
 * build's bound, the product is made again with its third algorithm, which makes them in
 * chunks of a fraction of the rows, halved until the buffers fit or the fraction is 1/1024
 * (what the buffers then take, the describe text reports). */
static spk_status spgemm(dev_build *B, const dcsr *A, const dcsr *Bm, dcsr *C)
{
    spk_context *ctx = B->ctx;
    memset(C, 0, sizeof *C);
    if (A->nnz == 0 || Bm->nnz == 0)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "AMG setup on the GPU: an empty product");
    cusparseSpMatDescr_t a = NULL, b = NULL, c = NULL;
    cusparseSpGEMMDescr_t g = NULL;
    void *buf1 = NULL, *buf2 = NULL, *buf3 = NULL;
    size_t s1 = 0, s2 = 0, s3 = 0;
    const double one = 1.0, zero = 0.0;
    const cusparseOperation_t nt = CUSPARSE_OPERATION_NON_TRANSPOSE;
    cusparseSpGEMMAlg_t alg = CUSPARSE_SPGEMM_ALG1;
    int64_t rows = 0, cols = 0, nnz = 0;
    int32_t *bad = NULL;
    int32_t hbad = 0;
    spk_status st;
    C->m = A->m;
    C->n = Bm->n;
    if ((st = dalloc(B, &C->rp, A->m + 1, "AMG product row offsets")) || (st = mat(B, A, &a)) ||
        (st = mat(B, Bm, &b)))
        goto done;
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((st = cusp(ctx, cusparseCreateCsr(&c, A->m, Bm->n, 0, C->rp, NULL, NULL,
                                              CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                              CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F),
                       "cusparseCreateCsr")) ||
            (st = cusp(ctx, cusparseSpGEMM_createDescr(&g), "cusparseSpGEMM_createDescr")) ||
            (st = cusp(ctx, cusparseSpGEMM_workEstimation(B->h, nt, nt, &one, a, b, &zero, c,
                                                          CUDA_R_64F, alg, g, &s1, NULL),
                       "cusparseSpGEMM_workEstimation")) ||
            (st = spk_cuda_malloc(ctx, &buf1, s1 > 0 ? s1 : 1, "SpGEMM buffer")) ||
            (st = cusp(ctx, cusparseSpGEMM_workEstimation(B->h, nt, nt, &one, a, b, &zero, c,
                                                          CUDA_R_64F, alg, g, &s1, buf1),
                       "cusparseSpGEMM_workEstimation")))
            goto done;
        if (alg == CUSPARSE_SPGEMM_ALG1) {
            if ((st = cusp(ctx, cusparseSpGEMM_compute(B->h, nt, nt, &one, a, b, &zero, c,
                                                       CUDA_R_64F, alg, g, &s2, NULL),
                           "cusparseSpGEMM_compute")))
                goto done;
            if ((double)s1 + (double)s2 <= B->bound)
                break;
            /* over the bound: again with the chunked algorithm */
            cusparseSpGEMM_destroyDescr(g);
            cusparseDestroySpMat(c);
            g = NULL;
            c = NULL;
            dfree(buf1);
            buf1 = NULL;
            alg = CUSPARSE_SPGEMM_ALG3;
            continue;
        }
        for (float frac = 0.25f;; frac *= 0.5f) {
            if ((st = cusp(ctx, cusparseSpGEMM_estimateMemory(B->h, nt, nt, &one, a, b, &zero, c,
                                                              CUDA_R_64F, alg, g, frac, &s3,
                                                              NULL, NULL),
                           "cusparseSpGEMM_estimateMemory")) ||
                (st = spk_cuda_malloc(ctx, &buf3, s3 > 0 ? s3 : 1, "SpGEMM buffer")) ||
                (st = cusp(ctx, cusparseSpGEMM_estimateMemory(B->h, nt, nt, &one, a, b, &zero, c,
                                                              CUDA_R_64F, alg, g, frac, &s3,
                                                              buf3, &s2),
                           "cusparseSpGEMM_estimateMemory")))
                goto done;
            dfree(buf3);
            buf3 = NULL;
            B->peak = fmax(B->peak, (double)s1 + (double)s3);
            if ((double)s1 + (double)s2 <= B->bound || frac < 1.0f / 1024.0f)
                break;
        }
        break;
    }
    if ((st = spk_cuda_malloc(ctx, &buf2, s2 > 0 ? s2 : 1, "SpGEMM buffer")) ||
        (st = cusp(ctx, cusparseSpGEMM_compute(B->h, nt, nt, &one, a, b, &zero, c, CUDA_R_64F,
                                               alg, g, &s2, buf2), "cusparseSpGEMM_compute")) ||
        (st = cusp(ctx, cusparseSpMatGetSize(c, &rows, &cols, &nnz), "cusparseSpMatGetSize")))
        goto done;
    if (nnz >= INT32_MAX) {
        st = spk_fail(ctx, SPK_ERR_UNSUPPORTED, "AMG setup on the GPU: a product of %lld "
                      "entries (32-bit offsets)", (long long)nnz);
        goto done;
    }
    C->nnz = nnz;
    if ((st = dalloc(B, &C->ci, nnz, "AMG product columns")) ||
        (st = dalloc(B, &C->v, nnz, "AMG product values")) ||
        (st = cusp(ctx, cusparseCsrSetPointers(c, C->rp, C->ci, C->v), "cusparseCsrSetPointers")) ||
        (st = cusp(ctx, cusparseSpGEMM_copy(B->h, nt, nt, &one, a, b, &zero, c, CUDA_R_64F, alg,
                                            g), "cusparseSpGEMM_copy")))
        goto done;
    B->peak = fmax(B->peak, (double)s1 + (double)s2);
    B->chunked += alg == CUSPARSE_SPGEMM_ALG3;
    if ((st = dalloc(B, &bad, 1, "AMG flag")) ||
        (st = cu(B, cudaMemsetAsync(bad, 0, sizeof *bad, B->s), "memset")))
        goto done;
    k_check_sorted<<<blocks(C->m), SPK_CUDA_BLOCK, 0, B->s>>>(C->m, C->rp, C->ci, bad);
    if ((st = launched(B, "AMG product check")) || (st = get(B, &hbad, bad, sizeof hbad)))
        goto done;
    if (hbad) {
        k_sort_rows<<<blocks(C->m), SPK_CUDA_BLOCK, 0, B->s>>>(C->m, C->rp, C->ci, C->v);
        st = launched(B, "AMG product sort");
    }
done:
    dfree(bad);
    if (g)
        cusparseSpGEMM_destroyDescr(g);
    if (a)
        cusparseDestroySpMat(a);
    if (b)
        cusparseDestroySpMat(b);
    if (c)
        cusparseDestroySpMat(c);
    dfree(buf1);
    dfree(buf2);
    dfree(buf3);
    if (st)
        dcsr_free(C);
    return st;
}

/* R = P^T */
static spk_status transpose(dev_build *B, const dcsr *P, dcsr *R)
{
    spk_status st = dcsr_alloc(B, P->n, P->m, P->nnz, R);
    if (st)
        return st;
    size_t bytes = 0;
    void *buf = NULL;
    if (!(st = cusp(B->ctx, cusparseCsr2cscEx2_bufferSize(B->h, (int)P->m, (int)P->n,
                                                          (int)P->nnz, P->v, P->rp, P->ci, R->v,
                                                          R->rp, R->ci, CUDA_R_64F,
                                                          CUSPARSE_ACTION_NUMERIC,
                                                          CUSPARSE_INDEX_BASE_ZERO,
                                                          CUSPARSE_CSR2CSC_ALG1, &bytes),
                    "cusparseCsr2cscEx2_bufferSize")) &&
        !(st = spk_cuda_malloc(B->ctx, &buf, bytes > 0 ? bytes : 1, "transpose buffer")))
        st = cusp(B->ctx, cusparseCsr2cscEx2(B->h, (int)P->m, (int)P->n, (int)P->nnz, P->v, P->rp,
                                             P->ci, R->v, R->rp, R->ci, CUDA_R_64F,
                                             CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO,
                                             CUSPARSE_CSR2CSC_ALG1, buf),
                  "cusparseCsr2cscEx2");
    dfree(buf);
    if (st)
        dcsr_free(R);
    return st;
}

/* ---- one level --------------------------------------------------------------------------- */

typedef struct dev_level {
    dcsr     A;            /* this level's A (level 0: the upload of the caller's)          */
    double  *B;            /* n x k near-null space                                          */
    int64_t  n;
    int      bs, k;
} dev_level;

/* Strength graph and MIS(2) aggregates of level L; agg (nn, device) and *naggs. */
static spk_status aggregate(dev_build *B, const dev_level *L, double theta, int32_t *agg,
                            int64_t *naggs, int *rounds)
{
    const int64_t nn = L->n / L->bs;
    int32_t *gptr = NULL, *gcol = NULL, *ids = NULL, *first = NULL, *left = NULL;
    double *cd = NULL;
    uint64_t *m1 = NULL;
    int8_t *state = NULL;
    int64_t edges = 0;
    spk_status st;
    *rounds = 0;
    if ((st = dalloc(B, &gptr, nn + 1, "AMG strength graph")) ||
        (st = dalloc(B, &cd, nn, "AMG strength graph")))
        goto done;
    if (theta != 0.0) {
        k_node_diag<<<blocks(nn), SPK_CUDA_BLOCK, 0, B->s>>>(nn, L->bs, L->A.rp, L->A.ci, L->A.v, cd);
        if ((st = launched(B, "AMG node diagonal")))
            goto done;
    }
    k_strength<<<blocks(nn), SPK_CUDA_BLOCK, 0, B->s>>>(nn, L->bs, theta, L->A.rp, L->A.ci,
                                                         L->A.v, cd, NULL, gptr);
    if ((st = launched(B, "AMG strength")) || (st = scan(B, gptr, nn, &edges)) ||
        (st = dalloc(B, &gcol, edges, "AMG strength graph")))
        goto done;
    k_strength<<<blocks(nn), SPK_CUDA_BLOCK, 0, B->s>>>(nn, L->bs, theta, L->A.rp, L->A.ci,
                                                         L->A.v, cd, gptr, gcol);
    if ((st = launched(B, "AMG strength")) || (st = dalloc(B, &state, nn, "AMG MIS(2)")) ||
        (st = dalloc(B, &m1, nn, "AMG MIS(2)")) || (st = dalloc(B, &left, 1, "AMG MIS(2)")))
        goto done;
    if ((st = dalloc(B, &ids, nn + 1, "AMG aggregates")) ||
        (st = dalloc(B, &first, nn, "AMG aggregates")))
        goto done;
    k_mis_init<<<blocks(nn), SPK_CUDA_BLOCK, 0, B->s>>>(nn, gptr, state);
    if ((st = launched(B, "AMG MIS(2)")))
        goto done;
    for (int32_t hleft = nn > 0 ? 1 : 0; hleft > 0;) {
        (*rounds)++;
        if ((st = cu(B, cudaMemsetAsync(left, 0, sizeof *left, B->s), "memset")))
            goto done;
        k_mis_m1<<<blocks(nn), SPK_CUDA_BLOCK, 0, B->s>>>(nn, gptr, gcol, state, m1);
        if ((st = launched(B, "AMG MIS(2)")))
            goto done;
        k_mis_update<<<blocks(nn), SPK_CUDA_BLOCK, 0, B->s>>>(nn, gptr, gcol, m1, state, left);
        if ((st = launched(B, "AMG MIS(2)")) || (st = get(B, &hleft, left, sizeof hleft)))
            goto done;
    }
    k_root_flags<<<blocks(nn), SPK_CUDA_BLOCK, 0, B->s>>>(nn, state, ids);
    if ((st = launched(B, "AMG roots")) || (st = scan(B, ids, nn, naggs)))
        goto done;
    k_join<<<blocks(nn), SPK_CUDA_BLOCK, 0, B->s>>>(nn, gptr, gcol, state, ids, agg);
    if ((st = launched(B, "AMG joins")))
        goto done;
    if ((st = cu(B, cudaMemcpyAsync(first, agg, (size_t)(nn > 0 ? nn : 1) * sizeof *agg,
                                    cudaMemcpyDeviceToDevice, B->s), "copy")))
        goto done;
    k_join_rest<<<blocks(nn), SPK_CUDA_BLOCK, 0, B->s>>>(nn, gptr, gcol, first, agg);
    st = launched(B, "AMG joins");
done:
    dfree(gptr);
    dfree(gcol);
    dfree(cd);
    dfree(state);
    dfree(m1);
    dfree(left);
    dfree(ids);
    dfree(first);
    return st;
}

/* T (n x naggs k) and the coarse B (naggs k x k, device, allocated here). */
static spk_status tentative(dev_build *B, const dev_level *L, const int32_t *agg, int64_t naggs,
                            dcsr *T, double **Bc)
{
    const int64_t nn = L->n / L->bs, n = L->n, nc = naggs * L->k;
    const int k = L->k, bs = L->bs;
    uint32_t *key = NULL, *skey = NULL;
    int32_t *node = NULL, *snode = NULL, *start = NULL, *rp = NULL;
    int64_t tnnz = 0;
    size_t bytes = 0;
    spk_status st;
    memset(T, 0, sizeof *T);
    *Bc = NULL;
    if ((st = dalloc(B, &key, nn, "AMG T")) || (st = dalloc(B, &skey, nn, "AMG T")) ||
        (st = dalloc(B, &node, nn, "AMG T")) || (st = dalloc(B, &snode, nn, "AMG T")) ||
        (st = dalloc(B, &start, naggs + 1, "AMG T")) || (st = dalloc(B, &rp, n + 1, "AMG T")))
        goto done;
    k_agg_keys<<<blocks(nn), SPK_CUDA_BLOCK, 0, B->s>>>(nn, agg, key, node);
    if ((st = launched(B, "AMG T keys")) ||
        (st = cu(B, cub::DeviceRadixSort::SortPairs(NULL, bytes, key, skey, node, snode, (int)nn,
                                                    0, 32, B->s), "sort")) ||
        (st = tmp_for(B, bytes)) ||
        (st = cu(B, cub::DeviceRadixSort::SortPairs(B->tmp, bytes, key, skey, node, snode, (int)nn,
                                                    0, 32, B->s), "sort")))
        goto done;
    k_agg_start<<<blocks(nn), SPK_CUDA_BLOCK, 0, B->s>>>(nn, naggs, skey, start);
    k_t_rows<<<blocks(n), SPK_CUDA_BLOCK, 0, B->s>>>(n, bs, k, agg, rp);
    if ((st = launched(B, "AMG T rows")) || (st = scan(B, rp, n, &tnnz)))
        goto done;
    T->m = n;
    T->n = nc;
    T->nnz = tnnz;
    T->rp = rp;
    rp = NULL;
    if ((st = dalloc(B, &T->ci, tnnz, "AMG T")) || (st = dalloc(B, &T->v, tnnz, "AMG T")) ||
        (st = dalloc(B, Bc, nc * k, "AMG coarse B")) ||
        (st = cu(B, cudaMemsetAsync(*Bc, 0, (size_t)(nc * k > 0 ? nc * k : 1) * sizeof(double),
                                    B->s), "memset")))
        goto done;
    k_t_fill<<<blocks(n), SPK_CUDA_BLOCK, 0, B->s>>>(n, bs, k, agg, L->B, T->rp, T->ci, T->v);
    if ((st = launched(B, "AMG T fill")))
        goto done;
    k_qr<<<blocks(naggs), SPK_CUDA_BLOCK, 0, B->s>>>(naggs, nc, bs, k, start, snode, T->rp, T->v,
                                                     *Bc);
    st = launched(B, "AMG T QR");
done:
    dfree(key);
    dfree(skey);
    dfree(node);
    dfree(snode);
    dfree(start);
    dfree(rp);
    if (st) {
        dcsr_free(T);
        dfree(*Bc);
        *Bc = NULL;
    }
    return st;
}

/* S = I - omega D^-1 A */
static spk_status smoother(dev_build *B, const dcsr *A, const double *dinv, double omega, dcsr *S)
{
    memset(S, 0, sizeof *S);
    int64_t nnz = 0;
    spk_status st = dalloc(B, &S->rp, A->m + 1, "AMG S");
    if (st)
        return st;
    k_s_rows<<<blocks(A->m), SPK_CUDA_BLOCK, 0, B->s>>>(A->m, A->rp, A->ci, S->rp);
    if (!(st = launched(B, "AMG S rows")) && !(st = scan(B, S->rp, A->m, &nnz)) &&
        !(st = dalloc(B, &S->ci, nnz, "AMG S")) && !(st = dalloc(B, &S->v, nnz, "AMG S"))) {
        S->m = A->m;
        S->n = A->n;
        S->nnz = nnz;
        k_s_fill<<<blocks(A->m), SPK_CUDA_BLOCK, 0, B->s>>>(A->m, A->rp, A->ci, A->v, dinv, omega,
                                                            S->rp, S->ci, S->v);
        st = launched(B, "AMG S fill");
    }
    if (st)
        dcsr_free(S);
    return st;
}

/* ---- the hierarchy kept on the device, for refreshes ------------------------------------- */

/* R = P^T's pattern and map (R's entry q is P's entry rmap[q]), then its values: the
 * transpose of P's entry numbers (exact in doubles below 2^53). */
__global__ void k_iota(int64_t n, double *x)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        x[i] = (double)i;
}

__global__ void k_map_gather(int64_t n, double *rv_map, int32_t *rmap, const double *pv)
{
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < n;
         q += (int64_t)gridDim.x * blockDim.x) {
        const int32_t p = (int32_t)rv_map[q];
        rmap[q] = p;
        rv_map[q] = pv[p];
    }
}

__global__ void k_gather(int64_t n, const int32_t *map, const double *src, double *dst)
{
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < n;
         q += (int64_t)gridDim.x * blockDim.x)
        dst[q] = src[map[q]];
}

/* C = A B on C's pattern (rows sorted, holding the product's): G lanes a row (G divides 32,
 * so a row's lanes are one warp's). For each of A's entries in turn the lanes share B's row,
 * whose columns are distinct, so no two lanes add into one entry at once, and the lanes wait
 * for each other before the next entry: every entry of C receives its products in A's order
 * then B's, whatever G, found in C's row by bisection. The same bits on every call and for
 * every G. */
template <int G>
__global__ void k_spgemm_values(int64_t m, const int32_t *arp, const int32_t *aci,
                                const double *av, const int32_t *brp, const int32_t *bci,
                                const double *bv, const int32_t *crp, const int32_t *cci,
                                double *cv)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i = t / G;
    if (i >= m)
        return;
    const int lane = (int)(t % G);
    const unsigned mask = G == 32 ? 0xffffffffu
                                  : ((1u << G) - 1u) << ((threadIdx.x & 31u) & ~(unsigned)(G - 1));
    const int32_t c0 = crp[i], c1 = crp[i + 1];
    for (int32_t q = c0 + lane; q < c1; q += G)
        cv[q] = 0.0;
    __syncwarp(mask);
    for (int32_t p = arp[i]; p < arp[i + 1]; p++) {
        const double a = av[p];
        const int32_t k = aci[p];
        for (int32_t r = brp[k] + lane; r < brp[k + 1]; r += G) {
            const int32_t j = bci[r];
            int32_t lo = c0, hi = c1 - 1;
            while (lo < hi) {
                const int32_t mid = (lo + hi) >> 1;
                if (cci[mid] < j)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            cv[lo] += a * bv[r];
        }
        __syncwarp(mask);
    }
}

typedef struct dev_hier {
    int      nlevels;
    dcsr     A[32];       /* A[0]: the upload of the caller's A; A[l + 1]: R_l (A_l P_l)    */
    dcsr     S[32], T[32], P[32], AP[32], R[32];
    int32_t *rmap[32];    /* R_l's entry q is P_l's entry rmap[q]                            */
    double  *dinv[32];
    double  *work;        /* the spectral estimate's vectors: 4 n_0                           */
    int32_t *neg;
    double   bytes;       /* device memory held                                               */
} dev_hier;

static double dcsr_bytes(const dcsr *A)
{
    return A->rp ? 4.0 * (double)(A->m + 1) + 12.0 * (double)A->nnz : 0.0;
}

static void dev_hier_free(dev_hier *D)
{
    if (!D)
        return;
    for (int l = 0; l < 32; l++) {
        dcsr_free(&D->A[l]);
        dcsr_free(&D->S[l]);
        dcsr_free(&D->T[l]);
        dcsr_free(&D->P[l]);
        dcsr_free(&D->AP[l]);
        dcsr_free(&D->R[l]);
        dfree(D->rmap[l]);
        dfree(D->dinv[l]);
    }
    dfree(D->work);
    dfree(D->neg);
    free(D);
}

void spk_amg_device_free(spk_amg_hier *H)
{
    dev_hier_free((dev_hier *)H->dev);
    H->dev = NULL;
}

/* R = P^T with its map */
static spk_status transpose_map(dev_build *B, const dcsr *P, dcsr *R, int32_t **rmap)
{
    double *idx = NULL;
    spk_status st = dalloc(B, &idx, P->nnz, "AMG transpose map");
    if (st)
        return st;
    k_iota<<<blocks(P->nnz), SPK_CUDA_BLOCK, 0, B->s>>>(P->nnz, idx);
    dcsr Pi = *P;
    Pi.v = idx;
    if (!(st = launched(B, "AMG transpose map")) && !(st = transpose(B, &Pi, R)) &&
        !(st = dalloc(B, rmap, R->nnz, "AMG transpose map"))) {
        k_map_gather<<<blocks(R->nnz), SPK_CUDA_BLOCK, 0, B->s>>>(R->nnz, R->v, *rmap, P->v);
        st = launched(B, "AMG transpose map");
    }
    dfree(idx);
    return st;
}

/* D^-1 and rho of level l into the device and the host hierarchy. */
static spk_status level_diag(dev_build *B, dev_hier *D, spk_amg_hier *H, int l)
{
    const dcsr *A = &D->A[l];
    int32_t hneg = 0;
    spk_status st = cu(B, cudaMemsetAsync(D->neg, 0, sizeof *D->neg, B->s), "memset");
    if (st)
        return st;
    k_dinv<<<blocks(A->m), SPK_CUDA_BLOCK, 0, B->s>>>(A->m, A->rp, A->ci, A->v, D->dinv[l], D->neg);
    if ((st = launched(B, "AMG diagonal")) || (st = get(B, &hneg, D->neg, sizeof hneg)) ||
        (st = spectral_radius(B, A, D->dinv[l], H->symmetric && !hneg, D->work,
                              &H->lev[l].rho)))
        return st;
    H->lev[l].d_dinv = D->dinv[l];
    /* the host's copy for a caller that reads the host hierarchy; the solver's smoothers take
     * theirs from the device's */
    return H->host_values ? get(B, H->lev[l].dinv, D->dinv[l], (size_t)A->m * sizeof(double))
                          : SPK_OK;
}

/* C's values: as many lanes a row as B's rows hold entries on average (1 to 32) */
static spk_status products(dev_build *B, const dcsr *A, const dcsr *Bm, const dcsr *C)
{
    const double avg = Bm->m > 0 ? (double)Bm->nnz / (double)Bm->m : 0.0;
    const int64_t m = C->m;
#define SPK_PRODUCTS(G)                                                                          \
    k_spgemm_values<G><<<blocks((G) * m), SPK_CUDA_BLOCK, 0, B->s>>>(                          \
        m, A->rp, A->ci, A->v, Bm->rp, Bm->ci, Bm->v, C->rp, C->ci, C->v)
    if (avg <= 1.0)
        SPK_PRODUCTS(1);
    else if (avg <= 2.0)
        SPK_PRODUCTS(2);
    else if (avg <= 4.0)
        SPK_PRODUCTS(4);
    else if (avg <= 8.0)
        SPK_PRODUCTS(8);
    else if (avg <= 16.0)
        SPK_PRODUCTS(16);
    else
        SPK_PRODUCTS(32);
#undef SPK_PRODUCTS
    return launched(B, "AMG product values");
}

static int fits(const dcsr *A) { return A->m < INT32_MAX && A->nnz < INT32_MAX && A->n < INT32_MAX; }

spk_status spk_amg_build_device(spk_context *ctx, const spk_csr *A0, const spk_matrix *M,
                                int symmetric, const spk_amg_options *in, int host_values,
                                spk_amg_hier *H)
{
    if (A0->nrows >= INT32_MAX || A0->nnz >= INT32_MAX)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "AMG setup on the GPU: %lld rows, %lld entries "
                        "(32-bit offsets)", (long long)A0->nrows, (long long)A0->nnz);
    const double t_begin = spk_now();
    spk_status st = spk_amg_begin(ctx, A0, symmetric, in, H);
    if (st)
        return st;
    const spk_amg_options *o = &H->opt;
    if (H->lev[0].bs > AMG_DEV_MAX_BS || H->lev[0].k > AMG_DEV_MAX_BS) {
        const int bs = H->lev[0].bs, k = H->lev[0].k;
        spk_amg_free(H);
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "AMG setup on the GPU: blocks of %d unknowns, "
                        "%d near-null vectors (at most %d each)", bs, k, AMG_DEV_MAX_BS);
    }
    H->device = 1;
    H->mis2 = 1;
    H->host_values = host_values;
    dev_build Bd;
    memset(&Bd, 0, sizeof Bd);
    dev_build *B = &Bd;
    B->ctx = ctx;
    B->mark = t_begin;
    dev_hier *D = (dev_hier *)calloc(1, sizeof *D);
    double *Bl = NULL, *Bc = NULL;
    int32_t *agg = NULL;
    const int64_t n0 = A0->nrows;
    int64_t n = n0;
    int bs = H->lev[0].bs, k = H->lev[0].k;
    if (!D) {
        spk_amg_free(H);
        return spk_fail(ctx, SPK_ERR_NOMEM, "AMG setup on the GPU: out of memory");
    }
    H->dev = D;
    if ((st = spk_cuda_state_of(ctx, &B->cs)))
        goto fail;
    B->s = B->cs->stream;
    {
        /* a product's buffers: a quarter of the memory free at the setup (SPK_AMG_SPGEMM_MB
         * sets another bound), so that the setup fits beside the solver's own arrays */
        size_t fr = 0, tot = 0;
        (void)cudaMemGetInfo(&fr, &tot);
        B->bound = 0.25 * (double)fr;
        const char *knob = getenv("SPK_AMG_SPGEMM_MB");
        if (knob && atof(knob) > 0)
            B->bound = atof(knob) * 1e6;
    }
    if ((st = cusp(ctx, cusparseCreate(&B->h), "cusparseCreate")) ||
        (st = cusp(ctx, cusparseSetStream(B->h, B->s), "cusparseSetStream")) ||
        (st = dalloc(B, &D->work, 4 * n0 + 4, "AMG workspace")) ||
        (st = dalloc(B, &agg, n0, "AMG aggregates")) ||
        (st = dalloc(B, &D->neg, 1, "AMG flag")) || (st = level0(B, A0, M, &D->A[0])) ||
        (st = dalloc(B, &Bl, n0 * k, "AMG near-null space")))
        goto fail;
    if (!o->nullspace && !o->coords && n0 > 0) {   /* the translations, made where they are read */
        k_translations<<<blocks(n0), SPK_CUDA_BLOCK, 0, B->s>>>(n0, k, Bl);
        st = launched(B, "AMG translations");
    } else {
        st = put(B, Bl, H->lev[0].B, (size_t)(n0 * k) * sizeof(double));
    }
    if (st || (st = step_done(B, SPK_AMG_STEP_START)))
        goto fail;
    for (int l = 0;; l++) {
        const double t0 = spk_now();
        spk_amg_level *h = &H->lev[l];
        const int64_t nn = n / bs;
        D->nlevels = l + 1;
        if (!(h->dinv = (double *)spk_malloc(ctx, (size_t)(n > 0 ? n : 1), sizeof *h->dinv)) ||
            (st = dalloc(B, &D->dinv[l], n, "AMG diagonal"))) {
            st = st ? st : spk_fail(ctx, SPK_ERR_NOMEM, "AMG level %d: out of memory", l);
            goto fail;
        }
        if ((st = level_diag(B, D, H, l)) || (st = step_done(B, SPK_AMG_STEP_RHO)))
            goto fail;
        if (n <= o->max_coarse || l + 1 >= o->max_levels) {
            H->setup_s[l] = spk_now() - t0;
            break;
        }
        int64_t naggs = 0;
        dev_level L = {D->A[l], Bl, n, bs, k};
        if ((st = aggregate(B, &L, o->theta, agg, &naggs, &H->mis_rounds[l])) ||
            (st = step_done(B, SPK_AMG_STEP_AGG)))
            goto fail;
        if (naggs == 0 || naggs * k >= n) {
            H->setup_s[l] = spk_now() - t0;
            break;
        }
        if (!(h->agg = (int32_t *)spk_malloc(ctx, (size_t)(nn > 0 ? nn : 1), sizeof *h->agg))) {
            st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG aggregates of %lld nodes: out of memory",
                          (long long)nn);
            goto fail;
        }
        h->naggs = naggs;
        spk_amg_level *c = &H->lev[l + 1];
        const int64_t nc = naggs * k;
        if ((st = get(B, h->agg, agg, (size_t)nn * sizeof *agg)) ||
            (st = tentative(B, &L, agg, naggs, &D->T[l], &Bc)) ||
            (st = step_done(B, SPK_AMG_STEP_T)) ||
            (st = smoother(B, &D->A[l], D->dinv[l], 4.0 / (3.0 * h->rho), &D->S[l])) ||
            (st = step_done(B, SPK_AMG_STEP_S)) ||
            (st = spgemm(B, &D->S[l], &D->T[l], &D->P[l])) ||
            (st = step_done(B, SPK_AMG_STEP_P)))
            goto fail;
        if (!fits(&D->P[l])) {
            st = spk_fail(ctx, SPK_ERR_UNSUPPORTED, "AMG setup on the GPU: P of %lld entries",
                          (long long)D->P[l].nnz);
            goto fail;
        }
        if ((st = transpose_map(B, &D->P[l], &D->R[l], &D->rmap[l])) ||
            (st = step_done(B, SPK_AMG_STEP_R)) ||
            (st = spgemm(B, &D->A[l], &D->P[l], &D->AP[l])) ||
            (st = step_done(B, SPK_AMG_STEP_AP)) ||
            (st = spgemm(B, &D->R[l], &D->AP[l], &D->A[l + 1])) ||
            (st = step_done(B, SPK_AMG_STEP_RAP)))
            goto fail;
        if (!(c->B = (double *)spk_malloc(ctx, (size_t)(nc > 0 ? nc : 1) * (size_t)k,
                                          sizeof *c->B))) {
            st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG level %d: out of memory", l + 1);
            goto fail;
        }
        const int what = host_values ? 2 : 0;     /* else the offsets: the rest stays here */
        if ((st = dcsr_download(B, &D->P[l], &h->P, what)) ||
            (st = dcsr_download(B, &D->R[l], &h->R, what)) ||
            (st = dcsr_download(B, &D->A[l + 1], &c->A, what)) ||
            (st = get(B, c->B, Bc, (size_t)(nc * k) * sizeof *Bc)) ||
            (st = step_done(B, SPK_AMG_STEP_DOWN)))
            goto fail;
        h->dP = D->P[l].v;
        h->dR = D->R[l].v;
        h->dPc = D->P[l].ci;
        h->dRc = D->R[l].ci;
        h->dAc = D->A[l + 1].ci;
        h->dA = D->A[l + 1].v;
        dfree(Bl);
        Bl = Bc;
        Bc = NULL;
        n = nc;
        bs = k;
        c->n = nc;
        c->bs = k;
        c->k = k;
        H->nlevels = l + 2;
        H->setup_s[l] = spk_now() - t0;
    }
    if (!host_values && H->nlevels > 1) {   /* the coarsest A's columns and values: its inverse */
        const int L = H->nlevels - 1;
        spk_csr *C = &H->lev[L].A;
        const double t0 = spk_now();
        if (!(C->colind = (int32_t *)spk_malloc(ctx, (size_t)(C->nnz > 0 ? C->nnz : 1),
                                                sizeof *C->colind))) {
            st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG coarsest level: out of memory");
            goto fail;
        }
        if ((st = get(B, C->colind, D->A[L].ci, (size_t)C->nnz * sizeof *C->colind)) ||
            (st = get(B, C->val, D->A[L].v, (size_t)C->nnz * sizeof(double))))
            goto fail;
        B->xfer_s += spk_now() - t0;
    }
    for (int l = 0; l < 32; l++)
        D->bytes += dcsr_bytes(&D->A[l]) + dcsr_bytes(&D->S[l]) + dcsr_bytes(&D->T[l]) +
                    dcsr_bytes(&D->P[l]) + dcsr_bytes(&D->AP[l]) + dcsr_bytes(&D->R[l]) +
                    4.0 * (double)D->R[l].nnz + 8.0 * (double)D->A[l].m;
    D->bytes += 32.0 * (double)n0;
    H->dev_bytes = D->bytes;
    H->spgemm_bytes = B->peak;
    H->spgemm_bound = B->bound;
    H->spgemm_chunked = B->chunked;
    H->xfer_s = B->xfer_s;
    H->xfer_up_s = B->up_s;
    H->a_from_layout = B->from_layout;
    memcpy(H->dev_step_s, B->step_s, sizeof H->dev_step_s);
    st = SPK_OK;
fail:
    dfree(Bl);
    dfree(Bc);
    dfree(agg);
    dfree(B->tmp);
    if (B->h)
        cusparseDestroy(B->h);
    if (!st)
        st = spk_amg_finish(ctx, H, A0);
    if (!st) {          /* the coarsest level's columns, values and inverse; the handle freed */
        step_done(B, SPK_AMG_STEP_END);
        H->dev_step_s[SPK_AMG_STEP_END] = B->step_s[SPK_AMG_STEP_END];
    }
    if (st)
        spk_amg_free(H);
    return st;
}

spk_status spk_amg_device_layout(spk_context *ctx, spk_amg_hier *H, int l, char which,
                                 const spk_csr *A, void **state)
{
    *state = NULL;
    dev_hier *D = (dev_hier *)H->dev;
    if (!D || l < 0 || l >= D->nlevels || (which != 'A' && l + 1 >= D->nlevels) ||
        (which == 'A' && l == 0))
        return spk_fail(ctx, SPK_ERR_ARG, "AMG level %d's %c: not in the device hierarchy", l,
                        which);
    dcsr *C = which == 'A' ? &D->A[l] : which == 'P' ? &D->P[l] : &D->R[l];
    if (C->m != A->nrows || C->nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "AMG level %d's %c: %lld rows, %lld entries on the "
                        "device, %lld and %lld asked for", l, which, (long long)C->m,
                        (long long)C->nnz, (long long)A->nrows, (long long)A->nnz);
    return spk_csr_dev_adopt(ctx, A, C->rp, C->ci, C->v, state);
}

spk_status spk_amg_refresh_device(spk_context *ctx, const spk_csr *A0, spk_matrix *M,
                                  spk_amg_hier *H)
{
    dev_hier *D = (dev_hier *)H->dev;
    if (!D)
        return spk_fail(ctx, SPK_ERR_ARG, "AMG refresh on the GPU: the hierarchy was built on "
                        "the host");
    dev_build Bd;
    memset(&Bd, 0, sizeof Bd);
    dev_build *B = &Bd;
    B->ctx = ctx;
    spk_status st = spk_cuda_state_of(ctx, &B->cs);
    if (st)
        return st;
    B->s = B->cs->stream;
    /* A's new values: from M's layout on the device where the build read A there (the update
     * put them in it), else from the host copy (downloaded first where the update left it
     * stale) */
    const spk_spmv_backend *be = H->a_from_layout ? csr_layout(B, A0, M) : NULL;
    st = be && A0->nnz > 0 ? be->csr_device(ctx, M->state, 1, D->A[0].rp, D->A[0].ci, D->A[0].v)
                           : SPK_ERR_UNSUPPORTED;
    if (st == SPK_ERR_UNSUPPORTED &&
        (!(st = M ? spk_matrix_host_values(ctx, M) : SPK_OK)))
        st = put(B, D->A[0].v, A0->val, (size_t)A0->nnz * sizeof *A0->val);
    if (st)
        return st;
    for (int l = 0; l < D->nlevels && !st; l++) {
        const double t0 = spk_now();
        spk_amg_level *h = &H->lev[l];
        if ((st = level_diag(B, D, H, l)))
            break;
        if (l + 1 < H->nlevels) {
            const dcsr *A = &D->A[l], *S = &D->S[l];
            k_s_fill<<<blocks(A->m), SPK_CUDA_BLOCK, 0, B->s>>>(A->m, A->rp, A->ci, A->v,
                                                                D->dinv[l], 4.0 / (3.0 * h->rho),
                                                                S->rp, S->ci, S->v);
            if ((st = launched(B, "AMG S values")) ||
                (st = products(B, &D->S[l], &D->T[l], &D->P[l])))
                break;
            k_gather<<<blocks(D->R[l].nnz), SPK_CUDA_BLOCK, 0, B->s>>>(D->R[l].nnz, D->rmap[l],
                                                                      D->P[l].v, D->R[l].v);
            if ((st = launched(B, "AMG R values")) ||
                (st = products(B, &D->A[l], &D->P[l], &D->AP[l])) ||
                (st = products(B, &D->R[l], &D->AP[l], &D->A[l + 1])))
                break;
        }
        H->setup_s[l] = spk_now() - t0;
    }
    /* the coarsest level's values for its inverse on the host */
    const int L = H->nlevels - 1;
    if (!st && L > 0)
        st = get(B, H->lev[L].A.val, D->A[L].v, (size_t)H->lev[L].A.nnz * sizeof(double));
    return st ? st : wait(B);
}
