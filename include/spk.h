/* spk.h -- the one public header of libspk, a sparse Krylov solver for NVIDIA GPUs with a
 * CPU reference backend.
 *
 * Conventions
 *  - Every call that can fail returns spk_status; SPK_OK is 0. The detail of the last failure
 *    (file, line of a .mtx, which argument) is kept on the context: spk_last_error(ctx).
 *  - Whether a solve converged is not an error: spk_solve returns SPK_OK and sets
 *    spk_result.reason (positive converged, negative diverged), after PETSc's KSPConvergedReason.
 *  - Handles are opaque. The caller owns what it creates and destroys it; destroy functions are
 *    NULL-safe. Host arrays passed in are copied unless the function says otherwise.
 *  - Thread safety: a context and everything made from it belong to one thread at a time. Two
 *    threads may use two contexts concurrently; the library keeps no global mutable state
 *    beyond a few atomic per-process caches of CUDA kernel occupancy (one GPU model a process).
 *    A context's allocation counter is atomic (the one field two threads sharing a context by
 *    mistake would both write); nothing else in it is.
 *  - The library never prints and never exits. It reads environment variables once, when a
 *    context is created: tuning knobs for benchmarks and tests (SPK_BATCH_US, SPK_CUDA_GRAPH,
 *    SPK_CSR_KERNEL, SPK_ELL_INDEX, ...: docs/api.md lists them all and what each does) and the
 *    host memory it may assume (SPK_HOST_MEMORY); an unknown value fails spk_context_create
 *    with a message naming the variable and the values it takes.
 *  - Sizes are checked against what the process may hold (physical memory, ulimit -v / -d,
 *    SPK_HOST_MEMORY) before large allocations: SPK_ERR_NOMEM at once, not an OOM kill later.
 */
#ifndef SPK_H
#define SPK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SPK_BUILDING_LIBRARY) && defined(__GNUC__)
#define SPK_API __attribute__((visibility("default")))
#else
#define SPK_API
#endif

#define SPK_VERSION_MAJOR 0
#define SPK_VERSION_MINOR 6
#define SPK_VERSION_PATCH 0
#define SPK_VERSION_STRING "0.6.0"

/* ---- status: did the call fail ------------------------------------------------------------ */
typedef enum spk_status {
    SPK_OK = 0,
    SPK_ERR_ARG,           /* a bad argument: NULL, negative size, dimension mismatch       */
    SPK_ERR_NOMEM,         /* a host allocation failed                                      */
    SPK_ERR_IO,            /* a file could not be opened, read or written                   */
    SPK_ERR_PARSE,         /* a file is malformed; the message names the file and line      */
    SPK_ERR_UNSUPPORTED,   /* valid input the library does not handle (complex, ELL/DIA fill)*/
    SPK_ERR_CUDA,          /* a CUDA / cuBLAS call failed, including out of device memory   */
    SPK_ERR_NOT_COMPILED,  /* the feature (CUDA) is not available: not built into this
                              library, or the shared library's CUDA backend not found (the
                              message says where it was looked for)                          */
    SPK_ERR_MPI            /* an MPI call failed (spk_mpi.h: distributed solves)             */
} spk_status;

typedef enum spk_device {
    SPK_DEVICE_AUTO = 0,   /* the GPU when one is usable, else the CPU                      */
    SPK_DEVICE_CPU,
    SPK_DEVICE_CUDA
} spk_device;

typedef enum spk_format {
    SPK_FMT_AUTO = 0,      /* chosen from row-length statistics (see docs/selection.md)     */
    SPK_FMT_COO,
    SPK_FMT_CSR,
    SPK_FMT_ELL,
    SPK_FMT_HYB,
    SPK_FMT_JDS,
    SPK_FMT_DIA,           /* diagonals (stencils, banded): the CPU only, see docs/formats.md */
    SPK_FMT_BSR,           /* dense d x d blocks, one column index a block (d = 2 .. 8: nodal
                              unknowns of elasticity), for a pattern made of such blocks      */
    SPK_FMT_SELL           /* SELL-C-sigma: rows sorted by length within windows of 256,
                              slices of 32 padded to their own longest row (skewed rows)     */
} spk_format;
#define SPK_FMT_COUNT 9

typedef enum spk_method {
    SPK_METHOD_AUTO = 0,   /* CG if symmetric with a positive diagonal, MINRES if symmetric
                              otherwise, else BiCGStab; MINRES where CG meets an indefinite
                              A, GMRES where BiCGStab cannot go on                          */
    SPK_METHOD_CG,
    SPK_METHOD_BICGSTAB,
    SPK_METHOD_GMRES,
    SPK_METHOD_FGMRES,     /* flexible GMRES(m): M may change from one iteration to the next */
    SPK_METHOD_MINRES      /* symmetric (indefinite) A, SPD M                                */
} spk_method;

/* The preconditioners: each is a row of the library's preconditioner table (docs/design.md).
 * USER is the caller's own, made of callbacks (spk_precond_user, below). AUTO, the default,
 * resolves when a solver is made: Jacobi where A's diagonal allows it (positive for CG and
 * MINRES, nonzero for the others), else none; spk_result.precond says which ran. */
typedef enum spk_precond {
    SPK_PRECOND_NONE = 0,
    SPK_PRECOND_JACOBI,    /* M = diag(A)                                                   */
    SPK_PRECOND_USER,      /* spk_options.precond_user                                      */
    SPK_PRECOND_AUTO,
    SPK_PRECOND_AMG,       /* smoothed-aggregation algebraic multigrid (spk_options.amg)    */
    SPK_PRECOND_ILU0,      /* incomplete LU, no fill (spk_options.ilu)                       */
    SPK_PRECOND_IC0,       /* incomplete Cholesky, no fill (spk_options.ilu)                 */
    SPK_PRECOND_ILUT,      /* incomplete LU with threshold and pivoting (spk_options.ilu)    */
    SPK_PRECOND_BJACOBI,   /* block-Jacobi, d x d diagonal blocks (spk_options.block_size)   */
    SPK_PRECOND_CHEBYSHEV  /* Chebyshev polynomial in D^-1 A (spk_options.poly_degree)      */
} spk_precond;
#define SPK_PRECOND_COUNT 10

