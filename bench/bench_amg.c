/* bench/bench_amg.c -- AMG-CG against Jacobi-CG, side by side in one run, on the same matrix
 * and right-hand side: for each, the setup (the solver's creation: format, upload,
 * preconditioner; for AMG the hierarchy on the host and its levels on the device), a refresh
 * after a value update of the same pattern (AMG: the hierarchy's values again), the solve
 * (warm: the second of two solves, so that no first-use cost is in it), the iterations and
 * the time to solution (setup + solve).
 *
 *   bench_amg [--device cpu|gpu|auto] [--rtol X] [--json FILE] SPEC[@rbm][@bN][@chebK]...
 *
 * SPEC is a generator spec or a Matrix Market file; SPEC@rbm gives AMG the generator's node
 * coordinates (spk_generate_coords: the rigid-body modes, lame3d), @bN a block size N, @chebK
 * Chebyshev smoothing of degree K instead of damped Jacobi.
 * b = A x with x uniform in [0, 1) (seeded): a right-hand side with every frequency, unlike
 * A * ones, which lies in smoothed aggregation's coarse space (one V-cycle solves it).
 * A table on stdout, and one JSON object per case in FILE. Exit 0, or 1 when a solve failed
 * or did not converge. */
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

typedef struct outcome {
    double setup_s, refresh_s, solve_s, precond_s;
    int64_t its;
    spk_reason reason;
    double true_rel;
    char info[2048];
} outcome;

