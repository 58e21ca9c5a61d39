/* src/generate.c -- test matrices from a spec string, built directly as canonical CSR (rows
 * sorted, O(nnz), 64-bit offsets, rows filled in parallel), and the coordinates of their nodes:
 *
 *   poisson2d:N      5-point Laplacian on an N x N grid: 4 on the diagonal, -1 per neighbour.
 *   poisson3d:N      7-point Laplacian on an N^3 grid: 6 / -1. nnz = 7N^3 - 6N^2.
 *   poisson3d27:N    27-point stencil on an N^3 grid: 26 / -1. nnz = (3N - 2)^3.
 *   elasticity3d:N   3 unknowns per node of an N^3 grid, 27-point node coupling: 81 entries
 *                    per interior row, 3 N^3 rows, nnz = 9 (3N - 2)^3. A synthetic block
 *                    stencil with the sparsity of 3-D elasticity, not elasticity (lame3d is).
 *   lame3d:N[:NU]    isotropic linear elasticity (E = 1, Poisson ratio NU, default 0.3) with
 *                    trilinear hexahedra (Q1, 2x2x2 Gauss points) on the unit cube cut into
 *                    N^3 cells, clamped on the face x = 0 (those nodes' unknowns removed). Node
 *                    (i, j, k) at (i, j, k) / N, 1 <= i <= N, 0 <= j, k <= N, is numbered x
 *                    fastest, (i - 1) + N (j + (N + 1) k), and holds unknowns 3 node + 0, 1, 2
 *                    (u, v, w). n = 3 N (N + 1)^2, nnz = 9 (3N - 2)(3N + 1)^2 (whole 3x3 blocks).
 *   jump3d:N[:CONTRAST]  7-point finite volumes for -div(k grad u) on the N^3 interior grid of
 *                    the unit cube, Dirichlet boundary; k is 1 or CONTRAST (default 1e4) on each
 *                    of 4 x 4 x 4 equal sub-cubes by a fixed pseudo-random choice. Scaled as
 *                    poisson3d (h^2 times the difference quotients, the finite-volume fluxes
 *                    divided by h): jump3d:N:1 is poisson3d:N entry for entry. n = N^3,
 *                    nnz = 7N^3 - 6N^2.
 *   powerlaw:N:AVG[:SEED]  N x N, power-law row lengths of mean ~AVG, random distinct
 *                    columns, nonsymmetric, strictly diagonally dominant; SEED default 1.
 *   band:N:MIN:MAX[:HALF[:SKEW[:SEED]]]  N x N, row lengths MIN + floor((MAX - MIN + 1) u^SKEW)
 *                    for u uniform in [0, 1) (SKEW 1, the default: uniform in [MIN, MAX]; 2, 3:
 *                    more short rows, max / mean up to SKEW + 1), the diagonal and random
 *                    distinct columns within HALF of it (default HALF = MAX; HALF >= N:
 *                    anywhere), values as powerlaw's. For sweeping the format choice over the
 *                    row-length statistics (mean, cv, max / mean) with the locality held fixed.
 *
 * Coordinates (spk_generate_coords): the grid generators' points in the unit square or cube,
 * node by node in the matrix's node order. poisson2d, poisson3d, poisson3d27, elasticity3d and
 * jump3d: interior points ((x + 1) h, (y + 1) h[, (z + 1) h]), h = 1 / (N + 1), x fastest;
 * lame3d: its unclamped nodes as above. powerlaw and band have none.
 *
 * Why each is what the solvers expect:
 *  - The three stencils have a zero row sum in the interior and a positive one on the boundary
 *    (Dirichlet neighbours dropped): symmetric, irreducibly diagonally dominant with a positive
 *    diagonal, hence SPD (Varga, Matrix Iterative Analysis, thm 1.21 / Gershgorin).
 *  - elasticity3d is K = L (x) B, L the 27-point matrix above and B = [4 1 1; 1 4 1; 1 1 4]
 *    (eigenvalues 6, 3, 3). The eigenvalues of a Kronecker product are the products of the
 *    factors' eigenvalues, all positive, and (L (x) B)' = L' (x) B' = L (x) B: K is SPD. It is
 *    a synthetic surrogate with the sparsity of a trilinear-hexahedra elasticity matrix (3x3
 *    blocks, 27 neighbour nodes), not a discretised Navier-Cauchy operator: its unknowns do not
 *    couple as displacements do, it has no rigid-body near-null space, and (unlike the
 *    stencils) it is not diagonally dominant: an interior row holds 104 on the diagonal against
 *    208 off it. Its condition number is kappa(L) * kappa(B) = 2 kappa(L). lame3d is the real
 *    Q1 elasticity.
 *  - lame3d sums over the cells h K_e, K_e the element matrix of the unit cube: the integral
 *    of B' D B over 2x2x2 Gauss points (exact here: the integrand has degree <= 2 along each
 *    axis), B the strains of the 24 nodal unknowns, D Hooke's isotropic law with Lame constants
 *    lambda = NU / ((1 + NU)(1 - 2 NU)), mu = 1 / (2 (1 + NU)); a cell of side h has h K_e
 *    (gradients scale by 1/h, the volume by h^3). K_e is symmetric positive semidefinite with
 *    the six rigid-body motions as its null space (rank 18); clamping one face removes them,
 *    and the assembled matrix is SPD for -1 < NU < 1/2 (Ciarlet, The Finite Element Method for
 *    Elliptic Problems, 1.2, with Korn's inequality). Each entry sums the same K_e entries over
 *    the cells its two nodes share, in one order, from a K_e mirrored bit for bit: the matrix
 *    is exactly symmetric. Its conditioning grows like N^2 and, as NU -> 1/2, like
 *    1 / (1 - 2 NU) (volumetric locking): the smoothed-aggregation test case with six
 *    near-null vectors (Vanek, Mandel & Brezina, Computing 56, 1996).
 *  - jump3d: the face between the cells of points P and Q carries 2 k_P k_Q / (k_P + k_Q), the
 *    harmonic mean (the exact flux through two layers in series); a face to the boundary, the
 *    cell's own k. Each row holds minus its face coefficients off the diagonal and their sum on
 *    it: symmetric (the mean is symmetric in k_P and k_Q, bit for bit), zero row sum inside
 *    (conservation), positive at the boundary, SPD as the stencils are. The condition number
 *    grows with CONTRAST, the hard case for smoothers and for interpolation that ignores the
 *    coefficient (Alcouffe, Brandt, Dendy & Painter, SIAM J. Sci. Stat. Comput. 2, 1981).
 *    Point x (0-based) of an axis lies in sub-cube floor(4 (x + 1) / (N + 1)) of it (a point on
 *    a sub-cube face joins the upper one); sub-cube s = sx + 4 sy + 16 sz takes CONTRAST where
 *    bit s of the splitmix64 draw from the fixed seed JUMP3D_SEED is set, integer arithmetic
 *    only, so the pattern is the same on every machine.
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
 *  - rmat: Graph500's R-MAT (Chakrabarti, Zhan & Faloutsos, SDM 2004): 2^SCALE vertices and
 *    EF 2^SCALE edges, each edge SCALE quadrant draws with probabilities 0.57, 0.19, 0.19,
 *    0.05, the vertices relabelled by a random permutation (Graph500's kernel input; without
 *    it the hubs would sit at the low numbers). Degrees follow a heavy tail (rmat:20: mean 31,
 *    longest row 64,671); repeated edges and self loops are dropped. The stand-in for social
 *    and collaboration graphs (bench/matrices/README.md).
 *  - mesh2d: the N^2 points of a grid, each cell cut into two triangles by a diagonal drawn at
 *    random, the points numbered in a random order: a triangle mesh of degree 3-8 (mean 6, a
 *    Delaunay triangulation's) whose numbering keeps no locality, as DIMACS10's delaunay_n*
 *    matrices (random points in generation order) and census-tract graphs such as ct2010.
 *  - rmat and mesh2d, the matrix of the graph: the diagonal and one entry per neighbour, the
 *    off-diagonal value of edge {i, j} uniform in [-1, 1) keyed on (seed, i, j), the same from
 *    both ends (symmetric), the diagonal 1 + the sum of the row's magnitudes (SPD).
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
    "band:N:MIN:MAX[:HALF[:SKEW[:SEED]]], rmat:SCALE[:EF[:SEED]], mesh2d:N[:SEED]"
#define KNOWN_MULTIGRID_GENERATORS "lame3d:N[:NU], jump3d:N[:CONTRAST]"
#define COORD_GENERATORS "poisson2d, poisson3d, poisson3d27, elasticity3d, lame3d, jump3d"
/* lame3d's default Poisson ratio: a generic metal, far enough from 1/2 not to lock. */
#define LAME3D_NU 0.3
/* jump3d's default coefficient ratio, and the range kept clear of overflow in the harmonic
 * means 2ab / (a + b) and the diagonal sums. */