/* The precision of the Krylov method's matrix (docs/solvers.md, "Mixed precision"). MIXED:
 * the SpMV inside the method reads A's values rounded to fp32, in the layout of A's format
 * (its fp32 twin: 8 bytes a CSR nonzero in place of 12, 4 a DIA slot in place of 8);
 * reductions and the preconditioner stay fp64 (AMG's cycle takes fp32 values too,
 * spk_amg_options.fp32), the vectors too but for CG with none or Jacobi on a large system
 * on a GPU, which stores its inner vectors in fp32, and an outer defect-correction loop
 * with the fp64 A makes the answer meet rtol against the fp64 matrix. Both devices. AUTO:
 * MIXED where the measurements found it faster for the same answer (CG with none or Jacobi on
 * a matrix past the cache; AMG, whose V-cycle then runs in fp32), DOUBLE elsewhere;
 * spk_result.precision_choice says which and why. */
typedef enum spk_precision {
    SPK_PRECISION_DOUBLE = 0,
    SPK_PRECISION_MIXED,
    SPK_PRECISION_AUTO
} spk_precision;

/* ---- reason: did the solve converge (after PETSc's KSPConvergedReason) ------------------- */
typedef enum spk_reason {
    SPK_REASON_NONE = 0,                   /* not solved yet                                */
    SPK_CONVERGED_RTOL = 2,                /* ||r|| <= rtol ||b||                           */
    SPK_CONVERGED_ATOL = 3,                /* ||r|| <= atol                                 */
    SPK_CONVERGED_HAPPY_BREAKDOWN = 4,     /* the Krylov space became invariant: x is exact */
    SPK_CONVERGED_ZERO_RHS = 5,            /* b = 0, so x = 0                               */
    SPK_DIVERGED_MAXIT = -3,               /* maxiter reached                               */
    SPK_DIVERGED_DTOL = -4,                /* ||r|| > dtol max(||b||, ||r0||): diverging     */
    SPK_DIVERGED_BREAKDOWN = -5,           /* a recurrence denominator vanished             */
    SPK_DIVERGED_INDEFINITE = -8,          /* p'Ap <= 0 (CG) or r'M^-1 r < 0: A or M not SPD */
    SPK_DIVERGED_NANORINF = -9,            /* a residual became NaN or Inf                  */
    SPK_DIVERGED_TRUE_RESIDUAL_MISMATCH = -10, /* recursive and true residual disagree      */
    SPK_DIVERGED_STAGNATION = -11,         /* no progress over options.stagnation iterations */
    SPK_DIVERGED_TIME_LIMIT = -12,         /* options.max_time seconds passed               */
    SPK_DIVERGED_INTERRUPTED = -13         /* the monitor callback asked to stop            */
} spk_reason;

typedef struct spk_context spk_context;
typedef struct spk_matrix spk_matrix;
typedef struct spk_solver spk_solver;

/* ---- context ------------------------------------------------------------------------------- */

/* Create a context on `device`. AUTO resolves to CUDA when a GPU is usable, else CPU.
 * CUDA with no usable GPU: SPK_ERR_CUDA (or SPK_ERR_NOT_COMPILED without CUDA support:
 * libspk.so loads its CUDA backend libspk_cuda.so at the first context that asks for a GPU,
 * from SPK_CUDA_LIBRARY, else from beside itself, else from the library path), and
 * *ctx is still set to a context that holds the message (destroy it).
 * Returns SPK_ERR_ARG (ctx NULL), SPK_ERR_NOMEM, SPK_ERR_CUDA, SPK_ERR_NOT_COMPILED. */
SPK_API spk_status spk_context_create(spk_context **ctx, spk_device device);
SPK_API void spk_context_destroy(spk_context *ctx);
/* The device the context resolved to (CPU or CUDA, never AUTO). */
SPK_API spk_device spk_context_device(const spk_context *ctx);
/* A one-line description of the device: "NVIDIA H200 (cc 9.0, 132 SMs, 140 GiB)" or
 * "CPU (2 OpenMP threads)". */
SPK_API const char *spk_context_device_name(const spk_context *ctx);
/* Number of allocations (host and device) the context has made so far: lets a caller check
 * that a solve loop allocates nothing after its first pass. Counted atomically. */
SPK_API uint64_t spk_context_alloc_count(const spk_context *ctx);

/* Static text of a status ("invalid argument"). Never NULL. */
SPK_API const char *spk_status_str(spk_status st);
/* Detail of the last failure on this context, "" if none. Never NULL (even for ctx NULL). */
SPK_API const char *spk_last_error(const spk_context *ctx);
/* "CONVERGED_RTOL", "DIVERGED_INDEFINITE", ... Never NULL. */
SPK_API const char *spk_reason_str(spk_reason reason);
SPK_API const char *spk_format_str(spk_format fmt);     /* "csr" ...                 */
SPK_API const char *spk_method_str(spk_method m);       /* "cg" ...                  */
SPK_API const char *spk_device_str(spk_device d);       /* "cpu", "cuda", "auto"     */
SPK_API const char *spk_precond_str(spk_precond p);     /* "none", "jacobi", "amg", "user" */
SPK_API const char *spk_precision_str(spk_precision p); /* "double", "mixed", "auto" */
/* One line on what the preconditioner is and when it helps (for a --help text). Never NULL. */
SPK_API const char *spk_precond_summary(spk_precond p);
/* Parse the names above; SPK_ERR_ARG for an unknown name. spk_precond_parse does not take
 * "user": a user preconditioner comes with its callbacks (spk_options.precond_user). */
SPK_API spk_status spk_format_parse(const char *s, spk_format *fmt);
SPK_API spk_status spk_method_parse(const char *s, spk_method *m);
SPK_API spk_status spk_device_parse(const char *s, spk_device *d);
SPK_API spk_status spk_precond_parse(const char *s, spk_precond *p);
/* 1 if this library has CUDA support: built in (the static library of a CUDA build), or
 * the shared library's CUDA backend found and loaded (this call loads it). Whether there is a
 * usable GPU is spk_context_create's answer. */
SPK_API int spk_has_cuda(void);
/* The CUDA stream (a cudaStream_t) on which the context queues all its work, or NULL on a CPU
 * context: a user preconditioner's own kernels queued there run in order with the solve. */
SPK_API void *spk_context_stream(const spk_context *ctx);

/* ---- matrices ------------------------------------------------------------------------------ */

