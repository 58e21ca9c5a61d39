/* src/generate.c -- test matrices from a spec string, built directly as canonical CSR (rows
 * sorted, O(nnz), 64-bit offsets, rows filled in parallel):
 *
 *   poisson2d:N      5-point Laplacian on an N x N grid: 4 on the diagonal, -1 per neighbour.
 *   poisson3d:N      7-point Laplacian on an N^3 grid: 6 / -1. nnz = 7N^3 - 6N^2.
 *   poisson3d27:N    27-point stencil on an N^3 grid: 26 / -1. nnz = (3N - 2)^3.
 *   elasticity3d:N   3 unknowns per node of an N^3 grid, 27-point node coupling: 81 entries
 *                    per interior row, 3 N^3 rows, nnz = 9 (3N - 2)^3.
 *   powerlaw:N:AVG[:SEED]  N x N, power-law row lengths of mean ~AVG, random distinct
 *                    columns, nonsymmetric, strictly diagonally dominant; SEED default 1.
 *   band:N:MIN:MAX[:HALF[:SKEW[:SEED]]]  N x N, row lengths MIN + floor((MAX - MIN + 1) u^SKEW)
 *                    for u uniform in [0, 1) (SKEW 1, the default: uniform in [MIN, MAX]; 2, 3:
 *                    more short rows, max / mean up to SKEW + 1), the diagonal and random
 *                    distinct columns within HALF of it (default HALF = MAX; HALF >= N:
 *                    anywhere), values as powerlaw's. For sweeping the format choice over the
 *                    row-length statistics (mean, cv, max / mean) with the locality held fixed.
 *
 * Why each is what the solvers expect:
 *  - The three stencils have a zero row sum in the interior and a positive one on the boundary
 *    (Dirichlet neighbours dropped): symmetric, irreducibly diagonally dominant with a positive
 *    diagonal, hence SPD (Varga, Matrix Iterative Analysis, thm 1.21 / Gershgorin).
 *  - elasticity3d is K = L (x) B, L the 27-point matrix above and B = [4 1 1; 1 4 1; 1 1 4]
 *    (eigenvalues 6, 3, 3). The eigenvalues of a Kronecker product are the products of the
 *    factors' eigenvalues, all positive, and (L (x) B)' = L' (x) B' = L (x) B: K is SPD. It is
 *    a surrogate with the sparsity of a trilinear-hexahedra elasticity matrix (3x3 blocks,
 *    27 neighbour nodes), not a discretised Navier-Cauchy operator; its condition number is
 *    kappa(L) * kappa(B) = 2 kappa(L).
 *  - powerlaw: row lengths L_i = clamp(floor(xm * u_i^(-1/2)), 1, N), u_i uniform in (0, 1]:
 *    a Pareto tail of shape 2 (degree exponent 3, as in the Barabasi-Albert model), scale xm
 *    set by bisection so the mean is as close to AVG as the integer lengths allow. Each row
 *    holds its diagonal plus L_i - 1 distinct uniformly random columns, off-diagonal values
 *    uniform in [-1, 1) and diagonal 1 + sum |off-diagonal|: strict row diagonal dominance
 *    keeps it nonsingular and Jacobi/BiCGStab usable. Every random number comes from a
 *    counter-based generator keyed on (seed, row), so the matrix does not depend on the
 *    number of threads.
 *  - band: the same rows and values, the columns drawn from the window [i - HALF, i + HALF]
 *    cut to [0, N), and a row never longer than its window (the first and last HALF rows of
 *    a narrow band can come out shorter than MIN).
 *
 * Row and column counts are limited to 2^31 - 1 by the 32-bit column indices. */
#include "spk_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Loops shorter than this run on one thread: a parallel region's fork and join (microseconds,
 * far more on a loaded machine) outweigh the work below it. */
#define OMP_MIN_WORK 16384

#define KNOWN_GENERATORS \
    "poisson2d:N, poisson3d:N, poisson3d27:N, elasticity3d:N, powerlaw:N:AVG[:SEED], " \
    "band:N:MIN:MAX[:HALF[:SKEW[:SEED]]]"
