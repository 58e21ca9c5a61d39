/* bench/bench_case.h -- what the preconditioner benchmarks (bench_amg.c, bench_ilu.c) share,
 * over the public API only: a case is one solver made on A with the options, timed for its
 * setup (the solver's creation; and a second creation on the same matrix after the first is
 * destroyed, which holds none of the process's one-time costs: the CUDA modules' lazy loading,
 * the libraries' first calls), a warm solve (the second of two, so that no first-use cost
 * is in it) and a refresh after a value update of the same pattern; the matrix from a
 * generator spec or a Matrix Market file; b = A x for x uniform in [0, 1) (seeded), a
 * right-hand side with every frequency; the context; one JSON object per case.
 *
 * A solve takes host arrays (spk_solver_solve: its time includes the download of x, which on
 * the GPU crosses PCIe from pageable memory: some 3.4 ms for poisson3d:150's 27 MB on the
 * H200's host), or with `resident` b and x in the context's device memory
 * (spk_solver_solve_device), as a finite-element loop that keeps its vectors on the GPU runs
 * it: the solver's own time. */
#ifndef SPK_BENCH_CASE_H
#define SPK_BENCH_CASE_H

#include "spk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef SPK_BENCH_CUDA
#include <cuda_runtime_api.h>
#endif

static double bc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bc_outcome {
    double setup_s, refresh_s, solve_s, precond_s;   /* precond_s: the first solve's share */
    double setup2_s;                                 /* a second creation, after the first */
    int64_t its;
    spk_reason reason;
    double true_rel;
    char info[2048];                                 /* spk_solver_precond_describe        */
} bc_outcome;

/* b and x in device memory for a resident solve: copies of b and of x (zero) on a CUDA
 * context, the host arrays themselves on a CPU one. 0, or 1 with the message on stderr. */
static int bc_resident(const char *prog, spk_context *ctx, const double *b, double *x,
                       int64_t n, double **d_b, double **d_x)
{
    *d_b = (double *)b;
    *d_x = x;
    if (spk_context_device(ctx) != SPK_DEVICE_CUDA)
        return 0;
#ifdef SPK_BENCH_CUDA
    const size_t bytes = ((size_t)n + 1) * sizeof(double);
    *d_b = *d_x = NULL;
    if (cudaMalloc((void **)d_b, bytes) == cudaSuccess &&
        cudaMalloc((void **)d_x, bytes) == cudaSuccess &&
        cudaMemcpy(*d_b, b, (size_t)n * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess &&
        cudaMemset(*d_x, 0, bytes) == cudaSuccess)
        return 0;
    cudaFree(*d_b);
    cudaFree(*d_x);
    *d_b = *d_x = NULL;
    fprintf(stderr, "%s: --resident: device vectors of %lld doubles: cudaMalloc failed\n", prog,
            (long long)n);
#else
    fprintf(stderr, "%s: --resident: built without CUDA\n", prog);
#endif
    return 1;
}

static void bc_resident_free(spk_context *ctx, double *d_b, double *d_x)
{
#ifdef SPK_BENCH_CUDA
    if (spk_context_device(ctx) == SPK_DEVICE_CUDA) {
        cudaFree(d_b);
        cudaFree(d_x);
    }
#else
    (void)ctx;
    (void)d_b;
    (void)d_x;
#endif
}

/* Run one case; 0, or 1 when the setup or a solve failed (the message on stderr, after
 * `prog`) or the solve did not converge. resident: b and x on the device (above). */
static int bc_run(const char *prog, spk_context *ctx, spk_matrix *A, const double *b, int64_t n,
                  const spk_options *opt, int resident, bc_outcome *o)
{
    memset(o, 0, sizeof *o);
    double *x = calloc((size_t)n + 1, sizeof *x);
    double *d_b = NULL, *d_x = NULL;
    if (resident && bc_resident(prog, ctx, b, x, n, &d_b, &d_x)) {
        free(x);
        return 1;
    }
    spk_solver *S = NULL;
    spk_result res;
    const double t0 = bc_now();
    spk_status st = spk_solver_create(ctx, A, opt, &S);
    o->setup_s = bc_now() - t0;
    if (!st) {  /* again, on the same matrix: what the first held of one-time costs */
        spk_solver_destroy(S);
        S = NULL;
        const double t2 = bc_now();
        st = spk_solver_create(ctx, A, opt, &S);
        o->setup2_s = bc_now() - t2;
    }
    if (!st)    /* the second creation's */
        spk_solver_precond_describe(S, o->info, sizeof o->info);
    for (int k = 0; k < 2 && !st; k++) {
        st = resident ? spk_solver_solve_device(S, d_b, d_x, &res) : spk_solver_solve(S, b, x, &res);
        if (!st && k == 0) {
            o->precond_s = res.precond_setup_s;
            spk_result_free(&res);
        }
    }
    if (!st) {
        o->solve_s = res.solve_s;
        o->its = res.iterations;
        o->reason = res.reason;
        o->true_rel = res.true_rel;
        spk_result_free(&res);
        const int64_t *rp;
        const int32_t *ci;
        const double *va;
        spk_matrix_csr(A, &rp, &ci, &va);
        double *v = malloc((size_t)rp[n] * sizeof *v + 1);
        memcpy(v, va, (size_t)rp[n] * sizeof *v);
        st = spk_matrix_update_values(ctx, A, rp[n], v, 0);
        const double t1 = bc_now();
        if (!st)
            st = spk_solver_refresh(S);
        o->refresh_s = bc_now() - t1;
        free(v);
    }
    spk_solver_destroy(S);
    if (resident)
        bc_resident_free(ctx, d_b, d_x);
    free(x);
    if (st) {
        fprintf(stderr, "%s: %s: %s\n", prog, spk_status_str(st), spk_last_error(ctx));
        return 1;
    }
    return o->reason > 0 ? 0 : 1;
}

/* A from a generator spec or a .mtx file; NULL (the message on stderr) when it fails. */
static spk_matrix *bc_matrix(const char *prog, spk_context *ctx, const char *spec)
{
    spk_matrix *A = NULL;
    spk_status st = spk_is_generator_spec(spec) ? spk_matrix_generate(ctx, spec, &A)
                                                : spk_matrix_read_mtx(ctx, spec, &A);
    if (st)
        fprintf(stderr, "%s: %s: %s\n", prog, spec, spk_last_error(ctx));
    return st ? NULL : A;
}

/* b = A x, x uniform in [0, 1) from a fixed seed (n + 1 doubles, for n = 0 too) */
static double *bc_rhs(spk_context *ctx, spk_matrix *A, int64_t n)
{
    double *xr = malloc((size_t)n * sizeof *xr + 1), *b = calloc((size_t)n + 1, sizeof *b);
    uint64_t s = 88172645463325252ull;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        xr[i] = (double)(s >> 11) * 0x1.0p-53;
    }
    spk_matrix_spmv(ctx, A, 1.0, xr, 0.0, b);
    free(xr);
    return b;
}