/* Read a Matrix Market file (coordinate or array; real, integer or pattern; general, symmetric
 * or skew-symmetric) into a matrix: duplicates summed, symmetric storage expanded.
 * SPK_ERR_IO, SPK_ERR_PARSE (message: "file:line: expected ..."), SPK_ERR_UNSUPPORTED
 * (complex, hermitian), SPK_ERR_NOMEM. */
SPK_API spk_status spk_matrix_read_mtx(spk_context *ctx, const char *path, spk_matrix **A);

/* Generate a test matrix from a spec: "poisson2d:N", "poisson3d:N", "poisson3d27:N",
 * "elasticity3d:N" (a synthetic 3x3-block stencil, not elasticity), "lame3d:N[:NU]" (Q1 linear
 * elasticity on N^3 cells, clamped at x = 0, Poisson ratio NU default 0.3), "jump3d:N[:CONTRAST]"
 * (7-point diffusion with a coefficient jumping between 1 and CONTRAST, default 1e4, on 4^3
 * sub-cubes), "powerlaw:N:AVG[:SEED]", "band:N:MIN:MAX[:HALF[:SKEW[:SEED]]]",
 * "rmat:SCALE[:EF[:SEED]]" (Graph500's R-MAT graph, 2^SCALE vertices, EF 2^SCALE edges, default
 * EF 16), "mesh2d:N[:SEED]" (an N x N point triangle mesh numbered at random); the graphs'
 * matrices are symmetric and strictly diagonally dominant; src/generate.c describes each. SPK_ERR_ARG for an unknown or bad spec or one too large for 32-bit indices,
 * SPK_ERR_NOMEM (before any work when the matrix cannot fit). */
SPK_API spk_status spk_matrix_generate(spk_context *ctx, const char *spec, spk_matrix **A);
/* 1 if `s` looks like a generator spec (a known name followed by ':'), else 0. */
SPK_API int spk_is_generator_spec(const char *s);
/* The coordinates of the nodes of a generated matrix (for multigrid setups that take them):
 * *xyz is malloc'ed (the caller free()s it) and holds *nodes x *dim values, x, y[, z] of node 0,
 * then node 1, ..., the nodes in the matrix's order (a node holds 3 consecutive unknowns in
 * elasticity3d and lame3d, one in the others). poisson2d: dim 2; poisson3d, poisson3d27,
 * elasticity3d, jump3d: dim 3, the interior grid points (x + 1) / (N + 1), x fastest; lame3d:
 * dim 3, its unclamped nodes (i, j, k) / N, i >= 1, x fastest. SPK_ERR_ARG for a bad spec (as
 * spk_matrix_generate) or a NULL argument, SPK_ERR_UNSUPPORTED for powerlaw and band (no
 * grid), SPK_ERR_NOMEM. On failure *xyz is NULL, *nodes and *dim 0. */
SPK_API spk_status spk_generate_coords(spk_context *ctx, const char *spec, double **xyz,
                                       int64_t *nodes, int *dim);

/* Matrix from host CSR arrays with 64-bit row offsets. `base` is 0 or 1. Columns within a row
 * may be unsorted and may repeat (repeats are summed). The arrays are copied.
 * SPK_ERR_ARG (NULL, sizes, base, rowptr not starting at base or decreasing, an index outside
 * the matrix, a NaN/Inf value), SPK_ERR_NOMEM. On failure *A is NULL. */
SPK_API spk_status spk_matrix_from_csr(spk_context *ctx, int64_t nrows, int64_t ncols,
                                       const int64_t *rowptr, const int32_t *colind,
                                       const double *val, int base, spk_matrix **A);
/* Matrix from COO triplets (element assembly order; duplicates summed). Copied. Statuses as
 * spk_matrix_from_csr. */
SPK_API spk_status spk_matrix_from_coo(spk_context *ctx, int64_t nrows, int64_t ncols,
                                       int64_t nnz, const int32_t *row, const int32_t *col,
                                       const double *val, int base, spk_matrix **A);
/* Matrix from CSR arrays in the GPU memory of a CUDA context (d_rowptr nrows + 1 offsets,
 * d_colind and d_val rowptr[nrows] - base entries). The caller keeps ownership of the arrays:
 * they are copied (to the host, then assembled as spk_matrix_from_csr does; the matrix
 * uploads its own layout when prepared), so they may be freed or changed on return.
 * SPK_ERR_ARG (as from_csr, or a CPU context), SPK_ERR_NOMEM, SPK_ERR_CUDA (a bad device
 * pointer), SPK_ERR_NOT_COMPILED (no CUDA support). */
SPK_API spk_status spk_matrix_from_csr_device(spk_context *ctx, int64_t nrows, int64_t ncols,
                                              const int64_t *d_rowptr, const int32_t *d_colind,
                                              const double *d_val, int base, spk_matrix **A);
/* NULL-safe. A solver made from A must be destroyed first. */
SPK_API void spk_matrix_destroy(spk_matrix *A);

/* New values, same pattern: val holds nnz values IN THE ORDER OF THE ARRAYS THE MATRIX WAS MADE
 * FROM (the val of spk_matrix_from_csr / from_coo, duplicates included and summed again; for a
 * matrix read from a file or generated, the order of spk_matrix_csr's arrays). nnz must equal
 * that count. val_on_device = 1: val is in the GPU memory of a CUDA context (on a CPU context
 * it is a host pointer either way). No re-analysis: the canonical values are rewritten by a
 * precomputed map and the prepared layout is refilled in place. For A prepared on ctx's GPU
 * this all happens on the device: val is copied up once, checked, gathered and the layout
 * refilled there; A's host values (spk_matrix_csr) are then brought up to date only when read.
 * The first such update allocates the device buffers of that path once (the map, a staging
 * and a value array, the layout's row offsets); on the host path the first update from device
 * memory allocates a host staging buffer once. Later updates allocate nothing.
 * `symmetric` and `diag_positive` of spk_matrix_get_info are recomputed when next read.
 * Solvers made from A refresh their preconditioner at their next solve (or call
 * spk_solver_refresh). The caller keeps val.
 * SPK_ERR_ARG (NULL, destroyed matrix, nnz differs from the creation count, a NaN/Inf value:
 * then A is unchanged), SPK_ERR_NOMEM, SPK_ERR_CUDA (the GPU path's buffers could not be made:
 * A is unchanged and its later updates take the host path; or a copy or kernel failed: the
 * values are taken when possible and the GPU layout is dropped and rebuilt at the next use). */
