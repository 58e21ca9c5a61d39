/* solvers/cg_scalar.h -- the fused CG iteration (solvers/cg.c): its scalar block, the scalar
 * steps written once for the host and the device, and its table of vector steps
 * (solvers/cg_cpu.c, solvers/cg_cuda.cu).
 *
 * The block lives where the vectors live (device memory for the CUDA table, host memory for
 * the CPU one). Each step's reduction ends in a scalar step applied to the block by the one
 * thread that finishes it (the last block on the GPU, the loop's caller on the CPU), so alpha,
 * beta and every test are decided where the vectors are, and the host reads the block back
 * once per batch of iterations. The functions below are the whole of CG's scalar logic: the
 * CPU steps call them directly, the CUDA kernels from their last block (they are
 * __host__ __device__ under nvcc).
 *
 * One iteration, `state` RUN at its start (z = M^-1 r; with M = I or a diagonal M the steps
 * form z themselves, the general path stores it):
 *   q = A p, p'q              backend spmv_dot, or spmv + ops->dot_sink    -> S->pq
 *   r(q, r, dinv)             spk_cg_alpha: alpha = r'z / p'q (p'q <= 0: DONE)
 *                             r -= alpha q;  r'r, r'(dinv .* r)            -> spk_cg_after_r:
 *                             ||r|| passes or is not finite: LAST; r'z <= 0: LAST
 *   general path only:        z = M^-1 r (the row's apply);  rz(r, z): r'z -> spk_cg_after_rz
 *   xp(x, p, z, dinv)         x += alpha p;  unless LAST, p = (dinv .* z) + beta p with
 *                             beta = r'z_new / r'z (spk_cg_beta)           -> spk_cg_after_xp
 * Every step does nothing unless the state asks for it (xp runs in RUN and LAST, the others
 * in RUN only), so iterations queued after the end cost only their launches. */
#ifndef SPK_CG_SCALAR_H
#define SPK_CG_SCALAR_H

#include "../src/spk_internal.h"

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define SPK_CG_FN static inline __host__ __device__
#else
#define SPK_CG_FN static inline
#endif

#define SPK_CG_HIST 64               /* r'r of the last SPK_CG_HIST iterations, ring          */
enum { SPK_CG_RUN = 0, SPK_CG_LAST = 1, SPK_CG_DONE = 2 };            /* spk_cg_scalars.state */
/* what ended the iteration: the stopping test (or a NaN/Inf), p'Ap <= 0, r'M^-1 r <= 0, the
 * divergence test, stagnation */
enum { SPK_CG_WHY_NONE = 0, SPK_CG_WHY_STOP = 1, SPK_CG_WHY_PQ = 2, SPK_CG_WHY_RZ = 3,
       SPK_CG_WHY_DTOL = 4, SPK_CG_WHY_STAG = 5 };
#define SPK_CG_STAG_FACTOR 0.999     /* solvers/solver.h's SPK_STAG_FACTOR                     */

typedef struct spk_cg_scalars {
    double  *part;               /* set by the host: 2 * SPK_MAX_BLOCKS device doubles        */
    double   thr;                /* set by the host: stop when sqrt(r'r) <= thr               */
    double   div_thr;            /* set by the host: diverged when sqrt(r'r) > div_thr        */
    int64_t  stag_window;        /* set by the host: stagnation after this many iterations
                                    without a new best (0: never)                             */
    double   best;               /* the smallest ||r|| so far (host: ||r0||)                  */
    int64_t  best_it;            /* its iteration                                             */
    double   pq;                 /* p'Ap of the current iteration                             */
    double   rr;                 /* r'r after the current update                              */
    double   rz;                 /* r'z before it (beta's denominator)                        */
    double   rz_new;             /* r'z after it                                              */
    double   alpha;
    int64_t  it;                 /* iterations completed                                      */
    int32_t  state;              /* SPK_CG_RUN / LAST (x update pending) / DONE               */
    int32_t  why;                /* SPK_CG_WHY_*: what ended the iteration                    */
    uint32_t count[4];           /* last-block counters of the CUDA kernels, 0 between them   */
    double   hist[SPK_CG_HIST];  /* r'r of iteration i at hist[i % SPK_CG_HIST]               */
} spk_cg_scalars;

/* ---- the scalar steps ------------------------------------------------------------------- */

/* alpha = r'z / p'q, read by every thread of the r step before its loop: 0 (the loop's
 * update a no-op) when p'q is not positive (false for NaN too). */
SPK_CG_FN int spk_cg_alpha(const spk_cg_scalars *S, double *alpha)
{
    const int ok = S->pq > 0.0;
    *alpha = ok ? S->rz / S->pq : 0.0;
    return ok;
}

/* After r -= alpha q with rr = r'r and rz_new = r'z (the fused r'(dinv .* r), or r'r without
 * M; the general path's rz step replaces it). */