/* Pareto shape of the power-law row lengths (tail P(L > x) ~ x^-2). */
#define POWERLAW_SHAPE 2.0
#define POWERLAW_BISECTION_STEPS 60

typedef enum {
    GEN_POISSON2D, GEN_POISSON3D, GEN_POISSON3D27, GEN_ELASTICITY3D, GEN_POWERLAW, GEN_BAND
} gen_kind;

static const struct {
    const char *name;
    gen_kind    kind;
} generators[] = {
    {"poisson2d", GEN_POISSON2D},     {"poisson3d", GEN_POISSON3D},
    {"poisson3d27", GEN_POISSON3D27}, {"elasticity3d", GEN_ELASTICITY3D},
    {"powerlaw", GEN_POWERLAW},       {"band", GEN_BAND},
};
#define N_GENERATORS (sizeof generators / sizeof generators[0])

/* The generator whose name is followed by ':' in s, or -1. */
static int find_generator(const char *s)
{
    for (size_t g = 0; s && g < N_GENERATORS; g++) {
        size_t len = strlen(generators[g].name);
        if (strncmp(s, generators[g].name, len) == 0 && s[len] == ':')
            return (int)g;
    }
    return -1;
}

int spk_is_generator_spec(const char *s) { return find_generator(s) >= 0; }

/* ---- parsing ------------------------------------------------------------------------------ */

/* The field [s, end) as a non-negative integer, digits only. */
static int parse_digits(const char *s, const char *end, int64_t *v)
{
    if (s == end)
        return 0;
    int64_t x = 0;
    for (const char *c = s; c < end; c++) {
        if (!isdigit((unsigned char)*c) || x > (INT64_MAX - 9) / 10)
            return 0;
        x = 10 * x + (*c - '0');
    }
    *v = x;
    return 1;
}

/* ... and >= 1. */
static int parse_count(const char *s, const char *end, int64_t *v)
{
    return parse_digits(s, end, v) && *v >= 1;
}

static const char *field_end(const char *s) { return s + strcspn(s, ":"); }

/* nodes^dim * dof rows must fit 32-bit indices. */
static spk_status check_rows(spk_context *ctx, const char *name, int64_t N, int dim, int dof,
                             int64_t *rows)
{
    double r = (double)dof * pow((double)N, dim);
    if (r > (double)INT32_MAX)
        return spk_fail(ctx, SPK_ERR_ARG,
                        "%s:N: N = %lld gives %.0f rows, more than the %d that 32-bit column "
                        "indices allow", name, (long long)N, r, INT32_MAX);
    *rows = (int64_t)dof * N * N * (dim == 3 ? N : 1);
    return SPK_OK;
}

/* ---- stencils on an N^dim grid ---------------------------------------------------------- */

typedef struct stencil {
    int64_t       N;          /* grid points per dimension                                  */
    int           dim;        /* 2 or 3                                                     */
    int           box;        /* 1: all 3^dim neighbours (27-point); 0: the star (5/7-point)  */
    int           dof;        /* unknowns per node: 1, or 3 with the block B                */
    double        diag, off;  /* node matrix L: diag on its diagonal, off per neighbour     */
    const double *B;          /* dof x dof block, row-major (dof 1: NULL)                   */
} stencil;

/* Neighbours (dz, dy, dx) in lexicographic order, which is also the order of their linear
 * node index z N^2 + y N + x: the columns of a row come out sorted. */
static int stencil_offsets(const stencil *S, int off[27][3])
{
    int m = 0;
    for (int dz = -1; dz <= 1; dz++)
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                if (S->dim == 2 && dz != 0)
                    continue;
                if (!S->box && abs(dx) + abs(dy) + abs(dz) > 1)
                    continue;
                off[m][0] = dz;
                off[m][1] = dy;
                off[m][2] = dx;
                m++;
            }
    return m;
}

