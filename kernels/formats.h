/* kernels/formats.h -- host layouts of the eight formats, built from the canonical CSR by the
 * conversions in <fmt>_cpu.c. The CPU backends compute on them directly; the CUDA backends
 * build the same layout on the host and upload it, so the two can never disagree on layout.
 * Each layout holds its values in double (val) or, in an fp32 twin's layout
 * (spk_spmv_backend.fp32), in float (val32, val NULL): the indices are the same either way. */
#ifndef SPK_FORMATS_H
#define SPK_FORMATS_H

#include "../src/spk_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Padding slot marker in ELL/HYB column arrays: the kernel skips it, so padding costs no
 * gather of x (and a NaN in x never leaks through a 0 * x). */
#define SPK_ELL_PAD (-1)

/* |column - row| the CUDA ELL and SELL int16 offset layout holds (the format choice reads it
 * too: spk_matrix_info.bandwidth against it). */
#define SPK_ELL_OFF16_MAX 32767

/* CUDA ELL: up to this width a thread takes two adjacent rows (kernels/ell_cuda.cu). */
#define SPK_ELL_PAIR_WIDTH 8

/* ELL padding limit: refuse when nrows * K > SPK_ELL_MAX_FILL * nnz (CUSP's ELL conversion
 * guard uses the same idea with its fill ratio 3; above it HYB is the better answer). */
#define SPK_ELL_MAX_FILL 3.0

typedef struct spk_coo_fmt {          /* entries sorted by row, then column                  */
    int64_t  nrows, ncols, nnz;
    int32_t *row, *col;
    double  *val;
    float   *val32;                   /* an fp32 twin's values (val NULL), else NULL         */
} spk_coo_fmt;

typedef struct spk_ell_fmt {          /* column-major: slot k of row i at k * nrows + i       */
    int64_t  nrows, ncols, width, nnz;
    int32_t *col;                     /* SPK_ELL_PAD in padding slots                         */
    double  *val;                     /* 0 in padding slots                                   */
    float   *val32;                   /* an fp32 twin's values (val NULL), else NULL          */
} spk_ell_fmt;

typedef struct spk_hyb_fmt {          /* ELL part of `ell.width` + COO tail of the rest;
                                         an fp32 twin's values in both parts' val32           */
    spk_ell_fmt ell;
    spk_coo_fmt coo;
} spk_hyb_fmt;

typedef struct spk_jds_fmt {          /* rows sorted by length, descending                     */
    int64_t  nrows, ncols, nnz, ndiags;
    int32_t *perm;                    /* perm[k] = original row of sorted position k           */
    int64_t *jd_ptr;                  /* ndiags + 1 start offsets of each jagged diagonal      */
    int32_t *col;                     /* nnz, diagonal by diagonal                             */
    double  *val;
    float   *val32;                   /* an fp32 twin's values (val NULL), else NULL           */
} spk_jds_fmt;

/* SELL-C-sigma (Kreutzer, Hager, Wellein, Fehske, Bishop, "A unified sparse matrix data
 * format for efficient general sparse matrix-vector multiplication on modern processors with
 * wide SIMD units", SISC 36(5) 2014) with C = 32 rows a slice and sigma = 1024 rows a window:
 * within each window of 1024 consecutive rows (rows [1024 w, 1024 w + 1024)) the rows are
 * sorted by length, longest first (stable), and each run of 32 sorted rows is a slice padded
 * to its longest row, stored column-major: entry j of the slice's row r (0..31) at
 * slice_ptr[s] + 32 j + r. Sorting only within a window keeps a window's columns where the
 * rows had them (x's locality) and pads a slice only to its own longest row, so skewed rows
 * cost little padding where ELL pads every row to the longest of the matrix. perm[k] is the
 * row of sorted position k as an offset in its window (two bytes). sigma: rows of lengths
 * skewed to short ones (the selection sweep's, max / mean 2.3-3.8) pad 1.17-1.24x at 256,
 * 1.04-1.06x at 1024 and 1.01x at 4096; 1024 is a CUDA block, one window a block. */
#define SPK_SELL_C 32
#define SPK_SELL_SIGMA 1024
typedef struct spk_sell_fmt {
    int64_t  nrows, ncols, nnz;
    int64_t  nslices;                 /* ceil(nrows / 32); the last one's missing rows empty  */
    int64_t  slots;                   /* slice_ptr[nslices]: 32 x the sum of slice widths     */
    int64_t *slice_ptr;               /* nslices + 1 slot offsets                             */
    uint16_t *perm;                   /* nrows: sorted position k -> row k - k % 1024 + perm  */
    int32_t *col;                     /* slots, SPK_ELL_PAD in padding                         */
    double  *val;                     /* slots, 0 in padding                                   */
    float   *val32;                   /* an fp32 twin's values (val NULL), else NULL           */
} spk_sell_fmt;

