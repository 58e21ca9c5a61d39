/* solvers/pc_bjacobi.c -- block-Jacobi preconditioning: M = the d x d diagonal blocks of A,
 * rows and columns [b d, (b + 1) d) for block b; when d does not divide n the last block is the
 * n mod d rows left over (a smaller block, not a refusal: n need not be a multiple of d). Each
 * block is inverted once on the host by dense LU with partial pivoting, and M^-1 is kept as
 * the block-diagonal sparse matrix of those inverses (CSR, d entries a row), made an spk
 * matrix in the format the automatic choice gives it on the context's device: z = M^-1 r is
 * one SpMV through the backend table, so one row serves every device and the apply is
 * captured into CG's CUDA graph. Cost of an apply: the SpMV of n d entries, some 12 n d bytes
 * of M^-1 (value and column) plus 16 n of vectors. d = 1 is Jacobi, applied as an SpMV.
 *
 * A singular block (a pivot at or below 1e-14 of the block's largest entry) is refused for
 * every method; for CG, whose M must be SPD, a block on which Cholesky fails is refused too,
 * as Jacobi refuses a non-positive diagonal. A refresh after a value update recomputes the
 * inverses into the same array and rewrites the device matrix's values
 * (spk_matrix_update_values): no allocation after the first.
 *
 * With precision MIXED the apply reads M^-1 through its format's fp32 twin
 * (spk_spmv_backend.fp32; on the GPU made from M^-1's device layout, sharing its indices):
 * 4 bytes a value in place of 8, the sums in fp64. Rounding each entry keeps every block's
 * inverse symmetric where A's block is, so M stays a fixed symmetric operator for CG. Where
 * an inverse's entry leaves fp32's range the apply keeps fp64. */
#include "precond.h"
#include "twin.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* d at most 64 (the AMG block size's bound): one block's factors, 32 KB, live on the stack of
 * the thread that inverts it, and M^-1 stays at most 64 entries a row. */
#define BJ_MAX_BLOCK 64
/* a pivot at or below this fraction of the block's largest |entry| is singular to working
 * precision (the AMG coarsest level's test) */
#define BJ_PIVOT_TOL 1e-14

typedef struct pc_bjacobi {
    spk_context *ctx;
    int64_t      n, nblocks;
    int          d, last;         /* block size; the last block's (d when d divides n)          */
    int          require_spd;     /* CG: every block must pass Cholesky                         */
    double      *inv;             /* host: the blocks' inverses, block after block, row-major
                                     (the CSR order of M^-1's values)                           */
    int64_t      nnz;
    spk_matrix  *M;               /* M^-1 on the context's device                               */
    int          fp32;            /* precision MIXED: M^-1 applied through its fp32 twin        */
    spk_twin     t32;             /* M^-1's fp32 twin (its state NULL: the apply in fp64)       */
} pc_bjacobi;

typedef enum { BJ_OK, BJ_SINGULAR, BJ_NOT_SPD } bj_verdict;

/* The block of A at rows and columns [r0, r0 + db) into a (db x db, row-major). */
static double gather_block(const spk_csr *A, int64_t r0, int db, double *a)
{
    double amax = 0.0;
    memset(a, 0, (size_t)db * (size_t)db * sizeof *a);
    for (int i = 0; i < db; i++)
        for (int64_t p = A->rowptr[r0 + i]; p < A->rowptr[r0 + i + 1]; p++) {
            const int64_t c = A->colind[p] - r0;
            if (c >= db)
                break;                                  /* columns are sorted */
            if (c >= 0) {
                a[i * db + c] = A->val[p];
                amax = fmax(amax, fabs(A->val[p]));
            }
        }
    return amax;
}

/* Cholesky of a's lower triangle into l: BJ_NOT_SPD at the first pivot that is not positive
 * (its value and row into *piv_val, *at). */
