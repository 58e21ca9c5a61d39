/* solvers/amg.h -- smoothed-aggregation AMG: the hierarchy built on the host
 * (solvers/amg_setup.c) or on the GPU (solvers/amg_setup_cuda.cu, amg.setup = device), and
 * the preconditioner row that runs its V-cycle on the context's device (solvers/pc_amg.c).
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

#define AMG_LANCZOS_STEPS 20       /* the spectral estimate's steps (symmetric A)            */
#define AMG_POWER_STEPS 30         /* and power steps (otherwise)                           */
#define AMG_QR_DROP 1e-10          /* PyAMG's fit_candidates tolerance                      */
#define AMG_MAX_BS 64              /* block_size and nullspace_cols (check_options); a
                                      coarse level's block is the near-null space's k      */

/* The Jacobi smoother's weight times rho(D^-1 A) (spk_amg_options.omega's default). The
 * textbook 4/3 damps the top of the spectrum best for a stand-alone smoother; inside CG's
 * V(1,1) cycle a larger weight, which damps the middle of the spectrum harder and leaves the
 * top a factor |1 - omega lambda| <= 0.6 where 4/3 leaves 0.33, took fewer iterations on
 * every grid problem measured (the 2-vCPU VM, `bench_amg --device cpu`, rtol 1e-8, b = A x
 * random; AMG-CG iterations at 4/3 / 1.5 / 1.6 / 1.7 / 1.8): lame3d:24 with rigid-body modes
 * 19/18/17/17/16, lame3d:32 19/17/17/16/16, poisson3d:40 13/12/11/11/13, poisson3d:64
 * 13/-/12/11/-, jump3d:40 17/16/15/15/15, jump3d:64 19/18/18/17/-, poisson2d:400 12/-/11/-/-,
 * bcsstk13 695/603/595/628/612, 1138_bus 80/-/78/-/-; fewer at 4/3 on bcsstk09 only
 * (74/79/84/87/-). 1.6 keeps a margin of 25% for the Lanczos estimate of rho falling short
 * (the weight must stay below 2 / rho for the cycle to stay positive definite). */
#define SPK_AMG_OMEGA 1.6

/* MIS(2) aggregation (Bell, Dalton & Olson, SIAM J. Sci. Comput. 34, 2012), the same steps on
 * the host (spk_amg_mis2_aggregation) and the GPU (solvers/amg_setup_cuda.cu), so the two give
 * the same aggregates for the same strength graph:
 *   rounds   every node carries the key (state, hash(i), i), state 0 out, 1 undecided, 2 in;
 *            m1 = the largest key of a node and its neighbours, m2 the same over m1, and an
 *            undecided node whose m2 is its own key goes in, one that sees a node in (m2's
 *            state 2) goes out; until none is undecided (a node without neighbours starts
 *            out and stays in no aggregate);
 *   roots    each node in is an aggregate, numbered in node order;
 *   joins    a node next to a root joins it (at most one root is a step away); a node two
 *            steps away joins the aggregate most of its neighbours joined, ties to the
 *            neighbour of largest key (spk_amg_join_most: more compact aggregates than the
 *            neighbour of largest key alone, 1-2 iterations fewer on 3-D grids). */
#if defined(__CUDACC__)
#define SPK_AMG_HD __host__ __device__
#else
#define SPK_AMG_HD
#endif
static inline SPK_AMG_HD uint32_t spk_amg_hash(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
static inline SPK_AMG_HD uint64_t spk_amg_key(int state, int64_t i)
{
    return ((uint64_t)state << 62) | ((uint64_t)(spk_amg_hash((uint32_t)i) & 0x3fffffffu) << 32) |
           (uint64_t)(uint32_t)i;
}
enum { SPK_AMG_MIS_OUT = 0, SPK_AMG_MIS_UNDECIDED = 1, SPK_AMG_MIS_IN = 2 };
/* The join of a node two steps from the roots: the aggregate (in `first`) that most of its
 * neighbours are in, ties to the neighbour of largest key; -1 where no neighbour is in one. */
static inline SPK_AMG_HD int32_t spk_amg_join_most(const int32_t *first, int64_t p0, int64_t p1,
                                                   const int32_t *gcol)
{
    int64_t most = 0;
    uint64_t best = 0;
    int32_t a = -1;
    for (int64_t p = p0; p < p1; p++) {
        const int32_t j = gcol[p], aj = first[j];
        if (aj < 0)
            continue;
        int64_t c = 0;
        for (int64_t q = p0; q < p1; q++)
            c += first[gcol[q]] == aj;
        const uint64_t key = spk_amg_key(SPK_AMG_MIS_OUT, j);
        if (c > most || (c == most && key > best)) {
            most = c;
            best = key;
            a = aj;
        }
    }
    return a;
}

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
    /* a GPU build's values of P, R and the next level's A on the device (not owned: the
     * hierarchy's device part, spk_amg_hier.dev, holds them), NULL after a host build */
    const double *dP, *dR, *dA;
    const int32_t *dPc, *dRc, *dAc;   /* ... their columns (host_values 0: the host's NULL)  */
    const double *d_dinv;   /* ... and D^-1 there (the smoothers' weights are made from it)   */
} spk_amg_level;

