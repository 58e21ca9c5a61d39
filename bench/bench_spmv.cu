/* bench/bench_spmv.cu -- SpMV y = A x on the GPU: every spk format beside cuSPARSE's generic
 * API on the same matrix and the same vectors, in one run, against the memory-bandwidth floor
 * (the figures and targets: docs/benchmarks.md).
 *
 * Per matrix (a generator spec or a .mtx file):
 *  - spk: each format's row of the backend table (spk_backend_find(fmt, SPK_DEVICE_CUDA)),
 *    setup timed on the wall clock (host conversion + upload), then spmv on device vectors of
 *    spk_vec_ops_cuda(). ELL may refuse (padding guard): reported "refused".
 *  - cuSPARSE (generic API, fp64): CSR with CUSPARSE_SPMV_ALG_DEFAULT, COO with
 *    CUSPARSE_SPMV_COO_ALG1, sliced ELL (slice 32, built here from the CSR, SELL_ALG1), and on
 *    a pattern of d x d blocks BSR (cusparseDbsrmv, row-major blocks). The
 *    work buffer is allocated and cusparseSpMV_preprocess run outside the timed region. CSR and
 *    COO use 32-bit indices and CSR 32-bit row offsets (what a user would pass; spk's CSR keeps
 *    64-bit offsets, 4 bytes more per row).
 *  - time: CUDA events on the stream between consecutive calls, median of --reps (50) after
 *    --warmup (10) calls, beta = 0.
 *  - floor: the bytes an SpMV must move in CSR -- 12 nnz + 8 (n + 1) for the matrix, 8 ncols
 *    for x read once, 8 n for y written once -- over the device-to-device copy bandwidth
 *    measured at the start of the same run (bytes read + written, cudaMemcpy of --copy-mb).
 *    GB/s and % of copy use this byte count for every format, so they compare times, not
 *    layouts.
 *  - check: each result against the CPU reference spk_csr_spmv_ref, max|y - y_ref| /
 *    max|y_ref| <= 1e-12, y pre-filled with NaN so an unwritten entry fails. A wrong result or
 *    a failed call (a setup error, a cuSPARSE refusal) prints a FAIL line and marks its row;
 *    the run goes on and exits 1 at the end. A GPU left unusable (a kernel fault is sticky)
 *    ends the run at once, and a per-phase watchdog (--timeout) ends a hung one; the --out
 *    files are rewritten after every matrix, so what was measured is kept either way.
 *  - auto: spk_select_format's choice and its time over spk's fastest format.
 *
 * Output: a table per matrix and a summary on stdout; --out FILE.json and/or --out FILE.csv
 * (repeatable) for the machine-readable results (the JSON also holds each matrix's row-length
 * statistics, "row_stats", which bench/select_sweep.py reports beside the times). Cost: about a minute on an H200 host with 16
 * cores, most of it generating the matrices and converting formats on the host.
 *
 *   bench_spmv [--inputs DIR] [--out FILE.json|FILE.csv]... [--reps 50] [--warmup 10]
 *              [--copy-mb 2048] [--timeout 120] [--fp32] [--pattern-values ones|random]
 *              [--probe] [--self-test] [MATRIX ...]
 *
 * --self-test runs, without a GPU, what can be checked on the host: the sliced ELL layout given
 * to cuSPARSE (its host SpMV against the reference) and the writers on made-up timings.
 * MATRIX: a generator spec or a .mtx path. Without any, the six default generator matrices;
 * --inputs adds every square coordinate .mtx of DIR, real, integer or pattern; a pattern's values
 * are 1, or seeded random with --pattern-values random, and its name says which. --fp32 adds each spk format's fp32
 * twin (spk_spmv_backend.fp32, the operator of mixed precision) after its fp64 row, checked to
 * MAX_REL_ERR_FP32, and a line per format with the two times; where the twin has spmv_dot32
 * (CG's q = A p, p'q on fp32 vectors, mixed precision's inner CG), a second line times it
 * against the fp64 row's spmv_dot. The choices and ratios above stay the fp64 rows'. Exit
 * codes: bench_util.h. */
#include "bench_util.h"

#include <dirent.h>
#include <stdint.h>

#define DEFAULT_REPS 50
#define DEFAULT_WARMUP 10
#define DEFAULT_COPY_MB 2048
#define DEFAULT_TIMEOUT 120          /* seconds per matrix before the watchdog ends the run */
#define MAX_REL_ERR 1e-12
/* An fp32 twin's products differ from the fp64 ones by the rounding of each a_ij (2^-24
 * relative): |y - y_ref| <= 2^-24 sum |a_ij x_j|, a few times 1e-7 of max |y| here. */
#define MAX_REL_ERR_FP32 1e-6
#define SELL_SLICE 32                /* rows per slice: one warp                               */
#define X_SEED 20261129u
#define PATTERN_SEED 20261202u       /* --pattern-values random                                */

static const char *const default_specs[] = {
    "poisson3d:150", "poisson3d27:100", "elasticity3d:60", "powerlaw:2000000:16",
    "powerlaw:4000000:4", "lame3d:48",
};

static const spk_format spk_formats[] = {SPK_FMT_CSR, SPK_FMT_COO, SPK_FMT_ELL, SPK_FMT_HYB,
                                         SPK_FMT_JDS, SPK_FMT_BSR, SPK_FMT_SELL};
#define N_SPK (sizeof spk_formats / sizeof spk_formats[0])

/* cuSPARSE's layouts and SpMV algorithms: CSR with the default algorithm (ALG1) and with
 * ALG2 (merge-based, deterministic), COO with ALG1 and ALG2 (deterministic), sliced ELL, and
 * BSR (cusparseDbsrmv, row-major blocks of the size spk detects; skipped without blocks). */
typedef enum { CUSP_CSR, CUSP_CSR2, CUSP_COO, CUSP_COO2, CUSP_SELL, CUSP_BSR } cusp_kind;
static const char *const cusp_names[] = {"csr-default", "csr-alg2", "coo-alg1", "coo-alg2",
                                         "sell32", "bsrmv"};
#define N_CUSP 6

typedef enum { ROW_OK, ROW_REFUSED, ROW_SKIPPED, ROW_ERROR } row_state;

typedef struct row {
    const char *impl;                /* "spk", "spk-fp32" (an fp32 twin, --fp32) or "cusparse"  */
    char        fmt[32];
    row_state   state;
    char        note[320];           /* why refused, skipped or failed; preprocess notes       */
    double      us, setup_ms, err;
    /* --fp32, CG's fused q = A p, p'q: the fp64 row's spmv_dot (dot_us, on fp64 x and y) and the
     * twin's spmv_dot32 (dot_us, on fp32 x and y, checked to MAX_REL_ERR_FP32); NAN if none */
    double      dot_us;
    int         fail;                /* the check against the reference failed                 */
} row;

typedef struct mresult {
    char     name[256];
    int64_t  nrows, ncols, nnz;
    double   load_s;                 /* generation or reading, wall clock                      */
    double   floor_bytes, floor_us;
    double   ell_bytes;              /* what spk's CUDA ELL moves: rows x width slots of 10 bytes
                                      * (int16 offsets; 12 where a column is 32768 or more from
                                      * its row), x and y once                                  */
    row      rows[2 * N_SPK + N_CUSP];
    int      nrows_out;
    spk_format auto_fmt;
    spk_matrix_info info;            /* the row-length statistics the choice was made from      */
    char     auto_reason[256];
    double   auto_us, best_spk_us, best_cusp_us, csr_default_us;
    const char *best_spk, *best_cusp;
    int      generated;
} mresult;

typedef struct bench {
    spk_context       *ctx;
    cudaStream_t       stream;
    cusparseHandle_t   sp;
    const spk_vec_ops *ops;
    int                reps, warmup;
    int                fp32;         /* --fp32: each spk format's fp32 twin beside it           */
    int                pattern_random; /* --pattern-values random: a pattern file's values
                                      * seeded uniform in [0.5, 1.5) instead of 1             */
    double             copy_gbs;
    unsigned           timeout;
    int                failures;
} bench;

