/* tests/test_mmio_regress.c -- the fuzzer's corpus and crashes as a regression test: every file
 * in the folders given on the command line goes through the fuzz target (fuzz/fuzz_mmio.c,
 * linked in), whose checks abort on a broken contract; files named bad-* must fail to parse
 * and ok-* must parse. Then the cases that fuzzing and review found, each with its own check.
 * Usage: test_mmio_regress CORPUS_DIR [MORE_DIRS...] (a missing later folder is skipped: the
 * crash folder only exists once something crashed). */
#include "util.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static spk_context *ctx;

/* The whole file in an exact-size heap buffer (no NUL after it, as libFuzzer passes it). */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    char *exact = malloc(n ? n : 1);
    if (buf && exact)
        memcpy(exact, buf, n);
    free(buf);
    *len = n;
    return exact;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Replay one folder; returns the number of files, -1 if it cannot be opened. */
static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char *names[4096];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 4096;)
        if (e->d_name[0] != '.' && strcmp(e->d_name, "README.md") != 0)
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        char path[4096];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        char *buf = slurp(path, &len);
        T_CHECK(buf != NULL, "cannot read %s", path);
        if (buf) {
            LLVMFuzzerTestOneInput((const uint8_t *)buf, len);   /* aborts on a violation */
            spk_mm_header h;
            spk_coo coo;
            spk_status st = spk_mm_parse_coo(ctx, names[i], buf, len, &h, &coo);
            if (strncmp(names[i], "bad-", 4) == 0)
                T_CHECK(st == SPK_ERR_PARSE || st == SPK_ERR_UNSUPPORTED,
                        "%s: expected a parse error, got %s", names[i], spk_status_str(st));
            if (strncmp(names[i], "ok-", 3) == 0)
                T_CHECK(st == SPK_OK, "%s: %s", names[i], spk_last_error(ctx));
            spk_coo_free(&coo);
        }
        free(buf);
        free(names[i]);
    }
    return n;
}

static spk_status parse_text(const char *text, spk_mm_header *h, spk_coo *coo)
{
    size_t n = strlen(text);
    char *copy = malloc(n ? n : 1);
    memcpy(copy, text, n);
    spk_status st = spk_mm_parse_coo(ctx, "r.mtx", copy, n, h, coo);
    free(copy);
    return st;
}

/* Found in review: an array header "0 N" announces no values, but the reader still walked its
 * N empty columns: 2^31 - 1 of them took seconds for a 60-byte file. */
static void test_empty_array_is_instant(void)
{
    spk_mm_header h;
    spk_coo coo;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    spk_status st = parse_text("%%MatrixMarket matrix array real general\n0 2147483647\n", &h,
                               &coo);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    T_CHECK(st == SPK_OK && coo.nnz == 0 && coo.nrows == 0 && coo.ncols == INT32_MAX,
            "0 x 2^31-1 array: %s: %s", spk_status_str(st), spk_last_error(ctx));
    T_CHECK(s < 0.5, "0 x 2^31-1 array took %.2f s to parse", s);
    spk_coo_free(&coo);
}

int main(int argc, char **argv)
{
    ctx = t_context(SPK_DEVICE_CPU);
    if (argc < 2) {
        fprintf(stderr, "usage: test_mmio_regress CORPUS_DIR [MORE_DIRS...]\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        int n = replay_dir(argv[i]);
        if (i == 1)
            T_CHECK(n > 0, "corpus %s: %s", argv[i], n < 0 ? "cannot open" : "empty");
        printf("%s: %d files replayed\n", argv[i], n < 0 ? 0 : n);
    }
    test_empty_array_is_instant();
    spk_context_destroy(ctx);
    return t_done("test_mmio_regress");
}