/* The steps of a GPU build, timed apart (spk_amg_hier.dev_step_s; `--explain` prints them):
 * START and END before and after the levels, the others summed over the levels */
enum {
    SPK_AMG_STEP_START,    /* the options, level 0's A and B on the device, the workspace     */
    SPK_AMG_STEP_RHO,      /* D^-1 and the spectral estimate                                  */
    SPK_AMG_STEP_AGG,      /* strength graph and MIS(2) aggregates                            */
    SPK_AMG_STEP_T,        /* the tentative prolongator and its QR                            */
    SPK_AMG_STEP_S,        /* S = I - omega D^-1 A                                            */
    SPK_AMG_STEP_P,        /* P = S T                                                         */
    SPK_AMG_STEP_R,        /* R = P^T and its map                                             */
    SPK_AMG_STEP_AP,       /* A P                                                             */
    SPK_AMG_STEP_RAP,      /* R (A P)                                                         */
    SPK_AMG_STEP_DOWN,     /* the patterns (and values) to the host                           */
    SPK_AMG_STEP_END,      /* the coarsest level's columns and values down, its inverse       */
    SPK_AMG_DEV_STEPS
};

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
    int            device;         /* built on the GPU (spk_amg_build_device)                */
    int            mis2;           /* the aggregates are MIS(2)'s                            */
    double         spgemm_bytes;   /* the device products' largest working memory (bytes)    */
    double         spgemm_bound;   /* the bound it was held to                               */
    int            spgemm_chunked; /* products made in chunks to stay below it               */
    double         xfer_s;         /* of the device build: its copies of A, P, R to and fro  */
    double         xfer_up_s;      /* of which the upload of A                              */
    void          *dev;            /* a GPU build's device hierarchy, kept for refreshes     */
    double         dev_bytes;      /* its device memory                                      */
    int            mis_rounds[32]; /* MIS(2) rounds per level                                */
    double         dev_step_s[SPK_AMG_DEV_STEPS]; /* a GPU build's seconds per step          */
    int            a_from_layout;  /* its level 0 read from the matrix's device layout       */
    int            host_values;    /* a GPU build's host copies hold the values (and D^-1)   */
    int64_t        stop_aggs;      /* a host build that stopped coarsening: the aggregates of
                                      its last level (x k no fewer rows than the level's)    */
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

/* The build on the context's GPU (solvers/amg_setup_cuda.cu): every level's strength,
 * MIS(2) aggregates, T, rho, S, P = S T, R = P^T and R (A P) made there (the products by
 * cuSPARSE's SpGEMM), the hierarchy's A, P, R, aggregates, B and D^-1 then copied into H as
 * spk_amg_build leaves them (T, S and A P stay on the device only, in H->dev, for
 * spk_amg_refresh_device), the coarsest level's inverse on the host. The same hierarchy as
 * spk_amg_build with aggregation = MIS(2) up to the products' rounding. host_values 0: the
 * columns and values of the levels' P, R and A (but the coarsest A's) and D^-1 stay on the
 * device only (at lev[l].dPc, dP, dRc, dR, dAc, dA, d_dinv; the host CSRs hold the row
 * offsets, colind NULL, their values unset), for a caller whose level matrices take them
 * from there. M (optional): A's handle; where its layout is on this GPU and gives its CSR
 * (spk_spmv_backend.csr_device), level 0 is read from there instead of uploaded (its values
 * are then the layout's, current after a device update that left A's host copy stale).
 * SPK_ERR_UNSUPPORTED (nothing kept) for what it does not take: more than 2^31 - 1 rows or
 * entries in a level. */
