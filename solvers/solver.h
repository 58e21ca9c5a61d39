/* solvers/solver.h -- what a Krylov method sees: the operator A (through its backend), the
 * vector-ops table of the device, the preconditioner (through its row of the preconditioner
 * table), the options and the result to fill. The methods are plain C and know nothing of
 * formats, devices or which preconditioner they run. */
#ifndef SPK_SOLVER_H
#define SPK_SOLVER_H

#include "../src/spk_internal.h"
#include "precond.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Workspace slots: the vectors of a solve, kept by the solver object between solves. The
 * caller (src/solve.c, src/mixed.c) owns the first eight; a method numbers its own from SPK_WS_METHOD. */
#define SPK_WS_B      0      /* b on the device (host-vector solves)                          */
#define SPK_WS_X      1      /* x on the device (host-vector solves)                          */
#define SPK_WS_R      2      /* b - A x for the true residual                                 */
#define SPK_WS_BS     3      /* the scaled b of a system run scaled (spk_krylov.a_scale)      */
#define SPK_WS_DINV   4      /* D^-1 / a_scale for the diagonal path of a scaled system        */
#define SPK_WS_X0     5      /* the initial x, kept for a second method (--method auto)       */
#define SPK_WS_MIX_R  6      /* a mixed solve's fp64 residual b - A x (src/mixed.c)           */
#define SPK_WS_MIX_D  7      /* a mixed solve's correction d, from A32 d = r                  */
#define SPK_WS_METHOD 8      /* the method's first slot                                        */
#define SPK_WS_MAX    17

typedef struct spk_krylov {
    spk_context              *ctx;
    const spk_vec_ops        *ops;
    const spk_spmv_backend   *be;      /* A through its backend                               */
    const void               *state;
    int64_t                   n;
    int64_t                   n_all;   /* the global n of a distributed solve (else n): what
                                          bounds GMRES's Krylov space                         */
    const spk_precond_ops    *pc;      /* M through its row                                   */
    void                     *pc_state;
    /* A system whose magnitudes would over- or underflow the methods' sums of squares runs
     * scaled by powers of two (exact): A' = a_scale A, M' = a_scale M, b' = b_scale b, so
     * y = (b_scale / a_scale) x. spk_apply_A, spk_precond_apply and spk_krylov_dinv apply
     * the scale; history and monitor report rnorm / b_scale. 1 and 1 almost always. */
    double                    a_scale, b_scale;
    const double             *dinv_scaled;   /* D^-1 / a_scale when a_scale != 1         */
    /* A stop the host asks for (SPK_DIVERGED_TIME_LIMIT, SPK_DIVERGED_INTERRUPTED), set by
     * spk_stop_record; SPK_REASON_NONE while the solve may go on. The device-scalar methods
     * stop queuing when it is set and end with the batches in flight. */
    spk_reason                host_stop;
    spk_threads               threads;   /* the CPU's thread count, fitted per solve          */
    /* The inner solves of a mixed-precision solve (src/mixed.c) run on a result of their own
     * (their ||b|| is the outer residual's); `outer`, when not NULL, is the caller's result:
     * history rows, the monitor and the thread fitting see iteration it_base + it, the
     * refinement step `step` as the cycle, and rel against outer->bnorm; an inner
     * iteration 0 is not recorded again. */
    spk_result               *outer;
    int64_t                   it_base, step;
    const spk_options        *opt;
    spk_result               *res;     /* reason, iterations, rnorm, history                   */
    int64_t                   maxiter; /* resolved from opt                                   */
    double                    t0;      /* spk_now() when the solve began                      */
    int64_t                   hist_cap;
    /* the workspace: device vectors by slot (spk_krylov_vec) and one host array
     * (spk_krylov_host), made at the first solve and kept until spk_krylov_free */
    double                   *ws[SPK_WS_MAX];
    int64_t                   ws_len[SPK_WS_MAX];
    double                   *hws;
    int64_t                   hws_len;
} spk_krylov;

/* solvers/workspace.c. *v = the device vector of `slot` with `len` doubles: the one kept from
 * an earlier solve when it has that length, else a new one (ops->alloc, zero-filled) that
 * replaces it. A reused vector holds whatever the last solve left: methods initialise what
 * they read. */
spk_status spk_krylov_vec(spk_krylov *k, int slot, int64_t len, double **v);
/* The same for the one host array (GMRES's Hessenberg matrix and rotations), zero-filled when
 * new. */
spk_status spk_krylov_host(spk_krylov *k, int64_t len, double **h);
/* Free every workspace vector and the host array; NULL-safe. */
void spk_krylov_free(spk_krylov *k);

/* The methods. b, x are device vectors of length n; x holds the initial guess. On return
 * res->reason, res->iterations and res->rnorm are set. The status is for failures only. */
spk_status spk_cg(spk_krylov *k, const double *b, double *x);
/* CG with its vectors stored in fp32 (solvers/cg.c), from x = 0, for the inner solves of a
 * mixed solve: where spk_cg32_ok says it can run (an operator with spmv_dot32, M = I or
 * diagonal, one device, no scaling; src/mixed.c decides whether it pays). x (fp64) receives
 * the iterate reached. */
