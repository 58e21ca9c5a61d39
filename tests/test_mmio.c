/* tests/test_mmio.c -- the Matrix Market reader and writer (src/mmio.c): every valid variant
 * against its dense matrix, every malformed file with its status and the line its message
 * names, size lines that must fail before allocating (against the file's length, a vector's
 * wanted length and the memory the process may hold), streams that cannot be a matrix
 * (/dev/zero, an endless pipe), write/read round trips that must be bit-identical, writers
 * that never remove what they did not create (a failing existing file, a private full device
 * made with mknod as root, a symbolic link to it, a FIFO whose reader leaves) and refuse a
 * read-only file, the real files in inputs/ against the sizes in shared/matrices/MANIFEST.md,
 * and the number parser against strtod on 100k random decimal strings. */
#define _XOPEN_SOURCE 700 /* mknod, beside the build's _POSIX_C_SOURCE */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static spk_context *ctx;

/* Parse from an exact-size heap copy with no NUL after it, so that a read past the end is
 * caught by AddressSanitizer (SPK_SANITIZE=ON), as it would fault past a mapped file. */
static spk_status parse(const char *text, spk_mm_header *h, spk_coo *coo)
{
    size_t n = strlen(text);
    char *copy = malloc(n ? n : 1);
    memcpy(copy, text, n);
    spk_status st = spk_mm_parse_coo(ctx, "t.mtx", copy, n, h, coo);
    free(copy);
    return st;
}

static int coo_is_zeroed(const spk_coo *c)
{
    return !c->row && !c->col && !c->val && c->nnz == 0 && c->nrows == 0 && c->ncols == 0;
}

static void coo_release(spk_coo *c)
{
    spk_free(c->row);
    spk_free(c->col);
    spk_free(c->val);
    memset(c, 0, sizeof *c);
}

/* 1 if the COO (duplicates summed) equals the row-major dense matrix d. */
static int coo_equals_dense(const spk_coo *c, const double *d)
{
    int64_t n = c->nrows * c->ncols;
    double *a = calloc((size_t)n + 1, sizeof *a);
    int ok = 1;
    for (int64_t k = 0; k < c->nnz; k++) {
        if (c->row[k] < 0 || c->row[k] >= c->nrows || c->col[k] < 0 || c->col[k] >= c->ncols)
            ok = 0;
        else
            a[c->row[k] * c->ncols + c->col[k]] += c->val[k];
    }
    for (int64_t k = 0; ok && k < n; k++)
        ok = a[k] == d[k];
    free(a);
    return ok;
}

/* ---- valid files -------------------------------------------------------------------------- */

typedef struct valid_case {
    const char *name, *text;
    spk_mm_format format;
    spk_mm_field field;
    spk_mm_symmetry sym;
    int64_t nrows, ncols, nentries, nnz;
    double dense[9];            /* row-major nrows x ncols                                  */
} valid_case;

#define BAN "%%MatrixMarket matrix "
static const valid_case valid_cases[] = {
    {"coordinate real general", BAN "coordinate real general\n3 3 4\n1 1 1.5\n2 1 -2\n3 3 3e2\n"
     "1 3 0.25\n", SPK_MM_COORDINATE, SPK_MM_REAL, SPK_MM_GENERAL, 3, 3, 4, 4,
     {1.5, 0, 0.25, -2, 0, 0, 0, 0, 300}},
    {"coordinate real symmetric (one upper-triangle entry mirrored too)",
     BAN "coordinate real symmetric\n3 3 5\n1 1 4\n2 1 -1\n3 2 -1\n3 3 4\n1 3 0.5\n",
     SPK_MM_COORDINATE, SPK_MM_REAL, SPK_MM_SYMMETRIC, 3, 3, 5, 8,
     {4, -1, 0.5, -1, 0, -1, 0.5, -1, 4}},
    {"coordinate real skew-symmetric", BAN "coordinate real skew-symmetric\n3 3 3\n2 1 2\n"
     "3 1 -1\n3 2 5\n", SPK_MM_COORDINATE, SPK_MM_REAL, SPK_MM_SKEW, 3, 3, 3, 6,
     {0, -2, 1, 2, 0, -5, -1, 5, 0}},
    {"coordinate integer general", BAN "coordinate integer general\n2 3 3\n1 1 7\n2 3 -4\n"
     "1 2 +2\n", SPK_MM_COORDINATE, SPK_MM_INTEGER, SPK_MM_GENERAL, 2, 3, 3, 3,
     {7, 2, 0, 0, 0, -4}},
    {"coordinate integer symmetric", BAN "coordinate integer symmetric\n2 2 2\n1 1 3\n2 1 -6\n",
     SPK_MM_COORDINATE, SPK_MM_INTEGER, SPK_MM_SYMMETRIC, 2, 2, 2, 3, {3, -6, -6, 0}},
    {"coordinate integer skew-symmetric", BAN "coordinate integer skew-symmetric\n2 2 1\n"
     "2 1 9\n", SPK_MM_COORDINATE, SPK_MM_INTEGER, SPK_MM_SKEW, 2, 2, 1, 2, {0, -9, 9, 0}},
    {"coordinate pattern general", BAN "coordinate pattern general\n2 3 3\n1 1\n2 3\n1 2\n",
     SPK_MM_COORDINATE, SPK_MM_PATTERN, SPK_MM_GENERAL, 2, 3, 3, 3, {1, 1, 0, 0, 0, 1}},
    {"coordinate pattern symmetric", BAN "coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n",
     SPK_MM_COORDINATE, SPK_MM_PATTERN, SPK_MM_SYMMETRIC, 3, 3, 2, 3,
     {0, 1, 0, 1, 0, 0, 0, 0, 1}},
    {"array real general (column-major)", BAN "array real general\n2 3\n1\n2\n3.5\n4\n5\n-6e-1\n",
     SPK_MM_ARRAY, SPK_MM_REAL, SPK_MM_GENERAL, 2, 3, 6, 6, {1, 3.5, 5, 2, 4, -0.6}},
    {"array real symmetric (packed lower triangle)", BAN "array real symmetric\n3 3\n1\n2\n3\n"
     "4\n5\n6\n", SPK_MM_ARRAY, SPK_MM_REAL, SPK_MM_SYMMETRIC, 3, 3, 6, 9,
     {1, 2, 3, 2, 4, 5, 3, 5, 6}},
    {"array real skew-symmetric (strict lower triangle)", BAN "array real skew-symmetric\n3 3\n"
     "1\n2\n3\n", SPK_MM_ARRAY, SPK_MM_REAL, SPK_MM_SKEW, 3, 3, 3, 6,
     {0, -1, -2, 1, 0, -3, 2, 3, 0}},
    {"array integer general", BAN "array integer general\n2 2\n1\n-2\n3\n4\n", SPK_MM_ARRAY,
     SPK_MM_INTEGER, SPK_MM_GENERAL, 2, 2, 4, 4, {1, 3, -2, 4}},
    {"array integer symmetric", BAN "array integer symmetric\n2 2\n1\n2\n3\n", SPK_MM_ARRAY,
     SPK_MM_INTEGER, SPK_MM_SYMMETRIC, 2, 2, 3, 4, {1, 2, 2, 3}},
    {"array integer skew-symmetric", BAN "array integer skew-symmetric\n2 2\n7\n", SPK_MM_ARRAY,
     SPK_MM_INTEGER, SPK_MM_SKEW, 2, 2, 1, 2, {0, -7, 7, 0}},
    {"banner in any case", "%%matrixmarket MATRIX Coordinate REAL General\n2 2 1\n2 2 8\n",
     SPK_MM_COORDINATE, SPK_MM_REAL, SPK_MM_GENERAL, 2, 2, 1, 1, {0, 0, 0, 8}},
    {"CRLF line ends", BAN "coordinate real general\r\n% a comment\r\n2 2 2\r\n1 1 1.25\r\n"
     "2 1 -3\r\n", SPK_MM_COORDINATE, SPK_MM_REAL, SPK_MM_GENERAL, 2, 2, 2, 2,
     {1.25, 0, -3, 0}},
    {"no final newline", BAN "coordinate real general\n2 2 2\n1 1 1\n2 2 2", SPK_MM_COORDINATE,
     SPK_MM_REAL, SPK_MM_GENERAL, 2, 2, 2, 2, {1, 0, 0, 2}},
    {"no final newline, array", BAN "array real general\n2 1\n1\n2", SPK_MM_ARRAY, SPK_MM_REAL,
     SPK_MM_GENERAL, 2, 1, 2, 2, {1, 2}},
    {"comments and blank lines anywhere after the banner",
     BAN "coordinate real general\n%\n% c1\n\n  % indented comment\n2 2 3\n%between\n1 1 1\n\n"
     "   \n%%another\n\t2  1\t 2 \n% after\n2 2 3\n% the end\n\n",
     SPK_MM_COORDINATE, SPK_MM_REAL, SPK_MM_GENERAL, 2, 2, 3, 3, {1, 0, 2, 3}},
    {"duplicates are kept for spk_csr_from_coo", BAN "coordinate real general\n2 2 3\n1 1 1\n"
     "1 1 2\n2 2 4\n", SPK_MM_COORDINATE, SPK_MM_REAL, SPK_MM_GENERAL, 2, 2, 3, 3,
     {3, 0, 0, 4}},
    {"number forms", BAN "array real general\n3 3\n1.\n.5\n-0\n+3\n1E+2\n2.5e-1\n00012\n"
     "-1.0000000000000000000000000\n1234567890123456789012e-21\n", SPK_MM_ARRAY, SPK_MM_REAL,
     SPK_MM_GENERAL, 3, 3, 9, 9, {1, 3, 12, 0.5, 100, -1, 0, 0.25, 1.234567890123456789012}},
    {"tiny values: a subnormal is kept, a zero with any exponent is zero",
     BAN "array real general\n3 1\n1e-310\n0e-400\n-0.000e-999\n", SPK_MM_ARRAY, SPK_MM_REAL,
     SPK_MM_GENERAL, 3, 1, 3, 3, {1e-310, 0, 0}},
    {"UTF-8 byte-order mark", "\xEF\xBB\xBF" BAN "coordinate real general\n1 1 1\n1 1 5\n",
     SPK_MM_COORDINATE, SPK_MM_REAL, SPK_MM_GENERAL, 1, 1, 1, 1, {5}},
    {"0 x 0, no entries", BAN "coordinate real general\n0 0 0\n", SPK_MM_COORDINATE,
     SPK_MM_REAL, SPK_MM_GENERAL, 0, 0, 0, 0, {0}},
    {"3 x 3, no entries", BAN "coordinate real symmetric\n3 3 0\n", SPK_MM_COORDINATE,
     SPK_MM_REAL, SPK_MM_SYMMETRIC, 3, 3, 0, 0, {0}},
    {"array 0 x 0", BAN "array real general\n0 0\n", SPK_MM_ARRAY, SPK_MM_REAL,
     SPK_MM_GENERAL, 0, 0, 0, 0, {0}},
};

