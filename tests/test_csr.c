/* tests/test_csr.c -- the canonical CSR: duplicates summed, symmetric expansion (through the
 * reader), unsorted input, empty rows, 0 x 0, 1 x 1, bad indices, the public constructors, and
 * the bit packing of the CUDA row blocks' columns. Also: a row of 10^6 entries in descending
 * order assembles in linear time, a wide matrix's order is the reference's bit for bit,
 * finite duplicates whose sum overflows are refused, and assembly that cannot fit the memory
 * the process may hold fails before allocating. */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

static spk_context *ctx;

/* Build a CSR from triplets (0-based). */
static spk_status from_triplets(int64_t m, int64_t n, int64_t nz, const int32_t *r, const int32_t *c,
                                const double *v, spk_csr *A)
{
    spk_coo coo = {m, n, nz, (int32_t *)r, (int32_t *)c, (double *)v};
    return spk_csr_from_coo(ctx, &coo, A);
}

static int csr_equals(const spk_csr *A, int64_t m, const int64_t *rp, const int32_t *ci, const double *v)
{
    if (A->nrows != m || A->nnz != rp[m])
        return 0;
    for (int64_t i = 0; i <= m; i++)
        if (A->rowptr[i] != rp[i])
            return 0;
    for (int64_t p = 0; p < rp[m]; p++)
        if (A->colind[p] != ci[p] || A->val[p] != v[p])
            return 0;
    return 1;
}

static void test_duplicates_and_order(void)
{
    /* row 1 is empty; entries unsorted; (0,2) three times, (2,0) twice */
    int32_t r[] = {2, 0, 0, 3, 0, 2, 0, 3};
    int32_t c[] = {0, 2, 1, 3, 2, 0, 2, 0};
    double v[] = {1, 2, 3, 4, 5, 6, 7, 8};
    spk_csr A;
    T_CHECK(from_triplets(4, 4, 8, r, c, v, &A) == SPK_OK, "%s", spk_last_error(ctx));
    int64_t rp[] = {0, 2, 2, 3, 5};
    int32_t ci[] = {1, 2, 0, 0, 3};
    double vv[] = {3, 14, 7, 8, 4};
    T_CHECK(csr_equals(&A, 4, rp, ci, vv), "duplicates summed, rows and columns sorted, empty row kept");
    spk_csr_free(&A);
}

/* far more columns than entries: the per-row sort path (no O(ncols) counters) */
static void test_wide(void)
{
    int32_t r[] = {1, 0, 1, 1, 0};
    int32_t c[] = {99999, 7, 5, 99999, 3};
    double v[] = {1, 2, 3, 4, 5};
    spk_csr A;
    T_CHECK(from_triplets(3, 100000, 5, r, c, v, &A) == SPK_OK, "wide: %s", spk_last_error(ctx));
    int64_t rp[] = {0, 2, 4, 4};
    int32_t ci[] = {3, 7, 5, 99999};
    double vv[] = {5, 2, 3, 5};
    T_CHECK(csr_equals(&A, 3, rp, ci, vv), "wide matrix: rows sorted, duplicates summed");
    spk_csr_free(&A);
}

/* One row of 10^6 entries, columns descending, in a matrix 2^31 - 1 wide (so no column
 * counters): assembled in linear time. Sorting each row by insertion took ~10^12 steps here
 * (16 s for 10^5 entries). Every 1000th entry repeats its column, so duplicates are summed
 * too; the result is checked entry by entry. */