SPK_API spk_status spk_matrix_update_values(spk_context *ctx, spk_matrix *A, int64_t nnz,
                                            const double *val, int val_on_device);

/* Row-length statistics, computed once when the matrix is made (symmetric, the diagonal's
 * signs and the value range again after a value update, from the host values: downloaded first after an
 * update on the GPU). SPK_ERR_ARG for NULL or a destroyed matrix, SPK_ERR_CUDA (that download
 * failed). */
typedef struct spk_matrix_info {
    int64_t nrows, ncols, nnz;
    int64_t row_min, row_max, empty_rows;
    double  row_mean, row_sd, row_cv;      /* cv = sd / mean                                   */
    int64_t row_p33, row_p50, row_p95, row_p99;
    double  ell_fill;                      /* nrows * row_max / nnz (1 = no padding)           */
    int64_t hyb_width;                     /* ELL width of the HYB split (Bell & Garland)      */
    int64_t hyb_coo_nnz;                   /* entries past that width, held as COO             */
    int     symmetric;                     /* 1 if A == A' (pattern and values)                */
    int     diag_positive;                 /* 1 if every diagonal entry exists and is > 0      */
    int     diag_nonzero;                  /* 1 if every diagonal entry exists and is != 0     */
    size_t  bytes[SPK_FMT_COUNT];          /* memory of each format (values+indices+padding)   */
    int64_t dia_diags;                     /* distinct diagonals j - i holding entries, counted
                                              up to 64; 65 means more (no DIA layout)         */
    double  dia_fill;                      /* dia_diags * nrows / nnz (1 when nnz = 0; 0 above
                                              64 diagonals)                                   */
    int64_t dia_partial_rows;              /* rows without an entry on each of those diagonals
                                              (0 above 64 diagonals)                          */
    double  val_absmax, val_absmin;        /* the largest |a_ij| and the smallest nonzero one
                                              (0 without nonzeros)                            */
    int64_t bsr_block;                     /* the largest d in 2 .. 8 such that the pattern is
                                              made of full d x d blocks aligned to multiples
                                              of d (every entry of a block stored, explicit
                                              zeros included); 1: none                        */
    double  bsr_fill;                      /* BSR's block slots over its blocks: block rows x
                                              the longest one / blocks (1 = no padding; 0
                                              when bsr_block is 1)                            */
    double  sell_fill;                     /* SELL's slots / nnz: each slice of 32 rows padded
                                              to its longest after sorting the rows by length
                                              within windows of 1024 (1 when nnz = 0)         */
    int64_t bandwidth;                     /* max |j - i| over the entries (0 without any)     */
    double  coherence;                     /* share of the entries (i, j), i >= 1, whose
                                              neighbour (i - 1, j - 1) is an entry too: ~1 for
                                              stencils and grid-numbered meshes (a warp's rows
                                              gather consecutive x), ~0 for scattered columns
                                              (0 when no entry has i >= 1)                    */
} spk_matrix_info;
SPK_API spk_status spk_matrix_get_info(const spk_matrix *A, spk_matrix_info *info);

/* What assembly did with the entries A was made from: *summed (may be NULL) receives the
 * number of input entries added into another one at the same position (duplicates, and the
 * mirrors of symmetric storage that met an entry); *both_triangles (may be NULL) the
 * off-diagonal positions that a symmetric or skew-symmetric file listed as both (i,j) and
 * (j,i), each of which was therefore summed from the two (a symmetric file should list one
 * triangle: such a file is most likely a full matrix under a symmetric banner). 0 for a
 * generated matrix. The library never prints: the solve command says so under --explain and
 * on stderr. SPK_ERR_ARG for NULL or a destroyed matrix. */
SPK_API spk_status spk_matrix_input_counts(const spk_matrix *A, int64_t *summed,
                                           int64_t *both_triangles);

/* Choose a format for `device` from the statistics: returns it and writes a one-line reason
 * into `reason` (may be NULL). A pure function of the statistics and the device. */
SPK_API spk_format spk_select_format(const spk_matrix_info *info, spk_device device,
                                     char *reason, size_t reason_len);
/* Whether `fmt` can hold a matrix of these statistics on `device`: SPK_OK, or
 * SPK_ERR_UNSUPPORTED with the limit it breaks in `why` (ELL past its padding limit, DIA past
 * its diagonal or padding limit or on the GPU). The limits spk_matrix_prepare applies. */
SPK_API spk_status spk_format_check(const spk_matrix_info *info, spk_format fmt,
                                    spk_device device, char *why, size_t why_len);

/* Prepare A for SpMV on the context's device in `fmt` (AUTO: spk_select_format). Converts and
 * uploads; a later call with another format replaces the previous layout, and a call for the
 * format A is prepared in already (AUTO: the one auto chose) does nothing.
 * SPK_ERR_UNSUPPORTED: ELL whose padding exceeds 3x nnz (use HYB); DIA past 64 diagonals or
 * 3x padding (use CSR), or DIA on the GPU (CPU only); BSR on a pattern not made of full
 * d x d blocks (spk_matrix_info.bsr_block 1) or whose block rows pad past 3x. */
SPK_API spk_status spk_matrix_prepare(spk_context *ctx, spk_matrix *A, spk_format fmt);
/* The prepared format (SPK_FMT_AUTO if none yet) and the backend's name ("ell-cuda"). */
SPK_API spk_format spk_matrix_format(const spk_matrix *A);
SPK_API const char *spk_matrix_backend_name(const spk_matrix *A);
/* Why A is prepared in its format: the automatic choice's reason, or "ell: asked for (auto
 * would pick csr)"; "" before the first prepare. Owned by A, valid until it is prepared again. */
SPK_API const char *spk_matrix_format_reason(const spk_matrix *A);

/* y = alpha*A*x + beta*y with host arrays, on the context's device in the prepared format
 * (prepares with AUTO first if needed). x has ncols entries, y nrows. */
SPK_API spk_status spk_matrix_spmv(spk_context *ctx, spk_matrix *A, double alpha,
                                   const double *x, double beta, double *y);

