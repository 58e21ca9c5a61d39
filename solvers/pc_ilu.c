/* solvers/pc_ilu.c -- the incomplete factorizations as rows of the preconditioner table:
 * ILU(0), IC(0) (solvers/ilu0.c) and ILUT (solvers/ilut.c) make host factors A ~= L U (with a
 * column permutation for ILUT); the apply is z = P U^-1 L^-1 r, by one of two triangular
 * solves (spk_options.ilu.trisolve):
 *
 *   EXACT   the sequential row loops on the CPU (the specification: forward substitution with
 *           the unit L, backward with U), cuSPARSE's SpSV on the GPU (level-scheduled; its
 *           analysis made once at setup and kept across refreshes).
 *   JACOBI  a fixed number s of Jacobi sweeps on each triangle (Chow & Patel, SISC 2015; Anzt,
 *           Chow & Dongarra, "Iterative sparse triangular solves for preconditioning",
 *           Euro-Par 2015): L y = r by y <- r - L_s y from y = r, U z = y by
 *           z <- D^-1 (y - U_s z) from z = D^-1 y, with L_s, U_s the strict parts as spk
 *           matrices. SpMV and vector ops only, through the tables: it runs on every device
 *           with no kernel of its own, in 2s SpMVs of the factors' entries.
 *
 * The sweeps replace L^-1 by the truncated Neumann series N_L = sum_{k<=s} (-L_s)^k and U^-1
 * by N_U = sum_{k<=s} (-D^-1 U_s)^k D^-1: M^-1 ~= N_U N_L is a fixed polynomial in the
 * factors, so still a fixed linear operator (GMRES, BiCGStab and FGMRES take it as they take
 * the exact one). For IC(0), U = D L^T makes N_U = N_L^T D^-1, so M^-1 = N_L^T D^-1 N_L is
 * symmetric positive definite for every s and CG stays valid; for ILU(0) and ILUT it is not
 * symmetric, as the exact one is not. The sweeps converge where the factors' strict parts
 * are small against their diagonal; on factors far from that, raise the sweeps or solve
 * exactly.
 *
 * Setup: the factorization on the host, then the factors on the device. Refresh (A's values
 * changed, its pattern did not): ILU(0)/IC(0) recompute the values on the symbolic part kept
 * from setup and upload them into the same arrays, with no allocation from the second
 * refresh on; ILUT's pattern depends on the values, so its refresh factors and sets up anew.
 * Per apply: EXACT 2 triangular solves (nnz(L) + nnz(U) multiply-adds); JACOBI 2s SpMVs, s
 * copies and s + 1 diagonal scalings; ILUT one more SpMV (the permutation).
 *
 * With precision MIXED the sweeps' products read L_s and U_s through their format's fp32 twin
 * (spk_spmv_backend.fp32; on the GPU made from the factor's device layout, sharing its
 * indices), products and sums still in fp64: the sweeps' operator is then the same polynomial
 * in the factors rounded to float, still fixed and linear (and for IC(0) still symmetric: L_s
 * and U_s = D L_s^T round alike only up to D, so CG's symmetry holds to the rounding of the
 * factors, as the inner solve of mixed precision allows). D^-1 stays fp64, and a factor with
 * an entry outside fp32's range keeps its fp64 products. The exact solves stay fp64. */
#include "ilu.h"
#include "precond.h"
#include "twin.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ILU_DEFAULT_SWEEPS 5
/* On the GPU, trisolve AUTO takes the sweeps from this many rows on (ilu_setup) */
#define ILU_GPU_SWEEP_ROWS 32768
#define ILUT_DEFAULT_DROP 1e-4
#define ILUT_DEFAULT_FILL 10.0