static bj_verdict cholesky_check(const double *a, int db, double *l, double *piv_val, int *at)
{
    for (int j = 0; j < db; j++) {
        double s = a[j * db + j];
        for (int k = 0; k < j; k++)
            s -= l[j * db + k] * l[j * db + k];
        if (!(s > 0.0)) {
            *piv_val = s;
            *at = j;
            return BJ_NOT_SPD;
        }
        l[j * db + j] = sqrt(s);
        for (int i = j + 1; i < db; i++) {
            double t = a[i * db + j];
            for (int k = 0; k < j; k++)
                t -= l[i * db + k] * l[j * db + k];
            l[i * db + j] = t / l[j * db + j];
        }
    }
    return BJ_OK;
}

/* inv = a^-1 by LU with partial pivoting, in place in a; BJ_SINGULAR at the first pivot at or
 * below BJ_PIVOT_TOL amax. */
static bj_verdict lu_invert(double *a, int db, double amax, double *inv, double *piv_val,
                            int *at)
{
    int piv[BJ_MAX_BLOCK];
    for (int c = 0; c < db; c++) {
        int pr = c;
        for (int r = c + 1; r < db; r++)
            if (fabs(a[r * db + c]) > fabs(a[pr * db + c]))
                pr = r;
        piv[c] = pr;
        if (!(fabs(a[pr * db + c]) > BJ_PIVOT_TOL * amax)) {
            *piv_val = a[pr * db + c];
            *at = c;
            return BJ_SINGULAR;
        }
        if (pr != c)
            for (int j = 0; j < db; j++) {
                const double t = a[c * db + j];
                a[c * db + j] = a[pr * db + j];
                a[pr * db + j] = t;
            }
        for (int r = c + 1; r < db; r++) {
            const double l = a[r * db + c] / a[c * db + c];
            a[r * db + c] = l;
            for (int j = c + 1; j < db; j++)
                a[r * db + j] -= l * a[c * db + j];
        }
    }
    /* column j of the inverse: L U x = P e_j */
    for (int j = 0; j < db; j++) {
        double x[BJ_MAX_BLOCK];
        for (int i = 0; i < db; i++)
            x[i] = i == j ? 1.0 : 0.0;
        for (int c = 0; c < db; c++)
            if (piv[c] != c) {
                const double t = x[c];
                x[c] = x[piv[c]];
                x[piv[c]] = t;
            }
        for (int r = 0; r < db; r++)                    /* L y = P e_j, unit diagonal */
            for (int c = 0; c < r; c++)
                x[r] -= a[r * db + c] * x[c];
        for (int r = db - 1; r >= 0; r--) {             /* U x = y */
            for (int c = r + 1; c < db; c++)
                x[r] -= a[r * db + c] * x[c];
            x[r] /= a[r * db + r];
        }
        for (int i = 0; i < db; i++)
            inv[i * db + j] = x[i];
    }
    return BJ_OK;
}

/* Block b's inverse into its place in P->inv. */
static bj_verdict invert_block(const pc_bjacobi *P, const spk_csr *A, int64_t b, double *piv_val,
                               int *at)
{
    double a[BJ_MAX_BLOCK * BJ_MAX_BLOCK];
    const int db = b == P->nblocks - 1 ? P->last : P->d;
    double *inv = P->inv + b * (int64_t)P->d * P->d;
    const double amax = gather_block(A, b * P->d, db, a);
    if (P->require_spd && cholesky_check(a, db, inv, piv_val, at) != BJ_OK)
        return BJ_NOT_SPD;
    return lu_invert(a, db, amax, inv, piv_val, at);
}

/* Every block's inverse from A's current host values; the first bad block is refused with
 * its rows. */
