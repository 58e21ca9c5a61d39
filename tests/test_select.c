/* tests/test_select.c -- row-length statistics, the automatic format choice and the
 * generators. Statistics are checked by hand on small matrices; the choice on constructed
 * row-length distributions (constant, mildly varying, short and uneven, long and moderate, a
 * long tail, power law, one huge row, giant outliers, mostly empty) and on the stencil
 * generators, each with its reason string; ELL is never chosen past the fill guard.
 *
 * `test_select --table` prints instead the table of docs/formats.md: the memory of every
 * format for each matrix of inputs/, from spk_stats_compute. */
#include "util.h"
#include "../kernels/formats.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static spk_context *ctx;

/* CSR with the given row lengths: row i holds columns 0 .. len[i]-1, value 1 (the format
 * choice looks at lengths only). ncols must be >= the longest row. */
static void csr_lengths(int64_t nrows, int64_t ncols, const int64_t *len, spk_csr *A)
{
    int64_t nnz = 0;
    for (int64_t i = 0; i < nrows; i++)
        nnz += len[i];
    if (spk_csr_alloc(ctx, nrows, ncols, nnz, A) != SPK_OK) {
        fprintf(stderr, "csr_lengths: %s\n", spk_last_error(ctx));
        exit(2);
    }
    for (int64_t i = 0; i < nrows; i++) {
        A->rowptr[i + 1] = A->rowptr[i] + len[i];
        for (int64_t k = 0; k < len[i]; k++) {
            A->colind[A->rowptr[i] + k] = (int32_t)k;
            A->val[A->rowptr[i] + k] = 1.0;
        }
    }
}

static void info_of_lengths(int64_t nrows, int64_t ncols, const int64_t *len, spk_matrix_info *in)
{
    spk_csr A;
    csr_lengths(nrows, ncols, len, &A);
    spk_stats_compute(&A, in);
    spk_csr_free(&A);
    /* every row holds columns 0 .. len - 1, which equal lengths make a block pattern by
     * accident: these cases are about lengths, the block rule has its own (test_bsr_rule) */
    in->bsr_block = 1;
    in->bsr_fill = 0.0;
}

/* The choice for the GPU and for the CPU; the reason must contain every word of `words`
 * (space-separated), and the CPU choice is CSR or DIA with a reason naming the CPU. */
static void expect(const char *what, const spk_matrix_info *in, spk_format want, const char *words)
{
    char why[256], cpu_why[256], buf[128], pub[320];
    spk_format got = spk_select_shape(in, why, sizeof why);   /* the rule by shape */
    T_CHECK(got == want, "%s: chose %s, expected %s (%s)", what, spk_format_str(got),
            spk_format_str(want), why);
    T_CHECK(strncmp(why, spk_format_str(got), 3) == 0 && !strchr(why, '\n'),
            "%s: reason must start with the format and be one line: '%s'", what, why);
    snprintf(buf, sizeof buf, "%s", words);
    for (char *w = strtok(buf, " "); w; w = strtok(NULL, " "))
        T_CHECK(strstr(why, w) != NULL, "%s: reason '%s' lacks '%s'", what, why, w);
    if (got == SPK_FMT_ELL)
        T_CHECK(in->ell_fill <= SPK_ELL_MAX_FILL, "%s: ELL chosen at fill %.2f", what, in->ell_fill);
    /* the public choice: the shape rule, except that small matrices (launch-bound) take CSR */
    spk_format gpu = spk_select_format(in, SPK_DEVICE_CUDA, pub, sizeof pub);
    if (in->nnz > 0 && in->nnz < SPK_SEL_SMALL_NNZ)
        T_CHECK(gpu == SPK_FMT_CSR && strstr(pub, "small") && strstr(pub, spk_format_str(got)),
                "%s: small matrix chose %s: '%s'", what, spk_format_str(gpu), pub);
    else
        T_CHECK(gpu == got && strcmp(pub, why) == 0, "%s: public choice %s '%s' differs from the "
                "shape rule's %s", what, spk_format_str(gpu), pub, spk_format_str(got));
    T_CHECK(spk_select_format(in, SPK_DEVICE_AUTO, NULL, 0) == gpu, "%s: AUTO = the GPU rule", what);

    spk_format cpu = spk_select_format(in, SPK_DEVICE_CPU, cpu_why, sizeof cpu_why);
    if (cpu == SPK_FMT_DIA)                     /* the CPU rule's own cases: test_cpu_rule */
        T_CHECK(strstr(cpu_why, "cpu") && strstr(cpu_why, "diagonals") &&
                    in->dia_diags <= SPK_DIA_MAX_DIAGS && in->dia_fill <= 1.5,
                "%s: cpu chose dia: '%s'", what, cpu_why);
    else
        T_CHECK(cpu == SPK_FMT_CSR && strstr(cpu_why, "cpu") && strstr(cpu_why, spk_format_str(gpu)),
                "%s: cpu chose %s: '%s'", what, spk_format_str(cpu), cpu_why);
    printf("  %-28s %s\n", what, why);
}

static void expect_lengths(const char *what, int64_t nrows, int64_t ncols, const int64_t *len,
                           spk_format want, const char *words)
{
    spk_matrix_info in;
    info_of_lengths(nrows, ncols, len, &in);
    expect(what, &in, want, words);
}

static void expect_generated(const char *spec, spk_format want, const char *words)
{
    spk_csr A;
    spk_matrix_info in;
    spk_status st = spk_generate_csr(ctx, spec, &A);
    T_CHECK(st == SPK_OK, "%s: %s", spec, spk_last_error(ctx));
    if (st)
        return;
    spk_stats_compute(&A, &in);
    expect(spec, &in, want, words);
    spk_csr_free(&A);
}

/* The block rule: BSR on patterns of full d x d blocks padded at most 1.5x (lame3d's Q1
 * elasticity, the synthetic block stencil), never on a pattern without blocks, and past the
 * padding limit the shape rule's choice; spk_format_check refuses BSR without blocks. */