static void test_valid(void)
{
    for (size_t c = 0; c < sizeof valid_cases / sizeof valid_cases[0]; c++) {
        const valid_case *v = &valid_cases[c];
        spk_mm_header h;
        spk_coo coo;
        spk_status st = parse(v->text, &h, &coo);
        T_CHECK(st == SPK_OK, "%s: %s: %s", v->name, spk_status_str(st), spk_last_error(ctx));
        if (st)
            continue;
        T_CHECK(h.format == v->format && h.field == v->field && h.symmetry == v->sym,
                "%s: header %d %d %d", v->name, h.format, h.field, h.symmetry);
        T_CHECK(h.nrows == v->nrows && h.ncols == v->ncols && h.nentries == v->nentries,
                "%s: size %lld x %lld, %lld entries", v->name, (long long)h.nrows,
                (long long)h.ncols, (long long)h.nentries);
        T_CHECK(coo.nrows == v->nrows && coo.ncols == v->ncols && coo.nnz == v->nnz,
                "%s: coo %lld x %lld nnz %lld, expected nnz %lld", v->name,
                (long long)coo.nrows, (long long)coo.ncols, (long long)coo.nnz,
                (long long)v->nnz);
        T_CHECK(coo_equals_dense(&coo, v->dense), "%s: values differ", v->name);
        coo_release(&coo);
    }
    /* -0 keeps its sign; the header may be NULL. */
    spk_coo coo;
    const char *neg0 = BAN "array real general\n1 1\n-0.0\n";
    spk_status st = spk_mm_parse_coo(ctx, "t.mtx", neg0, strlen(neg0), NULL, &coo);
    T_CHECK(st == SPK_OK && coo.nnz == 1 && coo.val[0] == 0 && signbit(coo.val[0]),
            "-0.0: %s", spk_last_error(ctx));
    coo_release(&coo);
}

/* ---- malformed files ---------------------------------------------------------------------- */

typedef struct bad_case {
    const char *name, *text;
    spk_status status;
    const char *line;           /* ":7:" -- the line the message must name                  */
    const char *detail;         /* a further substring the message must hold (or NULL)     */
} bad_case;

