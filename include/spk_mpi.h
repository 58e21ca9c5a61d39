/* spk_mpi.h -- distributed solves over the ranks of an MPI communicator (libspk_mpi).
 *
 * Only for programs that use MPI: include it after <mpi.h> is available, link libspk_mpi (it
 * holds all of libspk as well: link it in place of libspk, not beside it). MPI must be
 * initialised before the first call and finalised after the last context is destroyed.
 *
 * A distributed matrix holds contiguous blocks of rows, one per rank, in rank order. Each rank
 * keeps its diagonal block (its rows and its own columns) and an off-diagonal block over the
 * columns other ranks own ("ghosts", compressed), as PETSc's MPIAIJ does. y = A x starts the
 * halo exchange of the ghost values (persistent MPI_Isend / MPI_Irecv), multiplies the
 * diagonal block meanwhile, waits, and adds the off-diagonal block's product.
 *
 * The solver API of spk.h is unchanged: spk_solver_create / spk_solver_solve with a
 * distributed matrix, on its context, take and give each rank's rows of b and x, and every
 * rank receives the same spk_result (iterations, reason, norms, history). The methods run
 * unchanged over the rows; each reduction they make (a dot product, a norm, a fused step's
 * sums) is one MPI_Allreduce. The preconditioners are built on each rank's diagonal block:
 * Jacobi is exact, and block-Jacobi, ILU, IC, ILUT, Chebyshev and AMG act as block-Jacobi
 * over the ranks (one local factorization or hierarchy per rank), which costs iterations
 * against the one-rank solve as the rank count grows.
 *
 * Every call below is collective over the context's ranks (each rank calls it, in the same
 * order), and a failure on one rank is reported on every rank ("rank 2: ..."), so that no
 * rank is left waiting. So far the ranks run on the CPU backend: a CUDA device is refused.
 * Reordering and mixed precision are refused too. spk_matrix_update_values takes, on each rank,
 * the new values of the entries that rank gave spk_matrix_create_mpi, in that order (for a
 * scattered matrix: the order of spk_matrix_csr's arrays of the root's matrix, row block by
 * row block); it is collective, and solvers made from the matrix refresh at their next solve. */
#ifndef SPK_MPI_H
#define SPK_MPI_H

#include <mpi.h>

#include "spk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A context whose distributed matrices span the ranks of comm (duplicated: the library's
 * messages never meet the caller's). device: SPK_DEVICE_CPU; SPK_DEVICE_CUDA, one GPU per
 * rank: GPU (node-local rank mod the GPUs the process sees), ranks of a node sharing GPUs when
 * they outnumber them; SPK_DEVICE_AUTO: the GPUs when every rank has one, else the CPU. The
 * halo of a product on GPU ranks is staged through host buffers, or passed as device buffers
 * where the MPI library says it is CUDA-aware (spk_mpi_matrix_info.halo). Non-distributed
 * matrices work on it as on any context (each rank alone). Collective: a rank's failure
 * fails every rank. Destroy with spk_context_destroy (collective), after its matrices. */
SPK_API spk_status spk_context_create_mpi(spk_context **ctx, MPI_Comm comm, spk_device device);

/* This rank's rows [row_begin, row_end) of an n x n matrix, in 0-based CSR with GLOBAL column
 * indices: rowptr has row_end - row_begin + 1 offsets from 0, colind and val rowptr[last]
 * entries (columns in any order, repeats summed). The ranks' row ranges must follow each
 * other in rank order and cover [0, n); a rank may hold no rows. Copied.
 * SPK_ERR_ARG (ranges, an index outside [0, n), a NaN/Inf value, a context without ranks),
 * SPK_ERR_NOMEM. */
SPK_API spk_status spk_matrix_create_mpi(spk_context *ctx, int64_t n, int64_t row_begin,
                                         int64_t row_end, const int64_t *rowptr,
                                         const int64_t *colind, const double *val,
                                         spk_matrix **A);

/* Distribute a matrix that rank `root` holds whole (A_root; NULL on the other ranks) in
 * contiguous blocks of rows balanced by nonzeros, each a multiple of `block` rows (the block
 * size of block-Jacobi or of an AMG near-null space; 1 otherwise). */
SPK_API spk_status spk_matrix_scatter_mpi(spk_context *ctx, int root, const spk_matrix *A_root,
                                          int block, spk_matrix **A);

/* How a product's halo travels: host vectors (CPU ranks); device vectors gathered into a
 * device buffer, copied to the host, sent, received and copied back (GPU ranks, an MPI that
 * is not CUDA-aware); device buffers handed to a CUDA-aware MPI. */
typedef enum spk_mpi_halo {
    SPK_MPI_HALO_HOST = 0,
    SPK_MPI_HALO_STAGED = 1,
    SPK_MPI_HALO_DEVICE = 2
} spk_mpi_halo;

/* What a distributed matrix holds on this rank. */
typedef struct spk_mpi_matrix_info {
    int64_t n_global, nnz_global;
    int64_t row_begin, row_end;         /* this rank's rows                                    */
    int64_t nnz_diag, nnz_offdiag;      /* this rank's entries in its own and in ghost columns */
    int64_t ghosts;                     /* ghost columns: values received per product          */
    int64_t send_values;                /* values this rank sends per product                  */
    int     neighbours;                 /* ranks it exchanges with                             */
    int     rank, size;
    int     halo;                       /* how the halo travels: spk_mpi_halo                  */
} spk_mpi_matrix_info;
/* SPK_ERR_ARG for NULL, a destroyed or a non-distributed matrix. Not collective. */
SPK_API spk_status spk_matrix_info_mpi(const spk_matrix *A, spk_mpi_matrix_info *info);

/* Vectors in A's row distribution: local has row_end - row_begin entries on each rank,
 * global n entries on root (ignored elsewhere). */
SPK_API spk_status spk_vector_scatter_mpi(spk_context *ctx, const spk_matrix *A, int root,
                                          const double *global, double *local);
SPK_API spk_status spk_vector_gather_mpi(spk_context *ctx, const spk_matrix *A, int root,
                                         const double *local, double *global);

/* The context's communication since it was made or last reset, this rank's: seconds waiting
 * in the halo exchanges (their start and their wait: what the local product did not hide),
 * seconds in the reductions (MPI_Allreduce, including the wait for the slowest rank), and
 * their counts; halo_bytes were sent by this rank. Not collective. */
typedef struct spk_mpi_stats {
    double  halo_s, reduce_s;
    int64_t halo_exchanges, halo_bytes, reductions;
    int     rank, size;
} spk_mpi_stats;
SPK_API spk_status spk_mpi_stats_get(const spk_context *ctx, spk_mpi_stats *stats);
SPK_API void spk_mpi_stats_reset(spk_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* SPK_MPI_H */
