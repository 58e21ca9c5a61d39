/* bench/bench_mixed.c -- mixed precision on the CPU (docs/solvers.md, "Mixed precision"), on
 * CSR and on the format auto picks (DIA on a stencil): (1) the SpMV of each of those CPU rows
 * against its fp32 twin (spk_spmv_backend.fp32: csr-cpu 12 bytes a nonzero against
 * csr32-cpu's 8, dia-cpu 8 bytes a slot against dia32-cpu's 4), the median of ROUNDS calls
 * each, alternating, with 64 MB read before every call so that the matrix comes from memory
 * as in a Krylov iteration; (2) CG + Jacobi to rtol 1e-8 from the same b = A x
 * (bench_case.h), in double and in mixed (the inner solves on the twin of A's row, the fp64
 * residual on the row itself) in each of the two formats, the median of SOLVES solves after
 * a first one, with the iterations, the refinement steps and the true residuals
 * ||b - A x|| / ||b|| side by side. Threads: OpenMP's default (OMP_NUM_THREADS).
 *
 *   bench_mixed [A ...]      default: poisson3d:64 poisson3d:100 inputs/bcsstk13.mtx */
#include "spk_internal.h"
#include "../kernels/formats.h"
#include "bench_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 31
#define SOLVES 5                               /* timed solves of each case: their median */
#define FLUSH_DOUBLES ((size_t)8 << 20)        /* 64 MB */

static double *flush_buf;
static volatile double flush_sink;

