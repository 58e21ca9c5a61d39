/* bench/bench_solvers.cu -- time per iteration of spk's CG, BiCGStab and GMRES(30) on the GPU,
 * against each method's memory-traffic floor and against a textbook cuSPARSE + cuBLAS CG on the
 * same system, in one run (the figures and targets: docs/benchmarks.md).
 *
 * Matrices: poisson3d:m for m in --sizes (default 10,16,32,64,100,150,200: 10^3 to 8 x 10^6
 * rows) and --extra specs (default elasticity3d:40). b is a seeded random vector (uniform in
 * [-1, 1)), not A * ones: the symmetric right-hand side of a symmetric grid lives in a small
 * invariant subspace, and a Krylov method would converge (or break down) early there.
 *
 * spk: spk_solve on a CUDA context (--device cpu runs the CPU table instead, for testing), the
 * automatic format, no preconditioner, rtol = atol = 0 and maxiter --maxiter (200), so every
 * method runs the same number of iterations unless it breaks down (the reason is printed).
 * One warm-up solve (format setup, first-call costs), then --reps (3) pairs of solves: maxiter
 * 30 and maxiter --maxiter. Time per iteration = the median of (solve_s(full) - solve_s(short))
 * / (iterations(full) - iterations(short)): the marginal cost of an iteration, as a solver loop
 * pays it, without the fixed costs every solve_s carries (vector allocations, the final true
 * residual, the download of x). solve_s / iterations of the full solve is reported beside it
 * ("whole").
 *
 * Textbook CG (GPU only): cusparseSpMV (CSR, 32-bit indices, CUSPARSE_SPMV_ALG_DEFAULT, buffer
 * and preprocess outside the loop) + cublasDdot / cublasDaxpy / cublasDscal with host scalars,
 * as NVIDIA's conjugateGradient sample: q = A p, p'q (sync), x += a p, r -= a q, r'r (sync),
 * p = r + b p (scal + axpy). Host wall clock over the loop, median of --reps.
 *
 * Floors, per iteration, with M = 12 nnz + 8 (n + 1) bytes (CSR with 64-bit offsets) and B
 * the device-to-device copy bandwidth measured in this run (bytes read + written):
 *   CG        (M + 10 n doubles) / B  -- the fused floor: q = A p (p read, q written),
 *             the update x += a p, r -= a q with r'r (p, q, x, r read; x, r written), p = r + b p
 *             (r, p read; p written), p'q folded into the SpMV: 2 + 6 + 3 = 11, minus one read
 *             of p shared by the SpMV and the update when fused: 10.
 *   BiCGStab  (2 M + 20 n doubles) / B -- v = A p with (r0, v) (p, r0 read; v written: 3),
 *             s = r - a v with ||s|| (3), t = A s with (t, s), (t, t) (2), x += a p + w s (4),
 *             r = s - w t with (r0, r), ||r|| (4), p = r + b (p - w v) (4).
 *   GMRES(m)  each inner iteration with k basis vectors: M + (3k + 9) n doubles -- w = A v_j (2),
 *             CGS2 in three passes: h1 = V'w (k + 1), w -= V h1 fused with h2 = V'w (k + 2),
 *             w -= V h2 fused with ||w|| (k + 2), v_{j+1} = w / ||w|| (2); each restart cycle of
 *             c iterations adds M + (c + 7) n: x += V y (c + 2), r = b - A x (3), v_0 = r/||r||
 *             (2). Summed over the iterations actually run and divided by their number.
 *
 *   bench_solvers [--out FILE.json|FILE.csv]... [--sizes 10,16,...] [--extra SPEC,...]
 *                 [--maxiter 200] [--reps 3] [--restart 30] [--device gpu|cpu]
 *                 [--copy-mb 2048] [--timeout 180]
 * A failed spk_solve prints a FAIL line and the run goes on; so does a disagreement between
 * spk's CG and the textbook CG on the true residual after the same iterations (both are the
 * same arithmetic). A GPU left unusable ends the run, a per-phase watchdog (--timeout) a hung
 * one; the --out files are rewritten after every matrix. Exit codes: bench_util.h (1: a FAIL).
 * Cost: well under a minute of GPU time; poisson3d:200 (8 M rows) dominates the host side. */
#include "bench_util.h"

#include <stdint.h>