typedef struct pc_ilu {
    spk_context       *ctx;
    const spk_vec_ops *ops;
    spk_precond        kind;
    int64_t            n, nnz_a;
    spk_options        opt;            /* the solver's options (ILUT's refresh sets up anew) */
    spk_ilu_factors    F;              /* the host factors                                   */
    spk_ilu0          *plan;           /* ILU(0)/IC(0): the symbolic part; NULL for ILUT     */
    spk_trisolve       trisolve;       /* resolved: EXACT or JACOBI                          */
    int                sweeps;
    spk_ilu_sv        *sv;             /* EXACT on the GPU                                   */
    spk_matrix        *Ls, *Us;        /* JACOBI: the strict triangles (NULL when empty)     */
    spk_matrix        *P;              /* ILUT: x = P y, x[perm[j]] = y[j]; NULL without perm */
    double            *dinv;           /* JACOBI: 1 / diag(U), device                        */
    double            *w[3];           /* device scratch                                     */
    double            *host;           /* host staging: max(n, nnz(U_s)) doubles             */
    int                fp32;           /* precision MIXED: the sweeps on fp32 factor twins   */
    spk_twin           tL, tU;         /* the twins of Ls and Us (s NULL: fp64 products)      */
    double             setup_s, factor_s;
} pc_ilu;

static const char *kind_title(spk_precond k)
{
    return k == SPK_PRECOND_IC0 ? "IC(0)" : k == SPK_PRECOND_ILU0 ? "ILU(0)" : "ILUT";
}

/* Products with Ls and Us through their fp32 twins where they are live, else in fp64. */
static spk_status spmv(const pc_ilu *M, const spk_matrix *A, double alpha, const double *x,
                       double beta, double *y)
{
    static const spk_twin none;
    const spk_twin *t = A == M->Ls ? &M->tL : A == M->Us ? &M->tU : &none;
    return spk_twin_spmv(M->ctx, A, t, alpha, x, beta, y);
}

static int64_t strict_upper_values(pc_ilu *M);

/* Both factors' twins (precision MIXED with the sweeps); nothing otherwise. */
static spk_status twins_sync(pc_ilu *M)
{
    if (!M->fp32 || M->trisolve != SPK_TRISOLVE_JACOBI)
        return SPK_OK;
    spk_status st = M->Ls ? spk_twin_sync(M->ctx, M->Ls, M->F.L.val, &M->tL) : SPK_OK;
    if (!st && M->Us) {
        strict_upper_values(M);              /* U_s's values in M->host, as uploaded */
        st = spk_twin_sync(M->ctx, M->Us, M->host, &M->tU);
    }
    return st;
}

/* ---- the exact solves on the CPU: the specification -------------------------------------- */

/* z = U^-1 L^-1 r in host memory: forward into z, backward in place (row i reads only the
 * rows below it, already solved). */
static void host_solve(const spk_ilu_factors *F, const double *r, double *z)
{
    const spk_csr *L = &F->L, *U = &F->U;
    for (int64_t i = 0; i < F->n; i++) {
        double s = r[i];
        for (int64_t p = L->rowptr[i]; p < L->rowptr[i + 1]; p++)
            s -= L->val[p] * z[L->colind[p]];              /* y_i = r_i - sum_j l_ij y_j   */
        z[i] = s;
    }
    for (int64_t i = F->n - 1; i >= 0; i--) {
        const int64_t d = U->rowptr[i];                     /* rows are sorted: u_ii first  */
        double s = z[i];
        for (int64_t p = d + 1; p < U->rowptr[i + 1]; p++)
            s -= U->val[p] * z[U->colind[p]];              /* z_i = (y_i - sum u_ij z_j)   */
        z[i] = s / U->val[d];                              /*       / u_ii                 */
    }
}

/* ---- the Jacobi sweeps: every device --------------------------------------------------- */

/* y = N_L r: s sweeps of y <- r - L_s y from y = r, ending in `out`. */
static spk_status sweep_lower(pc_ilu *M, const double *r, double *out, double *other)
{
    spk_status st = SPK_OK;
    if (!M->Ls)
        return M->ops->copy(M->ctx, M->n, r, out);
    const double *y = r;
    for (int k = 0; k < M->sweeps && !st; k++) {
        double *next = (M->sweeps - k) % 2 ? out : other;   /* the last sweep writes out */
        if (!(st = M->ops->copy(M->ctx, M->n, r, next)))
            st = spmv(M, M->Ls, -1.0, y, 1.0, next);
        y = next;
    }
    return st;
}