/* The matrix of one run and its vectors. */
typedef struct mrun {
    spk_matrix *M;
    const spk_csr *A;
    double *x, *yref, *y;            /* host                                                    */
    double *d_x, *d_y;               /* device (spk vector ops)                                 */
    double yref_max;
    /* --fp32: x rounded to float and a float y on the device (doubles holding the floats), and
     * a dot sink's out, counter and partials */
    double *d_x32, *d_y32, *d_out, *d_count, *d_part;
} mrun;

/* ---- checks -------------------------------------------------------------------------------- */

/* max|y - y_ref| / max|y_ref| (a zero y_ref: the absolute error); Inf if any y is not finite. */
static double rel_err(const double *y, const double *ref, int64_t n, double ref_max)
{
    double e = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(y[i]))
            return INFINITY;
        double d = fabs(y[i] - ref[i]);
        e = d > e ? d : e;
    }
    return ref_max > 0.0 ? e / ref_max : e;
}

/* A call that failed: the row says why, the run goes on if the GPU still works (a fault in a
 * kernel is sticky: then nothing after it can run, and the program ends here). */
static void row_error(bench *B, row *r, const char *what, const char *msg)
{
    r->state = ROW_ERROR;
    r->fail = 1;
    B->failures++;
    snprintf(r->note, sizeof r->note, "%s", msg);
    printf("FAIL %s: %s\n", what, msg);
    fflush(stdout);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess)
        bench_die(BENCH_EXIT_SYSTEM, "%s left the GPU unusable: %s (%s)", what, cudaGetErrorString(e),
                  cudaGetErrorName(e));
    (void)cudaGetLastError();
}

/* Fill y with NaN, run one SpMV, bring y back and compare it with the reference. launch()
 * returns 1 on success, else 0 with the reason in err. Returns 0 when the call failed. */
template <class F>
static int check_result(bench *B, mrun *R, row *r, const char *what, const char *err, F launch,
                        double tol = MAX_REL_ERR)
{
    bench_spk(B->ctx, B->ops->fill(B->ctx, R->A->nrows, NAN, R->d_y), "fill y with NaN");
    if (!launch()) {
        row_error(B, r, what, err);
        return 0;
    }
    bench_spk(B->ctx, B->ops->download(B->ctx, R->A->nrows, R->d_y, R->y), "download of y");
    r->err = rel_err(R->y, R->yref, R->A->nrows, R->yref_max);
    if (!(r->err <= tol)) {
        r->fail = 1;
        B->failures++;
        printf("FAIL %s: relative error %.3e > %.0e against spk_csr_spmv_ref\n", what, r->err,
               tol);
    }
    return 1;
}

/* ---- spk formats --------------------------------------------------------------------------- */

/* CG's fused product on row `be`: spmv_dot on fp64 vectors (fp64 row), or spmv_dot32 on fp32
 * ones (a twin that has it; its y checked against the reference to MAX_REL_ERR_FP32). */
static void time_fused(bench *B, mrun *R, const spk_spmv_backend *be, void *state, int fp32,
                       const char *what, row *r)
{
    spk_dot_sink sink = {NULL, R->d_out, (uint32_t *)R->d_count, R->d_part};
    if (!fp32 && be->spmv_dot) {
        r->dot_us = bench_time_us(B->stream, B->warmup, B->reps, [&]() {
            bench_spk(B->ctx, be->spmv_dot(B->ctx, state, R->d_x, R->d_y, &sink), what);
        });
        return;
    }
    if (!fp32 || !be->spmv_dot32)
        return;
    const float *x32 = (const float *)(void *)R->d_x32;
    float *y32 = (float *)(void *)R->d_y32;
    bench_spk(B->ctx, be->spmv_dot32(B->ctx, state, x32, y32, &sink), what);
    const int64_t m = R->A->nrows;
    float *h = (float *)bench_malloc((size_t)m + 2, sizeof *h);
    bench_cuda(cudaMemcpy(h, y32, (size_t)m * sizeof *h, cudaMemcpyDeviceToHost), "y32");
    double e = 0.0;
    for (int64_t i = 0; i < m; i++) {
        const double d = fabs((double)h[i] - R->yref[i]);
        e = isfinite((double)h[i]) ? (d > e ? d : e) : INFINITY;
    }
    e /= R->yref_max > 0.0 ? R->yref_max : 1.0;
    free(h);
    if (!(e <= MAX_REL_ERR_FP32)) {
        r->fail = 1;
        B->failures++;
        fprintf(stderr, "bench_spmv: %s: spmv_dot32 max rel err %.2e above %.0e\n", what, e,
                MAX_REL_ERR_FP32);
        return;
    }
    r->dot_us = bench_time_us(B->stream, B->warmup, B->reps, [&]() {
        bench_spk(B->ctx, be->spmv_dot32(B->ctx, state, x32, y32, &sink), what);
    });
}

/* fp32: the format's fp32 twin (spk_spmv_backend.fp32) instead of its fp64 row. */
static void run_spk(bench *B, mrun *R, const char *mname, spk_format fmt, int fp32, row *r)
{
    const spk_spmv_backend *be = spk_backend_find(fmt, SPK_DEVICE_CUDA);
    if (be && fp32)
        be = be->fp32;
    r->impl = fp32 ? "spk-fp32" : "spk";
    snprintf(r->fmt, sizeof r->fmt, "%s", spk_format_str(fmt));
    if (!be) {
        r->state = ROW_SKIPPED;
        snprintf(r->note, sizeof r->note, "no cuda %sbackend for %s", fp32 ? "fp32 " : "",
                 spk_format_str(fmt));
        return;
    }
    bench_watchdog(B->timeout, "%s: spk %s", mname, be->name);
    void *state = NULL;
    double t0 = bench_now();
    spk_status st = be->setup(B->ctx, R->A, &state);
    if (!st)
        bench_cuda(cudaStreamSynchronize(B->stream), "synchronize after setup");
    r->setup_ms = 1e3 * (bench_now() - t0);
    if (st == SPK_ERR_UNSUPPORTED) {
        r->state = ROW_REFUSED;
        snprintf(r->note, sizeof r->note, "%s", spk_last_error(B->ctx));
        return;
    }
    char what[320], err[SPK_MSG_LEN] = "";
    snprintf(what, sizeof what, "%s: spk %s", mname, be->name);
    if (st) {
        snprintf(err, sizeof err, "setup: %s: %s", spk_status_str(st), spk_last_error(B->ctx));
        row_error(B, r, what, err);
        return;
    }
    auto call = [&]() {
        spk_status s = be->spmv(B->ctx, state, 1.0, R->d_x, 0.0, R->d_y);
        if (s)
            snprintf(err, sizeof err, "spmv: %s: %s", spk_status_str(s), spk_last_error(B->ctx));
        return s == SPK_OK;
    };
    r->dot_us = NAN;
    if (check_result(B, R, r, what, err, call, fp32 ? MAX_REL_ERR_FP32 : MAX_REL_ERR)) {
        r->us = bench_time_us(B->stream, B->warmup, B->reps, [&]() {
            if (!call())
                bench_die(BENCH_EXIT_SYSTEM, "%s: %s", what, err);
        });
        r->state = ROW_OK;
        if (B->fp32 && R->A->nrows == R->A->ncols)
            time_fused(B, R, be, state, fp32, what, r);
    }
    be->destroy(state);
}

/* ---- cuSPARSE ------------------------------------------------------------------------------ */

/* Device arrays of one cuSPARSE layout, freed together. */
typedef struct cusp_mat {
    void *d[4];
    cusparseSpMatDescr_t mat;
    void *buf;
} cusp_mat;

static void *upload(const void *host, size_t bytes, const char *what)
{
    void *d = NULL;
    bench_cuda(cudaMalloc(&d, bytes ? bytes : 8), what);
    if (bytes)
        bench_cuda(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), what);
    return d;
}

/* CSR with 32-bit offsets and indices (nnz < 2^31 is checked by the caller). The three
 * builders return the status of the descriptor's creation. */
