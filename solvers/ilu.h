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

#ifdef __cplusplus
}
#endif
#endif /* SPK_ILU_H */
