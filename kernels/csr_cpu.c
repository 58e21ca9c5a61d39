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

/* AMG's fused step (spk_step): each row's sum as spk_csr_spmv_ref forms it, then y_i from it
 * (spk_step_put), the CUDA rows' spmv_step on the host. */
static spk_status csr_spmv_step(spk_context *ctx, const void *state, const spk_step *s)
{
    (void)ctx;
    const spk_csr *A = state;
    spk_csr_step_host(A->nrows, A->rowptr, A->colind, A->val, NULL, s);
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
    .name = "csr-cpu",
    .format = SPK_FMT_CSR,
    .device = SPK_DEVICE_CPU,
    .setup = csr_setup,
    .spmv = csr_spmv,
    .destroy = csr_destroy,
    .update = csr_update,
    /* spmv_dot: kept apart, see docs/benchmarks.md (CPU) */
    /* update_device: the host refill is the update */
    .fp32 = &spk_backend_csr32_cpu,
    .spmv_step = csr_spmv_step,
};