spk_status spk_cg32(spk_krylov *k, const double *b, double *x);
int spk_cg32_ok(const spk_krylov *k);
spk_status spk_bicgstab(spk_krylov *k, const double *b, double *x);
spk_status spk_gmres(spk_krylov *k, const double *b, double *x);
spk_status spk_fgmres(spk_krylov *k, const double *b, double *x);   /* solvers/gmres.c */
spk_status spk_minres(spk_krylov *k, const double *b, double *x);
/* CG with one reduction per iteration (solvers/cg_single.c): spk_cg's form over ranks. */
spk_status spk_cg_single(spk_krylov *k, const double *b, double *x);
/* After a CG ended DIVERGED_INDEFINITE: res->reason_detail says what was nonpositive (`what`,
 * its value v), at which iteration and how far the residual ||r|| had come (solvers/cg.c). */
void spk_cg_indefinite_detail(spk_result *res, const char *what, double v, int64_t it,
                              double rnorm);

/* solvers/stop.c: the stopping test and the per-iteration record. */
/* max(rtol * bnorm, atol) */
double spk_stop_threshold(const spk_options *opt, double bnorm);
/* Converged reason for rnorm against the threshold (RTOL or ATOL, whichever held), or
 * SPK_REASON_NONE when not converged, or SPK_DIVERGED_NANORINF when rnorm is NaN / Inf. */
spk_reason spk_stop_check(const spk_options *opt, double bnorm, double rnorm);
/* A recursive (or implicit) residual that passed while the true one ||b - A x|| is above this
 * many thresholds: the recursion has lost touch with A x (DIVERGED_TRUE_RESIDUAL_MISMATCH). */
#define SPK_MISMATCH_FACTOR 10.0
/* Record iteration `it` (history when asked, the monitor every monitor_every iterations, 1
 * for 0), then the host's tests: max_time, and a monitor that asked to stop (k->host_stop). */
spk_status spk_stop_record(spk_krylov *k, int64_t it, int64_t cycle, double rnorm);
/* The divergence threshold dtol max(||b||, ||r0||), or INFINITY when dtol is 0. */
double spk_stop_dtol_threshold(const spk_options *opt, double bnorm, double r0norm);
/* Stagnation: a new smallest ||r|| must fall below SPK_STAG_FACTOR times the last one. */
#define SPK_STAG_FACTOR 0.999
/* solvers/batch.c: the host loop of a method with device-resident scalars. `step` queues one
 * iteration; after each batch the block at dev_block (`bytes`) is fetched into host[slot], and
 * `take` is handed each read-back in order (slot 0 or 1): it records the iterations since the
 * last one and reports the iteration count, whether the method is done, and the residual norm
 * its stopping test compares with `thr` (NAN when it has none). Iterations run until done or
 * k->maxiter are queued, but none far past the stop the residual's rate predicts (thr > 0;
 * r0 the norm at iteration 0); *last is the slot of the final read-back, -1 when nothing was
 * queued (maxiter 0). */
typedef struct spk_batch_method {
    void       *self;
    spk_status (*step)(void *self);
    spk_status (*take)(void *self, int slot, int64_t *it, int *done, double *rnorm);
    const void *dev_block;
    size_t      bytes;
    void       *host[2];
    int         gpu_shape;           /* 1: depth 2 and timed batches on the CPU too (tests)  */
    int         no_graph;            /* 1: never capture the steps into a CUDA graph (a step
                                        runs host code: a user preconditioner)              */
    double      thr, r0;             /* the stopping test's ||r|| threshold (0: no prediction)
                                        and ||r|| at iteration 0                            */
} spk_batch_method;
spk_status spk_batch_run(spk_krylov *k, const spk_batch_method *m, int64_t first_batch,
                         int64_t max_batch, int *last);

/* 1 if x is a usable nonzero denominator: finite and |x| > tiny * scale. */
int spk_denominator_ok(double x, double scale);

/* ---- the preconditioner as a method sees it (solvers/stop.c) ---- */
/* How a fused path takes M: M = I (nothing to apply), a diagonal it fuses into its vector
 * steps (spk_krylov_dinv), or the general path, which applies M and then runs the fused
 * steps on z. */
typedef enum { SPK_PC_IDENTITY, SPK_PC_DIAGONAL, SPK_PC_GENERAL } spk_pc_path;
spk_pc_path spk_krylov_pc_path(const spk_krylov *k);
/* M^-1 = diag(d) for SPK_PC_DIAGONAL: d on the device; NULL otherwise. */
const double *spk_krylov_dinv(const spk_krylov *k);
/* z = M^-1 r through the row (a copy for M = I). */
spk_status spk_precond_apply(spk_krylov *k, const double *r, double *z);

/* y = A x through the backend (beta = 0), the scaled operator a_scale A. */
spk_status spk_apply_A(spk_krylov *k, const double *x, double *y);

#ifdef __cplusplus
}
#endif
#endif /* SPK_SOLVER_H */
