/* spk_internal.h -- what the library's files share and callers never see: the context, the
 * canonical host CSR, the two tables (SpMV backends and vector operations) and the helpers
 * that turn failures into values. */
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

struct spk_context {
    spk_device device;            /* resolved: CPU or CUDA                                     */
    char       msg[SPK_MSG_LEN];  /* detail of the last failure                                */
    char       device_name[128];
    uint64_t   alloc_count;       /* host + device allocations made through spk_malloc/ops     */
    uint64_t   fail_alloc_at;     /* test hook: make allocation number k fail (0 = never)       */
    void      *cuda;              /* spk_cuda_state (stream, cuBLAS handle, scratch) or NULL    */
};

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
void  spk_free(void *p);
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
 * arrays are not modified. Counting sort by row, then by column within each row: O(nnz + n). */
spk_status spk_csr_from_coo(spk_context *ctx, const spk_coo *coo, spk_csr *out);
/* Allocate an nrows x ncols CSR with room for nnz entries (rowptr zeroed). */
spk_status spk_csr_alloc(spk_context *ctx, int64_t nrows, int64_t ncols, int64_t nnz,
                         spk_csr *out);
/* For each COO entry k (0-based, as passed to spk_csr_from_coo), its position in the CSR that
 * spk_csr_from_coo made of it: *map is malloc'ed with coo->nnz entries, or NULL when the map is
 * the identity (the input was canonical already). O(nnz log(row length)). */
spk_status spk_csr_source_map(spk_context *ctx, const spk_csr *A, const spk_coo *coo,
                              int64_t **gather_ptr, int64_t **gather_src);
/* y = alpha A x + beta y on the host: the reference every backend is tested against. */
void spk_csr_spmv_ref(const spk_csr *A, double alpha, const double *x, double beta, double *y);
/* 1 if A equals its transpose in pattern and value. */
int spk_csr_is_symmetric(const spk_csr *A);
/* Diagonal into d (n = min(nrows, ncols)); missing entries are 0. */
void spk_csr_diagonal(const spk_csr *A, double *d);

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
} spk_mm_header;

/* Read a whole file into COO with symmetric / skew-symmetric storage expanded (the mirror of
 * each off-diagonal entry added; a skew diagonal entry is an error). Array files become COO
 * with every entry. Errors: "path:line: expected ..." with SPK_ERR_PARSE. */
spk_status spk_mm_read_coo(spk_context *ctx, const char *path, spk_mm_header *hdr,
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
/* Only the value-dependent statistics: symmetric and diag_positive (after a value update). */
void spk_stats_values(const spk_csr *A, spk_matrix_info *info);
/* --format auto on the GPU. Measured (bench_spmv, NVIDIA H200, 2026-11-29, bench/results/2026-11-29-nvidia-h200-spmv.json):
 * below ~1 M nonzeros an SpMV is launch-bound. Every single-kernel format took 5.6-6.3 us on the
 * small real matrices of inputs/ (82 to 18,437 nonzeros) whatever their row lengths, and the
 * two-launch formats (HYB = ELL + COO, COO = scale + accumulate) 10-17 us; CSR was within 7% of
 * the fastest format on 14 of 15 of them, while the rules below picked 1.2-2.2x slower formats
 * on 6. 2^20 nonzeros in CSR are ~12 MB, ~3 us at the measured 4.27 TB/s: under one launch. */
#define SPK_SEL_SMALL_NNZ (1 << 20)
/* The GPU rule by the shape of the row lengths alone (docs/selection.md), which
 * spk_select_format applies to matrices of SPK_SEL_SMALL_NNZ nonzeros and more. */
spk_format spk_select_shape(const spk_matrix_info *info, char *why, size_t len);
/* Bell & Garland's HYB width (CUSP compute_optimal_entries_per_row) from a row-length
 * histogram: the largest K such that at least max(4096, nrows/3) rows have >= K entries
 * (with fewer rows than 4096 the relative rule alone applies). */
int64_t spk_hyb_width(const spk_csr *A);

/* ---- the matrix handle ------------------------------------------------------------------ */
struct spk_spmv_backend;
struct spk_matrix {
    spk_csr          csr;          /* canonical host copy                                       */
    spk_matrix_info  info;
    const struct spk_spmv_backend *be;   /* prepared backend, NULL until prepared             */
    void            *state;        /* the backend's layout (host or device)                     */
    spk_context     *ctx_prepared; /* context that owns `state`'s device memory                */
    uint32_t         magic;        /* SPK_MATRIX_MAGIC while alive: catches use after destroy   */
    /* value updates (src/update.c): canonical entry p is the sum, in input order, of the input
     * entries gather_src[gather_ptr[p] .. gather_ptr[p+1]) of the arrays the matrix was made
     * from; both NULL when that is the identity (file, generator, input already canonical). */
    int64_t          nnz_in;       /* entries of those arrays: the length an update must have  */
    int64_t         *gather_ptr;   /* nnz + 1 offsets, or NULL                                  */
    int64_t         *gather_src;   /* nnz_in input indices, increasing within each entry        */
    double          *stage;        /* nnz_in host doubles for updates from device memory; made
                                      at the first such update, then reused                     */
    uint64_t         version;      /* bumped by every update: solvers see a stale diagonal      */
    int              info_stale;   /* symmetric / diag_positive predate the last update         */
    /* spk_matrix_spmv's device temporaries (ncols + nrows), kept for the next call */
    double          *spmv_x, *spmv_y;
    spk_context     *ctx_spmv;     /* context they were made for (compared, never dereferenced) */
    const struct spk_vec_ops *spmv_ops;  /* the table that frees them                         */
};
#define SPK_MATRIX_MAGIC 0x5350b4a7u

/* The statistics with the value-dependent ones (symmetric, diag_positive) brought up to date
 * after an update: recomputed here, on demand, so that an update stays a copy. */
const spk_matrix_info *spk_matrix_info_of(spk_matrix *A);
/* Release spk_matrix_spmv's cached temporaries (destroy, or before a re-prepare elsewhere). */
void spk_matrix_spmv_release(spk_matrix *A);

/* The solver handle (src/solve.c); defined there, declared here for the magic check. */
#define SPK_SOLVER_MAGIC 0x53507c9eu

/* ---- the SpMV backend table (kernels/) ---------------------------------------------------- */
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
} spk_spmv_backend;

