/* solvers/bicgstab_scalar.h -- the fused BiCGStab iteration (solvers/bicgstab.c): its scalar block,
 * the scalar steps, written once for the host and the device, and its table of vector steps.
 *
 * The block lives where the vectors live (device memory for the CUDA table, host memory for
 * the CPU one). Each reduction of an iteration ends in a scalar step applied to the block by
 * the one thread that finishes the reduction (the last block on the GPU, the loop's caller on
 * the CPU), so alpha, omega, beta and every test of the method are decided where the vectors
 * are, and the host only reads the block back once per batch of iterations. The steps below
 * are the whole of BiCGStab's scalar logic: the CPU path calls them directly, the CUDA path
 * from its kernels (they are __host__ __device__ under nvcc).
 *
 * One iteration, with `state` RUN at its start (SPK_BICG_*):
 *   update_p               p = r + beta (p - omega v);  p^ = M^-1 p
 *   v = A p^               (the backend's SpMV)
 *   dots(ALPHA, v, r0)     (r0, v), (v, v)  -> spk_bicg_alpha:  alpha, or DONE (breakdown)
 *   update_s               s = r - alpha v (in r);  (s, s);  s^ = M^-1 s
 *                                            -> spk_bicg_half: ||s|| passes: LAST
 *   t = A s^               (the backend's SpMV)
 *   dots(OMEGA, t, s)      (t, s), (t, t)   -> spk_bicg_omega:  omega, or LAST (breakdown)
 *   update_xr              RUN:  x += alpha p^ + omega s^;  r = s - omega t;  (r0, r), (r, r)
 *                                            -> spk_bicg_end: record, stop test, then for the
 *                                               next iteration maxiter, rho test, beta
 *                          LAST: x += alpha p^ only (the iterate whose residual is s); DONE
 * After the record the end of an iteration also tests divergence (||r|| > div_thr) and
 * stagnation (no new smallest ||r|| for stag_window iterations): DONE with that reason.
 * Every step does nothing unless the state asks for it (update_xr runs in RUN and LAST, the
 * others only in RUN), so iterations queued after the end cost only their launches. */
#ifndef SPK_BICG_SCALAR_H
#define SPK_BICG_SCALAR_H

#include "../src/spk_internal.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define SPK_BICG_FN static inline __host__ __device__
#else
#define SPK_BICG_FN static inline
#endif

#define SPK_BICG_HIST 64            /* recorded norms of the last 64 iterations, ring       */
#define SPK_BICG_STAG_FACTOR 0.999   /* solvers/solver.h's SPK_STAG_FACTOR                     */
/* rho = (r0, r) vanishing while r does not is the method's own breakdown: r has become
 * orthogonal to the shadow residual r0 = b, as on a right-hand side that vanishes on most rows
 * (b = A ones on a conservation law's matrix), where r can reach an exact zero on the rows b
 * lives on. BiCGStab then starts again from the iterate it has: r0 = r, p = r, rho = (r, r).
 * At most this many times a solve, then BREAKDOWN. */
#define SPK_BICG_MAX_RESTARTS 50
/* Cosine threshold of the breakdown test, eps^2 (solvers/bicgstab.c says why). */
#define SPK_BICG_BREAKDOWN_TOL (DBL_EPSILON * DBL_EPSILON)

enum { SPK_BICG_RUN = 0, SPK_BICG_LAST = 1, SPK_BICG_DONE = 2 };   /* spk_bicg_scalars.state */
enum { SPK_BICG_ALPHA = 0, SPK_BICG_OMEGA = 1 };                   /* the phase of ops->dots */
enum { SPK_BICG_BK_NONE = 0, SPK_BICG_BK_RHO = 1, SPK_BICG_BK_R0V = 2, SPK_BICG_BK_TS = 3 };

