/* src/reorder.h -- symmetric reorderings at setup (spk_options.reorder): the permutation, the
 * solver's own copy B = P A P^T of A with the map that refills it after a value update, and
 * the vector permutations at the solve's boundary. src/reorder.c. */
#ifndef SPK_REORDER_H
#define SPK_REORDER_H

#include "spk_internal.h"

/* Reverse Cuthill-McKee on the pattern of A + A^T (the diagonal ignored): perm[k] = the old
 * index of new row k (B = A(perm, perm), scipy's convention). Deterministic: ties by index.
 * A square; perm has nrows entries. SPK_ERR_NOMEM. */
spk_status spk_rcm(spk_context *ctx, const spk_csr *A, int32_t *perm);

/* Rows by length, longest first, ties by index (a stable counting sort): perm[k] = the old
 * index of new row k. A square. SPK_ERR_NOMEM. */
spk_status spk_degree_order(spk_context *ctx, const spk_csr *A, int32_t *perm);

/* max |i - j| over the entries of A, and the profile sum_i (i - min(i, min_j a_ij != 0)): the
 * lower envelope, the fill a banded or skyline factorization of A could take. */
void spk_csr_band(const spk_csr *A, int64_t *bandwidth, int64_t *profile);

/* B = A(perm, perm), rows sorted; map[q] = the entry of A that B's entry q is (nnz of them).
 * B allocated here (spk_csr_free). SPK_ERR_NOMEM. */
spk_status spk_csr_permute(spk_context *ctx, const spk_csr *A, const int32_t *perm, spk_csr *B,
                           int64_t *map);

typedef struct spk_reordering {
    spk_reorder kind;
    int64_t     n;
    int32_t    *perm;          /* perm[new] = old                                            */
    int64_t    *map;           /* B's entry q is A's canonical entry map[q]                    */
    spk_matrix *B;             /* P A P^T, owned: the matrix the method and M see             */
    double     *val;           /* B's values gathered from A's at a refill (nnz, kept)        */
    double     *hb, *hx, *tmp; /* host vectors of n: P b, P x0 / y, and the device staging     */
    int64_t     band_before, band_after, profile_before, profile_after;
} spk_reordering;

/* The ordering `kind` (SPK_REORDER_RCM or _DEGREE) of A's host values, and B made from it. */
spk_status spk_reordering_create(spk_context *ctx, spk_matrix *A, spk_reorder kind,
                                 spk_reordering **out);
/* A's values changed: B's through the map (A's host values, downloaded first after an update
 * on the GPU), then spk_matrix_update_values(B). No allocation but what B's own update path
 * makes at its first use. */
spk_status spk_reordering_refill(spk_context *ctx, spk_reordering *R, spk_matrix *A);
void spk_reordering_destroy(spk_reordering *R);                            /* NULL-safe */
/* y = P x (y_k = x_perm[k]) and x = P^T y (x_perm[k] = y_k), host arrays of n. */
void spk_reorder_gather(const spk_reordering *R, const double *x, double *y);
void spk_reorder_scatter(const spk_reordering *R, const double *y, double *x);

#endif
