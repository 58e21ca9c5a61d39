/* solvers/precond.c -- the preconditioner registry (solvers/precond.h) and its first row, M = I.
 * Names, parsing and --help's one-liners all come from the rows, so a new preconditioner
 * appears everywhere by being listed here. */
#include "precond.h"

#include <string.h>

/* ---- none: M = I ----------------------------------------------------------------------- */

typedef struct pc_none_state {
    spk_context       *ctx;
    const spk_vec_ops *ops;
    int64_t            n;
} pc_none_state;

static spk_status none_setup(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                             void **state)
{
    pc_none_state *s = spk_calloc(ctx, 1, sizeof *s);
    *state = s;
    if (!s)
        return spk_fail(ctx, SPK_ERR_NOMEM, "preconditioner state: out of memory");
    s->ctx = ctx;
    s->ops = spk_vec_ops_for(ctx->device);
    s->n = A->csr.nrows;
    return SPK_OK;
}

/* z = r: for a method that has no identity shortcut (GMRES applies M^-1 to each basis vector) */
static spk_status none_apply(void *state, const double *r, double *z)
{
    const pc_none_state *s = state;
    return s->ops->copy(s->ctx, s->n, r, z);
}

static void none_destroy(void *state) { spk_free(state); }

const spk_precond_ops spk_pc_none = {
    .name = "none",
    .kind = SPK_PRECOND_NONE,
    .device = SPK_DEVICE_AUTO,
    .summary = "no preconditioner (M = I)",
    .setup = none_setup,
    .apply = none_apply,
    .destroy = none_destroy,
    .identity = 1,
    .graph_safe = 1,
};

/* ---- the registry ---------------------------------------------------------------------- */

static const spk_precond_ops *const all_preconds[] = {
    &spk_pc_none,
    &spk_pc_jacobi,
    &spk_pc_amg,
    &spk_pc_ilu0,
    &spk_pc_ic0,
    &spk_pc_ilut,
    &spk_pc_user,
    &spk_pc_bjacobi,
    &spk_pc_chebyshev,
};
#define NPRECONDS (sizeof all_preconds / sizeof all_preconds[0])

const spk_precond_ops *spk_precond_find(spk_precond kind, spk_device dev)
{
    const spk_precond_ops *any = NULL;
    for (size_t i = 0; i < NPRECONDS; i++) {
        const spk_precond_ops *p = all_preconds[i];
        if (p->kind != kind)
            continue;
        if (p->device == dev)
            return p;
        if (p->device == SPK_DEVICE_AUTO)
            any = p;
    }
    return any;
}

/* Any row of `kind` (the rows of one preconditioner share its name and summary). */
static const spk_precond_ops *row_of(spk_precond kind)
{
    for (size_t i = 0; i < NPRECONDS; i++)
        if (all_preconds[i]->kind == kind)
            return all_preconds[i];
    return NULL;
}

/* AUTO is not a row: the solver resolves it to one (src/solve.c, choose_precond). */
#define AUTO_SUMMARY "jacobi where the diagonal allows it (positive for CG and MINRES, " \
                     "nonzero for the others), else none"

const char *spk_precond_str(spk_precond p)
{
    if (p == SPK_PRECOND_AUTO)
        return "auto";
    const spk_precond_ops *row = row_of(p);
    return row ? row->name : "unknown";
}

const char *spk_precond_summary(spk_precond p)
{
    if (p == SPK_PRECOND_AUTO)
        return AUTO_SUMMARY;
    const spk_precond_ops *row = row_of(p);
    return row ? row->summary : "";
}

spk_status spk_precond_parse(const char *s, spk_precond *p)
{
    if (s && p && strcmp(s, "auto") == 0) {
        *p = SPK_PRECOND_AUTO;
        return SPK_OK;
    }
    for (size_t i = 0; s && p && i < NPRECONDS; i++)
        if (all_preconds[i]->kind != SPK_PRECOND_USER && strcmp(s, all_preconds[i]->name) == 0) {
            *p = all_preconds[i]->kind;
            return SPK_OK;
        }
    return SPK_ERR_ARG;
}
