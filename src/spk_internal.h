/* spk_internal.h -- what the library's files share and callers never see: the context and its
 * tuning knobs, the canonical host CSR, the SpMV backend and vector-ops tables, and the helpers
 * that turn failures into values. (The preconditioner table is solvers/precond.h; each
 * method's own steps live in its room under solvers/.) */
#ifndef SPK_INTERNAL_H
#define SPK_INTERNAL_H

#include "spk.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPK_MSG_LEN 1024

/* ---- tuning knobs (src/tuning.c): read once per context from the environment ------------ */
#define SPK_TUNE_AUTO (-1)
/* The CUDA BSR kernels (kernels/bsr_cuda.cu): a thread a row with the gathers of x under the
 * padding test, the same with every load unconditional, two threads a row. */
enum { SPK_BSR_BRANCH = 0, SPK_BSR_FLAT = 1, SPK_BSR_SPLIT = 2 };
/* The CUDA CSR row blocks' sums (kernels/csr_adaptive_cuda.cu): a group of lanes per row, or
 * by nonzeros with a segmented scan; AUTO chooses per block. */
enum { SPK_CSR_SUMS_AUTO = 0, SPK_CSR_SUMS_ROWS = 1, SPK_CSR_SUMS_SEGMENTED = 2 };
/* The GPU work one batch of device-scalar iterations aims at (solvers/batch.c). */
#define SPK_BATCH_SECONDS 1e-3
/* The GPU work the batch driver may queue past the stop it predicts: about what a wrong
 * prediction costs, the GPU idle while the host takes a read-back and queues the next
 * iteration (a wake from the event's wait and a launch, ~10 us). */
#define SPK_BATCH_SLACK_SECONDS 10e-6
typedef struct spk_tuning {
    double batch_s;      /* SPK_BATCH_US: seconds of GPU work between read-backs             */
    double batch_slack_s;/* SPK_BATCH_SLACK_US: GPU work queued past the predicted stop      */
    int    cuda_graph;   /* SPK_CUDA_GRAPH: 0 launches the iterations one by one             */
    int    csr_kernel;   /* SPK_CSR_KERNEL: SPK_CSR_VECTOR / _MERGE / _ADAPTIVE, or AUTO     */
    int    csr_group;    /* SPK_CSR_GROUP: CSR-vector's lanes per row, 1..32; 0: the rule    */
    int    csr_sums;     /* SPK_CSR_SUMS: the CSR row blocks' sums, SPK_CSR_SUMS_AUTO (per
                            block by its longest row), _ROWS or _SEGMENTED for every block    */
    int    ell_index32;  /* SPK_ELL_INDEX=32: keep int32 columns, never int16 offsets         */
    int    ell_rows;     /* SPK_ELL_ROWS: 1, 2 or 4 (fp32 values) rows per thread; 0: rule   */
    int    bsr_kernel;   /* SPK_BSR_KERNEL: SPK_BSR_BRANCH / _FLAT / _SPLIT, or AUTO            */
    int    gs_rows;      /* SPK_GS_ROWS: 1, 2 or 4 rows per lane in GMRES's CGS2; 0 by n      */
    int    gs_rows_only; /* SPK_GS_KERNEL=rows: CGS2's second pass on the rows kernel         */
    int    hugepages;    /* SPK_HUGEPAGES: 0 makes large host arrays plain malloc              */
    int    mpi_composed; /* SPK_MPI_STEPS: 1 (composed): CPU ranks take the distributed steps
                            GPU ranks take (vector-table calls, the halo through device
                            buffers, staged); 2 (direct): and those buffers handed to MPI
                            itself, as a CUDA-aware MPI gets a GPU rank's                     */
    double host_memory;  /* SPK_HOST_MEMORY: bytes the process may commit, 0: the machine's   */
    int    mixed_vectors; /* SPK_MIXED_VECTORS: a mixed solve's inner CG vectors: 0 (auto) by
                            their size (src/mixed.c), 1 fp64 always, 2 fp32 wherever the
                            operator has spmv_dot32                                            */
    int    amg_vectors;  /* SPK_AMG_VECTORS: the V-cycle's vectors with fp32 values: 0 (auto:
                            fp32 on a GPU where every matrix of the cycle has spmv_step), 1 fp64,
                            2 fp32 (any matrix: the others through spk_twin_step's fallback)  */
    int    amg_steps;    /* SPK_AMG_STEPS: the Jacobi V-cycle's steps: 0 (auto: fused on a GPU,
                            plain on the CPU), 1 fused, 2 plain (the vector table's)          */
} spk_tuning;
/* The knobs from the environment; SPK_ERR_ARG (message on ctx) for a value a knob does not
 * take. spk_context_create calls it; a test that changes a variable calls it again. */
spk_status spk_tuning_read(spk_context *ctx, spk_tuning *t);
void spk_tuning_default(spk_tuning *t);
/* SPK_HOST_MEMORY for a call without a context (0: unset or not a number). */
double spk_tuning_host_memory(void);

struct spk_context {
    spk_device device;            /* resolved: CPU or CUDA                                     */
    char       msg[SPK_MSG_LEN];  /* detail of the last failure                                */
    char       device_name[128];
    spk_tuning tune;
    /* host + device allocations made through spk_malloc/ops: atomic, the one field that two
     * threads sharing a context (unsupported, but easy to do by mistake) would both write. C++
     * (the .cu files) sees the same 8 bytes as a plain integer and never touches them: it
     * counts through spk_alloc_tick. */
#ifdef __cplusplus
    uint64_t   alloc_count;
#else
    _Atomic uint64_t alloc_count;
#endif
    uint64_t   fail_alloc_at;     /* test hook: make allocation number k fail (0 = never)       */
    double     host_memory_limit; /* test hook: bytes this context may commit (0: no limit of
                                     its own; spk_host_memory)                                 */
    unsigned   methods_run;       /* bit m: a solve with method m has run (spk_result.cold)     */
    void      *cuda;              /* spk_cuda_state (stream, cuBLAS handle, scratch) or NULL    */
    struct spk_comm *comm;        /* the ranks of a distributed context (src/mpi.c), or NULL   */
};

/* ---- distributed solves: the hooks libspk_mpi (src/mpi.c) fills, so that libspk itself
 * never links MPI. A context made by spk_context_create_mpi holds one spk_comm; a matrix made
 * by spk_matrix_create_mpi (or scattered) holds one spk_dist. The methods see neither: a
 * distributed solve runs them on the global operator (spk_dist.be) and on the vector table
 * spk_vec_ops_dist_for(ctx), whose reductions, and the fused steps chosen from it (cg, bicgstab,
 * gmres), sum over the ranks through comm->allreduce. ---- */
