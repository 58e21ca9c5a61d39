/* src/mixed.h -- mixed precision (docs/solvers.md, "Mixed precision"): A's values in fp32 for
 * the Krylov method's SpMV, in the layout of the row the method runs on (its fp32 twin),
 * iterative refinement in fp64 around it. The solver object (src/solve.c) holds one
 * spk_mixed and calls the refinement loop in place of the method. */
#ifndef SPK_MIXED_H
#define SPK_MIXED_H

#include "../solvers/solver.h"

typedef spk_status (*spk_method_fn)(spk_krylov *k, const double *b, double *x);

typedef struct spk_mixed {
    const spk_spmv_backend *be;    /* the fp32 operator's row: the method's row's twin       */
    void                   *state; /* A32; NULL until A's values first fit fp32 (or, made on
                                    * the device from the row, until the first prepare)      */
    const void             *row;   /* the row's state A32 was made from (setup_from), or NULL */
    uint64_t                gen;   /* M->layout_gen when A32 was made or refilled             */
    int                     ok;    /* 1: solves run mixed; 0: in double, for `why`            */
    char                    why[160]; /* the fallback's reason ("" while ok)                  */
} spk_mixed;

/* Check A's values for fp32 and (re)fill A32 from them: at creation and after every value
 * update. M is the prepared matrix the method runs on (M->be its fp64 row); A32 is made by
 * M->be->fp32, the row of its layout with fp32 values, or where it has none by csr32-cpu on
 * the CPU (on another device ok = 0: "has no fp32 twin"). A twin with setup_from (the GPU's)
 * is made from M's device layout and refilled from it, rounded and checked by a kernel:
 * nothing read or written on the host while the values fit. Otherwise from M's host CSR
 * (downloaded first if an update left it stale). ok = 0 with the reason in `why` when an
 * entry has |a| > FLT_MAX (it would be Inf), a nonzero has |a| < FLT_MIN (subnormal or zero
 * in fp32: its relative error passes fp32's 2^-24), or a_scale != 1 (the system runs scaled:
 * its magnitudes leave fp32's range). The first call makes A32 (counted allocations); later
 * ones refill it in place, or make it again when M's row or layout is not the one A32 was
 * made for. */
spk_status spk_mixed_prepare(spk_context *ctx, spk_mixed *m, spk_matrix *M, double a_scale);
void spk_mixed_free(spk_mixed *m);                                            /* NULL-safe */

/* The refinement loop, in place of fn(k, b, x): k holds A's fp64 backend, k->res the result
 * (bnorm set) and x the initial guess. Sets reason, iterations (the inner ones, summed),
 * rnorm (the last fp64 ||b - A x||), refinement_steps and precision_reason; the caller
 * recomputes the true residual as for any method. */
spk_status spk_mixed_solve(spk_krylov *k, const spk_mixed *m, spk_method_fn fn, const double *b,
                           double *x);

#endif /* SPK_MIXED_H */
