/* kernels/dia_cpu.c -- DIA (diagonal) SpMV on the host, for matrices whose entries lie on a few
 * diagonals: finite-difference stencils on structured grids, banded matrices. Diagonal d holds
 * the entries a(i, i + off[d]) and is stored as a dense column of nrows values, val[d * nrows +
 * i], 0 where the diagonal has no entry in row i (Saad, Iterative Methods for Sparse Linear
 * Systems, 2nd ed., sec. 3.4; Bell & Garland SC'09, sec. 3.1; CUSP dia_matrix; SciPy
 * dia_matrix). No column indices are stored and x is read at i + off[d], contiguous in i, so
 * the kernel is a handful of dense streams that vectorise: 8 bytes per slot against CSR's 12
 * per entry + 8 per row, and no per-entry index load, gather or row-end branch.
 *
 * Cost: 8 * ndiag * nrows bytes of values (the fill ndiag * nrows / nnz counts the slots that
 * hold no entry), plus, for each row that does not hold an entry on every diagonal (the "fix"
 * rows: the grid's boundary rows, and every row where a diagonal's column falls outside the
 * matrix), its index and a bit mask of the diagonals it does hold.
 *
 * Same bits as CSR. Each row sums its entries in column order (the diagonals in ascending
 * offset), starting from 0.0, exactly as spk_csr_spmv_ref does, so y matches the reference
 * bit for bit: the kernel computes a block of rows one diagonal after the other, one row
 * per vector lane, each lane adding its diagonals in order (the lanes never mix, so
 * vectorising reorders nothing). A slot without an entry adds 0 * x_j there, which leaves the
 * sum as it was while x_j is finite (the sum is +0 or nonzero, never -0); so the SpMV first
 * checks that x is all finite (one read of x), and only when it is not are the fix rows
 * recomputed with the slots their mask does not set skipped (0 * inf would be NaN). This
 * holds in the default floating-point environment (round to nearest, no flush to zero),
 * which the reference assumes too: rounding down makes +0 + -0 = -0. On x86-64 the row
 * kernel is also compiled for AVX2 and chosen at run time; AVX2 without FMA keeps every
 * multiply and add a separate IEEE operation, as the SSE2 build does.
 *
 * The fp32 twin, dia32-cpu (the operator of a mixed-precision solve, src/mixed.c): the same
 * layout with the slots in float, 4 bytes a slot in place of 8; CSR's own twin (csr32-cpu)
 * still reads 8 bytes a nonzero, so on a stencil this is where fp32 values save traffic. Its
 * row kernel is this one, with (double)val32[q] in place of val[q] (exact): AVX2 widens four
 * floats at a time (vcvtps2pd) where the fp64 kernel loads four doubles, and the lanes and
 * each row's order are unchanged, so its y has the bits of dia-cpu on the rounded values, as
 * the plain loop does; the fix rows and the finiteness check are the same.
 *
 * The CPU-only format: the CUDA backends have no DIA row (the GPU rule chooses ELL, whose
 * compact-index kernel serves the same matrices; docs/formats.md). */
#include "formats.h"

#include <string.h>

/* Loops shorter than this run on one thread: a parallel region's fork and join (microseconds,
 * far more on a loaded machine) outweigh the work below it. */
#define OMP_MIN_WORK 16384

/* The parallel loop's unit is the chunk of the CPU's chunked sums (spk_chunks(n): 256 chunks
 * above 8192 rows, else one; src/spk_internal.h), which also indexes the fix rows (fix_ptr),
 * so a thread recomputes only rows of its own chunk, no two threads write one y, and the
 * fused p'q (spmv_dot) sums each chunk exactly as the CPU's dot does. A chunk is computed in
 * blocks of SPK_DIA_ROW_BLOCK rows.
 *
 * Rows per block: the block's sums (8 KiB) stay in L1 while each diagonal streams 8 KiB of
 * values and of x.
 * Measured (one-off programs) in the CG loop on poisson3d:64 (2-core EPYC, processes, 3 rounds at 2
 * threads and two at 1): SpMV 0.66-0.87 / 0.71-0.79 / 0.68-0.86 / 0.67-0.89 ms with blocks of
 * 512 / 1024 / 2048 / 4096 rows at 2 threads, 1.41-1.79 / 1.39 / 1.62-1.65 / 1.45-1.75 at one:
 * no size stands out of the noise; 1024 had the best worst case. */