static const bad_case bad_cases[] = {
    {"empty file", "", SPK_ERR_PARSE, "t.mtx:1:", "found end of file"},
    {"no banner", "3 3 1\n1 1 1\n", SPK_ERR_PARSE, "t.mtx:1:", "expected banner"},
    {"comment instead of banner", "% hello\n" BAN "coordinate real general\n1 1 0\n",
     SPK_ERR_PARSE, "t.mtx:1:", "found '%'"},
    {"bad object", "%%MatrixMarket vector coordinate real general\n1 1 0\n", SPK_ERR_PARSE,
     "t.mtx:1:", "found 'vector'"},
    {"bad format", BAN "sparse real general\n1 1 0\n", SPK_ERR_PARSE, "t.mtx:1:",
     "found 'sparse'"},
    {"bad field", BAN "coordinate double general\n1 1 0\n", SPK_ERR_PARSE, "t.mtx:1:",
     "found 'double'"},
    {"bad symmetry", BAN "coordinate real upper\n1 1 0\n", SPK_ERR_PARSE, "t.mtx:1:",
     "found 'upper'"},
    {"banner cut short", BAN "coordinate real\n1 1 0\n", SPK_ERR_PARSE, "t.mtx:1:",
     "found end of line"},
    {"banner with trailing junk", BAN "coordinate real general extra\n1 1 0\n", SPK_ERR_PARSE,
     "t.mtx:1:", "found 'extra'"},
    {"complex", BAN "coordinate complex general\n1 1 1\n1 1 1 0\n", SPK_ERR_UNSUPPORTED,
     "t.mtx:1:", "complex"},
    {"hermitian", BAN "coordinate real hermitian\n1 1 1\n1 1 1\n", SPK_ERR_UNSUPPORTED,
     "t.mtx:1:", "hermitian"},
    {"array pattern", BAN "array pattern general\n1 1\n", SPK_ERR_PARSE, "t.mtx:1:",
     "pattern"},
    {"pattern skew-symmetric", BAN "coordinate pattern skew-symmetric\n2 2 1\n2 1\n",
     SPK_ERR_PARSE, "t.mtx:1:", "skew-symmetric"},
    {"missing size line", BAN "coordinate real general\n% only\n% comments\n", SPK_ERR_PARSE,
     "t.mtx:3:", "expected size line"},
    {"size line with a bad token", BAN "coordinate real general\n% c\n3 x 4\n1 1 1\n",
     SPK_ERR_PARSE, "t.mtx:3:", "number of columns"},
    {"size line too short", BAN "coordinate real general\n3 3\n1 1 1\n", SPK_ERR_PARSE,
     "t.mtx:2:", "number of entries"},
    {"size line too long", BAN "coordinate real general\n3 3 1 7\n1 1 1\n", SPK_ERR_PARSE,
     "t.mtx:2:", "found '7'"},
    {"negative rows", BAN "coordinate real general\n-3 3 1\n1 1 1\n", SPK_ERR_PARSE,
     "t.mtx:2:", "found '-3'"},
    {"negative columns", BAN "array real general\n3 -1\n", SPK_ERR_PARSE, "t.mtx:2:",
     "found '-1'"},
    {"symmetric but not square", BAN "coordinate real symmetric\n3 4 1\n1 1 1\n",
     SPK_ERR_PARSE, "t.mtx:2:", "square"},
    {"row index 0", BAN "coordinate real general\n3 3 2\n1 1 1\n0 1 1\n", SPK_ERR_PARSE,
     "t.mtx:4:", "row index in 1..3, found '0'"},
    {"column index 0", BAN "coordinate real general\n3 3 1\n1 0 1\n", SPK_ERR_PARSE,
     "t.mtx:3:", "column index in 1..3, found '0'"},
    {"row index > nrows", BAN "coordinate real general\n3 4 2\n1 1 1\n\n4 1 1\n",
     SPK_ERR_PARSE, "t.mtx:5:", "row index in 1..3, found '4'"},
    {"column index > ncols", BAN "coordinate real general\n4 3 2\n1 1 1\n% c\n1 4 1\n",
     SPK_ERR_PARSE, "t.mtx:5:", "column index in 1..3, found '4'"},
    {"negative index", BAN "coordinate real general\n3 3 1\n-1 1 1\n", SPK_ERR_PARSE,
     "t.mtx:3:", "found '-1'"},
    {"too few entries", BAN "coordinate real general\n3 3 4\n1 1 1\n2 2 1\n3 3 1\n",
     SPK_ERR_PARSE, "t.mtx:5:", "expected 4 entries as announced on line 2, found 3"},
    {"too few entries, comment last", BAN "coordinate real general\n3 3 2\n1 1 1\n% end",
     SPK_ERR_PARSE, "t.mtx:4:", "found 1"},
    {"too many entries", BAN "coordinate real general\n3 3 2\n1 1 1\n2 2 1\n% c\n3 3 1\n",
     SPK_ERR_PARSE, "t.mtx:6:", "expected end of file after the 2 entries"},
    {"missing value", BAN "coordinate real general\n3 3 2\n1 1 1\n% c\n\n2 2\n", SPK_ERR_PARSE,
     "t.mtx:6:", "expected 3 fields (row col value), found 2"},
    {"missing column", BAN "coordinate pattern general\n3 3 1\n2\n", SPK_ERR_PARSE,
     "t.mtx:3:", "expected 2 fields (row col), found 1"},
    {"non-numeric value", BAN "coordinate real general\n3 3 1\n1 1 abc\n", SPK_ERR_PARSE,
     "t.mtx:3:", "expected a real value, found 'abc'"},
    {"half a number", BAN "coordinate real general\n3 3 1\n1 1 1.5e\n", SPK_ERR_PARSE,
     "t.mtx:3:", "found '1.5e'"},
    {"comma decimal", BAN "coordinate real general\n3 3 1\n1 1 1,5\n", SPK_ERR_PARSE,
     "t.mtx:3:", "found '1,5'"},
    {"hexadecimal float", BAN "coordinate real general\n3 3 1\n1 1 0x1p3\n", SPK_ERR_PARSE,
     "t.mtx:3:", "found '0x1p3'"},
    {"NaN", BAN "coordinate real general\n3 3 2\n1 1 1\n2 2 NaN\n", SPK_ERR_PARSE, "t.mtx:4:",
     "expected a finite value"},
    {"Inf", BAN "coordinate real general\n3 3 1\n1 1 -Inf\n", SPK_ERR_PARSE, "t.mtx:3:",
     "found '-Inf'"},
    {"overflow to Inf", BAN "array real general\n1 1\n1e999\n", SPK_ERR_PARSE, "t.mtx:3:",
     "expected a finite value"},
    {"underflow to zero", BAN "coordinate real general\n2 2 2\n1 1 1\n2 2 1e-400\n",
     SPK_ERR_PARSE, "t.mtx:4:", "closer to 0 than any double), found '1e-400'"},
    {"NaN in an array", BAN "array real general\n2 1\n1\nnan\n", SPK_ERR_PARSE, "t.mtx:4:",
     "found 'nan'"},
    {"trailing junk", BAN "coordinate real general\n3 3 1\n1 1 1.0 junk\n", SPK_ERR_PARSE,
     "t.mtx:3:", "expected end of line after 3 fields (row col value), found 'junk'"},
    {"trailing junk, pattern", BAN "coordinate pattern general\n3 3 1\n1 1 1\n", SPK_ERR_PARSE,
     "t.mtx:3:", "after 2 fields (row col), found '1'"},
    {"junk glued to an index", BAN "coordinate real general\n3 3 1\n1x 1 1\n", SPK_ERR_PARSE,
     "t.mtx:3:", "found '1x'"},
    {"integer field with a fraction", BAN "coordinate integer general\n3 3 1\n1 1 1.5\n",
     SPK_ERR_PARSE, "t.mtx:3:", "expected an integer value, found '1.5'"},
    {"skew-symmetric with a diagonal entry", BAN "coordinate real skew-symmetric\n3 3 2\n2 1 1\n"
     "2 2 1\n", SPK_ERR_PARSE, "t.mtx:4:", "off-diagonal"},
    {"array with too few values", BAN "array real general\n2 2\n1\n2\n3\n", SPK_ERR_PARSE,
     "t.mtx:5:", "expected 4 values"},
    {"array with too many values", BAN "array real general\n2 1\n1\n2\n3\n", SPK_ERR_PARSE,
     "t.mtx:5:", "found '3'"},
    {"array with two values on a line", BAN "array real general\n2 1\n1 2\n", SPK_ERR_PARSE,
     "t.mtx:3:", "found '2'"},
    {"array symmetric with the full square", BAN "array real symmetric\n2 2\n1\n2\n3\n4\n",
     SPK_ERR_PARSE, "t.mtx:6:", "after the 3 values"},
    {"CRLF, error line still right", BAN "coordinate real general\r\n2 2 2\r\n1 1 1\r\n"
     "2 2 x\r\n", SPK_ERR_PARSE, "t.mtx:4:", "found 'x'"},
    {"no final newline, too few", BAN "coordinate real general\n2 2 3\n1 1 1\n2 2 2",
     SPK_ERR_PARSE, "t.mtx:4:", "found 2"},
};

