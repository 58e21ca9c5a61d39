/* solvers/pc_amg.c -- smoothed-aggregation AMG as a row of the preconditioner table: the
 * hierarchy is built on the host (solvers/amg_setup.c) or, with amg.setup = device, on the
 * GPU (solvers/amg_setup_cuda.cu, which also refreshes it there); every level's A, P and R
 * and the coarsest level's dense inverse become spk matrices, each prepared in the format the
 * automatic choice gives it on the context's device, and the V-cycle runs through the SpMV
 * backend table and the vector-ops table, so one row serves every device and nothing but
 * kernels is queued: the apply is captured into CG's CUDA graph with the iterations.
 *
 * One application is one V(sweeps, sweeps) cycle from a zero guess:
 *     level l < L:  x = S(b, 0); r = b - A x; b' = R r; x' = cycle(l + 1, b'); x += P x';
 *                   x = S(b, x)
 *     level L:      x = A_L^-1 b (a dense SpMV)
 * with S the smoother: damped Jacobi x += omega D^-1 (b - A x), omega = 1.6 / rho(D^-1 A)
 * (spk_amg_options.omega; SPK_AMG_OMEGA in solvers/amg.h says why 1.6, not the textbook 4/3),
 * or Chebyshev of the given degree in D^-1 A on [rho / 30, 1.1 rho] (Saad, Iterative Methods,
 * 2nd ed., alg. 12.1; solvers/cheby.c, shared with the Chebyshev preconditioner). The same
 * smoothing before and after makes M symmetric, as CG needs.
 *
 * With fp32 values (spk_amg_options.fp32) every level matrix also gets its format's fp32
 * twin (spk_spmv_backend.fp32), made from the same host CSR, and the cycle runs on the
 * twins: half the bytes of each value, the products summed in fp64. Rounding each entry of
 * A_l, P and R = P^T to float keeps A_l symmetric and R the transpose of P, so the cycle is
 * still a fixed symmetric operator (AMGCL's fp32 preconditioner inside an fp64 solve). On the
 * GPU a twin is made from its matrix's device layout (setup_from): it shares the indices and
 * adds 4 bytes an entry; on the CPU it is a layout of its own. */
#include "amg.h"
#include "cheby.h"
#include "precond.h"
#include "twin.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A level matrix (A_l of a coarse level, P, R) of fewer rows than this is prepared in CSR,
 * whose kernel shares a long row among threads: the shape rule gives such even rows (some
 * 100-500 entries each) ELL or HYB, one thread a row, and too few rows to fill the GPU.
 * 2^17 rows, against the H200's 270,336 resident threads. Measured there (bench_vcycle):
 * lame3d:48's R_0 (27,744 rows) took 114 us in the automatic format, 35 us in CSR, and
 * poisson3d:150's R_1 (8,694 rows) 85 and 12.5 us; poisson3d:150's R_0 (401,950 rows) 67 us
 * in the automatic format and 81 in CSR. (Below 2^20 entries the rule picks CSR anyway.) */
#define AMG_CSR_ROWS (1 << 17)

typedef struct amg_level_dev {
    spk_matrix *A;                 /* level 0: the solver's A (not owned)                   */
    spk_matrix *P, *R;             /* to the next level; NULL on the coarsest               */
    spk_twin    A32, P32, R32;     /* their fp32 twins (spk_amg_options.fp32)               */
    double     *wdinv;             /* Jacobi: omega D^-1; Chebyshev: D^-1 (device)         */
    double     *x, *b, *r, *d;     /* device vectors (level 0: x and b are the apply's);
                                      with fp32 vectors (v32) they hold floats             */
    double     *t;                 /* the fused cycle's smoothed x, d its ping-pong partner */
    double     *w32;               /* v32: omega D^-1 in float                              */
    int64_t     n;
    double      lmin, lmax;        /* Chebyshev's interval                                  */
} amg_level_dev;

typedef struct pc_amg {
    spk_context       *ctx;
    const spk_vec_ops *ops;
    spk_amg_hier       H;
    amg_level_dev      lev[32];
    spk_matrix        *Cinv;       /* the coarsest level's inverse, dense, as a CSR matrix  */
    spk_twin           Cinv32;     /* its fp32 twin                                         */
    int                fp32;       /* the cycle asked for fp32 values                       */
    int                n32, nmat;  /* matrices that have a twin, of the cycle's matrices    */
    int                fused;      /* the Jacobi cycle's fused steps (fcycle), not vcycle's */
    int                v32_ok;     /* the fused cycle may take fp32 vectors (vectors32)     */
    int                v32;        /* it does now: v32_ok, and every matrix on its fp32 twin
                                      (live_twins: values that fit fp32, so vectors scaled
                                      alike do too)                                         */
    spk_method         method;     /* the method M serves                                   */
    char               v32_why[160];
    double            *xd, *td;    /* spk_twin_step's scratch for the steps it composes     */
    double            *host;       /* n_0 doubles: staging of the diagonals                 */
    double             setup_s;    /* the whole setup: hierarchy, matrices, uploads         */
    double             host_s;     /* the hierarchy's build (on the host or the device)     */
    char               where[320]; /* where it was built, and why there                     */
    double             copy_s;     /* the level matrices' handles (their CSRs copied, taken
                                      over or borrowed, their statistics)                    */
    double             format_s;   /* their layouts on the device (conversions and uploads,
                                      or CSRs over the GPU hierarchy's arrays and values)    */
    int                shared;     /* the levels' layouts are CSRs over the GPU hierarchy's
                                      arrays (device_matrix)                                 */
    const char        *b_source;   /* what the near-null space is, for describe            */
} pc_amg;

/* y = alpha A x + beta y with A's fp32 twin where it has a live one, else A itself. */
static spk_status spmv(pc_amg *M, const spk_matrix *A, const spk_twin *t, double alpha,
                       const double *x, double beta, double *y)
{
    return spk_twin_spmv(M->ctx, A, t, alpha, x, beta, y);
}

/* r = b - A x */
static spk_status residual(pc_amg *M, amg_level_dev *L, const double *b, const double *x,
                           double *r)
{
    spk_status st = M->ops->copy(M->ctx, L->n, b, r);
    return st ? st : spmv(M, L->A, &L->A32, -1.0, x, 1.0, r);
}