static void test_long_descending_row(void)
{
    enum { N = 1000000 };
    int32_t *r = calloc(N, sizeof *r), *c = malloc(N * sizeof *c);
    double *v = malloc(N * sizeof *v);
    for (int k = 0; k < N; k++) {
        c[k] = 2 * (N - k) + 7;                     /* descending, far apart */
        if (k % 1000 == 1)
            c[k] = c[k - 1];                         /* a duplicate of the entry before */
        v[k] = (double)(k % 17) - 8.0;
    }
    const double t0 = spk_now();
    spk_matrix *A = NULL;
    spk_status st = spk_matrix_from_coo(ctx, 1, INT32_MAX, N, r, c, v, 0, &A);
    const double secs = spk_now() - t0;
    T_CHECK(st == SPK_OK, "from_coo of one long row: %s", spk_last_error(ctx));
    T_CHECK(secs < 5.0, "one descending row of 10^6 entries took %.2f s (linear time expected)",
            secs);
    if (st == SPK_OK) {
        const int64_t *rp;
        const int32_t *ci;
        const double *va;
        spk_matrix_csr(A, &rp, &ci, &va);
        const int64_t want = N - N / 1000;          /* the duplicates merged */
        int64_t bad = rp[1] == want ? 0 : 1;
        for (int64_t p = 0, k = N - 1; !bad && p < rp[1]; p++, k--) {
            double sum = v[k];
            if (k % 1000 == 1) {                    /* input order: k - 1 first, then k */
                sum = v[k - 1] + v[k];
                k--;
            }
            bad = ci[p] != c[k] || va[p] != sum || (p > 0 && ci[p] <= ci[p - 1]);
        }
        T_CHECK(!bad, "the long row is sorted, unique and summed (%lld entries, want %lld)",
                (long long)rp[1], (long long)want);
    }
    spk_matrix_destroy(A);
    free(r);
    free(c);
    free(v);
}

typedef struct trip { int32_t r, c; int64_t k; double v; } trip;

