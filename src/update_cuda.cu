/* src/update_cuda.cu -- value updates on the GPU: the new values cross the bus once, everything
 * else happens on the device, so an update costs about the copy of its values (examples/heat.c;
 * measured in docs/benchmarks.md).
 *
 * spk_matrix_update_values (src/update.c) comes here for a matrix whose layout lives on the
 * context's GPU. The first such update makes the matrix's device side (spk_matrix_dev): the
 * gather map of src/update.c uploaded (nothing for the identity map), a staging array of the
 * nnz_in input values and an array of the nnz canonical values; and it lets the backend make
 * what its refill needs (backend.update_device with no values: a device rowptr, HYB's tail
 * offsets). All of it is counted and made before anything is written: a failure is reported
 * with the matrix unchanged, and its later updates take the host path. Every update then
 *   1. copies val into the staging array (host-to-device, or device-to-device: after it the
 *      caller's array is not read again);
 *   2. checks the staging array for NaN/Inf and reads the first bad index back: a refused
 *      update has written nothing but the staging array;
 *   3. gathers the canonical values: entry p is the sum of its input entries in input order,
 *      starting from the first -- the sum src/update.c computes on the host, and the one
 *      spk_csr_from_coo made at assembly, bit for bit. For the identity map the staging and
 *      canonical arrays swap roles instead;
 *   4. refills the layout from the canonical values (backend.update_device) and waits once.
 * The host values (A->csr.val) are then stale (A->host_stale) and downloaded only when read
 * (spk_matrix_host_values); the Jacobi diagonal is built from the device values
 * (spk_matrix_dev_diagonal, used by src/solve.c).
 *
 * Cost per update: the copy of 8 nnz_in bytes, one synchronisation for the check, then device
 * passes over ~8 (2 nnz_in + 2 nnz) bytes of values and map plus the layout's refill. Memory,
 * made at the first update: 8 (nnz_in + nnz) bytes of values, 8 (nnz + 1 + nnz_in) bytes of
 * map (none for the identity), then 8 nrows for the diagonal's positions at the first
 * refresh, and each layout's index data (8 (nrows + 1) for ELL and JDS, twice that for HYB). */
#include "../kernels/cuda_common.h"

#include <utility>

struct spk_matrix_dev {
    spk_context *ctx;                   /* made on it (compared, never dereferenced)           */
    int64_t      nnz_in, nnz;
    int64_t     *gather_ptr;            /* nnz + 1, or NULL for the identity map               */
    int64_t     *gather_src;            /* nnz_in                                              */
    double      *stage;                 /* nnz_in: the caller's values, checked before use     */
    double      *val;                   /* nnz: the canonical values                           */
    int          borrowed;              /* val is another's array (spk_matrix_dev_borrow): no
                                           stage, val never freed here                         */
    int64_t     *diag_pos;              /* nrows: position of a_ii in val or -1; made at the
                                           first device Jacobi refresh                         */
};

/* ---- kernels ------------------------------------------------------------------------------- */

/* The first index k with v[k] NaN or Inf into *first_bad (atomicMin on an integer is exact:
 * the smallest such k whatever order the threads run in). */
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
upd_check_kernel(int64_t n, const double *__restrict__ v,
                 unsigned long long *__restrict__ first_bad)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x)
        if (!isfinite(v[k]))
            atomicMin(first_bad, (unsigned long long)k);
}

/* a_p = src[gs[gp[p]]] + src[gs[gp[p] + 1]] + ..., left to right: the order spk_csr_from_coo
 * summed the duplicates in (gather_src lists each entry's inputs in input order). */
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
upd_gather_kernel(int64_t nnz, const int64_t *__restrict__ gp, const int64_t *__restrict__ gs,
                  const double *__restrict__ src, double *__restrict__ val)
{
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < nnz;
         p += (int64_t)gridDim.x * blockDim.x) {
        int64_t q = __ldg(&gp[p]);
        const int64_t end = __ldg(&gp[p + 1]);
        double v = q < end ? __ldg(&src[__ldg(&gs[q])]) : 0.0;
        for (q++; q < end; q++)
            v += __ldg(&src[__ldg(&gs[q])]);
        val[p] = v;
    }
}

/* d_i = a_ii, 0 where the row has no diagonal entry (spk_csr_diagonal's rule). */
__global__ void __launch_bounds__(SPK_CUDA_BLOCK)
upd_diag_kernel(int64_t n, const int64_t *__restrict__ pos, const double *__restrict__ val,
                double *__restrict__ d)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t p = __ldg(&pos[i]);
        d[i] = p >= 0 ? __ldg(&val[p]) : 0.0;
    }
}