static spk_status smooth_jacobi(pc_amg *M, amg_level_dev *L, const double *b, double *x,
                                int zero_x)
{
    spk_status st = SPK_OK;
    for (int s = 0; s < M->H.opt.sweeps && !st; s++) {
        if (s == 0 && zero_x)
            st = M->ops->pmul_axpby(M->ctx, L->n, 1.0, L->wdinv, b, 0.0, x);
        else if (!(st = residual(M, L, b, x, L->r)))
            st = M->ops->pmul_axpby(M->ctx, L->n, 1.0, L->wdinv, L->r, 1.0, x);
    }
    return st;
}

/* The sweeps of the Chebyshev smoother: the recurrence of solvers/cheby.c, which the Chebyshev
 * preconditioner runs too. */
static spk_status smooth_chebyshev(pc_amg *M, amg_level_dev *L, const double *b, double *x,
                                   int zero_x)
{
    const spk_cheby c = {
        .ctx = M->ctx,
        .ops = M->ops,
        .be = spk_twin_live(L->A, &L->A32) ? L->A32.be : L->A->be,
        .state = spk_twin_live(L->A, &L->A32) ? L->A32.s : L->A->state,
        .n = L->n,
        .dinv = L->wdinv,
        .lmin = L->lmin,
        .lmax = L->lmax,
        .degree = M->H.opt.degree,
        .r = L->r,
        .d = L->d,
    };
    spk_status st = SPK_OK;
    for (int s = 0; s < M->H.opt.sweeps && !st; s++)
        st = spk_cheby_sweep(&c, b, x, s == 0 && zero_x);
    return st;
}

static spk_status smooth(pc_amg *M, amg_level_dev *L, const double *b, double *x, int zero_x)
{
    return M->H.opt.smoother == SPK_AMG_CHEBYSHEV ? smooth_chebyshev(M, L, b, x, zero_x)
                                                 : smooth_jacobi(M, L, b, x, zero_x);
}

static spk_status vcycle(pc_amg *M, int l, const double *b, double *x)
{
    amg_level_dev *L = &M->lev[l];
    if (l == M->H.nlevels - 1)
        return spmv(M, M->Cinv, &M->Cinv32, 1.0, b, 0.0, x);
    amg_level_dev *C = &M->lev[l + 1];
    spk_status st;
    if ((st = smooth(M, L, b, x, 1)) || (st = residual(M, L, b, x, L->r)) ||
        (st = spmv(M, L->R, &L->R32, 1.0, L->r, 0.0, C->b)) ||
        (st = vcycle(M, l + 1, C->b, C->x)) || (st = spmv(M, L->P, &L->P32, 1.0, C->x, 1.0, x)))
        return st;
    return smooth(M, L, b, x, 0);
}

/* ---- the fused Jacobi cycle -------------------------------------------------------------- */

/* One step (spk_step) with a level matrix, fused by its row or composed (spk_twin_step). */
static spk_status fstep(pc_amg *M, const spk_matrix *A, const spk_twin *t, spk_step s)
{
    return spk_twin_step(M->ctx, A, t, &s, M->xd, M->td);
}

/* vcycle's V(sweeps, sweeps) Jacobi cycle in one pass a step: a sweep x' = x + w (b - A x)
 * writes another vector than it reads (t and d in turn, the last post-sweep into x), the
 * residual r = b - A x is one product, as are b' = R r and t += P x'. Level l's vectors hold
 * floats where M->v32, but for level 0's b and x, the method's fp64 r and z (b32, x32 say
 * which). Per sweep 5 vector passes of the finest level fewer than vcycle's. */
static spk_status fcycle(pc_amg *M, int l, const void *b, int b32, void *x, int x32)
{
    amg_level_dev *L = &M->lev[l];
    const int v = M->v32;
    if (l == M->H.nlevels - 1)
        return fstep(M, M->Cinv, &M->Cinv32,
                     (spk_step){.x = b, .y = x, .alpha = 1.0, .x32 = b32, .y32 = x32});
    amg_level_dev *C = &M->lev[l + 1];
    const void *w = v ? (const void *)L->w32 : (const void *)L->wdinv;
    void *cur = L->t, *spare = L->d, *swap;
    const int sw = M->H.opt.sweeps;
    /* the first sweep from x = 0: t = w b */
    const spk_step first = {.w = w, .b = b, .y = cur, .alpha = 1.0, .x32 = v, .b32 = b32,
                            .y32 = v};
    spk_status st = M->ops->step(M->ctx, L->n, NULL, &first);
    for (int k = 1; k < sw && !st; k++) {
        st = fstep(M, L->A, &L->A32,
                   (spk_step){.x = cur, .u = cur, .w = w, .b = b, .y = spare, .alpha = -1.0,
                              .beta = 1.0, .x32 = v, .b32 = b32, .y32 = v});
        swap = cur, cur = spare, spare = swap;
    }
    if (!st)
        st = fstep(M, L->A, &L->A32,
                   (spk_step){.x = cur, .b = b, .y = L->r, .alpha = -1.0, .x32 = v, .b32 = b32,
                              .y32 = v});
    if (!st)
        st = fstep(M, L->R, &L->R32,
                   (spk_step){.x = L->r, .y = C->b, .alpha = 1.0, .x32 = v, .y32 = v});
    if (!st)
        st = fcycle(M, l + 1, C->b, v, C->x, v);
    if (!st)
        st = fstep(M, L->P, &L->P32,
                   (spk_step){.x = C->x, .u = cur, .y = cur, .alpha = 1.0, .beta = 1.0,
                              .x32 = v, .y32 = v});
    for (int k = 0; k < sw && !st; k++) {
        const int last = k == sw - 1;
        st = fstep(M, L->A, &L->A32,
                   (spk_step){.x = cur, .u = cur, .w = w, .b = b, .y = last ? x : spare,
                              .alpha = -1.0, .beta = 1.0, .x32 = v, .b32 = b32,
                              .y32 = last ? x32 : v});
        swap = cur, cur = spare, spare = swap;
    }
    return st;
}

static spk_status amg_apply(void *state, const double *r, double *z)
{
    pc_amg *M = state;
    return M->fused ? fcycle(M, 0, r, 0, z, 0) : vcycle(M, 0, r, z);
}