#ifndef SPK_DIA_ROW_BLOCK
#define SPK_DIA_ROW_BLOCK 1024
#endif

void spk_dia_fmt_free(spk_dia_fmt *f)
{
    if (!f)
        return;
    spk_free(f->off);
    spk_free(f->val);
    spk_free(f->val32);
    spk_free(f->fix_row);
    spk_free(f->fix_mask);
    spk_free(f->fix_ptr);
    memset(f, 0, sizeof *f);
}


/* Index of offset o in the ascending off[0 .. nd), starting the search at *d (the entries of a
 * row are met in ascending column order, so the position only moves forward). */
static int64_t find_diag(const int64_t *off, int64_t nd, int64_t o, int64_t *d)
{
    while (*d < nd && off[*d] < o)
        (*d)++;
    return *d;
}

/* Write A's values into the slots of the layout's pattern (the caller has zeroed them): into
 * val, or rounded to float into val32 when val is NULL (an fp32 twin's). */
static void scatter_values(const spk_csr *A, const int64_t *off, int64_t nd, double *val,
                           float *val32)
{
    const int64_t n = A->nrows;
#pragma omp parallel for schedule(static) if(A->nnz > OMP_MIN_WORK)
    for (int64_t i = 0; i < n; i++) {
        int64_t d = 0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const int64_t q = find_diag(off, nd, (int64_t)A->colind[p] - i, &d) * n + i;
            if (val)
                val[q] = A->val[p];
            else
                val32[q] = (float)A->val[p];
        }
    }
}

size_t spk_dia_bytes_for(int64_t nrows, int64_t ndiag, int64_t nfix)
{
    const double words = (double)((ndiag + 63) / 64);
    const double b = 8.0 * (double)ndiag * (double)nrows + 8.0 * (double)ndiag +
                     8.0 * (1.0 + words) * (double)nfix + 8.0 * (double)(spk_chunks(nrows) + 1);
    return b >= (double)SIZE_MAX ? SIZE_MAX : (size_t)b;
}

size_t spk_dia_bytes(const spk_dia_fmt *f)
{
    const size_t b = spk_dia_bytes_for(f->nrows, f->ndiag, f->nfix);
    return f->val32 ? b - 4 * (size_t)f->ndiag * (size_t)f->nrows : b;   /* float slots */
}

spk_status spk_dia_from_csr(spk_context *ctx, const spk_csr *A, spk_dia_fmt *out)
{
    const int64_t n = A->nrows;
    memset(out, 0, sizeof *out);
    int64_t off[SPK_DIA_MAX_DIAGS];
    const int64_t nd = spk_dia_offsets(A, off);
    if (nd > SPK_DIA_MAX_DIAGS)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED,
                        "dia: the entries lie on more than %d diagonals: use csr",
                        SPK_DIA_MAX_DIAGS);
    const double slots = (double)nd * (double)n;
    if (slots > SPK_DIA_MAX_FILL * (double)A->nnz)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED,
                        "dia: %lld diagonals x %lld rows = %.0f slots for %lld nonzeros, a fill "
                        "of %.2fx, above the %.0fx limit: use csr", (long long)nd, (long long)n,
                        slots, (long long)A->nnz, A->nnz ? slots / (double)A->nnz : slots,
                        SPK_DIA_MAX_FILL);
    /* a row holds an entry on every diagonal exactly when its length is nd */
    int64_t nfix = 0;
    for (int64_t i = 0; i < n; i++)
        nfix += A->rowptr[i + 1] - A->rowptr[i] < nd;
    const int64_t words = (nd + 63) / 64, nb = spk_chunks(n);
    out->nrows = n;
    out->ncols = A->ncols;
    out->nnz = A->nnz;
    out->ndiag = nd;
    out->nfix = nfix;
    out->words = words;
    out->off = spk_malloc(ctx, (size_t)(nd > 0 ? nd : 1), sizeof *out->off);
    out->val = spk_malloc(ctx, (size_t)(nd * n > 0 ? nd * n : 1), sizeof *out->val);
    out->fix_row = spk_malloc(ctx, (size_t)(nfix > 0 ? nfix : 1), sizeof *out->fix_row);
    out->fix_mask = spk_calloc(ctx, (size_t)(nfix * words > 0 ? nfix * words : 1),
                               sizeof *out->fix_mask);
    out->fix_ptr = spk_malloc(ctx, (size_t)nb + 1, sizeof *out->fix_ptr);
    if (!out->off || !out->val || !out->fix_row || !out->fix_mask || !out->fix_ptr) {
        spk_dia_fmt_free(out);
        return spk_fail(ctx, SPK_ERR_NOMEM, "dia: out of memory allocating %.0f bytes (%lld "
                        "diagonals x %lld rows)", (double)spk_dia_bytes_for(n, nd, nfix),
                        (long long)nd, (long long)n);
    }
    memcpy(out->off, off, (size_t)nd * sizeof *off);
    memset(out->val, 0, (size_t)(nd * n) * sizeof *out->val);
    scatter_values(A, out->off, nd, out->val, NULL);

    /* the fix rows in ascending order, indexed by chunk, with the diagonals each one holds */
    int64_t k = 0;
    for (int64_t b = 0; b < nb; b++) {
        out->fix_ptr[b] = k;
        const int64_t i1 = spk_chunk_lo(n, (int)nb, (int)b + 1);
        for (int64_t i = spk_chunk_lo(n, (int)nb, (int)b); i < i1; i++) {
            if (A->rowptr[i + 1] - A->rowptr[i] == nd)
                continue;
            uint64_t *mask = out->fix_mask + k * words;
            int64_t d = 0;
            for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                const int64_t j = find_diag(out->off, nd, (int64_t)A->colind[p] - i, &d);
                mask[j / 64] |= (uint64_t)1 << (j % 64);
            }
            out->fix_row[k++] = i;
        }
    }
    out->fix_ptr[nb] = k;
    return SPK_OK;
}

