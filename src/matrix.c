/* src/matrix.c -- the public matrix handle: made from a file, a generator, host CSR or COO
 * arrays; holds the canonical host CSR, its statistics and the prepared backend layout. */
#include "spk_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Wrap a canonical CSR (taken over, not copied; borrowed: neither, A->csr_borrowed) into a
 * new handle with its statistics (values 0: its values not set yet, their statistics stale). */
static spk_status matrix_over_csr(spk_context *ctx, spk_csr *csr, int values, int borrowed,
                                  spk_matrix **out)
{
    spk_matrix *A = spk_calloc(ctx, 1, sizeof *A);
    if (!A) {
        if (!borrowed)
            spk_csr_free(csr);
        return spk_fail(ctx, SPK_ERR_NOMEM, "matrix handle: out of memory");
    }
    A->csr = *csr;
    A->csr_borrowed = borrowed;
    memset(csr, 0, sizeof *csr);
    if (values) {
        spk_stats_compute(&A->csr, &A->info);
    } else {
        spk_stats_sizes(&A->csr, &A->info);
        A->shape_unset = 1;
    }
    A->info_stale = !values;
    A->nnz_in = A->csr.nnz;                  /* canonical order until from_coo says otherwise */
    A->magic = SPK_MATRIX_MAGIC;
    *out = A;
    return SPK_OK;
}

spk_status spk_matrix_from_canonical(spk_context *ctx, const spk_csr *src, spk_matrix **out)
{
    *out = NULL;
    spk_csr c;
    spk_status st = spk_csr_alloc(ctx, src->nrows, src->ncols, src->nnz, &c);
    if (st)
        return st;
    memcpy(c.rowptr, src->rowptr, ((size_t)src->nrows + 1) * sizeof *c.rowptr);
    if (src->nnz > 0) {
        memcpy(c.colind, src->colind, (size_t)src->nnz * sizeof *c.colind);
        memcpy(c.val, src->val, (size_t)src->nnz * sizeof *c.val);
    }
    return matrix_over_csr(ctx, &c, 1, 0, out);
}

spk_status spk_matrix_from_canonical_owned(spk_context *ctx, spk_csr *src, int values,
                                           spk_matrix **out)
{
    *out = NULL;
    spk_csr c = *src;
    src->rowptr = NULL;
    src->colind = NULL;
    src->val = NULL;
    return matrix_over_csr(ctx, &c, values, 0, out);
}

spk_status spk_matrix_from_canonical_borrowed(spk_context *ctx, const spk_csr *src,
                                              spk_matrix **out)
{
    *out = NULL;
    if (ctx->device != SPK_DEVICE_CPU)
        return spk_fail(ctx, SPK_ERR_ARG, "a matrix over another's host arrays is made on a CPU "
                        "context only");
    spk_csr c = *src;
    return matrix_over_csr(ctx, &c, 1, 1, out);
}

static int matrix_ok(const spk_matrix *A)
{
    return A && A->magic == SPK_MATRIX_MAGIC;
}

spk_status spk_matrix_read_mtx(spk_context *ctx, const char *path, spk_matrix **A)
{
    if (A)
        *A = NULL;                           /* on every failure, NULL arguments included */
    if (!ctx || !path || !A)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_read_mtx: NULL argument");
    spk_mm_header hdr;
    spk_coo coo;
    spk_csr csr;
    spk_status st = spk_mm_read_for_csr(ctx, path, &hdr, &coo);
    if (st)
        return st;
    st = spk_csr_from_coo(ctx, &coo, &csr);
    const int64_t summed = coo.nnz - csr.nnz;
    spk_coo_free(&coo);
    if (st == SPK_ERR_ARG) {
        /* the only refusal of a parsed COO: finite entries whose sum is not; said as a fault
         * of the file, with the mirrors of symmetric storage named */
        char why[SPK_MSG_LEN];
        snprintf(why, sizeof why, "%s", spk_last_error(ctx));
        return spk_fail(ctx, SPK_ERR_PARSE, "%s: %s%s", path, why,
                        hdr.symmetry == SPK_MM_GENERAL ? "" : " (symmetric storage: a(i,j) also "
                        "receives the mirror of each entry given for (j,i))");
    }
    if (st)
        return st;
    st = matrix_over_csr(ctx, &csr, 1, 0, A);
    if (!st) {
        (*A)->summed_in = summed;
        (*A)->both_triangles = hdr.both_triangles;
    }
    return st;
}

