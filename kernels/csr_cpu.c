/* kernels/csr_cpu.c -- CSR SpMV on the CPU: the canonical layout needs no conversion, so the
 * state is a pointer to the matrix's own CSR (owned by the matrix, not by the backend).
 * Row-parallel with OpenMP; one read of the matrix (12 bytes per entry + 8 per row) and a
 * gather of x per entry. */
#include "formats.h"

static spk_status csr_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    *state = (void *)A;
    return SPK_OK;
}

static spk_status csr_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    spk_csr_spmv_ref((const spk_csr *)state, alpha, x, beta, y);
    return SPK_OK;
}

/* y = A x and sink->out = x'y in one pass (CG's q = A p and p'q): each row's sum is exactly
 * spk_csr_spmv_ref's (alpha 1, beta 0), so y has the reference's bits; x_i is read beside the
 * row it belongs to, which saves the separate pass over x and y. */
static spk_status csr_spmv_dot(spk_context *ctx, const void *state, const double *x, double *y,
                               const spk_dot_sink *sink)
{
    const spk_csr *A = (const spk_csr *)state;
    if (sink->skip && *sink->skip)
        return SPK_OK;
    double d = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : d) if (A->nnz > 32768)
    for (int64_t i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            s += A->val[p] * x[A->colind[p]];
        y[i] = s;
        d += x[i] * s;
    }
    *sink->out = d;
    return SPK_OK;
}

static void csr_destroy(void *state) { (void)state; }

/* The state is the matrix's own CSR, whose values the update has already written. */
static spk_status csr_update(spk_context *ctx, void *state, const spk_csr *A)
{
    if (state != (const void *)A)
        return spk_fail(ctx, SPK_ERR_ARG, "csr-cpu update: the layout belongs to another matrix");
    return SPK_OK;
}

const spk_spmv_backend spk_backend_csr_cpu = {
    "csr-cpu", SPK_FMT_CSR, SPK_DEVICE_CPU, csr_setup, csr_spmv, csr_destroy, csr_update,
    csr_spmv_dot,
    NULL,                          /* update_device: the host refill is the update */
};
