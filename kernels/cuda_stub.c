/* kernels/cuda_stub.c -- the CUDA entry points of a build without CUDA (CMakeLists compiles
 * this file only then). Every table row and vector op is still present, so callers need no
 * #ifdef; each answers SPK_ERR_NOT_COMPILED with a message that says how to get CUDA.
 *
 * kernels/cuda_loader.c includes this file for the same answers while no CUDA backend is
 * loaded: it defines SPK_CUDA_STUB(name) to rename each entry point (stub_name, static) and
 * NO_CUDA to its own reason (what it looked for, where, and why it did not load). */
#include "formats.h"
#include "../solvers/amg.h"
#include "../solvers/ilu.h"

#include <stdio.h>
#include <string.h>

#ifndef SPK_CUDA_STUB
#define SPK_CUDA_STUB(name) name
#define SPK_CUDA_STUB_SCOPE
#define NO_CUDA "this build has no CUDA support (rebuild with the CUDA Toolkit)"
#endif

SPK_CUDA_STUB_SCOPE int SPK_CUDA_STUB(spk_has_cuda)(void) { return 0; }

SPK_CUDA_STUB_SCOPE int
SPK_CUDA_STUB(spk_cuda_probe)(char *name, size_t name_len, char *why, size_t why_len)
{
    if (name && name_len)
        name[0] = '\0';
    if (why && why_len)
        snprintf(why, why_len, "%s", NO_CUDA);
    return 0;
}

SPK_CUDA_STUB_SCOPE int
SPK_CUDA_STUB(spk_cuda_select)(int local_rank, int *ordinal, char *why, size_t why_len)
{
    (void)local_rank;
    if (ordinal)
        *ordinal = -1;
    if (why && why_len)
        snprintf(why, why_len, "%s", NO_CUDA);
    return 0;
}

SPK_CUDA_STUB_SCOPE spk_status SPK_CUDA_STUB(spk_cuda_init)(spk_context *ctx)
{
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "%s", NO_CUDA);
}

SPK_CUDA_STUB_SCOPE void SPK_CUDA_STUB(spk_cuda_fini)(spk_context *ctx) { (void)ctx; }

SPK_CUDA_STUB_SCOPE spk_status
SPK_CUDA_STUB(spk_cuda_download_bytes)(spk_context *ctx, void *host, const void *dev, size_t bytes)
{
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "copy from device memory: %s", NO_CUDA);
}

/* ---- value updates on the device: never reached without CUDA (no context is on a GPU) ------ */

SPK_CUDA_STUB_SCOPE spk_status
SPK_CUDA_STUB(spk_matrix_dev_update)(spk_context *ctx, spk_matrix *A, const double *val,
                                     int val_on_device, spk_dev_upd *how)
{
    *how = SPK_DEV_UPD_HOST;
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "value update on the GPU: %s", NO_CUDA);
}

SPK_CUDA_STUB_SCOPE spk_status
SPK_CUDA_STUB(spk_matrix_dev_diagonal)(spk_context *ctx, spk_matrix *A, double *d_diag, int *done)
{
    *done = 0;
    return SPK_OK;
}

SPK_CUDA_STUB_SCOPE spk_status
SPK_CUDA_STUB(spk_matrix_dev_download)(spk_context *ctx, spk_matrix *A)
{
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "values on the GPU: %s", NO_CUDA);
}

SPK_CUDA_STUB_SCOPE void SPK_CUDA_STUB(spk_matrix_dev_free)(struct spk_matrix_dev *d) { (void)d; }

SPK_CUDA_STUB_SCOPE spk_status
SPK_CUDA_STUB(spk_matrix_dev_borrow)(spk_context *ctx, spk_matrix *A, double *d_val)
{
    (void)A;
    (void)d_val;
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "values on the GPU: %s", NO_CUDA);
}

/* ---- SpMV backend rows ---------------------------------------------------------------------- */

static spk_status stub_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    (void)A;
    if (state)
        *state = NULL;
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "SpMV on the GPU: %s", NO_CUDA);
}

static spk_status stub_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                            double beta, double *y)
{
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "SpMV on the GPU: %s", NO_CUDA);
}

static void stub_destroy(void *state) { (void)state; }

static spk_status stub_update(spk_context *ctx, void *state, const spk_csr *A)
{
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "SpMV on the GPU: %s", NO_CUDA);
}

SPK_CUDA_STUB_SCOPE const spk_spmv_backend SPK_CUDA_STUB(spk_backend_coo_cuda) = {
    .name = "coo-cuda",
    .format = SPK_FMT_COO,
    .device = SPK_DEVICE_CUDA,
    .setup = stub_setup,
    .spmv = stub_spmv,
    .destroy = stub_destroy,
    .update = stub_update,
};
SPK_CUDA_STUB_SCOPE const spk_spmv_backend SPK_CUDA_STUB(spk_backend_csr_cuda) = {
    .name = "csr-cuda",
    .format = SPK_FMT_CSR,
    .device = SPK_DEVICE_CUDA,
    .setup = stub_setup,
    .spmv = stub_spmv,
    .destroy = stub_destroy,
    .update = stub_update,
};
SPK_CUDA_STUB_SCOPE int
SPK_CUDA_STUB(spk_ell_cuda_state_rows)(const void *state) { (void)state; return 0; }
SPK_CUDA_STUB_SCOPE int
SPK_CUDA_STUB(spk_hyb_cuda_state_rows)(const void *state) { (void)state; return 0; }

