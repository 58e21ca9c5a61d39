/* kernels/csr32_cpu.c -- CSR SpMV with the values in fp32, csr-cpu's fp32 twin: the matrix of
 * a mixed-precision solve's inner Krylov method (src/mixed.c, docs/solvers.md). One read of
 * the matrix costs 8 bytes per entry (4 value + 4 column) + 8 per row, against csr-cpu's 12 +
 * 8: on a CPU whose SpMV is bound by memory bandwidth, about 2/3 of its time. Each product
 * a_ij x_j is formed and summed in double, row by row in csr-cpu's order, so the only
 * difference from csr-cpu is the rounding of each a_ij to float (a relative change of at most
 * 2^-24). Not in the registry (kernels/backends.c): a layout of its own copy of the indices,
 * never chosen as a format. Also here: the rounding every fp32 twin's values take
 * (kernels/formats.h). */
#include "formats.h"

#include <string.h>

static void csr32_free(spk_csr32 *f)
{
    if (!f)
        return;
    spk_free(f->rowptr);
    spk_free(f->colind);
    spk_free(f->val);
    spk_free(f);
}

void spk_round_fp32(const double *v, int64_t n, float *out)
{
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t p = 0; p < n; p++)
        out[p] = (float)v[p];
}

spk_status spk_values_fp32(spk_context *ctx, const char *who, int64_t n, double **val,
                           float **val32)
{
    float *v = spk_malloc(ctx, (size_t)(n > 0 ? n : 1), sizeof *v);
    if (!v)
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s: %lld values in fp32: out of memory", who,
                        (long long)n);
    spk_round_fp32(*val, n, v);
    spk_free(*val);
    *val = NULL;
    *val32 = v;
    return SPK_OK;
}

static spk_status csr32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    *state = NULL;
    spk_csr32 *f = spk_calloc(ctx, 1, sizeof *f);
    if (!f)
        return spk_fail(ctx, SPK_ERR_NOMEM, "csr32-cpu: out of memory");
    f->nrows = A->nrows;
    f->ncols = A->ncols;
    f->nnz = A->nnz;
    f->rowptr = spk_malloc(ctx, (size_t)A->nrows + 1, sizeof *f->rowptr);
    f->colind = spk_malloc(ctx, (size_t)(A->nnz > 0 ? A->nnz : 1), sizeof *f->colind);
    f->val = spk_malloc(ctx, (size_t)(A->nnz > 0 ? A->nnz : 1), sizeof *f->val);
    if (!f->rowptr || !f->colind || !f->val) {
        csr32_free(f);
        return spk_fail(ctx, SPK_ERR_NOMEM, "csr32-cpu: %lld entries in fp32: out of memory",
                        (long long)A->nnz);
    }
    memcpy(f->rowptr, A->rowptr, ((size_t)A->nrows + 1) * sizeof *f->rowptr);
    if (A->nnz > 0)
        memcpy(f->colind, A->colind, (size_t)A->nnz * sizeof *f->colind);
    spk_round_fp32(A->val, A->nnz, f->val);
    *state = f;
    return SPK_OK;
}

/* y = alpha A32 x + beta y: csr-cpu's loop with (double)a_ij in place of a_ij. */
static spk_status csr32_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                             double beta, double *y)
{
    (void)ctx;
    const spk_csr32 *A = state;
#pragma omp parallel for schedule(static) if (A->nnz > 32768)
    for (int64_t i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            s += (double)A->val[p] * x[A->colind[p]];
        y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
    }
    return SPK_OK;
}

/* y = A32 x with x and y in float (spk_cg32's q = A p) and sink->out = x'y over the rounded
 * y: each row summed in double as csr32_spmv sums it, rounded once; the dot over chunks fixed
 * by n (src/spk_internal.h), the same bits whatever the thread count. */
static spk_status csr32_spmv_dot32(spk_context *ctx, const void *state, const float *x,
                                   float *y, const spk_dot_sink *sink)
{
    (void)ctx;
    if (sink->skip && *sink->skip)
        return SPK_OK;
    const spk_csr32 *A = state;
    const int64_t n = A->nrows;
    double part[SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1 && A->nnz > 32768)
    for (int c = 0; c < nc; c++) {
        double d = 0.0;
        for (int64_t i = spk_chunk_lo(n, nc, c); i < spk_chunk_lo(n, nc, c + 1); i++) {
            double s = 0.0;
            for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
                s += (double)A->val[p] * (double)x[A->colind[p]];
            const float yi = (float)s;
            y[i] = yi;
            d += (double)x[i] * (double)yi;
        }
        part[c] = d;
    }
    *sink->out = spk_chunks_sum(part, nc);
    return SPK_OK;
}

/* Row i's sum a_i x, values V and vector X (each a double or a float), then y_i. */
#define CSR_STEP_ROWS(V, X)                                                                   \
    do {                                                                                      \
        const V *v_ = (const V *)(vals);                                                      \
        const X *x_ = (const X *)c.x;                                                         \
        _Pragma("omp parallel for schedule(static) if (rowptr[nrows] > 32768)")               \
        for (int64_t i = 0; i < nrows; i++) {                                                 \
            double t = 0.0;                                                                   \
            for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++)                               \
                t += (double)v_[p] * (double)x_[colind[p]];                                   \
            spk_step_put(&c, i, t);                                                           \
        }                                                                                     \
    } while (0)

void spk_csr_step_host(int64_t nrows, const int64_t *rowptr, const int32_t *colind,
                       const double *val, const float *val32, const spk_step *s)
{
    const spk_step c = *s;             /* a local copy: y cannot alias its fields */
    const void *vals = val ? (const void *)val : (const void *)val32;
    if (val && c.x32)
        CSR_STEP_ROWS(double, float);
    else if (val)
        CSR_STEP_ROWS(double, double);
    else if (c.x32)
        CSR_STEP_ROWS(float, float);
    else
        CSR_STEP_ROWS(float, double);
}
#undef CSR_STEP_ROWS

/* AMG's fused step (spk_step) over the fp32 values (spk_csr_step_host). */
static spk_status csr32_spmv_step(spk_context *ctx, const void *state, const spk_step *s)
{
    (void)ctx;
    const spk_csr32 *A = state;
    spk_csr_step_host(A->nrows, A->rowptr, A->colind, NULL, A->val, s);
    return SPK_OK;
}

static void csr32_destroy(void *state) { csr32_free(state); }

static spk_status csr32_update(spk_context *ctx, void *state, const spk_csr *A)
{
    spk_csr32 *f = state;
    if (!f || f->nrows != A->nrows || f->nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "csr32-cpu update: the layout belongs to another matrix");
    spk_round_fp32(A->val, A->nnz, f->val);
    return SPK_OK;
}

const spk_spmv_backend spk_backend_csr32_cpu = {
    .name = "csr32-cpu",
    .format = SPK_FMT_CSR,
    .device = SPK_DEVICE_CPU,
    .setup = csr32_setup,
    .spmv = csr32_spmv,
    .destroy = csr32_destroy,
    .update = csr32_update,
    .spmv_dot32 = csr32_spmv_dot32,
    .spmv_step = csr32_spmv_step,
};