#define JUMP3D_CONTRAST 1e4
#define JUMP3D_CONTRAST_MIN 1e-100
#define JUMP3D_CONTRAST_MAX 1e100
/* Pareto shape of the power-law row lengths (tail P(L > x) ~ x^-2). */
#define POWERLAW_SHAPE 2.0
#define POWERLAW_BISECTION_STEPS 60
/* rmat: Graph500's quadrant probabilities (a, b, c; d = 1 - a - b - c) and its default edge
 * factor. */
#define RMAT_A 0.57
#define RMAT_B 0.19
#define RMAT_C 0.19
#define RMAT_EF 16
#define RMAT_MAX_SCALE 30

typedef enum {
    GEN_POISSON2D, GEN_POISSON3D, GEN_POISSON3D27, GEN_ELASTICITY3D, GEN_LAME3D, GEN_JUMP3D,
    GEN_POWERLAW, GEN_BAND, GEN_RMAT, GEN_MESH2D
} gen_kind;

static const struct {
    const char *name;
    gen_kind    kind;
    const char *usage;                           /* the spec's form, as messages quote it */
} generators[] = {
    {"poisson2d", GEN_POISSON2D, "poisson2d:N"},
    {"poisson3d", GEN_POISSON3D, "poisson3d:N"},
    {"poisson3d27", GEN_POISSON3D27, "poisson3d27:N"},
    {"elasticity3d", GEN_ELASTICITY3D, "elasticity3d:N"},
    {"lame3d", GEN_LAME3D, "lame3d:N[:NU]"},
    {"jump3d", GEN_JUMP3D, "jump3d:N[:CONTRAST]"},
    {"powerlaw", GEN_POWERLAW, "powerlaw:N:AVG[:SEED]"},
    {"band", GEN_BAND, "band:N:MIN:MAX[:HALF[:SKEW[:SEED]]]"},
    {"rmat", GEN_RMAT, "rmat:SCALE[:EF[:SEED]]"},
    {"mesh2d", GEN_MESH2D, "mesh2d:N[:SEED]"},
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

/* ---- lame3d: Q1 elasticity, clamped at x = 0 ---------------------------------------------- */

/* Row and column of the unit cube's 24 x 24 element matrix: local node a = ax + 2 ay + 4 az
 * (the corner (ax, ay, az) in {0, 1}^3), unknown c of it. */
#define Q1_DOF(a, c) (3 * (a) + (c))

/* K = integral over [0, 1]^3 of B' D B, by 2x2x2 Gauss points (weights 1/8 on the unit cube).
 * B (6 x 24) maps the nodal displacements to the strains in Voigt order (xx, yy, zz, 2yz, 2xz,
 * 2xy), D (6 x 6) is Hooke's law: lambda + 2 mu on the normal strains' diagonal, lambda off
 * it, mu on the shears.
 * Computed so that the cube's mirror symmetries hold bit for bit: the shape functions take
 * their two values at the points from one table (1 - t is not recomputed), and the 8 points'
 * terms are summed as a tree over the bits of the point index, which a reflection only
 * permutes within pairs. Assembled entries that vanish by symmetry (the u-v coupling of an
 * interior node with itself) then cancel to exactly 0 rather than to rounding. The upper
 * triangle is mirrored, so K is symmetric bit for bit. */
static void q1_element(double nu, double K[24][24])
{
    const double lam = nu / ((1.0 + nu) * (1.0 - 2.0 * nu)), mu = 1.0 / (2.0 * (1.0 + nu));
    const double off = 0.5 / sqrt(3.0);          /* the points 1/2 -+ off of [0, 1] */
    const double phi_at[2][2] = {{0.5 + off, 0.5 - off}, {0.5 - off, 0.5 + off}};  /* [corner][q] */
    double B[8][6][24] = {{{0}}};                 /* B at each point q = qx + 2 qy + 4 qz */
    for (int q = 0; q < 8; q++)
        for (int a = 0; a < 8; a++) {
            double phi[3], dphi[3];              /* 1-D factors of N_a and their slopes */
            for (int d = 0; d < 3; d++) {
                const int corner = (a >> d) & 1;
                phi[d] = phi_at[corner][(q >> d) & 1];
                dphi[d] = corner ? 1.0 : -1.0;
            }
            const double gx = dphi[0] * phi[1] * phi[2], gy = phi[0] * dphi[1] * phi[2],
                         gz = phi[0] * phi[1] * dphi[2];
            const int u = Q1_DOF(a, 0), v = Q1_DOF(a, 1), w = Q1_DOF(a, 2);
            double (*Bq)[24] = B[q];
            Bq[0][u] = gx;                         /* e_xx = du/dx */
            Bq[1][v] = gy;                         /* e_yy = dv/dy */
            Bq[2][w] = gz;                         /* e_zz = dw/dz */
            Bq[3][v] = gz, Bq[3][w] = gy;          /* 2 e_yz = dv/dz + dw/dy */
            Bq[4][u] = gz, Bq[4][w] = gx;          /* 2 e_xz = du/dz + dw/dx */
            Bq[5][u] = gy, Bq[5][v] = gx;          /* 2 e_xy = du/dy + dv/dx */
        }
    for (int p = 0; p < 24; p++)
        for (int s = p; s < 24; s++) {
            double t[8];                          /* (B' D B)(p, s) / 8 at each point */
            for (int q = 0; q < 8; q++) {
                const double(*Bq)[24] = (const double(*)[24])B[q];
                const double tr = Bq[0][p] + Bq[1][p] + Bq[2][p];   /* div of unknown p */
                double k = 0.0;
                for (int r = 0; r < 3; r++)
                    k += Bq[r][s] * (lam * tr + 2.0 * mu * Bq[r][p]);
                for (int r = 3; r < 6; r++)
                    k += Bq[r][s] * (mu * Bq[r][p]);
                t[q] = 0.125 * k;
            }
            K[p][s] = K[s][p] = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
        }
}

/* The cells shared by nodes p and p + d along one axis of nodes 0..cells: [lo, hi]. */
static void shared_cells(int64_t p, int d, int64_t cells, int64_t *lo, int64_t *hi)
{
    const int64_t q = p + d;
    *lo = (p < q ? q : p) - 1;
    *hi = p < q ? p : q;
    if (*lo < 0)
        *lo = 0;
    if (*hi > cells - 1)
        *hi = cells - 1;
}

/* Neighbour nodes along one axis (offsets -1, 0, 1 kept in [first, last]). */
static int64_t axis_count(int64_t p, int64_t first, int64_t last)
{
    return 1 + (p > first) + (p < last);
}

static spk_status gen_lame(spk_context *ctx, const char *spec, int64_t N, double nu,
                           int64_t rows, spk_csr *out)
{
    const double nnz_d = 9.0 * (3.0 * (double)N - 2.0) * (3.0 * (double)N + 1.0) *
                         (3.0 * (double)N + 1.0);
    spk_status st = gen_fits(ctx, spec, rows, nnz_d, 0.0);
    if (st)
        return st;
    st = spk_csr_alloc(ctx, rows, rows, (int64_t)nnz_d, out);
    if (st)
        return st;
    double K[24][24];
    q1_element(nu, K);
    const double h = 1.0 / (double)N;            /* a cell of side h has h K */
    const int64_t M = N + 1;                     /* nodes per axis along y and z */

    /* unclamped node (i, j, k): i in [1, N], j and k in [0, N] */
    for (int64_t r = 0; r < rows; r++) {
        const int64_t node = r / 3, i = 1 + node % N, j = (node / N) % M, k = node / (N * M);
        out->rowptr[r + 1] = out->rowptr[r] +
                             3 * axis_count(i, 1, N) * axis_count(j, 0, N) * axis_count(k, 0, N);
    }
    /* a row sums up to 8 cells' entries for each of its 27 blocks: far more work per row than
     * a stencil's, so fewer rows pay for the threads */
#pragma omp parallel for schedule(static) if(rows > OMP_MIN_WORK / 8)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t node = r / 3, c = r % 3;
        const int64_t i = 1 + node % N, j = (node / N) % M, k = node / (N * M);
        int64_t p = out->rowptr[r];
        for (int dk = -1; dk <= 1; dk++)
            for (int dj = -1; dj <= 1; dj++)
                for (int di = -1; di <= 1; di++) {
                    const int64_t ni = i + di, nj = j + dj, nk = k + dk;
                    if (ni < 1 || ni > N || nj < 0 || nj > N || nk < 0 || nk > N)
                        continue;
                    int64_t xlo, xhi, ylo, yhi, zlo, zhi;
                    shared_cells(i, di, N, &xlo, &xhi);
                    shared_cells(j, dj, N, &ylo, &yhi);
                    shared_cells(k, dk, N, &zlo, &zhi);
                    double v[3] = {0.0, 0.0, 0.0};
                    for (int64_t ez = zlo; ez <= zhi; ez++)
                        for (int64_t ey = ylo; ey <= yhi; ey++)
                            for (int64_t ex = xlo; ex <= xhi; ex++) {
                                const int a = (int)((i - ex) + 2 * (j - ey) + 4 * (k - ez));
                                const int b = (int)((ni - ex) + 2 * (nj - ey) + 4 * (nk - ez));
                                for (int c2 = 0; c2 < 3; c2++)
                                    v[c2] += K[Q1_DOF(a, c)][Q1_DOF(b, c2)];
                            }
                    const int64_t nb = (ni - 1) + N * (nj + M * nk);
                    for (int c2 = 0; c2 < 3; c2++, p++) {
                        out->colind[p] = (int32_t)(3 * nb + c2);
                        out->val[p] = h * v[c2];
                    }
                }
    }
    return SPK_OK;
}

