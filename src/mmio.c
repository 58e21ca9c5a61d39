/* src/mmio.c -- our own Matrix Market reader and writer (NIST format, Boisvert, Pozo & Remington,
 * "The Matrix Market Exchange Formats: Initial Design", NISTIR 5935, 1996).
 *
 * Reads `matrix coordinate|array`, `real|integer|pattern`, `general|symmetric|skew-symmetric`
 * into 0-based COO with symmetric storage expanded; `complex` and `hermitian` are refused
 * with SPK_ERR_UNSUPPORTED. Every error names the file, the line and what was expected:
 * "A.mtx:7: expected 3 fields (row col value), found 2".
 *
 * Cost: the whole file is mapped (or read) once and scanned once, O(bytes); the output is
 * 16 bytes per stored entry (32 for an off-diagonal entry of symmetric storage). Numbers are
 * converted by hand: indices as integers, reals by Clinger's fast path ("How to read floating
 * point numbers accurately", PLDI 1990) when the decimal mantissa w <= 2^53 and the exponent
 * |k| <= 22, else by exact 128-bit integer arithmetic when w < 2^64 and |k| <= 27, else by
 * strtod on a NUL-terminated copy of the token. Every path is correctly rounded, so the
 * result equals strtod's bit for bit. The size line is checked against the file's length
 * before anything large is allocated. */
#include "spk_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- characters and tokens ---------------------------------------------------------------- */

/* '\r' counts as a blank so that CRLF line ends need no special case. */
static inline int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
static inline int is_delim(char c) { return is_blank(c) || c == '\n'; }
static inline int is_digit(char c) { return (unsigned)(c - '0') < 10u; }

static inline const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && is_blank(*p))
        p++;
    return p;
}

static inline int at_eol(const char *p, const char *end) { return p == end || *p == '\n'; }

static const char *token_end(const char *p, const char *end)
{
    while (p < end && !is_delim(*p))
        p++;
    return p;
}

/* ASCII case-insensitive comparison of the token [s, s+n) with a lower-case word. */
static int token_is(const char *s, size_t n, const char *word)
{
    size_t i;
    for (i = 0; i < n && word[i]; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != word[i])
            return 0;
    }
    return i == n && word[i] == '\0';
}

/* ---- numbers ------------------------------------------------------------------------------ */

enum { NUM_OK = 0, NUM_BAD, NUM_NONFINITE, NUM_LONG, NUM_RANGE, NUM_UNDERFLOW };

/* Longest token handed to strtod; a valid real longer than this is not worth supporting. */
#define MM_MAX_NUMBER 255

/* A non-negative integer token (sizes, indices). NULL when the token is not all digits, or
 * when it would pass 9223372036854775799: stopping there means x*10 + 9 never overflows. */
static inline const char *parse_count(const char *p, const char *end, int64_t *v, int *why)
{
    const char *s = p;
    uint64_t x = 0;
    for (; p < end && is_digit(*p); p++) {
        if (x >= 922337203685477580u) {
            *why = NUM_RANGE;
            return NULL;
        }
        x = x * 10 + (uint64_t)(*p - '0');
    }
    if (p == s || (p < end && !is_delim(*p))) {
        *why = NUM_BAD;
        return NULL;
    }
    *v = (int64_t)x;
    return p;
}

/* 1 if the mantissa of the real token s (the part before any exponent) has a nonzero digit. */
static int mantissa_nonzero(const char *s)
{
    for (; *s && *s != 'e' && *s != 'E'; s++)
        if (*s >= '1' && *s <= '9')
            return 1;
    return 0;
}

/* strtod on a NUL-terminated copy of the token at s: the general case, also the judge of what
 * the fast path declined (too many digits, huge exponents, "nan", "1e", junk). Hexadecimal
 * floats are C, not Matrix Market. strtod follows LC_NUMERIC: a caller that sets a locale with
 * a decimal comma must reset it to "C" around reading. */