/* No padding (the unit test compares blocks field by field, the fetch copies the header). */
typedef struct spk_bicg_scalars {
    double  *part;               /* set by the host: 2 * SPK_MAX_BLOCKS doubles, same memory */
    double   tol_rtol;           /* set by the host: rtol * ||b||                             */
    double   tol_atol;           /* set by the host: atol; converged: norm <= either          */
    int64_t  maxit;              /* set by the host: the iteration limit                      */
    double   div_thr;            /* set by the host: diverged when ||r|| > div_thr            */
    int64_t  stag_window;        /* set by the host: stagnation after this many iterations
                                    without a new best (0: never)                             */
    double   best;               /* the smallest ||r|| so far (host: ||r0||)                  */
    int64_t  best_it;            /* its iteration                                             */
    int64_t  bk_which;           /* a breakdown's inner product: SPK_BICG_BK_*                 */
    int64_t  restart;            /* 1: the next update_p restarts the shadow residual, r0 = r  */
    int64_t  restarts;           /* the restarts so far                                       */
    double   bk_num, bk_scale;   /* its value, and the product of the norms it was tested by  */
    double   r0norm;             /* ||r0||                                                    */
    double   rho, rho_old;       /* (r0, r) now and one iteration before                      */
    double   alpha, omega, beta; /* omega = beta = 0 before the first iteration               */
    double   r0v, vv;            /* the sums of the last dots(ALPHA)                          */
    double   ss, snorm;          /* (s, s) and ||s|| of the current iteration                 */
    double   ts, tt;             /* the sums of the last dots(OMEGA)                          */
    double   rr;                 /* (r, r) of the last update_xr; its (r0, r) is rho          */
    double   rnorm;              /* the norm recorded last, for iteration `it`                */
    int64_t  it;                 /* iterations recorded                                       */
    int32_t  state;              /* SPK_BICG_RUN / LAST (x += alpha p^ pending) / DONE        */
    int32_t  why;                /* an spk_reason; SPK_REASON_NONE: the stop test on rnorm     */
    uint32_t count[4];           /* last-block counters of the CUDA kernels, 0 between them   */
    double   hist[SPK_BICG_HIST];/* the norm recorded for iteration i at hist[i % HIST]       */
} spk_bicg_scalars;

/* ---- the scalar steps ------------------------------------------------------------------- */

/* The stopping test of spk_stop_check (solvers/stop.c): NaN/Inf ends the solve too. */
SPK_BICG_FN int spk_bicg_stops(const spk_bicg_scalars *S, double norm)
{
    return !isfinite(norm) || norm <= S->tol_rtol || norm <= S->tol_atol;
}

/* What an inner product `num` of vectors with norms na, nb means as a divisor: NaN/Inf in any
 * of them; zero (BREAKDOWN) when it fails spk_denominator_ok (solvers/stop.c: finite and
 * > 1e-300 scale) or its cosine is below eps^2; else usable (SPK_REASON_NONE). */
SPK_BICG_FN int32_t spk_bicg_dot_reason(double num, double na, double nb)
{
    if (!isfinite(num) || !isfinite(na) || !isfinite(nb))
        return SPK_DIVERGED_NANORINF;
    const double scale = na * nb;
    if (!(fabs(num) > 1e-300 * (scale > 0 ? scale : 1.0)) ||
        fabs(num) <= SPK_BICG_BREAKDOWN_TOL * scale)
        return SPK_DIVERGED_BREAKDOWN;
    return SPK_REASON_NONE;
}

/* Keep which inner product broke down, for the result's detail. */
SPK_BICG_FN void spk_bicg_breakdown(spk_bicg_scalars *S, int64_t which, double num, double scale)
{
    S->bk_which = which;
    S->bk_num = num;
    S->bk_scale = scale;
}

/* Iteration it + 1 ends with residual norm `norm`. */
SPK_BICG_FN void spk_bicg_record(spk_bicg_scalars *S, double norm)
{
    const int64_t it = S->it + 1;
    S->it = it;
    S->rnorm = norm;
    S->hist[it % SPK_BICG_HIST] = norm;
}

