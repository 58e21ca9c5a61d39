/* kernels/jds_cuda.cu -- JDS (jagged diagonal storage) SpMV on the GPU, one thread per sorted
 * row (Saad, "Krylov subspace methods on supercomputers", SISC 10(6) 1989, the JAD format;
 * Saad, Iterative Methods for Sparse Linear Systems, 2nd ed., sec. 3.4). Rows are sorted by
 * length, descending, once at setup (spk_jds_from_csr, jds_cpu.c); jagged diagonal d holds
 * the d-th entry of every row that has one, so it is a prefix of the sorted rows and thread k
 * finds its entry of diagonal d at jd_ptr[d] + k: consecutive threads read consecutive
 * entries, coalesced like ELL but without padding. Neighbouring threads have nearly equal
 * lengths, so warps diverge little. The result goes straight to y[perm[k]] (a scattered
 * store, one per row) rather than permuting the system: DESIGN.md leaves that choice to
 * measurement, and this way the backend stays a drop-in SpMV.
 *
 * Cost per SpMV: 12 bytes per entry, 8 per diagonal (jd_ptr, broadcast from cache), 4 per row
 * (perm), a gather of x per entry, y written once (read when beta != 0). A single very long
 * row is walked by one thread (ndiags steps): JDS suits matrices whose longest row is short,
 * which is how the format choice uses it. */
#include "cuda_common.h"

#include <string.h>

typedef struct jds_dev {
    int64_t  nrows, ncols, nnz, ndiags;
    int32_t *perm;                      /* nrows: original row of sorted position k           */
    int64_t *jd_ptr;                    /* ndiags + 1 offsets                                  */
    int32_t *col;
    double  *val;
    float   *val32;                     /* or (val NULL): jds32-cuda's values in fp32         */
    /* host mirrors kept from setup for value updates: the order and the values */
    int32_t *h_perm;
    int64_t *h_jd_ptr;
    double  *h_val;
    float   *h_val32;                   /* jds32-cuda: staging of the rounded values          */
    int      borrowed;                  /* a twin of setup_from: perm, jd_ptr, col and the host
                                         * mirrors are its row's; val32, h_val32, d_rowptr its own */
    int64_t *d_rowptr;                  /* nrows + 1: made at the first update on the device  */
} jds_dev;

template <class V>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
jds_kernel(int64_t nrows, int64_t ndiags, const int32_t *__restrict__ perm,
           const int64_t *__restrict__ jd_ptr, const int32_t *__restrict__ Aj,
           const V *__restrict__ Ax, const double *__restrict__ x, double alpha, double beta,
           double *__restrict__ y)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nrows;
         k += (int64_t)gridDim.x * blockDim.x) {
        double s = 0.0;
        int64_t start = ndiags > 0 ? __ldg(&jd_ptr[0]) : 0;
        for (int64_t d = 0; d < ndiags; d++) {
            int64_t next = __ldg(&jd_ptr[d + 1]);
            if (k >= next - start)              /* diagonals only shorten: row k is done */
                break;
            int64_t p = start + k;
            s += (double)__ldg(&Ax[p]) * __ldg(&x[__ldg(&Aj[p])]);
            start = next;
        }
        int64_t row = __ldg(&perm[k]);
        y[row] = spk_spmv_out(alpha, s, beta, y, row);
    }
}

static spk_status jds_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    const jds_dev *A = (const jds_dev *)state;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st || A->nrows == 0)                           /* never launch a zero-size grid */
        return st;
    const unsigned grid = spk_cuda_grid(cs, A->nrows, SPK_CUDA_BLOCK);
    if (A->val32)
        jds_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(A->nrows, A->ndiags, A->perm,
                                                            A->jd_ptr, A->col, A->val32, x,
                                                            alpha, beta, y);
    else
        jds_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(A->nrows, A->ndiags, A->perm,
                                                            A->jd_ptr, A->col, A->val, x, alpha,
                                                            beta, y);
    return spk_cuda_launched(ctx, "jds_kernel");
}

static void jds_destroy(void *state)
{
    jds_dev *d = (jds_dev *)state;
    if (!d)
        return;
    if (d->borrowed) {
        (void)cudaFree(d->val32);
        spk_free(d->h_val32);
        (void)cudaFree(d->d_rowptr);
        spk_free(d);
        return;
    }
    (void)cudaFree(d->perm);
    (void)cudaFree(d->jd_ptr);
    (void)cudaFree(d->col);
    (void)cudaFree(d->val);
    (void)cudaFree(d->val32);
    spk_free(d->h_perm);
    spk_free(d->h_jd_ptr);
    spk_free(d->h_val);
    spk_free(d->h_val32);
    (void)cudaFree(d->d_rowptr);
    spk_free(d);
}