static cusparseStatus_t cusp_csr(const spk_csr *A, cusp_mat *m)
{
    int32_t *rp = (int32_t *)bench_malloc((size_t)A->nrows + 1, sizeof *rp);
    for (int64_t i = 0; i <= A->nrows; i++)
        rp[i] = (int32_t)A->rowptr[i];
    m->d[0] = upload(rp, ((size_t)A->nrows + 1) * sizeof *rp, "cuSPARSE CSR row offsets");
    m->d[1] = upload(A->colind, (size_t)A->nnz * sizeof(int32_t), "cuSPARSE CSR columns");
    m->d[2] = upload(A->val, (size_t)A->nnz * sizeof(double), "cuSPARSE CSR values");
    free(rp);
    return cusparseCreateCsr(&m->mat, A->nrows, A->ncols, A->nnz, m->d[0], m->d[1], m->d[2],
                             CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                             CUDA_R_64F);
}

static cusparseStatus_t cusp_coo(const spk_csr *A, cusp_mat *m)
{
    int32_t *ri = (int32_t *)bench_malloc((size_t)A->nnz, sizeof *ri);
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            ri[p] = (int32_t)i;
    m->d[0] = upload(ri, (size_t)A->nnz * sizeof *ri, "cuSPARSE COO rows");
    m->d[1] = upload(A->colind, (size_t)A->nnz * sizeof(int32_t), "cuSPARSE COO columns");
    m->d[2] = upload(A->val, (size_t)A->nnz * sizeof(double), "cuSPARSE COO values");
    free(ri);
    return cusparseCreateCoo(&m->mat, A->nrows, A->ncols, A->nnz, m->d[0], m->d[1], m->d[2],
                             CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F);
}

/* Sliced ELL on the host, slice C rows: slice s holds rows sC .. sC + C - 1 column-major,
 * padded to its longest row; slot k of row r at off[s] + k C + (r - sC). Padding: column -1,
 * value 0 (cuSPARSE's layout, as in NVIDIA's spmv_sell example). The last slice is padded to
 * C rows. off has nslices + 1 entries; *total = off[nslices] slots. */
typedef struct sell_host {
    int64_t  C, nslices, total;
    int64_t *off;
    int32_t *col;
    double  *val;
} sell_host;

static void sell_build(const spk_csr *A, int64_t C, sell_host *h)
{
    const int64_t n = A->nrows, ns = (n + C - 1) / C;
    int64_t *off = (int64_t *)bench_malloc((size_t)ns + 1, sizeof *off);
    for (int64_t s = 0; s < ns; s++) {
        int64_t w = 0, end = (s + 1) * C < n ? (s + 1) * C : n;
        for (int64_t i = s * C; i < end; i++) {
            int64_t len = A->rowptr[i + 1] - A->rowptr[i];
            w = len > w ? len : w;
        }
        off[s + 1] = off[s] + w * C;
    }
    const int64_t total = off[ns];
    int32_t *col = (int32_t *)bench_malloc((size_t)total, sizeof *col);
    double *val = (double *)bench_malloc((size_t)total, sizeof *val);
    for (int64_t k = 0; k < total; k++)
        col[k] = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t s = i / C, base = off[s] + (i - s * C);
        for (int64_t p = A->rowptr[i], k = 0; p < A->rowptr[i + 1]; p++, k++) {
            col[base + k * C] = A->colind[p];
            val[base + k * C] = A->val[p];
        }
    }
    h->C = C;
    h->nslices = ns;
    h->total = total;
    h->off = off;
    h->col = col;
    h->val = val;
}

static void sell_free(sell_host *h)
{
    free(h->off);
    free(h->col);
    free(h->val);
    memset(h, 0, sizeof *h);
}

/* y = A x from the host SELL layout: the self-test's check of the layout cuSPARSE is given. */
static void sell_spmv_host(const sell_host *h, int64_t n, const double *x, double *y)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t s = i / h->C, w = (h->off[s + 1] - h->off[s]) / h->C;
        double sum = 0.0;
        for (int64_t k = 0; k < w; k++) {
            int64_t q = h->off[s] + k * h->C + (i - s * h->C);
            if (h->col[q] >= 0)
                sum += h->val[q] * x[h->col[q]];
        }
        y[i] = sum;
    }
}

static cusparseStatus_t cusp_sell(const spk_csr *A, cusp_mat *m, double *fill)
{
    sell_host h;
    sell_build(A, SELL_SLICE, &h);
    const int off64 = h.total > INT32_MAX;
    if (off64) {
        m->d[0] = upload(h.off, ((size_t)h.nslices + 1) * sizeof *h.off, "cuSPARSE SELL slice offsets");
    } else {
        int32_t *o32 = (int32_t *)bench_malloc((size_t)h.nslices + 1, sizeof *o32);
        for (int64_t s = 0; s <= h.nslices; s++)
            o32[s] = (int32_t)h.off[s];
        m->d[0] = upload(o32, ((size_t)h.nslices + 1) * sizeof *o32, "cuSPARSE SELL slice offsets");
        free(o32);
    }
    m->d[1] = upload(h.col, (size_t)h.total * sizeof *h.col, "cuSPARSE SELL columns");
    m->d[2] = upload(h.val, (size_t)h.total * sizeof *h.val, "cuSPARSE SELL values");
    *fill = A->nnz ? (double)h.total / (double)A->nnz : 1.0;
    cusparseStatus_t st = cusparseCreateSlicedEll(&m->mat, A->nrows, A->ncols, A->nnz, h.total, h.C,
                                                  m->d[0], m->d[1], m->d[2],
                                                  off64 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I,
                                                  CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                                  CUDA_R_64F);
    sell_free(&h);
    return st;
}

/* Buffer, preprocess, check and time one cuSPARSE layout (its descriptor made). */
static void cusp_measure(bench *B, mrun *R, row *r, const char *what, cusp_mat &m,
                         cusparseDnVecDescr_t vx, cusparseDnVecDescr_t vy, cusparseSpMVAlg_t alg,
                         double fill, double t0)
{
    const double one = 1.0, zero = 0.0;
    char err[256] = "";
    size_t bytes = 0;
    bench_cusparse(cusparseSpMV_bufferSize(B->sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, m.mat, vx,
                                           &zero, vy, CUDA_R_64F, alg, &bytes),
                   what);
    bench_cuda(cudaMalloc(&m.buf, bytes ? bytes : 8), "cudaMalloc of the cuSPARSE SpMV buffer");
    cusparseStatus_t ps = cusparseSpMV_preprocess(B->sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                                  m.mat, vx, &zero, vy, CUDA_R_64F, alg, m.buf);
    if (ps != CUSPARSE_STATUS_SUCCESS)                /* optional: run without it */
        snprintf(r->note, sizeof r->note, "no preprocess (%s)", cusparseGetErrorString(ps));
    bench_cuda(cudaStreamSynchronize(B->stream), "synchronize after cuSPARSE setup");
    r->setup_ms = 1e3 * (bench_now() - t0);
    if (fill > 0.0)
        snprintf(r->note + strlen(r->note), sizeof r->note - strlen(r->note), "%sslots/nnz %.3f",
                 r->note[0] ? "; " : "", fill);

    auto call = [&]() {
        cusparseStatus_t s = cusparseSpMV(B->sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, m.mat, vx,
                                          &zero, vy, CUDA_R_64F, alg, m.buf);
        if (s != CUSPARSE_STATUS_SUCCESS)
            snprintf(err, sizeof err, "cusparseSpMV: %s (status %d)", cusparseGetErrorString(s), (int)s);
        return s == CUSPARSE_STATUS_SUCCESS;
    };
    if (check_result(B, R, r, what, err, call)) {
        r->us = bench_time_us(B->stream, B->warmup, B->reps, [&]() {
            if (!call())
                bench_die(BENCH_EXIT_SYSTEM, "%s: %s", what, err);
        });
        r->state = ROW_OK;
    }
}