/* ---- jump3d: a piecewise constant coefficient ---------------------------------------------- */

/* The fixed seed of the sub-cubes' coefficients: bit s of splitmix64's first draw from it
 * gives sub-cube s CONTRAST (31 of the 64 for this seed). */
#define JUMP3D_SEED 3
#define JUMP3D_SUBCUBES 4                        /* per axis */

/* The sub-cube of grid point x (0-based) of N along one axis, 0 .. JUMP3D_SUBCUBES - 1: the
 * point lies at (x + 1) / (N + 1) in (0, 1). */
static int64_t subcube(int64_t x, int64_t N) { return JUMP3D_SUBCUBES * (x + 1) / (N + 1); }

/* The coefficient of the cell of point (x, y, z). */
static double jump_coef(uint64_t pattern, double contrast, int64_t N, int64_t x, int64_t y,
                        int64_t z)
{
    const int64_t s = subcube(x, N) + JUMP3D_SUBCUBES *
                      (subcube(y, N) + JUMP3D_SUBCUBES * subcube(z, N));
    return (pattern >> s) & 1 ? contrast : 1.0;
}

/* The coefficient of a face: the harmonic mean of its two cells' (symmetric in a and b bit for
 * bit: the product and the sum commute, and doubling is exact). */
static double face_coef(double a, double b) { return 2.0 * (a * b) / (a + b); }