/* The layout with fp64 values (jds-cuda) or fp32 ones (jds32-cuda). */
static spk_status jds_setup_as(spk_context *ctx, const spk_csr *A, int fp32, void **state)
{
    *state = NULL;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    spk_jds_fmt h;
    memset(&h, 0, sizeof h);
    if ((st = spk_jds_from_csr(ctx, A, &h)))
        return st;
    jds_dev *d = (jds_dev *)spk_calloc(ctx, 1, sizeof *d);
    if (!d || (fp32 && !(d->h_val32 = (float *)spk_malloc(ctx, h.nnz > 0 ? (size_t)h.nnz : 1,
                                                            sizeof(float))))) {
        spk_jds_fmt_free(&h);
        jds_destroy(d);
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s state: out of host memory",
                        fp32 ? "jds32-cuda" : "jds-cuda");
    }
    d->nrows = h.nrows;
    d->ncols = h.ncols;
    d->nnz = h.nnz;
    d->ndiags = h.ndiags;
    size_t nnz = (size_t)h.nnz, n = (size_t)h.nrows;
    size_t ptr_bytes = h.ndiags > 0 ? ((size_t)h.ndiags + 1) * sizeof(int64_t) : 0;
    void *v = NULL;
    if (!(st = spk_cuda_upload_new(ctx, &d->perm, h.perm, n * sizeof(int32_t), "JDS row order")) &&
        !(st = spk_cuda_upload_new(ctx, &d->jd_ptr, h.jd_ptr, ptr_bytes, "JDS diagonal offsets")) &&
        !(st = spk_cuda_upload_new(ctx, &d->col, h.col, nnz * sizeof(int32_t), "JDS columns")) &&
        !(st = spk_cuda_upload_values(ctx, &v, h.val, nnz, fp32, "JDS values")))
        st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "jds-cuda upload");
    if (fp32)
        d->val32 = (float *)v;
    else
        d->val = (double *)v;
    d->h_perm = h.perm;                                /* kept for value updates */
    d->h_jd_ptr = h.jd_ptr;
    d->h_val = h.val;
    h.perm = NULL;
    h.jd_ptr = NULL;
    h.val = NULL;
    spk_jds_fmt_free(&h);
    if (st) {
        jds_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status jds_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return jds_setup_as(ctx, A, 0, state);
}

static spk_status jds32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return jds_setup_as(ctx, A, 1, state);
}

/* jds32-cuda from a jds-cuda state on the device (spk_spmv_backend.setup_from). */
static spk_status jds32_setup_from(spk_context *ctx, const void *row, void **state, int *fits)
{
    *state = NULL;
    *fits = 0;
    const jds_dev *r = (const jds_dev *)row;
    if (!r || r->borrowed || r->val32)
        return spk_fail(ctx, SPK_ERR_ARG, "jds32-cuda: setup_from needs a jds-cuda state");
    const size_t nnz = (size_t)(r->nnz > 0 ? r->nnz : 1);
    jds_dev *d = (jds_dev *)spk_calloc(ctx, 1, sizeof *d);
    float *stage = (float *)spk_malloc(ctx, nnz, sizeof(float));
    if (!d || !stage) {
        spk_free(d);
        spk_free(stage);
        return spk_fail(ctx, SPK_ERR_NOMEM, "jds32-cuda state: out of host memory");
    }
    *d = *r;
    d->val = NULL;
    d->val32 = NULL;
    d->h_val32 = stage;
    d->d_rowptr = NULL;
    d->borrowed = 1;
    spk_status st = spk_cuda_malloc(ctx, &d->val32, nnz * sizeof(float), "JDS values in fp32");
    if (!st)
        st = spk_cuda_round_checked(ctx, r->nnz, r->val, d->val32, fits);
    if (st) {
        jds_destroy(d);
        return st;
    }
    *state = d;
    return SPK_OK;
}

static spk_status jds32_refill(spk_context *ctx, void *state, const void *row, int *fits)
{
    jds_dev *d = (jds_dev *)state;
    const jds_dev *r = (const jds_dev *)row;
    *fits = 0;
    if (!d || !d->borrowed || !r || r->borrowed || r->val32 || r->nnz != d->nnz ||
        r->nrows != d->nrows || r->col != d->col || r->perm != d->perm)
        return spk_fail(ctx, SPK_ERR_ARG, "jds32-cuda refill: the row's layout is not this one's");
    return spk_cuda_round_checked(ctx, d->nnz, r->val, d->val32, fits);
}