/* The device's diagonals of every level from the hierarchy (setup and refresh). */
static spk_status upload_diagonals(pc_amg *M)
{
    spk_status st = SPK_OK;
    for (int l = 0; l + 1 < M->H.nlevels && !st; l++) {
        const spk_amg_level *h = &M->H.lev[l];
        amg_level_dev *L = &M->lev[l];
        const double w = M->H.opt.smoother == SPK_AMG_CHEBYSHEV ? 1.0 : M->H.opt.omega / h->rho;
        L->lmax = 1.1 * h->rho;
        L->lmin = h->rho / 30.0;
        if (h->d_dinv && M->ops->device == SPK_DEVICE_CUDA) {   /* a GPU build's, in place */
            st = M->ops->axpby(M->ctx, h->n, w, h->d_dinv, 0.0, L->wdinv);
        } else {
            for (int64_t i = 0; i < h->n; i++)
                M->host[i] = w * h->dinv[i];
            st = M->ops->upload(M->ctx, h->n, M->host, L->wdinv);
        }
        if (!st && L->w32) {
            const spk_step narrow = {.b = L->wdinv, .y = L->w32, .alpha = 1.0, .y32 = 1};
            st = M->ops->step(M->ctx, h->n, NULL, &narrow);
        }
    }
    return st;
}

/* ---- the fp32 twins --------------------------------------------------------------------- */

static void live_twins(pc_amg *M);

/* The twins of every matrix of the cycle from their current values (setup and refresh:
 * spk_twin_sync); n32 and nmat count them for describe. */
static spk_status twins(pc_amg *M, spk_matrix *A)
{
    (void)A;
    const spk_amg_hier *H = &M->H;
    spk_status st = SPK_OK;
    M->n32 = M->nmat = 0;
    for (int l = 0; l + 1 < H->nlevels && !st; l++) {   /* the coarsest A is never applied */
        amg_level_dev *L = &M->lev[l];
        spk_matrix *D[3] = {L->A, L->P, L->R};
        spk_twin *t[3] = {&L->A32, &L->P32, &L->R32};
        for (int k = 0; k < 3 && !st; k++) {
            /* from the layout on the device where the fp32 row rounds (and checks) there;
             * else the handle's own host values: the hierarchy's after a host build or
             * refresh, downloaded once after a refresh on the device */
            if (spk_twin_on_device(D[k]))
                st = spk_twin_sync(M->ctx, D[k], NULL, t[k]);
            else if (!(st = spk_matrix_host_values(M->ctx, D[k])))
                st = spk_twin_sync(M->ctx, D[k], D[k]->csr.val, t[k]);
            M->nmat++;
            M->n32 += t[k]->s != NULL;
        }
    }
    if (!st)
        st = spk_twin_sync(M->ctx, M->Cinv, H->Cinv.val, &M->Cinv32);
    M->nmat++;
    M->n32 += M->Cinv32.s != NULL;
    live_twins(M);
    return st;
}

/* The fused cycle may take fp32 vectors: with fp32 values, for a method that tolerates the
 * M^-1 they make, where every matrix of the cycle fuses its steps (spk_twin_fuses: ELL, CSR,
 * HYB and BSR on the GPU, CSR on the CPU), or as SPK_AMG_VECTORS says; why into why. */
static int vectors32(pc_amg *M, char *why, size_t len)
{
    const int knob = M->ctx->tune.amg_vectors;
    why[0] = '\0';
    if (!M->fused || !M->fp32)
        return 0;
    /* fp32 vectors make M^-1 vary by their rounding from one apply to the next: CG, BiCGStab
     * and FGMRES build x from the M^-1 products they made, GMRES applies M^-1 again to a
     * combination of its basis at the end, and MINRES needs M fixed and symmetric */
    if (M->method != SPK_METHOD_CG && M->method != SPK_METHOD_BICGSTAB &&
        M->method != SPK_METHOD_FGMRES) {
        snprintf(why, len, "fp64: %s needs a fixed M (fp32 vectors vary it by their rounding)",
                 spk_method_str(M->method));
        return 0;
    }
    if (knob) {
        snprintf(why, len, "%s (SPK_AMG_VECTORS)", knob == 2 ? "fp32" : "fp64");
        return knob == 2;
    }
    for (int l = 0; l + 1 < M->H.nlevels; l++) {
        const amg_level_dev *L = &M->lev[l];
        const spk_matrix *D[3] = {L->A, L->P, L->R};
        const spk_twin *t[3] = {&L->A32, &L->P32, &L->R32};
        for (int k = 0; k < 3; k++)
            if (!spk_twin_fuses(D[k], t[k])) {
                snprintf(why, len, "fp64: level %d's %c (%s) does not fuse its steps", l,
                         "APR"[k], D[k]->be->name);
                return 0;
            }
    }
    if (!spk_twin_fuses(M->Cinv, &M->Cinv32)) {
        snprintf(why, len, "fp64: the coarsest inverse (%s) does not fuse its steps",
                 M->Cinv->be->name);
        return 0;
    }
    snprintf(why, len, "fp32: every matrix of the cycle fuses its steps");
    return 1;
}

/* M->v32 from v32_ok and the twins as they are now (setup and every refresh): a matrix whose
 * values left fp32's range runs in fp64, and so do the vectors, whose magnitudes follow the
 * values' (A scaled by 1e-39: D^-1 b ~ 1, b - A x ~ 1e-39, below FLT_MIN). */
static void live_twins(pc_amg *M)
{
    int live = M->v32_ok;
    for (int l = 0; l + 1 < M->H.nlevels && live; l++)
        live = spk_twin_live(M->lev[l].A, &M->lev[l].A32) &&
               spk_twin_live(M->lev[l].P, &M->lev[l].P32) &&
               spk_twin_live(M->lev[l].R, &M->lev[l].R32);
    M->v32 = live && spk_twin_live(M->Cinv, &M->Cinv32);
}

/* The cycle's vectors (n doubles each, which hold fp32 ones too) and the scratch of the steps
 * spk_twin_step composes. */
static spk_status vectors(pc_amg *M, int chebyshev)
{
    const spk_vec_ops *o = M->ops;
    spk_context *ctx = M->ctx;
    spk_status st = SPK_OK;
    int64_t nmax = 1;
    for (int l = 0; l < M->H.nlevels && !st; l++) {
        amg_level_dev *L = &M->lev[l];
        const int64_t nv = L->n;          /* n doubles: either type, as live_twins decides */
        nmax = L->n > nmax ? L->n : nmax;
        if (l > 0 && !(st = o->alloc(ctx, nv, &L->x)))
            st = o->alloc(ctx, nv, &L->b);
        if (st || l == M->H.nlevels - 1)
            break;
        if (!(st = o->alloc(ctx, nv, &L->r)) && (chebyshev || M->fused))
            st = o->alloc(ctx, nv, &L->d);
        if (!st && M->fused)
            st = o->alloc(ctx, nv, &L->t);
        if (!st && M->v32_ok)
            st = o->alloc(ctx, (L->n + 1) / 2, &L->w32);
    }
    if (!st && M->fused)
        st = o->alloc(ctx, nmax, &M->td);
    if (!st && M->v32_ok)
        st = o->alloc(ctx, nmax, &M->xd);
    return st;
}