static spk_status invert_all(pc_bjacobi *P, const spk_csr *A)
{
    int64_t bad = P->nblocks;
#pragma omp parallel for schedule(static) reduction(min : bad) if (P->nblocks > 1024)
    for (int64_t b = 0; b < P->nblocks; b++) {
        double v;
        int at;
        if (invert_block(P, A, b, &v, &at) != BJ_OK && b < bad)
            bad = b;
    }
    if (bad == P->nblocks)
        return SPK_OK;
    double v = 0.0;
    int at = 0;
    const bj_verdict why = invert_block(P, A, bad, &v, &at);    /* again, for the detail */
    const int db = bad == P->nblocks - 1 ? P->last : P->d;
    const long long r0 = (long long)(bad * P->d) + 1, r1 = r0 + db - 1;
    if (why == BJ_NOT_SPD)
        return spk_fail(P->ctx, SPK_ERR_UNSUPPORTED, "block-Jacobi for CG needs SPD diagonal "
                        "blocks, but block %lld (rows %lld..%lld) is not positive definite "
                        "(Cholesky pivot %g at its row %d); use BiCGStab or GMRES if A is not "
                        "SPD, or another block size", (long long)bad + 1, r0, r1, v, at + 1);
    return spk_fail(P->ctx, SPK_ERR_UNSUPPORTED, "block-Jacobi: diagonal block %lld (rows "
                    "%lld..%lld, %d x %d) is singular to working precision (pivot %g at its "
                    "column %d); use another block size, or no preconditioner",
                    (long long)bad + 1, r0, r1, db, db, v, at + 1);
}

static void twin_drop(pc_bjacobi *P);

static void bjacobi_destroy(void *state)
{
    pc_bjacobi *P = state;
    if (!P)
        return;
    twin_drop(P);
    spk_matrix_destroy(P->M);
    spk_free(P->inv);
    spk_free(P);
}

static void twin_drop(pc_bjacobi *P)
{
    spk_twin_free(&P->t32);
}

/* M^-1's fp32 twin from its current values (the inverses, on the host). */
static spk_status twin_sync(pc_bjacobi *P)
{
    return spk_twin_sync(P->ctx, P->M, P->inv, &P->t32);
}

/* M^-1's pattern (d entries a row, the block's columns) with the inverses as values, made an
 * spk matrix and prepared on the context's device. */
static spk_status make_device_matrix(pc_bjacobi *P)
{
    spk_csr c;
    spk_status st = spk_csr_alloc(P->ctx, P->n, P->n, P->nnz, &c);
    if (st)
        return st;
    for (int64_t i = 0; i < P->n; i++) {
        const int64_t b = i / P->d, c0 = b * P->d;
        const int db = b == P->nblocks - 1 ? P->last : P->d;
        int64_t q = b * (int64_t)P->d * P->d + (i - c0) * db;
        for (int j = 0; j < db; j++) {
            c.colind[q] = (int32_t)(c0 + j);
            c.val[q] = P->inv[q];
            q++;
        }
        c.rowptr[i + 1] = q;
    }
    st = spk_matrix_from_canonical(P->ctx, &c, &P->M);
    spk_csr_free(&c);
    return st ? st : spk_matrix_prepare(P->ctx, P->M, SPK_FMT_AUTO);
}