static void test_bsr_rule(void)
{
    expect_generated("lame3d:20", SPK_FMT_BSR, "bsr 3x3 blocks padded");
    expect_generated("elasticity3d:30", SPK_FMT_BSR, "bsr 3x3 blocks");
    static const char *const scalar[] = {"poisson3d:40", "poisson2d:300", "poisson3d27:40",
                                         "powerlaw:200000:8"};
    for (size_t k = 0; k < sizeof scalar / sizeof scalar[0]; k++) {
        spk_csr A;
        spk_matrix_info in;
        char why[160];
        T_CHECK(spk_generate_csr(ctx, scalar[k], &A) == SPK_OK, "%s: %s", scalar[k],
                spk_last_error(ctx));
        spk_stats_compute(&A, &in);
        T_CHECK(in.bsr_block == 1 && in.bytes[SPK_FMT_BSR] == SIZE_MAX &&
                    spk_select_format(&in, SPK_DEVICE_CUDA, NULL, 0) != SPK_FMT_BSR &&
                    spk_format_check(&in, SPK_FMT_BSR, SPK_DEVICE_CUDA, why, sizeof why) ==
                        SPK_ERR_UNSUPPORTED && strstr(why, "blocks"),
                "%s: block %lld, bsr not refused (%s)", scalar[k], (long long)in.bsr_block, why);
        spk_csr_free(&A);
    }
    /* 2x2 and 6x6 blocks of even block rows: bsr, with d in the reason; block rows of 0 .. 20
     * blocks (padding ~2x): not bsr, and the check still lets it be asked for (fill <= 3) */
    spk_csr A;
    spk_matrix_info in;
    char why[256];
    /* block rows of exactly 8 blocks: no padding */
    for (int64_t d = 2; d <= 6; d += 4) {
        const int64_t nb = 1200000 / (8 * d * d) + 1, kb = 8;
        spk_coo coo = {nb * d, nb * d, nb * kb * d * d, NULL, NULL, NULL};
        coo.row = malloc((size_t)coo.nnz * sizeof *coo.row);
        coo.col = malloc((size_t)coo.nnz * sizeof *coo.col);
        coo.val = malloc((size_t)coo.nnz * sizeof *coo.val);
        int64_t q = 0;
        for (int64_t I = 0; I < nb; I++)
            for (int64_t k = 0; k < kb; k++)
                for (int64_t a = 0; a < d; a++)
                    for (int64_t c = 0; c < d; c++, q++) {
                        coo.row[q] = (int32_t)(I * d + a);
                        coo.col[q] = (int32_t)(((I + k * 37) % nb) * d + c);
                        coo.val[q] = 1.0 + (double)(q % 7);
                    }
        T_CHECK(spk_csr_from_coo(ctx, &coo, &A) == SPK_OK, "%s", spk_last_error(ctx));
        spk_coo_free(&coo);
        spk_stats_compute(&A, &in);
        spk_format f = spk_select_format(&in, SPK_DEVICE_CUDA, why, sizeof why);
        char want[16];
        snprintf(want, sizeof want, "%lldx%lld", (long long)d, (long long)d);
        T_CHECK(in.bsr_block == d && in.bsr_fill == 1.0 && f == SPK_FMT_BSR && strstr(why, want),
                "%lld x %lld blocks: block %lld, fill %.2f, chose %s: %s", (long long)d,
                (long long)d, (long long)in.bsr_block, in.bsr_fill, spk_format_str(f), why);
        spk_csr_free(&A);
    }
    t_block_csr(ctx, 40000, 40000, 3, 10, 5, &A);          /* block rows of 0 .. 20 blocks */
    spk_stats_compute(&A, &in);
    const spk_format f = spk_select_format(&in, SPK_DEVICE_CUDA, why, sizeof why);
    T_CHECK(in.bsr_block == 3 && in.bsr_fill > 1.5 && f != SPK_FMT_BSR &&
                spk_format_check(&in, SPK_FMT_BSR, SPK_DEVICE_CUDA, NULL, 0) == SPK_OK,
            "uneven 3x3 block rows (fill %.2f): chose %s: %s", in.bsr_fill, spk_format_str(f),
            why);
    spk_csr_free(&A);
}

/* The CPU rule: dia for a few well-filled diagonals with few partial rows, csr otherwise. */
static void expect_cpu(const char *spec, spk_format want, const char *word)
{
    spk_csr A;
    spk_matrix_info in;
    char why[256];
    spk_status st = spk_generate_csr(ctx, spec, &A);
    T_CHECK(st == SPK_OK, "%s: %s", spec, spk_last_error(ctx));
    if (st)
        return;
    spk_stats_compute(&A, &in);
    spk_format got = spk_select_format(&in, SPK_DEVICE_CPU, why, sizeof why);
    T_CHECK(got == want && strstr(why, word), "%s on the cpu: %s, expected %s with '%s': '%s'",
            spec, spk_format_str(got), spk_format_str(want), word, why);
    T_CHECK(spk_select_format(&in, SPK_DEVICE_CUDA, NULL, 0) != SPK_FMT_DIA,
            "%s: the gpu rule chose dia", spec);
    printf("  cpu %-24s %s\n", spec, why);
    spk_csr_free(&A);
}

static void test_cpu_rule(void)
{
    expect_cpu("poisson3d:64", SPK_FMT_DIA, "7 diagonals");       /* 9% partial rows      */
    expect_cpu("poisson3d:24", SPK_FMT_DIA, "fill 1.0");           /* 23% partial          */
    expect_cpu("poisson2d:100", SPK_FMT_DIA, "5 diagonals");
    expect_cpu("poisson3d27:30", SPK_FMT_DIA, "27 diagonals");
    expect_cpu("poisson3d:16", SPK_FMT_DIA, "33% of the rows");     /* partial rows: no bar */
    expect_cpu("poisson3d:2", SPK_FMT_CSR, "pad 1.75x");            /* 7 x 8 slots, 32 nnz  */
    expect_cpu("elasticity3d:8", SPK_FMT_CSR, "more than 64");     /* 3 dofs a node         */
    expect_cpu("powerlaw:20000:8", SPK_FMT_CSR, "more than 64");
    /* a record without the DIA counts (zeroed, made by hand): csr, not dia */
    spk_matrix_info in;
    memset(&in, 0, sizeof in);
    in.nrows = in.ncols = 100;
    in.nnz = 500;
    in.row_mean = in.row_max = 5;
    in.ell_fill = 1.0;
    char why[256];
    T_CHECK(spk_select_format(&in, SPK_DEVICE_CPU, why, sizeof why) == SPK_FMT_CSR &&
                strstr(why, "no diagonals counted"),
            "cpu rule on a record without DIA counts: '%s'", why);
}

/* ---- statistics on hand-made matrices ----------------------------------------------------- */