/* The registry (kernels/backends.c): the backend for (format, device), or NULL. A backend of a
 * device not compiled in is still listed but answers SPK_ERR_NOT_COMPILED from setup. */
const spk_spmv_backend *spk_backend_find(spk_format fmt, spk_device dev);
const spk_spmv_backend *const *spk_backend_all(size_t *count);

/* ---- the vector-ops table (kernels/vec_cpu.c, kernels/vec_cuda.cu) ---------------------- */
/* All vectors are device vectors of the ops' device (host memory for the CPU table). Scalar
 * results come back to host doubles. */
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
    /* y = d .* x (Jacobi apply) */
    spk_status (*pmul)(spk_context *ctx, int64_t n, const double *d, const double *x,
                       double *y);
    /* d = 1 / d, checking d: first index with d <= 0 (or == 0 if allow_negative) into *bad,
     * else -1. */
    spk_status (*invert)(spk_context *ctx, int64_t n, double *d, int allow_negative,
                         int64_t *bad);
    /* CG fused update: x += a p; r -= a q; z = dinv .* r (z = r alias when dinv NULL);
     * rr = r'r, rz = r'z. One pass. */
    spk_status (*cg_update)(spk_context *ctx, int64_t n, double a, const double *p,
                            const double *q, double *x, double *r, const double *dinv,
                            double *z, double *rr, double *rz);
    /* p = z + beta p */
    spk_status (*xpay)(spk_context *ctx, int64_t n, const double *z, double beta, double *p);
    /* BiCGStab: p = r + beta (p - omega v) */
    spk_status (*bicg_p)(spk_context *ctx, int64_t n, const double *r, double beta,
                         double omega, const double *v, double *p);
    /* h[0..k) = V' w, V column-major n x k with leading dimension ldv (h is a host array) */
    spk_status (*gemv_t)(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                         const double *w, double *h);
    /* w = w - V h (h host array of k) */
    spk_status (*gemv_n_sub)(spk_context *ctx, int64_t n, int k, const double *V, int64_t ldv,
                             const double *h, double *w);
    /* Block until queued work is done (timing). */
    spk_status (*sync)(spk_context *ctx);
} spk_vec_ops;

const spk_vec_ops *spk_vec_ops_cpu(void);
const spk_vec_ops *spk_vec_ops_cuda(void);   /* a table answering NOT_COMPILED without CUDA */
const spk_vec_ops *spk_vec_ops_for(spk_device dev);

/* ---- CUDA context plumbing (src/cuda_ctx.cu; stubs in kernels/cuda_stub.c without CUDA) ------ */
/* Probe for a usable GPU: 1 and a name, or 0 and the reason in `why`. */
int spk_cuda_probe(char *name, size_t name_len, char *why, size_t why_len);
spk_status spk_cuda_init(spk_context *ctx);       /* stream, cuBLAS handle, scratch      */
void spk_cuda_fini(spk_context *ctx);
/* Copy `bytes` from device memory to host memory on the context's stream and wait. Stub:
 * SPK_ERR_NOT_COMPILED. */
spk_status spk_cuda_download_bytes(spk_context *ctx, void *host, const void *dev, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif /* SPK_INTERNAL_H */