static void node_coords(const stencil *S, int64_t node, int64_t c[3])
{
    c[2] = node % S->N;                       /* x */
    c[1] = (node / S->N) % S->N;              /* y */
    c[0] = S->dim == 3 ? node / (S->N * S->N) : 0;
}

static int in_grid(const stencil *S, const int64_t c[3], const int o[3])
{
    for (int d = 0; d < 3; d++)
        if (c[d] + o[d] < 0 || c[d] + o[d] >= (d == 0 && S->dim == 2 ? 1 : S->N))
            return 0;
    return 1;
}

/* Before any work or allocation: the CSR of nrows rows and at least min_nnz entries, and
 * `extra` bytes of scratch, must fit what the process may hold. The count of the entries
 * takes a pass over the rows (a minute for 2^31 rows), so this check uses a bound instead. */
static spk_status gen_fits(spk_context *ctx, const char *spec, int64_t nrows, double min_nnz,
                           double extra)
{
    return spk_check_memory(ctx, spk_csr_bytes(nrows, 0) + 12.0 * min_nnz + extra,
                            "%s: a %lld x %lld matrix of at least %.0f entries", spec,
                            (long long)nrows, (long long)nrows, min_nnz);
}

static spk_status gen_stencil(spk_context *ctx, const char *spec, const stencil *S,
                              int64_t rows, spk_csr *out)
{
    int off[27][3];
    const int m = stencil_offsets(S, off);
    const int64_t N = S->N, dof = S->dof;
    const int64_t plane = S->dim == 3 ? N * N : 0;
    /* each row holds at least its node's own dof x dof block */
    spk_status st = gen_fits(ctx, spec, rows, (double)rows * (double)dof, 0.0);
    if (st)
        return st;

    /* nnz = dof^2 * sum over nodes of the neighbour count; per dimension a node has 3
     * neighbours in the interior (1 at N = 1, 2 on a face), which the loops below count. */
    int64_t nnz = 0;
#pragma omp parallel for schedule(static) reduction(+ : nnz) if(rows > OMP_MIN_WORK)
    for (int64_t node = 0; node < rows / dof; node++) {
        int64_t c[3];
        node_coords(S, node, c);
        for (int k = 0; k < m; k++)
            nnz += in_grid(S, c, off[k]);
    }
    nnz *= dof * dof;
    st = spk_csr_alloc(ctx, rows, rows, nnz, out);
    if (st)
        return st;
#pragma omp parallel for schedule(static) if(rows > OMP_MIN_WORK)
    for (int64_t i = 0; i < rows; i++) {
        int64_t c[3];
        node_coords(S, i / dof, c);
        int64_t cnt = 0;
        for (int k = 0; k < m; k++)
            cnt += in_grid(S, c, off[k]);
        out->rowptr[i + 1] = cnt * dof;
    }
    for (int64_t i = 0; i < rows; i++)
        out->rowptr[i + 1] += out->rowptr[i];
#pragma omp parallel for schedule(static) if(rows > OMP_MIN_WORK)
    for (int64_t i = 0; i < rows; i++) {
        const int64_t node = i / dof, comp = i % dof;
        int64_t c[3], p = out->rowptr[i];
        node_coords(S, node, c);
        for (int k = 0; k < m; k++) {
            if (!in_grid(S, c, off[k]))
                continue;
            const int64_t nb = node + off[k][0] * plane + off[k][1] * N + off[k][2];
            const double l = nb == node ? S->diag : S->off;   /* L(node, nb) */
            for (int64_t c2 = 0; c2 < dof; c2++, p++) {
                out->colind[p] = (int32_t)(nb * dof + c2);
                out->val[p] = S->B ? l * S->B[comp * dof + c2] : l;   /* (L (x) B) entry */
            }
        }
    }
    return SPK_OK;
}

/* ---- power law ---------------------------------------------------------------------------- */

/* splitmix64 (Steele, Lea & Flood, OOPSLA 2014): a counter-based stream per row. */
static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t row_stream(uint64_t seed, int64_t i)
{
    uint64_t s = seed * 0xd1b54a32d192ed03ull + (uint64_t)i;
    return splitmix(&s);
}

