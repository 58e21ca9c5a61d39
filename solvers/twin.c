/* solvers/twin.c -- the fp32 twins of preconditioners' matrices (solvers/twin.h). */
#include "twin.h"

#include <float.h>
#include <math.h>
#include <string.h>

int spk_fits_fp32(const double *v, int64_t n)
{
    for (int64_t q = 0; q < n; q++) {
        const double a = fabs(v[q]);
        if (a > FLT_MAX || (a != 0.0 && a < FLT_MIN))
            return 0;
    }
    return 1;
}

int spk_twin_live(const spk_matrix *A, const spk_twin *t)
{
    return A && t->s && A->be && A->be->fp32 == t->be && A->state == t->row &&
           A->layout_gen == t->gen;
}

void spk_twin_free(spk_twin *t)
{
    if (t->s)
        t->be->destroy(t->s);
    memset(t, 0, sizeof *t);
}

int spk_twin_on_device(const spk_matrix *A)
{
    const spk_spmv_backend *be = A && A->be ? A->be->fp32 : NULL;
    return be && be->setup_from && be->refill;
}

spk_status spk_twin_sync(spk_context *ctx, const spk_matrix *A, const double *v, spk_twin *t)
{
    if (t->s && !spk_twin_live(A, t))
        spk_twin_free(t);                    /* it borrowed a layout that is gone */
    const spk_spmv_backend *be = A && A->be ? A->be->fp32 : NULL;
    if (!be || (!(v == NULL && spk_twin_on_device(A)) && !spk_fits_fp32(v, A->csr.nnz))) {
        spk_twin_free(t);
        return SPK_OK;
    }
    int fits = 1;
    spk_status st;
    if (t->s) {
        st = t->be->refill ? t->be->refill(ctx, t->s, A->state, &fits)
                           : t->be->update(ctx, t->s, &A->csr);
    } else {
        st = be->setup_from ? be->setup_from(ctx, A->state, &t->s, &fits)
                            : be->setup(ctx, &A->csr, &t->s);
        t->be = be;
        t->row = A->state;
        t->gen = A->layout_gen;
    }
    if (st || !fits)                         /* !fits after the check: a value rounded away */
        spk_twin_free(t);
    return st;
}

spk_status spk_twin_spmv(spk_context *ctx, const spk_matrix *A, const spk_twin *t, double alpha,
                         const double *x, double beta, double *y)
{
    return spk_twin_live(A, t) ? t->be->spmv(ctx, t->s, alpha, x, beta, y)
                               : A->be->spmv(ctx, A->state, alpha, x, beta, y);
}

spk_status spk_twin_step(spk_context *ctx, const spk_matrix *A, const spk_twin *t,
                         const spk_step *s, double *xd, double *td)
{
    const int live = spk_twin_live(A, t);
    const spk_spmv_backend *be = live ? t->be : A->be;
    const void *state = live ? t->s : A->state;
    if (be->spmv_step) {
        const spk_status st = be->spmv_step(ctx, state, s);
        if (st != SPK_ERR_UNSUPPORTED)
            return st;
    }
    const spk_vec_ops *ops = spk_vec_ops_for(be->device);
    const double *x = s->x;
    spk_status st = SPK_OK;
    if (s->x32) {
        const spk_step widen = {.b = s->x, .b32 = 1, .y = xd, .alpha = 1.0};
        st = ops->step(ctx, A->csr.ncols, NULL, &widen);
        x = xd;
    }
    if (!st)
        st = be->spmv(ctx, state, 1.0, x, 0.0, td);
    return st ? st : ops->step(ctx, A->csr.nrows, td, s);
}

int spk_twin_fuses(const spk_matrix *A, const spk_twin *t)
{
    return (spk_twin_live(A, t) ? t->be : A->be)->spmv_step != NULL;
}