void spk_dia_fill_values(const spk_csr *A, const spk_dia_fmt *f, double *val)
{
    memset(val, 0, (size_t)(f->ndiag * f->nrows) * sizeof *val);
    scatter_values(A, f->off, f->ndiag, val, NULL);
}

void spk_dia_fill_values32(const spk_csr *A, const spk_dia_fmt *f, float *val)
{
    memset(val, 0, (size_t)(f->ndiag * f->nrows) * sizeof *val);
    scatter_values(A, f->off, f->ndiag, NULL, val);
}

/* 1 if row i holds an entry on diagonal d (fix rows by their mask; *k walks the fix list in
 * ascending row order alongside i). */
static int holds(const spk_dia_fmt *f, int64_t i, int64_t d, int64_t k)
{
    if (k >= f->nfix || f->fix_row[k] != i)
        return 1;
    return (int)((f->fix_mask[k * f->words + d / 64] >> (d % 64)) & 1);
}

spk_status spk_dia_to_csr(spk_context *ctx, const spk_dia_fmt *f, spk_csr *out)
{
    const int64_t n = f->nrows, nd = f->ndiag;
    spk_status st = spk_csr_alloc(ctx, n, f->ncols, f->nnz, out);
    if (st)
        return st;
    int64_t w = 0, k = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t d = 0; d < nd; d++)
            if (holds(f, i, d, k)) {
                out->colind[w] = (int32_t)(i + f->off[d]);
                out->val[w] = spk_val(f->val, f->val32, d * n + i);
                w++;
            }
        if (k < f->nfix && f->fix_row[k] == i)
            k++;
        out->rowptr[i + 1] = w;
    }
    return SPK_OK;
}

/* ---- the kernel ----------------------------------------------------------------------------- */

/* y[i] from the row's sum, as spk_csr_spmv_ref writes it. */
static inline double dia_out(double s, double alpha, double beta, const double *y, int64_t i)
{
    return beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
}

/* GCC's -O3 unroll-and-jam fuses two diagonals' passes into one loop and then, not seeing
 * that the second one's x is contiguous, loads it element by element (an emulated gather):
 * the kernel ran ~1.5x slower. Off for the row kernel. */
#if defined(__GNUC__) && !defined(__clang__)
#define SPK_DIA_NO_JAM __attribute__((optimize("no-loop-unroll-and-jam")))
#else
#define SPK_DIA_NO_JAM
#endif

