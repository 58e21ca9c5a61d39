/* bench/bench_rowblocks.c -- the CUDA CSR row blocks' partition of a matrix, on the host: how
 * many stream blocks and long-row pieces the grid has (one wave or many: the kernel compares
 * them with the blocks the GPU holds at once), and how many trips the slowest lane of each
 * stream block's row loop takes (the row's length over the lanes the kernel gives each row of
 * its block), as a histogram. That chain of dependent shared-memory
 * loads is what the row blocks' segmented sums replace (kernels/csr_adaptive_cuda.cu,
 * docs/formats.md); no GPU is needed.
 *
 *   bench_rowblocks MATRIX...      (generator specs or .mtx files; e.g. rmat:16:3 rmat:20)
 *
 * The partition is spk_row_blocks_walk's with the kernel's sizes (SPK_CSR_ADAPT_*,
 * src/spk_internal.h): stream blocks of at most 768 nonzeros and rows, pieces of 8192
 * nonzeros; g lanes a row, the largest power of two <= 256 / rows, at most 32, as the kernel
 * gives them; a block is "skewed" when a row takes more than 16 trips. Whether the grid is one
 * wave is the GPU's: the blocks it holds at once (1,056 on the H200: 132 SMs x 8). Exit 0, or
 * 2 on a matrix that cannot be made or read. */
#include "spk_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int report(spk_context *ctx, const char *name)
{
    spk_matrix *M = NULL;
    spk_status st = spk_is_generator_spec(name) ? spk_matrix_generate(ctx, name, &M)
                                                : spk_matrix_read_mtx(ctx, name, &M);
    if (st) {
        fprintf(stderr, "bench_rowblocks: %s: %s\n", name, spk_last_error(ctx));
        return 2;
    }
    const spk_csr A = M->csr;
    spk_row_blocks c, f;
    spk_row_blocks_walk(A.rowptr, A.nrows, SPK_CSR_ADAPT_NB, SPK_CSR_ADAPT_PIECE, 0, &c, NULL,
                        NULL);
    const int64_t nblk = c.npieces + c.nstream;
    int64_t *blk = malloc(4 * (size_t)(nblk > 0 ? nblk : 1) * sizeof *blk);
    int64_t *lfirst = malloc((size_t)(c.nlong + 1) * sizeof *lfirst);
    if (!blk || !lfirst) {
        fprintf(stderr, "bench_rowblocks: %s: out of memory\n", name);
        free(blk);
        free(lfirst);
        spk_matrix_destroy(M);
        return 2;
    }
    spk_row_blocks_walk(A.rowptr, A.nrows, SPK_CSR_ADAPT_NB, SPK_CSR_ADAPT_PIECE, c.npieces, &f,
                        blk, lfirst);
    /* trips histogram: < 4, < 16, < 64, < 256, < 1024, more */
    int64_t hist[6] = {0}, skewed = 0, max_trips = 0;
    for (int64_t b = c.npieces; b < nblk; b++) {
        const int64_t r0 = blk[4 * b], r1 = blk[4 * b + 1];
        int g = 32;
        while (g > 1 && g * (r1 - r0) > SPK_CSR_ADAPT_THREADS)
            g >>= 1;
        int64_t longest = 0;
        for (int64_t i = r0; i < r1; i++)
            if (A.rowptr[i + 1] - A.rowptr[i] > longest)
                longest = A.rowptr[i + 1] - A.rowptr[i];
        const int64_t trips = (longest + g - 1) / g;
        int k = 0;
        while (k < 5 && trips >= (int64_t)4 << (2 * k))
            k++;
        hist[k]++;
        skewed += longest > (int64_t)SPK_CSR_ADAPT_SEG_TRIPS * g;
        max_trips = trips > max_trips ? trips : max_trips;
    }
    printf("%s: %lld rows, %lld nonzeros: %lld blocks (%lld stream, %lld pieces of %lld long "
           "rows); stream blocks by their longest row's trips: <4 %lld, <16 %lld, <64 %lld, "
           "<256 %lld, <1024 %lld, more %lld; max %lld; skewed (> %d trips) %lld\n",
           name, (long long)A.nrows, (long long)A.nnz, (long long)nblk, (long long)c.nstream,
           (long long)c.npieces, (long long)c.nlong, (long long)hist[0], (long long)hist[1],
           (long long)hist[2], (long long)hist[3], (long long)hist[4], (long long)hist[5],
           (long long)max_trips, SPK_CSR_ADAPT_SEG_TRIPS, (long long)skewed);
    free(blk);
    free(lfirst);
    spk_matrix_destroy(M);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("usage: bench_rowblocks MATRIX...   (generator specs or .mtx files)\n"
               "The CUDA CSR row blocks' partition of each matrix and the trips of each stream\n"
               "block's slowest lane (kernels/csr_adaptive_cuda.cu); host only.\n");
        return argc < 2 ? 2 : 0;
    }
    spk_context *ctx;
    if (spk_context_create(&ctx, SPK_DEVICE_CPU)) {
        fprintf(stderr, "bench_rowblocks: no context\n");
        return 2;
    }
    int rc = 0;
    for (int a = 1; a < argc; a++)
        rc |= report(ctx, argv[a]);
    spk_context_destroy(ctx);
    return rc;
}