/* poisson3d's pattern, its values replaced: -face coefficient per neighbour, the sum of the six
 * (boundary faces: the cell's own k) on the diagonal. */
static spk_status gen_jump(spk_context *ctx, const char *spec, int64_t N, double contrast,
                           int64_t rows, spk_csr *out)
{
    const stencil S = {N, 3, 0, 1, 6.0, -1.0, NULL};
    spk_status st = gen_stencil(ctx, spec, &S, rows, out);
    if (st)
        return st;
    uint64_t seed = JUMP3D_SEED;
    const uint64_t pattern = splitmix(&seed);
#pragma omp parallel for schedule(static) if(rows > OMP_MIN_WORK)
    for (int64_t r = 0; r < rows; r++) {
        int64_t c[3];
        node_coords(&S, r, c);                   /* c = (z, y, x) */
        const double kr = jump_coef(pattern, contrast, N, c[2], c[1], c[0]);
        double diag = 0.0;
        int64_t dpos = out->rowptr[r];
        /* faces in column order: -z, -y, -x, +x, +y, +z */
        for (int f = 0; f < 6; f++) {
            const int d = f < 3 ? f : 5 - f, o = f < 3 ? -1 : 1;   /* axis (z y x), step */
            int64_t nb[3] = {c[0], c[1], c[2]};
            nb[d] += o;
            if (nb[d] < 0 || nb[d] >= N) {
                diag += kr;                      /* the Dirichlet boundary */
                continue;
            }
            diag += face_coef(kr, jump_coef(pattern, contrast, N, nb[2], nb[1], nb[0]));
        }
        for (int64_t p = out->rowptr[r]; p < out->rowptr[r + 1]; p++) {
            const int64_t col = out->colind[p];
            if (col == r) {
                dpos = p;
                continue;
            }
            int64_t q[3];
            node_coords(&S, col, q);
            out->val[p] = -face_coef(kr, jump_coef(pattern, contrast, N, q[2], q[1], q[0]));
        }
        out->val[dpos] = diag;
    }
    return SPK_OK;
}

