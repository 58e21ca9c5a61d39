/* src/update.c -- new values for a matrix whose pattern stays (the finite-element time step or
 * Newton step), and matrices made from arrays in device memory.
 *
 * An update is a copy, never a re-analysis: at creation spk_matrix_from_coo/from_csr keep, for
 * each canonical entry, the input entries that were summed into it (gather_ptr/gather_src);
 * the update gathers them in parallel, in the same order the assembly summed duplicates, so
 * an updated matrix is bitwise the matrix a fresh assembly of the same arrays would give. Then the prepared layout refills its values in place
 * (backend.update: the CPU layouts rewrite their value arrays, the CUDA ones upload them).
 * Cost: one pass over the input, one over nnz, and the upload of the layout's values.
 *
 * A matrix whose layout lives on this context's GPU takes the device path instead
 * (src/update_cuda.cu): the values are copied up once and checked, gathered and refilled on
 * the device; the host values go stale (host_stale) and are downloaded only when something
 * reads them (spk_matrix_host_values). The host path below stays for CPU contexts, matrices
 * not prepared (or prepared elsewhere), and a GPU short of memory for the device path.
 *
 * The row-length statistics cannot change; `symmetric` and `diag_positive` can, and are
 * recomputed when next read (spk_matrix_info_of), not during the update. */
#include "spk_internal.h"

#include <math.h>
#include <string.h>