/* ---- the device side of a matrix ------------------------------------------------------------ */

spk_status spk_cuda_upload_wait(spk_context *ctx, void **d, const void *host, size_t bytes,
                                const char *what)
{
    spk_status st = spk_cuda_upload_new(ctx, d, host, bytes, what);
    if (!st && *d)
        st = spk_cuda(ctx, cudaStreamSynchronize(((spk_cuda_state *)ctx->cuda)->stream),
                      "upload of %zu bytes for %s", bytes, what);
    if (st) {
        (void)cudaFree(*d);
        *d = NULL;
    }
    return st;
}

extern "C" void spk_matrix_dev_free(spk_matrix_dev *D)
{
    if (!D)
        return;
    (void)cudaFree(D->gather_ptr);
    (void)cudaFree(D->gather_src);
    (void)cudaFree(D->stage);
    if (!D->borrowed)
        (void)cudaFree(D->val);
    (void)cudaFree(D->diag_pos);
    spk_free(D);
}

/* Everything but the diagonal's positions: the arrays, and the map uploaded. */
static spk_status dev_make(spk_context *ctx, const spk_matrix *A, spk_matrix_dev **out)
{
    *out = NULL;
    spk_matrix_dev *D = (spk_matrix_dev *)spk_calloc(ctx, 1, sizeof *D);
    if (!D)
        return spk_fail(ctx, SPK_ERR_NOMEM, "value update on the GPU: out of host memory");
    D->ctx = ctx;
    D->nnz_in = A->nnz_in;
    D->nnz = A->csr.nnz;
    const size_t in_bytes = (size_t)A->nnz_in * sizeof(double);
    spk_status st;
    if ((st = spk_cuda_malloc(ctx, &D->stage, in_bytes, "value-update staging")) ||
        (st = spk_cuda_malloc(ctx, &D->val, (size_t)A->csr.nnz * sizeof(double),
                              "canonical values on the GPU")))
        goto fail;
    if (A->gather_ptr &&
        ((st = spk_cuda_upload_wait(ctx, &D->gather_ptr, A->gather_ptr,
                                    ((size_t)A->csr.nnz + 1) * sizeof(int64_t),
                                    "value-update map offsets")) ||
         (st = spk_cuda_upload_wait(ctx, &D->gather_src, A->gather_src,
                                    (size_t)A->nnz_in * sizeof(int64_t),
                                    "value-update map sources"))))
        goto fail;
    *out = D;
    return SPK_OK;
fail:
    spk_matrix_dev_free(D);
    return st;
}