static void test_stats_small(void)
{
    spk_matrix_info in;
    /* lengths 0 1 2 3 4 0 in a 6 x 5 matrix: sorted 0 0 1 2 3 4 */
    const int64_t len6[6] = {0, 1, 2, 3, 4, 0};
    info_of_lengths(6, 5, len6, &in);
    T_CHECK(in.nrows == 6 && in.ncols == 5 && in.nnz == 10, "sizes");
    T_CHECK(in.row_min == 0 && in.row_max == 4 && in.empty_rows == 2, "min %lld max %lld empty %lld",
            (long long)in.row_min, (long long)in.row_max, (long long)in.empty_rows);
    T_CHECK(fabs(in.row_mean - 10.0 / 6) < 1e-14, "mean %g", in.row_mean);
    T_CHECK(fabs(in.row_sd - sqrt(40.0 / 18)) < 1e-14, "sd %.17g", in.row_sd);   /* 13.33/6 */
    T_CHECK(fabs(in.row_cv - sqrt(40.0 / 18) / (10.0 / 6)) < 1e-14, "cv %g", in.row_cv);
    T_CHECK(in.row_p33 == 0 && in.row_p50 == 1 && in.row_p95 == 4 && in.row_p99 == 4,
            "percentiles %lld %lld %lld %lld", (long long)in.row_p33, (long long)in.row_p50,
            (long long)in.row_p95, (long long)in.row_p99);
    T_CHECK(fabs(in.ell_fill - 2.4) < 1e-14, "fill %g", in.ell_fill);
    /* 6 rows < 4096: K = largest K with >= 2 rows of length >= K = 3; tail = the 4th entry */
    T_CHECK(in.hyb_width == 3 && in.hyb_coo_nnz == 1, "hyb %lld + %lld", (long long)in.hyb_width,
            (long long)in.hyb_coo_nnz);
    T_CHECK(in.bytes[SPK_FMT_AUTO] == 0 && in.bytes[SPK_FMT_CSR] == 176 && in.bytes[SPK_FMT_COO] == 160 &&
                in.bytes[SPK_FMT_ELL] == 288 && in.bytes[SPK_FMT_HYB] == 232 &&
                in.bytes[SPK_FMT_JDS] == 184,
            "bytes %zu %zu %zu %zu %zu", in.bytes[SPK_FMT_CSR], in.bytes[SPK_FMT_COO],
            in.bytes[SPK_FMT_ELL], in.bytes[SPK_FMT_HYB], in.bytes[SPK_FMT_JDS]);
    T_CHECK(!in.symmetric && !in.diag_positive, "6x5 is neither symmetric nor has a diagonal");
    /* row i holds columns 0 .. i-1: the farthest entry is (4, 0); of the 10 entries, (2,1),
     * (3,1), (3,2), (4,1), (4,2), (4,3) continue a diagonal from the row above */
    T_CHECK(in.bandwidth == 4 && fabs(in.coherence - 0.6) < 1e-15, "bandwidth %lld coherence %g",
            (long long)in.bandwidth, in.coherence);

    /* row i has i entries, i = 0..99: nearest-rank percentiles are the rank - 1 */
    int64_t len100[100];
    for (int i = 0; i < 100; i++)
        len100[i] = i;
    info_of_lengths(100, 100, len100, &in);
    T_CHECK(in.row_p33 == 32 && in.row_p50 == 49 && in.row_p95 == 94 && in.row_p99 == 98,
            "0..99 percentiles %lld %lld %lld %lld", (long long)in.row_p33, (long long)in.row_p50,
            (long long)in.row_p95, (long long)in.row_p99);
    T_CHECK(in.empty_rows == 1 && in.row_min == 0 && in.row_max == 99, "0..99 range");
    T_CHECK(fabs(in.row_sd - sqrt((100.0 * 100 - 1) / 12)) < 1e-12, "0..99 sd %.17g", in.row_sd);
    /* >= 34 rows of length >= K: K = 66; tail = 1 + 2 + ... + 33 */
    T_CHECK(in.hyb_width == 66 && in.hyb_coo_nnz == 561, "0..99 hyb %lld + %lld",
            (long long)in.hyb_width, (long long)in.hyb_coo_nnz);

    /* 0 x 0 */
    info_of_lengths(0, 0, NULL, &in);
    T_CHECK(in.nrows == 0 && in.nnz == 0 && in.row_max == 0 && in.ell_fill == 1.0 &&
                in.hyb_width == 0 && in.bytes[SPK_FMT_CSR] == 8 && in.bytes[SPK_FMT_JDS] == 8,
            "0x0 stats");
    /* n x 0 */
    const int64_t zeros[3] = {0, 0, 0};
    info_of_lengths(3, 0, zeros, &in);
    T_CHECK(in.empty_rows == 3 && in.row_mean == 0 && in.row_cv == 0 && in.ell_fill == 1.0 &&
                !in.diag_positive,
            "3x0 stats");

    /* symmetry and diagonal on 3 x 3 */
    const int64_t rp[4] = {0, 2, 5, 7};
    const int32_t ci[7] = {0, 1, 0, 1, 2, 1, 2};
    double v[7] = {2, -1, -1, 2, -1, -1, 2};
    spk_csr T = {3, 3, 7, (int64_t *)rp, (int32_t *)ci, v};
    spk_stats_compute(&T, &in);
    T_CHECK(in.symmetric && in.diag_positive, "tridiag(-1 2 -1): sym %d diag %d", in.symmetric,
            in.diag_positive);
    /* below row 0: (1,0) (1,1) (1,2) (2,1) (2,2), all but (1,0) continuing a diagonal */
    T_CHECK(in.bandwidth == 1 && fabs(in.coherence - 0.8) < 1e-15,
            "tridiag: bandwidth %lld coherence %g", (long long)in.bandwidth, in.coherence);
    v[1] = -2;
    spk_stats_compute(&T, &in);
    T_CHECK(!in.symmetric && in.diag_positive, "a12 != a21 is not symmetric");
    v[1] = -1;
    v[3] = 0;
    spk_stats_compute(&T, &in);
    T_CHECK(in.symmetric && !in.diag_positive, "a zero diagonal entry is not positive");
    const int32_t ci2[7] = {0, 1, 0, 1, 2, 0, 1};   /* row 2: (2,0) (2,1), no a22 */
    const int64_t rp2[4] = {0, 2, 5, 7};
    double v2[7] = {1, 1, 1, 1, 1, 1, 1};
    spk_csr U = {3, 3, 7, (int64_t *)rp2, (int32_t *)ci2, v2};
    spk_stats_compute(&U, &in);
    T_CHECK(!in.diag_positive, "a missing diagonal entry is not positive");
}