/* z = N_U y: z = D^-1 y, then s sweeps of z <- D^-1 (y - U_s z), ending in z; t scratch. */
static spk_status sweep_upper(pc_ilu *M, const double *y, double *z, double *other, double *t)
{
    const int s = M->Us ? M->sweeps : 0;
    double *cur = s % 2 ? other : z;                        /* so that the last write is z */
    spk_status st = M->ops->pmul(M->ctx, M->n, M->dinv, y, cur);
    for (int k = 0; k < s && !st; k++) {
        double *next = cur == z ? other : z;
        if (!(st = M->ops->copy(M->ctx, M->n, y, t)) && !(st = spmv(M, M->Us, -1.0, cur, 1.0, t)))
            st = M->ops->pmul(M->ctx, M->n, M->dinv, t, next);
        cur = next;
    }
    return st;
}

/* ---- apply ------------------------------------------------------------------------------- */

static spk_status ilu_apply(void *state, const double *r, double *z)
{
    pc_ilu *M = state;
    if (M->n == 0)
        return SPK_OK;
    double *out = M->P ? M->w[2] : z;                       /* before the permutation     */
    spk_status st;
    if (M->trisolve == SPK_TRISOLVE_JACOBI) {
        if (!(st = sweep_lower(M, r, M->w[0], M->w[1])))
            st = sweep_upper(M, M->w[0], out, M->w[1], M->P ? z : M->w[2]);
    } else if (M->ctx->device == SPK_DEVICE_CPU) {
        host_solve(&M->F, r, out);
        st = SPK_OK;
    } else {
        st = spk_ilu_sv_apply(M->ctx, M->sv, r, M->w[0], out);
    }
    if (!st && M->P)
        st = spmv(M, M->P, 1.0, out, 0.0, z);               /* z[perm[j]] = out[j]        */
    return st;
}

/* ---- setup, refresh, destroy -------------------------------------------------------------- */

static void release(pc_ilu *M)
{
    spk_twin_free(&M->tL);              /* before the matrices whose layouts they borrow */
    spk_twin_free(&M->tU);
    spk_ilu_sv_free(M->sv);
    spk_matrix_destroy(M->Ls);
    spk_matrix_destroy(M->Us);
    spk_matrix_destroy(M->P);
    M->ops->free(M->ctx, M->dinv);
    for (int k = 0; k < 3; k++)
        M->ops->free(M->ctx, M->w[k]);
    spk_free(M->host);
    spk_ilu0_free(M->plan);
    spk_ilu_factors_free(&M->F);
    M->sv = NULL, M->Ls = M->Us = M->P = NULL, M->dinv = M->host = NULL, M->plan = NULL;
    M->w[0] = M->w[1] = M->w[2] = NULL;
}

static void ilu_destroy(void *state)
{
    pc_ilu *M = state;
    if (!M)
        return;
    release(M);
    spk_free(M);
}

static spk_status device_matrix(pc_ilu *M, const spk_csr *c, spk_matrix **out)
{
    spk_status st = spk_matrix_from_canonical(M->ctx, c, out);
    return st ? st : spk_matrix_prepare(M->ctx, *out, SPK_FMT_AUTO);
}

/* U_s's values (U without its first entry, the diagonal, in each row) into M->host, and
 * 1 / u_ii into host + nnz(U_s) .. (n more). */
static int64_t strict_upper_values(pc_ilu *M)
{
    const spk_csr *U = &M->F.U;
    int64_t q = 0;
    for (int64_t i = 0; i < M->n; i++)
        for (int64_t p = U->rowptr[i] + 1; p < U->rowptr[i + 1]; p++)
            M->host[q++] = U->val[p];
    for (int64_t i = 0; i < M->n; i++)
        M->host[q + i] = 1.0 / U->val[U->rowptr[i]];
    return q;
}

