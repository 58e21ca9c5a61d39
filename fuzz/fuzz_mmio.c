/* fuzz/fuzz_mmio.c -- libFuzzer target for the Matrix Market reader (src/mmio.c) and the CSR
 * assembly behind it (src/csr.c). Each input is parsed from an exact-size buffer (libFuzzer's
 * copy: a read one byte past the end is an AddressSanitizer report), and the outcome is checked
 * against the reader's contract, not just for crashes:
 *   - the status is SPK_OK, SPK_ERR_PARSE, SPK_ERR_UNSUPPORTED or SPK_ERR_NOMEM, nothing else;
 *   - a failure leaves the COO zeroed and a message "fuzz.mtx:LINE: expected ..." (parse and
 *     unsupported) or one naming the buffer (out of memory);
 *   - a success gives in-range 0-based indices, finite values, nnz within the announced count
 *     (twice it for symmetric storage), and a CSR that is canonical: rowptr non-decreasing from
 *     0 to nnz, columns strictly increasing within each row, every value finite; the assembly
 *     may refuse only with SPK_ERR_NOMEM, or SPK_ERR_ARG for finite entries whose sum
 *     overflows.
 * A violated check abort()s, which libFuzzer reports as a crash with the input saved.
 *
 * Limits: the CSR assembly costs O(nrows + ncols) memory whatever nnz is (a 50-byte header may
 * announce 2^31 - 1 rows). The context's memory budget is SPK_FUZZ_MEMORY bytes (default
 * 1e8), so the library's own check must refuse what would not fit, before allocating: the
 * largest matrix it lets through (6 million rows, 16 bytes of row arrays each) is assembled
 * and checked in about 3 s under the sanitizers, within -timeout=10 (1e9 let 61 million rows
 * through: 11 s, 0.44 us a row) and far under -rss_limit_mb=2048. Inputs whose dimensions pass
 * SPK_FUZZ_MAX_DIM (environment, default 2^20; 2147483648 assembles everything) are parsed but
 * not assembled. The same file is linked
 * into test_mmio_regress, which replays fuzz/corpus/ and every saved crash through this
 * function under gcc's sanitizers. */
#include "spk_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_DIM_DEFAULT (1 << 20)
#define FUZZ_MEMORY_DEFAULT 1e8
#define FUZZ_NAME "fuzz.mtx"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Print what broke and abort: the fuzzer keeps the input as a crash artifact. */
static void fuzz_fail(const char *what, const spk_context *ctx)
{
    fprintf(stderr, "fuzz_mmio: contract violated: %s (last error: %s)\n", what,
            spk_last_error(ctx));
    abort();
}

static int coo_zeroed(const spk_coo *c)
{
    return !c->row && !c->col && !c->val && !c->nnz && !c->nrows && !c->ncols;
}

static void check_failure(spk_context *ctx, spk_status st, const spk_coo *coo)
{
    const char *msg = spk_last_error(ctx);
    if (st != SPK_ERR_PARSE && st != SPK_ERR_UNSUPPORTED && st != SPK_ERR_NOMEM)
        fuzz_fail("status other than OK, PARSE, UNSUPPORTED, NOMEM", ctx);
    if (!coo_zeroed(coo))
        fuzz_fail("COO not zeroed after a failure", ctx);
    if (strncmp(msg, FUZZ_NAME ":", sizeof FUZZ_NAME) != 0)
        fuzz_fail("message does not start with the file name", ctx);
    if (st != SPK_ERR_NOMEM && !strstr(msg, "expected"))
        fuzz_fail("parse message does not say what was expected", ctx);
}

static void check_coo(spk_context *ctx, const spk_mm_header *h, const spk_coo *c)
{
    int64_t cap = h->symmetry == SPK_MM_GENERAL ? h->nentries : 2 * h->nentries;
    if (c->nrows != h->nrows || c->ncols != h->ncols || c->nnz < 0 || c->nnz > cap)
        fuzz_fail("COO sizes disagree with the header", ctx);
    if (c->nrows > INT32_MAX || c->ncols > INT32_MAX)
        fuzz_fail("dimensions past 32-bit indices accepted", ctx);
    for (int64_t k = 0; k < c->nnz; k++) {
        if (c->row[k] < 0 || c->row[k] >= c->nrows || c->col[k] < 0 || c->col[k] >= c->ncols)
            fuzz_fail("entry outside the matrix", ctx);
        if (!isfinite(c->val[k]))
            fuzz_fail("non-finite value accepted", ctx);
    }
}

static void check_csr(spk_context *ctx, const spk_coo *c, const spk_csr *A)
{
    if (A->nrows != c->nrows || A->ncols != c->ncols || A->nnz > c->nnz || A->rowptr[0] != 0 ||
        A->rowptr[A->nrows] != A->nnz)
        fuzz_fail("CSR sizes disagree with the COO", ctx);
    for (int64_t i = 0; i < A->nrows; i++) {
        if (A->rowptr[i + 1] < A->rowptr[i])
            fuzz_fail("CSR rowptr decreases", ctx);
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            if (A->colind[p] < 0 || A->colind[p] >= A->ncols ||
                (p > A->rowptr[i] && A->colind[p] <= A->colind[p - 1]))
                fuzz_fail("CSR columns not sorted, unique and in range", ctx);
            if (!isfinite(A->val[p]))
                fuzz_fail("CSR holds a non-finite sum", ctx);
        }
    }
}

/* A positive number from the environment, or def. */
static double env_number(const char *name, double def)
{
    const char *e = getenv(name);
    char *end;
    double v = e ? strtod(e, &end) : 0.0;
    return e && *e && *end == '\0' && v > 0 ? v : def;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static spk_context *ctx;                 /* one context for the whole run */
    static double max_dim;
    if (!ctx) {
        if (spk_context_create(&ctx, SPK_DEVICE_CPU) != SPK_OK)
            fuzz_fail("spk_context_create", ctx);
        ctx->host_memory_limit = env_number("SPK_FUZZ_MEMORY", FUZZ_MEMORY_DEFAULT);
        max_dim = env_number("SPK_FUZZ_MAX_DIM", FUZZ_MAX_DIM_DEFAULT);
    }
    spk_mm_header h;
    spk_coo coo;
    spk_status st = spk_mm_parse_coo(ctx, FUZZ_NAME, (const char *)data, size, &h, &coo);
    if (st != SPK_OK) {
        check_failure(ctx, st, &coo);
        return 0;
    }
    check_coo(ctx, &h, &coo);
    if ((double)coo.nrows <= max_dim && (double)coo.ncols <= max_dim) {
        spk_csr A;
        st = spk_csr_from_coo(ctx, &coo, &A);
        if (st != SPK_OK && st != SPK_ERR_NOMEM &&
            !(st == SPK_ERR_ARG && strstr(spk_last_error(ctx), "overflows")))
            fuzz_fail("spk_csr_from_coo refused a parsed COO", ctx);
        if (st != SPK_OK && (A.rowptr || A.colind || A.val))
            fuzz_fail("a refused assembly left arrays behind", ctx);
        if (st == SPK_OK)
            check_csr(ctx, &coo, &A);
        spk_csr_free(&A);
    }
    spk_coo_free(&coo);
    return 0;
}