static int cmp_trip(const void *a, const void *b)
{
    const trip *x = a, *y = b;
    if (x->r != y->r)
        return x->r < y->r ? -1 : 1;
    if (x->c != y->c)
        return x->c < y->c ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

/* A wide matrix (columns up to 2^31 - 1, found by two 16-bit digits) with many duplicates:
 * the same CSR, bit for bit, as sorting the triplets by (row, column, input order) and summing
 * in that order -- what the narrow path gives too. */
static void test_wide_matches_reference(void)
{
    enum { NZ = 20000, M = 50 };
    int32_t *r = malloc(NZ * sizeof *r), *c = malloc(NZ * sizeof *c);
    double *v = malloc(NZ * sizeof *v);
    trip *t = malloc(NZ * sizeof *t);
    uint64_t s = 21;
    for (int k = 0; k < NZ; k++) {
        r[k] = (int32_t)(t_rand(&s) % M);
        /* columns sharing low or high 16-bit digits, and repeats */
        c[k] = (int32_t)((t_rand(&s) % 300) << (t_rand(&s) % 2 ? 16 : 0)) | (int32_t)(t_rand(&s) % 3);
        v[k] = t_randu(&s) * 1e3;
        t[k] = (trip){r[k], c[k], k, v[k]};
    }
    qsort(t, NZ, sizeof *t, cmp_trip);
    spk_csr A;
    spk_status st = from_triplets(M, INT32_MAX, NZ, r, c, v, &A);
    T_CHECK(st == SPK_OK, "wide random: %s", spk_last_error(ctx));
    int64_t p = -1, bad = 0;
    double *ref = calloc(NZ, sizeof *ref);
    for (int k = 0; st == SPK_OK && k < NZ; k++) {
        if (k == 0 || t[k].r != t[k - 1].r || t[k].c != t[k - 1].c) {
            p++;
            bad += p >= A.nnz || A.colind[p] != t[k].c || A.rowptr[t[k].r] > p ||
                   A.rowptr[t[k].r + 1] <= p;
            ref[p] = t[k].v;
        } else {
            ref[p] += t[k].v;                       /* summed in input order */
        }
    }
    for (int64_t q = 0; st == SPK_OK && q < A.nnz && q <= p; q++)
        bad += memcmp(&A.val[q], &ref[q], sizeof ref[q]) != 0;
    free(ref);
    T_CHECK(st != SPK_OK || (bad == 0 && p + 1 == A.nnz), "wide random: %lld entries differ "
            "from the reference order (nnz %lld, want %lld)", (long long)bad, (long long)A.nnz,
            (long long)p + 1);
    spk_csr_free(&A);
    free(r);
    free(c);
    free(v);
    free(t);
}

/* Finite entries whose sum is not (1e308 + 1e308 at one position): refused with the position,
 * from the arrays and from a file (where the message names the file). */
static void test_sum_overflow(void)
{
    const int32_t r[] = {0, 1, 0}, c[] = {0, 1, 0};
    const double v[] = {1e308, 1.0, 1e308};
    spk_matrix *A = NULL;
    spk_status st = spk_matrix_from_coo(ctx, 2, 2, 3, r, c, v, 0, &A);
    const char *msg = spk_last_error(ctx);
    T_CHECK(st == SPK_ERR_ARG && !A && strstr(msg, "a(1,1) = inf") && strstr(msg, "2 entries"),
            "duplicates summing to Inf: %s: %s", spk_status_str(st), msg);
    const double w[] = {-1e308, 1.0, -1e308};
    st = spk_matrix_from_coo(ctx, 2, 2, 3, r, c, w, 0, &A);
    T_CHECK(st == SPK_ERR_ARG && !A && strstr(spk_last_error(ctx), "a(1,1) = -inf"),
            "duplicates summing to -Inf: %s", spk_last_error(ctx));
    const double ok[] = {1e308, 1.0, -1e308};
    st = spk_matrix_from_coo(ctx, 2, 2, 3, r, c, ok, 0, &A);
    T_CHECK(st == SPK_OK && A, "finite sums accepted: %s", spk_last_error(ctx));
    spk_matrix_destroy(A);
}

/* Assembly that needs more than the process may hold fails at once, allocating nothing: a
 * 2e9 x 1 matrix of one entry needs 2 x 16 GB of row counters and offsets. */
static void test_assembly_memory(void)
{
    const int32_t r[] = {0}, c[] = {0};
    const double v[] = {1.0};
    ctx->host_memory_limit = 1e9;
    const uint64_t before = spk_context_alloc_count(ctx);
    const double t0 = spk_now();
    spk_matrix *A = NULL;
    spk_status st = spk_matrix_from_coo(ctx, 2000000000, 1, 1, r, c, v, 0, &A);
    const double secs = spk_now() - t0;
    T_CHECK(st == SPK_ERR_NOMEM && !A && strstr(spk_last_error(ctx), "needs") &&
            strstr(spk_last_error(ctx), "more than the 1 GB this context may use"),
            "2e9 x 1: %s: %s", spk_status_str(st), spk_last_error(ctx));
    T_CHECK(spk_context_alloc_count(ctx) == before && secs < 0.5, "2e9 x 1: %llu allocations, "
            "%.3f s before failing", (unsigned long long)(spk_context_alloc_count(ctx) - before),
            secs);
    spk_coo coo = {2000000000, 1, 1, (int32_t *)r, (int32_t *)c, (double *)v};
    spk_csr B;
    st = spk_csr_from_coo(ctx, &coo, &B);
    T_CHECK(st == SPK_ERR_NOMEM && spk_context_alloc_count(ctx) == before, "spk_csr_from_coo "
            "2e9 x 1: %s", spk_last_error(ctx));
    ctx->host_memory_limit = 0;
}

static void test_degenerate(void)
{
    spk_csr A;
    T_CHECK(from_triplets(0, 0, 0, NULL, NULL, NULL, &A) == SPK_OK, "0 x 0: %s", spk_last_error(ctx));
    T_CHECK(A.nrows == 0 && A.nnz == 0 && A.rowptr && A.rowptr[0] == 0, "0 x 0 has rowptr {0}");
    spk_csr_free(&A);

    int32_t r[] = {0}, c[] = {0};
    double v[] = {-2.5};
    T_CHECK(from_triplets(1, 1, 1, r, c, v, &A) == SPK_OK, "1 x 1");
    T_CHECK(A.nnz == 1 && A.val[0] == -2.5 && A.rowptr[1] == 1, "1 x 1 value");
    spk_csr_free(&A);

    T_CHECK(from_triplets(5, 3, 0, NULL, NULL, NULL, &A) == SPK_OK, "5 x 3 with no entries");
    T_CHECK(A.nrows == 5 && A.ncols == 3 && A.rowptr[5] == 0, "all rows empty");
    spk_csr_free(&A);

    int32_t rb[] = {0, 3}, cb[] = {0, 0};
    double vb[] = {1, 1};
    T_CHECK(from_triplets(3, 3, 2, rb, cb, vb, &A) == SPK_ERR_ARG, "row 3 of a 3 x 3 is out of range");
    T_CHECK(strstr(spk_last_error(ctx), "outside") != NULL, "message: %s", spk_last_error(ctx));
}

static void test_symmetric_helpers(void)
{
    int32_t r[] = {0, 0, 1, 1, 2};
    int32_t c[] = {0, 1, 0, 1, 2};
    double v[] = {4, -1, -1, 4, 2};
    spk_csr A;
    T_CHECK(from_triplets(3, 3, 5, r, c, v, &A) == SPK_OK, "build");
    T_CHECK(spk_csr_is_symmetric(&A) == 1, "symmetric");
    double d[3];
    spk_csr_diagonal(&A, d);
    T_CHECK(d[0] == 4 && d[1] == 4 && d[2] == 2, "diagonal");
    A.val[1] = -1.5;
    T_CHECK(spk_csr_is_symmetric(&A) == 0, "values differ -> not symmetric");
    spk_csr_free(&A);

    int32_t r2[] = {0, 1}, c2[] = {1, 1};
    double v2[] = {1, 1};
    T_CHECK(from_triplets(2, 2, 2, r2, c2, v2, &A) == SPK_OK, "build");
    T_CHECK(spk_csr_is_symmetric(&A) == 0, "pattern differs -> not symmetric");
    spk_csr_diagonal(&A, d);
    T_CHECK(d[0] == 0 && d[1] == 1, "missing diagonal entry reads as 0");
    spk_csr_free(&A);

    /* an entry below the diagonal without its mirror, alone or beside a mirrored pair */
    int32_t r3[] = {1, 1, 0, 2}, c3[] = {0, 1, 1, 0};
    double v3[] = {1, 1, 1, 1};
    T_CHECK(from_triplets(3, 3, 2, r3, c3, v3, &A) == SPK_OK, "build");
    T_CHECK(spk_csr_is_symmetric(&A) == 0, "a lower entry alone -> not symmetric");
    spk_csr_free(&A);
    T_CHECK(from_triplets(3, 3, 4, r3, c3, v3, &A) == SPK_OK, "build");
    T_CHECK(spk_csr_is_symmetric(&A) == 0, "a lower entry beside a pair -> not symmetric");
    spk_csr_free(&A);
    T_CHECK(from_triplets(3, 3, 3, r3, c3, v3, &A) == SPK_OK, "build");
    T_CHECK(spk_csr_is_symmetric(&A) == 1, "the pair alone is symmetric");
    spk_csr_free(&A);
}

/* symmetric storage is expanded: a file with the lower triangle gives the full matrix */
static void test_symmetric_expansion(void)
{
    spk_csr A;
    t_read_csr(ctx, "bcsstk03.mtx", &A);
    T_CHECK(A.nrows == 112 && A.nnz == 640, "bcsstk03 expanded: %lld x %lld nnz %lld",
            (long long)A.nrows, (long long)A.ncols, (long long)A.nnz);
    T_CHECK(spk_csr_is_symmetric(&A), "bcsstk03 expanded is symmetric");
    for (int64_t i = 0; i < A.nrows; i++)
        for (int64_t p = A.rowptr[i] + 1; p < A.rowptr[i + 1]; p++)
            if (A.colind[p] <= A.colind[p - 1]) {
                T_CHECK(0, "row %lld not strictly sorted", (long long)i);
                i = A.nrows;
                break;
            }
    spk_csr_free(&A);
}

static void test_public_constructors(void)
{
    /* 1-based CSR with an unsorted row and a repeated column */
    int64_t rp[] = {1, 3, 4, 6};
    int32_t ci[] = {2, 1, 2, 3, 3};
    double v[] = {1, 2, 3, 4, 5};
    spk_matrix *A = NULL;
    T_CHECK(spk_matrix_from_csr(ctx, 3, 3, rp, ci, v, 1, &A) == SPK_OK, "%s", spk_last_error(ctx));
    const int64_t *orp;
    const int32_t *oci;
    const double *ov;
    spk_matrix_csr(A, &orp, &oci, &ov);
    T_CHECK(orp[3] == 4 && oci[0] == 0 && ov[0] == 2 && oci[3] == 2 && ov[3] == 9,
            "from_csr: sorted, summed, 0-based");
    spk_matrix_info info;
    T_CHECK(spk_matrix_get_info(A, &info) == SPK_OK && info.nnz == 4 && info.row_max == 2, "info");
    spk_matrix_destroy(A);

    int32_t r[] = {0, 0, 1}, c[] = {0, 0, 1};
    double cv[] = {1, 1, 3};
    T_CHECK(spk_matrix_from_coo(ctx, 2, 2, 3, r, c, cv, 0, &A) == SPK_OK, "from_coo");
    spk_matrix_csr(A, &orp, &oci, &ov);
    T_CHECK(orp[2] == 2 && ov[0] == 2 && ov[1] == 3, "element assembly sums duplicates");
    spk_matrix_destroy(A);

    T_CHECK(spk_matrix_from_coo(ctx, -1, 2, 0, r, c, cv, 0, &A) == SPK_ERR_ARG && A == NULL, "negative size");
    T_CHECK(spk_matrix_from_coo(ctx, 2, 2, 3, r, c, cv, 2, &A) == SPK_ERR_ARG, "base 2");
    int64_t bad[] = {0, 2, 1};
    T_CHECK(spk_matrix_from_csr(ctx, 2, 2, bad, ci, v, 0, &A) == SPK_ERR_ARG, "decreasing rowptr");
    T_CHECK(strstr(spk_last_error(ctx), "decreases") != NULL, "message: %s", spk_last_error(ctx));
    T_CHECK(spk_matrix_from_csr(ctx, 2, 2, NULL, ci, v, 0, &A) == SPK_ERR_ARG, "NULL rowptr");
}

/* make the k-th allocation fail: a clean SPK_ERR_NOMEM every time, never a crash */
static void test_alloc_failure(void)
{
    int32_t r[] = {2, 0, 0, 3}, c[] = {0, 2, 1, 3};
    double v[] = {1, 2, 3, 4};
    int nomem = 0, ok = 0;
    for (uint64_t k = 1; k < 20; k++) {
        ctx->alloc_count = 0;
        ctx->fail_alloc_at = k;
        spk_csr A;
        spk_status st = from_triplets(4, 4, 4, r, c, v, &A);
        if (st == SPK_ERR_NOMEM)
            nomem++;
        else if (st == SPK_OK)
            ok++, spk_csr_free(&A);
        else
            T_CHECK(0, "allocation %llu failing gave %s", (unsigned long long)k, spk_status_str(st));
    }
    ctx->fail_alloc_at = 0;
    T_CHECK(nomem >= 5 && ok >= 1, "every allocation site fails cleanly (%d NOMEM, %d ok)", nomem, ok);
}

/* Large allocations (2 MiB and more) are 2 MiB-aligned for transparent huge pages on Linux;
 * spk_calloc's are zero after a block of the same size was filled with garbage and freed
 * (with glibc the test keeps large blocks in the heap, so the garbage is handed out again). */
#ifdef __linux__
/* Is the mapping that holds address a advised for huge pages ("hg" in its VmFlags)? 1 yes,
 * 0 no, -1 not found. *end: where that mapping ends. */
static int advised_huge(uintptr_t a, uintptr_t *end)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in = 0, got = -1;
    while (got < 0 && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char c;
        if (sscanf(line, "%lx-%lx %c", &lo, &hi, &c) == 3) {   /* a mapping's first line */
            in = a >= lo && a < hi;
            if (in)
                *end = (uintptr_t)hi;
        } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            got = strstr(line, " hg") != NULL;
        }
    }
    fclose(f);
    return got;
}
#endif