spk_status spk_matrix_generate(spk_context *ctx, const char *spec, spk_matrix **A)
{
    if (A)
        *A = NULL;                           /* on every failure, NULL arguments included */
    if (!ctx || !spec || !A)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_generate: NULL argument");
    spk_csr csr;
    spk_status st = spk_generate_csr(ctx, spec, &csr);
    if (st)
        return st;
    return matrix_over_csr(ctx, &csr, 1, 0, A);
}

static spk_status check_dims(spk_context *ctx, const char *fn, int64_t nrows, int64_t ncols,
                             int base)
{
    if (nrows < 0 || ncols < 0 || nrows > INT32_MAX || ncols > INT32_MAX)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: %lld x %lld: sizes must be in [0, 2^31)", fn,
                        (long long)nrows, (long long)ncols);
    if (base != 0 && base != 1)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: base must be 0 or 1, got %d", fn, base);
    return SPK_OK;
}

/* spk_matrix_from_coo, and spk_matrix_from_csr's (csr = 1: its messages name colind[k] and
 * the row, as the caller passed them, not the row array made from rowptr). */
static spk_status matrix_from_triplets(spk_context *ctx, int csr_in, int64_t nrows, int64_t ncols,
                                       int64_t nnz, const int32_t *row, const int32_t *col,
                                       const double *val, int base, spk_matrix **A)
{
    const char *fn = csr_in ? "spk_matrix_from_csr" : "spk_matrix_from_coo";
    /* the copy, the assembly and the update map (up to 24 bytes an entry) */
    spk_status st = spk_check_memory(ctx, spk_csr_from_coo_bytes(nrows, ncols, nnz) + 24.0 * (double)nnz,
                          "%s: a %lld x %lld matrix of %lld entries", fn, (long long)nrows,
                          (long long)ncols, (long long)nnz);
    if (st)
        return st;
    spk_coo coo = {nrows, ncols, nnz, spk_malloc(ctx, (size_t)nnz, 4), spk_malloc(ctx, (size_t)nnz, 4),
                   spk_malloc(ctx, (size_t)nnz, 8)};
    if (!coo.row || !coo.col || !coo.val) {
        spk_coo_free(&coo);
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s: %lld entries: out of memory", fn, (long long)nnz);
    }
    for (int64_t k = 0; k < nnz; k++) {
        /* in 64 bits: row[k] - base overflows int for row[k] = INT32_MIN */
        const int64_t i = (int64_t)row[k] - base, j = (int64_t)col[k] - base;
        if (i < 0 || i >= nrows || j < 0 || j >= ncols) {
            spk_coo_free(&coo);
            if (csr_in)
                return spk_fail(ctx, SPK_ERR_ARG, "%s: colind[%lld] = %d (row %lld) is outside "
                                "the %lld x %lld matrix (base %d)", fn, (long long)k, col[k],
                                (long long)row[k], (long long)nrows, (long long)ncols, base);
            return spk_fail(ctx, SPK_ERR_ARG, "%s: row[%lld] = %d, col[%lld] = %d is outside the "
                            "%lld x %lld matrix (base %d)", fn, (long long)k, row[k],
                            (long long)k, col[k], (long long)nrows, (long long)ncols, base);
        }
        coo.row[k] = (int32_t)i;
        coo.col[k] = (int32_t)j;
        coo.val[k] = val[k];
        if (!isfinite(val[k])) {
            spk_coo_free(&coo);
            return spk_fail(ctx, SPK_ERR_ARG, "%s: val[%lld] = %g: the values must be finite", fn,
                            (long long)k, val[k]);
        }
    }
    spk_csr csr;
    int64_t *gptr = NULL, *gsrc = NULL;      /* canonical entry <- input entries (updates) */
    st = spk_csr_from_coo(ctx, &coo, &csr);
    if (!st && (st = spk_csr_source_map(ctx, &csr, &coo, &gptr, &gsrc)))
        spk_csr_free(&csr);
    spk_coo_free(&coo);
    if (st)
        return st;
    if ((st = matrix_over_csr(ctx, &csr, 1, 0, A))) {
        spk_free(gptr);
        spk_free(gsrc);
        return st;
    }
    (*A)->nnz_in = nnz;
    (*A)->summed_in = nnz - (*A)->csr.nnz;
    (*A)->gather_ptr = gptr;
    (*A)->gather_src = gsrc;
    return SPK_OK;
}