static const char *real_slow(const char *s, const char *end, double *out, int *why)
{
    char buf[MM_MAX_NUMBER + 1];
    const char *t = token_end(s, end);
    size_t n = (size_t)(t - s);
    if (n == 0) {
        *why = NUM_BAD;
        return NULL;
    }
    if (n > MM_MAX_NUMBER) {
        *why = NUM_LONG;
        return NULL;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (memchr(buf, 'x', n) || memchr(buf, 'X', n)) {
        *why = NUM_BAD;
        return NULL;
    }
    char *e;
    double v = strtod(buf, &e);
    if (e != buf + n) {
        *why = NUM_BAD;
        return NULL;
    }
    if (!isfinite(v)) {           /* "nan", "inf", and overflow such as 1e999 */
        *why = NUM_NONFINITE;
        return NULL;
    }
    /* 1e-400 is not zero, but no double is closer to it than 0: refused rather than read as
     * a zero that the file never wrote (a subnormal result, 1e-310, is a value and is kept) */
    if (v == 0.0 && mantissa_nonzero(buf)) {
        *why = NUM_UNDERFLOW;
        return NULL;
    }
    *out = v;
    return t;
}

#if defined(__SIZEOF_INT128__) && defined(__GNUC__)
#define MM_HAVE_U128 1
__extension__ typedef unsigned __int128 mm_u128;

/* 5^0 .. 5^27: 5^27 < 2^63, so w * 5^k < 2^127 for any 64-bit w. */
static const uint64_t pow5[28] = {
    1u, 5u, 25u, 125u,
    625u, 3125u, 15625u, 78125u,
    390625u, 1953125u, 9765625u, 48828125u,
    244140625u, 1220703125u, 6103515625u, 30517578125u,
    152587890625u, 762939453125u, 3814697265625u, 19073486328125u,
    95367431640625u, 476837158203125u, 2384185791015625u, 11920928955078125u,
    59604644775390625u, 298023223876953125u, 1490116119384765625u, 7450580596923828125u,
};

static int bitlen128(mm_u128 q)
{
    uint64_t hi = (uint64_t)(q >> 64), lo = (uint64_t)q;
    return hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
}

/* (q + a sticky fraction in (0,1) when sticky) * 2^e2, rounded once to nearest-even.
 * The callers guarantee a normal result, so ldexp of the 53-bit mantissa is exact. */
static double round_u128(mm_u128 q, int sticky, int e2)
{
    int sh = bitlen128(q) - 53;
    if (sh <= 0)                                       /* q fits: exact, sticky is 0 here */
        return ldexp((double)(uint64_t)q, e2);
    uint64_t m = (uint64_t)(q >> sh);
    mm_u128 rem = q & (((mm_u128)1 << sh) - 1), half = (mm_u128)1 << (sh - 1);
    if (rem > half || (rem == half && (sticky || (m & 1)))) {
        m++;
        if (m >> 53) {                                 /* carried into a 54th bit */
            m >>= 1;
            sh++;
        }
    }
    return ldexp((double)m, e2 + sh);
}

/* w * 10^k exactly for |k| <= 27: 10^k = 5^k 2^k. For k < 0, w is shifted to the top of 128
 * bits so that the quotient by 5^-k keeps >= 64 bits, and the remainder becomes the sticky
 * bit: one rounding in all, hence correctly rounded. */
static double real_u128(uint64_t w, int k)
{
    if (k >= 0)
        return round_u128((mm_u128)w * pow5[k], 0, k);
    int sh = 128 - (64 - __builtin_clzll(w));          /* w > 0: its top bit moves to 127 */
    mm_u128 num = (mm_u128)w << sh;
    return round_u128(num / pow5[-k], num % pow5[-k] != 0, k - sh);
}
#endif

/* Exact powers of ten: every 10^k for k <= 22 is a double (5^22 < 2^53). */
static const double pow10_exact[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* w * 10^k correctly rounded, or 0 when none of the exact paths applies. */
static inline int real_from_decimal(uint64_t w, int64_t k, double *v)
{
    if (w == 0) {
        *v = 0.0;
        return 1;
    }
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    /* Clinger: w and 10^|k| are exact doubles, so one IEEE multiply or divide rounds once. */
    if (w <= (UINT64_C(1) << 53) && k >= -22 && k <= 22) {
        double d = (double)w;
        *v = k >= 0 ? d * pow10_exact[k] : d / pow10_exact[-k];
        return 1;
    }
#endif
#ifdef MM_HAVE_U128
    if (k >= -27 && k <= 27) {
        *v = real_u128(w, (int)k);
        return 1;
    }
#endif
    return 0;
}

/* A real token: [+-] digits [. digits] [(e|E) [+-] digits]. The first 19 significant digits
 * go into a 64-bit mantissa w; the value is w * 10^k. Later digits that are all zero only
 * shift k; a later nonzero digit, or anything unusual, goes to strtod. Returns the end of the
 * token, or NULL with *why set. */
static inline const char *parse_real(const char *p, const char *end, double *out, int *why)
{
    const char *s = p;
    int neg = 0, ndig = 0, any = 0, inexact = 0;
    uint64_t w = 0;
    int64_t k = 0;
    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    for (; p < end && *p == '0'; p++)
        any = 1;
    for (; p < end && is_digit(*p); p++, any = 1) {
        if (ndig < 19) {
            w = w * 10 + (uint64_t)(*p - '0');
            ndig++;
        } else {
            k++;
            inexact |= *p != '0';
        }
    }
    if (p < end && *p == '.') {
        p++;
        if (ndig == 0)
            for (; p < end && *p == '0'; p++, any = 1)
                k--;
        for (; p < end && is_digit(*p); p++, any = 1) {
            if (ndig < 19) {
                w = w * 10 + (uint64_t)(*p - '0');
                ndig++;
                k--;
            } else {
                inexact |= *p != '0';
            }
        }
    }
    if (any && p < end && (*p == 'e' || *p == 'E')) {
        const char *e = p + 1;
        int eneg = 0;
        int64_t x = 0;
        if (e < end && (*e == '-' || *e == '+'))
            eneg = *e++ == '-';
        if (e == end || !is_digit(*e))
            return real_slow(s, end, out, why);
        for (; e < end && is_digit(*e); e++)
            if (x < 100000)                     /* beyond, strtod decides: 0 or overflow */
                x = x * 10 + (*e - '0');
        k += eneg ? -x : x;
        p = e;
    }
    double v;
    if (!any || inexact || (p < end && !is_delim(*p)) || !real_from_decimal(w, k, &v))
        return real_slow(s, end, out, why);
    *out = neg ? -v : v;
    return p;
}

/* An integer token for the `integer` field: [+-] digits, converted exactly when it has at most
 * 18 digits, else rounded correctly through parse_real. */
static inline const char *parse_integer(const char *p, const char *end, double *out, int *why)
{
    const char *s = p;
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    const char *d = p;
    int64_t x = 0;
    for (; p < end && is_digit(*p); p++)
        if (p - d < 18)
            x = x * 10 + (*p - '0');
    if (p == d || (p < end && !is_delim(*p))) {
        *why = NUM_BAD;
        return NULL;
    }
    if (p - d > 18)
        return parse_real(s, end, out, why);
    *out = (double)(neg ? -x : x);
    return p;
}

/* ---- the input cursor and its messages ---------------------------------------------------- */

typedef struct mm_in {
    spk_context *ctx;
    const char  *name;           /* labels every message: the path, or the caller's name     */
    const char  *buf, *p, *end;
    int64_t      line;           /* 1-based line of p                                        */
    int64_t      size_line;      /* line of the size line, for later messages                */
} mm_in;

/* The line to report for position p: at the end of a file that ends with '\n', the last
 * line rather than the empty one after it. */
static int64_t mm_line(const mm_in *in, const char *p)
{
    if (p >= in->end && in->end > in->buf && in->end[-1] == '\n' && in->line > 1)
        return in->line - 1;
    return in->line;
}

/* "name:line: <detail>" */
static spk_status mm_fail(const mm_in *in, const char *p, spk_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static spk_status mm_fail(const mm_in *in, const char *p, spk_status st, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return spk_fail(in->ctx, st, "%s:%lld: %s", in->name, (long long)mm_line(in, p), detail);
}

/* "name:line: expected <what>, found '<token at p>'" (or "found end of line / end of file").
 * The token is cut at 40 characters and unprintable bytes are shown as '?'. */
static spk_status mm_expected(const mm_in *in, const char *p, spk_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static spk_status mm_expected(const mm_in *in, const char *p, spk_status st, const char *fmt, ...)
{
    char what[384], found[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (p >= in->end) {
        snprintf(found, sizeof found, "end of file");
    } else if (*p == '\n') {
        snprintf(found, sizeof found, "end of line");
    } else {
        size_t n = (size_t)(token_end(p, in->end) - p), i, cut = n > 40 ? 40 : n;
        found[0] = '\'';
        for (i = 0; i < cut; i++)
            found[1 + i] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
        snprintf(found + 1 + cut, sizeof found - 1 - cut, "%s'", n > cut ? "..." : "");
    }
    return spk_fail(in->ctx, st, "%s:%lld: expected %s, found %s", in->name,
                    (long long)mm_line(in, p), what, found);
}

/* Move past the '\n' that ends the current line (or to the end of the file). */
static inline void mm_end_line(mm_in *in, const char *p)
{
    if (p < in->end) {
        p++;
        in->line++;
    }
    in->p = p;
}

/* Skip blank lines and comment lines ('%' first, after optional blanks); leave in->p on the
 * first character of the next line with content. 0 at the end of the file. */
static inline int mm_next_content(mm_in *in)
{
    const char *p = in->p, *end = in->end;
    for (;; p++, in->line++) {
        p = skip_blanks(p, end);
        if (p < end && *p == '%') {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            p = nl ? nl : end;
        }
        if (p == end || *p != '\n') {
            in->p = p;
            return p < end;
        }
    }
}

/* ---- banner and size line ----------------------------------------------------------------- */

#define MM_BANNER_WANT "banner '%%MatrixMarket matrix coordinate|array real|integer|pattern " \
                       "general|symmetric|skew-symmetric'"

/* The next word of the banner line into [*w, *w + *n); 0 at the end of the line. */
static int mm_word(mm_in *in, const char **w, size_t *n)
{
    const char *p = skip_blanks(in->p, in->end);
    *w = p;
    in->p = token_end(p, in->end);
    *n = (size_t)(in->p - p);
    return *n > 0;
}

static spk_status mm_read_banner(mm_in *in, spk_mm_header *h)
{
    const char *w;
    size_t n;
    if (in->end - in->p >= 3 && memcmp(in->p, "\xEF\xBB\xBF", 3) == 0)
        in->p += 3;                                    /* a UTF-8 byte-order mark */
    if (!mm_word(in, &w, &n) || !token_is(w, n, "%%matrixmarket"))
        return mm_expected(in, w, SPK_ERR_PARSE, "%s", MM_BANNER_WANT);
    if (!mm_word(in, &w, &n) || !token_is(w, n, "matrix"))
        return mm_expected(in, w, SPK_ERR_PARSE, "object 'matrix' in the banner");
    if (mm_word(in, &w, &n) && token_is(w, n, "coordinate"))
        h->format = SPK_MM_COORDINATE;
    else if (n && token_is(w, n, "array"))
        h->format = SPK_MM_ARRAY;
    else
        return mm_expected(in, w, SPK_ERR_PARSE, "format 'coordinate' or 'array' in the banner");
    if (mm_word(in, &w, &n) && token_is(w, n, "real"))
        h->field = SPK_MM_REAL;
    else if (n && token_is(w, n, "integer"))
        h->field = SPK_MM_INTEGER;
    else if (n && token_is(w, n, "pattern"))
        h->field = SPK_MM_PATTERN;
    else if (n && token_is(w, n, "complex"))
        return mm_fail(in, w, SPK_ERR_UNSUPPORTED,
                       "expected field 'real', 'integer' or 'pattern', found 'complex' "
                       "(spk solves real systems; complex matrices are not supported)");
    else
        return mm_expected(in, w, SPK_ERR_PARSE,
                           "field 'real', 'integer' or 'pattern' in the banner");
    if (mm_word(in, &w, &n) && token_is(w, n, "general"))
        h->symmetry = SPK_MM_GENERAL;
    else if (n && token_is(w, n, "symmetric"))
        h->symmetry = SPK_MM_SYMMETRIC;
    else if (n && token_is(w, n, "skew-symmetric"))
        h->symmetry = SPK_MM_SKEW;
    else if (n && token_is(w, n, "hermitian"))
        return mm_fail(in, w, SPK_ERR_UNSUPPORTED,
                       "expected symmetry 'general', 'symmetric' or 'skew-symmetric', found "
                       "'hermitian' (a complex storage; complex matrices are not supported)");
    else
        return mm_expected(in, w, SPK_ERR_PARSE,
                           "symmetry 'general', 'symmetric' or 'skew-symmetric' in the banner");
    const char *p = skip_blanks(in->p, in->end);
    if (!at_eol(p, in->end))
        return mm_expected(in, p, SPK_ERR_PARSE, "end of the banner line");
    /* The NIST spec (and its mmio.c, mm_is_valid) allows neither of these. */
    if (h->format == SPK_MM_ARRAY && h->field == SPK_MM_PATTERN)
        return mm_fail(in, w, SPK_ERR_PARSE,
                       "expected field 'real' or 'integer' with format 'array' "
                       "(pattern is for coordinate files only), found 'pattern'");
    if (h->field == SPK_MM_PATTERN && h->symmetry == SPK_MM_SKEW)
        return mm_fail(in, w, SPK_ERR_PARSE,
                       "expected symmetry 'general' or 'symmetric' with field 'pattern' "
                       "(a pattern has no sign to negate), found 'skew-symmetric'");
    mm_end_line(in, p);
    return SPK_OK;
}

/* Stored entries that the header announces, with the file length as a sanity bound: each
 * entry takes at least 2 bytes ("0\n"), so more than len/2 + 1 cannot be in the file. The
 * products cannot overflow since rows, cols <= INT32_MAX. */
static spk_status mm_check_size(mm_in *in, const char *line_start, spk_mm_header *h)
{
    int64_t n = h->nrows;
    size_t len = (size_t)(in->end - in->buf);
    if (h->nrows > INT32_MAX || h->ncols > INT32_MAX)
        return mm_fail(in, line_start, SPK_ERR_UNSUPPORTED,
                       "expected at most 2147483647 rows and columns (32-bit indices), "
                       "found %lld x %lld", (long long)h->nrows, (long long)h->ncols);
    if (h->symmetry != SPK_MM_GENERAL && h->nrows != h->ncols)
        return mm_fail(in, line_start, SPK_ERR_PARSE,
                       "expected a square matrix for %s storage, found %lld x %lld",
                       h->symmetry == SPK_MM_SKEW ? "skew-symmetric" : "symmetric",
                       (long long)h->nrows, (long long)h->ncols);
    if (h->format == SPK_MM_ARRAY)
        h->nentries = h->symmetry == SPK_MM_GENERAL ? h->nrows * h->ncols
                    : h->symmetry == SPK_MM_SYMMETRIC ? n * (n + 1) / 2
                    : n * (n - 1) / 2;                 /* skew: the zero diagonal is omitted */
    if ((uint64_t)h->nentries > len / 2 + 1)
        return mm_fail(in, line_start, SPK_ERR_PARSE,
                       "expected at most %llu entries in a file of %zu bytes, "
                       "found a size line announcing %lld",
                       (unsigned long long)(len / 2 + 1), len, (long long)h->nentries);
    return SPK_OK;
}

static spk_status mm_read_size(mm_in *in, spk_mm_header *h)
{
    static const char *const names[3] = {"number of rows", "number of columns",
                                         "number of entries"};
    const char *want = h->format == SPK_MM_ARRAY ? "rows cols" : "rows cols entries";
    int nf = h->format == SPK_MM_ARRAY ? 2 : 3, why;
    int64_t v[3] = {0, 0, 0};
    if (!mm_next_content(in))
        return mm_expected(in, in->p, SPK_ERR_PARSE, "size line (%s)", want);
    const char *start = in->p, *p = start;
    in->size_line = in->line;
    for (int f = 0; f < nf; f++) {
        p = skip_blanks(p, in->end);
        const char *q = parse_count(p, in->end, &v[f], &why);
        if (!q)
            return mm_expected(in, p, SPK_ERR_PARSE, "%s (%s) on the size line (%s)",
                               names[f], why == NUM_RANGE ? "an integer below 2^63"
                                                          : "a non-negative integer", want);
        p = q;
    }
    p = skip_blanks(p, in->end);
    if (!at_eol(p, in->end))
        return mm_expected(in, p, SPK_ERR_PARSE, "end of the size line (%s)", want);
    h->nrows = v[0];
    h->ncols = v[1];
    h->nentries = v[2];
    spk_status st = mm_check_size(in, start, h);
    mm_end_line(in, p);
    return st;
}

/* ---- entries ------------------------------------------------------------------------------ */

static void mm_coo_free(spk_coo *A)
{
    spk_free(A->row);
    spk_free(A->col);
    spk_free(A->val);
    memset(A, 0, sizeof *A);
}

/* Room for every entry after expansion: exact for array files; for coordinate symmetric
 * storage 2 * nentries, an upper bound (diagonal entries are not mirrored). */
static int64_t mm_capacity(const spk_mm_header *h)
{
    if (h->symmetry == SPK_MM_SKEW || (h->symmetry == SPK_MM_SYMMETRIC &&
                                       h->format == SPK_MM_COORDINATE))
        return 2 * h->nentries;
    if (h->symmetry == SPK_MM_SYMMETRIC)                /* n(n+1)/2 stored, n^2 expanded */
        return 2 * h->nentries - h->nrows;
    return h->nentries;
}

/* What the caller does with the COO, so that the size line can be checked against it before
 * the entries are read and anything large is allocated. */
typedef struct mm_use {
    int     assemble;        /* spk_csr_from_coo follows: its peak memory is checked too     */
    int     vector;          /* an n x 1 or 1 x n vector is wanted, made dense (8 bytes each) */
    int64_t len;             /* with vector: the length it must have, or -1 for any           */
} mm_use;

/* The size line against the caller's use and the memory the process may hold. */
static spk_status mm_check_use(mm_in *in, const spk_mm_header *h, const mm_use *use)
{
    const int64_t cap = mm_capacity(h), sl = in->size_line;
    double need = 16.0 * (double)cap;                    /* the COO: row, col, val */
    if (use && use->vector) {
        if (h->ncols != 1 && h->nrows != 1)
            return spk_fail(in->ctx, SPK_ERR_PARSE, "%s:%lld: expected a vector (n x 1 or 1 x n), "
                            "found a %lld x %lld matrix", in->name, (long long)sl,
                            (long long)h->nrows, (long long)h->ncols);
        const int64_t len = h->ncols == 1 ? h->nrows : h->ncols;
        if (use->len >= 0 && len != use->len)
            return spk_fail(in->ctx, SPK_ERR_ARG, "%s:%lld: expected a vector of %lld entries, "
                            "found a size line announcing %lld x %lld", in->name, (long long)sl,
                            (long long)use->len, (long long)h->nrows, (long long)h->ncols);
        need += 8.0 * (double)len;
    }
    if (use && use->assemble)
        need = spk_csr_from_coo_bytes(h->nrows, h->ncols, cap);   /* the COO included */
    return spk_check_memory(in->ctx, need, "%s:%lld: a %lld x %lld %s of %lld stored entries",
                            in->name, (long long)sl, (long long)h->nrows, (long long)h->ncols,
                            use && use->vector ? "vector" : "matrix", (long long)h->nentries);
}

static spk_status mm_alloc(mm_in *in, const spk_mm_header *h, spk_coo *out)
{
    const int64_t cap = mm_capacity(h);
    out->nrows = h->nrows;
    out->ncols = h->ncols;
    out->row = spk_malloc(in->ctx, (size_t)cap, sizeof *out->row);
    out->col = spk_malloc(in->ctx, (size_t)cap, sizeof *out->col);
    out->val = spk_malloc(in->ctx, (size_t)cap, sizeof *out->val);
    if (!out->row || !out->col || !out->val) {
        mm_coo_free(out);
        return spk_fail(in->ctx, SPK_ERR_NOMEM, "%s: out of memory for %lld entries (%.3g GB)",
                        in->name, (long long)cap, 16.0 * (double)cap / 1e9);
    }
    return SPK_OK;
}

/* Append a_ij = v and, for symmetric storage, its mirror a_ji = v (skew: -v). */
static inline void mm_put(spk_coo *out, spk_mm_symmetry sym, int32_t i, int32_t j, double v)
{
    int64_t k = out->nnz;
    out->row[k] = i;
    out->col[k] = j;
    out->val[k] = v;
    if (sym != SPK_MM_GENERAL && i != j) {
        out->row[k + 1] = j;
        out->col[k + 1] = i;
        out->val[k + 1] = sym == SPK_MM_SKEW ? -v : v;
        k++;
    }
    out->nnz = k + 1;
}

/* The value field of an entry (real or integer) at p; NULL after recording the error. */
static inline const char *mm_value(mm_in *in, const char *p, spk_mm_field field, double *v)
{
    int why = NUM_OK;
    const char *q = field == SPK_MM_INTEGER ? parse_integer(p, in->end, v, &why)
                                            : parse_real(p, in->end, v, &why);
    if (q)
        return q;
    if (why == NUM_NONFINITE)
        mm_expected(in, p, SPK_ERR_PARSE, "a finite value (Matrix Market has no NaN or Inf)");
    else if (why == NUM_UNDERFLOW)
        mm_expected(in, p, SPK_ERR_PARSE, "a value a double can hold (this nonzero value "
                    "is closer to 0 than any double)");
    else if (why == NUM_LONG)
        mm_expected(in, p, SPK_ERR_PARSE, "a real value of at most %d characters",
                    MM_MAX_NUMBER);
    else
        mm_expected(in, p, SPK_ERR_PARSE, field == SPK_MM_INTEGER ? "an integer value"
                                                                  : "a real value");
    return NULL;
}

/* A 1-based index in 1..n at p, stored 0-based; NULL after recording the error. */
static inline const char *mm_index(mm_in *in, const char *p, int64_t n, const char *what,
                                   int32_t *i)
{
    int64_t v;
    int why;
    const char *q = parse_count(p, in->end, &v, &why);
    if (!q || v < 1 || v > n) {
        mm_expected(in, p, SPK_ERR_PARSE, "%s index in 1..%lld", what, (long long)n);
        return NULL;
    }
    *i = (int32_t)(v - 1);
    return q;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The stored entry at COO index k of symmetric storage as a key of its lower-triangle
 * position: (max(i,j), min(i,j)). */
static uint64_t mm_lower_key(const spk_coo *c, int64_t k)
{
    const uint32_t i = (uint32_t)c->row[k], j = (uint32_t)c->col[k];
    return i > j ? (uint64_t)i << 32 | j : (uint64_t)j << 32 | i;
}

/* Off-diagonal positions that a symmetric or skew-symmetric file lists in both triangles,
 * (i,j) and (j,i): legal (each is mirrored and spk_csr_from_coo sums the two like any other
 * duplicates), but most often a full matrix under a symmetric banner, so the count is kept
 * for the caller (h->both_triangles). The COO holds each stored off-diagonal entry followed by
 * its mirror. The keys of the smaller triangle are sorted and the other triangle's entries
 * looked up: O(s log s + t log s) for s and t entries, run only when both triangles are used. */
static spk_status mm_count_both(mm_in *in, const spk_coo *c, int64_t nlower, int64_t nupper,
                                int64_t *both)
{
    const int small_lower = nlower <= nupper;
    const int64_t ns = small_lower ? nlower : nupper;
    uint64_t *key = spk_malloc(in->ctx, (size_t)ns, sizeof *key);
    unsigned char *seen = spk_calloc(in->ctx, (size_t)ns, 1);
    if (!key || !seen) {
        spk_free(key);
        spk_free(seen);
        return spk_fail(in->ctx, SPK_ERR_NOMEM, "%s: out of memory comparing the %lld entries "
                        "of the two triangles", in->name, (long long)ns);
    }
    int64_t m = 0, u = 0;
    for (int64_t k = 0; k < c->nnz; k += c->row[k] == c->col[k] ? 1 : 2)
        if (c->row[k] != c->col[k] && (c->row[k] > c->col[k]) == small_lower)
            key[m++] = mm_lower_key(c, k);
    qsort(key, (size_t)m, sizeof *key, cmp_u64);
    for (int64_t k = 0; k < m; k++)                      /* one key per position */
        if (k == 0 || key[k] != key[u - 1])
            key[u++] = key[k];
    *both = 0;
    for (int64_t k = 0; k < c->nnz; k += c->row[k] == c->col[k] ? 1 : 2) {
        if (c->row[k] == c->col[k] || (c->row[k] > c->col[k]) == small_lower)
            continue;
        const uint64_t want = mm_lower_key(c, k);
        const uint64_t *hit = bsearch(&want, key, (size_t)u, sizeof *key, cmp_u64);
        if (hit && !seen[hit - key]) {
            seen[hit - key] = 1;
            (*both)++;
        }
    }
    spk_free(key);
    spk_free(seen);
    return SPK_OK;
}

/* One line "row col [value]". Symmetric storage should hold the lower triangle only, but an
 * upper-triangle entry is accepted and mirrored like any other: the meaning (a_ij = a_ji = v)
 * is unambiguous, SciPy and MATLAB's mmread accept it, and refusing would reject files that
 * other tools read. If a file holds both (i,j) and (j,i), the sums are left to
 * spk_csr_from_coo like any other duplicate, and the positions are counted (mm_count_both). */
static spk_status mm_read_coordinate(mm_in *in, spk_mm_header *h, spk_coo *out)
{
    int64_t nlower = 0, nupper = 0;
    const char *fields = h->field == SPK_MM_PATTERN ? "2 fields (row col)"
                                                    : "3 fields (row col value)";
    const char *end = in->end;
    for (int64_t k = 0; k < h->nentries; k++) {
        int32_t i, j;
        double v = 1.0;                                /* pattern entries */
        if (!mm_next_content(in))
            return mm_fail(in, in->p, SPK_ERR_PARSE, "expected %lld entries as announced on "
                           "line %lld, found %lld (end of file)", (long long)h->nentries,
                           (long long)in->size_line, (long long)k);
        const char *p = mm_index(in, in->p, h->nrows, "row", &i);
        if (!p)
            return SPK_ERR_PARSE;
        if (at_eol(p = skip_blanks(p, end), end))
            return mm_fail(in, p, SPK_ERR_PARSE, "expected %s, found 1", fields);
        if (!(p = mm_index(in, p, h->ncols, "column", &j)))
            return SPK_ERR_PARSE;
        p = skip_blanks(p, end);
        if (h->field != SPK_MM_PATTERN) {
            if (at_eol(p, end))
                return mm_fail(in, p, SPK_ERR_PARSE, "expected %s, found 2", fields);
            if (!(p = mm_value(in, p, h->field, &v)))
                return SPK_ERR_PARSE;
            p = skip_blanks(p, end);
        }
        if (!at_eol(p, end))
            return mm_expected(in, p, SPK_ERR_PARSE, "end of line after %s", fields);
        if (h->symmetry == SPK_MM_SKEW && i == j)
            return mm_fail(in, in->p, SPK_ERR_PARSE, "expected an off-diagonal entry "
                           "(skew-symmetric storage has a zero diagonal), found (%lld,%lld)",
                           (long long)i + 1, (long long)j + 1);
        nlower += i > j;
        nupper += i < j;
        mm_put(out, h->symmetry, i, j, v);
        mm_end_line(in, p);
    }
    if (h->symmetry != SPK_MM_GENERAL && nlower > 0 && nupper > 0)
        return mm_count_both(in, out, nlower, nupper, &h->both_triangles);
    return SPK_OK;
}

/* One value per line, column by column; symmetric storage holds the lower triangle of each
 * column (i >= j), skew-symmetric the strict lower triangle (i > j). */
static spk_status mm_read_array(mm_in *in, const spk_mm_header *h, spk_coo *out)
{
    int64_t k = 0;
    if (h->nentries == 0)      /* "0 N": without this, N empty columns are walked (N ~ 2^31) */
        return SPK_OK;
    for (int64_t j = 0; j < h->ncols; j++) {
        int64_t i0 = h->symmetry == SPK_MM_GENERAL ? 0 : h->symmetry == SPK_MM_SYMMETRIC ? j
                                                                                         : j + 1;
        for (int64_t i = i0; i < h->nrows; i++, k++) {
            double v;
            if (!mm_next_content(in))
                return mm_fail(in, in->p, SPK_ERR_PARSE, "expected %lld values (%lld x %lld "
                               "%s array, column by column), found %lld (end of file)",
                               (long long)h->nentries, (long long)h->nrows,
                               (long long)h->ncols,
                               h->symmetry == SPK_MM_GENERAL ? "general"
                               : h->symmetry == SPK_MM_SYMMETRIC ? "symmetric" : "skew-symmetric",
                               (long long)k);
            const char *p = mm_value(in, in->p, h->field, &v);
            if (!p)
                return SPK_ERR_PARSE;
            p = skip_blanks(p, in->end);
            if (!at_eol(p, in->end))
                return mm_expected(in, p, SPK_ERR_PARSE, "end of line after 1 field (value)");
            mm_put(out, h->symmetry, (int32_t)i, (int32_t)j, v);
            mm_end_line(in, p);
        }
    }
    return SPK_OK;
}

static spk_status mm_parse(spk_context *ctx, const char *name, const char *buf, size_t len,
                           const mm_use *use, spk_mm_header *hdr, spk_coo *out)
{
    mm_in in = {ctx, name ? name : "(buffer)", buf, buf, buf + len, 1, 0};
    spk_mm_header h;
    memset(&h, 0, sizeof h);
    memset(out, 0, sizeof *out);
    spk_status st = mm_read_banner(&in, &h);
    if (!st)
        st = mm_read_size(&in, &h);
    if (!st)
        st = mm_check_use(&in, &h, use);
    if (!st)
        st = mm_alloc(&in, &h, out);
    if (!st)
        st = h.format == SPK_MM_COORDINATE ? mm_read_coordinate(&in, &h, out)
                                           : mm_read_array(&in, &h, out);
    if (!st && mm_next_content(&in))
        st = mm_expected(&in, in.p, SPK_ERR_PARSE, "end of file after the %lld %s announced "
                         "on line %lld", (long long)h.nentries,
                         h.format == SPK_MM_ARRAY ? "values" : "entries",
                         (long long)in.size_line);
    h.size_line = in.size_line;
    if (st) {
        mm_coo_free(out);
        memset(&h, 0, sizeof h);
    }
    if (hdr)
        *hdr = h;
    return st;
}

spk_status spk_mm_parse_coo(spk_context *ctx, const char *name, const char *buf, size_t len,
                            spk_mm_header *hdr, spk_coo *out)
{
    if (!out)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_mm_parse_coo: out is NULL");
    memset(out, 0, sizeof *out);
    if (!buf && len)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_mm_parse_coo: buf is NULL with len %zu", len);
    return mm_parse(ctx, name, buf ? buf : "", len, NULL, hdr, out);
}

/* ---- files -------------------------------------------------------------------------------- */

typedef struct mm_file {
    const char *data;
    size_t      len;
    void       *map;             /* the mmap'ed file, or NULL                                  */
    char       *heap;            /* a read() copy when mapping is not possible, or NULL        */
} mm_file;

static spk_status mm_errno(spk_context *ctx, const char *path, const char *what, int err)
{
    char eb[256];
    if (strerror_r(err, eb, sizeof eb) != 0)          /* the XSI strerror_r: thread-safe */
        snprintf(eb, sizeof eb, "errno %d", err);
    return spk_fail(ctx, SPK_ERR_IO, "%s: cannot %s: %s", path, what, eb);
}

/* Whether the bytes b[0 .. len) can begin a Matrix Market file: 1 yes, 0 no, -1 not known
 * yet. The file must start (after an optional UTF-8 byte-order mark and blanks) with the
 * banner word %%MatrixMarket, in any case, followed by a blank: the parser's own rule, so
 * that a stream refused here gets the parser's message (it is parsed as far as it was read). */
static int mm_may_start(const char *b, size_t len)
{
    static const char word[] = "%%matrixmarket";
    const size_t wl = sizeof word - 1;
    size_t i = 0;
    if (len < 3 && memcmp(b, "\xEF\xBB\xBF", len) == 0)
        return -1;
    if (len >= 3 && memcmp(b, "\xEF\xBB\xBF", 3) == 0)
        i = 3;
    while (i < len && is_blank(b[i]))
        i++;
    for (size_t k = 0; k < wl; k++, i++) {
        if (i == len)
            return -1;
        char c = b[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != word[k])
            return 0;
    }
    return i == len ? -1 : is_delim(b[i]);
}

/* read() the whole of fd into a heap buffer that doubles as needed (pipes, /proc, devices,
 * files that cannot be mapped). Two things stop a stream that could otherwise be read
 * forever (solve -A /dev/zero): its first bytes are not a banner (the rest is not read: the
 * parse of what was read fails at line 1), or growing the buffer (the old and the new one,
 * three times the bytes read) would pass what the process may hold (SPK_ERR_NOMEM). */
static spk_status mm_read_fd(spk_context *ctx, const char *path, int fd, size_t hint,
                             mm_file *f)
{
    size_t cap = hint + 1 > 65536 ? hint + 1 : 65536, len = 0;
    int start = -1;
    char *b = spk_malloc(ctx, cap, 1);
    for (;;) {
        if (!b)
            return spk_fail(ctx, SPK_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, cap);
        if (start == -1 && len > 0)
            start = mm_may_start(b, len);
        if (start == 0)
            break;
        if (len == cap) {
            spk_status st = spk_check_memory(ctx, 3.0 * (double)cap, "%s: reading on past %zu "
                                             "bytes", path, cap);
            if (st) {
                spk_free(b);
                return st;
            }
            char *nb = cap <= SIZE_MAX / 2 ? spk_malloc(ctx, 2 * cap, 1) : NULL;
            if (nb)
                memcpy(nb, b, len);
            spk_free(b);
            b = nb;
            cap *= 2;
            continue;
        }
        ssize_t r = read(fd, b + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = errno;
            spk_free(b);
            return mm_errno(ctx, path, "read", err);
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    f->heap = b;
    f->data = b;
    f->len = len;
    return SPK_OK;
}

/* The file's bytes, mapped read-only when it is a regular file (no copy, no large
 * allocation), else read. */
static spk_status mm_load(spk_context *ctx, const char *path, mm_file *f)
{
    struct stat sb;
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return mm_errno(ctx, path, "open for reading", errno);
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        close(fd);
        return mm_errno(ctx, path, "stat", err);
    }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        return mm_errno(ctx, path, "read", EISDIR);
    }
    if (S_ISREG(sb.st_mode) && sb.st_size > 0 && (uintmax_t)sb.st_size <= SIZE_MAX) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            posix_madvise(m, (size_t)sb.st_size, POSIX_MADV_SEQUENTIAL);
            close(fd);
            f->map = m;
            f->data = m;
            f->len = (size_t)sb.st_size;
            return SPK_OK;
        }
    }
    spk_status st = mm_read_fd(ctx, path, fd, S_ISREG(sb.st_mode) ? (size_t)sb.st_size : 0, f);
    close(fd);
    return st;
}

static void mm_unload(mm_file *f)
{
    if (f->map)
        munmap(f->map, f->len);
    spk_free(f->heap);
    memset(f, 0, sizeof *f);
}

static spk_status mm_read_path(spk_context *ctx, const char *path, const mm_use *use,
                               spk_mm_header *hdr, spk_coo *out)
{
    mm_file f;
    spk_status st = mm_load(ctx, path, &f);
    if (st)
        return st;
    st = mm_parse(ctx, path, f.data ? f.data : "", f.len, use, hdr, out);
    mm_unload(&f);
    return st;
}

spk_status spk_mm_read_coo(spk_context *ctx, const char *path, spk_mm_header *hdr, spk_coo *out)
{
    if (!out)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_mm_read_coo: out is NULL");
    memset(out, 0, sizeof *out);
    if (hdr)
        memset(hdr, 0, sizeof *hdr);
    if (!path)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_mm_read_coo: path is NULL");
    return mm_read_path(ctx, path, NULL, hdr, out);
}

spk_status spk_mm_read_for_csr(spk_context *ctx, const char *path, spk_mm_header *hdr,
                               spk_coo *out)
{
    const mm_use use = {1, 0, -1};
    memset(out, 0, sizeof *out);
    memset(hdr, 0, sizeof *hdr);
    return mm_read_path(ctx, path, &use, hdr, out);
}

/* A vector of `want` entries (-1: any length) into a new array. */
static spk_status vector_read(spk_context *ctx, const char *path, int64_t want, double **v,
                              int64_t *n)
{
    const mm_use use = {0, 1, want};
    spk_mm_header h;
    spk_coo coo;
    spk_status st = mm_read_path(ctx, path, &use, &h, &coo);
    if (st)
        return st;
    int column = h.ncols == 1;
    int64_t len = column ? h.nrows : h.ncols;
    double *x = spk_calloc(ctx, (size_t)len, sizeof *x);
    if (!x) {
        mm_coo_free(&coo);
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s: out of memory for a vector of %lld", path,
                        (long long)len);
    }
    /* Array values are copied (so that -0 survives a round trip); missing coordinate entries
     * are zero and repeated ones are summed, as for matrices. */
    for (int64_t k = 0; k < coo.nnz; k++) {
        int64_t i = column ? coo.row[k] : coo.col[k];
        x[i] = h.format == SPK_MM_ARRAY ? coo.val[k] : x[i] + coo.val[k];
    }
    mm_coo_free(&coo);
    for (int64_t i = 0; i < len; i++)
        if (!isfinite(x[i])) {
            spk_status bad = spk_fail(ctx, SPK_ERR_PARSE, "%s: v(%lld) = %g: its repeated "
                                      "entries sum past the largest double", path,
                                      (long long)i + 1, x[i]);
            spk_free(x);
            return bad;
        }
    *v = x;
    *n = len;
    return SPK_OK;
}

spk_status spk_vector_read_mtx(spk_context *ctx, const char *path, double **v, int64_t *n)
{
    if (!path || !v || !n)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_vector_read_mtx: NULL argument");
    *v = NULL;
    *n = 0;
    return vector_read(ctx, path, -1, v, n);
}

spk_status spk_vector_read_mtx_len(spk_context *ctx, const char *path, int64_t n, double **v)
{
    if (!path || !v || n < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_vector_read_mtx_len: %s",
                        n < 0 ? "negative length" : "NULL argument");
    *v = NULL;
    int64_t len = 0;
    return vector_read(ctx, path, n, v, &len);
}

/* ---- writing ------------------------------------------------------------------------------ */

/* An output opened for writing in place. Only a file that this call created may be removed
 * when the write fails: whatever existed under the name -- a regular file, a device such as
 * /dev/full, a FIFO, the target of a symbolic link -- is written through and never removed
 * (removing a device node as root would destroy it for every process). */
typedef struct mm_out {
    FILE  *f;
    int    created;           /* this call made the file: it may remove it on failure          */
    dev_t  dev;               /* the file's identity, so that only that file is removed        */
    ino_t  ino;
} mm_out;

static spk_status mm_open_write(spk_context *ctx, const char *path, mm_out *o)
{
    struct stat sb;
    memset(o, 0, sizeof *o);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
        o->created = 1;
    } else if (errno == EEXIST) {
        /* as cp without -f: a regular file that nobody may write is refused, even by root
         * (who could write it anyway) */
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && !(sb.st_mode & 0222))
            return spk_fail(ctx, SPK_ERR_IO, "%s: not written: the file is read-only (mode "
                            "%04o)", path, (unsigned)(sb.st_mode & 07777));
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);       /* O_TRUNC: regular files only */
        if (fd < 0 && errno == ENOENT)       /* a dangling link: its target made through it */
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    }
    if (fd < 0)
        return mm_errno(ctx, path, "open for writing", errno);
    if (fstat(fd, &sb) == 0) {
        o->dev = sb.st_dev;
        o->ino = sb.st_ino;
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        int err = errno;
        close(fd);
        if (o->created)
            unlink(path);
        return mm_errno(ctx, path, "open for writing", err);
    }
    setvbuf(o->f, NULL, _IOFBF, 1 << 16);
    return SPK_OK;
}