static double unit_open0(uint64_t r) { return (double)((r >> 11) + 1) * 0x1p-53; } /* (0, 1] */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int64_t sort_unique(int32_t *v, int64_t n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_i32);
    int64_t w = 1;
    for (int64_t k = 1; k < n; k++)
        if (v[k] != v[w - 1])
            v[w++] = v[k];
    return w;
}

/* m distinct values of [0, M), sorted, into v (room for m), m <= M / 2: draw, sort, drop
 * repeats, draw the shortfall again. Each round at least halves the shortfall. */
static void sample_sorted(uint64_t *s, int64_t M, int64_t m, int32_t *v)
{
    int64_t have = 0;
    while (have < m) {
        for (int64_t k = have; k < m; k++)
            v[k] = (int32_t)(splitmix(s) % (uint64_t)M);
        have = sort_unique(v, m);
    }
}

/* Row i: its diagonal and m = len - 1 distinct off-diagonal columns of the window
 * [lo, lo + M] (which holds i), sorted, into col; scratch has room for min(m, M - m).
 * Off-diagonal draws v live in [0, M) and stand for column lo + v, skipping i. */
static void window_row(uint64_t *s, int64_t lo, int64_t M, int64_t i, int64_t len, int32_t *col,
                       int32_t *scratch)
{
    const int64_t m = len - 1, il = i - lo;
    int64_t w = 0;
    if (m <= M / 2) {
        sample_sorted(s, M, m, scratch);
        for (int64_t k = 0; k < m; k++) {
            int64_t c = lo + (scratch[k] < il ? scratch[k] : scratch[k] + 1);
            if (c > i && (w == 0 || col[w - 1] < i))
                col[w++] = (int32_t)i;
            col[w++] = (int32_t)c;
        }
        if (w == 0 || col[w - 1] < i)
            col[w++] = (int32_t)i;
    } else {                                  /* dense row: draw the M - m columns left out */
        const int64_t k_out = M - m;
        sample_sorted(s, M, k_out, scratch);
        for (int64_t v = 0, e = 0; v < M; v++) {
            if (e < k_out && scratch[e] == v) {
                e++;
                continue;
            }
            int64_t c = lo + (v < il ? v : v + 1);
            if (c > i && (w == 0 || col[w - 1] < i))
                col[w++] = (int32_t)i;
            col[w++] = (int32_t)c;
        }
        if (w == 0 || col[w - 1] < i)
            col[w++] = (int32_t)i;
    }
}

static int64_t powerlaw_len(double xm, double t, int64_t n)
{
    double L = floor(xm * t);
    return L < 1.0 ? 1 : L > (double)n ? n : (int64_t)L;
}

static int64_t powerlaw_total(const double *t, int64_t n, double xm)
{
    int64_t sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum) if(n > OMP_MIN_WORK)
    for (int64_t i = 0; i < n; i++)
        sum += powerlaw_len(xm, t[i], n);
    return sum;
}

/* The scale xm whose total length is closest to target (the total only grows with xm). */
static double powerlaw_scale(const double *t, int64_t n, double avg)
{
    const double target = avg * (double)n;
    double lo = 0.0, hi = 2.0 * avg + 1.0;    /* total(lo) = n <= target <= total(hi) */
    for (int it = 0; it < POWERLAW_BISECTION_STEPS; it++) {
        double mid = 0.5 * (lo + hi);
        if ((double)powerlaw_total(t, n, mid) < target)
            lo = mid;
        else
            hi = mid;
    }
    double dlo = target - (double)powerlaw_total(t, n, lo);
    double dhi = (double)powerlaw_total(t, n, hi) - target;
    return dlo < dhi ? lo : hi;
}

/* Row i's window of columns: [i - half, i + half] cut to [0, n). */
static void row_window(int64_t n, int64_t half, int64_t i, int64_t *lo, int64_t *hi)
{
    *lo = i > half ? i - half : 0;
    *hi = n - 1 - i > half ? i + half : n - 1;
}

