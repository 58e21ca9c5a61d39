/* kernels/backends.c -- the SpMV backend registry: one row per format x device. A CUDA row
 * is always listed; in a build without CUDA its setup answers SPK_ERR_NOT_COMPILED
 * (kernels/cuda_stub.c), so callers never need an #ifdef. DIA has a CPU row only:
 * spk_backend_find(SPK_FMT_DIA, SPK_DEVICE_CUDA) is NULL (docs/formats.md). */
#include "formats.h"

static const spk_spmv_backend *const all_backends[] = {
    &spk_backend_coo_cpu,  &spk_backend_csr_cpu,  &spk_backend_ell_cpu,
    &spk_backend_hyb_cpu,  &spk_backend_jds_cpu,  &spk_backend_dia_cpu,
    &spk_backend_bsr_cpu,  &spk_backend_sell_cpu,
    &spk_backend_coo_cuda, &spk_backend_csr_cuda, &spk_backend_ell_cuda,
    &spk_backend_hyb_cuda, &spk_backend_jds_cuda, &spk_backend_bsr_cuda,
    &spk_backend_sell_cuda,
};

const spk_spmv_backend *const *spk_backend_all(size_t *count)
{
    if (count)
        *count = sizeof all_backends / sizeof all_backends[0];
    return all_backends;
}

const spk_spmv_backend *spk_backend_find(spk_format fmt, spk_device dev)
{
    for (size_t i = 0; i < sizeof all_backends / sizeof all_backends[0]; i++)
        if (all_backends[i]->format == fmt && all_backends[i]->device == dev)
            return all_backends[i];
    return NULL;
}