/* ---- graphs: rmat, mesh2d ---------------------------------------------------------------- */

/* The value of edge {i, j}, the same from either end: uniform in [-1, 1), keyed on the seed
 * and the pair. */
static double edge_value(uint64_t seed, int64_t i, int64_t j)
{
    const int64_t lo = i < j ? i : j, hi = i < j ? j : i;
    uint64_t s = row_stream(seed ^ 0xed9eu, lo) ^ ((uint64_t)hi * 0x9e3779b97f4a7c15ull);
    return (double)(splitmix(&s) >> 11) * 0x1p-52 - 1.0;
}

/* The symmetric matrix of an undirected graph on n vertices from its m edges (eu[k], ev[k]),
 * repeats and self loops allowed and dropped: row i holds its diagonal and one entry per
 * distinct neighbour, columns sorted, off-diagonal values edge_value, the diagonal 1 + the
 * sum of their magnitudes (strictly diagonally dominant: SPD). The rows are filled in any
 * order, then sorted and deduplicated, so the matrix does not depend on the thread count. */
static spk_status graph_matrix(spk_context *ctx, const char *spec, int64_t n, int64_t m,
                               const int32_t *eu, const int32_t *ev, uint64_t seed, spk_csr *out)
{
    spk_status st = spk_check_memory(ctx, spk_csr_bytes(n, 0) + 12.0 * (2.0 * (double)m + n) +
                                     16.0 * (double)n, "%s: a graph of %lld vertices and %lld "
                                     "edges", spec, (long long)n, (long long)m);
    if (st)
        return st;
    int64_t *ptr = spk_calloc(ctx, (size_t)n + 1, sizeof *ptr);
    int64_t *next = spk_malloc(ctx, (size_t)n + 1, sizeof *next);
    int32_t *adj = NULL;
    if (!ptr || !next)
        goto nomem;
    /* the ends counted, then placed, in any order (atomics): each row is sorted below */
#pragma omp parallel for schedule(static) if(m > OMP_MIN_WORK)
    for (int64_t k = 0; k < m; k++)
        if (eu[k] != ev[k]) {
#pragma omp atomic
            ptr[eu[k] + 1]++;
#pragma omp atomic
            ptr[ev[k] + 1]++;
        }
    for (int64_t i = 0; i < n; i++)
        ptr[i + 1] += ptr[i];
    adj = spk_malloc(ctx, (size_t)(ptr[n] > 0 ? ptr[n] : 1), sizeof *adj);
    if (!adj)
        goto nomem;
    memcpy(next, ptr, (size_t)n * sizeof *next);
#pragma omp parallel for schedule(static) if(m > OMP_MIN_WORK)
    for (int64_t k = 0; k < m; k++)
        if (eu[k] != ev[k]) {
            int64_t a, b;
#pragma omp atomic capture
            a = next[eu[k]]++;
#pragma omp atomic capture
            b = next[ev[k]]++;
            adj[a] = ev[k];
            adj[b] = eu[k];
        }
    /* each row sorted and deduplicated: next[i] its distinct neighbours */
#pragma omp parallel for schedule(dynamic, 1024) if(n > OMP_MIN_WORK)
    for (int64_t i = 0; i < n; i++)
        next[i] = sort_unique(adj + ptr[i], ptr[i + 1] - ptr[i]);
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++)
        nnz += next[i] + 1;
    if ((st = spk_csr_alloc(ctx, n, n, nnz, out)))
        goto done;
    for (int64_t i = 0; i < n; i++)
        out->rowptr[i + 1] = out->rowptr[i] + next[i] + 1;
#pragma omp parallel for schedule(dynamic, 1024) if(n > OMP_MIN_WORK)
    for (int64_t i = 0; i < n; i++) {
        const int32_t *nb = adj + ptr[i];
        int64_t q = out->rowptr[i], dpos = -1;
        double offsum = 0.0;
        for (int64_t k = 0; k <= next[i]; k++) {
            if (dpos < 0 && (k == next[i] || nb[k] > i)) {
                dpos = q;
                out->colind[q++] = (int32_t)i;
            }
            if (k == next[i])
                break;
            const double v = edge_value(seed, i, nb[k]);
            out->colind[q] = nb[k];
            out->val[q++] = v;
            offsum += fabs(v);
        }
        out->val[dpos] = 1.0 + offsum;
    }
    goto done;
nomem:
    st = spk_fail(ctx, SPK_ERR_NOMEM, "%s: out of memory (a graph of %lld edges)", spec,
                  (long long)m);
done:
    spk_free(ptr);
    spk_free(next);
    spk_free(adj);
    return st;
}