extern "C" spk_status spk_matrix_dev_update(spk_context *ctx, spk_matrix *A, const double *val,
                                            int val_on_device, spk_dev_upd *how)
{
    *how = SPK_DEV_UPD_REFUSED;
    spk_cuda_state *cs;
    spk_status st = spk_cuda_state_of(ctx, &cs);
    if (st)
        return st;
    if (A->dev && A->dev->ctx != ctx) {       /* made on another context: start again here */
        if ((st = spk_matrix_host_values(ctx, A)))
            return st;
        spk_matrix_dev_free(A->dev);
        A->dev = NULL;
        A->dev_current = 0;
    }
    /* Everything the device path allocates, before anything is written. A failure (device
     * memory short, or an injected one) is reported with A unchanged, and A's later updates
     * take the host path, which needs no device memory: a retry succeeds. */
    if ((!A->dev && (st = dev_make(ctx, A, &A->dev))) ||
        (st = A->be->update_device(ctx, A->state, &A->csr, NULL))) {
        A->dev_off = 1;
        if (A->dev && !A->host_stale) {       /* give the memory back (keep lone values) */
            spk_matrix_dev_free(A->dev);
            A->dev = NULL;
            A->dev_current = 0;
        }
        return st;
    }
    spk_matrix_dev *D = A->dev;
    const int64_t nin = A->nnz_in, nnz = A->csr.nnz;
    const size_t bytes = (size_t)nin * sizeof(double);
    /* borrowed values: the update from them is in place (checked there: their owner wrote
     * them, so a NaN is reported with A's previous values gone); from other values, A's own
     * arrays first, and the borrowed array is no longer A's (a layout that reads it in place
     * is refilled from A's new values, as any layout is) */
    const int in_place = D->borrowed && val == D->val;
    if (D->borrowed && !in_place) {
        double *stage = NULL, *own = NULL;
        if ((st = spk_cuda_malloc(ctx, &stage, bytes > 0 ? bytes : 1, "value-update staging")) ||
            (st = spk_cuda_malloc(ctx, &own, (size_t)(nnz > 0 ? nnz : 1) * sizeof(double),
                                  "canonical values on the GPU"))) {
            (void)cudaFree(stage);
            return st;                        /* A unchanged: REFUSED */
        }
        D->stage = stage;
        D->val = own;
        D->borrowed = 0;
        A->dev_borrowed = 0;
    }
    double *checked = in_place ? D->val : D->stage;

    /* 1. the values into the staging array (cudaMemcpyDefault: host, pinned, managed or device
     *    memory alike); 2. the check, read back before anything else is written */
    if ((!in_place &&
         (st = spk_cuda(ctx, cudaMemcpyAsync(D->stage, val, bytes, cudaMemcpyDefault, cs->stream),
                        "spk_matrix_update_values: copy of %lld values from %s memory",
                        (long long)nin, val_on_device ? "device" : "host"))) ||
        (st = spk_cuda(ctx, cudaMemsetAsync(&cs->d_scratch->flag, 0xff,
                                            sizeof(unsigned long long), cs->stream),
                       "spk_matrix_update_values: resetting the check")))
        return st;
    upd_check_kernel<<<spk_cuda_grid(cs, nin, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(
        nin, checked, &cs->d_scratch->flag);
    if ((st = spk_cuda_launched(ctx, "upd_check_kernel")) ||
        (st = spk_cuda(ctx, cudaMemcpyAsync(&cs->h_scratch->flag, &cs->d_scratch->flag,
                                            sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                            cs->stream),
                       "spk_matrix_update_values: reading the check back")) ||
        (st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream),
                       "spk_matrix_update_values: copy and check of %lld values", (long long)nin)))
        return st;
    const unsigned long long first = cs->h_scratch->flag;
    if (first != ~0ull) {
        double v = 0.0;
        if ((st = spk_cuda_download_bytes(ctx, &v, checked + first, sizeof v)))
            return st;
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_update_values: val[%lld] = %g",
                        (long long)first, v);
    }

    /* 3. the canonical values: from here on the update is taken */
    if (in_place) {
        /* they are in place already */
    } else if (!D->gather_ptr) {
        std::swap(D->stage, D->val);          /* identity: the checked values are the values */
    } else {
        upd_gather_kernel<<<spk_cuda_grid(cs, nnz, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0,
                            cs->stream>>>(nnz, D->gather_ptr, D->gather_src, D->stage, D->val);
        if ((st = spk_cuda_launched(ctx, "upd_gather_kernel"))) {
            /* the device values are lost; the host path takes val again from the start */
            A->dev_current = 0;
            *how = SPK_DEV_UPD_HOST;
            return st;
        }
    }
    A->dev_current = 1;
    A->host_stale = 1;
    /* 4. the layout, then the one wait (which also reports a fault of the kernels above) */
    st = A->be->update_device(ctx, A->state, &A->csr, D->val);
    if (!st)
        st = spk_cuda(ctx, cudaStreamSynchronize(cs->stream),
                      "spk_matrix_update_values: the update on the GPU");
    *how = st ? SPK_DEV_UPD_NO_LAYOUT : SPK_DEV_UPD_DONE;
    return st;
}

extern "C" spk_status spk_matrix_dev_borrow(spk_context *ctx, spk_matrix *A, double *d_val)
{
    if (A->gather_ptr || A->nnz_in != A->csr.nnz || !A->be || A->ctx_prepared != ctx ||
        (A->dev && A->dev->ctx != ctx))
        return SPK_ERR_UNSUPPORTED;
    spk_matrix_dev *D = A->dev;
    if (!D) {
        if (!(D = (spk_matrix_dev *)spk_calloc(ctx, 1, sizeof *D)))
            return spk_fail(ctx, SPK_ERR_NOMEM, "values on the GPU: out of host memory");
        D->ctx = ctx;
        D->nnz_in = A->nnz_in;
        D->nnz = A->csr.nnz;
        A->dev = D;
    } else if (!D->borrowed) {                /* its own arrays go: the values are d_val's */
        (void)cudaFree(D->stage);
        (void)cudaFree(D->val);
        D->stage = NULL;
    }
    D->val = d_val;
    D->borrowed = 1;
    A->dev_borrowed = 1;
    A->dev_current = 1;
    A->host_stale = 1;
    A->info_stale = 1;
    A->version++;
    return SPK_OK;
}