typedef struct spk_dia_fmt {          /* diagonals: a(i, i + off[d]) at val[d * nrows + i]     */
    int64_t   nrows, ncols, nnz, ndiag;
    int64_t  *off;                    /* ndiag offsets, ascending                              */
    double   *val;                    /* ndiag * nrows, 0 in slots without an entry            */
    float    *val32;                  /* an fp32 twin's values (val NULL), else NULL           */
    int64_t   nfix, words;            /* rows without an entry on every diagonal; mask words   */
    int64_t  *fix_row;                /* nfix rows, ascending                                  */
    uint64_t *fix_mask;               /* nfix * words: bit d set when the row holds diagonal d */
    int64_t  *fix_ptr;                /* per dot chunk (spk_chunks): its first fix row         */
} spk_dia_fmt;

/* BSR: d x d dense blocks, one column index a block. A's pattern must be made of full blocks
 * aligned to multiples of d (spk_bsr_block_ok), so that row r = I d + a holds, for each block
 * (I, J) of its block row, the d consecutive entries a(r, J d .. J d + d - 1), and its CSR
 * entry k d + c is column c of its k-th block. The block rows are padded to the longest, as
 * ELL pads rows: the block indices column-major, bcol[k * nbrows + I] (SPK_ELL_PAD past a
 * block row's end), and the values exactly as the ELL layout of width kb * d stores them,
 * val[(k d + c) * nrows + r] (0 in padding). So a GPU thread per row reads coalesced values,
 * and one index serves d x d values; the value refills are ELL's (spk_ell_fill_values with
 * width kb * d), and a row's entries are added in CSR's order (the bits of CSR). */
typedef struct spk_bsr_fmt {
    int64_t  nrows, ncols, nnz;
    int64_t  d, nbrows, kb;           /* block size, block rows, block slots per block row   */
    int64_t  nblocks;                 /* blocks stored (nnz / d^2)                           */
    int32_t *bcol;                    /* kb * nbrows block columns, SPK_ELL_PAD in padding   */
    double  *val;                     /* nrows * kb * d values, ELL's layout                 */
    float   *val32;                   /* an fp32 twin's values (val NULL), else NULL         */
} spk_bsr_fmt;

/* BSR's padding limit: refuse when nbrows * kb > SPK_BSR_MAX_FILL * nblocks (ELL's). */
#define SPK_BSR_MAX_FILL SPK_ELL_MAX_FILL
/* The block sizes BSR takes. */
#define SPK_BSR_MIN_D 2
#define SPK_BSR_MAX_D 8

/* Whether A's pattern is made of full d x d blocks aligned to multiples of d (nrows and ncols
 * multiples of d, the d rows of each block row with the same columns, those in runs of d
 * starting at multiples of d); *kb (may be NULL) receives the longest block row's blocks. A
 * must be canonical (sorted rows, no duplicates). O(nnz), parallel; fails fast. */
int spk_bsr_block_ok(const spk_csr *A, int64_t d, int64_t *kb);
/* The largest d in SPK_BSR_MIN_D .. SPK_BSR_MAX_D for which spk_bsr_block_ok holds, and its
 * longest block row in *kb; 1 (and *kb 0) if none. */
int64_t spk_bsr_block_of(const spk_csr *A, int64_t *kb);

/* Conversions: fill `out` from A; the *_free functions are NULL-safe and zero the struct. */
spk_status spk_coo_from_csr(spk_context *ctx, const spk_csr *A, spk_coo_fmt *out);
/* width < 0: the longest row; ELL refuses (SPK_ERR_UNSUPPORTED) above SPK_ELL_MAX_FILL
 * unless `no_guard` (HYB's ELL part is built with an explicit width and no guard). */
spk_status spk_ell_from_csr(spk_context *ctx, const spk_csr *A, int64_t width, int no_guard,
                            spk_ell_fmt *out);
spk_status spk_hyb_from_csr(spk_context *ctx, const spk_csr *A, spk_hyb_fmt *out);
spk_status spk_jds_from_csr(spk_context *ctx, const spk_csr *A, spk_jds_fmt *out);
spk_status spk_sell_from_csr(spk_context *ctx, const spk_csr *A, spk_sell_fmt *out);
/* DIA refuses (SPK_ERR_UNSUPPORTED) more than SPK_DIA_MAX_DIAGS diagonals or a fill above
 * SPK_DIA_MAX_FILL. */
spk_status spk_dia_from_csr(spk_context *ctx, const spk_csr *A, spk_dia_fmt *out);
/* BSR of block size d (0: spk_bsr_block_of's); SPK_ERR_UNSUPPORTED when the pattern is not
 * made of such blocks or the block rows pad past SPK_BSR_MAX_FILL. */