/* CUSP's absolute threshold: with >= 4096 rows an ELL column needs 4096 rows to reach it. */
static void test_hyb_width(void)
{
    int64_t *len = malloc(5000 * sizeof *len);
    spk_csr A;
    for (int i = 0; i < 5000; i++)
        len[i] = i < 4000 ? 10 : 2;                   /* 4000 rows of 10, 1000 of 2 */
    csr_lengths(5000, 10, len, &A);
    T_CHECK(spk_hyb_width(&A) == 2, "4000 x 10 + 1000 x 2: K = %lld, expected 2 (4096 rule)",
            (long long)spk_hyb_width(&A));
    spk_csr_free(&A);
    for (int i = 0; i < 5000; i++)
        len[i] = i < 4100 ? 10 : 2;
    csr_lengths(5000, 10, len, &A);
    T_CHECK(spk_hyb_width(&A) == 10, "4100 x 10 + 900 x 2: K = %lld, expected 10",
            (long long)spk_hyb_width(&A));
    spk_csr_free(&A);
    /* below 4096 rows the 1/3 rule alone: 1000 rows, 334 of length 9 -> K = 9 */
    for (int i = 0; i < 1000; i++)
        len[i] = i < 334 ? 9 : 1;
    csr_lengths(1000, 9, len, &A);
    T_CHECK(spk_hyb_width(&A) == 9, "334 x 9 + 666 x 1: K = %lld", (long long)spk_hyb_width(&A));
    spk_csr_free(&A);
    for (int i = 0; i < 1000; i++)
        len[i] = i < 333 ? 9 : 1;
    csr_lengths(1000, 9, len, &A);
    T_CHECK(spk_hyb_width(&A) == 1, "333 x 9 + 667 x 1: K = %lld", (long long)spk_hyb_width(&A));
    spk_csr_free(&A);
    free(len);
}

/* ---- the choice on distributions -------------------------------------------------------- */

static void test_choice(void)
{
    enum { N = 10000 };
    int64_t *len = malloc(100000 * sizeof *len);

    for (int i = 0; i < N; i++)
        len[i] = 8;
    expect_lengths("constant 8", N, 8, len, SPK_FMT_ELL, "ell cv 0.00 padding 1.00x");
    for (int i = 0; i < N; i++)
        len[i] = 7 + i % 3;                             /* 7 8 9: mean 8, fill 1.125 */
    expect_lengths("mildly varying 7..9", N, 9, len, SPK_FMT_ELL, "ell cv padding 1.13x");
    for (int i = 0; i < N; i++)
        len[i] = 2 + i % 9;                             /* 2..10: fill 1.67, cv 0.43 */
    expect_lengths("short uneven 2..10", N, 10, len, SPK_FMT_SELL, "sell padding 1.67x too much slices pad 1.0");
    for (int i = 0; i < N; i++)
        len[i] = 40 + i % 41;                           /* 40..80: fill 1.33, whatever the cv */
    expect_lengths("long moderate 40..80", N, 80, len, SPK_FMT_SELL, "sell padding 1.33x cv 0.20");
    for (int i = 0; i < N; i++)
        len[i] = 7 + i % 6;                             /* 7..12: fill 1.26, past ELL's 1.25 */
    expect_lengths("past ell's limit 7..12", N, 12, len, SPK_FMT_SELL, "sell padding 1.26x");
    for (int i = 0; i < N; i++)
        len[i] = 8 + i % 3;                             /* 8..10: fill 1.11, ELL's */
    expect_lengths("within ell's limit 8..10", N, 10, len, SPK_FMT_ELL, "ell padding 1.11x at most 1.25x");
    for (int i = 0; i < N; i++)
        len[i] = i % 3 == 0 ? 30 : 5;                   /* fill 2.25, cv 0.74 */
    expect_lengths("two lengths, fill 2.25", N, 30, len, SPK_FMT_SELL, "sell padding 2.25x");
    for (int i = 0; i < N; i++)
        len[i] = i % 10 == 0 ? 40 : 4;                  /* a tail: fill 5.3 */
    /* row i holds columns 0 .. len-1: the bandwidth is the last row's index */
    expect_lengths("tail: 10% of rows 10x", N, 40, len, SPK_FMT_SELL, "sell long tail within 9999 int16");
    for (int i = 0; i < 40000; i++)
        len[i] = i % 10 == 0 ? 40 : 4;                  /* the same tail, 39999 from the diagonal */
    expect_lengths("tail, far columns", 40000, 40, len, SPK_FMT_CSR, "csr tail row blocks hyb width 4 COO");
    for (int i = 0; i < N; i++)
        len[i] = i % 10 == 0 ? 2000 : 4;                /* near, but rows longer than a slice's */
    expect_lengths("tail of 2000-entry rows", N, 2000, len, SPK_FMT_CSR, "csr tail row blocks");
    for (int i = 0; i < N; i++)
        len[i] = 5;
    len[1234] = 50000;                                  /* one row with half the nonzeros */
    expect_lengths("one huge row", N, 50000, len, SPK_FMT_COO, "coo one row 50000 holds");
    for (int i = 0; i < 100000; i++)
        len[i] = i == 0 || i == 50000 || i == 99999 ? 3000 : 5;   /* 0.2% of nnz each */
    expect_lengths("giant outliers", 100000, 3000, len, SPK_FMT_COO, "coo isolated giant p99 5");
    for (int i = 0; i < 9000; i++)
        len[i] = i % 9 == 0 ? 50 : 0;                   /* 1000 non-empty rows of 9000 */
    expect_lengths("mostly empty", 9000, 50, len, SPK_FMT_COO, "coo all COO");
    expect_lengths("0 x 0", 0, 0, len, SPK_FMT_CSR, "csr no nonzeros");
    for (int i = 0; i < 100; i++)
        len[i] = 0;
    expect_lengths("100 x 100 all zero", 100, 100, len, SPK_FMT_CSR, "csr no nonzeros");

    /* the stencils; the 7-point boundary rows are shorter, padding stays under 1.25 */
    expect_generated("poisson3d:40", SPK_FMT_ELL, "ell cv padding coherent");
    expect_generated("poisson3d:6", SPK_FMT_ELL, "ell padding 1.17x");
    expect_generated("poisson3d:3", SPK_FMT_ELL, "ell padding 1.40x sell 1.66x");
    expect_generated("poisson2d:100", SPK_FMT_ELL, "ell");
    expect_generated("elasticity3d:20", SPK_FMT_BSR, "bsr 3x3 blocks padded");
    expect_generated("elasticity3d:4", SPK_FMT_SELL, "sell padding 1.73x max 81");
    expect_generated("poisson3d27:5", SPK_FMT_SELL, "sell max 27");
    expect_generated("band:20000:1:31:4096", SPK_FMT_SELL, "sell padding 1.9");
    expect_generated("band:20000:1:32:64:3", SPK_FMT_SELL, "sell long tail int16");  /* fill 3.5 */
    expect_generated("band:40000:1:32:40000:3", SPK_FMT_CSR, "csr tail");  /* far columns */
    /* scattered columns (coherence 1 / row length: the diagonal alone): SELL even unpadded;
     * the stencils' own coherence keeps them ELL (above) */
    expect_generated("band:20000:8:8:4096", SPK_FMT_SELL, "sell padding 1.00x scattered 0.1");
    expect_generated("band:20000:16:18:20000", SPK_FMT_SELL, "sell scattered");
    expect_generated("powerlaw:20000:10", SPK_FMT_CSR, "csr tail row blocks COO");
    expect_generated("powerlaw:100000:4:3", SPK_FMT_CSR, "csr tail hyb");

    /* power law is never ELL, whatever the seed and size */
    for (int s = 1; s <= 12; s++) {
        char spec[64];
        spk_csr A;
        spk_matrix_info in;
        snprintf(spec, sizeof spec, "powerlaw:%d:%d:%d", 500 * s, 2 + s % 6, s);
        if (spk_generate_csr(ctx, spec, &A) != SPK_OK)
            continue;
        spk_stats_compute(&A, &in);
        spk_format f = spk_select_format(&in, SPK_DEVICE_CUDA, NULL, 0);
        T_CHECK(f != SPK_FMT_ELL, "%s chose ell", spec);
        spk_csr_free(&A);
    }
    free(len);
}

