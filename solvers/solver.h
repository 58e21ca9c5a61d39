/* solvers/solver.h -- what a Krylov method sees: the operator A (through its backend), the
 * vector-ops table of the device, an optional Jacobi preconditioner, the options and the
 * result to fill. The methods are plain C and know nothing of formats or devices. */
#ifndef SPK_SOLVER_H
#define SPK_SOLVER_H

#include "../src/spk_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spk_krylov {
    spk_context              *ctx;
    const spk_vec_ops        *ops;
    const spk_spmv_backend   *be;      /* A through its backend                               */
    const void               *state;
    int64_t                   n;
    const double             *dinv;    /* device vector 1/diag(A), NULL: no preconditioner    */
    const spk_options        *opt;
    spk_result               *res;     /* reason, iterations, rnorm, history                   */
    int64_t                   maxiter; /* resolved from opt                                   */
    double                    t0;      /* spk_now() when the solve began                      */
    int64_t                   hist_cap;
} spk_krylov;

/* The methods. b, x are device vectors of length n; x holds the initial guess. On return
 * res->reason, res->iterations and res->rnorm are set. The status is for failures only. */
spk_status spk_cg(spk_krylov *k, const double *b, double *x);
spk_status spk_bicgstab(spk_krylov *k, const double *b, double *x);
spk_status spk_gmres(spk_krylov *k, const double *b, double *x);

/* solvers/stop.c: the stopping test and the per-iteration record. */
/* max(rtol * bnorm, atol) */
double spk_stop_threshold(const spk_options *opt, double bnorm);
/* Converged reason for rnorm against the threshold (RTOL or ATOL, whichever held), or
 * SPK_REASON_NONE when not converged, or SPK_DIVERGED_NANORINF when rnorm is NaN / Inf. */
spk_reason spk_stop_check(const spk_options *opt, double bnorm, double rnorm);
/* Record iteration `it` (history when asked, monitor callback every k). */
spk_status spk_stop_record(spk_krylov *k, int64_t it, int64_t cycle, double rnorm);
/* 1 if x is a usable nonzero denominator: finite and |x| > tiny * scale. */
int spk_denominator_ok(double x, double scale);

/* solvers/jacobi.c: z = dinv .* r, or a copy when there is no preconditioner. */
spk_status spk_precond_apply(spk_krylov *k, const double *r, double *z);
/* Build dinv = 1 / diag(A) on the device. For CG (require_positive) a diagonal <= 0 is an
 * error; for the others only a zero diagonal is. *dinv is allocated with k->ops. */
spk_status spk_jacobi_setup(spk_context *ctx, const spk_vec_ops *ops, const spk_csr *A,
                            int require_positive, double **dinv);

/* y = A x through the backend (beta = 0). */
spk_status spk_apply_A(spk_krylov *k, const double *x, double *y);

#ifdef __cplusplus
}
#endif
#endif /* SPK_SOLVER_H */