/* The same with x and y in the memory of the context's device (GPU memory of a CUDA context,
 * host arrays of a CPU one): no transfer, queued on the context's stream (see
 * spk_context_stream). A user preconditioner's apply may call it on a matrix other than the
 * one being solved. A must be prepared on ctx (it is prepared with AUTO if it is not). */
SPK_API spk_status spk_matrix_spmv_device(spk_context *ctx, spk_matrix *A, double alpha,
                                          const double *d_x, double beta, double *d_y);

/* Host copy of the canonical CSR (0-based, rows sorted, duplicates summed). The pointers are
 * owned by A and valid until A is destroyed; spk_matrix_update_values rewrites the values in
 * place (the pointers stay). After an update made on the GPU the host values are brought up to
 * date by this call (one download): call it again after an update to read the new values.
 * SPK_ERR_ARG, SPK_ERR_CUDA (that download failed). */
SPK_API spk_status spk_matrix_csr(const spk_matrix *A, const int64_t **rowptr,
                                  const int32_t **colind, const double **val);

/* ---- solving ------------------------------------------------------------------------------- */

/* Called for every iteration (every `monitor_every` with monitor_every > 1), and at the end,
 * when set: iteration, residual norm, relative residual, seconds since the solve began. It
 * must not call into spk. CG and BiCGStab on the GPU deliver a batch of iterations at once,
 * when it is read back. Return 0 to go on; nonzero asks the solve to stop: it ends at the next
 * check (on the GPU, with the batch in flight) with SPK_DIVERGED_INTERRUPTED and x of the last
 * iteration done (a signal handler can set a flag that the callback returns). */
typedef int (*spk_monitor_fn)(void *user, int64_t it, double rnorm, double rel, double seconds);

/* A preconditioner of the caller's own, as PETSc's PCSHELL or SciPy's M = LinearOperator: an
 * FEM code's domain decomposition, a direct coarse solve, anything that computes z = M^-1 r.
 * Set spk_options.precond = SPK_PRECOND_USER and precond_user to it; the solver copies the
 * struct at creation (`user` must stay valid while the solver lives). Every method takes it
 * (CG and MINRES need M symmetric positive definite; GMRES and BiCGStab apply it on the right
 * and need it fixed, the same operator at every call; FGMRES lets it change between calls). */
typedef struct spk_precond_user {
    const char *name;          /* for messages and --explain; NULL: "user"                     */
    /* z = M^-1 r with r and z of n entries in the memory of the solver's device (GPU memory on
     * a CUDA context, host arrays on a CPU one); z never aliases r. It may call
     * spk_matrix_spmv_device on other matrices, not the solver's own functions. A status
     * other than SPK_OK ends the solve with that status (the message is the library's). */
    spk_status (*apply)(void *user, int64_t n, const double *r, double *z);
    /* Optional: A's values changed (spk_solver_refresh, or the first solve after
     * spk_matrix_update_values); rebuild what depends on them. */
    spk_status (*refresh)(void *user, const spk_matrix *A);
    void       *user;
    /* 1: on a CUDA context apply only queues its work on the context's stream
     * (spk_context_stream), so r is ready for it and z is ready after it in stream order.
     * 0: the stream is synchronised before apply, and z must be complete when it returns. */
    int         stream_ordered;
} spk_precond_user;

/* Smoothed-aggregation AMG (SPK_PRECOND_AMG, docs/solvers.md), after Vanek, Mandel and Brezina
 * (1996) as PyAMG's smoothed_aggregation_solver builds it: symmetric strength of connection,
 * standard aggregation, a tentative prolongator from the near-null space B (per-aggregate QR),
 * P = (I - 4/(3 rho) D^-1 A) T, R = P^T, A_c = R A P, a dense direct solve on the coarsest
 * level; one V-cycle per application. The setup runs on the host (or the GPU: setup); the
 * levels' matrices are spk matrices in their own formats on the context's device, where the
 * V-cycle runs. The
 * zeros of spk_options_default are the defaults written beside each field. */
typedef enum spk_amg_smoother {
    SPK_AMG_JACOBI = 0,        /* damped Jacobi, omega = 1.6 / rho(D^-1 A) (default; .omega)    */
    SPK_AMG_CHEBYSHEV          /* Chebyshev polynomial in D^-1 A on [rho/30, 1.1 rho]           */
} spk_amg_smoother;

typedef struct spk_amg_options {
    /* unknowns per node, interleaved (x0 y0 z0 x1 ...): aggregates are made of whole nodes,
     * and B defaults to the block_size translations. 0 or 1: scalar */
    int           block_size;
    /* the near-null space: nullspace_cols column-major vectors of n entries each (copied at
     * setup; each scaled by a power of two, so its scale does not matter; a zero vector is
     * SPK_ERR_ARG). NULL: from coords when given, else the translations (B = ones for
     * scalars) */
    const double *nullspace;
    int           nullspace_cols;
    /* node coordinates, coord_dim (2 or 3) per node, node-major (x0 y0 z0 x1 ...), one node
     * per block_size unknowns (block_size must equal coord_dim): B = the rigid-body modes,
     * 3 in 2-D, 6 in 3-D, less a rotation that moves no node */
    const double *coords;
    int           coord_dim;
    double        theta;       /* strength threshold: |a_ij| >= theta sqrt(|a_ii a_jj|); 0     */
    spk_amg_smoother smoother;
    int           sweeps;      /* pre- and post-smoothing sweeps per level; 0: 1               */
    int           degree;      /* Chebyshev degree; 0: 2                                       */
    int64_t       max_coarse;  /* rows of the coarsest level, solved directly; 0: 500          */
    int           max_levels;  /* 0: 10                                                        */
    /* what spk_solver_refresh does after a value update: 0 (default) keeps the aggregates, T
     * and the near-null space and recomputes P, R, the coarse matrices and the smoothers;
     * 1 builds the whole hierarchy again (new strength, aggregates and T from the new values,
     * with the near-null space given at setup): for values that change what is strong */
    int           rebuild;
    /* the V-cycle's matrix values (every level's A, P and R, and the coarsest level's dense
     * inverse): 1 fp32 (half the bytes of each value; products and sums stay fp64, and the
     * cycle stays a fixed symmetric operator, so CG keeps its fp64 answer and about its
     * iteration count), -1 fp64, 0 (default) fp32 when the solve's precision is MIXED (as
     * AUTO resolves for AMG), fp64 with DOUBLE. A matrix whose values leave fp32's range, or whose format has no fp32
     * kernel on the device, keeps fp64 (spk_solver_precond_describe says so) */
    int           fp32;
    /* where the hierarchy is built (docs/amg.md, "The setup on the GPU"): SPK_AMG_SETUP_AUTO
     * (0, default) on the host, SPK_AMG_SETUP_HOST the same, SPK_AMG_SETUP_DEVICE on the
     * context's GPU (every step there, with MIS(2) aggregation; on a CPU context the host's
     * build with MIS(2) aggregation) */
    int           setup;
    /* SPK_AMG_AGG_AUTO (0, default): standard aggregation on the host, MIS(2) on the GPU;
     * SPK_AMG_AGG_STANDARD; SPK_AMG_AGG_MIS2 (the GPU's, on either device) */
    int           aggregation;
    /* the Jacobi smoother's weight times rho(D^-1 A), in (0, 2): x += (omega / rho) D^-1 r.
     * 0: 1.6, which took 10-15% fewer AMG-CG iterations than the textbook 4/3 on 3-D Poisson,
     * jump and elasticity problems (docs/amg.md "The smoother's weight"); 4/3 took fewer on
     * some small structural matrices (bcsstk09: 74 against 84). P's smoothing keeps 4/3 */
    double        omega;
} spk_amg_options;
enum { SPK_AMG_SETUP_AUTO = 0, SPK_AMG_SETUP_HOST = 1, SPK_AMG_SETUP_DEVICE = 2 };
enum { SPK_AMG_AGG_AUTO = 0, SPK_AMG_AGG_STANDARD = 1, SPK_AMG_AGG_MIS2 = 2 };