/* Over random statistics: ELL never past the guard, and past the choice's own limit (or with
 * scattered columns) only where SELL would pad as much; SELL within the guard, or past it only
 * for short rows near the diagonal with unpadded slices; HYB and JDS never. */
static void test_never_ell_past_guard(void)
{
    uint64_t s = 5;
    int ell = 0, sell = 0;
    for (int t = 0; t < 20000; t++) {
        spk_matrix_info in;
        memset(&in, 0, sizeof in);
        in.nrows = 1 + (int64_t)(t_rand(&s) % 100000);
        in.row_mean = 0.5 + 50 * (t_randu(&s) + 1);
        in.nnz = (int64_t)(in.row_mean * (double)in.nrows) + 1;
        in.ell_fill = 1.0 + 4.0 * (t_randu(&s) + 1) / 2;
        in.row_max = (int64_t)(in.ell_fill * in.row_mean);
        in.row_cv = (t_randu(&s) + 1) / 2;
        in.row_p50 = in.row_p95 = in.row_p99 = (int64_t)in.row_mean;
        in.hyb_width = (int64_t)(t_rand(&s) % 3);
        in.sell_fill = 1.0 + (in.ell_fill - 1.0) * (t_randu(&s) + 1) / 1.6;
        in.coherence = (t_randu(&s) + 1) / 2;
        in.bandwidth = (int64_t)(t_rand(&s) % 70000);
        const int coherent = in.coherence >= 0.5;
        spk_format f = spk_select_format(&in, SPK_DEVICE_CUDA, NULL, 0);
        if (f == SPK_FMT_ELL) {
            ell++;
            T_CHECK(in.ell_fill <= SPK_ELL_MAX_FILL &&
                        ((coherent && (in.ell_fill <= 1.25 || in.sell_fill >= in.ell_fill)) ||
                         in.sell_fill > in.ell_fill),
                    "ell at fill %.3f (sell %.3f) cv %.3f coherence %.2f", in.ell_fill,
                    in.sell_fill, in.row_cv, in.coherence);
        }
        if (f == SPK_FMT_SELL) {
            sell++;
            const int tail = in.ell_fill > SPK_ELL_MAX_FILL;
            T_CHECK(tail ? in.hyb_width >= 1 && in.row_max <= 1024 && in.sell_fill <= 1.25 &&
                               in.bandwidth <= SPK_ELL_OFF16_MAX
                         : in.sell_fill <= in.ell_fill &&
                               (!coherent || (in.ell_fill > 1.25 && in.sell_fill < in.ell_fill)),
                    "sell at fill %.3f (sell %.3f) max %lld bandwidth %lld coherence %.2f",
                    in.ell_fill, in.sell_fill, (long long)in.row_max, (long long)in.bandwidth,
                    in.coherence);
        }
        T_CHECK(f != SPK_FMT_JDS && f != SPK_FMT_HYB, "%s at fill %.3f cv %.3f",
                spk_format_str(f), in.ell_fill, in.row_cv);
    }
    T_CHECK(ell > 0 && sell > 0, "the sweep never reached ell (%d) or sell (%d)", ell, sell);
    /* a contradictory record (fill past the guard with cv 0) must not get ELL either */
    spk_matrix_info in = {0};
    in.nrows = 10;
    in.nnz = 10;
    in.row_mean = 1;
    in.row_max = 4;
    in.ell_fill = SPK_ELL_MAX_FILL + 0.5;
    T_CHECK(spk_select_format(&in, SPK_DEVICE_CUDA, NULL, 0) != SPK_FMT_ELL, "fill 3.5 chose ell");

    char tiny[6];                                       /* short buffer: truncated, terminated */
    int64_t len[4] = {1, 1, 1, 1};
    info_of_lengths(4, 1, len, &in);
    spk_select_format(&in, SPK_DEVICE_CUDA, tiny, sizeof tiny);
    T_CHECK(strlen(tiny) == 5 && strncmp(tiny, "csr: ", 5) == 0, "truncated reason '%s'", tiny);
    T_CHECK(spk_select_format(NULL, SPK_DEVICE_CUDA, tiny, sizeof tiny) == SPK_FMT_CSR, "NULL info");
}

/* ---- generators ------------------------------------------------------------------------- */

static int canonical(const spk_csr *A)
{
    if (A->rowptr[0] != 0 || A->rowptr[A->nrows] != A->nnz)
        return 0;
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] < 0 || A->colind[p] >= A->ncols ||
                (p > A->rowptr[i] && A->colind[p] <= A->colind[p - 1]))
                return 0;
    return 1;
}