#define DEFAULT_SIZES "10,16,32,64,100,150,200"
#define DEFAULT_EXTRA "elasticity3d:40"
#define DEFAULT_MAXITER 200
#define DEFAULT_REPS 3
#define DEFAULT_RESTART 30
#define DEFAULT_COPY_MB 2048
#define DEFAULT_TIMEOUT 180
#define WARMUP_ITERS 10
#define SHORT_ITERS 30               /* the short solve of the difference: one GMRES(30) cycle  */
#define B_SEED 20261129u
#define MAX_MATRICES 32
/* CG and textbook CG run the same arithmetic: their true residuals after the same iterations
 * must agree within this factor, unless both are at rounding level (below CHECK_FLOOR). */
#define CG_AGREE_FACTOR 2.0
#define CHECK_FLOOR 1e-10

typedef struct sres {
    const char *impl;                /* "spk" or "textbook"                                    */
    char        method[16];          /* "cg", "bicgstab", "gmres(30)"                          */
    int64_t     iterations;
    char        reason[40];
    double      us;                  /* per iteration, marginal: fixed costs differenced out   */
    double      us_whole;            /* solve_s / iterations of the full solve                 */
    double      floor_us, true_rel, setup_s;
} sres;

typedef struct mres {
    char    name[64];
    int64_t n, nnz;
    int     poisson_m;               /* m of poisson3d:m, 0 otherwise                          */
    char    format[16];
    double  matrix_bytes;
    sres    r[4];
    int     nr;
    int     cg_mismatch;
} mres;

typedef struct bench {
    spk_context *ctx;
    spk_device   device;
    cudaStream_t stream;
    int          maxiter, reps, restart;
    unsigned     timeout;
    double       copy_gbs;
    int          failures;
} bench;

/* ---- floors (bytes per iteration) --------------------------------------------------------- */

static double floor_cg(double M, double n) { return M + 8.0 * 10.0 * n; }
static double floor_bicgstab(double M, double n) { return 2.0 * M + 8.0 * 20.0 * n; }

/* Total over `its` inner iterations of GMRES(m), cycles of m then the remainder. */
static double floor_gmres_total(double M, double n, int64_t its, int m)
{
    double total = 0.0;
    for (int64_t done = 0; done < its;) {
        int64_t c = its - done < m ? its - done : m;
        for (int64_t j = 0; j < c; j++)
            total += M + 8.0 * n * (3.0 * (double)(j + 1) + 9.0);
        total += M + 8.0 * n * ((double)c + 7.0);
        done += c;
    }
    return total;
}

/* Floor bytes of iterations it0 + 1 .. it1 of `method`, per iteration. */
static double floor_per_iter(spk_method method, double M, double n, int64_t it0, int64_t it1,
                             int m)
{
    if (it1 <= it0)
        return NAN;
    if (method == SPK_METHOD_CG)
        return floor_cg(M, n);
    if (method == SPK_METHOD_BICGSTAB)
        return floor_bicgstab(M, n);
    return (floor_gmres_total(M, n, it1, m) - floor_gmres_total(M, n, it0, m)) /
           (double)(it1 - it0);
}

static const char floor_text_cg[] = "(M + 10 n doubles) / B";
static const char floor_text_bicgstab[] = "(2 M + 20 n doubles) / B";
static const char floor_text_gmres[] =
    "per inner iteration with k basis vectors M + (3k + 9) n doubles, per restart cycle of c "
    "iterations M + (c + 7) n doubles, averaged over the iterations run, / B";

/* ---- spk ----------------------------------------------------------------------------------- */

/* A failed spk_solve: recorded and printed as FAIL, and the run goes on with the next method
 * unless the GPU is left unusable (a sticky fault), which ends the program. */
static void solve_failed(bench *B, sres *out, const char *what, spk_status st)
{
    B->failures++;
    snprintf(out->reason, sizeof out->reason, "error: %s", spk_status_str(st));
    out->us = out->us_whole = out->floor_us = out->true_rel = NAN;
    printf("FAIL %s: %s: %s\n", what, spk_status_str(st), spk_last_error(B->ctx));
    fflush(stdout);
    if (B->device == SPK_DEVICE_CUDA) {
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess)
            bench_die(BENCH_EXIT_SYSTEM, "%s left the GPU unusable: %s (%s)", what,
                      cudaGetErrorString(e), cudaGetErrorName(e));
        (void)cudaGetLastError();
    }
}