/* Close the output and report the first failure; on failure remove the file only if this call
 * created it and the name still refers to it. fprintf uses LC_NUMERIC like strtod: "C" (the
 * default) writes the '.' that Matrix Market requires. */
static spk_status mm_close(spk_context *ctx, const char *path, mm_out *o, int failed, int err)
{
    if (fclose(o->f) != 0 && !failed) {
        failed = 1;
        err = errno;
    }
    o->f = NULL;
    if (!failed)
        return SPK_OK;
    struct stat sb;
    if (o->created && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_dev == o->dev &&
        sb.st_ino == o->ino)
        unlink(path);
    return mm_errno(ctx, path, "write", err ? err : EIO);
}

spk_status spk_mm_write_csr(spk_context *ctx, const char *path, const spk_csr *A)
{
    if (!path || !A)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_mm_write_csr: NULL argument");
    if (A->nrows < 0 || A->ncols < 0 || A->nnz < 0 || !A->rowptr ||
        (A->nnz && (!A->colind || !A->val)))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_mm_write_csr(%s): malformed CSR (%lld x %lld, "
                        "%lld entries)", path, (long long)A->nrows, (long long)A->ncols,
                        (long long)A->nnz);
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (!isfinite(A->val[k]))
                return spk_fail(ctx, SPK_ERR_ARG, "%s: A(%lld,%lld) = %g cannot be written "
                                "(Matrix Market has no NaN or Inf)", path, (long long)i + 1,
                                (long long)A->colind[k] + 1, A->val[k]);
    mm_out o;
    spk_status st = mm_open_write(ctx, path, &o);
    if (st)
        return st;
    FILE *f = o.f;
    int bad = fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%lld %lld %lld\n",
                      (long long)A->nrows, (long long)A->ncols,
                      (long long)(A->rowptr[A->nrows] - A->rowptr[0])) < 0;
    for (int64_t i = 0; i < A->nrows && !bad; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1] && !bad; k++)
            bad = fprintf(f, "%lld %lld %.17g\n", (long long)i + 1,
                          (long long)A->colind[k] + 1, A->val[k]) < 0;
    return mm_close(ctx, path, &o, bad, bad ? errno : 0);
}