/* The incomplete factorizations (SPK_PRECOND_ILU0, IC0, ILUT). Their triangular solves run
 * exactly (level-scheduled: the CPU's row loops, cuSPARSE's SpSV on the GPU) or approximately
 * (a fixed number of Jacobi sweeps on each triangular system, SpMV only). The zeros of
 * spk_options_default are the defaults written beside each field. */
typedef enum spk_trisolve {
    SPK_TRISOLVE_AUTO = 0,     /* the measured default of the device (docs/solvers.md)         */
    SPK_TRISOLVE_EXACT,
    SPK_TRISOLVE_JACOBI
} spk_trisolve;

typedef struct spk_ilu_options {
    spk_trisolve trisolve;
    int           sweeps;      /* Jacobi sweeps per triangular solve with SPK_TRISOLVE_JACOBI; 0: 5 */
    double        drop_tol;    /* ILUT: entries below drop_tol times their row's mean magnitude
                                  (||a_i||_1 / nnz(a_i)) dropped; 0: 1e-4                     */
    double        fill_factor; /* ILUT: at most fill_factor nnz(A) entries in L + U; 0: 10        */
} spk_ilu_options;

/* A symmetric reordering made at setup (spk_options.reorder). With SPK_REORDER_RCM the solver
 * computes a permutation P of A's rows and columns (reverse Cuthill-McKee on the pattern of
 * A + A^T: bands the matrix, docs/solvers.md "Reordering"; SPK_REORDER_DEGREE: rows by length)
 * and runs the method and the
 * preconditioner on its own copy B = P A P^T, prepared on the device as A would be (the same
 * format choice). Invisible at the interface: b, x0 and x stay in the caller's order (P b in,
 * P^T y out at each solve; the device entry point stages them through the host), and the norms
 * of the result are those of A's system (a permutation keeps them). Costs: a second copy of A
 * on the host and on the device plus an nnz map (8 bytes an entry) and three host vectors;
 * each value update of A gathers B's values through the map. It helps where A is numbered
 * badly (a mesh in the order its generator emitted it): the SpMV then reads x near each row,
 * and ILU(0)/IC(0), whose dropped fill depends on the order, approximate better (the measured
 * counts are in docs/solvers.md). Not worth it on a matrix already banded. */
typedef enum spk_reorder {
    SPK_REORDER_NONE = 0,      /* A as given (the default)                                     */
    SPK_REORDER_RCM,           /* reverse Cuthill-McKee                                        */
    SPK_REORDER_DEGREE         /* rows by length, longest first (ties by index): the hub rows
                                  of a power-law graph, and the entries of x they share, packed
                                  together; rows of one length side by side on the GPU        */
} spk_reorder;

/* The stopping tests, after PETSc's KSPConvergedDefault (docs/solvers.md), in this order:
 * ||r|| <= max(rtol ||b||, atol): converged; NaN/Inf; ||r|| > dtol max(||b||, ||r0||):
 * DIVERGED_DTOL; the smallest ||r|| so far not lowered by 0.1% for `stagnation` iterations:
 * DIVERGED_STAGNATION; max_time seconds: DIVERGED_TIME_LIMIT; maxiter: DIVERGED_MAXIT. The
 * same tests run on both devices (dtol and stagnation inside the methods' scalar steps). */