/* A permutation of [0, n) from the seed: Fisher-Yates, one stream. */
static void random_labels(uint64_t seed, int64_t n, int32_t *perm)
{
    for (int64_t i = 0; i < n; i++)
        perm[i] = (int32_t)i;
    uint64_t s = row_stream(seed ^ 0x9e7au, -1);
    for (int64_t i = n - 1; i > 0; i--) {
        const int64_t j = (int64_t)(splitmix(&s) % (uint64_t)(i + 1));
        const int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* The edge arrays of m edges and the random labels of n vertices (random_labels). */
static spk_status graph_arrays(spk_context *ctx, const char *spec, int64_t n, int64_t m,
                               uint64_t seed, int32_t **eu, int32_t **ev, int32_t **perm)
{
    *eu = *ev = *perm = NULL;
    spk_status st = spk_check_memory(ctx, 8.0 * (double)m + 4.0 * (double)n, "%s: %lld edges",
                                     spec, (long long)m);
    if (st)
        return st;
    *eu = spk_malloc(ctx, (size_t)(m > 0 ? m : 1), sizeof **eu);
    *ev = spk_malloc(ctx, (size_t)(m > 0 ? m : 1), sizeof **ev);
    *perm = spk_malloc(ctx, (size_t)n, sizeof **perm);
    if (!*eu || !*ev || !*perm) {
        spk_free(*eu);
        spk_free(*ev);
        spk_free(*perm);
        *eu = *ev = *perm = NULL;
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s: out of memory (%lld edges)", spec, (long long)m);
    }
    random_labels(seed, n, *perm);
    return SPK_OK;
}

/* rmat: 2^SCALE vertices, EF 2^SCALE edges of Graph500's R-MAT (each edge SCALE quadrant
 * draws with probabilities a, b, c, d), the vertices relabelled by a random permutation as
 * Graph500 does; the edges' own streams keyed on (seed, edge), so the graph does not depend
 * on the thread count. */
static spk_status gen_rmat(spk_context *ctx, const char *spec, int scale, int64_t ef,
                           uint64_t seed, spk_csr *out)
{
    const int64_t n = (int64_t)1 << scale, m = ef * n;
    int32_t *eu, *ev, *perm;
    spk_status st = graph_arrays(ctx, spec, n, m, seed, &eu, &ev, &perm);
    if (st)
        return st;
#pragma omp parallel for schedule(static) if(m > OMP_MIN_WORK)
    for (int64_t k = 0; k < m; k++) {
        uint64_t s = row_stream(seed, k);
        int64_t u = 0, v = 0;
        for (int b = 0; b < scale; b++) {
            const double r = (double)(splitmix(&s) >> 11) * 0x1p-53;
            const int down = r >= RMAT_A + RMAT_B, right = r >= RMAT_A && (r < RMAT_A + RMAT_B ||
                                                                            r >= RMAT_A + RMAT_B + RMAT_C);
            u = 2 * u + down;
            v = 2 * v + right;
        }
        eu[k] = perm[u];
        ev[k] = perm[v];
    }
    spk_free(perm);
    st = graph_matrix(ctx, spec, n, m, eu, ev, seed, out);
    spk_free(eu);
    spk_free(ev);
    return st;
}

/* mesh2d: the N x N points of a grid, each cell cut into two triangles by one of its
 * diagonals, chosen at random: every vertex joined to its 4 grid neighbours and to 0-4
 * diagonal ones (degree 4-8, mean 6, as a Delaunay triangulation's), the vertices numbered in
 * a random order, as points drawn at random come (DIMACS10's delaunay_n* matrices). */
static spk_status gen_mesh2d(spk_context *ctx, const char *spec, int64_t N, uint64_t seed,
                             spk_csr *out)
{
    const int64_t n = N * N, m = 3 * (N - 1) * (N - 1) + 2 * (N - 1);
    int32_t *eu, *ev, *perm;
    spk_status st = graph_arrays(ctx, spec, n, m, seed, &eu, &ev, &perm);
    if (st)
        return st;
    int64_t k = 0;
    for (int64_t y = 0; y < N; y++)
        for (int64_t x = 0; x < N; x++) {
            const int64_t p = y * N + x;
            if (x + 1 < N) {
                eu[k] = perm[p];
                ev[k++] = perm[p + 1];
            }
            if (y + 1 < N) {
                eu[k] = perm[p];
                ev[k++] = perm[p + N];
            }
            if (x + 1 < N && y + 1 < N) {           /* the cell's diagonal */
                const int flip = (int)(row_stream(seed ^ 0xd1a9u, p) & 1);
                eu[k] = perm[flip ? p + 1 : p];
                ev[k++] = perm[flip ? p + N : p + N + 1];
            }
        }
    spk_free(perm);
    st = graph_matrix(ctx, spec, n, k, eu, ev, seed, out);
    spk_free(eu);
    spk_free(ev);
    return st;
}

/* ---- the spec ----------------------------------------------------------------------------- */

/* A spec parsed and checked: the generator and its parameters. */
typedef struct gen_params {
    gen_kind    kind;
    const char *name, *usage;
    int64_t     N;                 /* grid points or cells per axis; powerlaw, band: n          */
    int64_t     rows;
    double      real;              /* lame3d NU, jump3d CONTRAST, powerlaw AVG                  */
    int64_t     lo, hi, half, skew;   /* band                                                    */
    uint64_t    seed;              /* powerlaw, band                                            */
} gen_params;

/* The field [s, end) as a finite number in strtod's syntax, nothing else in it. */
static int parse_real(const char *s, const char *end, double *v)
{
    char buf[64], *e;
    if (s == end || end - s >= (ptrdiff_t)sizeof buf)
        return 0;
    memcpy(buf, s, (size_t)(end - s));
    buf[end - s] = '\0';
    errno = 0;
    const double x = strtod(buf, &e);
    if (*e || errno || !isfinite(x))
        return 0;
    *v = x;
    return 1;
}

static spk_status parse_powerlaw(spk_context *ctx, const char *spec, const char *p, gen_params *P)
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
    double avg;
    if (!parse_real(p, e, &avg) || !(avg >= 1.0 && avg <= (double)n))
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
    P->N = P->rows = n;
    P->real = avg;
    P->seed = seed;
    return SPK_OK;
}

/* rmat:SCALE[:EF[:SEED]] and mesh2d:N[:SEED]: the integer fields in order. */
static spk_status parse_graph(spk_context *ctx, const char *spec, const char *p, gen_params *P)
{
    const int rmat = P->kind == GEN_RMAT;
    int64_t v[3] = {0, RMAT_EF, 1};                  /* SCALE or N, EF, SEED */
    static const int field[2][3] = {{0, 2, -1}, {0, 1, 2}};   /* mesh2d's, rmat's */
    int got = 0;
    for (;;) {
        const char *e = field_end(p);
        const int f = got < 3 ? field[rmat][got] : -1;
        if (f < 0 || !parse_digits(p, e, &v[f]))
            return spk_fail(ctx, SPK_ERR_ARG, "%s expects %s, got '%s'", P->usage,
                            rmat ? "integers SCALE >= 1, EF >= 1 and SEED >= 0"
                                 : "integers N >= 2 and SEED >= 0", spec);
        got++;
        if (!*e)
            break;
        p = e + 1;
    }
    if (rmat) {
        if (v[0] < 1 || v[0] > RMAT_MAX_SCALE || v[1] < 1 || (double)v[1] * 2.0 * ldexp(1.0, (int)v[0]) > 1e12)
            return spk_fail(ctx, SPK_ERR_ARG, "rmat: SCALE = %lld, EF = %lld: expects 1 <= SCALE "
                            "<= %d (2^SCALE rows) and EF >= 1 with 2 EF 2^SCALE entries at most "
                            "1e12", (long long)v[0], (long long)v[1], RMAT_MAX_SCALE);
        P->N = v[0];
        P->rows = (int64_t)1 << v[0];
        P->lo = v[1];
        P->seed = (uint64_t)v[2];
        return SPK_OK;
    }
    if (v[0] < 2 || (double)v[0] * (double)v[0] > (double)INT32_MAX)
        return spk_fail(ctx, SPK_ERR_ARG, "mesh2d: N = %lld: expects 2 <= N with N^2 rows at most "
                        "%d", (long long)v[0], INT32_MAX);
    P->N = v[0];
    P->rows = v[0] * v[0];
    P->seed = (uint64_t)v[2];
    return SPK_OK;
}

/* band:N:MIN:MAX[:HALF[:SKEW[:SEED]]]: the fields in order, each an integer. */
static spk_status parse_band(spk_context *ctx, const char *spec, const char *p, gen_params *P)
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
    P->N = P->rows = n;
    P->lo = lo;
    P->hi = hi;
    P->half = half;
    P->skew = v[4];
    P->seed = (uint64_t)v[5];
    return SPK_OK;
}

