/* solvers/precond.h -- the preconditioner table, the third table beside the SpMV backends and
 * the vector operations: one row per preconditioner (a row of device AUTO is written over the
 * vector-ops and backend tables and so runs on every device; a preconditioner whose apply
 * differs by device has one row per device). A method sees M only through its row: it calls
 * apply, or, where a fused path can do better, reads a capability (identity, diag).
 *
 * Adding a preconditioner: one file solvers/pc_<name>.c (and its CUDA twin where it needs
 * kernels of its own), one row in the list of solvers/precond.c, one value of spk_precond.
 * docs/design.md says the same, and tests/test_solvers.c plugs one in through the public
 * user-preconditioner API. */
#ifndef SPK_PRECOND_H
#define SPK_PRECOND_H

#include "../src/spk_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spk_precond_ops {
    const char  *name;           /* "jacobi": spk_precond_str, spk_precond_parse, --precond     */
    spk_precond  kind;
    spk_device   device;         /* the device the row serves; AUTO: every device              */
    const char  *summary;        /* one line for --help (spk_precond_summary)                  */
    /* M for A on ctx's device. opt->method is resolved (CG needs M SPD). *state is the row's;
     * NULL is a valid state (M = I). On failure *state is NULL and nothing is left allocated. */
    spk_status (*setup)(spk_context *ctx, spk_matrix *A, const spk_options *opt, void **state);
    /* A's values changed, its pattern did not: rebuild what depends on them in place, with no
     * allocation after the first refresh. NULL: nothing depends on the values. */
    spk_status (*refresh)(void *state, spk_matrix *A);
    /* z = M^-1 r, device vectors of the context (z != r), queued on its stream. */
    spk_status (*apply)(void *state, const double *r, double *z);
    void       (*destroy)(void *state);                                         /* NULL-safe */
    /* ---- capabilities a fused path may use in place of apply ---- */
    int          identity;       /* M = I: z is r, nothing to apply                            */
    /* M^-1 = diag(d): d on the device (n doubles), or NULL when the row is not diagonal */
    const double *(*diag)(const void *state);
    /* apply only queues kernels on the context's stream, with the same arguments every call
     * and no wait for the host: it may be captured into the iterations' CUDA graph */
    int          graph_safe;
    /* What M is, for --explain (spk_solver_precond_describe): as snprintf. NULL: the name. */
    size_t     (*describe)(const void *state, char *buf, size_t len);
} spk_precond_ops;

/* The row for `kind` on `dev` (the device's own row, else the AUTO one), or NULL. */
const spk_precond_ops *spk_precond_find(spk_precond kind, spk_device dev);

/* The rows (solvers/pc_*.c). */
extern const spk_precond_ops spk_pc_none;
extern const spk_precond_ops spk_pc_jacobi;
extern const spk_precond_ops spk_pc_user;
extern const spk_precond_ops spk_pc_amg;
extern const spk_precond_ops spk_pc_bjacobi;
extern const spk_precond_ops spk_pc_chebyshev;
extern const spk_precond_ops spk_pc_ilu0;
extern const spk_precond_ops spk_pc_ic0;
extern const spk_precond_ops spk_pc_ilut;

/* Jacobi's diagonal check, shared with its refresh: dinv holds diag(A) (n doubles on the
 * device); invert it in place, or, on a zero (for CG, a non-positive) entry or one whose
 * reciprocal overflows, leave it and answer SPK_ERR_UNSUPPORTED naming the row and its
 * value. */
spk_status spk_jacobi_invert(spk_context *ctx, const spk_vec_ops *ops, int64_t n,
                             int require_positive, double *dinv);

#ifdef __cplusplus
}
#endif
#endif /* SPK_PRECOND_H */