static void amg_destroy(void *state)
{
    pc_amg *M = state;
    if (!M)
        return;
    for (int l = 0; l < (int)(sizeof M->lev / sizeof M->lev[0]); l++) {
        amg_level_dev *L = &M->lev[l];
        spk_twin_free(&L->A32);
        spk_twin_free(&L->P32);
        spk_twin_free(&L->R32);
        if (l > 0) {
            spk_matrix_destroy(L->A);
            M->ops->free(M->ctx, L->x);
            M->ops->free(M->ctx, L->b);
        }
        spk_matrix_destroy(L->P);
        spk_matrix_destroy(L->R);
        M->ops->free(M->ctx, L->wdinv);
        M->ops->free(M->ctx, L->r);
        M->ops->free(M->ctx, L->d);
        M->ops->free(M->ctx, L->t);
        M->ops->free(M->ctx, L->w32);
    }
    M->ops->free(M->ctx, M->xd);
    M->ops->free(M->ctx, M->td);
    spk_twin_free(&M->Cinv32);
    spk_matrix_destroy(M->Cinv);
    spk_amg_free(&M->H);
    spk_free(M->host);
    spk_free(M);
}

/* A shared level's values, which the build left on the device (its host CSR holds the
 * pattern) and its layout reads in place: the handle's by borrowing (spk_matrix_dev_borrow:
 * nothing copied or allocated on the device), so that its host copy is fetched only when
 * something reads it (spk_matrix_host_values); else through a device update, or where the
 * device cannot take that (its memory short), downloaded now. */
static spk_status device_values(pc_amg *M, spk_matrix *D, int l, char which)
{
    const spk_amg_level *h = &M->H.lev[which == 'A' ? l - 1 : l];
    const double *d = which == 'P' ? h->dP : which == 'R' ? h->dR : h->dA;
    if (spk_matrix_dev_borrow(M->ctx, D, (double *)d) == SPK_OK)
        return SPK_OK;
    if (spk_matrix_update_values(M->ctx, D, D->csr.nnz, d, 1) == SPK_OK && D->be)
        return SPK_OK;
    spk_status st = spk_cuda_download_bytes(M->ctx, D->csr.val, d,
                                            (size_t)D->csr.nnz * sizeof *D->csr.val);
    if (!st) {
        D->host_stale = 0;
        D->info_stale = 1;
    }
    if (!st && !D->be)             /* the failed update dropped the layout: the host's now */
        st = spk_matrix_prepare(M->ctx, D, SPK_FMT_CSR);
    return st;
}

/* A level matrix's handle from the hierarchy's CSR (level l's A, P or R: which): on a CPU
 * context a handle over c's own arrays (the CPU's CSR layout is the canonical CSR, and a
 * refresh's new values are already there: nothing copied at the setup or the refresh);
 * on the GPU a copy, prepared in its own layout; or, for a GPU-built hierarchy (M->shared),
 * c's arrays taken over and the layout a CSR over the device hierarchy's own arrays: no
 * conversion, no upload, and a refresh's new values are the layout's (its refreshes read
 * only c's sizes). The coarsest A is copied: its inverse's refresh reads its host values. */
static spk_status device_matrix(pc_amg *M, spk_csr *c, int l, char which, spk_matrix **out)
{
    const double t0 = spk_now();
    const int64_t nrows = c->nrows;
    const int take = M->shared && which != 'I' && !(which == 'A' && l == M->H.nlevels - 1);
    spk_status st = take ? spk_matrix_from_canonical_owned(M->ctx, c, 0, out)
                    : M->ctx->device == SPK_DEVICE_CPU
                        ? spk_matrix_from_canonical_borrowed(M->ctx, c, out)
                        : spk_matrix_from_canonical(M->ctx, c, out);
    if (!st && take && !(*out)->csr.colind) {     /* its columns on the device only */
        const spk_amg_level *h = &M->H.lev[which == 'A' ? l - 1 : l];
        (*out)->dev_colind = which == 'P' ? h->dPc : which == 'R' ? h->dRc : h->dAc;
        (*out)->pattern_stale = 1;
    }
    const double t1 = spk_now();
    M->copy_s += t1 - t0;
    void *state = NULL;
    if (!st && !take)
        st = spk_matrix_prepare(M->ctx, *out, nrows < AMG_CSR_ROWS ? SPK_FMT_CSR : SPK_FMT_AUTO);
    else if (!st && !(st = spk_amg_device_layout(M->ctx, &M->H, l, which, &(*out)->csr, &state)) &&
             !(st = spk_matrix_adopt_layout(M->ctx, *out,
                                            spk_backend_find(SPK_FMT_CSR, SPK_DEVICE_CUDA), state,
                                            "csr: the GPU-built hierarchy's own arrays")))
        st = device_values(M, *out, l, which);
    M->format_s += spk_now() - t1;
    return st;
}

/* The hierarchy, on the GPU when the options ask for it there and it takes the matrix (else
 * on the host with the same MIS(2) aggregation, M->where says why). */
static spk_status build(pc_amg *M, spk_matrix *A, const spk_options *opt)
{
    spk_context *ctx = M->ctx;
    const spk_matrix_info *info = spk_matrix_info_of(A);
    if (opt->amg.setup != SPK_AMG_SETUP_DEVICE) {
        snprintf(M->where, sizeof M->where, "on the host");
        return spk_amg_build(ctx, &A->csr, info->symmetric, &opt->amg, &M->H);
    }
    if (opt->amg.aggregation == SPK_AMG_AGG_STANDARD) {
        snprintf(M->where, sizeof M->where, "on the host (standard aggregation asked for: the "
                 "GPU's build aggregates by MIS(2))");
    } else if (ctx->device == SPK_DEVICE_CUDA) {
        spk_status st =
            spk_amg_build_device(ctx, &A->csr, A, info->symmetric, &opt->amg, 0, &M->H);
        if (st != SPK_ERR_UNSUPPORTED) {
            snprintf(M->where, sizeof M->where, "on the GPU");
            return st;
        }
        snprintf(M->where, sizeof M->where, "on the host (%.250s)", ctx->msg);
    } else {
        snprintf(M->where, sizeof M->where, "on the host (a CPU context)");
    }
    return spk_amg_build(ctx, &A->csr, info->symmetric, &opt->amg, &M->H);
}