spk_status spk_matrix_from_coo(spk_context *ctx, int64_t nrows, int64_t ncols, int64_t nnz,
                               const int32_t *row, const int32_t *col, const double *val,
                               int base, spk_matrix **A)
{
    if (A)
        *A = NULL;                           /* on every failure, NULL arguments included */
    if (!ctx || !A || (nnz > 0 && (!row || !col || !val)))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_from_coo: NULL argument (%s)",
                        !ctx ? "ctx" : !A ? "A" : !row ? "row" : !col ? "col" : "val");
    spk_status st = check_dims(ctx, "spk_matrix_from_coo", nrows, ncols, base);
    if (st)
        return st;
    if (nnz < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_from_coo: nnz = %lld must be >= 0", (long long)nnz);
    return matrix_from_triplets(ctx, 0, nrows, ncols, nnz, row, col, val, base, A);
}

spk_status spk_matrix_from_csr(spk_context *ctx, int64_t nrows, int64_t ncols,
                               const int64_t *rowptr, const int32_t *colind, const double *val,
                               int base, spk_matrix **A)
{
    if (A)
        *A = NULL;                           /* on every failure, NULL arguments included */
    if (!ctx || !A || !rowptr)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_from_csr: NULL argument (%s)",
                        !ctx ? "ctx" : !A ? "A" : "rowptr");
    spk_status st = check_dims(ctx, "spk_matrix_from_csr", nrows, ncols, base);
    if (st)
        return st;
    if (rowptr[0] != base)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_from_csr: rowptr[0] = %lld, expected %d",
                        (long long)rowptr[0], base);
    for (int64_t i = 0; i < nrows; i++)
        if (rowptr[i + 1] < rowptr[i])
            return spk_fail(ctx, SPK_ERR_ARG,
                            "spk_matrix_from_csr: rowptr decreases at row %lld (%lld > %lld)",
                            (long long)i, (long long)rowptr[i], (long long)rowptr[i + 1]);
    /* after the checks: rowptr[nrows] >= base, so the difference cannot overflow */
    int64_t nnz = rowptr[nrows] - base;
    if (nnz > 0 && (!colind || !val))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_from_csr: NULL argument (%s)",
                        !colind ? "colind" : "val");
    st = spk_check_memory(ctx, 4.0 * (double)nnz + spk_csr_from_coo_bytes(nrows, ncols, nnz) +
                          24.0 * (double)nnz, "spk_matrix_from_csr: a %lld x %lld matrix of %lld "
                          "entries", (long long)nrows, (long long)ncols, (long long)nnz);
    if (st)
        return st;
    int32_t *row = spk_malloc(ctx, (size_t)nnz, sizeof *row);
    if (!row)
        return spk_fail(ctx, SPK_ERR_NOMEM, "spk_matrix_from_csr: %lld entries: out of memory", (long long)nnz);
    for (int64_t i = 0; i < nrows; i++)
        for (int64_t p = rowptr[i] - base; p < rowptr[i + 1] - base; p++)
            row[p] = (int32_t)(i + base);
    st = matrix_from_triplets(ctx, 1, nrows, ncols, nnz, row, colind, val, base, A);
    spk_free(row);
    return st;
}

void spk_matrix_destroy(spk_matrix *A)
{
    if (!matrix_ok(A))
        return;
    if (A->be)
        A->be->destroy(A->state);
    spk_matrix_spmv_release(A);
    if (!A->csr_borrowed)
        spk_csr_free(&A->csr);
    spk_free(A->gather_ptr);
    spk_free(A->gather_src);
    spk_free(A->stage);
    spk_matrix_dev_free(A->dev);
    if (A->dist)
        A->dist->destroy(A->dist);
    A->magic = 0;
    spk_free(A);
}