/* Before iteration it + 1 (state RUN, x and r final for iteration it): the limit, then
 * rho = (r0, r) ~ 0, then beta (0 for the first iteration). */
SPK_BICG_FN void spk_bicg_next(spk_bicg_scalars *S)
{
    if (S->it >= S->maxit) {
        S->state = SPK_BICG_DONE;
        S->why = SPK_DIVERGED_MAXIT;
        return;
    }
    const int32_t why = spk_bicg_dot_reason(S->rho, S->r0norm, S->rnorm);
    if (why == SPK_DIVERGED_BREAKDOWN && S->rnorm > 0 && S->restarts < SPK_BICG_MAX_RESTARTS) {
        spk_bicg_breakdown(S, SPK_BICG_BK_RHO, S->rho, S->r0norm * S->rnorm);
        S->restart = 1;                          /* r0 = r, p = r: update_p does both     */
        S->restarts++;
        S->rho = S->rr;
        S->r0norm = S->rnorm;
        S->beta = 0.0;
        return;
    }
    if (why != SPK_REASON_NONE) {
        S->state = SPK_BICG_DONE;
        S->why = why;
        spk_bicg_breakdown(S, SPK_BICG_BK_RHO, S->rho, S->r0norm * S->rnorm);
        return;
    }
    /* omega and rho_old passed their tests in the iteration before */
    S->beta = S->it > 0 ? (S->rho / S->rho_old) * (S->alpha / S->omega) : 0.0;
}

/* After (r0, v) and (v, v): alpha = rho / (r0, v), or DONE with x untouched and nothing
 * recorded for this iteration. */
SPK_BICG_FN void spk_bicg_alpha(spk_bicg_scalars *S, double r0v, double vv)
{
    S->restart = 0;                              /* update_p has taken it (r0 = r)        */
    S->r0v = r0v;
    S->vv = vv;
    int32_t why = spk_bicg_dot_reason(r0v, S->r0norm, sqrt(vv));
    const double alpha = S->rho / r0v;
    if (why == SPK_REASON_NONE && !isfinite(alpha))
        why = SPK_DIVERGED_NANORINF;
    if (why != SPK_REASON_NONE) {
        S->state = SPK_BICG_DONE;
        S->why = why;
        spk_bicg_breakdown(S, SPK_BICG_BK_R0V, r0v, S->r0norm * sqrt(vv));
        return;
    }
    S->alpha = alpha;
}

/* After (s, s): the half-step test. ||s|| passes (or is not finite): the iteration ends
 * here with ||s||, x += alpha p^ still to do (LAST). */
SPK_BICG_FN void spk_bicg_half(spk_bicg_scalars *S, double ss)
{
    const double snorm = sqrt(ss);
    S->ss = ss;
    S->snorm = snorm;
    if (spk_bicg_stops(S, snorm)) {
        spk_bicg_record(S, snorm);
        S->state = SPK_BICG_LAST;
        S->why = SPK_REASON_NONE;
    }
}

/* After (t, s) and (t, t): omega = (t, s) / (t, t); on breakdown the iteration ends at the
 * half-step iterate x + alpha p^, recorded with ||s|| (LAST, with the reason). */
SPK_BICG_FN void spk_bicg_omega(spk_bicg_scalars *S, double ts, double tt)
{
    S->ts = ts;
    S->tt = tt;
    int32_t why = spk_bicg_dot_reason(ts, S->snorm, sqrt(tt));
    double omega = 0.0;
    if (why == SPK_REASON_NONE) {
        omega = ts / tt;                             /* tt > 0 since (t, s) != 0      */
        if (!isfinite(omega))
            why = SPK_DIVERGED_NANORINF;
    }
    if (why != SPK_REASON_NONE) {
        spk_bicg_record(S, S->snorm);
        S->state = SPK_BICG_LAST;
        S->why = why;
        spk_bicg_breakdown(S, SPK_BICG_BK_TS, ts, S->snorm * sqrt(tt));
        return;
    }
    S->omega = omega;
}

