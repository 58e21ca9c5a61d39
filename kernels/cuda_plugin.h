/* kernels/cuda_plugin.h -- the CUDA backend as one table of entry points, for the shared
 * library's run-time loading of it (docs/design.md, "One library with or without a GPU").
 *
 * libspk.so holds no CUDA code: its CUDA entry points (src/spk_internal.h's CUDA context
 * plumbing, the SpMV backend rows kernels/formats.h lists, the vector-ops and the methods'
 * step tables) are those of kernels/cuda_loader.c, which loads libspk_cuda.so with dlopen when
 * a context asks for a GPU and forwards each call to the table below. libspk_cuda.so is the
 * library's own objects with the CUDA ones (the static library's set), linked so that it
 * exports nothing but spk_cuda_plugin_entry (kernels/cuda_plugin.map): its C code is a private
 * copy, which shares no state with libspk.so's but what the context and the arguments carry
 * (the library keeps all of its state there). Programs linked with the static library call
 * the CUDA code directly and never load anything. */
#ifndef SPK_CUDA_PLUGIN_H
#define SPK_CUDA_PLUGIN_H

#include "formats.h"
#include "../solvers/amg.h"
#include "../solvers/ilu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever the table or a structure it passes changes (4: select, and the context's
 * tuning.mpi_composed; 5: the rows' fp32 twins, spk_spmv_backend.fp32; 6: the BSR row; 7: the
 * twins' spmv_dot32, CG's fp32-vector steps and tuning.mixed_vectors; 8: the AMG setup on
 * the GPU, spk_amg_hier's new fields; 9: amg_device_layout; 10: the rows' spmv_step and the
 * vector table's step; 11: tuning.csr_group and the SELL row; 12: spk_matrix_info's bandwidth
 * and coherence, which move spk_matrix's later fields; 13: spk_spmv_backend.csr_device,
 * amg_build_device's matrix, spk_amg_hier's step times, matrix_dev_borrow and spk_matrix's
 * shape_unset and dev_borrowed; 14: tuning.csr_sums): a libspk_cuda.so of another layout is
 * refused. */
#define SPK_CUDA_PLUGIN_ABI 14

struct spk_cg_ops;
struct spk_bicg_ops;
struct spk_gmres_ops;

typedef struct spk_cuda_plugin {
    int         abi;              /* SPK_CUDA_PLUGIN_ABI of the build                          */
    const char *version;          /* SPK_VERSION_STRING of the build                           */
    size_t      context_size;     /* sizeof(spk_context): both sides must agree                */
    int         (*probe)(char *name, size_t name_len, char *why, size_t why_len);
    spk_status  (*init)(spk_context *ctx);
    void        (*fini)(spk_context *ctx);
    spk_status  (*download_bytes)(spk_context *ctx, void *host, const void *dev, size_t bytes);
    spk_status  (*matrix_dev_update)(spk_context *ctx, spk_matrix *A, const double *val,
                                     int val_on_device, spk_dev_upd *how);
    spk_status  (*matrix_dev_diagonal)(spk_context *ctx, spk_matrix *A, double *d_diag,
                                       int *done);
    spk_status  (*matrix_dev_download)(spk_context *ctx, spk_matrix *A);
    void        (*matrix_dev_free)(struct spk_matrix_dev *d);
    spk_status  (*matrix_dev_borrow)(spk_context *ctx, spk_matrix *A, double *d_val);
    /* the SpMV rows: COO, CSR, ELL, HYB, JDS, BSR (each with its fp32 twin, .fp32) */
    const spk_spmv_backend *backend[7];
    int         (*ell_state_rows)(const void *state);
    int         (*hyb_state_rows)(const void *state);
    const spk_vec_ops           *(*vec_ops)(void);
    const struct spk_cg_ops     *(*cg_ops)(void);
    const struct spk_bicg_ops   *(*bicg_ops)(void);
    const struct spk_gmres_ops  *(*gmres_ops)(void);
    void        *(*context_stream)(const spk_context *ctx);
    /* the incomplete factorizations' exact solves (solvers/ilu.h, spk_ilu_sv_*) */
    spk_status  (*ilu_sv_setup)(spk_context *ctx, const spk_ilu_factors *F, spk_ilu_sv **sv);
    spk_status  (*ilu_sv_update)(spk_context *ctx, spk_ilu_sv *sv, const spk_ilu_factors *F);
    spk_status  (*ilu_sv_apply)(spk_context *ctx, spk_ilu_sv *sv, const double *r, double *y,
                                double *z);
    size_t      (*ilu_sv_bytes)(const spk_ilu_sv *sv);
    void        (*ilu_sv_free)(spk_ilu_sv *sv);
    /* one GPU per node-local MPI rank (spk_cuda_select) */
    int         (*select)(int local_rank, int *ordinal, char *why, size_t why_len);
    /* the AMG hierarchy built on the GPU (solvers/amg.h) */
    spk_status  (*amg_build_device)(spk_context *ctx, const spk_csr *A, const spk_matrix *M,
                                    int symmetric, const spk_amg_options *opt, int host_values,
                                    spk_amg_hier *H);
    spk_status  (*amg_refresh_device)(spk_context *ctx, const spk_csr *A, spk_matrix *M,
                                      spk_amg_hier *H);
    void        (*amg_device_free)(spk_amg_hier *H);
    spk_status  (*amg_device_layout)(spk_context *ctx, spk_amg_hier *H, int l, char which,
                                     const spk_csr *A, void **state);
} spk_cuda_plugin;

/* libspk_cuda.so's one exported symbol. */
typedef const spk_cuda_plugin *(*spk_cuda_plugin_entry_fn)(void);
#define SPK_CUDA_PLUGIN_ENTRY "spk_cuda_plugin_entry"

#ifdef __cplusplus
}
#endif
#endif /* SPK_CUDA_PLUGIN_H */