static void run_cusparse(bench *B, mrun *R, const char *mname, cusp_kind kind, row *r)
{
    static const cusparseSpMVAlg_t algs[] = {CUSPARSE_SPMV_ALG_DEFAULT, CUSPARSE_SPMV_CSR_ALG2,
                                             CUSPARSE_SPMV_COO_ALG1, CUSPARSE_SPMV_COO_ALG2,
                                             CUSPARSE_SPMV_SELL_ALG1};
    const spk_csr *A = R->A;
    r->impl = "cusparse";
    snprintf(r->fmt, sizeof r->fmt, "%s", cusp_names[kind]);
    if (A->nnz > INT32_MAX || A->nrows > INT32_MAX) {
        r->state = ROW_SKIPPED;
        snprintf(r->note, sizeof r->note, "nnz >= 2^31: 32-bit cuSPARSE indices do not fit");
        return;
    }
    bench_watchdog(B->timeout, "%s: cuSPARSE %s", mname, cusp_names[kind]);
    char what[320];
    snprintf(what, sizeof what, "%s: cuSPARSE %s", mname, cusp_names[kind]);
    const double one = 1.0, zero = 0.0;
    const cusparseSpMVAlg_t alg = algs[kind];
    cusparseDnVecDescr_t vx, vy;
    cusp_mat m;
    memset(&m, 0, sizeof m);
    double fill = 0.0;                 /* SELL slots per nonzero; 0 for CSR and COO */

    char err[256] = "";
    /* A cuSPARSE refusal (an unsupported combination) fails this row, not the run. */
    auto ok = [&](cusparseStatus_t s, const char *step) {
        if (s != CUSPARSE_STATUS_SUCCESS)
            snprintf(err, sizeof err, "%s: %s (status %d)", step, cusparseGetErrorString(s), (int)s);
        return s == CUSPARSE_STATUS_SUCCESS;
    };
    double t0 = bench_now();
    cusparseStatus_t cs = kind == CUSP_CSR || kind == CUSP_CSR2   ? cusp_csr(A, &m)
                          : kind == CUSP_COO || kind == CUSP_COO2 ? cusp_coo(A, &m)
                                                                  : cusp_sell(A, &m, &fill);
    bench_cusparse(cusparseCreateDnVec(&vx, A->ncols, R->d_x, CUDA_R_64F), "cusparseCreateDnVec x");
    bench_cusparse(cusparseCreateDnVec(&vy, A->nrows, R->d_y, CUDA_R_64F), "cusparseCreateDnVec y");
    size_t bytes = 0;
    if (!ok(cs, "creating the matrix descriptor") ||
        !ok(cusparseSpMV_bufferSize(B->sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, m.mat, vx, &zero,
                                    vy, CUDA_R_64F, alg, &bytes),
            "cusparseSpMV_bufferSize"))
        row_error(B, r, what, err);
    else
        cusp_measure(B, R, r, what, m, vx, vy, alg, fill, t0);

    if (m.mat)
        bench_cusparse(cusparseDestroySpMat(m.mat), "cusparseDestroySpMat");
    bench_cusparse(cusparseDestroyDnVec(vx), "cusparseDestroyDnVec");
    bench_cusparse(cusparseDestroyDnVec(vy), "cusparseDestroyDnVec");
    for (int i = 0; i < 4; i++)
        bench_cuda(cudaFree(m.d[i]), "cudaFree");
    bench_cuda(cudaFree(m.buf), "cudaFree");
}

/* cuSPARSE's BSR (cusparseDbsrmv, the legacy API: the generic SpMV takes no BSR matrix), its
 * blocks row-major, of the largest size d for which A is made of full d x d blocks
 * (spk_bsr_block_of, the size spk's BSR takes). */
static void run_cusparse_bsr(bench *B, mrun *R, const char *mname, row *r)
{
    const spk_csr *A = R->A;
    r->impl = "cusparse";
    snprintf(r->fmt, sizeof r->fmt, "%s", cusp_names[CUSP_BSR]);
    const int64_t d = spk_bsr_block_of(A, NULL);
    if (d < 2 || A->nnz > INT32_MAX) {
        r->state = ROW_SKIPPED;
        snprintf(r->note, sizeof r->note, d < 2 ? "no d x d blocks" : "nnz >= 2^31");
        return;
    }
    bench_watchdog(B->timeout, "%s: cuSPARSE bsrmv", mname);
    char what[320], err[256] = "";
    snprintf(what, sizeof what, "%s: cuSPARSE bsrmv (%lldx%lld blocks)", mname, (long long)d,
             (long long)d);
    const double t0 = bench_now();
    const int64_t mb = A->nrows / d, nb = A->ncols / d, nnzb = A->nnz / (d * d);
    int32_t *rp = (int32_t *)bench_malloc((size_t)mb + 1, sizeof *rp);
    int32_t *ci = (int32_t *)bench_malloc((size_t)nnzb + 1, sizeof *ci);
    double *v = (double *)bench_malloc((size_t)A->nnz + 1, sizeof *v);
    rp[0] = 0;
    for (int64_t I = 0; I < mb; I++) {
        const int64_t len = (A->rowptr[I * d + 1] - A->rowptr[I * d]) / d;
        rp[I + 1] = rp[I] + (int32_t)len;
        for (int64_t k = 0; k < len; k++) {
            ci[rp[I] + k] = A->colind[A->rowptr[I * d] + k * d] / (int32_t)d;
            for (int64_t a = 0; a < d; a++)
                for (int64_t c = 0; c < d; c++)
                    v[((int64_t)rp[I] + k) * d * d + a * d + c] = A->val[A->rowptr[I * d + a] + k * d + c];
        }
    }
    void *d_rp = upload(rp, ((size_t)mb + 1) * sizeof *rp, "cuSPARSE BSR row offsets");
    void *d_ci = upload(ci, (size_t)nnzb * sizeof *ci, "cuSPARSE BSR block columns");
    void *d_v = upload(v, (size_t)A->nnz * sizeof *v, "cuSPARSE BSR values");
    free(rp);
    free(ci);
    free(v);
    cusparseMatDescr_t descr;
    bench_cusparse(cusparseCreateMatDescr(&descr), "cusparseCreateMatDescr");
    bench_cuda(cudaStreamSynchronize(B->stream), "synchronize after cuSPARSE BSR setup");
    r->setup_ms = 1e3 * (bench_now() - t0);
    snprintf(r->note, sizeof r->note, "%lldx%lld blocks", (long long)d, (long long)d);
    const double one = 1.0, zero = 0.0;
    auto call = [&]() {
        cusparseStatus_t st = cusparseDbsrmv(B->sp, CUSPARSE_DIRECTION_ROW,
                                             CUSPARSE_OPERATION_NON_TRANSPOSE, (int)mb, (int)nb,
                                             (int)nnzb, &one, descr, (const double *)d_v,
                                             (const int *)d_rp, (const int *)d_ci, (int)d, R->d_x,
                                             &zero, R->d_y);
        if (st != CUSPARSE_STATUS_SUCCESS)
            snprintf(err, sizeof err, "cusparseDbsrmv: %s (status %d)", cusparseGetErrorString(st),
                     (int)st);
        return st == CUSPARSE_STATUS_SUCCESS;
    };
    if (check_result(B, R, r, what, err, call)) {
        r->us = bench_time_us(B->stream, B->warmup, B->reps, [&]() {
            if (!call())
                bench_die(BENCH_EXIT_SYSTEM, "%s: %s", what, err);
        });
        r->state = ROW_OK;
    }
    bench_cusparse(cusparseDestroyMatDescr(descr), "cusparseDestroyMatDescr");
    bench_cuda(cudaFree(d_rp), "cudaFree");
    bench_cuda(cudaFree(d_ci), "cudaFree");
    bench_cuda(cudaFree(d_v), "cudaFree");
}

/* ---- one matrix ---------------------------------------------------------------------------- */

