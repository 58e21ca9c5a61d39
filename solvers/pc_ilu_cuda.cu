/* solvers/pc_ilu_cuda.cu -- the exact triangular solves of the incomplete factorizations on
 * the GPU (solvers/ilu.h, spk_ilu_sv_*): cuSPARSE's generic SpSV, whose analysis (a level
 * schedule of the rows, Naumov 2011, "Parallel solution of sparse triangular linear systems in
 * the preconditioned iterative methods on the GPU") is made once at setup. A value update
 * uploads the new values into the same arrays and hands them to cusparseSpSV_updateMatrix,
 * which keeps the analysis and its buffer: no allocation, no new schedule.
 *
 * L is the strict lower triangle with CUSPARSE_DIAG_TYPE_UNIT (its unit diagonal is implied,
 * never stored); U is the upper triangle with its diagonal, NON_UNIT. Row offsets go up as
 * 32-bit indices beside the 32-bit columns (SpSV takes one index type for both). The solves
 * are queued on the context's stream (set at every apply, since a CUDA-graph capture swaps
 * the context's stream for its own), with the same buffers every call and no host wait. */
#include "../kernels/cuda_common.h"
#include "ilu.h"

#include <cusparse.h>
#include <stdarg.h>
#include <stdio.h>

static spk_status spk_cusparse(spk_context *ctx, cusparseStatus_t s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static spk_status spk_cusparse(spk_context *ctx, cusparseStatus_t s, const char *fmt, ...)
{
    if (s == CUSPARSE_STATUS_SUCCESS)
        return SPK_OK;
    (void)cudaGetLastError();
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return spk_fail(ctx, SPK_ERR_CUDA, "%s: cuSPARSE: %s (status %d)", what,
                    cusparseGetErrorString(s), (int)s);
}

typedef struct sv_tri {
    int64_t              nnz;
    int32_t             *d_rp, *d_ci;
    double              *d_val;
    cusparseSpMatDescr_t mat;
    cusparseSpSVDescr_t  sv;
    void                *d_buf;
    size_t               buf_bytes;
} sv_tri;

struct spk_ilu_sv {
    spk_context         *ctx;
    int64_t              n;
    cusparseHandle_t     h;
    cusparseDnVecDescr_t vx, vy;       /* their pointers are set at each apply              */
    sv_tri               L, U;
};

static void tri_free(sv_tri *T)
{
    if (T->sv)
        (void)cusparseSpSV_destroyDescr(T->sv);
    if (T->mat)
        (void)cusparseDestroySpMat(T->mat);
    (void)cudaFree(T->d_rp);
    (void)cudaFree(T->d_ci);
    (void)cudaFree(T->d_val);
    (void)cudaFree(T->d_buf);
}

void spk_ilu_sv_free(spk_ilu_sv *S)
{
    if (!S)
        return;
    tri_free(&S->L);
    tri_free(&S->U);
    if (S->vx)
        (void)cusparseDestroyDnVec(S->vx);
    if (S->vy)
        (void)cusparseDestroyDnVec(S->vy);
    if (S->h)
        (void)cusparseDestroy(S->h);
    spk_free(S);
}

size_t spk_ilu_sv_bytes(const spk_ilu_sv *S)
{
    if (!S)
        return 0;
    const sv_tri *t[2] = {&S->L, &S->U};
    size_t b = 0;
    for (int k = 0; k < 2; k++)
        if (t[k]->nnz > 0)
            b += (size_t)(S->n + 1) * 4 + (size_t)t[k]->nnz * 12 + t[k]->buf_bytes;
    return b;
}

/* Upload one triangle and run SpSV's analysis on it (x, y: device vectors for the analysis). */
static spk_status tri_setup(spk_ilu_sv *S, const spk_csr *A, int lower, double *x, double *y)
{
    spk_context *ctx = S->ctx;
    sv_tri *T = lower ? &S->L : &S->U;
    T->nnz = A->nnz;
    if (T->nnz == 0)                              /* L of a diagonal or upper matrix: L = I */
        return SPK_OK;
    const int64_t n = S->n;
    int32_t *rp = (int32_t *)spk_malloc(ctx, (size_t)n + 1, sizeof *rp);
    if (!rp)
        return spk_fail(ctx, SPK_ERR_NOMEM, "SpSV: row offsets of %lld rows: out of memory",
                        (long long)n);
    for (int64_t i = 0; i <= n; i++)
        rp[i] = (int32_t)A->rowptr[i];
    spk_status st = spk_cuda_upload_new(ctx, &T->d_rp, rp, ((size_t)n + 1) * sizeof *rp,
                                        "SpSV row offsets");
    spk_free(rp);
    if (!st)
        st = spk_cuda_upload_new(ctx, &T->d_ci, A->colind, (size_t)T->nnz * sizeof(int32_t),
                                 "SpSV column indices");
    if (!st)
        st = spk_cuda_upload_new(ctx, &T->d_val, A->val, (size_t)T->nnz * sizeof(double),
                                 "SpSV values");
    if (!st)
        st = spk_cusparse(ctx, cusparseCreateCsr(&T->mat, n, n, T->nnz, T->d_rp, T->d_ci,
                                                 T->d_val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                                 CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F),
                          "cusparseCreateCsr(%s)", lower ? "L" : "U");
    if (st)
        return st;
    cusparseFillMode_t fill = lower ? CUSPARSE_FILL_MODE_LOWER : CUSPARSE_FILL_MODE_UPPER;
    cusparseDiagType_t diag = lower ? CUSPARSE_DIAG_TYPE_UNIT : CUSPARSE_DIAG_TYPE_NON_UNIT;
    const double one = 1.0;
    if (!(st = spk_cusparse(ctx, cusparseSpMatSetAttribute(T->mat, CUSPARSE_SPMAT_FILL_MODE,
                                                           &fill, sizeof fill),
                            "SpSV fill mode")) &&
        !(st = spk_cusparse(ctx, cusparseSpMatSetAttribute(T->mat, CUSPARSE_SPMAT_DIAG_TYPE,
                                                           &diag, sizeof diag),
                            "SpSV diagonal type")) &&
        !(st = spk_cusparse(ctx, cusparseSpSV_createDescr(&T->sv), "cusparseSpSV_createDescr")) &&
        !(st = spk_cusparse(ctx, cusparseDnVecSetValues(S->vx, x), "SpSV x")) &&
        !(st = spk_cusparse(ctx, cusparseDnVecSetValues(S->vy, y), "SpSV y")))
        st = spk_cusparse(ctx, cusparseSpSV_bufferSize(S->h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                       &one, T->mat, S->vx, S->vy, CUDA_R_64F,
                                                       CUSPARSE_SPSV_ALG_DEFAULT, T->sv,
                                                       &T->buf_bytes),
                          "cusparseSpSV_bufferSize(%s)", lower ? "L" : "U");
    if (!st)
        st = spk_cuda_malloc(ctx, &T->d_buf, T->buf_bytes, "SpSV buffer");
    if (!st)
        st = spk_cusparse(ctx, cusparseSpSV_analysis(S->h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                     &one, T->mat, S->vx, S->vy, CUDA_R_64F,
                                                     CUSPARSE_SPSV_ALG_DEFAULT, T->sv, T->d_buf),
                          "cusparseSpSV_analysis(%s)", lower ? "L" : "U");
    return st;
}

extern "C" spk_status spk_ilu_sv_setup(spk_context *ctx, const spk_ilu_factors *F,
                                       spk_ilu_sv **out)
{
    *out = NULL;
    spk_cuda_state *cs = NULL;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (F->L.nnz > INT32_MAX || F->U.nnz > INT32_MAX)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "SpSV: factors of %lld + %lld entries: the "
                        "GPU's exact solve takes at most 2^31-1 per triangle; use "
                        "--ilu-trisolve jacobi", (long long)F->L.nnz, (long long)F->U.nnz);
    spk_ilu_sv *S = (spk_ilu_sv *)spk_calloc(ctx, 1, sizeof *S);
    if (!S)
        return spk_fail(ctx, SPK_ERR_NOMEM, "SpSV state: out of memory");
    S->ctx = ctx;
    S->n = F->n;
    double *d_tmp = NULL;                      /* x and y of the analysis, freed after it */
    if (!(st = spk_cusparse(ctx, cusparseCreate(&S->h), "cusparseCreate")) &&
        !(st = spk_cusparse(ctx, cusparseSetStream(S->h, cs->stream), "cusparseSetStream")) &&
        !(st = spk_cusparse(ctx, cusparseSetPointerMode(S->h, CUSPARSE_POINTER_MODE_HOST),
                            "cusparseSetPointerMode")) &&
        !(st = spk_cuda_malloc(ctx, &d_tmp, 2 * (size_t)(S->n > 0 ? S->n : 1) * sizeof(double),
                               "SpSV analysis vectors")) &&
        !(st = spk_cusparse(ctx, cusparseCreateDnVec(&S->vx, S->n, d_tmp, CUDA_R_64F),
                            "cusparseCreateDnVec")) &&
        !(st = spk_cusparse(ctx, cusparseCreateDnVec(&S->vy, S->n, d_tmp + S->n, CUDA_R_64F),
                            "cusparseCreateDnVec")) &&
        !(st = tri_setup(S, &F->L, 1, d_tmp, d_tmp + S->n)))
        st = tri_setup(S, &F->U, 0, d_tmp, d_tmp + S->n);
    if (!st)
        st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream), "SpSV analysis");
    (void)cudaFree(d_tmp);
    if (st) {
        spk_ilu_sv_free(S);
        return st;
    }
    *out = S;
    return SPK_OK;
}