spk_status spk_bsr_from_csr(spk_context *ctx, const spk_csr *A, int64_t d, spk_bsr_fmt *out);
void spk_bsr_fmt_free(spk_bsr_fmt *f);
void spk_coo_fmt_free(spk_coo_fmt *f);
void spk_ell_fmt_free(spk_ell_fmt *f);
void spk_hyb_fmt_free(spk_hyb_fmt *f);
void spk_jds_fmt_free(spk_jds_fmt *f);
void spk_sell_fmt_free(spk_sell_fmt *f);
void spk_dia_fmt_free(spk_dia_fmt *f);

/* Value refills for spk_matrix_update_values: A has the pattern the layout was built from and
 * new values; only the value array(s) are rewritten, nothing is allocated. The CPU backends
 * refill their layout with them; the CUDA backends refill a host mirror kept from setup and
 * upload it (the host path: the device path refills from device values by the same rules,
 * backend.update_device). ELL: nrows x width slots, column-major, padding 0 (a row longer than width keeps
 * its first `width` entries). HYB: the ELL part of width `width`, then the tail of every row
 * in row order. JDS: by the permutation and diagonal offsets of the layout. */
void spk_ell_fill_values(const spk_csr *A, int64_t width, double *val);
void spk_hyb_fill_values(const spk_csr *A, int64_t width, double *ell_val, double *tail_val);
void spk_jds_fill_values(const spk_csr *A, const int32_t *perm, const int64_t *jd_ptr,
                         double *val);
/* SELL: the slots of the layout f built from A's pattern (padding keeps its 0). */
void spk_sell_fill_values(const spk_csr *A, const spk_sell_fmt *f, double *val);
/* DIA: the slots of the layout f built from A's pattern (zero where no entry). */
void spk_dia_fill_values(const spk_csr *A, const spk_dia_fmt *f, double *val);

/* Back to CSR (for the round-trip tests). */
spk_status spk_coo_to_csr(spk_context *ctx, const spk_coo_fmt *f, spk_csr *out);
spk_status spk_ell_to_csr(spk_context *ctx, const spk_ell_fmt *f, spk_csr *out);
spk_status spk_hyb_to_csr(spk_context *ctx, const spk_hyb_fmt *f, spk_csr *out);
spk_status spk_jds_to_csr(spk_context *ctx, const spk_jds_fmt *f, spk_csr *out);
spk_status spk_sell_to_csr(spk_context *ctx, const spk_sell_fmt *f, spk_csr *out);
spk_status spk_dia_to_csr(spk_context *ctx, const spk_dia_fmt *f, spk_csr *out);
spk_status spk_bsr_to_csr(spk_context *ctx, const spk_bsr_fmt *f, spk_csr *out);

/* Memory of each layout in bytes (values + indices + padding + offsets). */
size_t spk_coo_bytes(const spk_coo_fmt *f);
size_t spk_ell_bytes(const spk_ell_fmt *f);
size_t spk_hyb_bytes(const spk_hyb_fmt *f);
size_t spk_jds_bytes(const spk_jds_fmt *f);
size_t spk_sell_bytes(const spk_sell_fmt *f);
/* SELL's slots for A's row lengths without building it (spk_stats_pattern's sell_fill):
 * O(nrows + nnz). */
int64_t spk_sell_slots(const spk_csr *A);
size_t spk_sell_bytes_for(int64_t nrows, int64_t slots, int value_bytes);
size_t spk_dia_bytes(const spk_dia_fmt *f);
size_t spk_bsr_bytes(const spk_bsr_fmt *f);

/* The DIA SpMV (y = alpha A x + beta y, the bits of spk_csr_spmv_ref) with the row kernel
 * chosen for this CPU, or with the plain (baseline ISA) one when `plain` (for tests); and the
 * name of the chosen one ("avx2" or "plain"). */
void spk_dia_spmv_host(const spk_dia_fmt *f, int plain, double alpha, const double *x,
                       double beta, double *y);
/* y = A x and the return x'y (square A), the bits of spk_dia_spmv_host then the CPU's dot. */
double spk_dia_spmv_dot_host(const spk_dia_fmt *f, int plain, const double *x, double *y);
const char *spk_dia_cpu_kernel(void);

/* The backend table's rows, one per file (kernels/<fmt>_cpu.c, kernels/<fmt>_cuda.cu). */
extern const spk_spmv_backend spk_backend_csr_cpu, spk_backend_coo_cpu, spk_backend_ell_cpu,
    spk_backend_hyb_cpu, spk_backend_jds_cpu, spk_backend_dia_cpu, spk_backend_bsr_cpu,
    spk_backend_sell_cpu;