static void run_spk(bench *B, spk_matrix *A, const double *b, spk_method method, sres *out,
                    const char *mname, double M)
{
    const int64_t n = A->csr.nrows;
    double *x = (double *)bench_malloc((size_t)n, sizeof *x);
    double *per = (double *)bench_malloc((size_t)B->reps, sizeof *per);
    double *whole = (double *)bench_malloc((size_t)B->reps, sizeof *whole);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = method;
    opt.format = SPK_FMT_AUTO;
    opt.rtol = 0.0;
    opt.atol = 0.0;
    opt.restart = B->restart;
    spk_result res;
    memset(&res, 0, sizeof res);

    out->impl = "spk";
    if (method == SPK_METHOD_GMRES)
        snprintf(out->method, sizeof out->method, "gmres(%d)", B->restart);
    else
        snprintf(out->method, sizeof out->method, "%s", spk_method_str(method));
    bench_watchdog(B->timeout, "%s: spk %s", mname, out->method);
    char what[128];
    snprintf(what, sizeof what, "%.80s: spk_solve %s", mname, out->method);

    opt.maxiter = WARMUP_ITERS;
    spk_status st = spk_solve(B->ctx, A, b, x, &opt, &res);
    out->setup_s = res.setup_s;
    spk_result_free(&res);
    /* Each rep: a short solve (SHORT_ITERS) and the full one; their difference is the cost of
     * the extra iterations alone, without the allocations, the true residual and the download
     * of x that every solve_s carries (a 27 MB download is ~10% of 200 CG iterations on
     * poisson3d:150). */
    int64_t it0 = 0, it1 = 0;
    for (int k = 0; k < B->reps && !st; k++) {
        double t0 = 0.0;
        opt.maxiter = SHORT_ITERS < B->maxiter ? SHORT_ITERS : B->maxiter;
        if ((st = spk_solve(B->ctx, A, b, x, &opt, &res)))
            break;
        it0 = res.iterations;
        t0 = res.solve_s;
        spk_result_free(&res);
        opt.maxiter = B->maxiter;
        if ((st = spk_solve(B->ctx, A, b, x, &opt, &res)))
            break;
        it1 = res.iterations;
        whole[k] = res.solve_s / (double)(it1 > 0 ? it1 : 1);
        per[k] = it1 > it0 ? (res.solve_s - t0) / (double)(it1 - it0) : whole[k];
        out->iterations = it1;
        out->true_rel = res.true_rel;
        snprintf(out->reason, sizeof out->reason, "%s", spk_reason_str(res.reason));
        spk_result_free(&res);
    }
    if (st) {
        solve_failed(B, out, what, st);
    } else {
        out->us = 1e6 * bench_median(per, B->reps);
        out->us_whole = 1e6 * bench_median(whole, B->reps);
        double fb = it1 > it0 ? floor_per_iter(method, M, (double)n, it0, it1, B->restart)
                              : floor_per_iter(method, M, (double)n, 0, it1, B->restart);
        out->floor_us = fb / (B->copy_gbs * 1e9) * 1e6;
    }
    free(x);
    free(per);
    free(whole);
}

/* ---- textbook cuSPARSE + cuBLAS CG ---------------------------------------------------------- */