static void test_large_alloc(void)
{
    const size_t big = ((size_t)3 << 20) + 24, huge = (size_t)2 << 20;
    unsetenv("SPK_HUGEPAGES");
#ifdef __GLIBC__
    /* keep large blocks in the heap, so that a freed one is handed out again, garbage and all */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
    for (int round = 0; round < 3; round++) {
        unsigned char *g = spk_malloc(ctx, big, 1);
        T_CHECK(g != NULL, "large spk_malloc");
        if (!g)
            return;
#ifdef __linux__
        T_CHECK((uintptr_t)g % huge == 0, "a %zu-byte spk_malloc is 2 MiB-aligned (%p)", big, (void *)g);
#endif
        memset(g, 0xA5, big);
        spk_free(g);
        double *z = spk_calloc(ctx, big / sizeof *z, sizeof *z);
        T_CHECK(z != NULL, "large spk_calloc");
        if (!z)
            return;
#ifdef __linux__
        T_CHECK((uintptr_t)z % huge == 0, "a large spk_calloc is 2 MiB-aligned (%p)", (void *)z);
#endif
        size_t nonzero = 0;
        for (size_t i = 0; i < big / sizeof *z; i++)
            nonzero += z[i] != 0.0;
        T_CHECK(nonzero == 0, "round %d: %zu of the large spk_calloc's doubles are not zero", round,
                nonzero);
        spk_free(z);
    }
#ifdef __GLIBC__
    /* glibc's defaults again: large blocks in mappings of their own. (In the heap, an earlier
     * block's advice could cover this one's tail, where the heap's start sets the offsets.) */
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
    mallopt(M_TRIM_THRESHOLD, 128 << 10);
#endif
#ifdef __linux__
    /* the advice covers the whole huge pages of the array, not its tail: 3 MiB + 24 bytes is
     * one advised 2 MiB page and 4 KiB pages after it (where the kernel has THP at all) */
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (thp) {
        fclose(thp);
        unsigned char *a = spk_malloc(ctx, big, 1);
        uintptr_t end = 0, tail_end = 0;
        int head = a ? advised_huge((uintptr_t)a, &end) : -1;
        int tail = a ? advised_huge((uintptr_t)a + huge + 4096, &tail_end) : -1;
        T_CHECK(head == 1 && end == (uintptr_t)a + huge && tail == 0,
                "advice on the first 2 MiB only: head %d (mapping ends at +%ld), tail %d", head,
                a ? (long)(end - (uintptr_t)a) : 0L, tail);
        spk_free(a);
        setenv("SPK_HUGEPAGES", "0", 1);
        T_CHECK(spk_tuning_read(ctx, &ctx->tune) == SPK_OK && !ctx->tune.hugepages,
                "SPK_HUGEPAGES=0 not read: %s", spk_last_error(ctx));
        a = spk_malloc(ctx, big, 1);
        head = a ? advised_huge((uintptr_t)a, &end) : -1;
        T_CHECK(head == 0, "SPK_HUGEPAGES=0: no advice (%d)", head);
        spk_free(a);
        unsetenv("SPK_HUGEPAGES");
        spk_tuning_read(ctx, &ctx->tune);
    }
#endif
    /* the counted-allocation contract holds on the large path too */
    ctx->alloc_count = 0;
    ctx->fail_alloc_at = 1;
    void *first = spk_malloc(ctx, big, 1), *second = spk_calloc(ctx, big, 1);
    ctx->fail_alloc_at = 0;
    T_CHECK(first == NULL && second != NULL, "fail_alloc_at 1 fails the first large allocation only");
    spk_free(first);
    spk_free(second);
}

