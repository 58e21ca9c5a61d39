/* kernels/cuda_plugin.cu -- the table of the CUDA backend's entry points (kernels/cuda_plugin.h)
 * that libspk_cuda.so exports as its one symbol. In the static library the table is unused:
 * its callers call the entry points directly. */
#include "cuda_plugin.h"

extern "C" {
const struct spk_cg_ops *spk_cg_ops_cuda(void);
const struct spk_bicg_ops *spk_bicg_ops_cuda(void);
const struct spk_gmres_ops *spk_gmres_ops_cuda(void);

__attribute__((visibility("default"))) const spk_cuda_plugin *spk_cuda_plugin_entry(void)
{
    static const spk_cuda_plugin plugin = {
        SPK_CUDA_PLUGIN_ABI,
        SPK_VERSION_STRING,
        sizeof(spk_context),
        spk_cuda_probe,
        spk_cuda_init,
        spk_cuda_fini,
        spk_cuda_download_bytes,
        spk_matrix_dev_update,
        spk_matrix_dev_diagonal,
        spk_matrix_dev_download,
        spk_matrix_dev_free,
        spk_matrix_dev_borrow,
        {&spk_backend_coo_cuda, &spk_backend_csr_cuda, &spk_backend_ell_cuda,
         &spk_backend_hyb_cuda, &spk_backend_jds_cuda, &spk_backend_bsr_cuda, &spk_backend_sell_cuda},
        spk_ell_cuda_state_rows,
        spk_hyb_cuda_state_rows,
        spk_vec_ops_cuda,
        spk_cg_ops_cuda,
        spk_bicg_ops_cuda,
        spk_gmres_ops_cuda,
        spk_context_stream,
        spk_ilu_sv_setup,
        spk_ilu_sv_update,
        spk_ilu_sv_apply,
        spk_ilu_sv_bytes,
        spk_ilu_sv_free,
        spk_cuda_select,
        spk_amg_build_device,
        spk_amg_refresh_device,
        spk_amg_device_free,
        spk_amg_device_layout,
    };
    return &plugin;
}
}