static spk_status amg_setup_paged(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                                  void **state)
{
    *state = NULL;
    const double t0 = spk_now();
    pc_amg *M = spk_calloc(ctx, 1, sizeof *M);
    if (!M)
        return spk_fail(ctx, SPK_ERR_NOMEM, "AMG preconditioner: out of memory");
    M->ctx = ctx;
    M->ops = spk_vec_ops_for(ctx->device);
    const int64_t n = A->csr.nrows;
    M->b_source = opt->amg.nullspace ? "the caller's vectors"
                  : opt->amg.coords  ? "rigid-body modes from the coordinates"
                  : opt->amg.block_size > 1 ? "the block's translations" : "ones";
    spk_status st = spk_matrix_host_values(ctx, A);
    if (!st)
        st = build(M, A, opt);
    M->host_s = spk_now() - t0;
    if (!st && !(M->host = spk_malloc(ctx, (size_t)(n > 0 ? n : 1), sizeof *M->host)))
        st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG: staging of %lld doubles: out of memory",
                      (long long)n);
    const spk_vec_ops *o = M->ops;
    M->shared = !st && M->H.dev != NULL && ctx->device == SPK_DEVICE_CUDA;
    for (int l = 0; l < M->H.nlevels && !st; l++) {
        spk_amg_level *h = &M->H.lev[l];
        amg_level_dev *L = &M->lev[l];
        L->n = h->n;
        if (l == 0)
            L->A = A;
        else
            st = device_matrix(M, &h->A, l, 'A', &L->A);
        if (st || l == M->H.nlevels - 1)
            break;
        if (!(st = device_matrix(M, &h->P, l, 'P', &L->P)) &&
            !(st = device_matrix(M, &h->R, l, 'R', &L->R)))
            st = o->alloc(ctx, h->n, &L->wdinv);
    }
    if (!st)
        st = device_matrix(M, &M->H.Cinv, 0, 'I', &M->Cinv);
    /* fp32 values: resolved here once, and kept in the hierarchy's options for a rebuild */
    M->fp32 = opt->amg.fp32 > 0 || (opt->amg.fp32 == 0 && opt->precision == SPK_PRECISION_MIXED);
    M->H.opt.fp32 = M->fp32 ? 1 : -1;
    if (!st && M->fp32)
        st = twins(M, A);
    /* fused steps on a GPU; on the CPU the vector table's, whose loops ran a V-cycle of
     * poisson3d:64 in 4.3 ms against the fused steps' 6.3 (bench_vcycle, 2-vCPU VM) */
    const int steps = ctx->tune.amg_steps;
    M->fused = opt->amg.smoother != SPK_AMG_CHEBYSHEV &&
               (steps == 1 || (steps == 0 && ctx->device == SPK_DEVICE_CUDA));
    M->method = opt->method;
    M->v32_ok = !st && vectors32(M, M->v32_why, sizeof M->v32_why);
    live_twins(M);
    if (!st)
        st = vectors(M, opt->amg.smoother == SPK_AMG_CHEBYSHEV);
    if (!st)
        st = upload_diagonals(M);
    if (!st)
        st = o->sync(ctx);
    if (st) {
        amg_destroy(M);
        return st;
    }
    M->setup_s = spk_now() - t0;
    *state = M;
    return SPK_OK;
}

/* The setup with the host's huge-page advice (SPK_HUGEPAGES, src/context.c) off for its
 * arrays: the build allocates and frees the products, transposes and level copies once each,
 * and where THP's defrag mode is "madvise" every advised fault may stall on compaction. On a
 * 2-vCPU VM (`solve -A poisson3d:100 --precond amg --explain`, three runs each) the setup took
 * 2.37-2.72 s with the advice and 1.30-1.44 s without (the hierarchy 1.71-2.08 / 1.13-1.28 s,
 * the level matrices' copies 0.59-0.60 / 0.14-0.15 s). The matrix A, made before, and the
 * Krylov method's vectors keep the context's setting. */
static spk_status amg_setup(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                            void **state)
{
    const int huge = ctx->tune.hugepages;
    ctx->tune.hugepages = 0;
    spk_status st = amg_setup_paged(ctx, A, opt, state);
    ctx->tune.hugepages = huge;
    return st;
}

/* A level matrix's new values; a layout a failed device refill dropped is made again. */
static spk_status update(pc_amg *M, spk_matrix *D, const spk_csr *c)
{
    spk_status st = spk_matrix_update_values(M->ctx, D, c->nnz, c->val, 0);
    if (!st && !D->be)
        st = spk_matrix_prepare(M->ctx, D, c->nrows < AMG_CSR_ROWS ? SPK_FMT_CSR : SPK_FMT_AUTO);
    return st;
}

/* The rebuild option's refresh: a whole setup on the new values into a second state, which
 * then takes the place of the first (the state's address, the solver's handle, stays). The
 * near-null space is the one of the first setup (the coordinates' rigid-body modes are its
 * level-0 B). On failure the old hierarchy is kept. */
static spk_status amg_rebuild(pc_amg *M, spk_matrix *A)
{
    spk_options o;
    spk_options_default(&o);
    o.amg = M->H.opt;
    o.amg.rebuild = 1;
    o.amg.nullspace = M->H.lev[0].B;
    o.amg.nullspace_cols = M->H.lev[0].k;
    o.amg.coords = NULL;
    o.amg.coord_dim = 0;
    void *fresh = NULL;
    spk_status st = amg_setup(M->ctx, A, &o, &fresh);
    if (st)
        return st;
    pc_amg *N = fresh, old = *M;
    N->b_source = M->b_source;
    *M = *N;
    *N = old;
    M->H.opt.nullspace = M->H.lev[0].B;      /* the caller's copy went with the old state */
    amg_destroy(N);
    return SPK_OK;
}

/* The refresh of a hierarchy built on the GPU: its values made there (spk_amg_refresh_device),
 * the level matrices refilled from the device's values, the coarsest inverse on the host. */