/* Rows [a, b) of one block (b - a <= SPK_DIA_ROW_BLOCK): the block's sums stay in L1 while
 * the diagonals are streamed one after the other, each over the rows whose column it has in
 * [0, ncols), a contiguous run of values and of x, so only two streams are open at a time;
 * each row adds its diagonals in order. A slot without an entry adds its 0 * x: exact for a
 * finite x (dia_chunk), and a fix row is recomputed otherwise. The values are v64 (dia-cpu)
 * or v32 (dia32-cpu), x and y fp64 (x, y) or, for the twin's spmv_dot32, float (x32, y32:
 * each sum rounded once into y32), the others constant NULLs where the body is inlined. */
static inline __attribute__((always_inline)) SPK_DIA_NO_JAM void
dia_rows_body(const spk_dia_fmt *f, const double *v64, const float *v32, int64_t a, int64_t b,
              double alpha, const double *x, const float *x32, double beta, double *y,
              float *y32)
{
    const int64_t n = f->nrows, nd = f->ndiag, m = b - a;
    const int64_t *const off = f->off;
    double s[SPK_DIA_ROW_BLOCK];
    for (int64_t r = 0; r < m; r++)
        s[r] = 0.0;
    for (int64_t d = 0; d < nd; d++) {
        const int64_t r0 = -off[d] - a > 0 ? -off[d] - a : 0;
        const int64_t r1 = f->ncols - off[d] - a < m ? f->ncols - off[d] - a : m;
        if (r0 >= r1)
            continue;
        /* pointers formed only inside the arrays: rows [a + r0, a + r1) of diagonal d, its
         * slots from q on, x from column a + r0 + off[d] */
        const int64_t q = d * n + a + r0, j = a + r0 + off[d];
        double *sd = s + r0;
#pragma GCC ivdep
        for (int64_t r = 0; r < r1 - r0; r++)
            sd[r] += spk_val(v64, v32, q + r) * (x32 ? (double)x32[j + r] : x[j + r]);
    }
    for (int64_t r = 0; r < m; r++) {
        if (y32)
            y32[a + r] = (float)s[r];
        else
            y[a + r] = dia_out(s[r], alpha, beta, y, a + r);
    }
}

typedef void (*dia_rows_fn)(const spk_dia_fmt *, int64_t, int64_t, double, const double *,
                            double, double *);

static SPK_DIA_NO_JAM void dia_rows_plain(const spk_dia_fmt *f, int64_t a, int64_t b, double alpha,
                           const double *x, double beta, double *y)
{
    dia_rows_body(f, f->val, NULL, a, b, alpha, x, NULL, beta, y, NULL);
}