/* full: the stencil's size (5, 7, 27), which only interior rows reach; 0 skips the row sums */
static void check_stencil(const char *spec, int64_t rows, int64_t nnz, int64_t maxrow,
                          int64_t minrow, int64_t full)
{
    spk_csr A;
    spk_matrix_info in;
    spk_status st = spk_generate_csr(ctx, spec, &A);
    T_CHECK(st == SPK_OK, "%s: %s", spec, spk_last_error(ctx));
    if (st)
        return;
    spk_stats_compute(&A, &in);
    T_CHECK(A.nrows == rows && A.ncols == rows && A.nnz == nnz, "%s: %lld x %lld nnz %lld, expected "
            "%lld rows nnz %lld", spec, (long long)A.nrows, (long long)A.ncols, (long long)A.nnz,
            (long long)rows, (long long)nnz);
    T_CHECK(in.row_max == maxrow && in.row_min == minrow, "%s: rows %lld..%lld, expected %lld..%lld",
            spec, (long long)in.row_min, (long long)in.row_max, (long long)minrow, (long long)maxrow);
    T_CHECK(canonical(&A) && in.symmetric && in.diag_positive, "%s: canonical %d symmetric %d "
            "diag %d", spec, canonical(&A), in.symmetric, in.diag_positive);
    /* weak diagonal dominance of the scalar stencils: row sums >= 0, zero in the interior */
    if (full) {
        int ok = 1;
        for (int64_t i = 0; i < A.nrows; i++) {
            double sum = 0;
            for (int64_t p = A.rowptr[i]; p < A.rowptr[i + 1]; p++)
                sum += A.val[p];
            if (sum < 0 || (A.rowptr[i + 1] - A.rowptr[i] == full && sum != 0))
                ok = 0;
        }
        T_CHECK(ok, "%s: row sums must be 0 inside and >= 0 on the boundary", spec);
    }
    spk_csr_free(&A);
}

/* The rows of A lie in [lo, hi] each (after the window's cut, width 2 half + 1), their columns
 * within half of the diagonal, the diagonal present and strictly dominant. */
static int band_rows_ok(const spk_csr *A, int64_t lo, int64_t hi, int64_t half)
{
    for (int64_t i = 0; i < A->nrows; i++) {
        const int64_t wlo = i > half ? i - half : 0;
        const int64_t whi = A->nrows - 1 - i > half ? i + half : A->nrows - 1;
        const int64_t len = A->rowptr[i + 1] - A->rowptr[i], room = whi - wlo + 1;
        if (len > hi || len < (lo < room ? lo : room))
            return 0;
        double d = 0, off = 0;
        for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) {
            if (A->colind[q] < wlo || A->colind[q] > whi)
                return 0;
            if (A->colind[q] == i)
                d = A->val[q];
            else
                off += fabs(A->val[q]);
        }
        if (!(d > off))
            return 0;
    }
    return 1;
}

static void test_band(void)
{
    spk_csr A, B, C;
    spk_matrix_info in;
    /* lengths uniform in [4, 12]: mean 8, sd sqrt((9^2 - 1) / 12) = 2.58, cv 0.32, fill 1.5 */
    T_CHECK(spk_generate_csr(ctx, "band:20000:4:12:16:1:5", &A) == SPK_OK, "%s", spk_last_error(ctx));
    spk_generate_csr(ctx, "band:20000:4:12:16:1:5", &B);
    spk_generate_csr(ctx, "band:20000:4:12:16:1:6", &C);
    spk_stats_compute(&A, &in);
    T_CHECK(canonical(&A) && band_rows_ok(&A, 4, 12, 16) && !in.symmetric && in.diag_positive,
            "band:20000:4:12:16: canonical %d, rows %d", canonical(&A), band_rows_ok(&A, 4, 12, 16));
    T_CHECK(fabs(in.row_mean - 8) < 0.1 && fabs(in.row_cv - 0.32) < 0.02 && in.row_min == 4 &&
                in.row_max == 12,
            "band:20000:4:12: mean %.3f cv %.3f min %lld max %lld", in.row_mean, in.row_cv,
            (long long)in.row_min, (long long)in.row_max);
    T_CHECK(A.nnz == B.nnz && !memcmp(A.colind, B.colind, (size_t)A.nnz * 4) &&
                !memcmp(A.val, B.val, (size_t)A.nnz * 8),
            "band: same seed, same matrix");
    T_CHECK(A.nnz != C.nnz || memcmp(A.colind, C.colind, (size_t)A.nnz * 4), "band: seeds 5 and 6 agree");
    spk_csr_free(&A);
    spk_csr_free(&B);
    spk_csr_free(&C);
    /* HALF defaults to MAX; a narrow band cuts its first and last rows */
    T_CHECK(spk_generate_csr(ctx, "band:1000:3:3", &A) == SPK_OK && canonical(&A) &&
                band_rows_ok(&A, 3, 3, 3) && A.nnz == 3000,
            "band:1000:3:3");
    spk_csr_free(&A);
    T_CHECK(spk_generate_csr(ctx, "band:100:5:5:2", &A) == SPK_OK && band_rows_ok(&A, 5, 5, 2) &&
                A.rowptr[1] == 3 && A.rowptr[2] - A.rowptr[1] == 4 && A.rowptr[51] - A.rowptr[50] == 5 &&
                A.nnz == 5 * 100 - 2 * (2 + 1),
            "band:100:5:5:2: the window's cut (row 0: %lld)", (long long)A.rowptr[1]);
    spk_csr_free(&A);
    /* HALF >= N: anywhere; long rows take the complement sampling */
    T_CHECK(spk_generate_csr(ctx, "band:60:40:60:1000:1:2", &A) == SPK_OK && canonical(&A) &&
                band_rows_ok(&A, 40, 60, 60),
            "band:60:40:60:1000");
    spk_csr_free(&A);
    T_CHECK(spk_generate_csr(ctx, "band:5:5:5", &A) == SPK_OK && A.nnz == 25 && canonical(&A),
            "band:5:5:5 is dense");
    spk_csr_free(&A);
    /* SKEW 2: lengths 1 + floor(32 u^2), whose mean is 1 + sum_{k=1}^{31} (1 - (k/32)^(1/2)) */
    double want = 1.0;
    for (int k = 1; k < 32; k++)
        want += 1.0 - sqrt(k / 32.0);
    T_CHECK(spk_generate_csr(ctx, "band:40000:1:32:64:2", &A) == SPK_OK && canonical(&A) &&
                band_rows_ok(&A, 1, 32, 64),
            "band:40000:1:32:64:2");
    spk_stats_compute(&A, &in);
    T_CHECK(fabs(in.row_mean - want) < 0.1 && in.row_max == 32 && in.row_min == 1 &&
                in.ell_fill > 2.5 && in.row_p50 < 16,
            "band SKEW 2: mean %.3f (want %.3f), max %lld, fill %.2f, p50 %lld", in.row_mean, want,
            (long long)in.row_max, in.ell_fill, (long long)in.row_p50);
    spk_csr_free(&A);
}