static void test_malformed(void)
{
    for (size_t c = 0; c < sizeof bad_cases / sizeof bad_cases[0]; c++) {
        const bad_case *b = &bad_cases[c];
        spk_mm_header h;
        spk_coo coo;
        memset(&coo, 0xff, sizeof coo);
        spk_status st = parse(b->text, &h, &coo);
        const char *msg = spk_last_error(ctx);
        T_CHECK(st == b->status, "%s: status %s, expected %s (%s)", b->name,
                spk_status_str(st), spk_status_str(b->status), msg);
        T_CHECK(strstr(msg, b->line) != NULL, "%s: message lacks '%s': %s", b->name, b->line,
                msg);
        T_CHECK(strstr(msg, "expected") != NULL, "%s: message says nothing expected: %s",
                b->name, msg);
        T_CHECK(!b->detail || strstr(msg, b->detail), "%s: message lacks '%s': %s", b->name,
                b->detail, msg);
        T_CHECK(coo_is_zeroed(&coo), "%s: out not zeroed on failure", b->name);
        if (st == SPK_OK)
            coo_release(&coo);
    }
}

/* A size line announcing more than the file could hold fails before any large allocation. */
static void test_huge_sizes(void)
{
    static const struct { const char *name, *text; spk_status status; const char *detail; }
    cases[] = {
        {"rows > INT32_MAX", BAN "coordinate real general\n2147483648 1 1\n1 1 1\n",
         SPK_ERR_UNSUPPORTED, "2147483647"},
        {"cols > INT32_MAX", BAN "coordinate real general\n1 99999999999 1\n1 1 1\n",
         SPK_ERR_UNSUPPORTED, "2147483647"},
        {"entries far beyond the file", BAN "coordinate real general\n2147483647 2147483647 "
         "4611686018427387904\n1 1 1\n", SPK_ERR_PARSE, "announcing 4611686018427387904"},
        {"entries just beyond the file", BAN "coordinate real general\n10 10 40\n1 1 1\n",
         SPK_ERR_PARSE, "announcing 40"},
        {"entries beyond 2^63", BAN "coordinate real general\n1 1 99999999999999999999\n",
         SPK_ERR_PARSE, "below 2^63"},
        {"array of 2^62 values", BAN "array real general\n2147483647 2147483647\n1\n",
         SPK_ERR_PARSE, "announcing 4611686014132420609"},
        {"symmetric array too large", BAN "array real symmetric\n2147483647 2147483647\n1\n",
         SPK_ERR_PARSE, "entries in a file of"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        spk_mm_header h;
        spk_coo coo;
        uint64_t before = spk_context_alloc_count(ctx);
        spk_status st = parse(cases[c].text, &h, &coo);
        const char *msg = spk_last_error(ctx);
        T_CHECK(st == cases[c].status, "%s: status %s: %s", cases[c].name, spk_status_str(st),
                msg);
        T_CHECK(strstr(msg, "t.mtx:2:") && strstr(msg, cases[c].detail), "%s: message: %s",
                cases[c].name, msg);
        T_CHECK(spk_context_alloc_count(ctx) == before, "%s: %llu allocations before failing",
                cases[c].name, (unsigned long long)(spk_context_alloc_count(ctx) - before));
        T_CHECK(coo_is_zeroed(&coo), "%s: out not zeroed", cases[c].name);
    }
}

/* Each of the three allocations made to fail in turn: NOMEM, nothing left allocated. */
static void test_alloc_failure(void)
{
    const char *text = BAN "coordinate real symmetric\n3 3 2\n1 1 1\n2 1 2\n";
    for (uint64_t k = 1; k <= 3; k++) {
        spk_mm_header h;
        spk_coo coo;
        ctx->fail_alloc_at = spk_context_alloc_count(ctx) + k;
        spk_status st = parse(text, &h, &coo);
        T_CHECK(st == SPK_ERR_NOMEM, "allocation %llu failing: %s", (unsigned long long)k,
                spk_status_str(st));
        T_CHECK(coo_is_zeroed(&coo), "allocation %llu failing: out not zeroed",
                (unsigned long long)k);
        T_CHECK(strstr(spk_last_error(ctx), "t.mtx") != NULL, "message: %s",
                spk_last_error(ctx));
    }
    ctx->fail_alloc_at = 0;
}

/* ---- files ------------------------------------------------------------------------------- */

static char tmp_path[256];
static const char *tmp_file(const char *tag)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/spk_test_mmio_%ld_%s.mtx", (long)getpid(), tag);
    return tmp_path;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

static void test_file_errors(void)
{
    spk_mm_header h;
    spk_coo coo;
    spk_status st = spk_mm_read_coo(ctx, "/nonexistent/dir/a.mtx", &h, &coo);
    T_CHECK(st == SPK_ERR_IO && strstr(spk_last_error(ctx), "/nonexistent/dir/a.mtx") &&
            strstr(spk_last_error(ctx), "No such file"), "missing file: %s: %s",
            spk_status_str(st), spk_last_error(ctx));
    st = spk_mm_read_coo(ctx, "/tmp", &h, &coo);
    T_CHECK(st == SPK_ERR_IO, "directory: %s: %s", spk_status_str(st), spk_last_error(ctx));

    /* Through a real file the message names the path. */
    const char *p = tmp_file("bad");
    write_text(p, BAN "coordinate real general\n3 3 2\n% one\n% two\n1 1 1\n\n2 2 oops\n");
    st = spk_mm_read_coo(ctx, p, &h, &coo);
    char want[300];
    snprintf(want, sizeof want, "%s:7: expected a real value, found 'oops'", p);
    T_CHECK(st == SPK_ERR_PARSE && strcmp(spk_last_error(ctx), want) == 0,
            "file message '%s', expected '%s'", spk_last_error(ctx), want);
    T_CHECK(coo_is_zeroed(&coo), "out not zeroed after a file error");
    write_text(p, "");                      /* an empty file: read, not mapped */
    st = spk_mm_read_coo(ctx, p, &h, &coo);
    T_CHECK(st == SPK_ERR_PARSE && strstr(spk_last_error(ctx), ":1: expected banner"),
            "empty file: %s", spk_last_error(ctx));
    remove(p);

    spk_csr A = {0, 0, 0, NULL, NULL, NULL};
    int64_t rp = 0;
    A.rowptr = &rp;
    st = spk_mm_write_csr(ctx, "/nonexistent/dir/a.mtx", &A);
    T_CHECK(st == SPK_ERR_IO && strstr(spk_last_error(ctx), "/nonexistent/dir/a.mtx"),
            "write to a missing directory: %s", spk_last_error(ctx));
    st = spk_mm_read_coo(ctx, NULL, &h, &coo);
    T_CHECK(st == SPK_ERR_ARG, "NULL path: %s", spk_status_str(st));
}

/* ---- what the reader checks before committing memory ---------------------------------------- */

/* A size line whose arrays cannot fit what the process may hold fails at once, allocating
 * nothing: a 67-byte file of 2e9 x 1 asked for 2 x 16 GB of row arrays, a vector file of 2e9
 * rows for 16 GB before its length was compared. */
static void test_memory_limits(void)
{
    const char *p = tmp_file("mem");
    write_text(p, BAN "coordinate real general\n2000000000 1 1\n1 1 1\n");
    ctx->host_memory_limit = 1e9;
    uint64_t before = spk_context_alloc_count(ctx);
    double t0 = spk_now();
    spk_matrix *A = NULL;
    spk_status st = spk_matrix_read_mtx(ctx, p, &A);
    const char *msg = spk_last_error(ctx);
    T_CHECK(st == SPK_ERR_NOMEM && !A && strstr(msg, ":2: a 2000000000 x 1 matrix") &&
            strstr(msg, "needs 32 GB, more than the 1 GB this context may use"),
            "2e9 x 1 header: %s: %s", spk_status_str(st), msg);
    T_CHECK(spk_context_alloc_count(ctx) == before && spk_now() - t0 < 0.5,
            "2e9 x 1 header: %llu allocations, %.3f s", (unsigned long long)(spk_context_alloc_count(ctx) - before),
            spk_now() - t0);

    /* a right-hand side of 2e9 rows where 18 are wanted: refused at its size line */
    double *v = NULL;
    int64_t n = -1;
    st = spk_vector_read_mtx_len(ctx, p, 18, &v);
    msg = spk_last_error(ctx);
    T_CHECK(st == SPK_ERR_ARG && !v && strstr(msg, ":2: expected a vector of 18 entries, found "
            "a size line announcing 2000000000 x 1"), "vector of the wrong length: %s: %s",
            spk_status_str(st), msg);
    T_CHECK(spk_context_alloc_count(ctx) == before, "vector of the wrong length: %llu "
            "allocations", (unsigned long long)(spk_context_alloc_count(ctx) - before));
    /* any length: the 16 GB dense vector is checked against the memory before it is made */
    st = spk_vector_read_mtx(ctx, p, &v, &n);
    T_CHECK(st == SPK_ERR_NOMEM && !v && n == 0 && strstr(spk_last_error(ctx), "vector") &&
            spk_context_alloc_count(ctx) == before, "2e9-row vector: %s: %s", spk_status_str(st),
            spk_last_error(ctx));
    ctx->host_memory_limit = 0;
    write_text(p, BAN "array real general\n2 1\n1\n2\n");
    st = spk_vector_read_mtx_len(ctx, p, 2, &v);
    T_CHECK(st == SPK_OK && v && v[0] == 1 && v[1] == 2, "vector of the right length: %s",
            spk_last_error(ctx));
    free(v);
    v = NULL;
    write_text(p, BAN "coordinate real general\n2 1 2\n1 1 1e308\n1 1 1e308\n");
    st = spk_vector_read_mtx(ctx, p, &v, &n);
    T_CHECK(st == SPK_ERR_PARSE && !v && strstr(spk_last_error(ctx), "v(1) = inf"),
            "repeated vector entries summing to Inf: %s", spk_last_error(ctx));
    remove(p);

    /* /dev/zero: not a banner, so not read on (it used to be read until 16.8 GB) */
    t0 = spk_now();
    st = spk_matrix_read_mtx(ctx, "/dev/zero", &A);
    T_CHECK(st == SPK_ERR_PARSE && !A && strstr(spk_last_error(ctx), "/dev/zero:1: expected "
            "banner") && spk_now() - t0 < 0.5, "/dev/zero: %s (%.3f s)", spk_last_error(ctx),
            spk_now() - t0);

    /* an endless stream that starts like a matrix: read until the buffer would pass the
     * memory the process may hold */
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(2);
    }
    pid_t child = fork();
    if (child == 0) {
        close(fds[0]);
        static const char head[] = BAN "coordinate real general\n";
        char line[4096];
        memset(line, ' ', sizeof line);
        line[0] = '%';
        line[sizeof line - 1] = '\n';
        if (write(fds[1], head, sizeof head - 1) < 0)
            _exit(0);
        while (write(fds[1], line, sizeof line) > 0)
            ;
        _exit(0);
    }
    close(fds[1]);
    char dev[64];
    snprintf(dev, sizeof dev, "/dev/fd/%d", fds[0]);
    ctx->host_memory_limit = 64e6;
    st = spk_matrix_read_mtx(ctx, dev, &A);
    ctx->host_memory_limit = 0;
    T_CHECK(st == SPK_ERR_NOMEM && !A && strstr(spk_last_error(ctx), "reading on past") &&
            strstr(spk_last_error(ctx), "this context may use"), "endless stream: %s: %s",
            spk_status_str(st), spk_last_error(ctx));
    close(fds[0]);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
}