/* The columns and values of out's rows, whose lengths out->rowptr already holds (the longest
 * maxlen): row i takes its diagonal and distinct random columns of the window
 * [i - half, i + half] cut to [0, n) (half >= n: every column), off-diagonal values uniform in
 * [-1, 1) and the diagonal 1 + the sum of their magnitudes. Frees out on failure. */
static spk_status fill_random_rows(spk_context *ctx, const char *name, int64_t half,
                                   uint64_t seed, int64_t maxlen, spk_csr *out)
{
    const int64_t n = out->nrows;
    int nthreads = 1;
#ifdef _OPENMP
    nthreads = omp_get_max_threads();
#endif
    int32_t *scratch = spk_malloc(ctx, (size_t)nthreads * (size_t)maxlen, sizeof *scratch);
    if (!scratch) {
        spk_csr_free(out);
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s: out of memory (%zu bytes of scratch)", name,
                        (size_t)nthreads * (size_t)maxlen * sizeof *scratch);
    }
#pragma omp parallel num_threads(nthreads) if(n > OMP_MIN_WORK / 16)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        int32_t *mine = scratch + (size_t)tid * (size_t)maxlen;
#pragma omp for schedule(dynamic, 256)
        for (int64_t i = 0; i < n; i++) {
            const int64_t p0 = out->rowptr[i], len = out->rowptr[i + 1] - p0;
            int64_t lo, hi;
            row_window(n, half, i, &lo, &hi);
            uint64_t s = row_stream(seed ^ 0x5eedc01u, i);
            window_row(&s, lo, hi - lo, i, len, out->colind + p0, mine);
            double offsum = 0.0;
            int64_t dpos = p0;
            for (int64_t p = p0; p < p0 + len; p++) {
                if (out->colind[p] == i) {
                    dpos = p;
                    continue;
                }
                out->val[p] = (double)(splitmix(&s) >> 11) * 0x1p-52 - 1.0;  /* [-1, 1) */
                offsum += fabs(out->val[p]);
            }
            out->val[dpos] = 1.0 + offsum;       /* strictly dominant diagonal */
        }
    }
    spk_free(scratch);
    return SPK_OK;
}

static spk_status gen_powerlaw(spk_context *ctx, const char *spec, int64_t n, double avg,
                               uint64_t seed, spk_csr *out)
{
    /* every row holds at least its diagonal; the scales t take 8 bytes a row */
    spk_status st = gen_fits(ctx, spec, n, (double)n, 8.0 * (double)n);
    if (st)
        return st;
    double *t = spk_malloc(ctx, (size_t)n, sizeof *t);
    if (!t)
        return spk_fail(ctx, SPK_ERR_NOMEM, "powerlaw: out of memory (%zu bytes)",
                        (size_t)n * sizeof *t);
#pragma omp parallel for schedule(static) if(n > OMP_MIN_WORK)
    for (int64_t i = 0; i < n; i++)               /* u^(-1/shape): Pareto with scale 1 */
        t[i] = pow(unit_open0(row_stream(seed, i)), -1.0 / POWERLAW_SHAPE);
    const double xm = powerlaw_scale(t, n, avg);
    int64_t maxlen = 1;
    for (int64_t i = 0; i < n; i++)
        if (powerlaw_len(xm, t[i], n) > maxlen)
            maxlen = powerlaw_len(xm, t[i], n);

    st = spk_csr_alloc(ctx, n, n, powerlaw_total(t, n, xm), out);
    if (st) {
        spk_free(t);
        return st;
    }
    for (int64_t i = 0; i < n; i++)
        out->rowptr[i + 1] = out->rowptr[i] + powerlaw_len(xm, t[i], n);
    spk_free(t);
    return fill_random_rows(ctx, "powerlaw", n, seed, maxlen, out);
}

/* Row i's length in band: lo + floor((hi - lo + 1) u^skew), u uniform in [0, 1), at most its
 * window's 2 half + 1 columns. */