static SPK_DIA_NO_JAM void dia32_rows_plain(const spk_dia_fmt *f, int64_t a, int64_t b,
                                            double alpha, const double *x, double beta, double *y)
{
    dia_rows_body(f, NULL, f->val32, a, b, alpha, x, NULL, beta, y, NULL);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* AVX2 only, not FMA: a fused multiply-add would round once where the reference rounds twice. */
__attribute__((target("avx2"))) static SPK_DIA_NO_JAM void
dia_rows_avx2(const spk_dia_fmt *f, int64_t a, int64_t b, double alpha, const double *x,
              double beta, double *y)
{
    dia_rows_body(f, f->val, NULL, a, b, alpha, x, NULL, beta, y, NULL);
}

/* Four floats widened (vcvtps2pd, exact) where dia_rows_avx2 loads four doubles. */
__attribute__((target("avx2"))) static SPK_DIA_NO_JAM void
dia32_rows_avx2(const spk_dia_fmt *f, int64_t a, int64_t b, double alpha, const double *x,
                double beta, double *y)
{
    dia_rows_body(f, NULL, f->val32, a, b, alpha, x, NULL, beta, y, NULL);
}

static int dia_have_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

/* The row kernel for this CPU, of the fp64 layout or (fp32) of the twin's. */
static dia_rows_fn dia_rows_pick(int fp32)
{
    if (!dia_have_avx2())
        return fp32 ? dia32_rows_plain : dia_rows_plain;
    return fp32 ? dia32_rows_avx2 : dia_rows_avx2;
}
#else
static dia_rows_fn dia_rows_pick(int fp32) { return fp32 ? dia32_rows_plain : dia_rows_plain; }
#endif

/* The row kernel of f's values: the plain one when `plain`, else the one for this CPU. */
static dia_rows_fn dia_rows_for(const spk_dia_fmt *f, int plain)
{
    if (plain)
        return f->val32 ? dia32_rows_plain : dia_rows_plain;
    return dia_rows_pick(f->val32 != NULL);
}

const char *spk_dia_cpu_kernel(void)
{
    return dia_rows_pick(0) == dia_rows_plain ? "plain" : "avx2";
}

/* finite_sum (the caller's, declared before the parallel region, so shared) += x_j * 0 over
 * j < n, in the enclosing parallel region (the implicit barrier of the loop publishes it):
 * 0 when every x_j is finite, NaN as soon as one is Inf or NaN. With x all finite a slot
 * without an entry adds 0 * x_j = +-0, which leaves a row's sum as it was (the sum starts at
 * +0 and is never -0: +0 + -0 is +0), so the block pass alone gives the reference's bits.
 * One read of x. */
#define SPK_DIA_FINITE(x, n)                                                                 \
    _Pragma("omp for schedule(static) reduction(+ : finite_sum)")                            \
    for (int64_t j_ = 0; j_ < (n); j_++)                                                     \
        finite_sum += (x)[j_] * 0.0

/* Chunk c: its rows in blocks, each block's pass; where x is not all finite, the block's fix
 * rows are then recomputed with only the slots their mask sets (their old y, which the pass
 * overwrites, kept first when beta needs it). */
static void dia_chunk(const spk_dia_fmt *f, dia_rows_fn rows, int c, int nc, int finite,
                      double alpha, const double *x, double beta, double *y)
{
    const int64_t n = f->nrows, nd = f->ndiag;
    const int64_t c0 = spk_chunk_lo(n, nc, c), c1 = spk_chunk_lo(n, nc, c + 1);
    int64_t k = f->fix_ptr[c];
    for (int64_t i0 = c0; i0 < c1; i0 += SPK_DIA_ROW_BLOCK) {
        const int64_t i1 = i0 + SPK_DIA_ROW_BLOCK < c1 ? i0 + SPK_DIA_ROW_BLOCK : c1;
        if (finite) {
            rows(f, i0, i1, alpha, x, beta, y);
            continue;
        }
        const int64_t k0 = k;
        while (k < f->fix_ptr[c + 1] && f->fix_row[k] < i1)
            k++;
        double old[SPK_DIA_ROW_BLOCK];
        if (beta != 0.0)
            for (int64_t j = k0; j < k; j++)
                old[j - k0] = y[f->fix_row[j]];
        rows(f, i0, i1, alpha, x, beta, y);
        for (int64_t j = k0; j < k; j++) {
            const int64_t i = f->fix_row[j];
            const uint64_t *mask = f->fix_mask + j * f->words;
            double s = 0.0;
            for (int64_t d = 0; d < nd; d++)
                if ((mask[d / 64] >> (d % 64)) & 1)
                    s += spk_val(f->val, f->val32, d * n + i) * x[i + f->off[d]];
            y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * old[j - k0];
        }
    }
}

void spk_dia_spmv_host(const spk_dia_fmt *f, int plain, double alpha, const double *x,
                       double beta, double *y)
{
    const dia_rows_fn rows = dia_rows_for(f, plain);
    const int nc = spk_chunks(f->nrows);
    double finite_sum = 0.0;
#pragma omp parallel if(nc > 1)
    {
        SPK_DIA_FINITE(x, f->ncols);
        const int finite = finite_sum == 0.0;
#pragma omp for schedule(static)
        for (int c = 0; c < nc; c++)
            dia_chunk(f, rows, c, nc, finite, alpha, x, beta, y);
    }
}

double spk_dia_spmv_dot_host(const spk_dia_fmt *f, int plain, const double *x, double *y)
{
    const dia_rows_fn rows = dia_rows_for(f, plain);
    const int nc = spk_chunks(f->nrows);
    double part[SPK_CHUNKS];
    double finite_sum = 0.0;
#pragma omp parallel if(nc > 1)
    {
        SPK_DIA_FINITE(x, f->ncols);
        const int finite = finite_sum == 0.0;
#pragma omp for schedule(static)
        for (int c = 0; c < nc; c++) {
            dia_chunk(f, rows, c, nc, finite, 1.0, x, 0.0, y);
            part[c] = spk_dot_chunk(x, y, spk_chunk_lo(f->nrows, nc, c),
                                    spk_chunk_lo(f->nrows, nc, c + 1), nc > 1);
        }
    }
    return spk_chunks_sum(part, nc);
}

/* ---- fp32 vectors (the twin's spmv_dot32, mixed precision's inner CG) --------------------
 * dia_rows_body on float x into float y (each row summed in double over (double)a *
 * (double)x_j in the same order, then rounded once, so y is the fp64-vector product on the
 * same x, rounded: tests/test_fp32.c), and dia_chunk's fix rows the same way. */
typedef void (*dia32v_rows_fn)(const spk_dia_fmt *, int64_t, int64_t, const float *, float *);

static SPK_DIA_NO_JAM void dia32v_rows_plain(const spk_dia_fmt *f, int64_t a, int64_t b,
                                             const float *x, float *y)
{
    dia_rows_body(f, NULL, f->val32, a, b, 1.0, NULL, x, 0.0, NULL, y);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) static SPK_DIA_NO_JAM void
dia32v_rows_avx2(const spk_dia_fmt *f, int64_t a, int64_t b, const float *x, float *y)
{
    dia_rows_body(f, NULL, f->val32, a, b, 1.0, NULL, x, 0.0, NULL, y);
}

static dia32v_rows_fn dia32v_rows_pick(void)
{
    return dia_have_avx2() ? dia32v_rows_avx2 : dia32v_rows_plain;
}
#else
static dia32v_rows_fn dia32v_rows_pick(void) { return dia32v_rows_plain; }
#endif

/* dia_chunk's y = A x on float vectors (alpha 1, beta 0), and its chunk of x'y in double. */
static double dia32v_chunk(const spk_dia_fmt *f, dia32v_rows_fn rows, int c, int nc, int finite,
                           const float *x, float *y)
{
    const int64_t n = f->nrows, nd = f->ndiag;
    const int64_t c0 = spk_chunk_lo(n, nc, c), c1 = spk_chunk_lo(n, nc, c + 1);
    int64_t k = f->fix_ptr[c];
    for (int64_t i0 = c0; i0 < c1; i0 += SPK_DIA_ROW_BLOCK) {
        const int64_t i1 = i0 + SPK_DIA_ROW_BLOCK < c1 ? i0 + SPK_DIA_ROW_BLOCK : c1;
        rows(f, i0, i1, x, y);
        if (finite)
            continue;
        for (; k < f->fix_ptr[c + 1] && f->fix_row[k] < i1; k++) {
            const int64_t i = f->fix_row[k];
            const uint64_t *mask = f->fix_mask + k * f->words;
            double s = 0.0;
            for (int64_t d = 0; d < nd; d++)
                if ((mask[d / 64] >> (d % 64)) & 1)
                    s += (double)f->val32[d * n + i] * (double)x[i + f->off[d]];
            y[i] = (float)s;
        }
    }
    double dot = 0.0;
#pragma omp simd reduction(+ : dot) if (nc > 1)
    for (int64_t i = c0; i < c1; i++)
        dot += (double)x[i] * (double)y[i];
    return dot;
}

static spk_status dia_spmv_dot32(spk_context *ctx, const void *state, const float *x, float *y,
                                 const spk_dot_sink *sink)
{
    const spk_dia_fmt *f = state;
    if (!f || f->nrows != f->ncols || (!f->val32 && f->nrows * f->ndiag > 0))
        return spk_fail(ctx, SPK_ERR_ARG, "dia32-cpu spmv_dot32: %s",
                        !f ? "NULL state (not prepared)" : f->nrows != f->ncols
                                                            ? "the matrix is not square"
                                                            : "the layout holds fp64 values");
    if (sink->skip && *sink->skip)
        return SPK_OK;
    const dia32v_rows_fn rows = dia32v_rows_pick();
    const int nc = spk_chunks(f->nrows);
    double part[SPK_CHUNKS];
    double finite_sum = 0.0;
#pragma omp parallel if(nc > 1)
    {
#pragma omp for schedule(static) reduction(+ : finite_sum)
        for (int64_t j = 0; j < f->ncols; j++)
            finite_sum += (double)x[j] * 0.0;
        const int finite = finite_sum == 0.0;
#pragma omp for schedule(static)
        for (int c = 0; c < nc; c++)
            part[c] = dia32v_chunk(f, rows, c, nc, finite, x, y);
    }
    *sink->out = spk_chunks_sum(part, nc);
    return SPK_OK;
}

/* The row a layout belongs to, for messages: the fp32 twin's values are in val32. */
static const char *dia_row(const spk_dia_fmt *f) { return f->val32 ? "dia32-cpu" : "dia-cpu"; }

/* dia-cpu's and dia32-cpu's: the layout's values say which kernel runs. */
static spk_status dia_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                           double beta, double *y)
{
    if (!state)
        return spk_fail(ctx, SPK_ERR_ARG, "dia spmv: NULL state (not prepared)");
    spk_dia_spmv_host((const spk_dia_fmt *)state, 0, alpha, x, beta, y);
    return SPK_OK;
}