spk_status spk_matrix_write_mtx(spk_context *ctx, const char *path, const spk_matrix *A)
{
    if (!A || A->magic != SPK_MATRIX_MAGIC)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_write_mtx: %s matrix",
                        A ? "destroyed or invalid" : "NULL");
    /* the handle is not const underneath: values updated on the GPU are downloaded first */
    spk_status st = spk_matrix_host_values(ctx, (spk_matrix *)A);
    return st ? st : spk_mm_write_csr(ctx, path, &A->csr);
}

static spk_status vector_check(spk_context *ctx, const char *name, const double *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return spk_fail(ctx, SPK_ERR_ARG, "%s: v(%lld) = %g cannot be written (Matrix "
                            "Market has no NaN or Inf)", name, (long long)i + 1, v[i]);
    return SPK_OK;
}

/* The array file of v on f; 1 if a write failed (errno set). */
static int vector_put(FILE *f, const double *v, int64_t n, const char *comment)
{
    int bad = fputs("%%MatrixMarket matrix array real general\n", f) < 0;
    /* Each line of the comment becomes a '%' line, so a newline in it cannot break the file. */
    for (const char *c = comment; c && *c && !bad;) {
        size_t m = strcspn(c, "\n");
        bad = fprintf(f, "%% %.*s\n", (int)m, c) < 0;
        c += m + (c[m] == '\n');
    }
    if (!bad)
        bad = fprintf(f, "%lld 1\n", (long long)n) < 0;
    for (int64_t i = 0; i < n && !bad; i++)
        bad = fprintf(f, "%.17g\n", v[i]) < 0;
    return bad;
}