static void run_textbook(bench *B, const spk_csr *A, const double *b, sres *out, const char *mname,
                         double M)
{
    const int64_t n = A->nrows;
    out->impl = "textbook";
    snprintf(out->method, sizeof out->method, "cg");
    bench_watchdog(B->timeout, "%s: textbook cuSPARSE + cuBLAS CG", mname);
    if (A->nnz > INT32_MAX || n > INT32_MAX)
        bench_die(BENCH_EXIT_USAGE, "%s: nnz >= 2^31 does not fit 32-bit cuSPARSE indices", mname);

    double t0 = bench_now();
    int32_t *rp = (int32_t *)bench_malloc((size_t)n + 1, sizeof *rp);
    for (int64_t i = 0; i <= n; i++)
        rp[i] = (int32_t)A->rowptr[i];
    int32_t *d_rp = NULL, *d_ci = NULL;
    double *d_v = NULL, *d_b = NULL, *d_x = NULL, *d_r = NULL, *d_p = NULL, *d_q = NULL;
    const size_t vb = (size_t)n * sizeof(double);
    bench_cuda(cudaMalloc((void **)&d_rp, ((size_t)n + 1) * sizeof *d_rp), "cudaMalloc row offsets");
    bench_cuda(cudaMalloc((void **)&d_ci, (size_t)A->nnz * sizeof *d_ci + 4), "cudaMalloc columns");
    bench_cuda(cudaMalloc((void **)&d_v, (size_t)A->nnz * sizeof *d_v + 8), "cudaMalloc values");
    bench_cuda(cudaMalloc((void **)&d_b, vb), "cudaMalloc b");
    bench_cuda(cudaMalloc((void **)&d_x, vb), "cudaMalloc x");
    bench_cuda(cudaMalloc((void **)&d_r, vb), "cudaMalloc r");
    bench_cuda(cudaMalloc((void **)&d_p, vb), "cudaMalloc p");
    bench_cuda(cudaMalloc((void **)&d_q, vb), "cudaMalloc q");
    bench_cuda(cudaMemcpy(d_rp, rp, ((size_t)n + 1) * sizeof *rp, cudaMemcpyHostToDevice), "upload row offsets");
    bench_cuda(cudaMemcpy(d_ci, A->colind, (size_t)A->nnz * sizeof *d_ci, cudaMemcpyHostToDevice), "upload columns");
    bench_cuda(cudaMemcpy(d_v, A->val, (size_t)A->nnz * sizeof *d_v, cudaMemcpyHostToDevice), "upload values");
    bench_cuda(cudaMemcpy(d_b, b, vb, cudaMemcpyHostToDevice), "upload b");
    free(rp);

    cusparseHandle_t sp;
    cublasHandle_t bl;
    cusparseSpMatDescr_t mat;
    cusparseDnVecDescr_t vp, vq;
    bench_cusparse(cusparseCreate(&sp), "cusparseCreate");
    bench_cublas(cublasCreate(&bl), "cublasCreate");
    bench_cusparse(cusparseSetStream(sp, B->stream), "cusparseSetStream");
    bench_cublas(cublasSetStream(bl, B->stream), "cublasSetStream");
    bench_cublas(cublasSetPointerMode(bl, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
    bench_cusparse(cusparseCreateCsr(&mat, n, n, A->nnz, d_rp, d_ci, d_v, CUSPARSE_INDEX_32I,
                                     CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F),
                   "cusparseCreateCsr");
    bench_cusparse(cusparseCreateDnVec(&vp, n, d_p, CUDA_R_64F), "cusparseCreateDnVec p");
    bench_cusparse(cusparseCreateDnVec(&vq, n, d_q, CUDA_R_64F), "cusparseCreateDnVec q");
    const double one = 1.0, zero = 0.0;
    size_t bytes = 0;
    void *buf = NULL;
    bench_cusparse(cusparseSpMV_bufferSize(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, vp,
                                           &zero, vq, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT, &bytes),
                   "cusparseSpMV_bufferSize");
    bench_cuda(cudaMalloc(&buf, bytes ? bytes : 8), "cudaMalloc SpMV buffer");
    cusparseStatus_t ps = cusparseSpMV_preprocess(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, vp,
                                                  &zero, vq, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT, buf);
    if (ps != CUSPARSE_STATUS_SUCCESS)                /* optional: run without it */
        printf("note: %s: textbook CG runs without cusparseSpMV_preprocess (%s)\n", mname,
               cusparseGetErrorString(ps));
    bench_cuda(cudaStreamSynchronize(B->stream), "textbook setup");
    out->setup_s = bench_now() - t0;

    const int ni = n > INT32_MAX ? INT32_MAX : (int)n;
    double *per = (double *)bench_malloc((size_t)B->reps, sizeof *per);
    int64_t it = 0;
    for (int rep = -1; rep < B->reps; rep++) {      /* rep -1: a short warm-up solve */
        const int64_t limit = rep < 0 ? WARMUP_ITERS : B->maxiter;
        double rr = 0.0;
        bench_cuda(cudaMemsetAsync(d_x, 0, vb, B->stream), "x = 0");
        bench_cuda(cudaMemcpyAsync(d_r, d_b, vb, cudaMemcpyDeviceToDevice, B->stream), "r = b");
        bench_cuda(cudaMemcpyAsync(d_p, d_b, vb, cudaMemcpyDeviceToDevice, B->stream), "p = b");
        bench_cublas(cublasDdot(bl, ni, d_r, 1, d_r, 1, &rr), "cublasDdot r'r");
        double t1 = bench_now();
        for (it = 0; it < limit;) {
            double pq = 0.0, rr_new = 0.0;
            bench_cusparse(cusparseSpMV(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, vp, &zero,
                                        vq, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT, buf),
                           "cusparseSpMV q = A p");
            bench_cublas(cublasDdot(bl, ni, d_p, 1, d_q, 1, &pq), "cublasDdot p'q");
            if (!(pq > 0.0) || !(rr > 0.0))
                break;
            const double alpha = rr / pq, malpha = -alpha;
            bench_cublas(cublasDaxpy(bl, ni, &alpha, d_p, 1, d_x, 1), "cublasDaxpy x += a p");
            bench_cublas(cublasDaxpy(bl, ni, &malpha, d_q, 1, d_r, 1), "cublasDaxpy r -= a q");
            bench_cublas(cublasDdot(bl, ni, d_r, 1, d_r, 1, &rr_new), "cublasDdot r'r");
            const double beta = rr_new / rr;
            rr = rr_new;
            bench_cublas(cublasDscal(bl, ni, &beta, d_p, 1), "cublasDscal p *= b");
            bench_cublas(cublasDaxpy(bl, ni, &one, d_r, 1, d_p, 1), "cublasDaxpy p += r");
            it++;
        }
        bench_cuda(cudaStreamSynchronize(B->stream), "textbook CG loop");
        if (rep >= 0)
            per[rep] = (bench_now() - t1) / (double)(it > 0 ? it : 1);
    }
    out->us = out->us_whole = 1e6 * bench_median(per, B->reps);   /* a bare loop: no fixed cost */
    out->iterations = it;
    snprintf(out->reason, sizeof out->reason, "%s", it == B->maxiter ? "maxiter" : "p'Ap <= 0");

    /* true residual ||b - A x|| / ||b|| on the host */
    double *x = (double *)bench_malloc((size_t)n, sizeof *x);
    double *r = (double *)bench_malloc((size_t)n, sizeof *r);
    bench_cuda(cudaMemcpy(x, d_x, vb, cudaMemcpyDeviceToHost), "download x");
    spk_csr_spmv_ref(A, 1.0, x, 0.0, r);
    double rn = 0.0, bn = 0.0;
    for (int64_t i = 0; i < n; i++) {
        rn += (b[i] - r[i]) * (b[i] - r[i]);
        bn += b[i] * b[i];
    }
    out->true_rel = bn > 0.0 ? sqrt(rn / bn) : sqrt(rn);
    out->floor_us = floor_cg(M, (double)n) / (B->copy_gbs * 1e9) * 1e6;

    free(x);
    free(r);
    free(per);
    bench_cusparse(cusparseDestroyDnVec(vp), "cusparseDestroyDnVec");
    bench_cusparse(cusparseDestroyDnVec(vq), "cusparseDestroyDnVec");
    bench_cusparse(cusparseDestroySpMat(mat), "cusparseDestroySpMat");
    bench_cusparse(cusparseDestroy(sp), "cusparseDestroy");
    bench_cublas(cublasDestroy(bl), "cublasDestroy");
    void *bufs[] = {d_rp, d_ci, d_v, d_b, d_x, d_r, d_p, d_q, buf};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        bench_cuda(cudaFree(bufs[i]), "cudaFree");
}

/* ---- host copy bandwidth (--device cpu) ---------------------------------------------------- */

/* memcpy bandwidth of one thread, bytes read + written, median of reps: the yardstick of the
 * CPU floors when the program is run with --device cpu (a test mode; the GPU is the subject). */
static double host_copy_bandwidth(size_t bytes, int reps)
{
    char *a = (char *)bench_malloc(bytes, 1), *b = (char *)bench_malloc(bytes, 1);
    memset(a, 1, bytes);
    memcpy(b, a, bytes);
    double *t = (double *)bench_malloc((size_t)reps, sizeof *t);
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now();
        memcpy(b, a, bytes);
        t[i] = bench_now() - t0;
        a[i % bytes] = b[(i * 7) % bytes];       /* keep the copies observable */
    }
    double s = bench_median(t, reps);
    free(a);
    free(b);
    free(t);
    return 2.0 * (double)bytes / s * 1e-9;
}

/* ---- one matrix ---------------------------------------------------------------------------- */

static void run_matrix(bench *B, const char *spec, mres *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%.63s", spec);
    if (strncmp(spec, "poisson3d:", 10) == 0)
        out->poisson_m = atoi(spec + 10);
    bench_watchdog(B->timeout, "%s: generating", spec);
    spk_matrix *A = NULL;
    bench_spk(B->ctx, spk_matrix_generate(B->ctx, spec, &A), spec);
    const spk_csr *C = &A->csr;
    out->n = C->nrows;
    out->nnz = C->nnz;
    out->matrix_bytes = 12.0 * (double)C->nnz + 8.0 * (double)(C->nrows + 1);
    spk_matrix_info info;
    bench_spk(B->ctx, spk_matrix_get_info(A, &info), "spk_matrix_get_info");
    snprintf(out->format, sizeof out->format, "%s",
             spk_format_str(spk_select_format(&info, B->device, NULL, 0)));

    double *b = (double *)bench_malloc((size_t)C->nrows, sizeof *b);
    bench_random_vector(b, C->nrows, B_SEED);
    const spk_method methods[] = {SPK_METHOD_CG, SPK_METHOD_BICGSTAB, SPK_METHOD_GMRES};
    for (int k = 0; k < 3; k++)
        run_spk(B, A, b, methods[k], &out->r[out->nr++], spec, out->matrix_bytes);
    if (B->device == SPK_DEVICE_CUDA) {
        sres *tb = &out->r[out->nr++];
        run_textbook(B, C, b, tb, spec, out->matrix_bytes);
        const sres *cg = &out->r[0];
        double hi = fmax(cg->true_rel, tb->true_rel), lo = fmin(cg->true_rel, tb->true_rel);
        if (hi > CHECK_FLOOR && cg->iterations == tb->iterations && !(hi <= CG_AGREE_FACTOR * lo)) {
            out->cg_mismatch = 1;
            B->failures++;
            printf("FAIL %s: after %lld iterations spk CG's true residual %.3e and textbook CG's "
                   "%.3e differ by more than %gx\n", spec, (long long)cg->iterations,
                   cg->true_rel, tb->true_rel, CG_AGREE_FACTOR);
        }
    }
    free(b);
    spk_matrix_destroy(A);
    alarm(0);
}

/* ---- output -------------------------------------------------------------------------------- */

static void print_matrix(const bench *B, const mres *m)
{
    printf("\n== %s: n %lld, nnz %lld, auto format %s, matrix M = %.4g MB\n", m->name,
           (long long)m->n, (long long)m->nnz, m->format, 1e-6 * m->matrix_bytes);
    printf("%-10s %-9s %6s %-22s %10s %10s %10s %8s %11s %8s\n", "method", "impl", "iters",
           "reason", "us/iter", "whole", "floor us", "x floor", "true rel", "setup s");
    for (int i = 0; i < m->nr; i++) {
        const sres *r = &m->r[i];
        printf("%-10s %-9s %6lld %-22s %10.1f %10.1f %10.1f %8.2f %11.3e %8.3f\n", r->method,
               r->impl, (long long)r->iterations, r->reason, r->us, r->us_whole, r->floor_us,
               r->us / r->floor_us, r->true_rel, r->setup_s);
    }
    if (m->nr > 3)
        printf("spk CG is %.2fx faster per iteration than textbook cuSPARSE + cuBLAS CG\n",
               m->r[3].us / m->r[0].us);
    (void)B;
}

static void print_summary(const bench *B, const mres *m, int n)
{
    printf("\n== CG per iteration against rows (%s)\n", B->device == SPK_DEVICE_CUDA ? "GPU" : "CPU");
    printf("%-18s %10s %10s %10s %10s %9s %12s\n", "matrix", "rows", "spk us", "textbook", "floor us",
           "spk/floor", "textbook/spk");
    for (int i = 0; i < n; i++) {
        const mres *r = &m[i];
        double tb = r->nr > 3 ? r->r[3].us : NAN;
        printf("%-18s %10lld %10.1f %10.1f %10.1f %9.2f %12.2f\n", r->name, (long long)r->n,
               r->r[0].us, tb, r->r[0].floor_us, r->r[0].us / r->r[0].floor_us, tb / r->r[0].us);
    }
}

static void write_json(const char *path, const bench *B, const char *dev, const char *date,
                       const mres *m, int n)
{
    FILE *f = bench_open_out(path);
    fprintf(f, "{\n  \"program\": \"bench_solvers\",\n  \"device\": \"%s\",\n  \"gpu\": ",
            B->device == SPK_DEVICE_CUDA ? "gpu" : "cpu");
    bench_json_str(f, dev);
    fprintf(f, ",\n  \"date\": \"%s\",\n  \"copy_gbs\": ", date);
    bench_json_num(f, B->copy_gbs);
    fprintf(f, ",\n  \"maxiter\": %d,\n  \"reps\": %d,\n  \"restart\": %d,\n", B->maxiter, B->reps,
            B->restart);
    fprintf(f, "  \"matrix_bytes\": \"M = 12 nnz + 8 (n + 1)\",\n  \"floors\": {\"cg\": ");
    bench_json_str(f, floor_text_cg);
    fprintf(f, ", \"bicgstab\": ");
    bench_json_str(f, floor_text_bicgstab);
    fprintf(f, ", \"gmres\": ");
    bench_json_str(f, floor_text_gmres);
    fprintf(f, "},\n  \"failures\": %d,\n  \"matrices\": [\n", B->failures);
    for (int i = 0; i < n; i++) {
        const mres *r = &m[i];
        fprintf(f, "    {\"name\": ");
        bench_json_str(f, r->name);
        fprintf(f, ", \"rows\": %lld, \"nnz\": %lld, \"poisson_m\": %d, \"format\": \"%s\", "
                   "\"matrix_bytes\": %.0f, \"cg_mismatch\": %s,\n     \"results\": [\n",
                (long long)r->n, (long long)r->nnz, r->poisson_m, r->format, r->matrix_bytes,
                r->cg_mismatch ? "true" : "false");
        for (int j = 0; j < r->nr; j++) {
            const sres *s = &r->r[j];
            fprintf(f, "       {\"impl\": \"%s\", \"method\": \"%s\", \"iterations\": %lld, "
                       "\"reason\": \"%s\", \"us_per_iter\": ", s->impl, s->method,
                    (long long)s->iterations, s->reason);
            bench_json_num(f, s->us);
            fprintf(f, ", \"us_per_iter_whole\": ");
            bench_json_num(f, s->us_whole);
            fprintf(f, ", \"floor_us\": ");
            bench_json_num(f, s->floor_us);
            fprintf(f, ", \"ratio_to_floor\": ");
            bench_json_num(f, s->us / s->floor_us);
            fprintf(f, ", \"true_rel\": ");
            bench_json_num(f, s->true_rel);
            fprintf(f, ", \"setup_s\": ");
            bench_json_num(f, s->setup_s);
            fprintf(f, "}%s\n", j + 1 < r->nr ? "," : "");
        }
        fprintf(f, "     ]}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    bench_close_out(f, path);
}

static void write_csv(const char *path, const bench *B, const char *dev, const char *date,
                      const mres *m, int n)
{
    FILE *f = bench_open_out(path);
    fprintf(f, "date,device,copy_gbs,matrix,rows,nnz,format,impl,method,iterations,reason,"
               "us_per_iter,us_per_iter_whole,floor_us,ratio_to_floor,true_rel,setup_s\n");
    for (int i = 0; i < n; i++) {
        const mres *r = &m[i];
        for (int j = 0; j < r->nr; j++) {
            const sres *s = &r->r[j];
            fprintf(f, "%s,", date);
            bench_csv_str(f, dev);
            fprintf(f, ",%.1f,%s,%lld,%lld,%s,%s,%s,%lld,%s,%.3f,%.3f,%.3f,%.4f,%.6g,%.4f\n",
                    B->copy_gbs, r->name, (long long)r->n, (long long)r->nnz, r->format, s->impl,
                    s->method, (long long)s->iterations, s->reason, s->us, s->us_whole,
                    s->floor_us, s->us / s->floor_us, s->true_rel, s->setup_s);
        }
    }
    bench_close_out(f, path);
}

/* ---- arguments ----------------------------------------------------------------------------- */

/* Split a comma list into specs; sizes become "poisson3d:<m>". */
static int add_list(const char *list, int sizes, char (*specs)[64], int n)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == MAX_MATRICES)
            bench_die(BENCH_EXIT_USAGE, "too many matrices (at most %d)", MAX_MATRICES);
        if (sizes)
            snprintf(specs[n++], 64, "poisson3d:%ld", bench_parse_int("--sizes", t, 2, 2000));
        else if (spk_is_generator_spec(t))
            snprintf(specs[n++], 64, "%s", t);
        else
            bench_die(BENCH_EXIT_USAGE, "--extra %s: not a generator spec", t);
    }
    return n;
}