static int mtx_square_real(const char *path, int *pattern);   /* the --inputs filter, below */

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void run_matrix(bench *B, const char *spec, mresult *out)
{
    memset(out, 0, sizeof *out);
    mrun R;
    memset(&R, 0, sizeof R);
    out->generated = spk_is_generator_spec(spec);
    snprintf(out->name, sizeof out->name, "%s", out->generated ? spec : base_name(spec));

    bench_watchdog(B->timeout, "%s: making the matrix", spec);
    double t0 = bench_now();
    spk_status st = out->generated ? spk_matrix_generate(B->ctx, spec, &R.M)
                                   : spk_matrix_read_mtx(B->ctx, spec, &R.M);
    bench_spk(B->ctx, st, spec);
    out->load_s = bench_now() - t0;
    int pattern = 0;
    if (!out->generated && mtx_square_real(spec, &pattern) && pattern) {
        /* the reader gives a pattern's entries the value 1; the name says which values ran */
        if (B->pattern_random) {
            spk_csr *C = &R.M->csr;
            uint64_t seed = PATTERN_SEED;
            for (int64_t p = 0; p < C->nnz; p++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                C->val[p] = 0.5 + (double)(seed >> 11) * (1.0 / 9007199254740992.0);
            }
            spk_stats_values(C, &R.M->info);
        }
        const size_t used = strlen(out->name);
        if (B->pattern_random)
            snprintf(out->name + used, sizeof out->name - used,
                     " (pattern, values random in [0.5, 1.5), seed %u)", PATTERN_SEED);
        else
            snprintf(out->name + used, sizeof out->name - used, " (pattern, values 1)");
    }
    R.A = &R.M->csr;
    const spk_csr *A = R.A;
    out->nrows = A->nrows;
    out->ncols = A->ncols;
    out->nnz = A->nnz;

    /* The floor: CSR matrix bytes + x read once + y written once, at the copy bandwidth. */
    out->floor_bytes = 12.0 * (double)A->nnz + 8.0 * (double)(A->nrows + 1) +
                       8.0 * (double)A->ncols + 8.0 * (double)A->nrows;
    out->floor_us = out->floor_bytes / (B->copy_gbs * 1e9) * 1e6;
    int64_t width = 0, far = 0;
    for (int64_t i = 0; i < A->nrows; i++) {
        width = A->rowptr[i + 1] - A->rowptr[i] > width ? A->rowptr[i + 1] - A->rowptr[i] : width;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            far = llabs((long long)(A->colind[p] - i)) > far ? llabs((long long)(A->colind[p] - i)) : far;
    }
    out->ell_bytes = (double)A->nrows * (double)width * (far <= 32767 ? 10.0 : 12.0) +
                     8.0 * (double)A->ncols + 8.0 * (double)A->nrows;

    R.x = (double *)bench_malloc((size_t)A->ncols, sizeof(double));
    R.yref = (double *)bench_malloc((size_t)A->nrows, sizeof(double));
    R.y = (double *)bench_malloc((size_t)A->nrows, sizeof(double));
    bench_random_vector(R.x, A->ncols, X_SEED);
    spk_csr_spmv_ref(A, 1.0, R.x, 0.0, R.yref);
    for (int64_t i = 0; i < A->nrows; i++)
        R.yref_max = fabs(R.yref[i]) > R.yref_max ? fabs(R.yref[i]) : R.yref_max;
    bench_spk(B->ctx, B->ops->alloc(B->ctx, A->ncols, &R.d_x), "device x");
    bench_spk(B->ctx, B->ops->alloc(B->ctx, A->nrows, &R.d_y), "device y");
    bench_spk(B->ctx, B->ops->upload(B->ctx, A->ncols, R.x, R.d_x), "upload of x");
    if (B->fp32) {
        const int64_t nd = A->ncols / 2 + 1;           /* doubles that hold ncols floats */
        float *x32 = (float *)bench_malloc((size_t)(2 * nd), sizeof *x32);
        for (int64_t j = 0; j < A->ncols; j++)
            x32[j] = (float)R.x[j];
        x32[2 * nd - 1] = x32[2 * nd - 2] = 0.0f;
        bench_spk(B->ctx, B->ops->alloc(B->ctx, nd, &R.d_x32), "device x32");
        bench_spk(B->ctx, B->ops->alloc(B->ctx, A->nrows / 2 + 1, &R.d_y32), "device y32");
        bench_spk(B->ctx, B->ops->alloc(B->ctx, 1, &R.d_out), "device dot");
        bench_spk(B->ctx, B->ops->alloc(B->ctx, 1, &R.d_count), "device counter");
        bench_spk(B->ctx, B->ops->alloc(B->ctx, SPK_MAX_BLOCKS, &R.d_part), "device partials");
        bench_spk(B->ctx, B->ops->upload(B->ctx, nd, (const double *)(void *)x32, R.d_x32),
                  "upload of x32");
        free(x32);
    }

    int k = 0;
    for (size_t f = 0; f < N_SPK; f++) {
        run_spk(B, &R, out->name, spk_formats[f], 0, &out->rows[k++]);
        if (B->fp32)
            run_spk(B, &R, out->name, spk_formats[f], 1, &out->rows[k++]);
    }
    for (int c = 0; c < N_CUSP; c++)
        if (c == CUSP_BSR)
            run_cusparse_bsr(B, &R, out->name, &out->rows[k++]);
        else
            run_cusparse(B, &R, out->name, (cusp_kind)c, &out->rows[k++]);
    out->nrows_out = k;

    bench_spk(B->ctx, spk_matrix_get_info(R.M, &out->info), "spk_matrix_get_info");
    out->auto_fmt = spk_select_format(&out->info, SPK_DEVICE_CUDA, out->auto_reason,
                                      sizeof out->auto_reason);
    out->auto_us = out->best_spk_us = out->best_cusp_us = out->csr_default_us = INFINITY;
    for (int i = 0; i < k; i++) {
        const row *r = &out->rows[i];
        if (r->state != ROW_OK || !strcmp(r->impl, "spk-fp32"))   /* the choices are fp64's */
            continue;
        int spk = strcmp(r->impl, "spk") == 0;
        if (spk && r->us < out->best_spk_us) {
            out->best_spk_us = r->us;
            out->best_spk = r->fmt;
        }
        if (!spk && r->us < out->best_cusp_us) {
            out->best_cusp_us = r->us;
            out->best_cusp = r->fmt;
        }
        if (spk && strcmp(r->fmt, spk_format_str(out->auto_fmt)) == 0)
            out->auto_us = r->us;
        if (!spk && strcmp(r->fmt, cusp_names[CUSP_CSR]) == 0)
            out->csr_default_us = r->us;
    }

    B->ops->free(B->ctx, R.d_x);
    B->ops->free(B->ctx, R.d_y);
    B->ops->free(B->ctx, R.d_x32);
    B->ops->free(B->ctx, R.d_y32);
    B->ops->free(B->ctx, R.d_out);
    B->ops->free(B->ctx, R.d_count);
    B->ops->free(B->ctx, R.d_part);
    free(R.x);
    free(R.yref);
    free(R.y);
    spk_matrix_destroy(R.M);
    alarm(0);
}

/* ---- output -------------------------------------------------------------------------------- */

static const char *row_status(const row *r)
{
    switch (r->state) {
    case ROW_REFUSED: return "refused";
    case ROW_SKIPPED: return "skipped";
    case ROW_ERROR: return "error";
    default: return r->fail ? "fail" : "ok";
    }
}

