/* solvers/ilu.h -- the incomplete factorizations behind SPK_PRECOND_ILU0, IC0 and ILUT, as
 * host CSR factors that the preconditioner rows (solvers/pc_ilu.c) move to the device and
 * apply with exact or approximate triangular solves. */
#ifndef SPK_ILU_H
#define SPK_ILU_H

#include "../src/spk_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A(:, perm) ~= L U (perm NULL: A ~= L U). L: the strictly lower triangle of a unit lower
 * triangular factor (its unit diagonal implied), U: the upper triangle with the diagonal,
 * both n x n host CSR with sorted rows. With perm, M^-1 r = x where y = U^-1 L^-1 r and
 * x[perm[j]] = y[j]. */
typedef struct spk_ilu_factors {
    int64_t  n;
    spk_csr  L, U;
    int32_t *perm;
    int64_t  zero_pivots;   /* pivots that were zero and replaced by a small value (ILUT) */
} spk_ilu_factors;

void spk_ilu_factors_free(spk_ilu_factors *F);                               /* NULL-safe */

/* ILUT with threshold dropping and column pivoting (ILUTP, Saad, Iterative Methods for
 * Sparse Linear Systems, 2nd ed., sec. 10.4), on the host. drop_tol, fill_factor: as
 * spk_ilu_options (resolved: > 0). On failure F is zeroed and nothing is left allocated. */
spk_status spk_ilut_factor(spk_context *ctx, const spk_csr *A, double drop_tol,
                           double fill_factor, spk_ilu_factors *F);

/* ILU(0) (cholesky 0) or IC(0) (cholesky 1: A symmetric, A ~= L D L^T stored with U = D L^T)
 * on A's pattern (solvers/ilu0.c). *plan keeps the symbolic part for spk_ilu0_refactor. A
 * missing, zero or vanishing pivot (IC: a non-positive one) is SPK_ERR_UNSUPPORTED naming
 * the row; on failure *plan is NULL, F is zeroed and nothing is left allocated. */
typedef struct spk_ilu0 spk_ilu0;
spk_status spk_ilu0_factor(spk_context *ctx, const spk_csr *A, int cholesky, spk_ilu0 **plan,
                           spk_ilu_factors *F);
/* New values of A, same pattern: F's values recomputed in place, no allocation. On a pivot
 * failure F holds partial values (the caller keeps its old device copy or fails). */
spk_status spk_ilu0_refactor(spk_context *ctx, spk_ilu0 *plan, const spk_csr *A,
                             spk_ilu_factors *F);
void spk_ilu0_free(spk_ilu0 *plan);                                          /* NULL-safe */

/* The exact triangular solves on the GPU (solvers/pc_ilu_cuda.cu: cuSPARSE SpSV; stubs in
 * kernels/cuda_stub.c answer SPK_ERR_NOT_COMPILED). Setup uploads L and U and runs SpSV's
 * analysis once; update uploads new values of the same patterns into the same arrays and
 * refreshes the analysis without new buffers; apply queues z = U^-1 L^-1 r on the context's
 * stream (y: n doubles of scratch on the device; z != r). */
typedef struct spk_ilu_sv spk_ilu_sv;
spk_status spk_ilu_sv_setup(spk_context *ctx, const spk_ilu_factors *F, spk_ilu_sv **sv);
spk_status spk_ilu_sv_update(spk_context *ctx, spk_ilu_sv *sv, const spk_ilu_factors *F);
spk_status spk_ilu_sv_apply(spk_context *ctx, spk_ilu_sv *sv, const double *r, double *y,
                            double *z);
size_t     spk_ilu_sv_bytes(const spk_ilu_sv *sv);      /* device memory it holds          */
void       spk_ilu_sv_free(spk_ilu_sv *sv);                                  /* NULL-safe */

#ifdef __cplusplus
}
#endif
#endif /* SPK_ILU_H */