static spk_status bjacobi_setup(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                                void **state)
{
    *state = NULL;
    const int d = opt->block_size > 0 ? opt->block_size
                  : opt->amg.block_size > 0 ? opt->amg.block_size : 1;
    if (opt->block_size < 0 || d > BJ_MAX_BLOCK)
        return spk_fail(ctx, SPK_ERR_ARG, "block-Jacobi: block_size = %d must be in 1..%d (0: "
                        "amg.block_size, else 1)", opt->block_size ? opt->block_size : d,
                        BJ_MAX_BLOCK);
    pc_bjacobi *P = spk_calloc(ctx, 1, sizeof *P);
    if (!P)
        return spk_fail(ctx, SPK_ERR_NOMEM, "block-Jacobi preconditioner: out of memory");
    P->ctx = ctx;
    P->n = A->csr.nrows;
    P->d = d;
    P->nblocks = (P->n + d - 1) / d;
    P->last = P->n % d ? (int)(P->n % d) : d;
    P->nnz = (P->n / d) * d * d + (P->n % d) * (P->n % d);
    P->require_spd = opt->method == SPK_METHOD_CG;
    spk_status st = spk_check_memory(ctx, 8.0 * (double)P->nnz, "block-Jacobi: the inverses of "
                                     "%lld blocks of %d", (long long)P->nblocks, d);
    if (!st && !(P->inv = spk_malloc(ctx, (size_t)(P->nnz > 0 ? P->nnz : 1), sizeof *P->inv)))
        st = spk_fail(ctx, SPK_ERR_NOMEM, "block-Jacobi: the inverses of %lld blocks of %d: out "
                      "of memory", (long long)P->nblocks, d);
    if (!st)
        st = spk_matrix_host_values(ctx, A);
    if (!st)
        st = invert_all(P, &A->csr);
    if (!st)
        st = make_device_matrix(P);
    P->fp32 = opt->precision == SPK_PRECISION_MIXED;
    if (!st && P->fp32)
        st = twin_sync(P);
    if (st) {
        bjacobi_destroy(P);
        return st;
    }
    *state = P;
    return SPK_OK;
}

static spk_status bjacobi_refresh(void *state, spk_matrix *A)
{
    pc_bjacobi *P = state;
    spk_status st = spk_matrix_host_values(P->ctx, A);
    if (!st)
        st = invert_all(P, &A->csr);
    if (!st)
        st = spk_matrix_update_values(P->ctx, P->M, P->nnz, P->inv, 0);
    if (!st && !P->M->be) {              /* a failed device refill dropped M^-1's layout */
        twin_drop(P);
        st = spk_matrix_prepare(P->ctx, P->M, SPK_FMT_AUTO);
    }
    return st || !P->fp32 ? st : twin_sync(P);
}

static spk_status bjacobi_apply(void *state, const double *r, double *z)
{
    const pc_bjacobi *P = state;
    return spk_twin_spmv(P->ctx, P->M, &P->t32, 1.0, r, 0.0, z);
}

static size_t bjacobi_describe(const void *state, char *buf, size_t len)
{
    const pc_bjacobi *P = state;
    const spk_matrix *M = P->M;
    const size_t bytes = M->be ? M->info.bytes[M->be->format] : 0;
    char last[64] = "";
    if (P->last != P->d)
        snprintf(last, sizeof last, ", the last of %d", P->last);
    const int w = snprintf(buf, len, "bjacobi: %lld diagonal block%s of %d x %d%s, inverted "
                           "by LU with partial pivoting%s; M^-1 block-diagonal, %lld entries "
                           "in %s%s, %.1f MB on the device",
                           (long long)P->nblocks, P->nblocks == 1 ? "" : "s", P->d, P->d, last,
                           P->require_spd ? " (checked SPD by Cholesky, for CG)" : "",
                           (long long)P->nnz, M->be ? spk_format_str(M->be->format) : "-",
                           spk_twin_live(P->M, &P->t32) ? ", applied in fp32 values" : "",
                           bytes == SIZE_MAX ? 0.0 : (double)bytes / 1e6);
    return w > 0 ? (size_t)w : 0;
}

const spk_precond_ops spk_pc_bjacobi = {
    .name = "bjacobi",
    .kind = SPK_PRECOND_BJACOBI,
    .device = SPK_DEVICE_AUTO,
    .summary = "block-Jacobi: the d x d diagonal blocks inverted (--block-size d, default "
               "1), one SpMV of d entries a row; for d unknowns a node (elasticity); "
               "needs nonsingular blocks (SPD for CG)",
    .setup = bjacobi_setup,
    .refresh = bjacobi_refresh,
    .apply = bjacobi_apply,
    .destroy = bjacobi_destroy,
    .graph_safe = 1,
    .describe = bjacobi_describe,
};