/* Position of column j in row i of A (columns sorted and unique), or -1. */
static int64_t csr_position(const spk_csr *A, int32_t i, int32_t j)
{
    int64_t lo = A->rowptr[i], hi = A->rowptr[i + 1];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (A->colind[mid] < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < A->rowptr[i + 1] && A->colind[lo] == j ? lo : -1;
}

spk_status spk_csr_source_map(spk_context *ctx, const spk_csr *A, const spk_coo *coo,
                              int64_t **gather_ptr, int64_t **gather_src)
{
    *gather_ptr = *gather_src = NULL;
    int identity = coo->nnz == A->nnz;
    for (int64_t k = 0; identity && k < coo->nnz; k++)
        identity = csr_position(A, coo->row[k], coo->col[k]) == k;
    if (identity)
        return SPK_OK;
    int64_t *m = spk_malloc(ctx, (size_t)coo->nnz, sizeof *m);
    int64_t *ptr = spk_calloc(ctx, (size_t)A->nnz + 1, sizeof *ptr);
    int64_t *src = spk_malloc(ctx, (size_t)coo->nnz, sizeof *src);
    if (!m || !ptr || !src) {
        spk_free(m);
        spk_free(ptr);
        spk_free(src);
        return spk_fail(ctx, SPK_ERR_NOMEM, "value-update map of %lld entries: out of memory",
                        (long long)coo->nnz);
    }
#pragma omp parallel for schedule(static) if(coo->nnz > 65536)
    for (int64_t k = 0; k < coo->nnz; k++)
        m[k] = csr_position(A, coo->row[k], coo->col[k]);   /* every entry is in A: >= 0 */
    /* invert by a stable counting sort: each canonical entry lists its sources in input order,
     * so the update can gather in parallel and still sum as the assembly did */
    for (int64_t k = 0; k < coo->nnz; k++)
        ptr[m[k] + 1]++;
    for (int64_t p = 0; p < A->nnz; p++)
        ptr[p + 1] += ptr[p];
    for (int64_t k = 0; k < coo->nnz; k++)
        src[ptr[m[k]]++] = k;
    for (int64_t p = A->nnz; p > 0; p--)     /* ptr[p] was advanced to the end of entry p */
        ptr[p] = ptr[p - 1];
    ptr[0] = 0;
    spk_free(m);
    *gather_ptr = ptr;
    *gather_src = src;
    return SPK_OK;
}

spk_status spk_matrix_host_values(spk_context *ctx, spk_matrix *A)
{
    if (!A->host_stale && !A->pattern_stale)
        return SPK_OK;
    spk_status st = spk_matrix_dev_download(ctx, A);
    if (!st)
        A->host_stale = 0;
    return st;
}

void spk_matrix_shape_info(spk_matrix *A)
{
    if (A->shape_unset && spk_matrix_host_values(NULL, A) == SPK_OK) {
        spk_stats_shape(&A->csr, &A->info);
        A->shape_unset = 0;
    }
}

/* A failed download leaves the value statistics as they were (still stale); callers that
 * must know call spk_matrix_host_values first. */
const spk_matrix_info *spk_matrix_info_of(spk_matrix *A)
{
    spk_matrix_shape_info(A);
    if (A->info_stale && spk_matrix_host_values(NULL, A) == SPK_OK) {
        spk_stats_values(&A->csr, &A->info);
        A->info_stale = 0;
    }
    return &A->info;
}

const spk_matrix_info *spk_matrix_range_of(spk_matrix *A)
{
    if (A->info_stale && spk_matrix_host_values(NULL, A) == SPK_OK)
        spk_stats_range(&A->csr, &A->info);        /* info_stale stays: symmetric, diag */
    return &A->info;
}

/* The device path (src/update_cuda.cu) applies when A's layout lives on this context's GPU in
 * a backend that can refill itself from device values. */
static int device_path(const spk_context *ctx, const spk_matrix *A)
{
    return ctx->device == SPK_DEVICE_CUDA && A->nnz_in > 0 && !A->dev_off && A->be &&
           A->ctx_prepared == ctx && A->be->device == SPK_DEVICE_CUDA && A->be->update_device;
}

/* Drop the prepared layout: the next solve or spk_matrix_prepare builds it again from the
 * canonical values. */
static void drop_layout(spk_matrix *A)
{
    A->be->destroy(A->state);
    A->be = NULL;
    A->state = NULL;
    A->layout_gen++;
    A->ctx_prepared = NULL;
}

/* The host values of an update: `val` itself, or for device memory a copy in A->stage (made
 * once, at the first update from device memory). */
static spk_status update_source(spk_context *ctx, spk_matrix *A, const double *val,
                                int val_on_device, const double **src)
{
    *src = val;
    if (!val_on_device || ctx->device != SPK_DEVICE_CUDA || A->nnz_in == 0)
        return SPK_OK;               /* on a CPU context "device memory" is host memory */
    if (!A->stage) {
        A->stage = spk_malloc(ctx, (size_t)A->nnz_in, sizeof *A->stage);
        if (!A->stage)
            return spk_fail(ctx, SPK_ERR_NOMEM, "spk_matrix_update_values: host staging of "
                            "%lld values: out of memory", (long long)A->nnz_in);
    }
    spk_status st = spk_cuda_download_bytes(ctx, A->stage, val, (size_t)A->nnz_in * sizeof(double));
    *src = A->stage;
    return st;
}

spk_status spk_matrix_update_values(spk_context *ctx, spk_matrix *A, int64_t nnz,
                                    const double *val, int val_on_device)
{
    if (!ctx || !A || A->magic != SPK_MATRIX_MAGIC)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_update_values: NULL or destroyed matrix");
    if ((unsigned)val_on_device > 1)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_update_values: val_on_device = %d: 0 (host "
                        "values) or 1 (device values)", val_on_device);
    if (A->dist)                         /* the rank's rows: split, then the block's own below */
        return A->dist->update(ctx, A, nnz, val, val_on_device);
    return spk_matrix_update_local(ctx, A, nnz, val, val_on_device);
}

spk_status spk_matrix_update_local(spk_context *ctx, spk_matrix *A, int64_t nnz,
                                   const double *val, int val_on_device)
{
    if (nnz != A->nnz_in)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_update_values: %lld values given, but the "
                        "matrix was made from %lld entries (the pattern cannot change: make a "
                        "new matrix)", (long long)nnz, (long long)A->nnz_in);
    if (nnz > 0 && !val)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_update_values: val is NULL");
    spk_status st;
    if (device_path(ctx, A)) {
        spk_dev_upd how;
        st = spk_matrix_dev_update(ctx, A, val, val_on_device, &how);
        if (how == SPK_DEV_UPD_REFUSED)
            return st;                       /* A unchanged (a NaN/Inf, an unreadable val) */
        if (how != SPK_DEV_UPD_HOST) {
            A->version++;
            A->info_stale = 1;
            if (how == SPK_DEV_UPD_NO_LAYOUT)
                drop_layout(A);              /* rebuilt from the device values when next used */
            return st;
        }
        /* the device path is not available: the host path below, which takes val afresh */
    }
    const double *src;
    st = update_source(ctx, A, val, val_on_device, &src);
    if (st)
        return st;
    int64_t bad = nnz;                  /* before any write: a refused update changes nothing */
#pragma omp parallel for schedule(static) reduction(min : bad) if (nnz > 65536)
    for (int64_t k = 0; k < nnz; k++)
        if (!isfinite(src[k]) && k < bad)
            bad = k;
    if (bad < nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_update_values: val[%lld] = %g", (long long)bad,
                        src[bad]);

    double *a = A->csr.val;
    if (A->gather_ptr) {
        /* a_p = sum of the input entries of p, in input order, starting from the first (as
         * spk_csr_from_coo summed them: a_ij = v, then a_ij += v): a gather, so parallel
         * without atomics and bitwise the same as assembly (-0.0 included) */
        const int64_t *gp = A->gather_ptr, *gs = A->gather_src;
#pragma omp parallel for schedule(static) if (A->csr.nnz > 65536)
        for (int64_t p = 0; p < A->csr.nnz; p++) {
            int64_t q = gp[p];
            double v = q < gp[p + 1] ? src[gs[q]] : 0.0;
            for (q++; q < gp[p + 1]; q++)
                v += src[gs[q]];
            a[p] = v;
        }
    } else if (nnz > 0 && a != src) {        /* a borrowed CSR's own values: nothing to copy */
        memcpy(a, src, (size_t)nnz * sizeof *a);
    }
    A->version++;
    A->info_stale = 1;
    A->host_stale = 0;                       /* every value rewritten here                  */
    A->dev_current = 0;                      /* the device's, if any, are the old ones      */
    if (!A->be)
        return SPK_OK;
    if (A->ctx_prepared == ctx && (st = A->be->update(ctx, A->state, &A->csr)) == SPK_OK)
        return SPK_OK;
    /* Prepared on another context, or the refill failed: drop the layout; the next solve or
     * spk_matrix_prepare builds it again from the (updated) canonical CSR. */
    drop_layout(A);
    return st;
}