SPK_CG_FN void spk_cg_after_r(spk_cg_scalars *S, int ok, double alpha, double rr, double rz_new)
{
    if (!ok) {                                   /* p'Ap <= 0: A not SPD, or NaN          */
        S->state = SPK_CG_DONE;
        S->why = SPK_CG_WHY_PQ;
        return;
    }
    const int64_t it = S->it + 1;
    S->alpha = alpha;
    S->rr = rr;
    S->rz_new = rz_new;
    S->it = it;
    S->hist[it % SPK_CG_HIST] = rr;
    const double rnorm = sqrt(rr);
    if (rnorm <= S->thr || !isfinite(rr)) {      /* converged, or NaN / Inf               */
        S->state = SPK_CG_LAST;
        S->why = SPK_CG_WHY_STOP;
    } else if (!(rz_new > 0.0)) {                /* r'M^-1 r <= 0: M not SPD              */
        S->state = SPK_CG_LAST;
        S->why = SPK_CG_WHY_RZ;
    } else if (rnorm > S->div_thr) {             /* ||r|| > dtol max(||b||, ||r0||)       */
        S->state = SPK_CG_LAST;
        S->why = SPK_CG_WHY_DTOL;
    } else if (rnorm < SPK_CG_STAG_FACTOR * S->best) {
        S->best = rnorm;
        S->best_it = it;
    } else if (S->stag_window > 0 && it - S->best_it >= S->stag_window) {
        S->state = SPK_CG_LAST;                  /* no new best for stag_window iterations */
        S->why = SPK_CG_WHY_STAG;
    }
}

/* The general path's r'z, after z = M^-1 r (called in state RUN only). */
SPK_CG_FN void spk_cg_after_rz(spk_cg_scalars *S, double rz_new)
{
    S->rz_new = rz_new;
    if (!(rz_new > 0.0)) {                       /* r'M^-1 r <= 0 (or NaN): M not SPD     */
        S->state = SPK_CG_LAST;
        S->why = SPK_CG_WHY_RZ;
    }
}

/* beta = r'z_new / r'z for p = z + beta p (rz > 0: it passed its test an iteration ago). */
SPK_CG_FN double spk_cg_beta(const spk_cg_scalars *S)
{
    return S->rz_new / S->rz;
}

/* After x += alpha p (and, unless `last`, the new p): the next iteration, or the end. */
SPK_CG_FN void spk_cg_after_xp(spk_cg_scalars *S, int last)
{
    if (last)
        S->state = SPK_CG_DONE;
    else
        S->rz = S->rz_new;
}

/* ---- the vector steps: solvers/cg_cpu.c and solvers/cg_cuda.cu. Vectors and S live in the
 * table's device memory; n >= 0. ------------------------------------------------------- */
#ifdef __cplusplus
extern "C" {
#endif

typedef struct spk_cg_ops {
    spk_device device;
    /* Unless S->state != RUN: spk_cg_alpha; r -= alpha q; r'r and r'(dinv .* r) (dinv NULL:
     * r'r); spk_cg_after_r. */
    spk_status (*r)(spk_context *ctx, int64_t n, spk_cg_scalars *S, const double *q, double *r,
                    const double *dinv);
    /* Unless S->state != RUN: r'z; spk_cg_after_rz. (The general path.) */
    spk_status (*rz)(spk_context *ctx, int64_t n, spk_cg_scalars *S, const double *r,
                     const double *z);
    /* Unless S->state == DONE: x += alpha p; in RUN also p = (dinv .* z) + beta p (dinv NULL:
     * z + beta p); spk_cg_after_xp. z is r on the fused paths. */
    spk_status (*xp)(spk_context *ctx, int64_t n, spk_cg_scalars *S, double *x, double *p,
                     const double *z, const double *dinv);
    /* ---- CG with fp32 vectors (spk_cg32, the inner solve of a mixed solve): the vectors
     * stored in float, every product and sum formed in fp64 and rounded once on its store.
     * The steps of the fused paths (M = I or diagonal) only. */
    /* x = 0, r = fl(b), dinv32 = fl(dinv), p = dinv32 .* r (dinv NULL: p = r, dinv32 unused);
     * S->rr = r'r and S->rz = r'p over the stored values (S->part set). */
    spk_status (*begin32)(spk_context *ctx, int64_t n, spk_cg_scalars *S, const double *b,
                          const double *dinv, float *x, float *r, float *p, float *dinv32);
    /* r and xp above on float vectors: the same scalar steps, the same order of the sums. */
    spk_status (*r32)(spk_context *ctx, int64_t n, spk_cg_scalars *S, const float *q, float *r,
                      const float *dinv);
    spk_status (*xp32)(spk_context *ctx, int64_t n, spk_cg_scalars *S, float *x, float *p,
                       const float *r, const float *dinv);
    /* y = x widened (exact) */
    spk_status (*widen)(spk_context *ctx, int64_t n, const float *x, double *y);
} spk_cg_ops;

const spk_cg_ops *spk_cg_ops_cpu(void);
const spk_cg_ops *spk_cg_ops_cuda(void);      /* NULL in a build without CUDA */
const spk_cg_ops *spk_cg_ops_for(spk_device dev);

#ifdef __cplusplus
}
#endif
#endif /* SPK_CG_SCALAR_H */