/* A symmetric file that lists both (i,j) and (j,i): read (and summed) as before, but counted. */
static void test_both_triangles(void)
{
    spk_mm_header h;
    spk_coo coo;
    static const char text[] = BAN "coordinate real symmetric\n3 3 5\n2 1 1\n1 2 2\n3 1 4\n3 1 8\n"
                               "3 3 5\n";
    spk_status st = parse(text, &h, &coo);
    T_CHECK(st == SPK_OK && h.both_triangles == 1, "both triangles: %s, count %lld",
            spk_last_error(ctx), (long long)h.both_triangles);
    coo_release(&coo);
    st = parse(BAN "coordinate real symmetric\n3 3 3\n2 1 1\n3 1 2\n3 2 3\n", &h, &coo);
    T_CHECK(st == SPK_OK && h.both_triangles == 0, "lower triangle only: count %lld",
            (long long)h.both_triangles);
    coo_release(&coo);
    st = parse(BAN "coordinate real skew-symmetric\n2 2 2\n2 1 1\n1 2 -1\n", &h, &coo);
    T_CHECK(st == SPK_OK && h.both_triangles == 1, "skew, both triangles: count %lld",
            (long long)h.both_triangles);
    coo_release(&coo);

    const char *p = tmp_file("both");
    write_text(p, text);
    spk_matrix *A = NULL;
    st = spk_matrix_read_mtx(ctx, p, &A);
    int64_t summed = -1, both = -1;
    T_CHECK(st == SPK_OK && spk_matrix_input_counts(A, &summed, &both) == SPK_OK,
            "read: %s", spk_last_error(ctx));
    /* 9 entries after mirroring, 5 positions: (1,2) and (2,1) from both triangles, (3,1) and
     * (1,3) twice each */
    T_CHECK(both == 1 && summed == 4, "input counts: both %lld, summed %lld", (long long)both,
            (long long)summed);
    spk_matrix_destroy(A);
    /* the mirrors of a symmetric file meet: 1e308 at (2,1) and at (1,2) sum to Inf */
    write_text(p, BAN "coordinate real symmetric\n2 2 2\n2 1 1e308\n1 2 1e308\n");
    st = spk_matrix_read_mtx(ctx, p, &A);
    T_CHECK(st == SPK_ERR_PARSE && !A && strstr(spk_last_error(ctx), p) &&
            strstr(spk_last_error(ctx), "a(1,2) = inf") && strstr(spk_last_error(ctx), "mirror"),
            "symmetric entries summing to Inf: %s: %s", spk_status_str(st), spk_last_error(ctx));
    remove(p);
}