static void dia_destroy(void *state)
{
    spk_dia_fmt_free(state);
    spk_free(state);
}

static spk_status dia_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    if (!A || !state)
        return spk_fail(ctx, SPK_ERR_ARG, "dia-cpu setup: NULL argument");
    *state = NULL;
    spk_dia_fmt *f = spk_calloc(ctx, 1, sizeof *f);
    if (!f)
        return spk_fail(ctx, SPK_ERR_NOMEM, "dia-cpu setup: out of memory (%zu bytes)", sizeof *f);
    spk_status st = spk_dia_from_csr(ctx, A, f);
    if (st) {
        spk_free(f);
        return st;
    }
    *state = f;
    return SPK_OK;
}

/* dia-cpu's layout, its slots then rounded to float. */
static spk_status dia32_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    spk_status st = dia_setup(ctx, A, state);
    if (st)
        return st;
    spk_dia_fmt *f = *state;
    st = spk_values_fp32(ctx, "dia32-cpu setup", f->ndiag * f->nrows, &f->val, &f->val32);
    if (st) {
        dia_destroy(f);
        *state = NULL;
    }
    return st;
}

/* q = A p and p'q in one pass (CG, solvers/cg.c): each chunk's p'q taken while its q is in
 * cache, by the CPU dot's own chunk body, so the sum has the bits of spmv then dot_sink. */