typedef struct spk_comm {
    int        rank, size;
    /* v[0 .. n) summed over the ranks in place: one MPI_Allreduce, that also carries
     * stop_local and leaves in stop_seen the largest stop any rank asked for */
    spk_status (*allreduce)(spk_context *ctx, double *v, int n);
    /* v[0 .. n) the largest over the ranks, in place (the scaled norm's maximum) */
    spk_status (*allmax)(spk_context *ctx, double *v, int n);
    /* A status made collective: SPK_OK on every rank, or on every rank the status and the
     * message of the lowest rank that failed ("rank 2: ..."). */
    spk_status (*agree)(spk_context *ctx, spk_status st);
    void       (*destroy)(struct spk_comm *comm);                      /* frees comm itself  */
    /* A host stop (time limit, a monitor's stop) must end every rank's loop at the same
     * iteration: a rank's own request waits in stop_local for the next reduction; the loops
     * act only on stop_seen, which every rank learns from the same reduction. */
    spk_reason stop_local, stop_seen;
    /* counters (spk_mpi_stats): seconds in the halo exchange's waits and in the reductions */
    double     halo_s, reduce_s;
    int64_t    halo_exchanges, halo_bytes, reductions;
} spk_comm;

struct spk_spmv_backend;
struct spk_vec_ops;
/* One fused step of AMG's V-cycle (solvers/pc_amg.c; spk_spmv_backend.spmv_step and
 * spk_vec_ops.step): with t = A x (t = 0 for the vector table's step),
 *     y_i = beta u_i + w_i (b_i + alpha t_i),   u, w, b NULL reading as 0, 1, 0,
 * so that r = b - A x, x' = x + w (b - A x) (Jacobi), y = R r and y += P x each make one pass.
 * Each vector is fp64 or, where its flag says so, fp32: x, u and w by x32, b by b32, y by
 * y32; sums and products are formed in fp64 and y rounded once. u may be y itself (each row
 * reads its u_i before writing y_i); y never aliases x or b. */
typedef struct spk_step {
    const void *x, *u, *w, *b;
    void       *y;
    double      alpha, beta;
    int         x32, b32, y32;
} spk_step;
/* Entry i of a step's vector v (fp32 when is32) as a double; y_i of step s from t_i. */
static inline double spk_step_get(const void *v, int is32, int64_t i)
{
    return is32 ? (double)((const float *)v)[i] : ((const double *)v)[i];
}
static inline void spk_step_put(const spk_step *s, int64_t i, double t)
{
    double v = s->alpha * t;
    if (s->b)
        v = spk_step_get(s->b, s->b32, i) + v;
    if (s->w)
        v = spk_step_get(s->w, s->x32, i) * v;
    if (s->u)
        v = s->beta * spk_step_get(s->u, s->x32, i) + v;
    if (s->y32)
        ((float *)s->y)[i] = (float)v;
    else
        ((double *)s->y)[i] = v;
}
/* The part of a distributed matrix that libspk reads: the matrix handle's csr is the rank's
 * diagonal block (its rows and its columns, local numbering), which the preconditioners see,
 * so each of them is block-Jacobi over the ranks; the method sees the global operator. */
typedef struct spk_dist {
    const struct spk_spmv_backend *be;     /* y = A x over the ranks (halo exchange)        */
    void                          *state;
    int64_t                        n_global;    /* the rows of all ranks           */
    void (*destroy)(struct spk_dist *d);   /* frees d and what it holds                     */
    /* spk_matrix_update_values of the matrix A holding d (collective): the values of the
     * rank's input entries split between the two blocks, the diagonal block's taken by
     * spk_matrix_update_local, the whole matrix's statistics made again */
    spk_status (*update)(spk_context *ctx, spk_matrix *A, int64_t nnz, const double *val,
                         int val_on_device);
} spk_dist;
/* spk_matrix_update_values of a matrix's own arrays, never a distributed one's (src/update.c). */
spk_status spk_matrix_update_local(spk_context *ctx, spk_matrix *A, int64_t nnz,
                                   const double *val, int val_on_device);