static void print_matrix(const bench *B, const mresult *m)
{
    printf("\n== %s: %lld x %lld, nnz %lld (%s in %.2f s)\n", m->name, (long long)m->nrows,
           (long long)m->ncols, (long long)m->nnz, m->generated ? "generated" : "read",
           m->load_s);
    printf("floor: 12 nnz + 8 (n+1) + 8 ncols + 8 n = %.4g MB / %.0f GB/s copy = %.3g us\n",
           1e-6 * m->floor_bytes, B->copy_gbs, m->floor_us);
    printf("%-9s %-12s %10s %8s %7s %10s %10s %9s %9s\n", "impl", "format", "us", "GB/s", "%copy",
           "setup ms", "setup/SpMV", "cusp/this", "rel.err");
    for (int i = 0; i < m->nrows_out; i++) {
        const row *r = &m->rows[i];
        if (r->state != ROW_OK) {
            printf("%-9s %-12s %s: %s\n", r->impl, r->fmt,
                   row_status(r), r->note);
            continue;
        }
        double gbs = m->floor_bytes / (r->us * 1e-6) * 1e-9;
        printf("%-9s %-12s %10.1f %8.0f %6.1f%% %10.2f %10.0f %9.2f %9.1e%s%s%s\n", r->impl, r->fmt,
               r->us, gbs, 100.0 * gbs / B->copy_gbs, r->setup_ms, 1e3 * r->setup_ms / r->us,
               m->best_cusp_us / r->us, r->err, r->fail ? "  FAIL" : "", r->note[0] ? "  " : "",
               r->note);
    }
    for (int i = 0; i + 1 < m->nrows_out; i++) {          /* --fp32: each twin after its row */
        const row *a = &m->rows[i], *t = &m->rows[i + 1];
        if (!strcmp(a->impl, "spk") && !strcmp(t->impl, "spk-fp32") && a->state == ROW_OK &&
            t->state == ROW_OK)
            printf("fp32 %-5s %8.1f us against fp64 %8.1f us: %.2fx\n", a->fmt, t->us, a->us,
                   a->us / t->us);
        if (!strcmp(a->impl, "spk") && !strcmp(t->impl, "spk-fp32") && isfinite(a->dot_us) &&
            isfinite(t->dot_us))
            printf("fp32 %-5s CG's q = A p, p'q: fp32 values and vectors (spmv_dot32) %8.1f us "
                   "against fp64 (spmv_dot) %8.1f us: %.2fx\n", a->fmt, t->dot_us, a->dot_us,
                   a->dot_us / t->dot_us);
    }
    if (!isfinite(m->auto_us)) {
        printf("auto: %s (%s): that format did not run here\n", spk_format_str(m->auto_fmt),
               m->auto_reason);
        return;
    }
    printf("auto: %s (%s)\n      %.1f us = %.2fx spk's fastest (%s, %.1f us); cuSPARSE best %s "
           "%.1f us: cusp/auto %.2f\n",
           spk_format_str(m->auto_fmt), m->auto_reason, m->auto_us, m->auto_us / m->best_spk_us,
           m->best_spk ? m->best_spk : "-", m->best_spk_us, m->best_cusp ? m->best_cusp : "-",
           m->best_cusp_us, m->best_cusp_us / m->auto_us);
}

/* Geometric mean of num/den over matrices where both are finite (generated ones only if
 * gen_only). */
static double geomean_ratio(const mresult *m, int n, int gen_only, int use_csr_default)
{
    double s = 0.0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        double num = use_csr_default ? m[i].csr_default_us : m[i].best_cusp_us;
        double r = num / m[i].auto_us;
        if ((gen_only && !m[i].generated) || !isfinite(r) || !(r > 0))
            continue;
        s += log(r);
        k++;
    }
    return k ? exp(s / k) : NAN;
}

static void print_summary(const bench *B, const mresult *m, int n)
{
    printf("\n== summary (auto = spk's automatic format; ratios > 1: spk faster)\n");
    printf("%-22s %10s %-5s %8s %6s %8s %-11s %9s %9s %8s\n", "matrix", "rows", "auto", "us",
           "%copy", "auto/best", "cusp best", "cusp/auto", "csr/auto", "floor us");
    for (int i = 0; i < n; i++) {
        const mresult *r = &m[i];
        double gbs = r->floor_bytes / (r->auto_us * 1e-6) * 1e-9;
        printf("%-22s %10lld %-5s %8.1f %5.1f%% %8.2f  %-11s %9.2f %9.2f %8.1f\n", r->name,
               (long long)r->nrows, spk_format_str(r->auto_fmt), r->auto_us,
               100.0 * gbs / B->copy_gbs, r->auto_us / r->best_spk_us,
               r->best_cusp ? r->best_cusp : "-", r->best_cusp_us / r->auto_us,
               r->csr_default_us / r->auto_us, r->floor_us);
    }
    printf("geometric mean, generated matrices: cusp best/auto %.3f, cusp csr-default/auto %.3f\n",
           geomean_ratio(m, n, 1, 0), geomean_ratio(m, n, 1, 1));
    printf("geometric mean, all matrices:       cusp best/auto %.3f, cusp csr-default/auto %.3f\n",
           geomean_ratio(m, n, 0, 0), geomean_ratio(m, n, 0, 1));
}