/* The context on `dev`, or NULL with the exit status in *code: 77 (no GPU, no CUDA support:
 * skipped), 1 otherwise. */
static spk_context *bc_context(const char *prog, spk_device dev, int *code)
{
    spk_context *ctx = NULL;
    spk_status st = spk_context_create(&ctx, dev);
    if (!st)
        return ctx;
    fprintf(stderr, "%s: %s\n", prog, spk_last_error(ctx));
    spk_context_destroy(ctx);
    *code = st == SPK_ERR_CUDA || st == SPK_ERR_NOT_COMPILED ? 77 : 1;
    return NULL;
}

/* One JSON line for a case. */
static void bc_json(FILE *js, spk_context *ctx, const char *matrix, int64_t n, int64_t nnz,
                    const char *precond, const bc_outcome *o)
{
    if (!js)
        return;
    fprintf(js, "{\"matrix\": \"%s\", \"rows\": %lld, \"nnz\": %lld, \"precond\": \"%s\", "
            "\"device\": \"%s\", \"gpu\": \"%s\", \"iterations\": %lld, \"reason\": \"%s\", "
            "\"true_rel\": %.3e, \"setup_s\": %.6f, \"precond_setup_s\": %.6f, "
            "\"setup2_s\": %.6f, \"refresh_s\": %.6f, \"solve_s\": %.6f, \"per_iter_s\": %.9f}\n",
            matrix,
            (long long)n, (long long)nnz, precond, spk_device_str(spk_context_device(ctx)),
            spk_context_device_name(ctx), (long long)o->its, spk_reason_str(o->reason),
            o->true_rel, o->setup_s, o->precond_s, o->setup2_s, o->refresh_s, o->solve_s,
            o->its > 0 ? o->solve_s / (double)o->its : 0.0);
    fflush(js);
}

#endif /* SPK_BENCH_CASE_H */
