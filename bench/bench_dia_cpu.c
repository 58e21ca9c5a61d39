/* bench/bench_dia_cpu.c -- the CPU's DIA SpMV against its CSR SpMV (kernels/dia_cpu.c,
 * spk_csr_spmv_ref) on the 7-point matrix of 64^3 rows (the offsets of poisson3d:64, -1 off the
 * diagonal, 6 on it) with entries dropped at random: (a) one entry in a share P of the rows,
 * (b) every off-diagonal entry with probability q. It prints the fill (slots / entries), the
 * share of partial rows, both times and their ratio: the data of the CPU rule's fill bound
 * (src/select.c, docs/selection.md).
 *
 * Each time is the median of 31 calls; the two formats alternate, and 64 MB are read before
 * every call so that the matrix comes from memory, as in a CG iteration. Both results are
 * compared bit for bit (x finite). Threads: OpenMP's default (OMP_NUM_THREADS).
 *
 *   bench_dia_cpu                (about 10 s on a 2-core machine) */
#include "spk_internal.h"
#include "../kernels/formats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 31
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

static uint64_t rng = 12345;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

/* mode 0: drop one entry (any of the 7) in a share p of the rows; mode 1: drop each
 * off-diagonal entry with probability p. */
static int build(spk_context *ctx, int mode, double p, spk_csr *A)
{
    const int64_t m = 64, n = m * m * m;
    const int64_t off[7] = {-m * m, -m, -1, 0, 1, m, m * m};
    if (spk_csr_alloc(ctx, n, n, 7 * n, A))
        return 1;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        A->rowptr[i] = k;
        const int drop = mode == 0 && urand() < p ? (int)(urand() * 7) : -1;
        for (int d = 0; d < 7; d++) {
            const int64_t j = i + off[d];
            if (j < 0 || j >= n || d == drop || (mode == 1 && d != 3 && urand() < p))
                continue;
            A->colind[k] = (int32_t)j;
            A->val[k++] = d == 3 ? 6.0 : -1.0;
        }
    }
    A->rowptr[n] = k;
    A->nnz = k;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    spk_context *ctx = NULL;
    if (spk_context_create(&ctx, SPK_DEVICE_CPU)) {
        fprintf(stderr, "bench_dia_cpu: no context\n");
        return 1;
    }
    flush_buf = malloc(FLUSH_DOUBLES * sizeof *flush_buf);
    if (!flush_buf)
        return 1;
    for (size_t i = 0; i < FLUSH_DOUBLES; i++)
        flush_buf[i] = 1.0;
    static const double params[2][7] = {{0.0, 0.1, 0.25, 0.5, 1.0, -1, -1},
                                        {0.01, 0.06, 0.15, 0.3, 0.45, 0.62, 0.76}};
    printf("DIA against CSR SpMV, 7-point offsets, 64^3 rows, kernel %s, median of %d\n",
           spk_dia_cpu_kernel(), ROUNDS);
    printf("%-28s %9s %6s %8s %8s %8s %8s\n", "entries dropped", "nnz", "fill", "partial",
           "csr ms", "dia ms", "dia/csr");
    int status = 0;
    for (int mode = 0; mode < 2; mode++)
        for (int t = 0; t < 7; t++) {
            const double p = params[mode][t];
            if (p < 0)
                continue;
            spk_csr A;
            spk_dia_fmt f;
            spk_matrix_info in;
            if (build(ctx, mode, p, &A) || spk_dia_from_csr(ctx, &A, &f)) {
                fprintf(stderr, "bench_dia_cpu: %s\n", spk_last_error(ctx));
                return 1;
            }
            spk_stats_compute(&A, &in);
            const int64_t n = A.nrows;
            double *x = malloc((size_t)n * sizeof *x), *y1 = malloc((size_t)n * sizeof *y1),
                   *y2 = malloc((size_t)n * sizeof *y2);
            for (int64_t i = 0; i < n; i++)
                x[i] = 1.0 + (double)(i % 7);
            double tc[ROUNDS], td[ROUNDS];
            for (int r = 0; r < ROUNDS; r++) {
                flush_cache();
                double t0 = spk_now();
                spk_csr_spmv_ref(&A, 1.0, x, 0.0, y1);
                tc[r] = spk_now() - t0;
                flush_cache();
                t0 = spk_now();
                spk_dia_spmv_host(&f, 0, 1.0, x, 0.0, y2);
                td[r] = spk_now() - t0;
            }
            if (memcmp(y1, y2, (size_t)n * sizeof *y1) != 0) {
                fprintf(stderr, "bench_dia_cpu: DIA and CSR differ\n");
                status = 1;
            }
            qsort(tc, ROUNDS, sizeof *tc, cmp_double);
            qsort(td, ROUNDS, sizeof *td, cmp_double);
            char what[64];
            snprintf(what, sizeof what, mode == 0 ? "one in %.0f%% of the rows" :
                     "each with probability %.2f", mode == 0 ? 100.0 * p : p);
            printf("%-28s %9lld %6.3f %7.1f%% %8.3f %8.3f %8.3f\n", what, (long long)A.nnz,
                   in.dia_fill, 100.0 * (double)in.dia_partial_rows / (double)n,
                   1e3 * tc[ROUNDS / 2], 1e3 * td[ROUNDS / 2], td[ROUNDS / 2] / tc[ROUNDS / 2]);
            fflush(stdout);
            spk_dia_fmt_free(&f);
            spk_csr_free(&A);
            free(x);
            free(y1);
            free(y2);
        }
    free(flush_buf);
    spk_context_destroy(ctx);
    return status;
}
