/* bench/bench_cold.c -- what a one-shot solve costs against the same solve warm: a fresh
 * process makes a context, a matrix and a solver, and solves three times, timing each step.
 * The first solve carries the process's first-use costs (the CUDA runtime loading the kernels
 * the method uses, cuBLAS's first calls, the workspace's allocations, a CUDA graph's capture);
 * the third is warm. Run it in a new process for each case: a second case in the same process
 * would find the kernels loaded.
 *
 *   bench_cold -A SPEC|FILE [--method cg|bicgstab|gmres] [--precond none|jacobi|auto]
 *              [--device cpu|gpu|auto] [--iters N]
 *
 * Every solve runs N iterations (default 100: rtol = atol = 0, the stopping tests off). One
 * line of JSON on stdout: context_s, read_s, create_s (the solver's setup), then per solve
 * solve_s and us_per_iter, and cold_over_warm = solve_s of the first / of the third. */
#include "spk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(spk_context *ctx, spk_status st, const char *what)
{
    fprintf(stderr, "bench_cold: %s: %s: %s\n", what, spk_status_str(st), spk_last_error(ctx));
    exit(st == SPK_ERR_CUDA || st == SPK_ERR_NOT_COMPILED ? 77 : 1);
}

int main(int argc, char **argv)
{
    const char *spec = NULL;
    spk_options opt;
    spk_options_default(&opt);
    spk_device dev = SPK_DEVICE_AUTO;
    long iters = 100;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-A") && v)
            spec = argv[++i];
        else if (!strcmp(a, "--method") && v && spk_method_parse(v, &opt.method) == SPK_OK)
            i++;
        else if (!strcmp(a, "--precond") && v && spk_precond_parse(v, &opt.precond) == SPK_OK)
            i++;
        else if (!strcmp(a, "--device") && v && spk_device_parse(v, &dev) == SPK_OK)
            i++;
        else if (!strcmp(a, "--iters") && v && (iters = strtol(v, NULL, 10)) > 0)
            i++;
        else {
            fprintf(stderr, "usage: bench_cold -A SPEC|FILE [--method M] [--precond P] "
                            "[--device D] [--iters N]\n");
            return 2;
        }
    }
    if (!spec) {
        fprintf(stderr, "bench_cold: -A is required\n");
        return 2;
    }
    opt.rtol = 0.0;
    opt.atol = 0.0;
    opt.dtol = 0.0;
    opt.stagnation = 0;
    opt.maxiter = iters;

    const double t0 = now();
    spk_context *ctx = NULL;
    spk_status st = spk_context_create(&ctx, dev);
    if (st)
        die(ctx, st, "context");
    const double t1 = now();
    spk_matrix *A = NULL;
    st = spk_is_generator_spec(spec) ? spk_matrix_generate(ctx, spec, &A)
                                     : spk_matrix_read_mtx(ctx, spec, &A);
    if (st)
        die(ctx, st, "matrix");
    const double t2 = now();
    spk_matrix_info info;
    spk_matrix_get_info(A, &info);
    const int64_t n = info.nrows;
    double *b = malloc((size_t)(n + 1) * sizeof *b), *x = calloc((size_t)(n + 1), sizeof *x);
    for (int64_t i = 0; i < n; i++)
        b[i] = 1.0 + (double)(i % 13) / 13.0;
    spk_solver *S = NULL;
    if ((st = spk_solver_create(ctx, A, &opt, &S)))
        die(ctx, st, "solver");
    const double t3 = now();
    double solve_s[3], per_it[3];
    int64_t its[3];
    spk_result res;
    for (int k = 0; k < 3; k++) {
        const double a = now();
        if ((st = spk_solver_solve(S, b, x, &res)))
            die(ctx, st, "solve");
        solve_s[k] = now() - a;
        its[k] = res.iterations;
        per_it[k] = 1e6 * solve_s[k] / (double)(its[k] > 0 ? its[k] : 1);
    }
    printf("{\"matrix\": \"%s\", \"n\": %lld, \"nnz\": %lld, \"device\": \"%s\", \"method\": "
           "\"%s\", \"precond\": \"%s\", \"format\": \"%s\", \"iterations\": %lld, "
           "\"context_s\": %.6f, \"read_s\": %.6f, \"create_s\": %.6f, "
           "\"solve_s\": [%.6f, %.6f, %.6f], \"us_per_iter\": [%.2f, %.2f, %.2f], "
           "\"cold_over_warm\": %.3f}\n",
           spec, (long long)n, (long long)info.nnz, spk_device_str(spk_context_device(ctx)),
           spk_method_str(res.method), spk_precond_str(res.precond), spk_format_str(res.format),
           (long long)its[2], t1 - t0, t2 - t1, t3 - t2, solve_s[0], solve_s[1], solve_s[2],
           per_it[0], per_it[1], per_it[2], solve_s[0] / solve_s[2]);
    spk_result_free(&res);
    spk_solver_destroy(S);
    spk_matrix_destroy(A);
    spk_context_destroy(ctx);
    free(b);
    free(x);
    return 0;
}