static void write_json(const char *path, const bench *B, const char *gpu, const char *date,
                       const mresult *m, int n)
{
    FILE *f = bench_open_out(path);
    fprintf(f, "{\n  \"program\": \"bench_spmv\",\n  \"gpu\": ");
    bench_json_str(f, gpu);
    fprintf(f, ",\n  \"date\": \"%s\",\n  \"copy_gbs\": ", date);
    bench_json_num(f, B->copy_gbs);
    fprintf(f, ",\n  \"reps\": %d,\n  \"warmup\": %d,\n  \"max_rel_err\": %g,\n", B->reps, B->warmup,
            MAX_REL_ERR);
    fprintf(f, "  \"floor\": \"(12 nnz + 8 (rows + 1) + 8 cols + 8 rows) bytes / copy bandwidth\",\n");
    fprintf(f, "  \"geomean_generated\": {\"cusp_best_over_auto\": ");
    bench_json_num(f, geomean_ratio(m, n, 1, 0));
    fprintf(f, ", \"cusp_csr_default_over_auto\": ");
    bench_json_num(f, geomean_ratio(m, n, 1, 1));
    fprintf(f, "},\n  \"failures\": %d,\n  \"matrices\": [\n", B->failures);
    for (int i = 0; i < n; i++) {
        const mresult *r = &m[i];
        fprintf(f, "    {\"name\": ");
        bench_json_str(f, r->name);
        fprintf(f, ", \"generated\": %s, \"rows\": %lld, \"cols\": %lld, \"nnz\": %lld, "
                   "\"load_s\": ", r->generated ? "true" : "false", (long long)r->nrows,
                (long long)r->ncols, (long long)r->nnz);
        bench_json_num(f, r->load_s);
        fprintf(f, ",\n     \"floor_bytes\": %.0f, \"ell_bytes\": %.0f, \"floor_us\": ",
                r->floor_bytes, r->ell_bytes);
        bench_json_num(f, r->floor_us);
        const spk_matrix_info *in = &r->info;
        fprintf(f, ",\n     \"row_stats\": {\"min\": %lld, \"mean\": %.6g, \"max\": %lld, \"cv\": %.6g, "
                   "\"p50\": %lld, \"p99\": %lld, \"ell_fill\": %.6g, \"hyb_width\": %lld, "
                   "\"hyb_coo_nnz\": %lld, \"sell_fill\": %.6g, \"bandwidth\": %lld, "
                   "\"coherence\": %.6g},\n    ", (long long)in->row_min,
                in->row_mean, (long long)in->row_max, in->row_cv, (long long)in->row_p50,
                (long long)in->row_p99, in->ell_fill, (long long)in->hyb_width,
                (long long)in->hyb_coo_nnz, in->sell_fill, (long long)in->bandwidth,
                in->coherence);
        fprintf(f, " \"auto\": \"%s\", \"auto_reason\": ", spk_format_str(r->auto_fmt));
        bench_json_str(f, r->auto_reason);
        fprintf(f, ",\n     \"auto_us\": ");
        bench_json_num(f, r->auto_us);
        fprintf(f, ", \"best_spk\": ");
        bench_json_str(f, r->best_spk ? r->best_spk : "");
        fprintf(f, ", \"best_spk_us\": ");
        bench_json_num(f, r->best_spk_us);
        fprintf(f, ", \"best_cusparse\": ");
        bench_json_str(f, r->best_cusp ? r->best_cusp : "");
        fprintf(f, ", \"best_cusparse_us\": ");
        bench_json_num(f, r->best_cusp_us);
        fprintf(f, ", \"cusparse_csr_default_us\": ");
        bench_json_num(f, r->csr_default_us);
        fprintf(f, ",\n     \"results\": [\n");
        for (int j = 0; j < r->nrows_out; j++) {
            const row *w = &r->rows[j];
            const double gbs = r->floor_bytes / (w->us * 1e-6) * 1e-9;
            const int ok = w->state == ROW_OK;
            fprintf(f, "       {\"impl\": \"%s\", \"format\": \"%s\", \"status\": \"%s\", \"us\": ",
                    w->impl, w->fmt,
                    row_status(w));
            bench_json_num(f, ok ? w->us : NAN);
            fprintf(f, ", \"gbs\": ");
            bench_json_num(f, ok ? gbs : NAN);
            fprintf(f, ", \"pct_copy\": ");
            bench_json_num(f, ok ? 100.0 * gbs / B->copy_gbs : NAN);
            fprintf(f, ", \"setup_ms\": ");
            bench_json_num(f, w->setup_ms);
            fprintf(f, ", \"setup_spmv\": ");
            bench_json_num(f, ok ? 1e3 * w->setup_ms / w->us : NAN);
            fprintf(f, ", \"cusp_best_over_this\": ");
            bench_json_num(f, ok ? r->best_cusp_us / w->us : NAN);
            fprintf(f, ", \"rel_err\": ");
            bench_json_num(f, ok ? w->err : NAN);
            fprintf(f, ", \"note\": ");
            bench_json_str(f, w->note);
            fprintf(f, "}%s\n", j + 1 < r->nrows_out ? "," : "");
        }
        fprintf(f, "     ]}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    bench_close_out(f, path);
}

static void write_csv(const char *path, const bench *B, const char *gpu, const char *date,
                      const mresult *m, int n)
{
    FILE *f = bench_open_out(path);
    fprintf(f, "date,gpu,copy_gbs,matrix,rows,cols,nnz,floor_us,impl,format,status,us,gbs,"
               "pct_copy,setup_ms,setup_spmv,cusp_best_over_this,rel_err,auto,auto_us,note\n");
    for (int i = 0; i < n; i++) {
        const mresult *r = &m[i];
        for (int j = 0; j < r->nrows_out; j++) {
            const row *w = &r->rows[j];
            const int ok = w->state == ROW_OK;
            const double gbs = ok ? r->floor_bytes / (w->us * 1e-6) * 1e-9 : NAN;
            fprintf(f, "%s,", date);
            bench_csv_str(f, gpu);
            fprintf(f, ",%.1f,", B->copy_gbs);
            bench_csv_str(f, r->name);
            fprintf(f, ",%lld,%lld,%lld,%.3f,%s,%s,%s,", (long long)r->nrows, (long long)r->ncols,
                    (long long)r->nnz, r->floor_us, w->impl, w->fmt,
                    row_status(w));
            if (ok)
                fprintf(f, "%.3f,%.1f,%.2f,", w->us, gbs, 100.0 * gbs / B->copy_gbs);
            else
                fprintf(f, ",,,");
            fprintf(f, "%.3f,", w->setup_ms);
            if (ok)
                fprintf(f, "%.1f,%.4f,%.3g,", 1e3 * w->setup_ms / w->us, r->best_cusp_us / w->us,
                        w->err);
            else
                fprintf(f, ",,,");
            fprintf(f, "%s,", spk_format_str(r->auto_fmt));
            if (isfinite(r->auto_us))
                fprintf(f, "%.3f", r->auto_us);
            fprintf(f, ",");
            bench_csv_str(f, w->note);
            fprintf(f, "\n");
        }
    }
    bench_close_out(f, path);
}

/* Every --out file, rewritten after each matrix: a run cut short keeps what it measured. */
static void write_outputs(const char *const *outs, int nouts, const bench *B, const char *gpu,
                          const char *date, const mresult *m, int n)
{
    for (int k = 0; k < nouts; k++) {
        if (bench_ends_with(outs[k], ".json"))
            write_json(outs[k], B, gpu, date, m, n);
        else
            write_csv(outs[k], B, gpu, date, m, n);
    }
}

/* ---- arguments ----------------------------------------------------------------------------- */

/* 1 if `path` is a square `coordinate` Matrix Market file of field real, integer or pattern
 * (header and size line); *pattern (may be NULL) says whether it is a pattern. */
static int mtx_square_real(const char *path, int *pattern)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[1024];
    int ok = 0;
    if (fgets(line, sizeof line, f)) {
        char obj[64], fmt[64], field[64];
        ok = sscanf(line, "%%%%MatrixMarket %63s %63s %63s", obj, fmt, field) == 3 &&
             strcasecmp(obj, "matrix") == 0 && strcasecmp(fmt, "coordinate") == 0 &&
             (strcasecmp(field, "real") == 0 || strcasecmp(field, "integer") == 0 ||
              strcasecmp(field, "pattern") == 0);
        if (ok && pattern)
            *pattern = strcasecmp(field, "pattern") == 0;
    }
    while (ok && fgets(line, sizeof line, f)) {
        if (line[0] == '%')
            continue;
        long long r = -1, c = -2;
        ok = sscanf(line, "%lld %lld", &r, &c) == 2 && r == c && r > 0;
        break;
    }
    fclose(f);
    return ok;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Append every square real, integer or pattern .mtx of dir to list (sorted by name). */
static int add_inputs(const char *dir, const char **list, int n, int cap)
{
    DIR *d = opendir(dir);
    if (!d)
        bench_die(BENCH_EXIT_USAGE, "--inputs %s: %s", dir, strerror(errno));
    int first = n;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!bench_ends_with(e->d_name, ".mtx"))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!mtx_square_real(path, NULL))
            continue;
        if (n >= cap)
            bench_die(BENCH_EXIT_USAGE, "too many matrices (at most %d)", cap);
        char *copy = strdup(path);          /* lives until exit, like argv */
        if (!copy)
            bench_die(BENCH_EXIT_SYSTEM, "out of host memory");
        list[n++] = copy;
    }
    closedir(d);
    qsort(list + first, (size_t)(n - first), sizeof *list, cmp_str);
    return n;
}

/* ---- self-test (no GPU needed) ------------------------------------------------------------ */

/* Check on the host what can be checked without a GPU: the SELL layout handed to cuSPARSE
 * (its host SpMV against spk_csr_spmv_ref), the --inputs filter, and the table, JSON and CSV
 * writers on made-up timings (marked as such in the output). Returns the number of failures. */
static int self_test(const char *const *specs, int nspec, const char *const *outs, int nouts)
{
    spk_context *ctx = NULL;
    bench_spk(ctx, spk_context_create(&ctx, SPK_DEVICE_CPU), "CPU context");
    int bad = 0;
    mresult *fake = (mresult *)bench_malloc((size_t)nspec, sizeof *fake);
    bench B;
    memset(&B, 0, sizeof B);
    B.copy_gbs = 4000.0;
    B.reps = DEFAULT_REPS;
    B.warmup = DEFAULT_WARMUP;
    for (int i = 0; i < nspec; i++) {
        spk_matrix *M = NULL;
        int gen = spk_is_generator_spec(specs[i]);
        bench_spk(ctx, gen ? spk_matrix_generate(ctx, specs[i], &M) : spk_matrix_read_mtx(ctx, specs[i], &M),
                  specs[i]);
        const spk_csr *A = &M->csr;
        double *x = (double *)bench_malloc((size_t)A->ncols, sizeof *x);
        double *y = (double *)bench_malloc((size_t)A->nrows, sizeof *y);
        double *yr = (double *)bench_malloc((size_t)A->nrows, sizeof *yr);
        bench_random_vector(x, A->ncols, X_SEED);
        spk_csr_spmv_ref(A, 1.0, x, 0.0, yr);
        double ymax = 0.0;
        for (int64_t k = 0; k < A->nrows; k++)
            ymax = fabs(yr[k]) > ymax ? fabs(yr[k]) : ymax;
        const int64_t slices[] = {1, 4, SELL_SLICE};
        for (int c = 0; c < 3; c++) {
            sell_host h;
            sell_build(A, slices[c], &h);
            sell_spmv_host(&h, A->nrows, x, y);
            double e = rel_err(y, yr, A->nrows, ymax);
            printf("self-test %-24s sell C=%-3lld slots/nnz %.3f  rel.err %.1e %s\n", specs[i],
                   (long long)slices[c], A->nnz ? (double)h.total / (double)A->nnz : 1.0, e,
                   e <= MAX_REL_ERR ? "ok" : "FAIL");
            bad += !(e <= MAX_REL_ERR);
            sell_free(&h);
        }
        /* made-up timings so that the writers run: floor-proportional, spk "faster" */
        mresult *m = &fake[i];
        memset(m, 0, sizeof *m);
        snprintf(m->name, sizeof m->name, "%s", gen ? specs[i] : base_name(specs[i]));
        m->generated = gen;
        m->nrows = A->nrows;
        m->ncols = A->ncols;
        m->nnz = A->nnz;
        m->floor_bytes = 12.0 * (double)A->nnz + 16.0 * (double)A->nrows + 8.0 + 8.0 * (double)A->ncols;
        m->floor_us = m->floor_bytes / (B.copy_gbs * 1e9) * 1e6;
        bench_spk(ctx, spk_matrix_get_info(M, &m->info), "info");
        m->auto_fmt = spk_select_format(&m->info, SPK_DEVICE_CUDA, m->auto_reason, sizeof m->auto_reason);
        for (size_t f = 0; f < N_SPK + N_CUSP; f++) {
            row *r = &m->rows[f];
            r->impl = f < N_SPK ? "spk" : "cusparse";
            snprintf(r->fmt, sizeof r->fmt, "%s",
                     f < N_SPK ? spk_format_str(spk_formats[f]) : cusp_names[f - N_SPK]);
            r->state = ROW_OK;
            r->us = m->floor_us * (1.1 + 0.05 * (double)f) + 2.0;
            r->setup_ms = 1.0 + (double)f;
            snprintf(r->note, sizeof r->note, "made-up timing (self-test)");
        }
        m->rows[2].state = ROW_REFUSED;
        snprintf(m->rows[2].note, sizeof m->rows[2].note, "made-up refusal, \"quoted\", with a comma");
        m->nrows_out = (int)(N_SPK + N_CUSP);
        m->auto_us = m->best_spk_us = m->best_cusp_us = m->csr_default_us = INFINITY;
        for (int k = 0; k < m->nrows_out; k++) {
            row *r = &m->rows[k];
            if (r->state != ROW_OK)
                continue;
            int spk = strcmp(r->impl, "spk") == 0;
            if (spk && r->us < m->best_spk_us) { m->best_spk_us = r->us; m->best_spk = r->fmt; }
            if (!spk && r->us < m->best_cusp_us) { m->best_cusp_us = r->us; m->best_cusp = r->fmt; }
            if (spk && !strcmp(r->fmt, spk_format_str(m->auto_fmt))) m->auto_us = r->us;
            if (!spk && !strcmp(r->fmt, cusp_names[CUSP_CSR])) m->csr_default_us = r->us;
        }
        print_matrix(&B, m);
        free(x);
        free(y);
        free(yr);
        spk_matrix_destroy(M);
    }
    print_summary(&B, fake, nspec);
    write_outputs(outs, nouts, &B, "self-test (no GPU)", "0000-00-00", fake, nspec);
    free(fake);
    spk_context_destroy(ctx);
    printf("self-test: %s\n", bad ? "FAILED" : "passed");
    return bad;
}