typedef struct spk_options {
    spk_method  method;        /* default AUTO                                                 */
    spk_precond precond;       /* default AUTO                                                 */
    spk_format  format;        /* default AUTO                                                 */
    double      rtol;          /* default 1e-8                                                 */
    double      atol;          /* default 0                                                    */
    double      dtol;          /* default 1e5; 0: no divergence test                           */
    int64_t     stagnation;    /* default 2000 iterations; 0: no stagnation test               */
    double      max_time;      /* seconds of the iteration loop; default 0: no limit           */
    int64_t     maxiter;       /* default 0 = max(1000, 10 n)                                   */
    int         restart;       /* GMRES(m) and FGMRES(m); default 30                            */
    int         history;       /* 1: record the residual of every iteration in the result      */
    int64_t     monitor_every; /* with monitor: every k iterations; default 0 (or 1): every one */
    spk_monitor_fn monitor;
    void       *monitor_user;
    int         use_x0;        /* 1: x holds the initial guess; 0: start from x = 0 (default) */
    const spk_precond_user *precond_user;  /* with precond = SPK_PRECOND_USER, else unused    */
    spk_amg_options amg;       /* with precond = SPK_PRECOND_AMG                               */
    spk_ilu_options ilu;       /* with precond = SPK_PRECOND_ILU0, IC0 or ILUT                 */
    int         block_size;    /* block-Jacobi's d (SPK_PRECOND_BJACOBI); 0: amg.block_size, else 1 */
    int         poly_degree;   /* SPK_PRECOND_CHEBYSHEV's degree; 0: 3                          */
    spk_reorder reorder;       /* default SPK_REORDER_NONE (0: spk_options_default sets nothing) */
    /* default DOUBLE. MIXED: the method on A's values in fp32 inside iterative refinement
     * in fp64; runs in double instead (spk_result.precision_reason says why) when a value
     * does not fit fp32 (|a| > FLT_MAX, or a nonzero |a| < FLT_MIN) or the system runs
     * scaled. With SPK_PRECOND_AMG, MIXED is the method in fp64 on A and AMG's V-cycle in
     * fp32 (its values, and its vectors where every level matrix fuses its steps; a matrix
     * whose values leave fp32's range keeps fp64), without refinement. AUTO: MIXED for CG
     * without a preconditioner or with Jacobi on a matrix larger than the device's cache (the
     * rule of docs/solvers.md) and for AMG (unless amg.fp32 < 0), DOUBLE otherwise. A
     * distributed solve takes DOUBLE or AUTO (which is DOUBLE there). */
    spk_precision precision;
} spk_options;
SPK_API void spk_options_default(spk_options *opt);

typedef struct spk_history_entry {
    int64_t it;                /* iteration (0 = the initial residual)                         */
    int64_t cycle;             /* (F)GMRES restart cycle, 0 for the other methods              */
    double  rnorm;             /* recursive (or implicit) residual norm                        */
    double  rel;               /* rnorm / ||b||                                                 */
    double  seconds;           /* since the solve began                                        */
} spk_history_entry;

typedef struct spk_result {
    spk_reason  reason;
    spk_method  method;        /* the method that ran (AUTO resolved)                          */
    spk_format  format;        /* the format that ran                                          */
    spk_precond precond;       /* the preconditioner that ran                                  */
    spk_device  device;
    int64_t     iterations;
    double      bnorm;         /* ||b||                                                        */
    double      rnorm;         /* recursive residual norm at exit                              */
    double      true_rnorm;    /* ||b - A x|| recomputed at exit                               */
    double      rel;           /* rnorm / ||b|| (or rnorm when b = 0)                          */
    double      true_rel;      /* true_rnorm / ||b||                                           */
    double      setup_s;       /* format conversion, upload, preconditioner                    */
    double      precond_setup_s; /* the preconditioner's share of setup_s                      */
    double      solve_s;       /* the iteration loop and the true-residual check               */
    double      per_iter_s;    /* solve_s / max(1, iterations)                                 */
    int         cold;          /* 1: the context's first solve with this method, whose solve_s
                                  holds the GPU's one-time loading of its kernels (the cold
                                  figure); 0: a warm solve                                      */
    spk_history_entry *history;   /* when options.history: owned, free with spk_result_free */
    int64_t     history_len;
    char        method_reason[128]; /* why AUTO picked the method, "" otherwise              */
    char        precond_reason[128]; /* why AUTO picked the preconditioner, "" otherwise       */
    char        format_reason[256]; /* why A ran in its format (spk_matrix_format_reason)       */
    char        reason_detail[256]; /* what lies behind a reason that is not convergence, and
                                       what to try; "" when there is nothing to add            */
    spk_reorder reorder;       /* the ordering the method ran on                               */
    /* with a reorder: A's bandwidth (max |i - j| over its entries) and profile (sum over rows
     * of i - the first column <= i) before and after it; 0 without */
    int64_t     bandwidth_before, bandwidth_after;
    int64_t     profile_before, profile_after;
    spk_precision precision;   /* the precision that ran: DOUBLE where MIXED fell back before
                                  its first step                                             */
    char        precision_reason[160]; /* with MIXED: the refinement steps, or why it fell back
                                          to double (at the start, or part-way); "" otherwise */
    int64_t     refinement_steps; /* outer steps of a MIXED solve (inner fp32 solves); 0 else  */
    char        precision_choice[160]; /* with precision AUTO: what it chose and why; ""
                                          otherwise                                          */
} spk_result;
SPK_API void spk_result_free(spk_result *res);

/* ---- the solver object: set up once, solve many times ------------------------------------- */
/* A solver holds the method (AUTO resolved from A's statistics at creation), a copy of the
 * options, A prepared in opt->format on the context's device, the preconditioner, and a
 * workspace of device vectors made at the first solve and reused by every later one: after
 * the first solve, solving again -- with new right-hand sides, or after
 * spk_matrix_update_values -- allocates nothing (spk_context_alloc_count does not move),
 * unless opt->history asks for a residual history, which each result owns, or the
 * preconditioner is made anew by its refresh (SPK_PRECOND_ILUT, whose pattern follows the
 * values; SPK_PRECOND_AMG with amg.rebuild = 1; a user preconditioner's refresh). On the GPU the
 * first value update of A and the refresh after it make the device update path's buffers
 * once (see spk_matrix_update_values); from the second update on nothing is allocated.
 * Ownership: the solver keeps pointers to ctx and A (not copies); both must outlive it, and
 * ctx must be the context A is used with. One solver per matrix and format at a time: two
 * solvers of different formats on one matrix re-prepare it at each switch. */

/* Create a solver for A with options opt (NULL: spk_options_default). Prepares A and sets up
 * the preconditioner now. SPK_ERR_ARG (NULL, destroyed matrix, A not square, a bad option,
 * SPK_PRECOND_USER without precond_user or its apply), SPK_ERR_UNSUPPORTED (Jacobi with a zero
 * diagonal, or a non-positive one for CG and MINRES; ELL/DIA fill, DIA on the GPU; precision
 * MIXED on a CUDA context),
 * SPK_ERR_NOMEM, SPK_ERR_CUDA. On failure *S is NULL. */
SPK_API spk_status spk_solver_create(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                                     spk_solver **S);
/* Solve A x = b with host arrays b and x (length n). With opt->use_x0, x is the initial guess,
 * else the solve starts from zero. *res is overwritten (release a previous history with
 * spk_result_free first). res->setup_s of the first solve includes the creation's setup.
 * If A's values changed since the last solve, the preconditioner is refreshed first.
 * SPK_ERR_ARG (NULL, destroyed solver, NaN/Inf in b or x0), SPK_ERR_UNSUPPORTED (the refresh
 * found a bad diagonal), SPK_ERR_NOMEM, SPK_ERR_CUDA. Whether it converged: res->reason. */