/* spk_pack_bits against a bit-by-bit reference: every field read back as the CUDA kernel
 * reads it (its start word and the next, shifted), the words past the last field zero, and
 * the same words at 1 and 3 threads. */
static void test_pack_bits(void)
{
    static const int bitss[] = {1, 5, 16, 21, 22, 31, 32};
    static const int64_t ns[] = {0, 1, 31, 32, 33, 1000, 100003};
    uint64_t s = 12345;
    for (size_t b = 0; b < sizeof bitss / sizeof bitss[0]; b++)
        for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
            const int bits = bitss[b];
            const int64_t n = ns[t];
            const size_t words = (size_t)((n + 64) * bits / 32 + 2);
            int32_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
            uint32_t *ref = calloc(words, sizeof *ref), *got = malloc(words * sizeof *got);
            uint32_t *again = malloc(words * sizeof *again);
            const uint64_t mask = bits == 32 ? 0xffffffffu : (1u << bits) - 1u;
            for (int64_t j = 0; j < n; j++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                v[j] = (int32_t)(uint32_t)((s >> 20) & mask & 0x7fffffffu);
                if (j % 97 == 0)
                    v[j] = (int32_t)(mask & 0x7fffffffu);              /* the largest field */
                for (int k = 0; k < bits; k++)
                    if (((uint32_t)v[j] >> k) & 1u) {
                        const uint64_t bit = (uint64_t)j * bits + k;
                        ref[bit >> 5] |= 1u << (bit & 31);
                    }
            }
            memset(got, 0xab, words * sizeof *got);         /* the packer must clear the tail */
#ifdef _OPENMP
            const int saved = omp_get_max_threads();
            omp_set_num_threads(1);
#endif
            spk_pack_bits(v, n, bits, got, words);
#ifdef _OPENMP
            omp_set_num_threads(3);
#endif
            spk_pack_bits(v, n, bits, again, words);
#ifdef _OPENMP
            omp_set_num_threads(saved);
#endif
            T_CHECK(memcmp(got, ref, words * sizeof *got) == 0, "pack %d bits x %lld: words differ "
                    "from the bit-by-bit reference", bits, (long long)n);
            T_CHECK(memcmp(got, again, words * sizeof *got) == 0, "pack %d bits x %lld: 1 and 3 "
                    "threads differ", bits, (long long)n);
            int bad = 0;
            for (int64_t j = 0; j < n && !bad; j++) {
                const uint64_t bit = (uint64_t)j * bits;
                const uint64_t two = (uint64_t)got[bit >> 5] | (uint64_t)got[(bit >> 5) + 1] << 32;
                bad = (uint32_t)((two >> (bit & 31)) & mask) != (uint32_t)v[j];
            }
            T_CHECK(!bad, "pack %d bits x %lld: a field does not read back", bits, (long long)n);
            free(v);
            free(ref);
            free(got);
            free(again);
        }
}

