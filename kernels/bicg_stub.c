/* kernels/bicg_stub.c -- the fused BiCGStab steps of a build without CUDA: each answers
 * SPK_ERR_NOT_COMPILED, as kernels/cuda_stub.c does for the other tables. CMakeLists compiles
 * every .c file of kernels/; SPK_HAVE_CUDA (defined for the library when CUDA is built)
 * leaves this one without definitions then, and kernels/bicg_cuda.cu has them. */
#include "../solvers/bicg_scalar.h"

#ifndef SPK_HAVE_CUDA

#define NO_CUDA "this build has no CUDA support (rebuild with the CUDA Toolkit)"

static spk_status no_cuda(spk_context *ctx)
{
    return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "BiCGStab step on the GPU: %s", NO_CUDA);
}

static spk_status s_update_p(spk_context *ctx, int64_t n, spk_bicg_scalars *S, const double *r,
                             const double *v, double *p, const double *dinv, double *ph)
{
    return no_cuda(ctx);
}

static spk_status s_dots(spk_context *ctx, int64_t n, spk_bicg_scalars *S, int phase,
                         const double *x, const double *y)
{
    return no_cuda(ctx);
}

static spk_status s_update_s(spk_context *ctx, int64_t n, spk_bicg_scalars *S, const double *v,
                             double *r, const double *dinv, double *sh)
{
    return no_cuda(ctx);
}

static spk_status s_update_xr(spk_context *ctx, int64_t n, spk_bicg_scalars *S, double *x,
                              const double *ph, const double *sh, const double *t,
                              const double *r0, double *r)
{
    return no_cuda(ctx);
}

static const spk_bicg_ops stub_bicg_ops = {
    SPK_DEVICE_CUDA, s_update_p, s_dots, s_update_s, s_update_xr,
};

const spk_bicg_ops *spk_bicg_ops_cuda(void) { return &stub_bicg_ops; }

#endif /* !SPK_HAVE_CUDA */