/* lame3d's NU or jump3d's CONTRAST, the field after N: its default, or the value in range. */
static spk_status parse_material(spk_context *ctx, const char *p, gen_params *P)
{
    const int lame = P->kind == GEN_LAME3D;
    const char *what = lame ? "NU" : "CONTRAST";
    P->real = lame ? LAME3D_NU : JUMP3D_CONTRAST;
    if (!*p)
        return SPK_OK;
    p++;                                         /* the ':' */
    const char *e = field_end(p);
    if (*e)
        return spk_fail(ctx, SPK_ERR_ARG, "%s expects nothing after %s, got '%s'", P->usage, what,
                        e);
    if (!parse_real(p, e, &P->real))
        return spk_fail(ctx, SPK_ERR_ARG, "%s expects %s as a number, got '%.*s'", P->usage, what,
                        (int)(e - p), p);
    if (lame && !(P->real > -1.0 && P->real < 0.5))
        return spk_fail(ctx, SPK_ERR_ARG, "lame3d: NU = %g: a Poisson ratio in (-1, 0.5) is "
                        "needed (the material is then stable, the matrix SPD)", P->real);
    if (!lame && !(P->real >= JUMP3D_CONTRAST_MIN && P->real <= JUMP3D_CONTRAST_MAX))
        return spk_fail(ctx, SPK_ERR_ARG, "jump3d: CONTRAST = %g: expects %g <= CONTRAST <= %g",
                        P->real, JUMP3D_CONTRAST_MIN, JUMP3D_CONTRAST_MAX);
    return SPK_OK;
}

/* The grid generators: N, lame3d's and jump3d's optional material field, and the row count,
 * which 32-bit column indices bound. */
static spk_status parse_grid(spk_context *ctx, const char *spec, const char *p, gen_params *P)
{
    const char *e = field_end(p);
    if (!parse_count(p, e, &P->N))
        return spk_fail(ctx, SPK_ERR_ARG, "%s expects an integer N in [1, 2^63), got '%.*s'",
                        P->usage, (int)(e - p), p);
    spk_status st;
    if (P->kind == GEN_LAME3D || P->kind == GEN_JUMP3D) {
        st = parse_material(ctx, e, P);
        if (st)
            return st;
    } else if (*e) {
        return spk_fail(ctx, SPK_ERR_ARG, "%s takes one parameter, got '%s'", P->usage, spec);
    }
    const int64_t N = P->N;
    switch (P->kind) {
    case GEN_POISSON2D: return check_rows(ctx, P->name, N, 2, 1, &P->rows);
    case GEN_ELASTICITY3D: return check_rows(ctx, P->name, N, 3, 3, &P->rows);
    case GEN_LAME3D: {
        const double r = 3.0 * (double)N * ((double)N + 1.0) * ((double)N + 1.0);
        if (r > (double)INT32_MAX)
            return spk_fail(ctx, SPK_ERR_ARG, "lame3d:N: N = %lld gives %.0f rows, more than the "
                            "%d that 32-bit column indices allow", (long long)N, r, INT32_MAX);
        P->rows = 3 * N * (N + 1) * (N + 1);
        return SPK_OK;
    }
    default: return check_rows(ctx, P->name, N, 3, 1, &P->rows);
    }
}