/* A's columns from A->dev_colind where they are on the device only (A->pattern_stale): a
 * plain cudaMemcpy, as the values' download below */
static spk_status fetch_pattern(spk_context *ctx, spk_matrix *A)
{
    if (!A->pattern_stale)
        return SPK_OK;
    const size_t nnz = (size_t)A->csr.nnz;
    int32_t *c = A->csr.colind ? A->csr.colind
                               : (int32_t *)spk_malloc(ctx, nnz > 0 ? nnz : 1, sizeof *c);
    if (!c)
        return spk_fail(ctx, SPK_ERR_NOMEM, "the columns of %zu entries: out of host memory",
                        nnz);
    A->csr.colind = c;
    spk_status st = spk_cuda(ctx, cudaMemcpy(c, A->dev_colind, nnz * sizeof *c,
                                             cudaMemcpyDeviceToHost),
                             "download of the columns of %zu entries", nnz);
    if (!st)
        A->pattern_stale = 0;
    return st;
}

/* Position of a_ii in each row (binary search in the sorted columns), on the host, then
 * uploaded: made once, at the first refresh from device values. */
static spk_status diag_positions(spk_context *ctx, const spk_csr *A, int64_t n,
                                 spk_matrix_dev *D)
{
    int64_t *pos = (int64_t *)spk_malloc(ctx, (size_t)n, sizeof *pos);
    if (!pos)
        return spk_fail(ctx, SPK_ERR_NOMEM, "positions of %lld diagonal entries: out of host "
                        "memory", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        int64_t lo = A->rowptr[i], hi = A->rowptr[i + 1];
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (A->colind[mid] < i)
                lo = mid + 1;
            else
                hi = mid;
        }
        pos[i] = lo < A->rowptr[i + 1] && A->colind[lo] == i ? lo : -1;
    }
    spk_status st = spk_cuda_upload_wait(ctx, &D->diag_pos, pos, (size_t)n * sizeof *pos,
                                         "positions of the diagonal");
    spk_free(pos);
    return st;
}

extern "C" spk_status spk_matrix_dev_diagonal(spk_context *ctx, spk_matrix *A, double *d_diag,
                                              int *done)
{
    *done = 0;
    spk_matrix_dev *D = A->dev;
    if (!D || !ctx || D->ctx != ctx || !ctx->cuda || !A->dev_current)
        return SPK_OK;                        /* the host's diagonal, as before any update */
    spk_cuda_state *cs = (spk_cuda_state *)ctx->cuda;
    const int64_t n = A->csr.nrows < A->csr.ncols ? A->csr.nrows : A->csr.ncols;
    spk_status st;
    if (n > 0) {                              /* never launch a zero-size grid */
        if (!D->diag_pos && ((st = fetch_pattern(ctx, A)) ||
                             (st = diag_positions(ctx, &A->csr, n, D))))
            return st;
        upd_diag_kernel<<<spk_cuda_grid(cs, n, SPK_CUDA_BLOCK), SPK_CUDA_BLOCK, 0, cs->stream>>>(
            n, D->diag_pos, D->val, d_diag);
        if ((st = spk_cuda_launched(ctx, "upd_diag_kernel")))
            return st;
    }
    *done = 1;
    return SPK_OK;
}

extern "C" spk_status spk_matrix_dev_download(spk_context *ctx, spk_matrix *A)
{
    spk_status st = fetch_pattern(ctx, A);
    if (st || !A->host_stale)
        return st;
    if (!A->dev || !A->dev_current)
        return spk_fail(ctx, SPK_ERR_CUDA, "the matrix's values were lost by a failed update on "
                        "the GPU: update them again");
    if (A->csr.nnz == 0)
        return SPK_OK;
    /* A plain cudaMemcpy on the legacy default stream: it waits for the work of every context
     * (their streams are blocking ones) and needs none, so it works after ctx is gone. */
    return spk_cuda(ctx, cudaMemcpy(A->csr.val, A->dev->val, (size_t)A->csr.nnz * sizeof(double),
                                    cudaMemcpyDeviceToHost),
                    "download of the %lld values updated on the GPU", (long long)A->csr.nnz);
}