spk_status spk_matrix_get_info(const spk_matrix *A, spk_matrix_info *info)
{
    if (!matrix_ok(A) || !info)
        return SPK_ERR_ARG;
    /* the handle is the caller's (not const underneath): the value statistics are a cache that
     * an update marks stale and this read refreshes, from host values downloaded first if
     * the update was made on the GPU */
    spk_status st = spk_matrix_host_values(NULL, (spk_matrix *)A);
    if (st)
        return st;
    *info = *spk_matrix_info_of((spk_matrix *)A);
    return SPK_OK;
}

spk_status spk_matrix_input_counts(const spk_matrix *A, int64_t *summed, int64_t *both_triangles)
{
    if (!matrix_ok(A))
        return SPK_ERR_ARG;
    if (summed)
        *summed = A->summed_in;
    if (both_triangles)
        *both_triangles = A->both_triangles;
    return SPK_OK;
}

spk_status spk_matrix_csr(const spk_matrix *A, const int64_t **rowptr, const int32_t **colind,
                          const double **val)
{
    if (!matrix_ok(A))
        return SPK_ERR_ARG;
    /* after updates on the GPU the host values are brought up to date here (not const
     * underneath, as for spk_matrix_get_info) */
    spk_status st = val ? spk_matrix_host_values(NULL, (spk_matrix *)A) : SPK_OK;
    if (st)
        return st;
    if (rowptr)
        *rowptr = A->csr.rowptr;
    if (colind)
        *colind = A->csr.colind;
    if (val)
        *val = A->csr.val;
    return SPK_OK;
}

/* A's layout becomes be's state (made on ctx), the previous one destroyed. */
static void install(spk_context *ctx, spk_matrix *A, const spk_spmv_backend *be, void *state,
                    const char *why)
{
    if (A->be)
        A->be->destroy(A->state);
    A->be = be;
    A->state = state;
    A->layout_gen++;
    A->ctx_prepared = ctx;
    snprintf(A->format_reason, sizeof A->format_reason, "%s", why);
}

spk_status spk_matrix_prepare(spk_context *ctx, spk_matrix *A, spk_format fmt)
{
    if (!ctx || !matrix_ok(A))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_prepare: NULL or destroyed matrix");
    if ((unsigned)fmt >= SPK_FMT_COUNT)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_prepare: unknown format %d", (int)fmt);
    if (fmt != SPK_FMT_AUTO && A->be && A->be->format == fmt && A->be->device == ctx->device &&
        A->ctx_prepared == ctx)
        return SPK_OK;              /* prepared as asked: no choice to make (nor its statistics) */
    char why[sizeof A->format_reason];
    spk_matrix_shape_info(A);
    const spk_format chosen = spk_select_format(&A->info, ctx->device, why, sizeof why);
    if (fmt == SPK_FMT_AUTO)
        fmt = chosen;
    else if (fmt != chosen)
        snprintf(why, sizeof why, "%s: asked for (auto would pick %s)", spk_format_str(fmt),
                 spk_format_str(chosen));
    else
        snprintf(why, sizeof why, "%s: asked for (auto picks it too)", spk_format_str(fmt));
    if (A->be && A->be->format == fmt && A->be->device == ctx->device && A->ctx_prepared == ctx)
        return SPK_OK;
    const spk_spmv_backend *be = spk_backend_find(fmt, ctx->device);
    if (!be)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "no %s backend for device %s%s",
                        spk_format_str(fmt), spk_device_str(ctx->device),
                        fmt == SPK_FMT_DIA ? ": dia runs on the cpu only (on the gpu, ell or "
                        "auto serve the same matrices)" : "");
    void *state = NULL;
    spk_status st = spk_matrix_host_values(ctx, A);     /* a new layout reads the values */
    if (st || (st = be->setup(ctx, &A->csr, &state)))
        return st;
    install(ctx, A, be, state, why);
    return SPK_OK;
}

spk_status spk_matrix_adopt_layout(spk_context *ctx, spk_matrix *A,
                                   const struct spk_spmv_backend *be, void *state,
                                   const char *why)
{
    if (!ctx || !matrix_ok(A) || !be || !state)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_adopt_layout: NULL argument");
    install(ctx, A, be, state, why);
    return SPK_OK;
}