static spk_status jds_update(spk_context *ctx, void *state, const spk_csr *A)
{
    jds_dev *d = (jds_dev *)state;
    if (!d || d->nrows != A->nrows || d->nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "jds-cuda update: the layout does not match the matrix");
    spk_jds_fill_values(A, d->h_perm, d->h_jd_ptr, d->h_val);
    return d->val32 ? spk_cuda_upload_values_into(ctx, d->val32, d->h_val, d->h_val32,
                                                  (size_t)d->nnz, 1, "JDS values (update)")
                    : spk_cuda_upload_values_into(ctx, d->val, d->h_val, NULL, (size_t)d->nnz, 0,
                                                  "JDS values (update)");
}

/* Sorted row k (original row perm[k]) puts its entry d at jd_ptr[d] + k (spk_jds_fill_values):
 * one thread per sorted row, so at each d consecutive threads store consecutive entries. A
 * row is walked by one thread, as the SpMV kernel walks it. */
template <class V>
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
jds_refill_kernel(int64_t nrows, const int32_t *__restrict__ perm,
                  const int64_t *__restrict__ jd_ptr, const int64_t *__restrict__ Ap,
                  const double *__restrict__ Av, V *__restrict__ val)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nrows;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = __ldg(&perm[k]), p0 = __ldg(&Ap[r]), len = __ldg(&Ap[r + 1]) - p0;
        for (int64_t d = 0; d < len; d++)
            val[__ldg(&jd_ptr[d]) + k] = (V)__ldg(&Av[p0 + d]);
    }
}

/* The update on the device: the kernel above, which needs A's row offsets on the device
 * (uploaded at the first call); the order and the diagonal offsets are the layout's own. */
static spk_status jds_update_device(spk_context *ctx, void *state, const spk_csr *A,
                                    const double *d_val)
{
    jds_dev *d = (jds_dev *)state;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (!d || d->nrows != A->nrows || d->nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "jds-cuda update: the layout does not match the matrix");
    if (!d->d_rowptr &&
        (st = spk_cuda_upload_wait(ctx, &d->d_rowptr, A->rowptr,
                                   ((size_t)A->nrows + 1) * sizeof(int64_t),
                                   "JDS refill row offsets")))
        return st;
    if (!d_val || d->nrows == 0 || d->nnz == 0)        /* never launch a zero-size grid */
        return SPK_OK;
    const unsigned grid = spk_cuda_grid(cs, d->nrows, SPK_CUDA_BLOCK);
    if (d->val32)
        jds_refill_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(d->nrows, d->perm, d->jd_ptr,
                                                                   d->d_rowptr, d_val, d->val32);
    else
        jds_refill_kernel<<<grid, SPK_CUDA_BLOCK, 0, cs->stream>>>(d->nrows, d->perm, d->jd_ptr,
                                                                   d->d_rowptr, d_val, d->val);
    return spk_cuda_launched(ctx, "jds_refill_kernel");
}

extern "C" const spk_spmv_backend spk_backend_jds32_cuda = {
    .name = "jds32-cuda",
    .format = SPK_FMT_JDS,
    .device = SPK_DEVICE_CUDA,
    .setup = jds32_setup,
    .spmv = jds_spmv,
    .destroy = jds_destroy,
    .update = jds_update,
    .spmv_dot = NULL,
    .update_device = jds_update_device,
    .fp32 = NULL,
    .setup_from = jds32_setup_from,
    .refill = jds32_refill,
    .spmv_dot32 = NULL,
    .spmv_step = NULL,
    .csr_device = NULL,
};

extern "C" const spk_spmv_backend spk_backend_jds_cuda = {
    .name = "jds-cuda",
    .format = SPK_FMT_JDS,
    .device = SPK_DEVICE_CUDA,
    .setup = jds_setup,
    .spmv = jds_spmv,
    .destroy = jds_destroy,
    .update = jds_update,
    .spmv_dot = NULL,                /* none; written out, as C++ warns of omitted fields */
    .update_device = jds_update_device,
    .fp32 = &spk_backend_jds32_cuda,
    .setup_from = NULL,              /* a twin's entries */
    .refill = NULL,
    .spmv_dot32 = NULL,
    .spmv_step = NULL,
    .csr_device = NULL,
};