static void flush_cache(void)
{
    double s = 0.0;
#pragma omp parallel for reduction(+ : s)
    for (size_t i = 0; i < FLUSH_DOUBLES; i += 8)
        s += flush_buf[i];
    flush_sink = s;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds of the row `row` (t[0]) and of its fp32 twin (t[1]) on A's CSR. */
static int spmv_times(spk_context *ctx, const spk_spmv_backend *row, const spk_csr *A,
                      double t[2])
{
    const spk_spmv_backend *be[2] = {row, row->fp32};
    void *state[2] = {NULL, NULL};
    double *x = malloc((size_t)A->ncols * sizeof *x + 8), *y = malloc((size_t)A->nrows * sizeof *y + 8);
    static double s[2][ROUNDS];
    for (int64_t j = 0; j < A->ncols; j++)
        x[j] = 1.0 + 1e-3 * (double)(j % 97);
    for (int b = 0; b < 2; b++)
        if (be[b]->setup(ctx, A, &state[b])) {
            fprintf(stderr, "bench_mixed: %s\n", spk_last_error(ctx));
            return 1;
        }
    for (int r = 0; r < ROUNDS; r++)
        for (int b = 0; b < 2; b++) {
            flush_cache();
            const double t0 = bc_now();
            be[b]->spmv(ctx, state[b], 1.0, x, 0.0, y);
            s[b][r] = bc_now() - t0;
        }
    for (int b = 0; b < 2; b++) {
        qsort(s[b], ROUNDS, sizeof s[b][0], cmp_double);
        t[b] = s[b][ROUNDS / 2];
        be[b]->destroy(state[b]);
    }
    free(x);
    free(y);
    return 0;
}

typedef struct solve_row {
    double solve_s, true_rel;
    int64_t its, steps;
    spk_reason reason;
    char format[16];
    char op[16];                               /* the inner SpMV's row: "dia32-cpu"      */
} solve_row;

static int solve_case(spk_context *ctx, spk_matrix *A, const double *b, int64_t n, spk_format fmt,
                      spk_precision p, solve_row *o)
{
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = SPK_PRECOND_JACOBI;
    opt.format = fmt;
    opt.precision = p;
    double *x = calloc((size_t)n + 1, sizeof *x);
    spk_solver *S = NULL;
    spk_result res;
    double ts[SOLVES];
    spk_status st = spk_solver_create(ctx, A, &opt, &S);
    for (int k = 0; k <= SOLVES && !st; k++) {      /* the first: warm-up, not timed */
        st = spk_solver_solve(S, b, x, &res);
        if (!st && k > 0)
            ts[k - 1] = res.solve_s;
    }
    if (!st) {
        qsort(ts, SOLVES, sizeof ts[0], cmp_double);
        o->solve_s = ts[SOLVES / 2];
        o->true_rel = res.true_rel;
        o->its = res.iterations;
        o->steps = res.refinement_steps;
        o->reason = res.reason;
        snprintf(o->format, sizeof o->format, "%s", spk_format_str(res.format));
        /* precision_reason ends "... on fp32 values (dia32-cpu)" */
        const char *open = strrchr(res.precision_reason, '(');
        snprintf(o->op, sizeof o->op, "%.*s", open ? (int)strcspn(open + 1, ")") : 0,
                 open ? open + 1 : "");
    } else {
        fprintf(stderr, "bench_mixed: %s\n", spk_last_error(ctx));
    }
    spk_solver_destroy(S);
    free(x);
    return st != SPK_OK;
}

int main(int argc, char **argv)
{
    const char *def[] = {"poisson3d:64", "poisson3d:100", "inputs/bcsstk13.mtx"};
    const char **mats = argc > 1 ? (const char **)argv + 1 : def;
    const int nm = argc > 1 ? argc - 1 : 3;
    int code = 1;
    spk_context *ctx = bc_context("bench_mixed", SPK_DEVICE_CPU, &code);
    if (!ctx)
        return code;
    flush_buf = malloc(FLUSH_DOUBLES * sizeof *flush_buf);
    for (size_t i = 0; i < FLUSH_DOUBLES; i++)
        flush_buf[i] = (double)(i & 7);
    printf("mixed precision on the CPU, CSR and the format auto picks: each row's SpMV against "
           "its fp32 twin's (median of %d), CG + Jacobi to rtol 1e-8 in double and mixed (median "
           "of %d warm solves)\n", ROUNDS, SOLVES);
    int bad = 0;
    for (int m = 0; m < nm; m++) {
        spk_matrix *A = bc_matrix("bench_mixed", ctx, mats[m]);
        if (!A)
            return 1;
        const int64_t *rp;
        const int32_t *ci;
        const double *va;
        spk_matrix_csr(A, &rp, &ci, &va);
        spk_matrix_info info;
        spk_matrix_get_info(A, &info);
        const int64_t n = info.nrows;
        const spk_csr C = {.nrows = n, .ncols = n, .nnz = info.nnz, .rowptr = (int64_t *)rp,
                           .colind = (int32_t *)ci, .val = (double *)va};
        /* the rows: CSR's, and the one auto picks when it is another */
        spk_format fmts[2] = {SPK_FMT_CSR, SPK_FMT_AUTO};
        if (spk_matrix_prepare(ctx, A, SPK_FMT_AUTO)) {
            fprintf(stderr, "bench_mixed: %s\n", spk_last_error(ctx));
            return 1;
        }
        fmts[1] = spk_matrix_format(A);
        const int nf = fmts[1] == SPK_FMT_CSR ? 1 : 2;
        printf("\n%s: %lld rows, %lld nonzeros, auto picks %s\n", mats[m], (long long)n,
               (long long)info.nnz, spk_format_str(fmts[1]));
        for (int f = 0; f < nf; f++) {
            const spk_spmv_backend *row = spk_backend_find(fmts[f], SPK_DEVICE_CPU);
            double t[2] = {0.0, 0.0};
            if (!row || !row->fp32) {
                printf("  spmv   %-10s has no fp32 twin\n", row ? row->name : spk_format_str(fmts[f]));
                continue;
            }
            bad |= spmv_times(ctx, row, &C, t);
            printf("  spmv   %-10s %9.3f ms   %-10s %9.3f ms   ratio %.2fx\n", row->name,
                   1e3 * t[0], row->fp32->name, 1e3 * t[1], t[0] / t[1]);
        }
        double *b = bc_rhs(ctx, A, n);
        solve_row r[2][2];                        /* [format][double, mixed] */
        memset(r, 0, sizeof r);
        for (int f = 0; f < nf; f++)
            for (int k = 0; k < 2; k++)
                bad |= solve_case(ctx, A, b, n, fmts[f],
                                  k ? SPK_PRECISION_MIXED : SPK_PRECISION_DOUBLE, &r[f][k]);
        for (int f = 0; f < nf; f++)
            for (int k = 0; k < 2; k++) {
                const solve_row *o = &r[f][k];
                printf("  cg     %-6s %-4s %8.3f s  %5lld its (%7.1f us/it)  %lld steps  %-16s "
                       "true rel %.2e%s%s%s\n", k ? "mixed" : "double", o->format, o->solve_s,
                       (long long)o->its, 1e6 * o->solve_s / (double)(o->its > 0 ? o->its : 1),
                       (long long)o->steps, spk_reason_str(o->reason), o->true_rel,
                       k ? "  (" : "", k ? o->op : "", k ? ")" : "");
            }
        printf("  time to solution, mixed / double:");
        for (int f = 0; f < nf; f++)
            printf("%s %s %.2f", f ? "," : "", r[f][1].format, r[f][1].solve_s / r[f][0].solve_s);
        if (nf == 2)
            printf("; mixed %s / double csr %.2f", r[1][1].format, r[1][1].solve_s / r[0][0].solve_s);
        printf("\n");
        free(b);
        spk_matrix_destroy(A);
    }
    free(flush_buf);
    spk_context_destroy(ctx);
    return bad;
}
