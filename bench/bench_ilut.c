/* bench/bench_ilut.c -- spk's ILUTP factorization (solvers/ilut.c) on one matrix: its time,
 * the factors' size against A's, the pivots it swapped and replaced, and with --out PREFIX
 * the factors themselves, so that bench/compare_ilut.py can run SciPy's GMRES with them as
 * the preconditioner before (or beside) spk's own solve:
 *
 *   bench_ilut [--drop-tol 1e-4] [--fill-factor 10] [--out PREFIX] FILE.mtx
 *
 * PREFIX_L.mtx: the unit lower factor with its diagonal written out; PREFIX_U.mtx: the upper
 * factor; PREFIX_perm.mtx: perm (0-based) as an n x 1 array, identity when there was no
 * pivoting. A(:, perm) ~= L U. One JSON line on stdout. Exit 0, 1 when the factorization
 * failed, 2 for bad usage or input. */
#include "../solvers/ilu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_factor(const char *prefix, const char *which, const spk_csr *M, int unit)
{
    char path[4096];
    snprintf(path, sizeof path, "%s_%s.mtx", prefix, which);
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%lld %lld %lld\n",
            (long long)M->nrows, (long long)M->ncols,
            (long long)(M->nnz + (unit ? M->nrows : 0)));
    for (int64_t i = 0; i < M->nrows; i++) {
        for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++)
            fprintf(f, "%lld %d %.17g\n", (long long)i + 1, M->colind[q] + 1, M->val[q]);
        if (unit)
            fprintf(f, "%lld %lld 1\n", (long long)i + 1, (long long)i + 1);
    }
    return fclose(f) == 0;
}

static int write_perm(const char *prefix, const spk_ilu_factors *F)
{
    char path[4096];
    snprintf(path, sizeof path, "%s_perm.mtx", prefix);
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    fprintf(f, "%%%%MatrixMarket matrix array integer general\n%lld 1\n", (long long)F->n);
    for (int64_t k = 0; k < F->n; k++)
        fprintf(f, "%d\n", F->perm ? F->perm[k] : (int32_t)k);
    return fclose(f) == 0;
}

int main(int argc, char **argv)
{
    double drop_tol = 1e-4, fill = 10.0;
    const char *out = NULL, *file = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--drop-tol") && a + 1 < argc)
            drop_tol = atof(argv[++a]);
        else if (!strcmp(argv[a], "--fill-factor") && a + 1 < argc)
            fill = atof(argv[++a]);
        else if (!strcmp(argv[a], "--out") && a + 1 < argc)
            out = argv[++a];
        else if (argv[a][0] != '-' && !file)
            file = argv[a];
        else {
            fprintf(stderr, "usage: bench_ilut [--drop-tol X] [--fill-factor X] [--out PREFIX] "
                            "FILE.mtx\n");
            return 2;
        }
    }
    if (!file) {
        fprintf(stderr, "bench_ilut: no matrix given\n");
        return 2;
    }
    spk_context *ctx;
    if (spk_context_create(&ctx, SPK_DEVICE_CPU)) {
        fprintf(stderr, "bench_ilut: %s\n", spk_last_error(NULL));
        return 2;
    }
    spk_mm_header h;
    spk_coo coo;
    spk_csr A;
    if (spk_mm_read_coo(ctx, file, &h, &coo) || spk_csr_from_coo(ctx, &coo, &A)) {
        fprintf(stderr, "bench_ilut: %s\n", spk_last_error(ctx));
        return 2;
    }
    spk_coo_free(&coo);
    spk_ilu_factors F;
    double t = spk_now();
    spk_status st = spk_ilut_factor(ctx, &A, drop_tol, fill, &F);
    t = spk_now() - t;
    if (st) {
        fprintf(stderr, "bench_ilut: %s\n", spk_last_error(ctx));
        return 1;
    }
    int64_t swapped = 0;
    for (int64_t k = 0; F.perm && k < F.n; k++)
        swapped += F.perm[k] != k;
    printf("{\"matrix\": \"%s\", \"n\": %lld, \"nnz_A\": %lld, \"nnz_L\": %lld, \"nnz_U\": %lld, "
           "\"fill\": %.4f, \"columns_moved\": %lld, \"zero_pivots\": %lld, \"seconds\": %.6f}\n",
           file, (long long)A.nrows, (long long)A.nnz, (long long)F.L.nnz, (long long)F.U.nnz,
           (double)(F.L.nnz + F.U.nnz) / (double)(A.nnz ? A.nnz : 1), (long long)swapped,
           (long long)F.zero_pivots, t);
    int ok = 1;
    if (out)
        ok = write_factor(out, "L", &F.L, 1) && write_factor(out, "U", &F.U, 0) &&
             write_perm(out, &F);
    if (!ok)
        fprintf(stderr, "bench_ilut: could not write %s_*.mtx\n", out);
    spk_ilu_factors_free(&F);
    spk_csr_free(&A);
    spk_context_destroy(ctx);
    return ok ? 0 : 2;
}