spk_status spk_matrix_from_csr_device(spk_context *ctx, int64_t nrows, int64_t ncols,
                                      const int64_t *d_rowptr, const int32_t *d_colind,
                                      const double *d_val, int base, spk_matrix **A)
{
    if (A)
        *A = NULL;
    if (!ctx || !A || !d_rowptr)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_from_csr_device: NULL argument");
    if (!spk_has_cuda())
        return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "spk_matrix_from_csr_device: no CUDA support "
                        "(not built in, or the CUDA backend libspk_cuda.so not found)");
    if (ctx->device != SPK_DEVICE_CUDA)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_from_csr_device: the context is on the %s; "
                        "device arrays need a CUDA context", spk_device_str(ctx->device));
    if (nrows < 0 || nrows > INT32_MAX)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_from_csr_device: nrows = %lld must be in "
                        "[0, 2^31)", (long long)nrows);
    /* The simplest correct path: copy the three arrays to the host and assemble as
     * spk_matrix_from_csr does (which checks them). The caller's arrays are only read. */
    int64_t *rowptr = spk_malloc(ctx, (size_t)nrows + 1, sizeof *rowptr);
    int32_t *colind = NULL;
    double *val = NULL;
    spk_status st;
    if (!rowptr)
        return spk_fail(ctx, SPK_ERR_NOMEM, "spk_matrix_from_csr_device: %lld row offsets: out of "
                        "memory", (long long)nrows + 1);
    if ((st = spk_cuda_download_bytes(ctx, rowptr, d_rowptr, ((size_t)nrows + 1) * sizeof *rowptr)))
        goto out;
    const int64_t nnz = rowptr[nrows] - rowptr[0];
    if (rowptr[0] != base || nnz < 0) {
        st = spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_from_csr_device: rowptr[0] = %lld, "
                      "rowptr[nrows] = %lld (base %d)", (long long)rowptr[0],
                      (long long)rowptr[nrows], base);
        goto out;
    }
    if (nnz > 0 && (!d_colind || !d_val)) {
        st = spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_from_csr_device: NULL colind or val");
        goto out;
    }
    colind = spk_malloc(ctx, (size_t)nnz, sizeof *colind);
    val = spk_malloc(ctx, (size_t)nnz, sizeof *val);
    if (!colind || !val) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "spk_matrix_from_csr_device: %lld entries: out of memory",
                      (long long)nnz);
        goto out;
    }
    if ((st = spk_cuda_download_bytes(ctx, colind, d_colind, (size_t)nnz * sizeof *colind)) ||
        (st = spk_cuda_download_bytes(ctx, val, d_val, (size_t)nnz * sizeof *val)))
        goto out;
    st = spk_matrix_from_csr(ctx, nrows, ncols, rowptr, colind, val, base, A);
out:
    spk_free(rowptr);
    spk_free(colind);
    spk_free(val);
    return st;
}