/* The Jacobi variant's device data: L_s as is, U_s without the diagonal, D^-1. */
static spk_status jacobi_setup(pc_ilu *M)
{
    const spk_csr *U = &M->F.U;
    const int64_t nus = U->nnz - M->n;
    spk_status st = SPK_OK;
    if (M->F.L.nnz > 0)
        st = device_matrix(M, &M->F.L, &M->Ls);
    if (!st && nus > 0) {
        spk_csr Us;
        if ((st = spk_csr_alloc(M->ctx, M->n, M->n, nus, &Us)))
            return st;
        int64_t q = 0;
        for (int64_t i = 0; i < M->n; i++) {
            for (int64_t p = U->rowptr[i] + 1; p < U->rowptr[i + 1]; p++) {
                Us.colind[q] = U->colind[p];
                Us.val[q++] = U->val[p];
            }
            Us.rowptr[i + 1] = q;
        }
        st = device_matrix(M, &Us, &M->Us);
        spk_csr_free(&Us);
    }
    if (!st)
        st = M->ops->alloc(M->ctx, M->n, &M->dinv);
    if (!st) {
        const int64_t q = strict_upper_values(M);
        st = M->ops->upload(M->ctx, M->n, M->host + q, M->dinv);
    }
    return st;
}

/* New factor values into the device data made by setup, in place. */
static spk_status upload_values(pc_ilu *M)
{
    if (M->trisolve == SPK_TRISOLVE_EXACT)
        return M->ctx->device == SPK_DEVICE_CPU ? SPK_OK
                                                : spk_ilu_sv_update(M->ctx, M->sv, &M->F);
    spk_status st = SPK_OK;
    if (M->Ls)
        st = spk_matrix_update_values(M->ctx, M->Ls, M->F.L.nnz, M->F.L.val, 0);
    if (!st && M->Ls && !M->Ls->be)      /* a failed device refill dropped the layout */
        st = spk_matrix_prepare(M->ctx, M->Ls, SPK_FMT_AUTO);
    const int64_t q = strict_upper_values(M);
    if (!st && M->Us)
        st = spk_matrix_update_values(M->ctx, M->Us, q, M->host, 0);
    if (!st && M->Us && !M->Us->be)
        st = spk_matrix_prepare(M->ctx, M->Us, SPK_FMT_AUTO);
    if (!st)
        st = M->ops->upload(M->ctx, M->n, M->host + q, M->dinv);
    return st;
}

/* x[perm[j]] = y[j] as the matrix P with P(perm[j], j) = 1. */
static spk_status perm_setup(pc_ilu *M)
{
    spk_csr Pc;
    spk_status st = spk_csr_alloc(M->ctx, M->n, M->n, M->n, &Pc);
    if (st)
        return st;
    for (int64_t j = 0; j < M->n; j++)
        Pc.rowptr[M->F.perm[j] + 1] = 1;
    for (int64_t i = 0; i < M->n; i++)
        Pc.rowptr[i + 1] += Pc.rowptr[i];
    for (int64_t j = 0; j < M->n; j++) {
        Pc.colind[Pc.rowptr[M->F.perm[j]]] = (int32_t)j;
        Pc.val[Pc.rowptr[M->F.perm[j]]] = 1.0;
    }
    st = Pc.rowptr[M->n] == M->n ? device_matrix(M, &Pc, &M->P)
                                 : spk_fail(M->ctx, SPK_ERR_ARG, "ILUT: the column permutation "
                                            "is not one");
    spk_csr_free(&Pc);
    return st;
}