/* ---- errors ------------------------------------------------------------------------------- */
/* Record a failure on ctx (printf-style detail) and return st. NULL ctx is allowed. */
spk_status spk_fail(spk_context *ctx, spk_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
spk_status spk_vfail(spk_context *ctx, spk_status st, const char *fmt, va_list ap);

/* Counted host allocation: NULL (and SPK_ERR_NOMEM recorded by the caller) on failure.
 * n * size overflow returns NULL. */
void *spk_malloc(spk_context *ctx, size_t n, size_t size);
void *spk_calloc(spk_context *ctx, size_t n, size_t size);
/* p (from spk_malloc or spk_calloc, or NULL) resized to n * size bytes, counted as an
 * allocation; NULL on failure, p then untouched. */
void *spk_realloc(spk_context *ctx, void *p, size_t n, size_t size);
void  spk_free(void *p);
/* Fault in the pages of a fresh host array, all threads at once (one write a page; what was
 * there may be lost): a device-to-host copy into untouched pageable memory takes the page
 * faults one by one in the driver's thread, some 0.8 ms a megabyte on the H200's host against
 * 0.13 into faulted pages (docs/amg.md, "The setup on the GPU"). */
void  spk_touch_pages(void *p, size_t bytes);
/* Count one allocation on ctx (atomically) and return its number, 1 for the first. */
uint64_t spk_alloc_tick(spk_context *ctx);
/* The host memory, in bytes, that this process may commit: the machine's physical memory,
 * lowered by an address-space or data-size limit (ulimit -v, ulimit -d), by SPK_HOST_MEMORY
 * and by ctx->host_memory_limit where set. `what` (may be NULL) receives the phrase that
 * names the binding limit: "this machine's 24.7 GB of memory". ctx may be NULL. */
double spk_host_memory(const spk_context *ctx, char *what, size_t what_len);
/* SPK_OK if `bytes` fit spk_host_memory, else SPK_ERR_NOMEM with "<what> needs X GB, more
 * than <the limit>": the check made before a large commitment, so that a size that cannot fit
 * fails at once instead of being killed later by the kernel's overcommit. */
spk_status spk_check_memory(spk_context *ctx, double bytes, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Wall clock in seconds (monotonic). */
double spk_now(void);

/* ---- the canonical host CSR --------------------------------------------------------------- */
typedef struct spk_csr {
    int64_t  nrows, ncols, nnz;
    int64_t *rowptr;              /* nrows + 1 offsets, 64-bit (nnz may exceed 2^31)          */
    int32_t *colind;              /* nnz column indices, sorted within each row, unique       */
    double  *val;                 /* nnz values                                                */
} spk_csr;

/* COO triplets as read from a file or an element assembly (0-based). */
typedef struct spk_coo {
    int64_t  nrows, ncols, nnz;
    int32_t *row, *col;
    double  *val;
} spk_coo;

void spk_csr_free(spk_csr *A);                 /* frees the arrays, zeroes the struct        */
void spk_coo_free(spk_coo *A);
/* COO -> canonical CSR: sort rows and columns, sum duplicates, keep empty rows. The COO
 * arrays are not modified. Counting sort by column, then stably by row: O(nnz + nrows + ncols),
 * or O(nnz + nrows) for a matrix far wider than it has entries. SPK_ERR_NOMEM before any
 * allocation when spk_csr_from_coo_bytes exceeds spk_host_memory; SPK_ERR_ARG when finite
 * duplicates sum to Inf ("a(i,j) = inf (1-based): the sum of its N entries overflows"). */
spk_status spk_csr_from_coo(spk_context *ctx, const spk_coo *coo, spk_csr *out);
/* Bytes spk_csr_from_coo holds at its peak: the input COO, its scratch and the output. */
double spk_csr_from_coo_bytes(int64_t nrows, int64_t ncols, int64_t nnz);
/* Allocate an nrows x ncols CSR with room for nnz entries (rowptr zeroed); SPK_ERR_NOMEM
 * before allocating when spk_csr_bytes exceeds spk_host_memory. */
spk_status spk_csr_alloc(spk_context *ctx, int64_t nrows, int64_t ncols, int64_t nnz,
                         spk_csr *out);
double spk_csr_bytes(int64_t nrows, int64_t nnz);
/* For each COO entry k (0-based, as passed to spk_csr_from_coo), its position in the CSR that
 * spk_csr_from_coo made of it: *map is malloc'ed with coo->nnz entries, or NULL when the map is
 * the identity (the input was canonical already). O(nnz log(row length)). */
spk_status spk_csr_source_map(spk_context *ctx, const spk_csr *A, const spk_coo *coo,
                              int64_t **gather_ptr, int64_t **gather_src);
/* src/csr_ops.c, for the AMG setup. C = A B in two phases: the sorted pattern of the product
 * (C allocated, its values unset), then its values into that pattern (C's pattern must hold
 * the product's; no allocation but a per-thread accumulator). T = A^T, rows sorted; *map
 * (when map is not NULL; free with spk_free) gives for each entry of T its entry of A, so
 * spk_csr_transpose_values refills T after A's values change. */
spk_status spk_csr_spgemm_symbolic(spk_context *ctx, const spk_csr *A, const spk_csr *B,
                                   spk_csr *C);
/* acc: nacc * B->ncols zeros, one row of them per thread (left zero after), or NULL to make
 * one for the call; spk_csr_spgemm_threads() is the nacc a caller's accumulator needs. c:
 * where B's rows hold their columns in runs of c starting at multiples of c, each run is
 * summed at once, in the same order (the same bits); 1 (or rows not so): entry by entry. */
spk_status spk_csr_spgemm_numeric(spk_context *ctx, const spk_csr *A, const spk_csr *B,
                                  spk_csr *C, double *acc, int nacc, int c);
int spk_csr_spgemm_threads(void);
/* Both at once, for a first product: the pattern (C allocated) and its values, the same bits
 * as spk_csr_spgemm_numeric gives on that pattern, in one pass over the partial products.
 * acc and nacc as for the numeric phase. g, c: where A's rows come in groups of g with the
 * same columns and B's rows in runs of c columns starting at multiples of c (the blocks of
 * a blocked AMG level: g = c = 3 for elasticity's nodes, 6 for its rigid-body modes), each
 * group's pattern is made once and its values a run at a time; 1, 1 (or a structure that is
 * not so) takes the rows one by one. */
spk_status spk_csr_spgemm(spk_context *ctx, const spk_csr *A, const spk_csr *B, spk_csr *C,
                          double *acc, int nacc, int g, int c);
/* Sort ascending in place (a quicksort down to 32, then insertion). */
void spk_sort_i32(int32_t *c, int64_t len);
spk_status spk_csr_transpose(spk_context *ctx, const spk_csr *A, spk_csr *T, int64_t **map);
void spk_csr_transpose_values(const spk_csr *A, const int64_t *map, spk_csr *T);
/* y = alpha A x + beta y on the host: the reference every backend is tested against. */
void spk_csr_spmv_ref(const spk_csr *A, double alpha, const double *x, double beta, double *y);
/* 1 if A equals its transpose in pattern and value. */
int spk_csr_is_symmetric(const spk_csr *A);
/* Diagonal into d (n = min(nrows, ncols)); missing entries are 0. */
void spk_csr_diagonal(const spk_csr *A, double *d);
/* Bit-pack: field j = the low `bits` bits (1..32) of v[j], at bits [j bits, (j + 1) bits) of
 * the little-endian word stream out[0 .. words); words >= ((n + 31) / 32) * bits, every word past
 * the last field is 0. Groups of 32 fields fill exactly `bits` words, so they are packed in
 * parallel: the words do not depend on the thread count. (The CUDA CSR row blocks' columns.) */
void spk_pack_bits(const int32_t *v, int64_t n, int bits, uint32_t *out, size_t words);

/* The CUDA CSR row blocks' sizes (kernels/csr_adaptive_cuda.cu, where they are measured, and
 * bench/bench_rowblocks.c): a stream block holds at most SPK_CSR_ADAPT_NB nonzeros and rows,
 * SPK_CSR_ADAPT_ITEMS a thread of SPK_CSR_ADAPT_THREADS; a longer row is cut into pieces of
 * SPK_CSR_ADAPT_PIECE nonzeros; a stream block sums by nonzeros (segmented sums) when one of
 * its rows would take its lanes more than SPK_CSR_ADAPT_SEG_TRIPS trips of the row loop. */
#define SPK_CSR_ADAPT_THREADS 256
#define SPK_CSR_ADAPT_ITEMS 3
#define SPK_CSR_ADAPT_NB (SPK_CSR_ADAPT_ITEMS * SPK_CSR_ADAPT_THREADS)
#ifndef SPK_CSR_ADAPT_PIECE_LOADS
#define SPK_CSR_ADAPT_PIECE_LOADS 32
#endif
#define SPK_CSR_ADAPT_PIECE (SPK_CSR_ADAPT_PIECE_LOADS * SPK_CSR_ADAPT_THREADS)
#define SPK_CSR_ADAPT_SEG_TRIPS 16

/* The CUDA CSR row blocks' partition (kernels/csr_adaptive_cuda.cu), greedy over the rows in
 * order. A row of more than nb nonzeros is "long": it becomes ceil(len / piece) piece blocks,
 * the first blocks of the grid (0 .. npieces - 1), long row l's pieces being lfirst[l] ..
 * lfirst[l + 1] - 1. The other rows form stream blocks (from block stream0 on): runs of
 * consecutive short rows holding at most nb rows and nb nonzeros, a block closed only when the
 * next row would break a bound, is long, or is past the end. blk holds 4 int64 a block: first
 * row; one past the last row (stream) or -1 - l (a piece of long row l); first and one past
 * the last nonzero. With blk == NULL it only counts (stream0 and lfirst unused); the counts
 * are the same either way, so a first call sizes the arrays and a second one (stream0 =
 * npieces) fills them. */
typedef struct spk_row_blocks {
    int64_t npieces, nstream, nlong;
    int64_t stream_rows, stream_nnz;     /* rows and nonzeros that the stream blocks hold     */
} spk_row_blocks;
void spk_row_blocks_walk(const int64_t *rowptr, int64_t n, int64_t nb, int64_t piece,
                         int64_t stream0, spk_row_blocks *c, int64_t *blk, int64_t *lfirst);

/* ---- Matrix Market (src/mmio.c) ----------------------------------------------------------- */
typedef enum { SPK_MM_COORDINATE, SPK_MM_ARRAY } spk_mm_format;
typedef enum { SPK_MM_REAL, SPK_MM_INTEGER, SPK_MM_PATTERN } spk_mm_field;
typedef enum { SPK_MM_GENERAL, SPK_MM_SYMMETRIC, SPK_MM_SKEW } spk_mm_symmetry;

typedef struct spk_mm_header {
    spk_mm_format   format;
    spk_mm_field    field;
    spk_mm_symmetry symmetry;
    int64_t         nrows, ncols, nentries;   /* nentries: stored entries (array: nrows*ncols
                                                 or the packed triangle for symmetric)       */
    int64_t         size_line;                /* the line of the size line                  */
    int64_t         both_triangles;           /* symmetric storage: off-diagonal positions
                                                 listed as both (i,j) and (j,i), each summed */
} spk_mm_header;

/* Read a whole file into COO with symmetric / skew-symmetric storage expanded (the mirror of
 * each off-diagonal entry added; a skew diagonal entry is an error). Array files become COO
 * with every entry. Errors: "path:line: expected ..." with SPK_ERR_PARSE. */
spk_status spk_mm_read_coo(spk_context *ctx, const char *path, spk_mm_header *hdr,
                           spk_coo *out);
/* spk_mm_read_coo for a caller that assembles the COO next (spk_csr_from_coo): the size line
 * is checked against the assembly's peak memory too, before the entries are read. */
spk_status spk_mm_read_for_csr(spk_context *ctx, const char *path, spk_mm_header *hdr,
                               spk_coo *out);
/* The same from a memory buffer (the fuzzer and the tests use it); `name` labels messages. */
spk_status spk_mm_parse_coo(spk_context *ctx, const char *name, const char *buf, size_t len,
                            spk_mm_header *hdr, spk_coo *out);
/* Write CSR as "coordinate real general". */
spk_status spk_mm_write_csr(spk_context *ctx, const char *path, const spk_csr *A);

/* ---- generators (src/generate.c) ---------------------------------------------------------- */
spk_status spk_generate_csr(spk_context *ctx, const char *spec, spk_csr *out);

/* ---- statistics and format choice (src/stats.c, src/select.c) ---------------------------- */
void spk_stats_compute(const spk_csr *A, spk_matrix_info *info);
/* All but the value-dependent ones below, which are left zero (A's values not set yet: the
 * caller marks them stale). */
void spk_stats_pattern(const spk_csr *A, spk_matrix_info *info);
/* Its two parts: the sizes (rows, entries, the row lengths' extremes, mean and spread, the
 * CSR's and COO's bytes), a pass over the row offsets; then the shape over them (percentiles,
 * HYB's width, DIA's diagonals, BSR's blocks, SELL's slots, the column locality), passes over
 * the entries that only a format choice reads. */
void spk_stats_sizes(const spk_csr *A, spk_matrix_info *info);
void spk_stats_shape(const spk_csr *A, spk_matrix_info *info);
/* Only the value-dependent statistics: symmetric and diag_positive (after a value update). */
void spk_stats_values(const spk_csr *A, spk_matrix_info *info);
/* Only the value range (val_absmax, val_absmin): one streaming pass. */
void spk_stats_range(const spk_csr *A, spk_matrix_info *info);
/* --format auto on the GPU. Measured (bench_spmv, NVIDIA H200, 2026-11-29, bench/results/2026-11-29-nvidia-h200-spmv.json):
 * below ~1 M nonzeros an SpMV is launch-bound. Every single-kernel format took 5.6-6.3 us on the
 * small real matrices of inputs/ (82 to 18,437 nonzeros) whatever their row lengths, and the
 * two-launch formats (HYB = ELL + COO, COO = scale + accumulate) 10-17 us; CSR was within 7% of
 * the fastest format on 14 of 15 of them, while the rules below picked 1.2-2.2x slower formats
 * on 6. 2^20 nonzeros in CSR are ~12 MB, ~3 us at the measured 4.27 TB/s: under one launch. */
#define SPK_SEL_SMALL_NNZ (1 << 20)

/* Bytes from which data no longer stays in the device's last-level cache, as the mixed-
 * precision rules measure sizes against it (src/solve.c's precision AUTO, src/mixed.c's fp32
 * vectors): the H200's L2 holds 50 MB; the CPU's figure is an L3 share of a few cores. */
#define SPK_CACHE_BYTES_GPU (64.0 * 1048576.0)
#define SPK_CACHE_BYTES_CPU (8.0 * 1048576.0)
/* The GPU rule by the shape of the row lengths alone (docs/selection.md), which
 * spk_select_format applies to matrices of SPK_SEL_SMALL_NNZ nonzeros and more. */
spk_format spk_select_shape(const spk_matrix_info *info, char *why, size_t len);
/* Bell & Garland's HYB width (CUSP compute_optimal_entries_per_row) from a row-length
 * histogram: the largest K such that at least max(4096, nrows/3) rows have >= K entries
 * (with fewer rows than 4096 the relative rule alone applies). */
int64_t spk_hyb_width(const spk_csr *A);
/* DIA (kernels/dia_cpu.c): at most this many diagonals (a fix row's mask is then one word),
 * and the conversion refuses a fill (ndiag * nrows / nnz) above SPK_DIA_MAX_FILL, as ELL's. */
#define SPK_DIA_MAX_DIAGS 64
#define SPK_DIA_MAX_FILL 3.0
/* The distinct offsets j - i of A's entries, ascending, into off[SPK_DIA_MAX_DIAGS]; returns
 * their number, or SPK_DIA_MAX_DIAGS + 1 as soon as there are more (off is then partial). */
int64_t spk_dia_offsets(const spk_csr *A, int64_t *off);
/* Bytes of a DIA layout of nrows rows, ndiag diagonals and nfix rows not full. */
size_t spk_dia_bytes_for(int64_t nrows, int64_t ndiag, int64_t nfix);

/* ---- the matrix handle ------------------------------------------------------------------ */
struct spk_spmv_backend;
struct spk_matrix {
    spk_csr          csr;          /* canonical host copy                                       */
    spk_matrix_info  info;
    const struct spk_spmv_backend *be;   /* prepared backend, NULL until prepared             */
    void            *state;        /* the backend's layout (host or device)                     */
    uint64_t         layout_gen;   /* bumped whenever `state` is replaced or dropped: what
                                      borrows from it (a GPU fp32 twin) compares it            */
    char             format_reason[256];  /* why be's format (spk_matrix_format_reason)         */
    spk_context     *ctx_prepared; /* context that owns `state`'s device memory                */
    uint32_t         magic;        /* SPK_MATRIX_MAGIC while alive: catches use after destroy   */
    /* value updates (src/update.c): canonical entry p is the sum, in input order, of the input
     * entries gather_src[gather_ptr[p] .. gather_ptr[p+1]) of the arrays the matrix was made
     * from; both NULL when that is the identity (file, generator, input already canonical). */
    int64_t          nnz_in;       /* entries of those arrays: the length an update must have  */
    int64_t          summed_in;    /* input entries summed into another (spk_matrix_input_counts) */
    int64_t          both_triangles; /* symmetric file: positions given in both triangles       */
    int64_t         *gather_ptr;   /* nnz + 1 offsets, or NULL                                  */
    int64_t         *gather_src;   /* nnz_in input indices, increasing within each entry        */
    double          *stage;        /* nnz_in host doubles for updates from device memory; made
                                      at the first such update, then reused                     */
    uint64_t         version;      /* bumped by every update: solvers see a stale diagonal      */
    int              info_stale;   /* symmetric / diag_positive predate the last update         */
    int              shape_unset;  /* only spk_stats_sizes made (a handle whose layout is made
                                      elsewhere): spk_matrix_shape_info completes the rest      */
    /* spk_matrix_spmv's device temporaries (ncols + nrows), kept for the next call */
    double          *spmv_x, *spmv_y;
    spk_context     *ctx_spmv;     /* context they were made for (compared, never dereferenced) */
    const struct spk_vec_ops *spmv_ops;  /* the table that frees them                         */
    /* value updates on the GPU (src/update_cuda.cu): made at the first update of a matrix
     * whose layout is on a CUDA context, never for a matrix that is not updated */
    struct spk_matrix_dev *dev;    /* gather map, staging and canonical values on the device   */
    int              dev_current;  /* dev's canonical values are the matrix's values           */
    int              host_stale;   /* csr.val predates them: spk_matrix_host_values downloads  */
    int              dev_off;      /* dev could not be made (device memory): host path only     */
    int              dev_borrowed; /* dev's values are another's array (spk_matrix_dev_borrow)  */
    /* the columns on the device only (a GPU-built AMG level): csr.colind NULL until a reader
     * fetches them from dev_colind (another's array, which outlives A) */
    const int32_t   *dev_colind;
    int              pattern_stale;
    int              csr_borrowed; /* csr's arrays are another's (spk_matrix_from_canonical_
                                      borrowed), which outlives A: never freed or reallocated */
    spk_dist        *dist;         /* a distributed matrix (src/mpi.c), or NULL                 */
};
#define SPK_MATRIX_MAGIC 0x5350b4a7u

/* A new handle holding a copy of a canonical CSR (the AMG levels' matrices): no sorting, no
 * checks; its value updates take the identity map. */
spk_status spk_matrix_from_canonical(spk_context *ctx, const spk_csr *src, spk_matrix **out);
/* The same taking src's arrays over: src keeps its sizes, its arrays become NULL. values 0:
 * src's values are not set yet (the caller sets them before anything reads them; their
 * statistics are stale until then), and the handle's layout is to be made elsewhere
 * (spk_matrix_adopt_layout): only the sizes' statistics are made, the rest when asked. */
spk_status spk_matrix_from_canonical_owned(spk_context *ctx, spk_csr *src, int values,
                                           spk_matrix **out);
/* The same over src's arrays, neither copied nor taken (A->csr_borrowed): src must outlive the
 * handle, and a value update with src->val as its values writes nothing (the AMG levels' handles
 * on a CPU context, whose CSR layout is the canonical CSR itself). Only for a CPU context: on a
 * CUDA one the host values can be written by a download. */
spk_status spk_matrix_from_canonical_borrowed(spk_context *ctx, const spk_csr *src,
                                              spk_matrix **out);
/* Give A a layout made elsewhere: state, a state of be's on ctx for A's pattern and values
 * (the AMG levels' CSR over the GPU hierarchy's arrays); A's previous layout is destroyed and
 * why becomes its format reason. */
spk_status spk_matrix_adopt_layout(spk_context *ctx, spk_matrix *A,
                                   const struct spk_spmv_backend *be, void *state,
                                   const char *why);
/* The statistics with the value-dependent ones (symmetric, diag_positive) brought up to date
 * after an update: recomputed here, on demand, so that an update stays a copy. */
const spk_matrix_info *spk_matrix_info_of(spk_matrix *A);
/* The same with only the value range brought up to date (what a refresh's scale reads):
 * symmetric, a search for every entry's mirror, is left to the next spk_matrix_info_of (a
 * tenth of an AMG refresh of lame3d:48 on the CPU). */
const spk_matrix_info *spk_matrix_range_of(spk_matrix *A);
/* The pattern's shape statistics made if they are not (A->shape_unset), for a format choice. */
void spk_matrix_shape_info(spk_matrix *A);
/* Release spk_matrix_spmv's cached temporaries (destroy, or before a re-prepare elsewhere). */
void spk_matrix_spmv_release(spk_matrix *A);
/* Bring csr.val up to date after updates made on the device (A->host_stale: one download of
 * nnz doubles; otherwise nothing), and csr.colind where it is on the device only
 * (A->pattern_stale). Every reader of csr.val or csr.colind calls it first: statistics,
 * prepare (a new layout), the Jacobi diagonal from the host, spk_matrix_csr, write. ctx may be
 * NULL (it only receives the message of a failure). */
spk_status spk_matrix_host_values(spk_context *ctx, spk_matrix *A);

/* ---- value updates on the device (src/update_cuda.cu; kernels/cuda_stub.c without CUDA) ---- */
typedef enum spk_dev_upd {
    SPK_DEV_UPD_DONE,        /* the values are A's, on the device; the layout is refilled      */
    SPK_DEV_UPD_REFUSED,     /* A is unchanged: a NaN/Inf, val unreadable, no device memory   */
    SPK_DEV_UPD_HOST,        /* A is unchanged, a device kernel failed: take the host path    */
    SPK_DEV_UPD_NO_LAYOUT    /* the values are A's, on the device; the refill failed           */
} spk_dev_upd;
/* The update on the device, for A prepared on ctx's GPU in a backend with update_device. The
 * first call makes A->dev (the gather map uploaded, a staging array of nnz_in and a canonical
 * value array of nnz doubles: counted allocations) and lets the backend make what its refill
 * needs; a failure there answers REFUSED and sets A->dev_off (later updates take the host
 * path, so a retry succeeds). Then: one copy of val (host or
 * device memory) into the staging array; a finiteness check, read back before anything is
 * written; the gather into the canonical values (bitwise the host path's sums); the backend's
 * refill; one stream synchronisation. Sets A->dev_current and A->host_stale when the values
 * are taken; the caller bumps the version. */
spk_status spk_matrix_dev_update(spk_context *ctx, spk_matrix *A, const double *val,
                                 int val_on_device, spk_dev_upd *how);
/* d_diag (nrows doubles on ctx's device) = diag(A) from the device values, when those are A's
 * values on this context (*done = 1; the first call makes a device array of the diagonal's
 * positions); otherwise *done = 0 and nothing happens. */
spk_status spk_matrix_dev_diagonal(spk_context *ctx, spk_matrix *A, double *d_diag, int *done);
/* Copy the device canonical values into A->csr.val, and A->dev_colind into a new csr.colind
 * where A->pattern_stale (synchronous copies that need no context: the matrix may outlive the
 * one it was updated on). */
spk_status spk_matrix_dev_download(spk_context *ctx, spk_matrix *A);
void spk_matrix_dev_free(struct spk_matrix_dev *d);                          /* NULL-safe */
/* A's values are d_val, A->csr.nnz doubles in the canonical order on ctx's device, which A's
 * layout reads in place (the AMG levels' CSRs over a GPU-built hierarchy's arrays): A->dev
 * made over them, borrowed (never freed, no staging), the host copy stale. An update from
 * d_val itself (the hierarchy's refresh wrote them there) then checks them and copies
 * nothing; one from other values gives A its own arrays first. A made with the identity map
 * only (SPK_ERR_UNSUPPORTED otherwise); d_val must outlive A. */
spk_status spk_matrix_dev_borrow(spk_context *ctx, spk_matrix *A, double *d_val);

/* The solver handle (src/solve.c); defined there, declared here for the magic check. */
#define SPK_SOLVER_MAGIC 0x53507c9eu

/* ---- the SpMV backend table (kernels/) ---------------------------------------------------- */
/* Fused reductions whose scalars stay on the device (the methods' steps, a backend's fused
 * SpMV + dot) run at most this many blocks, and keep one partial per block and output. */
#define SPK_MAX_BLOCKS 2048

/* Where a fused dot product lands: *out = x'y, summed over per-block partials `part` in a
 * fixed order by the last block to finish (counted in *count, which the sum returns to 0),
 * so the result has the same bits on every call. skip: when non-NULL and *skip != 0 the
 * kernel does nothing (the iterations queued after the stop). */
typedef struct spk_dot_sink {
    const int32_t *skip;
    double        *out;
    uint32_t      *count;
    double        *part;         /* SPK_MAX_BLOCKS doubles                                    */
} spk_dot_sink;

typedef struct spk_spmv_backend {
    const char  *name;            /* "ell-cuda": printed by --explain                          */
    spk_format   format;
    spk_device   device;
    /* Convert A into the backend's layout (and upload it). */
    spk_status (*setup)(spk_context *ctx, const spk_csr *A, void **state);
    /* y = alpha*A*x + beta*y; x, y live where the device's vectors live. beta == 0 ignores
     * the old y (NaN in y must not propagate). */
    spk_status (*spmv)(spk_context *ctx, const void *state, double alpha, const double *x,
                       double beta, double *y);
    void       (*destroy)(void *state);   /* NULL-safe                                         */
    /* A's values changed, its pattern did not (spk_matrix_update_values): refill the values of
     * the layout `state` built by setup from the same pattern, in place. No allocation, no
     * re-analysis; a device backend uploads only its value array(s). */
    spk_status (*update)(spk_context *ctx, void *state, const spk_csr *A);
    /* Optional (NULL: the method runs spmv, then ops->dot_sink): y = A x and sink->out = x'y
     * in the same pass, deterministic, skipped when *sink->skip != 0 (CG's q = A p, p'q). */
    spk_status (*spmv_dot)(spk_context *ctx, const void *state, const double *x, double *y,
                           const struct spk_dot_sink *sink);
    /* Optional (NULL: updates take the host path, `update`): the update on the device. d_val
     * holds A's nnz canonical values on ctx's device (A: the pattern; its host values may be
     * stale); refill the layout's values from them with kernels queued on the context's stream
     * (the caller synchronises). The first call makes, counted, the index data the refill
     * needs (a device rowptr ...); later calls allocate nothing. d_val NULL: only that, and
     * a failure then leaves the layout as it was. */
    spk_status (*update_device)(spk_context *ctx, void *state, const spk_csr *A,
                                const double *d_val);
    /* Optional: the row of the same layout with its values stored in fp32 (the operator of a
     * mixed-precision solve, src/mixed.c; the V-cycle's matrices with AMG's fp32 values). Its
     * setup rounds A's values to float, its update rounds the new ones, and its products are
     * formed and summed in fp64 ((double)a_ij * x_j, exact), so it differs from this row
     * only by the rounding of each a_ij (relative 2^-24). Such a row is not in the registry
     * and has no fp32 twin of its own. NULL: the format has no fp32 kernel on this device
     * (a mixed solve on the CPU then takes csr32-cpu). */
    const struct spk_spmv_backend *fp32;
    /* Optional, a GPU twin's: the twin made on the device from `row`, a state of its fp64 row
     * on the same context, which must outlive it. It shares the row's index arrays (and host
     * mirror) and holds only its own fp32 values, rounded from the row's device values by a
     * kernel: 4 bytes an entry of device memory, nothing converted or uploaded by the host.
     * refill rounds them again from the row's, after the row's own update. Both set *fits to
     * 0 when a value leaves fp32's range (|a| > FLT_MAX, or a nonzero below FLT_MIN). Such a
     * twin's update and update_device still take values from A, as setup's do. */
    spk_status (*setup_from)(spk_context *ctx, const void *row, void **state, int *fits);
    spk_status (*refill)(spk_context *ctx, void *state, const void *row, int *fits);
    /* Optional, an fp32 twin's (the inner CG of a mixed solve with fp32 vectors, src/mixed.c):
     * y = A x with x and y stored in float, each row's sum formed in fp64 from (double)a_ij *
     * (double)x_j in the order of spmv_dot's and rounded once into y, and sink->out = x'y in
     * fp64 over the rounded y; skipped as spmv_dot is. 4 bytes of x and y a row in place of 8:
     * the rest of the row's traffic is its values and indices. */
    spk_status (*spmv_dot32)(spk_context *ctx, const void *state, const float *x, float *y,
                             const struct spk_dot_sink *sink);
    /* Optional (NULL: spk_twin_step composes it from spmv and the vector table's step): the
     * fused step s (spk_step) in one pass. SPK_ERR_UNSUPPORTED, with nothing queued and no
     * message, for a combination of precisions or a layout (CSR's long rows ...) it does not
     * fuse: the caller composes that one. */
    spk_status (*spmv_step)(spk_context *ctx, const void *state, const spk_step *s);
    /* Optional, a GPU row's: A's canonical CSR on the device, read from the layout (the GPU
     * AMG build takes its finest level from there instead of uploading the host's CSR).
     * rp (nrows + 1), col and val (nnz) are the caller's device arrays. fill 0: rp[i] = row
     * i's entries, i < nrows; fill 1: rp holds the offsets, each row's columns and values
     * written at its offset in the canonical order. Queued on the context's stream.
     * SPK_ERR_UNSUPPORTED, with no message, where the state holds no fp64 values (a twin). */
    spk_status (*csr_device)(spk_context *ctx, const void *state, int fill, int32_t *rp,
                             int32_t *col, double *val);
} spk_spmv_backend;

/* The registry (kernels/backends.c): the backend for (format, device), or NULL. A backend of a
 * device not compiled in is still listed but answers SPK_ERR_NOT_COMPILED from setup. */
const spk_spmv_backend *spk_backend_find(spk_format fmt, spk_device dev);
const spk_spmv_backend *const *spk_backend_all(size_t *count);

/* ---- the vector-ops table (kernels/vec_cpu.c, kernels/vec_cuda.cu) ---------------------- */
/* Method-neutral operations on the vectors of one device (host memory for the CPU table) and
 * the machinery of device-resident scalars (fetch, put, steps); each method's fused steps are
 * in its own room under solvers/. Scalar results come back to host doubles. */
typedef struct spk_vec_ops {
    spk_device device;
    spk_status (*alloc)(spk_context *ctx, int64_t n, double **v);      /* zero-filled          */
    void       (*free)(spk_context *ctx, double *v);                   /* NULL-safe            */
    spk_status (*upload)(spk_context *ctx, int64_t n, const double *host, double *v);
    spk_status (*download)(spk_context *ctx, int64_t n, const double *v, double *host);
    spk_status (*copy)(spk_context *ctx, int64_t n, const double *x, double *y);   /* y = x   */
    spk_status (*fill)(spk_context *ctx, int64_t n, double a, double *y);          /* y = a   */
    spk_status (*dot)(spk_context *ctx, int64_t n, const double *x, const double *y, double *r);
    spk_status (*nrm2)(spk_context *ctx, int64_t n, const double *x, double *r);
    /* r0 = x'y, r1 = x'z in one pass over x (PETSc VecDotNorm2 when z == x) */
    spk_status (*dot2)(spk_context *ctx, int64_t n, const double *x, const double *y,
                       const double *z, double *r0, double *r1);
    spk_status (*axpy)(spk_context *ctx, int64_t n, double a, const double *x, double *y);
    /* y = a x + b y */
    spk_status (*axpby)(spk_context *ctx, int64_t n, double a, const double *x, double b,
                        double *y);
    spk_status (*scal)(spk_context *ctx, int64_t n, double a, double *x);
    /* y = d .* x (Jacobi's apply) */
    spk_status (*pmul)(spk_context *ctx, int64_t n, const double *d, const double *x,
                       double *y);
    /* y = a (d .* x) + b y; b == 0 ignores the old y (AMG's smoothing steps) */
    spk_status (*pmul_axpby)(spk_context *ctx, int64_t n, double a, const double *d,
                             const double *x, double b, double *y);
    /* The vector part of a fused step (spk_step) with t given, n doubles, or NULL (t = 0: then
     * y = beta u + w b, and with u, w NULL a conversion y = b between precisions). */
    spk_status (*step)(spk_context *ctx, int64_t n, const double *t, const spk_step *s);
    /* d = 1 / d, checking d: first index with d <= 0 (or == 0 if allow_negative), or whose
     * 1 / d is not finite (a subnormal d), into *bad, d left as it was; else -1. */
    spk_status (*invert)(spk_context *ctx, int64_t n, double *d, int allow_negative,
                         int64_t *bad);
    /* w = w - V h, V column-major n x k with leading dimension ldv, h a host array of k */
    spk_status (*gemv_n_sub)(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                             const double *h, double *w);
    /* Block until queued work is done (timing; host code that reads device vectors). */
    spk_status (*sync)(spk_context *ctx);
    /* ---- device-resident scalars (solvers/batch.c and the methods' fused steps) ---- */
    /* sink->out = x'y unless *sink->skip (after a backend spmv without a fused spmv_dot) */
    spk_status (*dot_sink)(spk_context *ctx, int64_t n, const double *x, const double *y,
                           const spk_dot_sink *sink);
    /* Copy `bytes` of device memory to `host` (slot 0 or 1 of a double buffer): queued after
     * the work before it; `host` is valid once fetch_wait(slot) returns. CPU: a memcpy. */
    spk_status (*fetch)(spk_context *ctx, const void *dev, size_t bytes, int slot, void *host);
    spk_status (*fetch_wait)(spk_context *ctx, int slot);
    /* Copy `bytes` of host memory into device memory and wait (the scalars' first state). */
    spk_status (*put)(spk_context *ctx, const void *host, size_t bytes, void *dev);
    /* Queue `count` calls of step(self), each of which queues the same launches with the same
     * arguments (an iteration whose scalars live on the device). *graph is the caller's cache,
     * NULL at first, released by graph_free. CUDA: a run of steps captured once into a CUDA
     * graph and replayed. NULL (the CPU): the caller calls step itself. */
    spk_status (*steps)(spk_context *ctx, void **graph, spk_status (*step)(void *), void *self,
                        int64_t count);
    void (*graph_free)(void *graph);                                          /* NULL-safe */
    /* The vectors are one rank's rows of a distributed vector and the reductions (dot, nrm2,
     * dot2) sum over the ranks of ctx->comm (spk_vec_ops_dist_for). SPK_DIST_HOST: host
     * vectors, and the methods' distributed steps are fused host loops; SPK_DIST_COMPOSED:
     * the vectors of any device, and those steps are calls of the device's own table, each
     * local sum reduced on the host (GPU ranks; CPU ranks under SPK_MPI_STEPS=composed). */
    int distributed;
} spk_vec_ops;

enum { SPK_DIST_NONE = 0, SPK_DIST_HOST = 1, SPK_DIST_COMPOSED = 2 };

const spk_vec_ops *spk_vec_ops_cpu(void);
/* The table over the rows of a distributed vector on ctx's device: its reductions are the
 * device table's local sums, then one ctx->comm->allreduce each. SPK_DIST_HOST on CPU ranks,
 * SPK_DIST_COMPOSED on GPU ranks and under SPK_MPI_STEPS=composed. */
const spk_vec_ops *spk_vec_ops_dist_for(const spk_context *ctx);
/* ctx->comm->allreduce; SPK_OK (v unchanged) for a context without ranks. */
spk_status spk_comm_allreduce(spk_context *ctx, double *v, int n);
const spk_vec_ops *spk_vec_ops_cuda(void);   /* a table answering NOT_COMPILED without CUDA */
const spk_vec_ops *spk_vec_ops_for(spk_device dev);

/* ---- host loops: when to fork, and sums in a fixed order (vec_cpu.c, the methods' steps) --
 * OpenMP's reduction(+) adds the threads' partial sums in the order the threads finish, so a
 * sum of doubles over three threads or more changes in its last bits from run to run. The
 * host's floating-point sums cut [0, n) instead into spk_chunks(n) chunks, a count that
 * depends on n alone; one thread sums each chunk, in an inner `omp simd` loop, and the
 * partials are added in chunk order. A sum then has the same bits on every run and whatever
 * the thread count. For s = x'y:
 *
 *     double part[SPK_CHUNKS];
 *     const int nc = spk_chunks(n);
 *     #pragma omp parallel for schedule(static) if (nc > 1)
 *     for (int c = 0; c < nc; c++) {
 *         const int64_t lo = spk_chunk_lo(n, nc, c), hi = spk_chunk_lo(n, nc, c + 1);
 *         double s = 0.0;
 *         #pragma omp simd reduction(+ : s) if (nc > 1)
 *         for (int64_t i = lo; i < hi; i++)
 *             s += x[i] * y[i];
 *         part[c] = s;
 *     }
 *     return spk_chunks_sum(part, nc);
 *
 * The simd's `if`: a vector of SPK_OMP_MIN_N or fewer is summed in the plain loop's order, one
 * add after another, as the `parallel for simd ... if (n > SPK_OMP_MIN_N)` these loops replace
 * summed it (an `if` without a modifier applies to the simd too). The small real systems'
 * iteration counts hang on that order: BiCGStab on e05r0100 (tests/test_krylov.c) converges
 * in 1940 of its 2360 iterations with it, and not within them with the sum split over two
 * vector lanes. */

/* ---- the CPU's thread count during a solve (src/threads.c) ------------------------------ */
typedef struct spk_threads {
    int     active;              /* adapting: a CPU solve, OpenMP, 2+ threads, n > SPK_OMP_MIN_N */
    int     saved;               /* the caller's omp_get_max_threads(), put back at the end    */
    int     cand[4], ncand;      /* the thread counts tried: all, all - 1, half, 1             */
    int     chosen, prev;        /* the fastest of the last round (an index), and the one before */
    int     probe;               /* the candidate being timed, -1 between rounds               */
    int64_t window, interval;    /* iterations a probe lasts; iterations between rounds       */
    double  window_s;            /* ... or fewer (at least 2) once they took this long; 0: the
                                    whole window (a GMRES cycle)                              */
    int64_t it0, last;           /* the iteration the current timing began at; the last seen  */
    int64_t ran;                 /* iterations on the choice in earlier solves, since its round */
    double  t0, best;            /* its clock; the best seconds per iteration of the round    */
    int     fit_for;             /* the caller's count the fit was made for (0: none): a later
                                    solve of the same solver goes on from the fit             */
} spk_threads;
/* A solve of n unknowns on `dev` begins (window: the iterations one probe times, 0: 8) and
 * ends; spk_threads_tick at every recorded iteration. No effect but on the CPU. The state is
 * the solver's: a zeroed one has no fit yet, and each later solve starts on the count the
 * earlier ones chose, its rounds spaced over the iterations of all of them. */
void spk_threads_begin(spk_threads *t, spk_device dev, int64_t n, int64_t window);
void spk_threads_tick(spk_threads *t, int64_t it, double now);
void spk_threads_end(spk_threads *t);
int  spk_threads_now(const spk_threads *t);       /* the count the solve runs on now   */
/* OpenMP's thread count for the next parallel region, and the calling thread's number in the
 * current one (1 and 0 in a build without OpenMP): for per-thread scratch. */
int spk_omp_threads(void);
int spk_omp_thread(void);

/* Below this length a parallel region costs more than the loop (a fork/join is ~1-5 us, a
 * 8k-element axpy ~2 us on one core), so short vectors run on one thread, as one chunk. */
#define SPK_OMP_MIN_N 8192
/* 256 chunks: the static split of the chunks stays within ~3% of even for 3, 12 or 24
 * threads (64 would leave 12.5% at 12 and 24), and up to 256 threads share a sum. Their cost
 * was not measurable: a 2-core EPYC summed x'y at n = 8193 .. 2^20 as fast with 256 chunks as
 * with 64 and as with the reduction clause, on 1 and on 2 threads. */
#define SPK_CHUNKS 256

static inline int spk_chunks(int64_t n) { return n > SPK_OMP_MIN_N ? SPK_CHUNKS : 1; }

/* Chunk c of nc over [0, n) is [spk_chunk_lo(n, nc, c), spk_chunk_lo(n, nc, c + 1)). */
static inline int64_t spk_chunk_lo(int64_t n, int nc, int c) { return n * c / nc; }

/* x'y over [lo, hi), in vector lanes when `lanes` (nc > 1): the body every chunked dot of the
 * CPU runs (kernels/vec_cpu.c). */
double spk_dot_chunk(const double *x, const double *y, int64_t lo, int64_t hi, int lanes);

/* The partials of the nc chunks, added in chunk order. */
static inline double spk_chunks_sum(const double *part, int nc)
{
    double s = 0.0;
    for (int c = 0; c < nc; c++)
        s += part[c];
    return s;
}

/* x'y and x'z in one pass, each summed as above (kernels/vec_cpu.c: the CPU table's dot2, and
 * BiCGStab's pair of dots with z = x). */
void spk_host_dot2(int64_t n, const double *x, const double *y, const double *z, double *r0,
                   double *r1);

/* ---- CUDA context plumbing (src/cuda_ctx.cu; stubs in kernels/cuda_stub.c without CUDA) ------ */
/* Probe for a usable GPU: 1 and a name, or 0 and the reason in `why`. */
int spk_cuda_probe(char *name, size_t name_len, char *why, size_t why_len);
spk_status spk_cuda_init(spk_context *ctx);       /* stream, cuBLAS handle, scratch      */
void spk_cuda_fini(spk_context *ctx);
/* Copy `bytes` from device memory to host memory on the context's stream and wait. Stub:
 * SPK_ERR_NOT_COMPILED. */
spk_status spk_cuda_download_bytes(spk_context *ctx, void *host, const void *dev, size_t bytes);
/* Make GPU (local_rank mod the GPUs this process sees) the calling thread's current device,
 * before a context is made on it (one GPU per node-local MPI rank): 1 and its ordinal in
 * *ordinal, or 0 and the reason in `why`. Stub: 0. */
int spk_cuda_select(int local_rank, int *ordinal, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif /* SPK_INTERNAL_H */