static void test_generators(void)
{
    for (int64_t N = 1; N <= 6; N++) {
        char spec[64];
        int64_t c = 3 * N - 2, N2 = N * N, N3 = N2 * N;
        snprintf(spec, sizeof spec, "poisson2d:%lld", (long long)N);
        check_stencil(spec, N2, 5 * N2 - 4 * N, N >= 3 ? 5 : N == 2 ? 3 : 1, N == 1 ? 1 : 3, 5);
        snprintf(spec, sizeof spec, "poisson3d:%lld", (long long)N);
        check_stencil(spec, N3, 7 * N3 - 6 * N2, N >= 3 ? 7 : N == 2 ? 4 : 1, N == 1 ? 1 : 4, 7);
        snprintf(spec, sizeof spec, "poisson3d27:%lld", (long long)N);
        check_stencil(spec, N3, c * c * c, N >= 3 ? 27 : N == 2 ? 8 : 1, N == 1 ? 1 : 8, 27);
        snprintf(spec, sizeof spec, "elasticity3d:%lld", (long long)N);
        check_stencil(spec, 3 * N3, 9 * c * c * c, N >= 3 ? 81 : N == 2 ? 24 : 3, N == 1 ? 3 : 24, 0);
    }
    check_stencil("poisson3d:10", 1000, 6400, 7, 4, 7);
    check_stencil("elasticity3d:10", 3000, 9 * 28 * 28 * 28, 81, 24, 0);

    /* poisson2d:3 row 4 (the centre): -1 at 1, 3, 5, 7 and 4 at 4 */
    spk_csr A;
    spk_generate_csr(ctx, "poisson2d:3", &A);
    const int32_t want_c[5] = {1, 3, 4, 5, 7};
    const double want_v[5] = {-1, -1, 4, -1, -1};
    T_CHECK(A.rowptr[5] - A.rowptr[4] == 5 && !memcmp(A.colind + A.rowptr[4], want_c, sizeof want_c) &&
                !memcmp(A.val + A.rowptr[4], want_v, sizeof want_v),
            "poisson2d:3 centre row");
    spk_csr_free(&A);
    /* elasticity3d:3, the centre node 13: block row 39..41, 27 nodes x 3 = 81 entries,
     * diagonal 26 * 4, coupling to a neighbour node's same component -1 * 4, others -1 * 1 */
    spk_generate_csr(ctx, "elasticity3d:3", &A);
    int64_t p = A.rowptr[40];
    T_CHECK(A.rowptr[41] - p == 81 && A.colind[p] == 0 && A.colind[p + 80] == 80 &&
                A.val[p + 13 * 3 + 1] == 104 && A.val[p + 13 * 3] == 26 && A.val[p + 1] == -4 &&
                A.val[p] == -1,
            "elasticity3d:3 centre row");
    spk_csr_free(&A);

    /* power law: mean ~ AVG, dominant diagonal, nonsymmetric, deterministic per seed */
    spk_csr B, C;
    spk_matrix_info in;
    T_CHECK(spk_generate_csr(ctx, "powerlaw:20000:10:7", &A) == SPK_OK, "powerlaw");
    spk_generate_csr(ctx, "powerlaw:20000:10:7", &B);
    spk_generate_csr(ctx, "powerlaw:20000:10:8", &C);
    spk_stats_compute(&A, &in);
    T_CHECK(fabs(in.row_mean - 10) < 0.05 && in.row_cv > 1 && in.row_max > 20 * in.row_p50,
            "powerlaw:20000:10: mean %.3f cv %.2f max %lld p50 %lld", in.row_mean, in.row_cv,
            (long long)in.row_max, (long long)in.row_p50);
    T_CHECK(canonical(&A) && !in.symmetric && in.diag_positive, "powerlaw canonical %d sym %d diag %d",
            canonical(&A), in.symmetric, in.diag_positive);
    int dominant = 1;
    for (int64_t i = 0; i < A.nrows; i++) {
        double d = 0, off = 0;
        for (int64_t q = A.rowptr[i]; q < A.rowptr[i + 1]; q++)
            if (A.colind[q] == i)
                d = A.val[q];
            else
                off += fabs(A.val[q]);
        dominant &= d > off;
    }
    T_CHECK(dominant, "powerlaw rows must be strictly diagonally dominant");
    T_CHECK(A.nnz == B.nnz && !memcmp(A.rowptr, B.rowptr, 20001 * sizeof *A.rowptr) &&
                !memcmp(A.colind, B.colind, (size_t)A.nnz * 4) && !memcmp(A.val, B.val, (size_t)A.nnz * 8),
            "same seed, same matrix");
    T_CHECK(A.nnz != C.nnz || memcmp(A.colind, C.colind, (size_t)A.nnz * 4), "seeds 7 and 8 agree");
    spk_csr_free(&A);
    spk_csr_free(&B);
    spk_csr_free(&C);
    T_CHECK(spk_generate_csr(ctx, "powerlaw:30:30", &A) == SPK_OK && A.nnz == 900 && canonical(&A),
            "powerlaw:30:30 is dense");
    spk_csr_free(&A);
    T_CHECK(spk_generate_csr(ctx, "powerlaw:40:25:0", &A) == SPK_OK && canonical(&A) &&
                fabs((double)A.nnz / 40 - 25) < 1.0,
            "powerlaw:40:25 (the complement sampling)");
    spk_csr_free(&A);
    T_CHECK(spk_generate_csr(ctx, "powerlaw:1:1", &A) == SPK_OK && A.nnz == 1 && A.val[0] == 1.0,
            "powerlaw:1:1");
    spk_csr_free(&A);
    test_band();
}

