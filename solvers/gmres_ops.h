/* solvers/gmres_ops.h -- GMRES's own vector step, classical Gram-Schmidt twice (CGS2) over the
 * basis, as a table per device: solvers/gmres_cpu.c (four passes, the specification) and
 * solvers/gmres_cuda.cu (three passes, one wait). */
#ifndef SPK_GMRES_OPS_H
#define SPK_GMRES_OPS_H

#include "../src/spk_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spk_gmres_ops {
    spk_device device;
    /* CGS2 of w against V (n x k, column-major, leading dimension ldv), k >= 1:
     * h1 = V'w; w -= V h1; h2 = V'w; w -= V h2; ss = w'w. out is a host array of 2k + 1:
     * h1, h2, ss. */
    spk_status (*cgs2)(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                       double *w, double *out);
} spk_gmres_ops;

const spk_gmres_ops *spk_gmres_ops_cpu(void);
const spk_gmres_ops *spk_gmres_ops_cuda(void);   /* NULL in a build without CUDA */
const spk_gmres_ops *spk_gmres_ops_for(spk_device dev);
/* The CGS2 for the vectors of `ops`: its device's, or with a distributed table the four passes
 * of solvers/gmres_cpu.c on the context's device, their sums summed over the ranks. */
const spk_gmres_ops *spk_gmres_ops_of(const spk_vec_ops *ops);

#ifdef __cplusplus
}
#endif
#endif /* SPK_GMRES_OPS_H */
