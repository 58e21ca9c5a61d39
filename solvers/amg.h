/* solvers/amg.h -- smoothed-aggregation AMG: the hierarchy built on the host
 * (solvers/amg_setup.c) and the preconditioner row that runs its V-cycle on the context's
 * device (solvers/pc_amg.c).
 *
 * The setup follows PyAMG's smoothed_aggregation_solver (Vanek, Mandel & Brezina, Computing
 * 56, 1996; Bell, Dalton & Olson, PyAMG 2023), level by level:
 *   strength     symmetric: node j is a strong neighbour of i when |a_ij| >= theta
 *                sqrt(|a_ii a_jj|), with blocks of block_size unknowns measured by their
 *                Frobenius norm (PyAMG's symmetric_strength_of_connection; theta 0: every
 *                stored entry);
 *   aggregates   standard greedy aggregation in three passes (PyAMG's standard_aggregation):
 *                a node all of whose neighbours are free takes them as its aggregate; a
 *                node left over joins the aggregate of a neighbour made in pass one; what is
 *                left forms aggregates with its free neighbours; a node with no neighbours
 *                is in no aggregate (a zero row of T);
 *   T            per aggregate, the rows of B of its unknowns, QR by modified Gram-Schmidt:
 *                Q into T, R is the aggregate's rows of the coarse B (a column that falls
 *                below 1e-10 of its norm is dropped: a zero column of T, PyAMG's
 *                fit_candidates);
 *   P            (I - omega D^-1 A) T, omega = 4 / (3 rho(D^-1 A)), rho the largest Ritz
 *                value of 20 Lanczos steps on D^-1/2 A D^-1/2 (power steps on D^-1 A when A is
 *                not symmetric);
 *   R, A_c       R = P^T, A_c = R (A P), both products in two phases (src/csr_ops.c), so that a
 *                refresh after a value update recomputes only the values;
 *   coarsest     at most max_coarse rows, or max_levels levels, or when aggregation no
 *                longer coarsens: its dense inverse by LU with partial pivoting (an unknown
 *                whose row and column are zero, a dropped column's, gets 0).
 * The coarse unknowns of an aggregate are its k null-space columns, so the next level is
 * blocked by k. */
#ifndef SPK_AMG_H
#define SPK_AMG_H

#include "../src/spk_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spk_amg_level {
    spk_csr  A;             /* level >= 1: R A P of the level above (owned); level 0: unused  */
    int64_t  n;             /* unknowns                                                      */
    int      bs;            /* unknowns per node                                             */
    int      k;             /* null-space columns                                            */
    double  *B;             /* n x k near-null space, column-major                           */
    double  *dinv;          /* 1 / a_ii, 0 where a_ii = 0                                    */
    double   rho;           /* rho(D^-1 A), estimated                                        */
    /* to the next level (absent on the coarsest) */
    int32_t *agg;           /* node -> aggregate, -1: none                                   */
    int64_t  naggs;
    spk_csr  T;             /* n x naggs k tentative prolongator                             */
    spk_csr  S;             /* I - omega D^-1 A, A's pattern with its diagonal               */
    spk_csr  P;             /* S T                                                           */
    spk_csr  R;             /* P^T                                                           */
    int64_t *rmap;          /* R's entry q is P's entry rmap[q]                              */
    spk_csr  AP;            /* A P                                                           */
} spk_amg_level;

typedef struct spk_amg_hier {
    int            nlevels;        /* levels, the coarsest included                          */
    spk_amg_level  lev[32];
    double        *cinv;           /* the coarsest level's inverse, dense row-major         */
    int64_t        nc;             /* its order                                              */
    spk_csr        Cinv;           /* the same as a full CSR (the V-cycle's last SpMV)      */
    int            symmetric;      /* level 0 is symmetric: Lanczos, else power steps       */
    spk_amg_options opt;           /* resolved (defaults filled in)                          */
    /* host workspaces kept for refreshes, so that a refresh allocates nothing */
    double        *acc;            /* SpGEMM accumulator: nacc x acc_w                       */
    int            nacc;
    int64_t        acc_w;
    double        *work;           /* 4 n_0 doubles: Lanczos vectors                         */
    double        *lu;             /* nc x nc, and its pivots                                */
    int64_t       *piv;
    double         setup_s[32];    /* seconds per level                                      */
} spk_amg_hier;

/* Resolve the options' zeros to the defaults (spk.h, spk_amg_options). */
void spk_amg_options_resolve(const spk_amg_options *in, spk_amg_options *out);

/* Build the hierarchy of A (host CSR, values current) with the options (resolved inside).
 * symmetric: A is symmetric (the spectral estimate). On failure H holds nothing. */
spk_status spk_amg_build(spk_context *ctx, const spk_csr *A, int symmetric,
                         const spk_amg_options *opt, spk_amg_hier *H);
/* A's values changed, its pattern did not: recompute every value of the hierarchy with the
 * same aggregates and T (the near-null space is kept), allocating nothing. */
spk_status spk_amg_rebuild_values(spk_context *ctx, const spk_csr *A, spk_amg_hier *H);
void spk_amg_free(spk_amg_hier *H);

/* What one V-cycle costs against its parts (bench/bench_vcycle.c), each timed on its own as
 * the mean of reps calls on the context's stream, without a CUDA graph: the whole apply, and
 * per level the SpMVs with A, R and P, the smoothers' vector steps, and the coarsest level's
 * dense SpMV. state: a setup of the amg row; r, z: device vectors of the fine level. */
typedef struct spk_amg_timing {
    int    nlevels;
    double vcycle;
    double spmv_a[32], spmv_r[32], spmv_p[32], vec[32];
    int    count_a[32];          /* SpMVs with A_l in one cycle                               */
    double coarse;
} spk_amg_timing;
spk_status spk_amg_time_parts(void *state, const double *r, double *z, int reps,
                              spk_amg_timing *t);

/* rho(D^-1 A) as the hierarchy estimates it for each level (the smoothers' intervals and
 * P's omega), on the host: the largest Ritz value of 20 Lanczos steps on D^-1/2 A D^-1/2 from
 * a fixed start vector when A is symmetric and dinv >= 0, else the norm growth of 30 power
 * steps on D^-1 A; 1 when n = 0 or the estimate comes out zero or NaN. dinv: 1 / a_ii.
 * work: 4 n doubles. The same bits on every run. */
double spk_amg_spectral_radius(const spk_csr *A, const double *dinv, int symmetric,
                               double *work);

/* The rigid-body modes of nodes at coords (dim 2 or 3, node-major): 3 or 6 columns of
 * dim * nnodes entries, column-major into B, about the coordinates' centroid. */
void spk_amg_rigid_modes(const double *coords, int64_t nnodes, int dim, double *B);

#ifdef __cplusplus
}
#endif
#endif /* SPK_AMG_H */