static spk_status factor(pc_ilu *M, spk_matrix *A)
{
    const spk_ilu_options *o = &M->opt.ilu;
    if (M->kind == SPK_PRECOND_ILUT)
        return spk_ilut_factor(M->ctx, &A->csr, o->drop_tol > 0 ? o->drop_tol : ILUT_DEFAULT_DROP,
                               o->fill_factor > 0 ? o->fill_factor : ILUT_DEFAULT_FILL, &M->F);
    return spk_ilu0_factor(M->ctx, &A->csr, M->kind == SPK_PRECOND_IC0, &M->plan, &M->F);
}

/* Everything from the host factorization to the device data (setup, and ILUT's refresh). */
static spk_status build(pc_ilu *M, spk_matrix *A)
{
    const double t0 = spk_now();
    spk_status st = spk_matrix_host_values(M->ctx, A);
    if (!st)
        st = factor(M, A);
    M->factor_s = spk_now() - t0;
    if (st)
        return st;
    const int64_t n = M->n, nh = M->F.U.nnz > 2 * n ? M->F.U.nnz : 2 * n;
    if (!(M->host = spk_malloc(M->ctx, (size_t)(nh > 0 ? nh : 1), sizeof *M->host)))
        return spk_fail(M->ctx, SPK_ERR_NOMEM, "%s: staging of %lld doubles: out of memory",
                        kind_title(M->kind), (long long)nh);
    for (int k = 0; k < 3 && !st; k++)
        if (M->trisolve == SPK_TRISOLVE_JACOBI || M->ctx->device != SPK_DEVICE_CPU || k == 2)
            st = M->ops->alloc(M->ctx, n, &M->w[k]);
    if (!st && M->trisolve == SPK_TRISOLVE_JACOBI)
        st = jacobi_setup(M);
    else if (!st && M->ctx->device != SPK_DEVICE_CPU)
        st = spk_ilu_sv_setup(M->ctx, &M->F, &M->sv);
    if (!st && M->F.perm)
        st = perm_setup(M);
    if (!st)
        st = twins_sync(M);
    if (!st)
        st = M->ops->sync(M->ctx);
    M->setup_s = spk_now() - t0;
    return st;
}

static spk_status check_options(spk_context *ctx, const spk_options *opt, spk_precond kind,
                                spk_matrix *A)
{
    const spk_ilu_options *o = &opt->ilu;
    if (o->trisolve != SPK_TRISOLVE_AUTO && o->trisolve != SPK_TRISOLVE_EXACT &&
        o->trisolve != SPK_TRISOLVE_JACOBI)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_ilu_options.trisolve = %d is not a spk_trisolve",
                        (int)o->trisolve);
    if (o->sweeps < 0 || !(o->drop_tol >= 0) || !(o->fill_factor >= 0) ||
        !isfinite(o->fill_factor) || !(o->drop_tol < 1.0))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_ilu_options: sweeps = %d, drop_tol = %g, "
                        "fill_factor = %g: sweeps and fill_factor must be >= 0, drop_tol in "
                        "[0, 1)", o->sweeps, o->drop_tol, o->fill_factor);
    if (A->csr.nrows != A->csr.ncols)
        return spk_fail(ctx, SPK_ERR_ARG, "%s needs a square matrix, not %lld x %lld",
                        kind_title(kind), (long long)A->csr.nrows, (long long)A->csr.ncols);
    if (kind == SPK_PRECOND_IC0 && !spk_matrix_info_of(A)->symmetric)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "IC(0) needs a symmetric matrix; use "
                        "SPK_PRECOND_ILU0 (with GMRES or BiCGStab)");
    return SPK_OK;
}

