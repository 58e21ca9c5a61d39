/* bench/bench_vcycle.c -- one AMG V-cycle against the sum of its parts: the whole
 * preconditioner apply, and per level the SpMVs with A (as many as a cycle makes), R and P,
 * the smoothers' vector steps and the coarsest level's dense SpMV, each timed alone as the
 * mean of --reps calls on the device's stream, without a CUDA graph (inside CG's graph every
 * launch costs less; the ratio is what this measures). The difference between the cycle and
 * the sum is what the parts cost together beyond their own time: launches and the small
 * levels.
 *
 *   bench_vcycle [--device cpu|gpu|auto] [--reps N] SPEC[@rbm][@fp32]...
 *
 * Uses the library's internals (solvers/amg.h), as the tests do. */
#include "spk.h"
#include "../src/spk_internal.h"
#include "../solvers/amg.h"
#include "../solvers/precond.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    spk_device dev = SPK_DEVICE_AUTO;
    int reps = 20, first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        const char *a = argv[first], *v = first + 1 < argc ? argv[first + 1] : NULL;
        if (!strcmp(a, "--device") && v && spk_device_parse(v, &dev) == SPK_OK)
            first++;
        else if (!strcmp(a, "--reps") && v && (reps = atoi(v)) > 0)
            first++;
        else {
            fprintf(stderr, "usage: bench_vcycle [--device cpu|gpu|auto] [--reps N] SPEC[@rbm][@fp32]...\n");
            return 2;
        }
    }
    spk_context *ctx = NULL;
    spk_status st = spk_context_create(&ctx, dev);
    if (st) {
        fprintf(stderr, "bench_vcycle: %s\n", spk_last_error(ctx));
        return 77;
    }
    printf("bench_vcycle on %s (%s): microseconds, the mean of %d calls, no CUDA graph\n",
           spk_device_str(spk_context_device(ctx)), spk_context_device_name(ctx), reps);
    int status = 0;
    for (int c = first; c < argc; c++) {
        char spec[256];
        snprintf(spec, sizeof spec, "%s", argv[c]);
        char *at = strchr(spec, '@');
        if (at)
            *at = '\0';
        spk_matrix *A = NULL;
        if ((st = spk_is_generator_spec(spec) ? spk_matrix_generate(ctx, spec, &A)
                                              : spk_matrix_read_mtx(ctx, spec, &A))) {
            fprintf(stderr, "bench_vcycle: %s: %s\n", spec, spk_last_error(ctx));
            status = 1;
            continue;
        }
        spk_options opt;
        spk_options_default(&opt);
        opt.method = SPK_METHOD_CG;
        double *xyz = NULL;
        int64_t nodes;
        int dim;
        /* the suffixes: @rbm (rigid-body modes from the generator's coordinates), @fp32 (the
         * cycle on fp32 values, and fp32 vectors where its matrices fuse their steps) */
        char suffix[256];
        snprintf(suffix, sizeof suffix, "%s@", at ? strchr(argv[c], '@') : "");
        opt.amg.fp32 = strstr(suffix, "@fp32@") ? 1 : -1;
        if (at && strstr(suffix, "@rbm@") &&
            spk_generate_coords(ctx, spec, &xyz, &nodes, &dim) == SPK_OK) {
            opt.amg.coords = xyz;
            opt.amg.coord_dim = dim;
        }
        const spk_precond_ops *row = spk_precond_find(SPK_PRECOND_AMG, spk_context_device(ctx));
        void *state = NULL;
        const int64_t n = A->csr.nrows;
        const spk_vec_ops *ops = spk_vec_ops_for(spk_context_device(ctx));
        double *r = NULL, *z = NULL;
        spk_amg_timing t;
        if ((st = spk_matrix_prepare(ctx, A, SPK_FMT_AUTO)) ||
            (st = row->setup(ctx, A, &opt, &state)) || (st = ops->alloc(ctx, n, &r)) ||
            (st = ops->alloc(ctx, n, &z)) || (st = ops->fill(ctx, n, 1.0, r)) ||
            (st = spk_amg_time_parts(state, r, z, reps, &t))) {
            fprintf(stderr, "bench_vcycle: %s: %s\n", argv[c], spk_last_error(ctx));
            status = 1;
        } else {
            double sum_spmv = t.coarse, sum_vec = 0.0;
            printf("%s (%lld rows): V-cycle %.1f us\n", argv[c], (long long)n, 1e6 * t.vcycle);
            printf("  level  A spmv x count        R spmv    P spmv    vector steps\n");
            for (int l = 0; l + 1 < t.nlevels; l++) {
                printf("  %5d  %8.1f x %d = %8.1f  %8.1f  %8.1f  %8.1f\n", l, 1e6 * t.spmv_a[l],
                       t.count_a[l], 1e6 * t.spmv_a[l] * t.count_a[l], 1e6 * t.spmv_r[l],
                       1e6 * t.spmv_p[l], 1e6 * t.vec[l]);
                sum_spmv += t.spmv_a[l] * t.count_a[l] + t.spmv_r[l] + t.spmv_p[l];
                sum_vec += t.vec[l];
            }
            printf("  coarsest dense spmv %.1f us\n", 1e6 * t.coarse);
            printf("  level  entries (backend) of A, R, P\n");
            for (int l = 0; l + 1 < t.nlevels; l++)
                printf("  %5d  %lld (%s), %lld (%s), %lld (%s)\n", l, (long long)t.nnz_a[l],
                       t.be_a[l], (long long)t.nnz_r[l], t.be_r[l], (long long)t.nnz_p[l],
                       t.be_p[l]);
            printf("  sum of the SpMVs %.1f us, with the vector steps %.1f us; V-cycle / SpMVs "
                   "%.2f, V-cycle / all parts %.2f\n", 1e6 * sum_spmv, 1e6 * (sum_spmv + sum_vec),
                   t.vcycle / sum_spmv, t.vcycle / (sum_spmv + sum_vec));
        }
        fflush(stdout);
        ops->free(ctx, r);
        ops->free(ctx, z);
        if (row && state)
            row->destroy(state);
        free(xyz);
        spk_matrix_destroy(A);
    }
    spk_context_destroy(ctx);
    return status;
}