const char *spk_matrix_format_reason(const spk_matrix *A)
{
    return matrix_ok(A) && A->be ? A->format_reason : "";
}

spk_format spk_matrix_format(const spk_matrix *A)
{
    return matrix_ok(A) && A->be ? A->be->format : SPK_FMT_AUTO;
}

const char *spk_matrix_backend_name(const spk_matrix *A)
{
    return matrix_ok(A) && A->be ? A->be->name : "none";
}

spk_status spk_matrix_spmv(spk_context *ctx, spk_matrix *A, double alpha, const double *x,
                           double beta, double *y)
{
    if (!ctx || !matrix_ok(A) || (!x && A->csr.ncols) || (!y && A->csr.nrows))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_spmv: NULL argument or destroyed matrix");
    spk_status st = SPK_OK;
    /* a layout of another context: the same format again, or the device's own choice where
     * that format has no backend on this device (dia, chosen on the CPU, used from the GPU) */
    if (!A->be || A->ctx_prepared != ctx || A->be->device != ctx->device)
        st = spk_matrix_prepare(ctx, A, A->be && spk_backend_find(A->be->format, ctx->device)
                                            ? A->be->format : SPK_FMT_AUTO);
    if (st)
        return st;
    const spk_vec_ops *ops = spk_vec_ops_for(ctx->device);
    /* a distributed matrix: the global operator on this rank's rows (x and y its rows) */
    const spk_spmv_backend *be = A->dist ? A->dist->be : A->be;
    void *state = A->dist ? A->dist->state : A->state;
    if (ops->device == SPK_DEVICE_CPU)
        return be->spmv(ctx, state, alpha, x, beta, y);
    /* Device temporaries for x and y, made at the first call and kept: a time loop that
     * applies A every step allocates nothing after its first pass. */
    const int64_t m = A->csr.nrows, n = A->csr.ncols;
    if (A->ctx_spmv != ctx)
        spk_matrix_spmv_release(A);
    if (!A->spmv_x) {
        A->ctx_spmv = ctx;
        A->spmv_ops = ops;
        if ((st = ops->alloc(ctx, n, &A->spmv_x)) || (st = ops->alloc(ctx, m, &A->spmv_y))) {
            spk_matrix_spmv_release(A);
            return st;
        }
    }
    if (!(st = ops->upload(ctx, n, x, A->spmv_x)) &&
        !(beta != 0.0 && (st = ops->upload(ctx, m, y, A->spmv_y))) &&
        !(st = be->spmv(ctx, state, alpha, A->spmv_x, beta, A->spmv_y)))
        st = ops->download(ctx, m, A->spmv_y, y);
    return st;
}

spk_status spk_matrix_spmv_device(spk_context *ctx, spk_matrix *A, double alpha,
                                  const double *d_x, double beta, double *d_y)
{
    if (!ctx || !matrix_ok(A) || (!d_x && A->csr.ncols) || (!d_y && A->csr.nrows))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_spmv_device: NULL argument or destroyed "
                        "matrix");
    spk_status st = SPK_OK;
    if (!A->be || A->ctx_prepared != ctx || A->be->device != ctx->device)
        st = spk_matrix_prepare(ctx, A, A->be && spk_backend_find(A->be->format, ctx->device)
                                            ? A->be->format : SPK_FMT_AUTO);
    if (st)
        return st;
    return A->dist ? A->dist->be->spmv(ctx, A->dist->state, alpha, d_x, beta, d_y)
                   : A->be->spmv(ctx, A->state, alpha, d_x, beta, d_y);
}

/* The context may be gone already (a matrix can outlive it, as its layout can): the vectors
 * are freed through the table alone, which needs no context to free. */
void spk_matrix_spmv_release(spk_matrix *A)
{
    if (A->spmv_ops) {
        A->spmv_ops->free(NULL, A->spmv_x);
        A->spmv_ops->free(NULL, A->spmv_y);
    }
    A->spmv_x = A->spmv_y = NULL;
    A->ctx_spmv = NULL;
    A->spmv_ops = NULL;
}