SPK_API spk_status spk_solver_solve(spk_solver *S, const double *b, double *x, spk_result *res);
/* The same with b and x already on the context's device (cudaMalloc'ed memory of its GPU; on a
 * CPU context, host arrays): no transfer of b or x. A NaN/Inf in b or x0 is found through
 * their norms (SPK_ERR_ARG; d_x is then left as it was). */
SPK_API spk_status spk_solver_solve_device(spk_solver *S, const double *d_b, double *d_x,
                                           spk_result *res);
/* After spk_matrix_update_values: refresh the preconditioner from A's new values in place
 * (Jacobi: the diagonal, from the device values after an update on the GPU, with no allocation
 * but, once, the device array of the diagonal's positions; a user preconditioner: its refresh
 * callback); the prepared layout was refilled by the update itself (with spk_options.reorder,
 * the solver's P A P^T is refilled here first, through its map). Solving does this on its
 * own when needed; calling it says when the cost (and a bad-diagonal failure) happens.
 * SPK_ERR_ARG (NULL, destroyed solver), SPK_ERR_UNSUPPORTED (a zero diagonal, or a
 * non-positive one for CG and MINRES: every solve answers the same until an update makes the
 * diagonal usable again), SPK_ERR_CUDA. */
SPK_API spk_status spk_solver_refresh(spk_solver *S);
/* The method the solver runs (AUTO resolved) and the format A is prepared in. */
SPK_API spk_method spk_solver_method(const spk_solver *S);
SPK_API spk_format spk_solver_format(const spk_solver *S);
/* The matrix the method and the preconditioner run on: A, or with spk_options.reorder the
 * solver's own P A P^T (owned by the solver, valid while it lives; read it, do not update
 * it). NULL for a NULL or destroyed solver. */
SPK_API spk_matrix *spk_solver_operator(spk_solver *S);
/* Seconds of one SpMV (y = A x, the mean of reps after one untimed, synchronised) on the
 * context's device, of A and of spk_solver_operator(S): with a reorder, what the ordering
 * does to the SpMV alone. A not prepared on the context is prepared in the solver's format
 * (or auto's, if that format refuses A). Uses the solver's workspace: allocates only before
 * the first solve. SPK_ERR_ARG (NULL, destroyed solver, reps < 1), SPK_ERR_CUDA. */
SPK_API spk_status spk_solver_spmv_seconds(spk_solver *S, int reps, double *a_s, double *op_s);
/* What the preconditioner is, as `solve --explain` prints it: for AMG the hierarchy (levels,
 * rows, nonzeros, each level's format, operator and grid complexity, smoother, setup time),
 * for the others one line. Writes at most len bytes, always terminated; returns the length the
 * whole text needs (as snprintf). */
SPK_API size_t spk_solver_precond_describe(const spk_solver *S, char *buf, size_t len);
/* Free the workspace, the preconditioner and the handle. NULL-safe. A stays (prepared). */
SPK_API void spk_solver_destroy(spk_solver *S);

/* One-shot: spk_solver_create, spk_solver_solve, spk_solver_destroy.
 * Solve A x = b on the context's device. *res is overwritten (a history held by a previous
 * result must be released with spk_result_free first, or it leaks). b and x are host arrays of length n (A square).
 * opt NULL: spk_options_default. With opt->use_x0, x is the initial guess, else it is
 * overwritten from zero. Returns a status (did the call fail); res->reason says whether the
 * solve converged.
 * SPK_ERR_ARG (NULL, non-square, NaN/Inf in b, bad option), SPK_ERR_UNSUPPORTED (Jacobi with a
 * zero or negative diagonal... see message), SPK_ERR_NOMEM, SPK_ERR_CUDA. */
SPK_API spk_status spk_solve(spk_context *ctx, spk_matrix *A, const double *b, double *x,
                             const spk_options *opt, spk_result *res);

/* ---- Matrix Market vectors (used by the solve command; handy for callers) ------------------ */

/* Read an n x 1 or 1 x n vector (array, or coordinate with missing entries zero and repeated
 * ones summed). *v is malloc'ed and owned by the caller (free()). The size line is checked
 * against the file's length and the memory the process may hold before anything is allocated.
 * SPK_ERR_IO, SPK_ERR_PARSE (not a vector, malformed, repeated entries summing to Inf),
 * SPK_ERR_NOMEM. */
SPK_API spk_status spk_vector_read_mtx(spk_context *ctx, const char *path, double **v, int64_t *n);
/* The same for a vector that must have n entries (a right-hand side): a file announcing
 * another length fails at its size line, before its entries are read or anything is
 * allocated (SPK_ERR_ARG, "b.mtx:2: expected a vector of 18 entries, found a size line
 * announcing 2000000000 x 1"). */
SPK_API spk_status spk_vector_read_mtx_len(spk_context *ctx, const char *path, int64_t n,
                                           double **v);
/* Write an array n x 1 file, with %.17g so that it reads back bit for bit. The path is
 * written in place: a device, a FIFO or a symbolic link's target is written through, never
 * replaced or removed; a regular file without any write permission is refused (SPK_ERR_IO,
 * as cp without -f, even for root). When the write fails, the file is removed only if this
 * call created it; an existing file is left as far as it was written (write to a new name and
 * rename, as the solve command does, to replace a file atomically). */
SPK_API spk_status spk_vector_write_mtx(spk_context *ctx, const char *path, const double *v,
                                        int64_t n, const char *comment);
/* The same onto an open descriptor (stdout, a pipe, a socket), from its current offset; fd
 * stays open and is never truncated. `name` labels messages (may be NULL). */
SPK_API spk_status spk_vector_write_mtx_fd(spk_context *ctx, int fd, const char *name,
                                           const double *v, int64_t n, const char *comment);
/* Write a matrix in coordinate real general form; the path is treated as by
 * spk_vector_write_mtx. */
SPK_API spk_status spk_matrix_write_mtx(spk_context *ctx, const char *path, const spk_matrix *A);

#ifdef __cplusplus
}
#endif
#endif /* SPK_H */