SPK_CUDA_STUB_SCOPE const spk_spmv_backend SPK_CUDA_STUB(spk_backend_ell_cuda) = {
    .name = "ell-cuda",
    .format = SPK_FMT_ELL,
    .device = SPK_DEVICE_CUDA,
    .setup = stub_setup,
    .spmv = stub_spmv,
    .destroy = stub_destroy,
    .update = stub_update,
};
SPK_CUDA_STUB_SCOPE const spk_spmv_backend SPK_CUDA_STUB(spk_backend_hyb_cuda) = {
    .name = "hyb-cuda",
    .format = SPK_FMT_HYB,
    .device = SPK_DEVICE_CUDA,
    .setup = stub_setup,
    .spmv = stub_spmv,
    .destroy = stub_destroy,
    .update = stub_update,
};
SPK_CUDA_STUB_SCOPE const spk_spmv_backend SPK_CUDA_STUB(spk_backend_jds_cuda) = {
    .name = "jds-cuda",
    .format = SPK_FMT_JDS,
    .device = SPK_DEVICE_CUDA,
    .setup = stub_setup,
    .spmv = stub_spmv,
    .destroy = stub_destroy,
    .update = stub_update,
};
SPK_CUDA_STUB_SCOPE const spk_spmv_backend SPK_CUDA_STUB(spk_backend_bsr_cuda) = {
    .name = "bsr-cuda",
    .format = SPK_FMT_BSR,
    .device = SPK_DEVICE_CUDA,
    .setup = stub_setup,
    .spmv = stub_spmv,
    .destroy = stub_destroy,
    .update = stub_update,
};
SPK_CUDA_STUB_SCOPE const spk_spmv_backend SPK_CUDA_STUB(spk_backend_sell_cuda) = {
    .name = "sell-cuda",
    .format = SPK_FMT_SELL,
    .device = SPK_DEVICE_CUDA,
    .setup = stub_setup,
    .spmv = stub_spmv,
    .destroy = stub_destroy,
    .update = stub_update,
};

/* ---- vector ops -------------------------------------------------------------------------- */

static spk_status no_cuda(spk_context *ctx)
{
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "vector operation on the GPU: %s", NO_CUDA);
}

static spk_status s_alloc(spk_context *ctx, int64_t n, double **v)
{
    if (v)
        *v = NULL;
    return no_cuda(ctx);
}
static void s_free(spk_context *ctx, double *v) { (void)ctx; (void)v; }
static spk_status s_xfer(spk_context *ctx, int64_t n, const double *a, double *b)
{
    return no_cuda(ctx);
}
static spk_status s_fill(spk_context *ctx, int64_t n, double a, double *y) { return no_cuda(ctx); }
static spk_status s_dot(spk_context *ctx, int64_t n, const double *x, const double *y, double *r)
{
    return no_cuda(ctx);
}
static spk_status s_nrm2(spk_context *ctx, int64_t n, const double *x, double *r)
{
    return no_cuda(ctx);
}
static spk_status s_dot2(spk_context *ctx, int64_t n, const double *x, const double *y,
                         const double *z, double *r0, double *r1)
{
    return no_cuda(ctx);
}
static spk_status s_axpy(spk_context *ctx, int64_t n, double a, const double *x, double *y)
{
    return no_cuda(ctx);
}
static spk_status s_axpby(spk_context *ctx, int64_t n, double a, const double *x, double b,
                          double *y)
{
    return no_cuda(ctx);
}
static spk_status s_scal(spk_context *ctx, int64_t n, double a, double *x) { return no_cuda(ctx); }
static spk_status s_pmul(spk_context *ctx, int64_t n, const double *d, const double *x, double *y)
{
    return no_cuda(ctx);
}
static spk_status s_pmul_axpby(spk_context *ctx, int64_t n, double a, const double *d,
                               const double *x, double b, double *y)
{
    return no_cuda(ctx);
}
static spk_status s_step(spk_context *ctx, int64_t n, const double *t, const spk_step *s)
{
    return no_cuda(ctx);
}
static spk_status s_invert(spk_context *ctx, int64_t n, double *d, int allow_negative,
                           int64_t *bad)
{
    return no_cuda(ctx);
}
static spk_status s_gemv_n_sub(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                               const double *h, double *w)
{
    return no_cuda(ctx);
}
static spk_status s_sync(spk_context *ctx) { return no_cuda(ctx); }
static spk_status s_dot_sink(spk_context *ctx, int64_t n, const double *x, const double *y,
                             const spk_dot_sink *sink)
{
    return no_cuda(ctx);
}
static spk_status s_fetch(spk_context *ctx, const void *dev, size_t bytes, int slot, void *host)
{
    return no_cuda(ctx);
}
static spk_status s_fetch_wait(spk_context *ctx, int slot) { return no_cuda(ctx); }
static spk_status s_put(spk_context *ctx, const void *host, size_t bytes, void *dev)
{
    return no_cuda(ctx);
}