static const char usage[] =
    "usage: bench_spmv [--inputs DIR] [--out FILE.json|FILE.csv]... [--reps N] [--warmup N]\n"
    "                  [--copy-mb MB] [--timeout S] [--fp32] [--pattern-values ones|random]\n"
    "                  [--probe] [MATRIX ...]\n"
    "MATRIX: a generator spec (poisson3d:150 ...) or a .mtx file. Without any: the six\n"
    "default generator matrices. --inputs adds every square coordinate .mtx of DIR (real,\n"
    "integer or pattern). A pattern file's values are 1, or with --pattern-values random\n"
    "seeded uniform in [0.5, 1.5); its name in the output says which.\n"
    "--fp32: each spk format's fp32 twin beside it (mixed precision's operator).\n"
    "--probe: print the GPU and exit (0, or 77 without a usable GPU).\n"
    "--self-test: host-only checks (SELL layout, writers on made-up timings), no GPU.\n";

#define MAX_MATRICES 256
#define MAX_OUTS 8

int main(int argc, char **argv)
{
    bench_prog = "bench_spmv";
    bench B;
    memset(&B, 0, sizeof B);
    B.reps = DEFAULT_REPS;
    B.warmup = DEFAULT_WARMUP;
    B.timeout = DEFAULT_TIMEOUT;
    long copy_mb = DEFAULT_COPY_MB;
    const char *inputs = NULL, *outs[MAX_OUTS];
    int nouts = 0, probe = 0, selftest = 0, nspec = 0;
    const char *specs[MAX_MATRICES];

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--probe")) {
            probe = 1;
        } else if (!strcmp(a, "--self-test")) {
            selftest = 1;
        } else if (!strcmp(a, "--fp32")) {
            B.fp32 = 1;
        } else if (!strcmp(a, "--pattern-values") && v) {
            if (strcmp(v, "ones") && strcmp(v, "random"))
                bench_die(BENCH_EXIT_USAGE, "--pattern-values %s: expected ones or random", v);
            B.pattern_random = !strcmp(v, "random");
            i++;
        } else if (!strcmp(a, "--inputs") && v) {
            inputs = v;
            i++;
        } else if (!strcmp(a, "--out") && v) {
            if (!bench_ends_with(v, ".json") && !bench_ends_with(v, ".csv"))
                bench_die(BENCH_EXIT_USAGE, "--out %s: the name must end in .json or .csv", v);
            if (nouts == MAX_OUTS)
                bench_die(BENCH_EXIT_USAGE, "at most %d --out files", MAX_OUTS);
            outs[nouts++] = v;
            i++;
        } else if (!strcmp(a, "--reps") && v) {
            B.reps = (int)bench_parse_int(a, v, 1, 100000);
            i++;
        } else if (!strcmp(a, "--warmup") && v) {
            B.warmup = (int)bench_parse_int(a, v, 0, 100000);
            i++;
        } else if (!strcmp(a, "--copy-mb") && v) {
            copy_mb = bench_parse_int(a, v, 1, 1 << 20);
            i++;
        } else if (!strcmp(a, "--timeout") && v) {
            B.timeout = (unsigned)bench_parse_int(a, v, 1, 86400);
            i++;
        } else if (a[0] == '-') {
            fputs(usage, stderr);
            bench_die(BENCH_EXIT_USAGE, "unknown option or missing value: %s", a);
        } else {
            if (nspec == MAX_MATRICES)
                bench_die(BENCH_EXIT_USAGE, "too many matrices (at most %d)", MAX_MATRICES);
            specs[nspec++] = a;
        }
    }
    if (nspec == 0)
        for (size_t k = 0; k < sizeof default_specs / sizeof default_specs[0]; k++)
            specs[nspec++] = default_specs[k];
    if (inputs)
        nspec = add_inputs(inputs, specs, nspec, MAX_MATRICES);

    if (selftest)
        return self_test(specs, nspec, outs, nouts) ? BENCH_EXIT_FAIL : 0;

    bench_watchdog(B.timeout, "creating the CUDA context");
    B.ctx = bench_cuda_context();
    char gpu[256], date[32];
    bench_gpu_name(gpu, sizeof gpu);
    bench_date(date, sizeof date);
    if (probe) {
        printf("%s\n", gpu);
        spk_context_destroy(B.ctx);
        return 0;
    }
    B.stream = bench_stream(B.ctx);
    B.ops = spk_vec_ops_cuda();
    bench_cusparse(cusparseCreate(&B.sp), "cusparseCreate");
    bench_cusparse(cusparseSetStream(B.sp, B.stream), "cusparseSetStream");

    bench_watchdog(B.timeout, "measuring the copy bandwidth");
    B.copy_gbs = bench_copy_bandwidth(B.stream, (size_t)copy_mb << 20, B.warmup, B.reps);
    printf("bench_spmv: %s, %s\ncopy bandwidth (device to device, %ld MiB, read + write): "
           "%.0f GB/s; median of %d after %d warm-up\n",
           gpu, date, copy_mb, B.copy_gbs, B.reps, B.warmup);
    fflush(stdout);

    mresult *res = (mresult *)bench_malloc((size_t)nspec, sizeof *res);
    for (int i = 0; i < nspec; i++) {
        run_matrix(&B, specs[i], &res[i]);
        print_matrix(&B, &res[i]);
        fflush(stdout);
        write_outputs(outs, nouts, &B, gpu, date, res, i + 1);
    }
    print_summary(&B, res, nspec);
    if (B.failures)
        printf("\n%d FAIL result(s): see the FAIL lines above\n", B.failures);
    cusparseDestroy(B.sp);
    spk_context_destroy(B.ctx);
    free(res);
    return B.failures ? BENCH_EXIT_FAIL : 0;
}
