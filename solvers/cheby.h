/* solvers/cheby.h -- the Chebyshev iteration in D^-1 A on an interval [lmin, lmax] (Saad,
 * Iterative Methods for Sparse Linear Systems, 2nd ed., alg. 12.1), written once over the SpMV
 * backend and vector-ops tables: the AMG smoother (solvers/pc_amg.c) and the Chebyshev
 * preconditioner (solvers/pc_cheby.c) both run this function. */
#ifndef SPK_CHEBY_H
#define SPK_CHEBY_H

#include "../src/spk_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One operator and its interval; the vectors live on ctx's device. */
typedef struct spk_cheby {
    spk_context       *ctx;
    const spk_vec_ops *ops;
    /* the operator's SpMV: a prepared matrix's row and state, or its fp32 twin's (AMG's
     * fp32 levels) */
    const spk_spmv_backend *be;
    const void        *state;
    int64_t            n;
    const double      *dinv;       /* D^-1, n doubles                                       */
    double             lmin, lmax; /* the interval the polynomial is built on, 0 < lmin     */
    int                degree;     /* >= 1                                                   */
    double            *r, *d;      /* work, n doubles each                                  */
} spk_cheby;

/* One sweep of `degree` Chebyshev steps for A x = b: x = x + q(D^-1 A) D^-1 (b - A x), q of
 * degree - 1, whose residual polynomial 1 - t q(t) is T_degree((theta - t) / delta) /
 * T_degree(theta / delta) with theta, delta the interval's centre and half-width. zero_x:
 * x is taken as 0 (its old content ignored, one SpMV fewer). degree - 1 SpMVs from zero,
 * degree otherwise. */
spk_status spk_cheby_sweep(const spk_cheby *c, const double *b, double *x, int zero_x);

#ifdef __cplusplus
}
#endif
#endif /* SPK_CHEBY_H */