static int64_t band_len(uint64_t seed, int64_t n, int64_t lo, int64_t hi, int64_t half,
                        int64_t skew, int64_t i)
{
    const double u = (double)(row_stream(seed, i) >> 11) * 0x1p-53;
    int64_t len = lo + (int64_t)((double)(hi - lo + 1) * pow(u, (double)skew));
    len = len < hi ? len : hi;
    int64_t wlo, whi;
    row_window(n, half, i, &wlo, &whi);
    return len < whi - wlo + 1 ? len : whi - wlo + 1;
}

static spk_status gen_band(spk_context *ctx, const char *spec, int64_t n, int64_t lo, int64_t hi,
                           int64_t half, int64_t skew, uint64_t seed, spk_csr *out)
{
    /* a row is at least MIN long, or as long as its window (>= min(N, HALF + 1) columns) */
    const int64_t window = half + 1 < n ? half + 1 : n;
    spk_status st = gen_fits(ctx, spec, n, (double)n * (double)(lo < window ? lo : window), 0.0);
    if (st)
        return st;
    int64_t nnz = 0;
#pragma omp parallel for schedule(static) reduction(+ : nnz) if(n > OMP_MIN_WORK)
    for (int64_t i = 0; i < n; i++)
        nnz += band_len(seed, n, lo, hi, half, skew, i);
    st = spk_csr_alloc(ctx, n, n, nnz, out);
    if (st)
        return st;
    for (int64_t i = 0; i < n; i++)
        out->rowptr[i + 1] = out->rowptr[i] + band_len(seed, n, lo, hi, half, skew, i);
    return fill_random_rows(ctx, "band", half, seed, hi, out);
}

/* ---- the spec ----------------------------------------------------------------------------- */

static spk_status parse_powerlaw(spk_context *ctx, const char *spec, const char *p, spk_csr *out)
{
    int64_t n;
    const char *e = field_end(p);
    if (!parse_count(p, e, &n))
        return spk_fail(ctx, SPK_ERR_ARG, "powerlaw:N:AVG[:SEED] expects an integer N >= 1, got '%.*s'",
                        (int)(e - p), p);
    if (n > INT32_MAX)
        return spk_fail(ctx, SPK_ERR_ARG, "powerlaw:N:AVG: N = %lld is more than the %d rows that "
                        "32-bit column indices allow", (long long)n, INT32_MAX);
    if (*e != ':')
        return spk_fail(ctx, SPK_ERR_ARG, "powerlaw:N:AVG[:SEED] needs AVG, got '%s'", spec);
    p = e + 1;
    e = field_end(p);
    char buf[64];
    snprintf(buf, sizeof buf, "%.*s", (int)(e - p < 63 ? e - p : 63), p);
    char *end;
    errno = 0;
    double avg = strtod(buf, &end);
    if (e == p || *end || errno || !(avg >= 1.0 && avg <= (double)n))
        return spk_fail(ctx, SPK_ERR_ARG, "powerlaw:N:AVG expects a number 1 <= AVG <= N = %lld, "
                        "got '%.*s'", (long long)n, (int)(e - p), p);
    uint64_t seed = 1;
    if (*e == ':') {
        p = e + 1;
        e = field_end(p);
        int64_t sd;
        if (*e || !parse_digits(p, e, &sd))
            return spk_fail(ctx, SPK_ERR_ARG, "powerlaw:N:AVG:SEED expects an integer SEED >= 0 "
                            "and nothing after it, got '%s'", p);
        seed = (uint64_t)sd;
    }
    return gen_powerlaw(ctx, spec, n, avg, seed, out);
}