static spk_status tri_update(spk_ilu_sv *S, sv_tri *T, const spk_csr *A, const char *name)
{
    if (T->nnz == 0)
        return SPK_OK;
    if (A->nnz != T->nnz)
        return spk_fail(S->ctx, SPK_ERR_ARG, "SpSV update of %s: %lld entries, the analysis was "
                        "made for %lld", name, (long long)A->nnz, (long long)T->nnz);
    spk_status st = spk_cuda_upload_into(S->ctx, T->d_val, A->val,
                                         (size_t)T->nnz * sizeof(double), "SpSV values");
    return st ? st : spk_cusparse(S->ctx, cusparseSpSV_updateMatrix(S->h, T->sv, T->d_val,
                                                                    CUSPARSE_SPSV_UPDATE_GENERAL),
                                  "cusparseSpSV_updateMatrix(%s)", name);
}

extern "C" spk_status spk_ilu_sv_update(spk_context *ctx, spk_ilu_sv *S,
                                        const spk_ilu_factors *F)
{
    spk_cuda_state *cs = NULL;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (!st)
        st = spk_cusparse(ctx, cusparseSetStream(S->h, cs->stream), "cusparseSetStream");
    if (!st)
        st = tri_update(S, &S->L, &F->L, "L");
    if (!st)
        st = tri_update(S, &S->U, &F->U, "U");
    return st;
}