static void expect_error(const char *spec, const char *msg)
{
    spk_csr A;
    spk_status st = spk_generate_csr(ctx, spec, &A);
    T_CHECK(st == SPK_ERR_ARG && strstr(spk_last_error(ctx), msg), "'%s': %s '%s', expected '%s'",
            spec, spk_status_str(st), spk_last_error(ctx), msg);
    if (st == SPK_OK)
        spk_csr_free(&A);
}

static void test_generator_errors(void)
{
    expect_error("poisson3d:0", "poisson3d:N expects an integer N in [1, 2^63), got '0'");
    expect_error("poisson3d:", "poisson3d:N expects an integer N in [1, 2^63), got ''");
    expect_error("poisson3d:-3", "got '-3'");
    expect_error("poisson2d:1e3", "got '1e3'");
    expect_error("poisson3d:4:5", "takes one parameter");
    expect_error("poisson3d:2000", "32-bit");
    expect_error("elasticity3d:895", "32-bit");
    expect_error("poisson3d:99999999999999999999", "expects an integer N in [1, 2^63)");
    expect_error("poisson4d:3", "unknown generator 'poisson4d' (known: poisson2d:N, poisson3d:N, "
                                "poisson3d27:N, elasticity3d:N, powerlaw:N:AVG[:SEED], "
                                "band:N:MIN:MAX[:HALF[:SKEW[:SEED]]], rmat:SCALE[:EF[:SEED]], "
                                "mesh2d:N[:SEED])");
    expect_error("band:100", "needs MIN and MAX");
    expect_error("band:100:5", "needs MIN and MAX");
    expect_error("band:0:1:1", "N = 0");
    expect_error("band:3000000000:1:1", "32-bit");
    expect_error("band:100:0:5", "1 <= MIN <= MAX <= N = 100");
    expect_error("band:100:6:5", "MIN = 6, MAX = 5");
    expect_error("band:100:5:101", "MAX = 101");
    expect_error("band:100:5:20:3", "MAX = 20 entries do not fit the 7 columns within HALF = 3");
    expect_error("band:100:x:5", "expects MIN as an integer >= 0, got 'x'");
    expect_error("band:100:5:6:-1", "expects HALF as an integer >= 0, got '-1'");
    expect_error("band:100:1:2:3:1:4:5", "nothing after SEED, got '5'");
    expect_error("band:100:1:2:3:0", "SKEW = 0");
    expect_error("band:100:1:2:3:9", "SKEW = 9");
    expect_error("band:100:1:2:", "expects HALF as an integer >= 0, got ''");
    expect_error("powerlaw:100", "needs AVG");
    expect_error("powerlaw:100:0", "1 <= AVG <= N = 100, got '0'");
    expect_error("powerlaw:100:101", "got '101'");
    expect_error("powerlaw:100:abc", "got 'abc'");
    expect_error("powerlaw:0:1", "N >= 1, got '0'");
    expect_error("powerlaw:100:5:x", "SEED >= 0");
    expect_error("powerlaw:100:5:1:2", "SEED >= 0");
    T_CHECK(spk_is_generator_spec("poisson3d:5") && spk_is_generator_spec("powerlaw:1:1") &&
                spk_is_generator_spec("poisson3d27:2") && spk_is_generator_spec("elasticity3d:x") &&
                spk_is_generator_spec("poisson2d:") && spk_is_generator_spec("band:9:1:1"),
            "generator specs");
    T_CHECK(!spk_is_generator_spec("poisson3d") && !spk_is_generator_spec("inputs/nos5.mtx") &&
                !spk_is_generator_spec("c:/poisson3d:5") && !spk_is_generator_spec(NULL) &&
                !spk_is_generator_spec("") && !spk_is_generator_spec("Poisson3d:5"),
            "not generator specs");

    /* every allocation of a generator failing in turn: NOMEM, nothing leaked */
    const char *specs[] = {"poisson3d:5", "elasticity3d:3", "powerlaw:500:6:3"};
    for (int g = 0; g < 3; g++)
        T_CHECK(t_generate_under_failures(ctx, specs[g]), "%s under failing allocations", specs[g]);
}

/* ---- --table: the memory table of docs/formats.md --------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int print_table(void)
{
    DIR *d = opendir(SPK_INPUTS_DIR);
    char *names[256];
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".mtx") && strcmp(e->d_name, "w156.mtx") &&
            !(len >= 9 && !strcmp(e->d_name + len - 9, "_rhs1.mtx")))
            names[n++] = strdup(e->d_name);
    }
    if (d)
        closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    printf("| matrix | rows x cols | nnz | mean | max | cv | ELL fill | HYB K + COO | CSR | COO | "
           "ELL | HYB | JDS | shape rule (gpu) | auto (gpu) |\n");
    printf("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|\n");
    for (int k = 0; k < n; k++) {
        spk_csr A;
        spk_matrix_info in;
        t_read_csr(ctx, names[k], &A);
        spk_stats_compute(&A, &in);
        spk_format f = spk_select_format(&in, SPK_DEVICE_CUDA, NULL, 0);
        spk_format shape = spk_select_shape(&in, NULL, 0);
        printf("| %s | %lld x %lld | %lld | %.1f | %lld | %.2f | %.2f%s | %lld + %lld | %zu | %zu | "
               "%zu | %zu | %zu | %s | %s |\n",
               names[k], (long long)in.nrows, (long long)in.ncols, (long long)in.nnz, in.row_mean,
               (long long)in.row_max, in.row_cv, in.ell_fill,
               in.ell_fill > SPK_ELL_MAX_FILL ? " (refused)" : "", (long long)in.hyb_width,
               (long long)in.hyb_coo_nnz, in.bytes[SPK_FMT_CSR], in.bytes[SPK_FMT_COO],
               in.bytes[SPK_FMT_ELL], in.bytes[SPK_FMT_HYB], in.bytes[SPK_FMT_JDS],
               spk_format_str(shape), spk_format_str(f));
        spk_csr_free(&A);
        free(names[k]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    ctx = t_context(SPK_DEVICE_CPU);
    if (argc > 1 && strcmp(argv[1], "--table") == 0) {
        int rc = print_table();
        spk_context_destroy(ctx);
        return rc;
    }
    test_stats_small();
    test_cpu_rule();
    test_bsr_rule();
    test_hyb_width();
    test_choice();
    test_never_ell_past_guard();
    test_generators();
    test_generator_errors();
    spk_context_destroy(ctx);
    return t_done("select");
}