extern const spk_spmv_backend spk_backend_csr_cuda, spk_backend_coo_cuda, spk_backend_ell_cuda,
    spk_backend_hyb_cuda, spk_backend_jds_cuda, spk_backend_bsr_cuda, spk_backend_sell_cuda;
/* Their fp32 twins (spk_spmv_backend.fp32; not in the registry): the same layouts with float
 * values, the same kernels instantiated for them. A build without CUDA has none (the stub
 * rows' fp32 is NULL). */
extern const spk_spmv_backend spk_backend_csr32_cuda, spk_backend_coo32_cuda,
    spk_backend_ell32_cuda, spk_backend_hyb32_cuda, spk_backend_jds32_cuda,
    spk_backend_bsr32_cuda, spk_backend_sell32_cuda;

/* ---- the fp32 twins (spk_spmv_backend.fp32): the CPU rows with their values in float -------
 * The operators of a mixed-precision solve's inner method (src/mixed.c), kept out of the
 * registry (no format choice or --format reaches them), one in the file of each format. A
 * twin's setup builds its format's fp64 layout by the conversion above, then
 * spk_values_fp32 rounds the values into val32 and frees val: the indices, the padding and
 * the fix rows are the fp64 layout's. Its kernel is the fp64 row's own, reading
 * (double)val32[q] where that reads val[q], in the same order, so its y has the bits of the
 * fp64 row run on A's values rounded to float. Its update rounds the new values into val32
 * in place (the *_fill_values32 refills, by the rules of the fp64 ones), allocating nothing.
 * csr-cpu has no layout of its own (it reads the matrix's CSR): its twin, csr32-cpu, copies
 * the indices into one. */

/* Value q of a layout, widened exactly: v32[q] in an fp32 twin's layout, else v64[q]. A
 * kernel's body takes both pointers and is inlined twice, each time with one of them a
 * constant NULL, so the test folds away and one source gives both rows their loops. */
static inline double spk_val(const double *v64, const float *v32, int64_t q)
{
    return v32 ? (double)v32[q] : v64[q];
}

/* out[0 .. n) = v[0 .. n) rounded to float: every twin's rounding (the caller has checked
 * that the values fit fp32, src/mixed.c). */
void spk_round_fp32(const double *v, int64_t n, float *out);
/* A fresh fp64 layout's n values made its twin's: *val32 allocated (counted) and filled with
 * them rounded, then *val freed and set NULL. SPK_ERR_NOMEM, naming `who` and leaving the
 * layout as it was, when the floats cannot be allocated. */
spk_status spk_values_fp32(spk_context *ctx, const char *who, int64_t n, double **val,
                           float **val32);
void spk_ell_fill_values32(const spk_csr *A, int64_t width, float *val);
void spk_hyb_fill_values32(const spk_csr *A, int64_t width, float *ell_val, float *tail_val);
void spk_jds_fill_values32(const spk_csr *A, const int32_t *perm, const int64_t *jd_ptr,
                           float *val);
void spk_dia_fill_values32(const spk_csr *A, const spk_dia_fmt *f, float *val);
void spk_sell_fill_values32(const spk_csr *A, const spk_sell_fmt *f, float *val);

/* CSR with fp32 values (kernels/csr32_cpu.c): setup copies rowptr and colind and rounds the
 * values to float; update rounds them again. The layout: */
typedef struct spk_csr32 {
    int64_t  nrows, ncols, nnz;
    int64_t *rowptr;
    int32_t *colind;
    float   *val;
} spk_csr32;
/* AMG's fused step (spk_step) over CSR rows on the host, values fp64 (val) or fp32 (val32,
 * val NULL): each row summed as spk_csr_spmv_ref sums it, y_i by spk_step_put. The spmv_step
 * of csr-cpu and csr32-cpu. */
void spk_csr_step_host(int64_t nrows, const int64_t *rowptr, const int32_t *colind,
                       const double *val, const float *val32, const spk_step *s);
/* The twins of the CPU rows: csr32-cpu, coo32-cpu, ell32-cpu, hyb32-cpu, jds32-cpu,
 * dia32-cpu, bsr32-cpu, sell32-cpu. */
extern const spk_spmv_backend spk_backend_csr32_cpu, spk_backend_coo32_cpu,
    spk_backend_ell32_cpu, spk_backend_hyb32_cpu, spk_backend_jds32_cpu, spk_backend_dia32_cpu,
    spk_backend_bsr32_cpu, spk_backend_sell32_cpu;

/* Rows per thread of the CUDA ELL layout in a state made by spk_backend_ell_cuda's or
 * spk_backend_hyb_cuda's setup (1 or 2), for tests; 0 in a build without CUDA. */
int spk_ell_cuda_state_rows(const void *state);
int spk_hyb_cuda_state_rows(const void *state);

#ifdef __cplusplus
}
#endif
#endif /* SPK_FORMATS_H */