static spk_status dia_spmv_dot(spk_context *ctx, const void *state, const double *x, double *y,
                               const spk_dot_sink *sink)
{
    const spk_dia_fmt *f = state;
    if (!f || f->nrows != f->ncols)
        return spk_fail(ctx, SPK_ERR_ARG, "%s spmv_dot: %s", f ? dia_row(f) : "dia",
                        f ? "the matrix is not square" : "NULL state (not prepared)");
    if (sink->skip && *sink->skip)
        return SPK_OK;
    *sink->out = spk_dia_spmv_dot_host(f, 0, x, y);
    return SPK_OK;
}

/* The slots refilled in place, in float for the twin. */
static spk_status dia_update(spk_context *ctx, void *state, const spk_csr *A)
{
    spk_dia_fmt *f = state;
    if (!f || f->nrows != A->nrows || f->nnz != A->nnz)
        return spk_fail(ctx, SPK_ERR_ARG, "%s update: the layout does not match the matrix",
                        f ? dia_row(f) : "dia");
    if (f->val32)
        spk_dia_fill_values32(A, f, f->val32);
    else
        spk_dia_fill_values(A, f, f->val);
    return SPK_OK;
}

const spk_spmv_backend spk_backend_dia32_cpu = {
    .name = "dia32-cpu",
    .format = SPK_FMT_DIA,
    .device = SPK_DEVICE_CPU,
    .setup = dia32_setup,
    .spmv = dia_spmv,
    .destroy = dia_destroy,
    .update = dia_update,
    .spmv_dot = dia_spmv_dot,
    .spmv_dot32 = dia_spmv_dot32,
};

const spk_spmv_backend spk_backend_dia_cpu = {
    .name = "dia-cpu",
    .format = SPK_FMT_DIA,
    .device = SPK_DEVICE_CPU,
    .setup = dia_setup,
    .spmv = dia_spmv,
    .destroy = dia_destroy,
    .update = dia_update,
    .spmv_dot = dia_spmv_dot,
    /* update_device: the host refill is the update */
    .fp32 = &spk_backend_dia32_cpu,
};