/* spk_row_blocks_walk, the CUDA row blocks' partition, against its contract on row-length
 * patterns with blocks full by rows, full by nonzeros, long rows of one piece and of several
 * (a piece's exact size and one past it), empty rows and long rows first and last: the blocks
 * cover every row once, in order; each stream block keeps both bounds and could not have
 * taken its next row; the pieces cut each long row in order; counting alone gives the same
 * counts. Small bounds (nb 6, piece 10) make every case a few rows long. */
static void test_row_blocks(void)
{
    enum { NB = 6, PIECE = 10 };
    static const int64_t pats[][16] = {
        {0, 1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 1},     /* fill by nonzeros, empty runs */
        {7, 1, 1, 1, 1, 1, 1, 1, 1, 10, 11, 20, 21, 6, 6, 7},   /* long first and last       */
        {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},       /* full by rows only          */
        {6, 6, 5, 1, 3, 3, 2, 4, 30, 31, 2, 2, 2, 0, 6, 1},     /* exact fits, 3 and 4 pieces */
    };
    const int64_t np = (int64_t)(sizeof pats / sizeof pats[0]), n = 16;
    for (int64_t t = 0; t < np; t++) {
        int64_t rowptr[17] = {0};
        for (int64_t i = 0; i < n; i++)
            rowptr[i + 1] = rowptr[i] + pats[t][i];
        spk_row_blocks c, f;
        spk_row_blocks_walk(rowptr, n, NB, PIECE, 0, &c, NULL, NULL);
        const int64_t nblk = c.npieces + c.nstream;
        int64_t *blk = malloc((size_t)(4 * nblk + 4) * sizeof *blk);
        int64_t *lfirst = malloc((size_t)(c.nlong + 1) * sizeof *lfirst);
        spk_row_blocks_walk(rowptr, n, NB, PIECE, c.npieces, &f, blk, lfirst);
        T_CHECK(memcmp(&c, &f, sizeof c) == 0, "row blocks %lld: counting and filling disagree",
                (long long)t);
        int64_t next = 0, nlong = 0, rows = 0, nnz = 0, bad = 0;
        int64_t s = c.npieces;                         /* the next stream block              */
        while (next < n && !bad) {
            const int64_t len = rowptr[next + 1] - rowptr[next];
            if (len > NB) {                            /* long: its pieces, in order         */
                bad |= lfirst[nlong + 1] - lfirst[nlong] != (len + PIECE - 1) / PIECE;
                for (int64_t p = lfirst[nlong]; p < lfirst[nlong + 1] && !bad; p++) {
                    const int64_t *d = blk + 4 * p;
                    const int64_t q = rowptr[next] + (p - lfirst[nlong]) * PIECE;
                    bad |= d[0] != next || d[1] != -1 - nlong || d[2] != q ||
                           d[3] != (q + PIECE < rowptr[next + 1] ? q + PIECE : rowptr[next + 1]);
                }
                nlong++;
                next++;
                continue;
            }
            const int64_t *d = blk + 4 * s++;          /* a stream block starts here         */
            bad |= s > nblk || d[0] != next || d[1] <= d[0] || d[1] - d[0] > NB ||
                   d[2] != rowptr[d[0]] || d[3] != rowptr[d[1]] || d[3] - d[2] > NB;
            for (int64_t i = d[0]; i < d[1] && !bad; i++)
                bad |= rowptr[i + 1] - rowptr[i] > NB;
            if (!bad && d[1] < n)                      /* closed only when it had to be      */
                bad |= !(rowptr[d[1] + 1] - rowptr[d[1]] > NB || d[1] - d[0] == NB ||
                         rowptr[d[1] + 1] - d[2] > NB);
            rows += d[1] - d[0];
            nnz += d[3] - d[2];
            if (!bad)
                next = d[1];
        }
        T_CHECK(!bad, "row blocks %lld: a block breaks the partition's contract (before row "
                "%lld)", (long long)t, (long long)next);
        T_CHECK(s == nblk && nlong == c.nlong && lfirst[0] == 0 && lfirst[c.nlong] == c.npieces,
                "row blocks %lld: %lld blocks walked of %lld, %lld long rows of %lld",
                (long long)t, (long long)s, (long long)nblk, (long long)nlong,
                (long long)c.nlong);
        T_CHECK(rows == c.stream_rows && nnz == c.stream_nnz, "row blocks %lld: stream rows "
                "%lld / %lld, nonzeros %lld / %lld", (long long)t, (long long)rows,
                (long long)c.stream_rows, (long long)nnz, (long long)c.stream_nnz);
        free(blk);
        free(lfirst);
    }
}

int main(int argc, char **argv)
{
    ctx = t_context(SPK_DEVICE_CPU);
    test_duplicates_and_order();
    test_degenerate();
    test_wide();
    test_long_descending_row();
    test_wide_matches_reference();
    test_sum_overflow();
    test_assembly_memory();
    test_symmetric_helpers();
    test_symmetric_expansion();
    test_public_constructors();
    test_alloc_failure();
    test_large_alloc();
    test_pack_bits();
    test_row_blocks();
    spk_context_destroy(ctx);
    return t_done("test_csr");
}