static spk_status refresh_on_device(pc_amg *M, spk_matrix *A)
{
    spk_amg_hier *H = &M->H;
    spk_status st = spk_amg_refresh_device(M->ctx, &A->csr, A, H);
    for (int l = 0; l + 1 < H->nlevels && !st; l++) {
        const spk_amg_level *h = &H->lev[l];
        if (!(st = spk_matrix_update_values(M->ctx, M->lev[l].P, h->P.nnz, h->dP, 1)) &&
            !(st = spk_matrix_update_values(M->ctx, M->lev[l].R, h->R.nnz, h->dR, 1)))
            st = spk_matrix_update_values(M->ctx, M->lev[l + 1].A, H->lev[l + 1].A.nnz, h->dA, 1);
    }
    if (!st && H->nlevels == 1)          /* one level: its inverse is A's own, on the host */
        st = spk_matrix_host_values(M->ctx, A);
    if (!st)
        st = spk_amg_coarse_refresh(M->ctx, H, &A->csr);
    if (!st)
        st = update(M, M->Cinv, &H->Cinv);
    return st;
}

static spk_status amg_refresh(void *state, spk_matrix *A)
{
    pc_amg *M = state;
    if (M->H.opt.rebuild)
        return amg_rebuild(M, A);
    const double t0 = spk_now();
    spk_status st;
    if (M->H.dev) {     /* A's values from its layout on the device, or the host's made current */
        if (!(st = refresh_on_device(M, A)) && M->fp32)
            st = twins(M, A);
        if (!st)
            st = upload_diagonals(M);
        M->setup_s = spk_now() - t0;
        return st;
    }
    st = spk_matrix_host_values(M->ctx, A);
    if (!st)
        st = spk_amg_rebuild_values(M->ctx, &A->csr, &M->H);
    for (int l = 0; l + 1 < M->H.nlevels && !st; l++) {
        const spk_amg_level *h = &M->H.lev[l];
        if (!(st = update(M, M->lev[l].P, &h->P)) && !(st = update(M, M->lev[l].R, &h->R)))
            st = update(M, M->lev[l + 1].A, &M->H.lev[l + 1].A);
    }
    if (!st)
        st = update(M, M->Cinv, &M->H.Cinv);
    if (!st && M->fp32)
        st = twins(M, A);
    if (!st)
        st = upload_diagonals(M);
    M->setup_s = spk_now() - t0;
    return st;
}

/* Bytes of a level matrix in the format it is prepared in (spk_matrix_info's estimate). */
static double matrix_bytes(const spk_matrix *A)
{
    if (!A || !A->be || A->info.bytes[A->be->format] == SIZE_MAX)
        return 0.0;
    return (double)A->info.bytes[A->be->format];
}

/* A level matrix's own device bytes: its layout's, or where the layout is a CSR over the
 * kept hierarchy's arrays (shared) its 64-bit row offsets, and the device update's two value
 * arrays (canonical and staging) where it has its own (not borrowed, device_values) */
static double level_bytes(const spk_matrix *A, int shared)
{
    if (A && shared)
        return 8.0 * (double)(A->csr.nrows + 1) +
               (A->dev && !A->dev_borrowed ? 16.0 * (double)A->csr.nnz : 0.0);
    return matrix_bytes(A);
}