static spk_status ilu_setup(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                            spk_precond kind, void **state)
{
    *state = NULL;
    spk_status st = check_options(ctx, opt, kind, A);
    if (st)
        return st;
    pc_ilu *M = spk_calloc(ctx, 1, sizeof *M);
    if (!M)
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s preconditioner: out of memory", kind_title(kind));
    M->ctx = ctx;
    M->ops = spk_vec_ops_for(ctx->device);
    M->kind = kind;
    M->opt = *opt;
    M->n = A->csr.nrows;
    M->nnz_a = A->csr.nnz;
    /* AUTO: EXACT on the CPU (the row loops). On the GPU, EXACT (SpSV) for fewer than
     * ILU_GPU_SWEEP_ROWS rows and JACOBI sweeps from there on, ILUT always EXACT (its factors,
     * of the hard matrices it is for, are far from diagonally dominant: the sweeps stagnate).
     * Measured on the H200 by bench_ilu (docs/solvers.md): SpSV's levels are sequential, so its
     * time per solve grows with the matrix (poisson2d:300, 90,000 rows: 2.1 ms an iteration
     * against 0.14 with 5 sweeps, ILU(0)-GMRES 10x faster to the answer with the sweeps), while
     * on matrices of 1,000 to 5,005 rows the sweeps need 1.1 to 4 times SpSV's iterations
     * (sherman1, sherman3, orsirr_1, epb0) and SpSV is as fast or faster to the answer. */
    const int gpu_sweeps = ctx->device == SPK_DEVICE_CUDA && kind != SPK_PRECOND_ILUT &&
                           M->n >= ILU_GPU_SWEEP_ROWS;
    M->trisolve = opt->ilu.trisolve == SPK_TRISOLVE_JACOBI ? SPK_TRISOLVE_JACOBI
                  : opt->ilu.trisolve == SPK_TRISOLVE_AUTO && gpu_sweeps ? SPK_TRISOLVE_JACOBI
                                                                          : SPK_TRISOLVE_EXACT;
    M->sweeps = opt->ilu.sweeps > 0 ? opt->ilu.sweeps : ILU_DEFAULT_SWEEPS;
    M->fp32 = opt->precision == SPK_PRECISION_MIXED;
    if ((st = build(M, A))) {
        ilu_destroy(M);
        return st;
    }
    *state = M;
    return SPK_OK;
}

static spk_status ilu_refresh(void *state, spk_matrix *A)
{
    pc_ilu *M = state;
    const double t0 = spk_now();
    spk_status st = check_options(M->ctx, &M->opt, M->kind, A);
    if (!st)
        st = spk_matrix_host_values(M->ctx, A);
    if (!st)
        st = spk_ilu0_refactor(M->ctx, M->plan, &A->csr, &M->F);
    M->factor_s = spk_now() - t0;
    if (!st)
        st = upload_values(M);
    if (!st)
        st = twins_sync(M);
    M->setup_s = spk_now() - t0;
    return st;
}

/* ILUT's pattern follows the values: a new factorization and new device data. */
static spk_status ilut_refresh(void *state, spk_matrix *A)
{
    pc_ilu *M = state;
    release(M);
    return build(M, A);
}

/* ---- describe ---------------------------------------------------------------------------- */

static double matrix_bytes(const spk_matrix *A)
{
    if (!A || !A->be || A->info.bytes[A->be->format] == SIZE_MAX)
        return 0.0;
    return (double)A->info.bytes[A->be->format];
}

/* Host bytes of a factor (rowptr, columns, values). */
static double csr_bytes(const spk_csr *c)
{
    return c->rowptr ? 8.0 * (double)(c->nrows + 1) + 12.0 * (double)c->nnz : 0.0;
}