static spk_status parse_spec(spk_context *ctx, const char *spec, gen_params *P)
{
    memset(P, 0, sizeof *P);
    const int g = find_generator(spec);
    if (g < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "unknown generator '%.*s' (known: " KNOWN_GENERATORS ")"
                        " (multigrid test problems: " KNOWN_MULTIGRID_GENERATORS ")",
                        (int)strcspn(spec, ":"), spec);
    P->kind = generators[g].kind;
    P->name = generators[g].name;
    P->usage = generators[g].usage;
    const char *p = spec + strlen(P->name) + 1;
    if (P->kind == GEN_POWERLAW)
        return parse_powerlaw(ctx, spec, p, P);
    if (P->kind == GEN_BAND)
        return parse_band(ctx, spec, p, P);
    if (P->kind == GEN_RMAT || P->kind == GEN_MESH2D)
        return parse_graph(ctx, spec, p, P);
    return parse_grid(ctx, spec, p, P);
}

spk_status spk_generate_csr(spk_context *ctx, const char *spec, spk_csr *out)
{
    static const double block3[9] = {4, 1, 1, 1, 4, 1, 1, 1, 4};   /* SPD: eigenvalues 6 3 3 */
    if (!spec || !out)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_generate_csr: NULL argument");
    memset(out, 0, sizeof *out);
    gen_params P;
    spk_status st = parse_spec(ctx, spec, &P);
    if (st)
        return st;
    stencil S = {P.N, 3, 0, 1, 6.0, -1.0, NULL};
    switch (P.kind) {
    case GEN_POWERLAW: return gen_powerlaw(ctx, spec, P.N, P.real, P.seed, out);
    case GEN_BAND: return gen_band(ctx, spec, P.N, P.lo, P.hi, P.half, P.skew, P.seed, out);
    case GEN_RMAT: return gen_rmat(ctx, spec, (int)P.N, P.lo, P.seed, out);
    case GEN_MESH2D: return gen_mesh2d(ctx, spec, P.N, P.seed, out);
    case GEN_LAME3D: return gen_lame(ctx, spec, P.N, P.real, P.rows, out);
    case GEN_JUMP3D: return gen_jump(ctx, spec, P.N, P.real, P.rows, out);
    case GEN_POISSON2D: S.dim = 2; S.diag = 4.0; break;
    case GEN_POISSON3D: break;
    case GEN_POISSON3D27: S.box = 1; S.diag = 26.0; break;
    case GEN_ELASTICITY3D: S.box = 1; S.diag = 26.0; S.dof = 3; S.B = block3; break;
    }
    return gen_stencil(ctx, spec, &S, P.rows, out);
}

/* ---- node coordinates --------------------------------------------------------------------- */

spk_status spk_generate_coords(spk_context *ctx, const char *spec, double **xyz, int64_t *nodes,
                               int *dim)
{
    if (xyz)
        *xyz = NULL;                             /* on every failure, NULL arguments included */
    if (nodes)
        *nodes = 0;
    if (dim)
        *dim = 0;
    if (!ctx || !spec || !xyz || !nodes || !dim)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_generate_coords: NULL argument");
    gen_params P;
    spk_status st = parse_spec(ctx, spec, &P);
    if (st)
        return st;
    if (P.kind == GEN_POWERLAW || P.kind == GEN_BAND || P.kind == GEN_RMAT ||
        P.kind == GEN_MESH2D)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "%s: %s matrices have no node coordinates "
                        "(the grid generators have: " COORD_GENERATORS ")", spec, P.name);
    const int64_t N = P.N, d = P.kind == GEN_POISSON2D ? 2 : 3;
    const int lame = P.kind == GEN_LAME3D;
    const int64_t count = P.kind == GEN_ELASTICITY3D || lame ? P.rows / 3 : P.rows;
    st = spk_check_memory(ctx, 8.0 * (double)(count * d), "%s: the coordinates of %lld nodes",
                          spec, (long long)count);
    if (st)
        return st;
    double *c = spk_malloc(ctx, (size_t)(count * d), sizeof *c);
    if (!c)
        return spk_fail(ctx, SPK_ERR_NOMEM, "%s: out of memory (%zu bytes of coordinates)", spec,
                        (size_t)(count * d) * sizeof *c);
    /* lame3d: the nodes i / N, i in [1, N] along x, [0, N] along y and z; the others: the
     * interior points (x + 1) / (N + 1), x in [0, N) */
    const int64_t M = lame ? N + 1 : N;          /* points along y (and z) */
    const double scale = lame ? (double)N : (double)(N + 1);
#pragma omp parallel for schedule(static) if(count > OMP_MIN_WORK)
    for (int64_t v = 0; v < count; v++) {
        const int64_t i = v % N + 1, j = (v / N) % M + !lame, k = v / (N * M) + !lame;
        c[d * v] = (double)i / scale;
        c[d * v + 1] = (double)j / scale;
        if (d == 3)
            c[d * v + 2] = (double)k / scale;
    }
    *xyz = c;
    *nodes = count;
    *dim = (int)d;
    return SPK_OK;
}