/* out = T^-1 in, queued */
static spk_status tri_solve(spk_ilu_sv *S, sv_tri *T, const double *in, double *out,
                            const char *name)
{
    const double one = 1.0;
    spk_status st = spk_cusparse(S->ctx, cusparseDnVecSetValues(S->vx, (void *)in), "SpSV x");
    if (!st)
        st = spk_cusparse(S->ctx, cusparseDnVecSetValues(S->vy, out), "SpSV y");
    if (!st)
        st = spk_cusparse(S->ctx, cusparseSpSV_solve(S->h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                                     T->mat, S->vx, S->vy, CUDA_R_64F,
                                                     CUSPARSE_SPSV_ALG_DEFAULT, T->sv),
                          "cusparseSpSV_solve(%s)", name);
    return st;
}

extern "C" spk_status spk_ilu_sv_apply(spk_context *ctx, spk_ilu_sv *S, const double *r,
                                       double *y, double *z)
{
    if (S->n == 0)
        return SPK_OK;
    spk_cuda_state *cs = NULL;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (!st)
        st = spk_cusparse(ctx, cusparseSetStream(S->h, cs->stream), "cusparseSetStream");
    if (st)
        return st;
    if (S->L.nnz > 0)
        st = tri_solve(S, &S->L, r, y, "L");                        /* y = L^-1 r */
    else
        st = spk_cuda(ctx, cudaMemcpyAsync(y, r, (size_t)S->n * sizeof(double),
                                           cudaMemcpyDeviceToDevice, cs->stream),
                      "SpSV: copy of r");
    return st ? st : tri_solve(S, &S->U, y, z, "U");                 /* z = U^-1 y */
}