spk_status spk_amg_build_device(spk_context *ctx, const spk_csr *A, const spk_matrix *M,
                                int symmetric, const spk_amg_options *opt, int host_values,
                                spk_amg_hier *H);
/* A GPU build's refresh after a value update (A's new values in M's layout, or in its host
 * copy), on the device with
 * what the build kept there (H->dev: every level's A, S, T, P, A P, R and R's map): D^-1 and
 * rho, S, P = S T, R, A P and R (A P) recomputed in their patterns by a kernel of 1-32 lanes
 * a row (the same bits on every call and for every lane count), allocating nothing. The new
 * values of P, R and the next level's A are then at lev[l].dP, dR, dA on the device, D^-1
 * and rho in the host hierarchy, the coarsest A's values on the host; the host copies of the
 * other levels' P, R and A (where the hierarchy still holds them) keep the build's values.
 * M (optional): A's handle; where its layout on this GPU gives its CSR (csr_device), A's new
 * values are read from there, else from A's host copy (made current first). */
spk_status spk_amg_refresh_device(spk_context *ctx, const spk_csr *A, spk_matrix *M,
                                  spk_amg_hier *H);
/* A csr-cuda layout (spk_backend_csr_cuda's state) of level l's A (l >= 1), P or R (which:
 * 'A', 'P', 'R') over the device hierarchy's own arrays, so that the level matrix needs no
 * conversion or upload and a refresh's values are its values; A is the same matrix on the
 * host (the kernel plan). The state must be destroyed before the hierarchy is freed. */
spk_status spk_amg_device_layout(spk_context *ctx, spk_amg_hier *H, int l, char which,
                                 const spk_csr *A, void **state);
/* Free what a GPU build keeps on the device (H->dev); spk_amg_free calls it. */
void spk_amg_device_free(spk_amg_hier *H);
/* The coarsest level's inverse again from its A's current host values. */
spk_status spk_amg_coarse_refresh(spk_context *ctx, spk_amg_hier *H, const spk_csr *A);

/* The pieces spk_amg_build and spk_amg_build_device share (solvers/amg_setup.c). begin:
 * the options resolved and checked, the workspace, level 0's n, bs, k and B; finish: the
 * coarsest level's dense inverse. */
spk_status spk_amg_begin(spk_context *ctx, const spk_csr *A, int symmetric,
                         const spk_amg_options *opt, spk_amg_hier *H);
spk_status spk_amg_finish(spk_context *ctx, spk_amg_hier *H, const spk_csr *A);
/* MIS(2) aggregation of the graph of nn nodes (gptr, gcol; no self loops): agg[i] the
 * aggregate of node i or -1; returns the number of aggregates, or -1 out of memory (ctx has
 * the message). rounds: the MIS rounds it took. */
int64_t spk_amg_mis2_aggregation(spk_context *ctx, int64_t nn, const int64_t *gptr,
                                 const int32_t *gcol, int32_t *agg, int *rounds);
/* The spectral estimate's start vector (the same n values on every run), and the largest
 * eigenvalue of the Lanczos tridiagonal (diagonal a, off-diagonal b, order m; bisection). */
void spk_amg_start_vector(int64_t n, double *v);
/* Its entry i, in [0.5, 1.5): splitmix64 of i, a hash of the index alone, so that the host
 * and the device make each entry apart, in parallel, with the same bits. */
static inline SPK_AMG_HD double spk_amg_start_entry(int64_t i)
{
    uint64_t z = (uint64_t)i + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return 0.5 + (double)(z >> 11) * 0x1.0p-53;
}
double spk_amg_tridiag_max(const double *a, const double *b, int m);

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
    int64_t nnz_a[32], nnz_r[32], nnz_p[32];          /* their entries                        */
    const char *be_a[32], *be_r[32], *be_p[32];       /* their backends (the fp32 twin's name
                                                         is the matrix's: see the values line) */
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