static const char usage[] =
    "usage: bench_solvers [--out FILE.json|FILE.csv]... [--sizes 10,16,32,64,100,150,200]\n"
    "                     [--extra elasticity3d:40] [--maxiter 200] [--reps 3] [--restart 30]\n"
    "                     [--device gpu|cpu] [--copy-mb 2048] [--timeout 180]\n"
    "--sizes: m of poisson3d:m (empty string: none); --extra: more generator specs.\n";

int main(int argc, char **argv)
{
    bench_prog = "bench_solvers";
    bench B;
    memset(&B, 0, sizeof B);
    B.maxiter = DEFAULT_MAXITER;
    B.reps = DEFAULT_REPS;
    B.restart = DEFAULT_RESTART;
    B.timeout = DEFAULT_TIMEOUT;
    B.device = SPK_DEVICE_CUDA;
    long copy_mb = DEFAULT_COPY_MB;
    const char *sizes = DEFAULT_SIZES, *extra = DEFAULT_EXTRA, *outs[8];
    int nouts = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--out") && v) {
            if (!bench_ends_with(v, ".json") && !bench_ends_with(v, ".csv"))
                bench_die(BENCH_EXIT_USAGE, "--out %s: the name must end in .json or .csv", v);
            if (nouts == 8)
                bench_die(BENCH_EXIT_USAGE, "at most 8 --out files");
            outs[nouts++] = v;
        } else if (!strcmp(a, "--sizes") && v) {
            sizes = v;
        } else if (!strcmp(a, "--extra") && v) {
            extra = v;
        } else if (!strcmp(a, "--maxiter") && v) {
            B.maxiter = (int)bench_parse_int(a, v, 1, 1000000);
        } else if (!strcmp(a, "--reps") && v) {
            B.reps = (int)bench_parse_int(a, v, 1, 1000);
        } else if (!strcmp(a, "--restart") && v) {
            B.restart = (int)bench_parse_int(a, v, 1, 1000);
        } else if (!strcmp(a, "--copy-mb") && v) {
            copy_mb = bench_parse_int(a, v, 1, 1 << 20);
        } else if (!strcmp(a, "--timeout") && v) {
            B.timeout = (unsigned)bench_parse_int(a, v, 1, 86400);
        } else if (!strcmp(a, "--device") && v) {
            if (!strcmp(v, "cpu"))
                B.device = SPK_DEVICE_CPU;
            else if (strcmp(v, "gpu") && strcmp(v, "cuda"))
                bench_die(BENCH_EXIT_USAGE, "--device expects gpu or cpu, got '%s'", v);
        } else {
            fputs(usage, stderr);
            bench_die(BENCH_EXIT_USAGE, "unknown option or missing value: %s", a);
        }
        i++;                                          /* every option takes a value */
    }
    char specs[MAX_MATRICES][64];
    int nspec = add_list(sizes, 1, specs, 0);
    nspec = add_list(extra, 0, specs, nspec);

    char dev[256], date[32];
    bench_date(date, sizeof date);
    bench_watchdog(B.timeout, "creating the context");
    if (B.device == SPK_DEVICE_CUDA) {
        B.ctx = bench_cuda_context();
        B.stream = bench_stream(B.ctx);
        bench_gpu_name(dev, sizeof dev);
        bench_watchdog(B.timeout, "measuring the copy bandwidth");
        B.copy_gbs = bench_copy_bandwidth(B.stream, (size_t)copy_mb << 20, 10, 50);
    } else {
        bench_spk(NULL, spk_context_create(&B.ctx, SPK_DEVICE_CPU), "CPU context");
        snprintf(dev, sizeof dev, "%s", spk_context_device_name(B.ctx));
        bench_watchdog(B.timeout, "measuring the copy bandwidth");
        B.copy_gbs = host_copy_bandwidth((size_t)(copy_mb < 512 ? copy_mb : 512) << 20, 5);
    }
    printf("bench_solvers: %s, %s\ncopy bandwidth (read + write): %.0f GB/s\n"
           "maxiter %d, rtol = atol = 0, auto format, no preconditioner, b random; us/iter = "
           "median over %d of (solve_s(maxiter) - solve_s(30)) / (its - 30), whole = solve_s / its\n"
           "floors, M = 12 nnz + 8 (n + 1) bytes, B = copy bandwidth:\n  cg        %s\n"
           "  bicgstab  %s\n  gmres(%d) %s\n",
           dev, date, B.copy_gbs, B.maxiter, B.reps, floor_text_cg, floor_text_bicgstab, B.restart,
           floor_text_gmres);
    fflush(stdout);

    mres *res = (mres *)bench_malloc((size_t)(nspec > 0 ? nspec : 1), sizeof *res);
    for (int i = 0; i < nspec; i++) {
        run_matrix(&B, specs[i], &res[i]);
        print_matrix(&B, &res[i]);
        fflush(stdout);
        for (int k = 0; k < nouts; k++) {        /* after each matrix: a cut-short run keeps them */
            if (bench_ends_with(outs[k], ".json"))
                write_json(outs[k], &B, dev, date, res, i + 1);
            else
                write_csv(outs[k], &B, dev, date, res, i + 1);
        }
    }
    print_summary(&B, res, nspec);
    if (B.failures)
        printf("\n%d FAIL result(s): see the FAIL lines above\n", B.failures);
    spk_context_destroy(B.ctx);
    free(res);
    return B.failures ? BENCH_EXIT_FAIL : 0;
}