static size_t ilu_describe(const void *state, char *buf, size_t len)
{
    const pc_ilu *M = state;
    const int64_t nf = M->F.L.nnz + M->F.U.nnz;
    const int host = M->trisolve == SPK_TRISOLVE_EXACT && M->ctx->device == SPK_DEVICE_CPU;
    double dev = 8.0 * (double)M->n * ((M->w[0] ? 2 : 0) + (M->w[2] ? 1 : 0));
    dev += M->sv ? (double)spk_ilu_sv_bytes(M->sv) : 0.0;
    dev += matrix_bytes(M->Ls) + matrix_bytes(M->Us) + matrix_bytes(M->P) +
           (M->dinv ? 8.0 * (double)M->n : 0.0);
    const double hostb = csr_bytes(&M->F.L) + csr_bytes(&M->F.U) + (host ? dev : 0.0);
    char how[128], piv[64] = "";
    const int l32 = spk_twin_live(M->Ls, &M->tL), u32 = spk_twin_live(M->Us, &M->tU);
    if (M->trisolve == SPK_TRISOLVE_JACOBI)
        snprintf(how, sizeof how, "jacobi, %d sweeps per triangle%s", M->sweeps,
                 l32 && u32 ? ", the factors' products in fp32 values"
                 : l32      ? ", L_s's products in fp32 values (U_s's in fp64)"
                 : u32      ? ", U_s's products in fp32 values (L_s's in fp64)"
                            : "");
    else
        snprintf(how, sizeof how, "exact (%s)", host ? "row loops" : "cuSPARSE SpSV");
    if (M->F.zero_pivots > 0)
        snprintf(piv, sizeof piv, "; %lld zero pivots replaced", (long long)M->F.zero_pivots);
    return (size_t)snprintf(buf, len, "%s: %s; nnz(L) + nnz(U) = %lld + %lld = %lld (fill %.2f "
                            "x nnz(A))%s; trisolve %s; memory beyond A: host %.2f MB, device "
                            "%.2f MB; setup %.3f s (factorization on the host %.3f s)",
                            spk_precond_str(M->kind), kind_title(M->kind),
                            (long long)M->F.L.nnz, (long long)M->F.U.nnz, (long long)nf,
                            (double)nf / (double)(M->nnz_a > 0 ? M->nnz_a : 1), piv, how,
                            hostb / 1e6, host ? 0.0 : dev / 1e6, M->setup_s, M->factor_s);
}

/* ---- the rows ----------------------------------------------------------------------------- */

static spk_status ilu0_setup(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                             void **state)
{
    return ilu_setup(ctx, A, opt, SPK_PRECOND_ILU0, state);
}

static spk_status ic0_setup(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                            void **state)
{
    return ilu_setup(ctx, A, opt, SPK_PRECOND_IC0, state);
}

static spk_status ilut_setup(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                             void **state)
{
    return ilu_setup(ctx, A, opt, SPK_PRECOND_ILUT, state);
}

/* graph_safe: every variant only queues work on the context's stream with the same pointers
 * each call (SpSV's solve included, its stream set at each apply); on the CPU nothing is
 * captured. */
const spk_precond_ops spk_pc_ilu0 = {
    .name = "ilu0",
    .kind = SPK_PRECOND_ILU0,
    .device = SPK_DEVICE_AUTO,
    .summary = "incomplete LU on A's pattern (no fill): far fewer iterations than Jacobi on "
               "most nonsymmetric systems; needs nonzero pivots (--ilu-trisolve)",
    .setup = ilu0_setup,
    .refresh = ilu_refresh,
    .apply = ilu_apply,
    .destroy = ilu_destroy,
    .graph_safe = 1,
    .describe = ilu_describe,
};

const spk_precond_ops spk_pc_ic0 = {
    .name = "ic0",
    .kind = SPK_PRECOND_IC0,
    .device = SPK_DEVICE_AUTO,
    .summary = "incomplete Cholesky L D L^T on A's pattern, for CG on SPD A; needs positive "
               "pivots (--ilu-trisolve)",
    .setup = ic0_setup,
    .refresh = ilu_refresh,
    .apply = ilu_apply,
    .destroy = ilu_destroy,
    .graph_safe = 1,
    .describe = ilu_describe,
};

const spk_precond_ops spk_pc_ilut = {
    .name = "ilut",
    .kind = SPK_PRECOND_ILUT,
    .device = SPK_DEVICE_AUTO,
    .summary = "incomplete LU with threshold dropping and column pivoting: for matrices ILU(0) "
               "refuses or does little for (--ilut-drop, --ilut-fill, --ilu-trisolve)",
    .setup = ilut_setup,
    .refresh = ilut_refresh,
    .apply = ilu_apply,
    .destroy = ilu_destroy,
    .graph_safe = 1,
    .describe = ilu_describe,
};