static const spk_vec_ops stub_ops = {
    .device = SPK_DEVICE_CUDA,
    .alloc = s_alloc,
    .free = s_free,
    .upload = s_xfer,
    .download = s_xfer,
    .copy = s_xfer,
    .fill = s_fill,
    .dot = s_dot,
    .nrm2 = s_nrm2,
    .dot2 = s_dot2,
    .axpy = s_axpy,
    .axpby = s_axpby,
    .scal = s_scal,
    .pmul = s_pmul,
    .pmul_axpby = s_pmul_axpby,
    .step = s_step,
    .invert = s_invert,
    .gemv_n_sub = s_gemv_n_sub,
    .sync = s_sync,
    .dot_sink = s_dot_sink,
    .fetch = s_fetch,
    .fetch_wait = s_fetch_wait,
    .put = s_put,
};

SPK_CUDA_STUB_SCOPE const spk_vec_ops *SPK_CUDA_STUB(spk_vec_ops_cuda)(void) { return &stub_ops; }

/* ---- the methods' GPU steps: none (their drivers answer SPK_ERR_NOT_COMPILED) ------------ */
struct spk_cg_ops;
struct spk_bicg_ops;
struct spk_gmres_ops;
SPK_CUDA_STUB_SCOPE const struct spk_cg_ops *SPK_CUDA_STUB(spk_cg_ops_cuda)(void) { return NULL; }
SPK_CUDA_STUB_SCOPE const struct spk_bicg_ops *
SPK_CUDA_STUB(spk_bicg_ops_cuda)(void) { return NULL; }
SPK_CUDA_STUB_SCOPE const struct spk_gmres_ops *
SPK_CUDA_STUB(spk_gmres_ops_cuda)(void) { return NULL; }

SPK_CUDA_STUB_SCOPE void *
SPK_CUDA_STUB(spk_context_stream)(const spk_context *ctx) { (void)ctx; return NULL; }

/* ---- the incomplete factorizations' exact solves on the GPU (solvers/pc_ilu_cuda.cu) ------ */
SPK_CUDA_STUB_SCOPE spk_status
SPK_CUDA_STUB(spk_ilu_sv_setup)(spk_context *ctx, const spk_ilu_factors *F, spk_ilu_sv **sv)
{
    *sv = NULL;
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "triangular solves on the GPU: %s", NO_CUDA);
}

SPK_CUDA_STUB_SCOPE spk_status
SPK_CUDA_STUB(spk_ilu_sv_update)(spk_context *ctx, spk_ilu_sv *sv, const spk_ilu_factors *F)
{
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "triangular solves on the GPU: %s", NO_CUDA);
}

SPK_CUDA_STUB_SCOPE spk_status
SPK_CUDA_STUB(spk_ilu_sv_apply)(spk_context *ctx, spk_ilu_sv *sv, const double *r, double *y,
                                double *z)
{
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "triangular solves on the GPU: %s", NO_CUDA);
}

SPK_CUDA_STUB_SCOPE size_t SPK_CUDA_STUB(spk_ilu_sv_bytes)(const spk_ilu_sv *sv)
{
    (void)sv;
    return 0;
}

SPK_CUDA_STUB_SCOPE void SPK_CUDA_STUB(spk_ilu_sv_free)(spk_ilu_sv *sv) { (void)sv; }

/* ---- the AMG hierarchy built on the GPU (solvers/amg_setup_cuda.cu) ------------------------ */
SPK_CUDA_STUB_SCOPE spk_status
SPK_CUDA_STUB(spk_amg_build_device)(spk_context *ctx, const spk_csr *A, const spk_matrix *M,
                                    int symmetric, const spk_amg_options *opt, int host_values,
                                    spk_amg_hier *H)
{
    (void)A;
    (void)M;
    (void)symmetric;
    (void)opt;
    (void)host_values;
    memset(H, 0, sizeof *H);
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "AMG setup on the GPU: %s", NO_CUDA);
}

SPK_CUDA_STUB_SCOPE spk_status
SPK_CUDA_STUB(spk_amg_refresh_device)(spk_context *ctx, const spk_csr *A, spk_matrix *M,
                                      spk_amg_hier *H)
{
    (void)A;
    (void)M;
    (void)H;
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "AMG refresh on the GPU: %s", NO_CUDA);
}

SPK_CUDA_STUB_SCOPE void SPK_CUDA_STUB(spk_amg_device_free)(spk_amg_hier *H) { H->dev = NULL; }

SPK_CUDA_STUB_SCOPE spk_status
SPK_CUDA_STUB(spk_amg_device_layout)(spk_context *ctx, spk_amg_hier *H, int l, char which,
                                     const spk_csr *A, void **state)
{
    (void)H;
    (void)l;
    (void)which;
    (void)A;
    *state = NULL;
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "AMG level layouts on the GPU: %s", NO_CUDA);
}