/* After (r0, r) and (r, r) of the new r: the end of the iteration, then the next one's
 * tests. */
SPK_BICG_FN void spk_bicg_end(spk_bicg_scalars *S, double rho_new, double rr)
{
    S->rho_old = S->rho;
    S->rho = rho_new;
    S->rr = rr;
    spk_bicg_record(S, sqrt(rr));
    if (spk_bicg_stops(S, S->rnorm)) {
        S->state = SPK_BICG_DONE;
        S->why = SPK_REASON_NONE;
        return;
    }
    if (S->rnorm > S->div_thr) {                 /* ||r|| > dtol max(||b||, ||r0||)       */
        S->state = SPK_BICG_DONE;
        S->why = SPK_DIVERGED_DTOL;
        return;
    }
    if (S->rnorm < SPK_BICG_STAG_FACTOR * S->best) {
        S->best = S->rnorm;
        S->best_it = S->it;
    } else if (S->stag_window > 0 && S->it - S->best_it >= S->stag_window) {
        S->state = SPK_BICG_DONE;                /* no new best for stag_window iterations */
        S->why = SPK_DIVERGED_STAGNATION;
        return;
    }
    spk_bicg_next(S);
}

/* ---- the vector steps: solvers/bicgstab_cpu.c and solvers/bicgstab_cuda.cu. Vectors and S
 * live in the table's device memory; n >= 0. ------------------------------------------------ */
#ifdef __cplusplus
extern "C" {
#endif

typedef struct spk_bicg_ops {
    spk_device device;
    /* Unless S->state != RUN: p = r + beta (p - omega v); with dinv, ph = dinv .* p (dinv
     * NULL: ph is not touched); with S->restart also r0 = r (the shadow residual restarted). */
    spk_status (*update_p)(spk_context *ctx, int64_t n, spk_bicg_scalars *S, const double *r,
                           const double *v, double *p, const double *dinv, double *ph,
                           double *r0);
    /* Unless S->state != RUN: x'y and x'x, then spk_bicg_alpha (phase SPK_BICG_ALPHA, x = v,
     * y = r0) or spk_bicg_omega (SPK_BICG_OMEGA, x = t, y = s). */
    spk_status (*dots)(spk_context *ctx, int64_t n, spk_bicg_scalars *S, int phase,
                       const double *x, const double *y);
    /* Unless S->state != RUN: r -= alpha v (r becomes s); with dinv, sh = dinv .* s; then
     * spk_bicg_half(s's). */
    spk_status (*update_s)(spk_context *ctx, int64_t n, spk_bicg_scalars *S, const double *v,
                           double *r, const double *dinv, double *sh);
    /* RUN: x = (x + alpha ph) + omega sh; r = s - omega t (r holds s, sh may be r); then
     * spk_bicg_end((r0, r), (r, r)). LAST: x += alpha ph; state = DONE. DONE: nothing. */
    spk_status (*update_xr)(spk_context *ctx, int64_t n, spk_bicg_scalars *S, double *x,
                            const double *ph, const double *sh, const double *t,
                            const double *r0, double *r);
} spk_bicg_ops;

const spk_bicg_ops *spk_bicg_ops_cpu(void);
const spk_bicg_ops *spk_bicg_ops_cuda(void);   /* NULL in a build without CUDA */
const spk_bicg_ops *spk_bicg_ops_for(spk_device dev);
/* The steps for the vectors of `ops`: its device's, or with a distributed table steps whose
 * sums are summed over the ranks (solvers/bicgstab_cpu.c: host loops on CPU ranks, the
 * device table's calls on GPU ranks). */
const spk_bicg_ops *spk_bicg_ops_of(const spk_vec_ops *ops);

#ifdef __cplusplus
}
#endif
#endif /* SPK_BICG_SCALAR_H */