/* snprintf at buf + used, as far as len allows; returns what the text needs */
static size_t put(char *buf, size_t len, size_t used, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static size_t put(char *buf, size_t len, size_t used, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int w = used < len ? vsnprintf(buf + used, len - used, fmt, ap)
                             : vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    return w > 0 ? (size_t)w : 0;
}

static size_t amg_describe(const void *state, char *buf, size_t len)
{
    const pc_amg *M = state;
    const spk_amg_hier *H = &M->H;
    const spk_amg_options *o = &H->opt;
    double nnz = 0, rows = 0;
    for (int l = 0; l < H->nlevels; l++) {
        nnz += (double)M->lev[l].A->csr.nnz;
        rows += (double)M->lev[l].A->csr.nrows;
    }
    size_t used = 0;
#define PUT(...) used += put(buf, len, used, __VA_ARGS__)
    PUT("amg: smoothed aggregation, %d level%s, operator complexity %.3f, grid complexity "
        "%.3f\n", H->nlevels, H->nlevels == 1 ? "" : "s",
        nnz / (double)(M->lev[0].A->csr.nnz > 0 ? M->lev[0].A->csr.nnz : 1),
        rows / (double)(M->lev[0].n > 0 ? M->lev[0].n : 1));
    if (o->smoother == SPK_AMG_CHEBYSHEV)
        PUT("  smoother: chebyshev of degree %d in D^-1 A on [rho/30, 1.1 rho], %d sweep%s before "
            "and after\n", o->degree, o->sweeps, o->sweeps == 1 ? "" : "s");
    else
        PUT("  smoother: jacobi, omega = %g/rho(D^-1 A), %d sweep%s before and after\n",
            o->omega, o->sweeps, o->sweeps == 1 ? "" : "s");
    PUT("  strength: symmetric, theta %g; near-null space: %d vector%s (%s), %d unknown%s a "
        "node\n", o->theta, H->lev[0].k, H->lev[0].k == 1 ? "" : "s", M->b_source,
        o->block_size, o->block_size == 1 ? "" : "s");
    if (H->mis2) {
        PUT("  aggregation: MIS(2), rounds by level:");
        for (int l = 0; l + 1 < H->nlevels; l++)
            PUT(" %d", H->mis_rounds[l]);
        PUT("\n");
    } else {
        PUT("  aggregation: standard (greedy, three passes)\n");
    }
    PUT("  built %s%s", M->where, H->device ? "" : "\n");
    if (H->device)
        PUT(", the products by cuSPARSE SpGEMM (working memory at most %.1f MB, bound "
            "%.1f MB, %d product%s in chunks); the levels' copies between host and device "
            "%.3f s (A %s %.3f s, the levels' CSRs down %.3f s)\n", H->spgemm_bytes / 1e6,
            H->spgemm_bound / 1e6, H->spgemm_chunked, H->spgemm_chunked == 1 ? "" : "s",
            H->xfer_s, H->a_from_layout ? "from its device layout" : "up", H->xfer_up_s,
            H->xfer_s - H->xfer_up_s);
    if (H->device) {
        static const char *const names[SPK_AMG_DEV_STEPS] = {
            "start", "D^-1 and rho", "aggregates", "T", "S", "P = S T", "R = P^T", "A P",
            "R (A P)", "downloads", "coarsest"};
        PUT("  the GPU build's steps (s, all levels):");
        for (int i = 0; i < SPK_AMG_DEV_STEPS; i++)
            PUT("%s %s %.4f", i ? "," : "", names[i], H->dev_step_s[i]);
        PUT("\n");
    }
    PUT("  level       rows     nonzeros  per row  format  rho(D^-1 A)  setup s  device MB\n");
    double total = 0.0;
    for (int l = 0; l < H->nlevels; l++) {
        const amg_level_dev *L = &M->lev[l];
        const spk_matrix *A = L->A;
        /* what the level holds on the device: its A (level 0's is the solver's), P, R and
         * vectors; the coarsest level's dense inverse is counted on the line below */
        const int own = M->shared && l + 1 < H->nlevels;   /* layouts on the kept arrays */
        const double entry = 8.0;   /* a cycle vector's entry, allocated for either type */
        double bytes = l > 0 ? level_bytes(A, own) + 2.0 * entry * (double)L->n : 0.0;
        bytes += level_bytes(L->P, own) + level_bytes(L->R, own);
        bytes += (double)L->n * (8.0 * (L->wdinv != NULL) + 4.0 * (L->w32 != NULL) +
                                 entry * ((L->r != NULL) + (L->d != NULL) + (L->t != NULL)));
        total += bytes;
        PUT("  %5d %10lld %12lld %8.1f  %-6s  %11.4g  %7.3f  %9.1f\n", l, (long long)A->csr.nrows,
            (long long)A->csr.nnz,
            (double)A->csr.nnz / (double)(A->csr.nrows > 0 ? A->csr.nrows : 1),
            A->be ? spk_format_str(A->be->format) : "-", H->lev[l].rho, H->setup_s[l], bytes / 1e6);
    }
    total += matrix_bytes(M->Cinv);
    total += 8.0 * (double)M->lev[0].n * ((M->td != NULL) + (M->xd != NULL));
    PUT("  P, R formats by level:");
    for (int l = 0; l + 1 < H->nlevels; l++)
        PUT(" %d: %s, %s%s", l, M->lev[l].P->be ? spk_format_str(M->lev[l].P->be->format) : "-",
            M->lev[l].R->be ? spk_format_str(M->lev[l].R->be->format) : "-",
            l + 2 < H->nlevels ? ";" : "");
    PUT("%s\n", H->nlevels == 1 ? " none" : "");
    PUT("  coarsest: dense inverse (LU, partial pivoting) of order %lld, %s, %.1f MB\n",
        (long long)H->nc, M->Cinv->be ? spk_format_str(M->Cinv->be->format) : "-",
        matrix_bytes(M->Cinv) / 1e6);
    int live = 0;                        /* what the cycle runs in fp32 now */
    for (int l = 0; l + 1 < H->nlevels; l++)
        live += spk_twin_live(M->lev[l].A, &M->lev[l].A32) +
                spk_twin_live(M->lev[l].P, &M->lev[l].P32) +
                spk_twin_live(M->lev[l].R, &M->lev[l].R32);
    live += spk_twin_live(M->Cinv, &M->Cinv32);
    if (M->fp32)
        PUT("  values: fp32 in the cycle for %d of its %d matrices (products in fp64)%s\n",
            live, M->nmat, live < M->nmat ? "; the others keep fp64 (no fp32 kernel for their "
            "format here, values outside fp32's range, or the solver's A prepared again "
            "since: level 0 until the next refresh)" : "");
    else
        PUT("  values: fp64\n");
    if (M->fused) {
        int fused = 0;                   /* matrices whose row fuses the cycle's steps */
        for (int l = 0; l + 1 < H->nlevels; l++)
            fused += spk_twin_fuses(M->lev[l].A, &M->lev[l].A32) +
                     spk_twin_fuses(M->lev[l].P, &M->lev[l].P32) +
                     spk_twin_fuses(M->lev[l].R, &M->lev[l].R32);
        fused += spk_twin_fuses(M->Cinv, &M->Cinv32);
        PUT("  cycle: fused steps (a Jacobi sweep, the residual, R r and x + P x' one pass "
            "each), in one kernel for %d of its %d matrices; vectors %s\n", fused,
            3 * (H->nlevels - 1) + 1,
            M->v32_ok && !M->v32 ? "fp64 while a matrix's values leave fp32's range"
            : M->v32_why[0]      ? M->v32_why
                                 : "fp64 (fp64 values)");
    } else {
        PUT("  cycle: %s\n", o->smoother == SPK_AMG_CHEBYSHEV
                                ? "the vector table's steps (Chebyshev's recurrence)"
                              : M->ctx->tune.amg_steps == 2
                                ? "the vector table's steps (SPK_AMG_STEPS=plain)"
                                : "the vector table's steps (on the CPU: faster there than "
                                  "fused steps)");
    }
    if (H->dev)
        PUT("  kept on the device for refreshes (every level's A, S, T, P, A P, R%s): %.1f MB\n",
            M->shared ? "; the cycle's A, P and R are these" : "", H->dev_bytes / 1e6);
    PUT("  device memory beyond the solver's own A: %.1f MB%s\n", total / 1e6,
        M->n32 > 0 ? (M->ctx->device == SPK_DEVICE_CPU ? " (and the fp32 twins: a copy of each "
        "layout with 4-byte values)" : " (and the fp32 values: 4 bytes an entry, the indices "
        "shared)") : "");
    PUT("  setup %.3f s (the hierarchy %.3f s, %s; the level matrices' handles %.3f s, their "
        "layouts %.3f s%s)", M->setup_s, M->host_s, H->device ? "on the GPU" : "on the host",
        M->copy_s, M->format_s, M->shared ? ": CSR over the hierarchy's device arrays"
        : M->ctx->device == SPK_DEVICE_CPU ? ": the hierarchy's own CSRs, not copied" : "");
#undef PUT
    return used;
}

/* Mean seconds of reps calls of one part (the stream drained before and after). */
#define TIME_PART(M, reps, out, call)                                                         \
    do {                                                                                      \
        spk_status st_ = (M)->ops->sync((M)->ctx);                                            \
        const double t0_ = spk_now();                                                         \
        for (int k_ = 0; k_ < (reps) && !st_; k_++)                                           \
            st_ = (call);                                                                     \
        if (!st_)                                                                             \
            st_ = (M)->ops->sync((M)->ctx);                                                   \
        if (st_)                                                                              \
            return st_;                                                                       \
        (out) = (spk_now() - t0_) / (double)(reps);                                           \
    } while (0)

/* spk_amg_time_parts of the fused cycle: a level's A step timed as its residual (a sweep
 * also reads x and w), 2 sweeps' worth a cycle, and the first sweep's vector step. */
static spk_status time_fused(pc_amg *M, const double *r, double *z, int reps, spk_amg_timing *t)
{
    const int v = M->v32, sw = M->H.opt.sweeps;
    for (int l = 0; l + 1 < M->H.nlevels; l++) {
        amg_level_dev *L = &M->lev[l], *C = &M->lev[l + 1];
        const int b32 = l == 0 ? 0 : v;
        const void *b = l == 0 ? (const void *)r : (const void *)L->b;
        const spk_step res = {.x = L->t, .b = b, .y = L->r, .alpha = -1.0, .x32 = v,
                              .b32 = b32, .y32 = v},
                       restrict_ = {.x = L->r, .y = C->b, .alpha = 1.0, .x32 = v, .y32 = v},
                       prolong = {.x = C->x, .u = L->t, .y = L->t, .alpha = 1.0, .beta = 1.0,
                                  .x32 = v, .y32 = v},
                       first = {.w = v ? (const void *)L->w32 : (const void *)L->wdinv, .b = b,
                                .y = L->t, .alpha = 1.0, .x32 = v, .b32 = b32, .y32 = v};
        TIME_PART(M, reps, t->spmv_a[l], fstep(M, L->A, &L->A32, res));
        TIME_PART(M, reps, t->spmv_r[l], fstep(M, L->R, &L->R32, restrict_));
        TIME_PART(M, reps, t->spmv_p[l], fstep(M, L->P, &L->P32, prolong));
        TIME_PART(M, reps, t->vec[l], M->ops->step(M->ctx, L->n, NULL, &first));
        t->count_a[l] = 2 * sw;
    }
    amg_level_dev *Lc = &M->lev[M->H.nlevels - 1];
    const int one = M->H.nlevels == 1;
    const spk_step coarse = {.x = one ? (const void *)r : (const void *)Lc->b,
                             .y = one ? (void *)z : (void *)Lc->x, .alpha = 1.0,
                             .x32 = one ? 0 : v, .y32 = one ? 0 : v};
    TIME_PART(M, reps, t->coarse, fstep(M, M->Cinv, &M->Cinv32, coarse));
    return SPK_OK;
}

spk_status spk_amg_time_parts(void *state, const double *r, double *z, int reps,
                              spk_amg_timing *t)
{
    pc_amg *M = state;
    memset(t, 0, sizeof *t);
    t->nlevels = M->H.nlevels;
    spk_status st = amg_apply(M, r, z);             /* warm: nothing first-use in the timing */
    if (st)
        return st;
    TIME_PART(M, reps, t->vcycle, amg_apply(M, r, z));
    for (int l = 0; l + 1 < M->H.nlevels; l++) {
        const amg_level_dev *L = &M->lev[l];
        t->nnz_a[l] = L->A->csr.nnz;
        t->nnz_r[l] = L->R->csr.nnz;
        t->nnz_p[l] = L->P->csr.nnz;
        t->be_a[l] = spk_matrix_backend_name(L->A);
        t->be_r[l] = spk_matrix_backend_name(L->R);
        t->be_p[l] = spk_matrix_backend_name(L->P);
    }
    const int jac = M->H.opt.smoother != SPK_AMG_CHEBYSHEV, sw = M->H.opt.sweeps,
              deg = M->H.opt.degree;
    if (M->fused)
        return time_fused(M, r, z, reps, t);
    for (int l = 0; l + 1 < M->H.nlevels; l++) {
        amg_level_dev *L = &M->lev[l], *C = &M->lev[l + 1];
        const double *b = l == 0 ? r : L->b;
        double *x = l == 0 ? z : L->x;
        TIME_PART(M, reps, t->spmv_a[l], spmv(M, L->A, &L->A32, -1.0, x, 1.0, L->r));
        TIME_PART(M, reps, t->spmv_r[l], spmv(M, L->R, &L->R32, 1.0, L->r, 0.0, C->b));
        TIME_PART(M, reps, t->spmv_p[l], spmv(M, L->P, &L->P32, 1.0, C->x, 1.0, x));
        /* SpMVs with A a cycle: the residual before restriction, and the smoothers' (from
         * zero the first Jacobi sweep needs none; a Chebyshev sweep of degree d needs d, the
         * one from zero d - 1) */
        t->count_a[l] = 1 + (jac ? 2 * sw - 1 : 2 * sw * deg - 1);
        double v1 = 0.0, v2 = 0.0;
        TIME_PART(M, reps, v1, M->ops->copy(M->ctx, L->n, b, L->r));
        TIME_PART(M, reps, v2, M->ops->pmul_axpby(M->ctx, L->n, 1.0, L->wdinv, L->r, 1.0, x));
        /* a copy per residual and a pmul_axpby per Jacobi sweep (Chebyshev: and an axpby per
         * step, timed as a pmul_axpby) */
        t->vec[l] = (double)t->count_a[l] * v1 + (double)(jac ? 2 * sw : 4 * sw * deg) * v2;
    }
    amg_level_dev *Lc = &M->lev[M->H.nlevels - 1];
    const double *bc = M->H.nlevels == 1 ? r : Lc->b;
    double *xc = M->H.nlevels == 1 ? z : Lc->x;
    TIME_PART(M, reps, t->coarse, spmv(M, M->Cinv, &M->Cinv32, 1.0, bc, 0.0, xc));
    return SPK_OK;
}

const spk_precond_ops spk_pc_amg = {
    .name = "amg",
    .kind = SPK_PRECOND_AMG,
    .device = SPK_DEVICE_AUTO,
    .summary = "smoothed-aggregation algebraic multigrid, one V-cycle: iterations nearly "
               "flat under mesh refinement; for SPD problems from diffusion or elasticity "
               "(--block-size, --coords or --nullspace for the latter)",
    .setup = amg_setup,
    .refresh = amg_refresh,
    .apply = amg_apply,
    .destroy = amg_destroy,
    .graph_safe = 1,
    .describe = amg_describe,
};