static int run_case(spk_context *ctx, spk_matrix *A, const double *b, int64_t n,
                    const spk_options *opt, outcome *o)
{
    memset(o, 0, sizeof *o);
    double *x = calloc((size_t)n + 1, sizeof *x);
    spk_solver *S = NULL;
    spk_result res;
    const double t0 = now();
    spk_status st = spk_solver_create(ctx, A, opt, &S);
    o->setup_s = now() - t0;
    if (st) {
        fprintf(stderr, "bench_amg: setup: %s: %s\n", spk_status_str(st), spk_last_error(ctx));
        free(x);
        return 1;
    }
    spk_solver_precond_describe(S, o->info, sizeof o->info);
    /* the first solve pays the first-use costs; the second is the one reported */
    for (int k = 0; k < 2 && !st; k++) {
        st = spk_solver_solve(S, b, x, &res);
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
        /* a value update of the same pattern (the same values: the cost is what is timed) */
        const int64_t *rp;
        const int32_t *ci;
        const double *va;
        spk_matrix_csr(A, &rp, &ci, &va);
        const int64_t nnz = rp[n];
        double *v = malloc((size_t)nnz * sizeof *v + 1);
        memcpy(v, va, (size_t)nnz * sizeof *v);
        st = spk_matrix_update_values(ctx, A, nnz, v, 0);
        const double t1 = now();
        if (!st)
            st = spk_solver_refresh(S);
        o->refresh_s = now() - t1;
        free(v);
    }
    spk_solver_destroy(S);
    free(x);
    if (st) {
        fprintf(stderr, "bench_amg: %s: %s\n", spk_status_str(st), spk_last_error(ctx));
        return 1;
    }
    return o->reason > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    spk_device dev = SPK_DEVICE_AUTO;
    double rtol = 1e-8;
    const char *json_path = NULL;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        const char *a = argv[first], *v = first + 1 < argc ? argv[first + 1] : NULL;
        if (!strcmp(a, "--device") && v && spk_device_parse(v, &dev) == SPK_OK)
            first++;
        else if (!strcmp(a, "--rtol") && v)
            rtol = strtod(argv[++first], NULL);
        else if (!strcmp(a, "--json") && v)
            json_path = argv[++first];
        else {
            fprintf(stderr, "usage: bench_amg [--device cpu|gpu|auto] [--rtol X] [--json FILE] "
                            "SPEC[@rbm][@bN][@chebK]...\n");
            return 2;
        }
    }
    spk_context *ctx = NULL;
    spk_status st = spk_context_create(&ctx, dev);
    if (st) {
        fprintf(stderr, "bench_amg: %s\n", spk_last_error(ctx));
        return st == SPK_ERR_CUDA || st == SPK_ERR_NOT_COMPILED ? 77 : 1;
    }
    FILE *js = json_path ? fopen(json_path, "w") : NULL;
    printf("bench_amg on %s (%s), rtol %g, b = A x_rand; solve: the second of two, warm\n",
           spk_device_str(spk_context_device(ctx)), spk_context_device_name(ctx), rtol);
    printf("%-16s %9s | %-6s %5s %9s %9s %9s %9s | %s\n", "matrix", "rows", "M", "its",
           "setup s", "refresh s", "solve s", "total s", "AMG solve / Jacobi solve");
    int status = 0;
    for (int c = first; c < argc; c++) {
        char spec[256];
        snprintf(spec, sizeof spec, "%s", argv[c]);
        /* SPEC@rbm, @bN (block size N), @chebK (Chebyshev smoothing of degree K), combinable */
        int rbm = 0, bs = 0, cheb = 0;
        for (char *at = strchr(spec, '@'); at; at = strchr(at + 1, '@')) {
            *at = '\0';
            if (!strncmp(at + 1, "rbm", 3))
                rbm = 1;
            else if (!strncmp(at + 1, "cheb", 4))
                cheb = atoi(at + 5);
            else if (at[1] == 'b')
                bs = atoi(at + 2);
        }
        spk_matrix *A = NULL;
        st = spk_is_generator_spec(spec) ? spk_matrix_generate(ctx, spec, &A)
                                         : spk_matrix_read_mtx(ctx, spec, &A);
        if (st) {
            fprintf(stderr, "bench_amg: %s: %s\n", spec, spk_last_error(ctx));
            status = 1;
            continue;
        }
        spk_matrix_info in;
        spk_matrix_get_info(A, &in);
        const int64_t n = in.nrows;
        double *xr = malloc((size_t)n * sizeof *xr + 1), *b = calloc((size_t)n + 1, sizeof *b);
        uint64_t s = 88172645463325252ull;
        for (int64_t i = 0; i < n; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            xr[i] = (double)(s >> 11) * 0x1.0p-53;
        }
        spk_matrix_spmv(ctx, A, 1.0, xr, 0.0, b);
        spk_options opt;
        spk_options_default(&opt);
        opt.method = SPK_METHOD_CG;
        opt.rtol = rtol;
        double *xyz = NULL;
        if (rbm) {
            int64_t nodes;
            int dim;
            if ((st = spk_generate_coords(ctx, spec, &xyz, &nodes, &dim)) != SPK_OK) {
                fprintf(stderr, "bench_amg: %s@rbm: %s\n", spec, spk_last_error(ctx));
                status = 1;
            } else {
                opt.amg.coords = xyz;
                opt.amg.coord_dim = dim;
            }
        }
        opt.amg.block_size = bs;
        if (cheb > 0) {
            opt.amg.smoother = SPK_AMG_CHEBYSHEV;
            opt.amg.degree = cheb;
        }
        outcome o[2];
        const char *names[2] = {"jacobi", "amg"};
        for (int k = 0; k < 2; k++) {
            opt.precond = k ? SPK_PRECOND_AMG : SPK_PRECOND_JACOBI;
            status |= run_case(ctx, A, b, n, &opt, &o[k]);
            printf("%-16s %9lld | %-6s %5lld %9.4f %9.4f %9.4f %9.4f |", argv[c], (long long)n,
                   names[k], (long long)o[k].its, o[k].setup_s, o[k].refresh_s, o[k].solve_s,
                   o[k].setup_s + o[k].solve_s);
            if (k)
                printf(" %.3f (time to solution %.3f)", o[1].solve_s / o[0].solve_s,
                       (o[1].setup_s + o[1].solve_s) / (o[0].setup_s + o[0].solve_s));
            printf("\n");
            if (js) {
                fprintf(js, "{\"matrix\": \"%s\", \"rows\": %lld, \"nnz\": %lld, \"precond\": \"%s\", "
                        "\"device\": \"%s\", \"gpu\": \"%s\", \"iterations\": %lld, \"reason\": \"%s\", "
                        "\"true_rel\": %.3e, \"setup_s\": %.6f, \"precond_setup_s\": %.6f, "
                        "\"refresh_s\": %.6f, \"solve_s\": %.6f}\n", argv[c], (long long)n,
                        (long long)in.nnz, names[k], spk_device_str(spk_context_device(ctx)),
                        spk_context_device_name(ctx), (long long)o[k].its,
                        spk_reason_str(o[k].reason), o[k].true_rel, o[k].setup_s,
                        o[k].precond_s, o[k].refresh_s, o[k].solve_s);
                fflush(js);
            }
        }
        printf("    %s\n", o[1].info);
        fflush(stdout);
        free(xyz);
        free(xr);
        free(b);
        spk_matrix_destroy(A);
    }
    if (js)
        fclose(js);
    spk_context_destroy(ctx);
    return status;
}