/* band:N:MIN:MAX[:HALF[:SKEW[:SEED]]]: the fields in order, each an integer. */
static spk_status parse_band(spk_context *ctx, const char *spec, const char *p, spk_csr *out)
{
    static const char *const what[6] = {"N", "MIN", "MAX", "HALF", "SKEW", "SEED"};
    int64_t v[6] = {0, 0, 0, 0, 1, 1};
    int got = 0;
    for (;;) {
        const char *e = field_end(p);
        if (got == 6)
            return spk_fail(ctx, SPK_ERR_ARG, "band:N:MIN:MAX[:HALF[:SKEW[:SEED]]] expects nothing "
                            "after SEED, got '%s'", p);
        if (!parse_digits(p, e, &v[got]))
            return spk_fail(ctx, SPK_ERR_ARG, "band:N:MIN:MAX[:HALF[:SKEW[:SEED]]] expects %s as an "
                            "integer >= 0, got '%.*s'", what[got], (int)(e - p), p);
        got++;
        if (!*e)
            break;
        p = e + 1;
    }
    if (got < 3)
        return spk_fail(ctx, SPK_ERR_ARG, "band:N:MIN:MAX[:HALF[:SKEW[:SEED]]] needs MIN and MAX, "
                        "got '%s'", spec);
    const int64_t n = v[0], lo = v[1], hi = v[2];
    if (n < 1 || n > INT32_MAX)
        return spk_fail(ctx, SPK_ERR_ARG, "band: N = %lld: expects 1 <= N <= %d (32-bit column "
                        "indices)", (long long)n, INT32_MAX);
    if (lo < 1 || lo > hi || hi > n)
        return spk_fail(ctx, SPK_ERR_ARG, "band: MIN = %lld, MAX = %lld: expects 1 <= MIN <= MAX "
                        "<= N = %lld", (long long)lo, (long long)hi, (long long)n);
    int64_t half = got > 3 ? v[3] : hi;
    if (half > n)
        half = n;                                /* every column: the window is the row */
    if (hi > 2 * half + 1)
        return spk_fail(ctx, SPK_ERR_ARG, "band: MAX = %lld entries do not fit the %lld columns "
                        "within HALF = %lld of the diagonal", (long long)hi,
                        (long long)(2 * half + 1), (long long)half);
    if (v[4] < 1 || v[4] > 8)
        return spk_fail(ctx, SPK_ERR_ARG, "band: SKEW = %lld: expects 1 (uniform lengths) to 8",
                        (long long)v[4]);
    return gen_band(ctx, spec, n, lo, hi, half, v[4], (uint64_t)v[5], out);
}

spk_status spk_generate_csr(spk_context *ctx, const char *spec, spk_csr *out)
{
    static const double block3[9] = {4, 1, 1, 1, 4, 1, 1, 1, 4};   /* SPD: eigenvalues 6 3 3 */
    if (!spec || !out)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_generate_csr: NULL argument");
    memset(out, 0, sizeof *out);
    int g = find_generator(spec);
    if (g < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "unknown generator '%.*s' (known: " KNOWN_GENERATORS ")",
                        (int)strcspn(spec, ":"), spec);
    const char *name = generators[g].name, *p = spec + strlen(name) + 1;
    if (generators[g].kind == GEN_POWERLAW)
        return parse_powerlaw(ctx, spec, p, out);
    if (generators[g].kind == GEN_BAND)
        return parse_band(ctx, spec, p, out);

    int64_t N, rows = 0;
    const char *e = field_end(p);
    if (!parse_count(p, e, &N))
        return spk_fail(ctx, SPK_ERR_ARG, "%s:N expects an integer N in [1, 2^63), got '%.*s'", name, (int)(e - p), p);
    if (*e)
        return spk_fail(ctx, SPK_ERR_ARG, "%s:N takes one parameter, got '%s'", name, spec);
    stencil S = {N, 3, 0, 1, 6.0, -1.0, NULL};
    switch (generators[g].kind) {
    case GEN_POISSON2D: S.dim = 2; S.diag = 4.0; break;
    case GEN_POISSON3D: break;
    case GEN_POISSON3D27: S.box = 1; S.diag = 26.0; break;
    case GEN_ELASTICITY3D: S.box = 1; S.diag = 26.0; S.dof = 3; S.B = block3; break;
    case GEN_POWERLAW: case GEN_BAND: break;
    }
    spk_status st = check_rows(ctx, name, N, S.dim, S.dof, &rows);
    if (st)
        return st;
    return gen_stencil(ctx, spec, &S, rows, out);
}