/* ---- writers that never remove what they did not create ------------------------------------- */

static int is_char_device(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0 && S_ISCHR(sb.st_mode);
}

static char *read_all(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    char *b = calloc(1, 1 << 20);
    size_t n = fread(b, 1, (1 << 20) - 1, f);
    b[n] = '\0';
    fclose(f);
    return b;
}

static void test_writers_keep_what_exists(void)
{
    enum { N = 20000 };                             /* ~400 KB: past any small buffer */
    double *v = malloc(N * sizeof *v);
    for (int i = 0; i < N; i++)
        v[i] = 1.0 / (i + 3);
    char dir[] = "/tmp/spk_test_mmio_w_XXXXXX", path[128], link[128];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }

    /* a write that fails (the file size limit, SIGXFSZ ignored: EFBIG as a full disk gives
     * ENOSPC): an existing file stays, a file the call created is removed */
    snprintf(path, sizeof path, "%s/old.mtx", dir);
    write_text(path, "old contents\n");
    struct rlimit old_lim, lim = {8192, 8192};
    getrlimit(RLIMIT_FSIZE, &old_lim);
    lim.rlim_max = old_lim.rlim_max;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &lim);
    spk_status st = spk_vector_write_mtx(ctx, path, v, N, NULL);
    T_CHECK(st == SPK_ERR_IO && strstr(spk_last_error(ctx), "File too large"),
            "write past the size limit: %s: %s", spk_status_str(st), spk_last_error(ctx));
    T_CHECK(access(path, F_OK) == 0, "a failed write removed the existing file it wrote to");
    snprintf(path, sizeof path, "%s/new.mtx", dir);
    st = spk_vector_write_mtx(ctx, path, v, N, NULL);
    T_CHECK(st == SPK_ERR_IO && access(path, F_OK) != 0, "a failed write leaves no file it "
            "created: %s", spk_last_error(ctx));
    setrlimit(RLIMIT_FSIZE, &old_lim);
    signal(SIGXFSZ, SIG_DFL);

    /* a read-only file is refused, even by root */
    snprintf(path, sizeof path, "%s/ro.mtx", dir);
    write_text(path, "read-only contents\n");
    chmod(path, 0444);
    st = spk_vector_write_mtx(ctx, path, v, 2, NULL);
    char *got = read_all(path);
    T_CHECK(st == SPK_ERR_IO && strstr(spk_last_error(ctx), "read-only (mode 0444)") && got &&
            strcmp(got, "read-only contents\n") == 0, "read-only file: %s: %s",
            spk_status_str(st), spk_last_error(ctx));
    free(got);

    /* onto a descriptor: from its offset, the descriptor stays open */
    snprintf(path, sizeof path, "%s/fd.mtx", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    T_CHECK(fd >= 0 && write(fd, "before\n", 7) == 7, "open %s", path);
    st = spk_vector_write_mtx_fd(ctx, fd, "fd.mtx", v, 2, NULL);
    T_CHECK(st == SPK_OK && write(fd, "after\n", 6) == 6, "write onto a descriptor: %s",
            spk_last_error(ctx));
    close(fd);
    got = read_all(path);
    char want[256];
    snprintf(want, sizeof want, "before\n%%%%MatrixMarket matrix array real general\n2 1\n%.17g\n"
             "%.17g\nafter\n", v[0], v[1]);
    T_CHECK(got && strcmp(got, want) == 0, "descriptor output: '%s'", got ? got : "(none)");
    free(got);

    /* a FIFO whose reader leaves after one byte: EPIPE (SIGPIPE ignored), the FIFO stays */
    snprintf(path, sizeof path, "%s/fifo", dir);
    if (mkfifo(path, 0600) == 0) {
        pid_t reader = fork();
        if (reader == 0) {
            char c;
            int r = open(path, O_RDONLY);
            _exit(r >= 0 && read(r, &c, 1) == 1 ? 0 : 1);
        }
        signal(SIGPIPE, SIG_IGN);
        st = spk_vector_write_mtx(ctx, path, v, N, NULL);
        waitpid(reader, NULL, 0);
        struct stat sb;
        T_CHECK(st == SPK_ERR_IO && strstr(spk_last_error(ctx), "Broken pipe") &&
                lstat(path, &sb) == 0 && S_ISFIFO(sb.st_mode), "FIFO whose reader left: %s: %s",
                spk_status_str(st), spk_last_error(ctx));
        signal(SIGPIPE, SIG_DFL);
    }

    /* a full device of our own (as root; never the system's /dev/full), and a link to it */
    snprintf(path, sizeof path, "%s/full", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    if (geteuid() == 0 && mknod(path, S_IFCHR | 0666, makedev(1, 7)) == 0) {
        st = spk_vector_write_mtx(ctx, path, v, N, NULL);
        T_CHECK(st == SPK_ERR_IO && strstr(spk_last_error(ctx), "No space left"),
                "full device: %s: %s", spk_status_str(st), spk_last_error(ctx));
        T_CHECK(is_char_device(path), "a failed write onto a device removed the device node");
        spk_csr A = {1, 1, 1, NULL, NULL, NULL};
        int64_t rp[2] = {0, 1};
        int32_t ci[1] = {0};
        double va[1] = {2.0};
        A.rowptr = rp;
        A.colind = ci;
        A.val = va;
        st = spk_mm_write_csr(ctx, path, &A);
        T_CHECK(st == SPK_ERR_IO && is_char_device(path), "matrix onto the full device: %s",
                spk_last_error(ctx));
        T_CHECK(symlink(path, link) == 0, "symlink");
        st = spk_vector_write_mtx(ctx, link, v, N, NULL);
        struct stat sb;
        T_CHECK(st == SPK_ERR_IO && lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode) &&
                is_char_device(path), "through a link to the full device: %s",
                spk_last_error(ctx));
        unlink(link);
        unlink(path);
    } else {
        printf("test_mmio: not root or no mknod: the device cases are skipped\n");
    }
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    if (system(path) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    free(v);
}

/* Values that a careless writer or reader gets wrong. */
static const double tricky[] = {
    0.1, -0.0, 1.0 / 3.0, 3.141592653589793, 2.2250738585072014e-308, 4.9406564584124654e-324,
    1.7976931348623157e308, 9007199254740993.0, 123456789012345678.0, 1e-300, -2.5e-12,
    0.30000000000000004, 5e-324, 6.02214076e23, 1e22, 1e23,
};
#define NTRICKY (sizeof tricky / sizeof tricky[0])

static void test_round_trip(void)
{
    spk_csr A;
    t_random_csr(ctx, 300, 200, 6, 42, &A);
    for (int64_t k = 0; k < A.nnz && k < (int64_t)NTRICKY; k++)
        A.val[k] = tricky[k];
    uint64_t s = 7;
    for (int64_t k = (int64_t)NTRICKY; k < A.nnz; k++)        /* wide exponent range */
        A.val[k] = t_randu(&s) * pow(10.0, (double)(int)(t_rand(&s) % 600) - 300);
    const char *p = tmp_file("rt");
    spk_status st = spk_mm_write_csr(ctx, p, &A);
    T_CHECK(st == SPK_OK, "write: %s", spk_last_error(ctx));
    spk_mm_header h;
    spk_coo coo;
    st = spk_mm_read_coo(ctx, p, &h, &coo);
    T_CHECK(st == SPK_OK, "read back: %s", spk_last_error(ctx));
    T_CHECK(h.format == SPK_MM_COORDINATE && h.field == SPK_MM_REAL &&
            h.symmetry == SPK_MM_GENERAL, "header of the written file");
    T_CHECK(coo.nrows == A.nrows && coo.ncols == A.ncols && coo.nnz == A.nnz,
            "sizes %lld x %lld nnz %lld", (long long)coo.nrows, (long long)coo.ncols,
            (long long)coo.nnz);
    int64_t bad = 0;
    for (int64_t i = 0, k = 0; st == SPK_OK && i < A.nrows; i++)
        for (int64_t q = A.rowptr[i]; q < A.rowptr[i + 1] && k < coo.nnz; q++, k++)
            bad += coo.row[k] != i || coo.col[k] != A.colind[q] ||
                   memcmp(&coo.val[k], &A.val[q], sizeof(double)) != 0;
    T_CHECK(bad == 0, "%lld entries differ after write + read", (long long)bad);
    coo_release(&coo);

    /* The public writer takes a matrix handle (built by hand here: matrix.c is not needed). */
    spk_matrix M;
    memset(&M, 0, sizeof M);
    M.csr = A;
    M.magic = SPK_MATRIX_MAGIC;
    st = spk_matrix_write_mtx(ctx, p, &M);
    T_CHECK(st == SPK_OK, "spk_matrix_write_mtx: %s", spk_last_error(ctx));
    st = spk_mm_read_coo(ctx, p, &h, &coo);
    T_CHECK(st == SPK_OK && coo.nnz == A.nnz && memcmp(coo.val, A.val, 8 * (size_t)A.nnz) == 0,
            "spk_matrix_write_mtx read back");
    coo_release(&coo);
    M.magic = 0;
    T_CHECK(spk_matrix_write_mtx(ctx, p, &M) == SPK_ERR_ARG, "destroyed matrix refused");
    T_CHECK(spk_matrix_write_mtx(ctx, p, NULL) == SPK_ERR_ARG, "NULL matrix refused");
    A.val[3] = NAN;
    T_CHECK(spk_mm_write_csr(ctx, p, &A) == SPK_ERR_ARG && strstr(spk_last_error(ctx), "NaN"),
            "NaN refused: %s", spk_last_error(ctx));
    remove(p);
    spk_csr_free(&A);
}

static void test_vectors(void)
{
    enum { N = 1000 };
    double v[N];
    uint64_t s = 99;
    for (int i = 0; i < N; i++)
        v[i] = i < (int)NTRICKY ? tricky[i]
                                : t_randu(&s) * pow(2.0, (double)(int)(t_rand(&s) % 200) - 100);
    const char *p = tmp_file("vec");
    spk_status st = spk_vector_write_mtx(ctx, p, v, N, "b for a test\nsecond line");
    T_CHECK(st == SPK_OK, "vector write: %s", spk_last_error(ctx));
    double *w = NULL;
    int64_t n = -1;
    st = spk_vector_read_mtx(ctx, p, &w, &n);
    T_CHECK(st == SPK_OK && n == N && w && memcmp(v, w, sizeof v) == 0,
            "vector round trip: %s, n = %lld", spk_last_error(ctx), (long long)n);
    free(w);

    static const struct { const char *name, *text; int64_t n; double x[4]; } ok[] = {
        {"coordinate n x 1, missing entries 0", BAN "coordinate real general\n4 1 2\n3 1 2.5\n"
         "1 1 -1\n", 4, {-1, 0, 2.5, 0}},
        {"array 1 x n", BAN "array real general\n1 3\n1\n2\n3\n", 3, {1, 2, 3}},
        {"coordinate 1 x n, integer", BAN "coordinate integer general\n1 4 1\n1 4 7\n", 4,
         {0, 0, 0, 7}},
        {"coordinate n x 1, repeats summed", BAN "coordinate real general\n2 1 3\n1 1 1\n"
         "2 1 1\n1 1 2\n", 2, {3, 1}},
    };
    for (size_t c = 0; c < sizeof ok / sizeof ok[0]; c++) {
        write_text(p, ok[c].text);
        w = NULL;
        st = spk_vector_read_mtx(ctx, p, &w, &n);
        T_CHECK(st == SPK_OK && n == ok[c].n && memcmp(w, ok[c].x, (size_t)n * 8) == 0,
                "%s: %s", ok[c].name, spk_last_error(ctx));
        free(w);
    }
    write_text(p, BAN "coordinate real general\n% c\n3 3 1\n1 1 1\n");
    w = (double *)&n;
    st = spk_vector_read_mtx(ctx, p, &w, &n);
    T_CHECK(st == SPK_ERR_PARSE && strstr(spk_last_error(ctx), ":3: expected a vector") &&
            strstr(spk_last_error(ctx), "3 x 3") && !w && n == 0,
            "3 x 3 as a vector: %s", spk_last_error(ctx));
    write_text(p, BAN "array real general\n2 1\n1\n");
    st = spk_vector_read_mtx(ctx, p, &w, &n);
    T_CHECK(st == SPK_ERR_PARSE && strstr(spk_last_error(ctx), ":3: expected 2 values"),
            "short vector: %s", spk_last_error(ctx));
    v[5] = INFINITY;
    T_CHECK(spk_vector_write_mtx(ctx, p, v, N, NULL) == SPK_ERR_ARG, "Inf refused");
    T_CHECK(spk_vector_write_mtx(ctx, p, v, -1, NULL) == SPK_ERR_ARG, "negative n refused");
    remove(p);

    st = spk_vector_read_mtx(ctx, t_input("e05r0100_rhs1.mtx"), &w, &n);
    T_CHECK(st == SPK_OK && n == 236 && w[0] == -7.6051024589276e-01, "e05r0100_rhs1: %s",
            spk_last_error(ctx));
    free(w);
    st = spk_vector_read_mtx(ctx, t_input("sherman1_rhs1.mtx"), &w, &n);
    T_CHECK(st == SPK_OK && n == 1000 && w[0] == 0.22540000E-04, "sherman1_rhs1: %s",
            spk_last_error(ctx));
    free(w);
}

/* ---- the real files in inputs/ ------------------------------------------------------------ */

/* rows, cols and "nnz expanded" from shared/matrices/MANIFEST.md (for the array vectors the
 * stored count, every value being an entry). */
static const struct { const char *file; int64_t nrows, ncols, nnz; } inputs[] = {
    {"1138_bus.mtx", 1138, 1138, 4054},        {"G51.mtx", 1000, 1000, 11818},
    {"Journals.mtx", 124, 124, 12068},         {"LF10.mtx", 18, 18, 82},
    {"Trefethen_2000.mtx", 2000, 2000, 41906}, {"Trefethen_20b.mtx", 19, 19, 147},
    {"adder_dcop_05.mtx", 1813, 1813, 11097},  {"bcsstk03.mtx", 112, 112, 640},
    {"bcsstk09.mtx", 1083, 1083, 18437},       {"cage8.mtx", 1015, 1015, 11003},
    {"e05r0100.mtx", 236, 236, 5856},          {"e05r0100_rhs1.mtx", 236, 1, 236},
    {"epb0.mtx", 1794, 1794, 7764},            {"impcol_a.mtx", 207, 207, 572},
    {"jagmesh7.mtx", 1138, 1138, 7450},        {"nos5.mtx", 468, 468, 5172},
    {"nos6.mtx", 675, 675, 3255},              {"orsirr_1.mtx", 1030, 1030, 6858},
    {"pores_1.mtx", 30, 30, 180},              {"sherman1.mtx", 1000, 1000, 3750},
    {"sherman1_rhs1.mtx", 1000, 1, 1000},      {"well1033.mtx", 1033, 320, 4732},
    {"west0479.mtx", 479, 479, 1910},
};

static void test_inputs(void)
{
    for (size_t c = 0; c < sizeof inputs / sizeof inputs[0]; c++) {
        spk_mm_header h;
        spk_coo coo;
        spk_status st = spk_mm_read_coo(ctx, t_input(inputs[c].file), &h, &coo);
        T_CHECK(st == SPK_OK, "%s: %s", inputs[c].file, spk_last_error(ctx));
        T_CHECK(coo.nrows == inputs[c].nrows && coo.ncols == inputs[c].ncols &&
                coo.nnz == inputs[c].nnz, "%s: %lld x %lld nnz %lld, MANIFEST %lld x %lld "
                "nnz %lld", inputs[c].file, (long long)coo.nrows, (long long)coo.ncols,
                (long long)coo.nnz, (long long)inputs[c].nrows, (long long)inputs[c].ncols,
                (long long)inputs[c].nnz);
        coo_release(&coo);
    }
    spk_mm_header h;
    spk_coo coo;
    spk_status st = spk_mm_read_coo(ctx, t_input("w156.mtx"), &h, &coo);
    T_CHECK(st == SPK_ERR_UNSUPPORTED && strstr(spk_last_error(ctx), "w156.mtx:1:") &&
            strstr(spk_last_error(ctx), "complex"), "w156: %s: %s", spk_status_str(st),
            spk_last_error(ctx));
}

/* ---- the number parser against strtod ---------------------------------------------------- */

/* One random decimal string of the kinds files hold and of the kinds that break parsers:
 * %.17g of random bits, short %g forms, long digit strings, exact halfway points between
 * doubles, and 19-20 digit mantissas with the exponents of the 128-bit path. */
static void random_decimal(uint64_t *s, char *out, size_t len)
{
    double d;
    uint64_t u = t_rand(s), kind = t_rand(s) % 6;
    switch (kind) {
    case 0:
        do {
            uint64_t b = t_rand(s);
            memcpy(&d, &b, sizeof d);
        } while (!isfinite(d));
        snprintf(out, len, "%.17g", d);
        break;
    case 1:
        d = t_randu(s) * pow(10.0, (double)(int)(t_rand(s) % 61) - 30);
        snprintf(out, len, "%.*g", 1 + (int)(u % 17), d);
        break;
    case 2: {
        int nd = 1 + (int)(u % 25), dot = (int)(t_rand(s) % (uint64_t)(nd + 1)), o = 0;
        if ((u >> 20) & 1)
            out[o++] = '-';
        for (int i = 0; i < nd; i++) {
            if (i == dot)
                out[o++] = '.';
            out[o++] = (char)('0' + t_rand(s) % 10);
        }
        if (t_rand(s) & 1)
            o += snprintf(out + o, len - (size_t)o, "e%d", (int)(t_rand(s) % 71) - 35);
        out[o] = '\0';
        break;
    }
    case 3: {
        /* the midpoint of two neighbouring doubles in [2^53, 2^63) (an integer), or one off
         * it, optionally with trailing zeros and the matching negative exponent */
        uint64_t x = ((UINT64_C(1) << 53) + (u >> (12 + t_rand(s) % 11))) << (t_rand(s) % 10);
        int bits = 0, z = (int)(t_rand(s) % 4), o;
        while (bits < 64 && (x >> bits))
            bits++;
        uint64_t ulp = UINT64_C(1) << (bits - 53);
        x = (x & ~(ulp - 1)) + ulp / 2 + (uint64_t)((int)(t_rand(s) % 3) - 1);
        o = snprintf(out, len, "%llu", (unsigned long long)x);
        for (int i = 0; i < z; i++)
            out[o++] = '0';
        if (z)
            o += snprintf(out + o, len - (size_t)o, "e-%d", z);
        out[o] = '\0';
        break;
    }
    case 4:
        snprintf(out, len, "%llu%se%d", (unsigned long long)(u % UINT64_C(10000000000000000000)),
                 t_rand(s) & 1 ? "" : "0", (int)(t_rand(s) % 57) - 28);
        break;
    default:
        d = t_randu(s) * pow(2.0, (double)(int)(t_rand(s) % 200) - 100);
        snprintf(out, len, "%.*e", (int)(u % 20), d);
        break;
    }
}

static void test_numbers_vs_strtod(void)
{
    enum { N = 100000, W = 48 };
    char *strs = malloc((size_t)N * W), *buf = malloc((size_t)N * W + 128);
    uint64_t s = 2026;
    int o = sprintf(buf, "%sarray real general\n%d 1\n", BAN, N);
    for (int i = 0; i < N; i++) {
        random_decimal(&s, strs + (size_t)i * W, W);
        o += sprintf(buf + o, "%s\n", strs + (size_t)i * W);
    }
    spk_mm_header h;
    spk_coo coo;
    spk_status st = spk_mm_parse_coo(ctx, "numbers", buf, (size_t)o, &h, &coo);
    T_CHECK(st == SPK_OK && coo.nnz == N, "parse: %s", spk_last_error(ctx));
    int bad = 0;
    for (int i = 0; st == SPK_OK && i < N; i++) {
        const char *t = strs + (size_t)i * W;
        double ref = strtod(t, NULL);
        if (memcmp(&ref, &coo.val[i], sizeof ref) != 0 && bad++ < 10)
            fprintf(stderr, "  '%s': strtod %.17g, parsed %.17g\n", t, ref, coo.val[i]);
    }
    T_CHECK(bad == 0, "%d of %d values differ from strtod", bad, N);
    coo_release(&coo);
    free(strs);
    free(buf);
}

int main(void)
{
    ctx = t_context(SPK_DEVICE_CPU);
    test_valid();
    test_malformed();
    test_huge_sizes();
    test_alloc_failure();
    test_file_errors();
    test_memory_limits();
    test_both_triangles();
    test_writers_keep_what_exists();
    test_round_trip();
    test_vectors();
    test_inputs();
    test_numbers_vs_strtod();
    spk_context_destroy(ctx);
    return t_done("test_mmio");
}
