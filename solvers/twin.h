/* solvers/twin.h -- the fp32 twin of a preconditioner's matrix (spk_spmv_backend.fp32): the
 * same layout with its values in float, through which AMG's cycle, block-Jacobi's M^-1 and
 * the incomplete factors' sweeps run in mixed precision (products and sums in fp64).
 *
 * A GPU twin is made from its matrix's device layout (setup_from: the indices and host mirror
 * borrowed, the values rounded by a kernel) and refilled from it (refill); a CPU twin from the
 * matrix's host CSR. So a twin is used only while its matrix's layout is the one it was made
 * from (spk_matrix.layout_gen): another solver may prepare the matrix again in another format,
 * and a failed device refill drops a layout. A matrix whose values leave fp32's range (|a| >
 * FLT_MAX, or a nonzero below FLT_MIN) has no twin and runs in fp64, and gets one again once
 * they fit. solvers/twin.c. */
#ifndef SPK_TWIN_H
#define SPK_TWIN_H

#include "../src/spk_internal.h"

typedef struct spk_twin {
    const spk_spmv_backend *be;    /* the twin's row (the matrix's row's fp32 when made)     */
    void                   *s;     /* its state, or NULL: the matrix runs in fp64            */
    const void             *row;   /* the matrix's state it was made from                    */
    uint64_t                gen;   /* the matrix's layout_gen then                           */
} spk_twin;

/* Every one of the n values holds in fp32 to its relative precision. */
int spk_fits_fp32(const double *v, int64_t n);

/* t is usable with A: made, and A's layout still the one it was made from. */
int spk_twin_live(const spk_matrix *A, const spk_twin *t);

/* Through the row that made it (the matrix may have another row by now); zeroes t. */
void spk_twin_free(spk_twin *t);

/* A's twin from A's current values, whose host copy is v (A->csr.nnz of them; after an update
 * on the GPU A's own host values may be stale): made (none yet, or A's layout made again, or
 * values that fit again), refilled after A's own update, or freed while a value leaves fp32's
 * range or A's format has no fp32 row on this device. v may be NULL where A's fp32 row is
 * made and refilled from A's layout on the device (spk_twin_on_device), whose rounding checks
 * the range itself. */
spk_status spk_twin_sync(spk_context *ctx, const spk_matrix *A, const double *v, spk_twin *t);
/* A's fp32 row takes its values from A's layout on the device (setup_from and refill). */
int spk_twin_on_device(const spk_matrix *A);

/* y = alpha A x + beta y through A's twin where it is live, else through A. */
spk_status spk_twin_spmv(spk_context *ctx, const spk_matrix *A, const spk_twin *t, double alpha,
                         const double *x, double beta, double *y);

/* The fused step s (spk_step) with A, through its twin where it is live: in one pass where
 * the row's spmv_step fuses it, else composed: an fp32 x widened into xd (A's ncols doubles),
 * t = A x into td (A's nrows doubles), then the vector table's step. */
spk_status spk_twin_step(spk_context *ctx, const spk_matrix *A, const spk_twin *t,
                         const spk_step *s, double *xd, double *td);

/* The row that runs A's products (its twin's where live) fuses steps (has spmv_step). */
int spk_twin_fuses(const spk_matrix *A, const spk_twin *t);

#endif