spk_status spk_vector_write_mtx(spk_context *ctx, const char *path, const double *v, int64_t n,
                                const char *comment)
{
    if (!path || n < 0 || (n && !v))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_vector_write_mtx: %s",
                        n < 0 ? "negative length" : "NULL argument");
    spk_status st = vector_check(ctx, path, v, n);
    if (st)
        return st;
    mm_out o;
    if ((st = mm_open_write(ctx, path, &o)))
        return st;
    const int bad = vector_put(o.f, v, n, comment);
    return mm_close(ctx, path, &o, bad, bad ? errno : 0);
}

spk_status spk_vector_write_mtx_fd(spk_context *ctx, int fd, const char *name, const double *v,
                                   int64_t n, const char *comment)
{
    if (fd < 0 || n < 0 || (n && !v))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_vector_write_mtx_fd: %s",
                        fd < 0 ? "bad descriptor" : n < 0 ? "negative length" : "NULL argument");
    if (!name)
        name = "(descriptor)";
    spk_status st = vector_check(ctx, name, v, n);
    if (st)
        return st;
    /* a duplicate shares fd's offset (and O_APPEND): the caller's descriptor stays open and
     * is written from where it stands, never truncated */
    int dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    FILE *f = dupfd >= 0 ? fdopen(dupfd, "w") : NULL;
    if (!f) {
        int err = errno;
        if (dupfd >= 0)
            close(dupfd);
        return mm_errno(ctx, name, "write", err);
    }
    int bad = vector_put(f, v, n, comment), err = bad ? errno : 0;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    return bad ? mm_errno(ctx, name, "write", err ? err : EIO) : SPK_OK;
}
