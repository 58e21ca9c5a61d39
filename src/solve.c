/* src/solve.c -- the solver object and spk_solve. A solver is set up once (method chosen, A
 * prepared in its format, the preconditioner set up through its row of the preconditioner
 * table) and then solves any number of systems with that matrix: each solve moves b and x to the device, runs the method,
 * recomputes the true residual ||b - A x|| and brings x back. Every vector a solve needs lives
 * in the solver's workspace (solvers/workspace.c), made at the first solve and reused, so a
 * loop of value updates and solves allocates nothing after its first pass. spk_solve is
 * create + solve + destroy. */
#include "spk_internal.h"
#include "reorder.h"
#include "../solvers/solver.h"
#include "mixed.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef spk_status (*method_fn)(spk_krylov *k, const double *b, double *x);

struct spk_solver {
    uint32_t           magic;        /* SPK_SOLVER_MAGIC while alive                           */
    spk_context       *ctx;
    spk_matrix        *A;            /* the caller's, not owned                                */
    spk_matrix        *M;            /* the matrix the method runs on: A, or R->B              */
    spk_reordering    *R;            /* with opt.reorder: the permutation and B = P A P^T      */
    spk_options        opt;          /* the caller's options, copied                           */
    spk_method         method;       /* AUTO resolved at creation                              */
    int                method_auto;  /* AUTO chose it: CG or BiCGStab may hand over (auto_next) */
    spk_format         format;       /* AUTO resolved at creation                              */
    char               method_reason[128];
    char               precond_reason[128];
    char               precision_choice[160]; /* precision AUTO: what it chose and why      */
    const spk_vec_ops *ops;
    spk_krylov         k;            /* per-solve fields, and the workspace kept between them  */
    const spk_precond_ops *pc;       /* M's row of the preconditioner table                    */
    void              *pc_state;
    uint64_t           version;      /* A->version the preconditioner was built from           */
    double             a_scale;      /* the power of two the method scales A by (1 normally)   */
    int                a_fits;       /* 0: no power of two brings A's magnitudes into range    */
    spk_options        opt_run;      /* the options as the method sees them (atol scaled)      */
    spk_mixed          mix;          /* precision MIXED: A32 and whether it runs (src/mixed.c) */
    int                mixed_cycle;  /* precision MIXED with AMG: the V-cycle in fp32 inside the
                                        fp64 method, no refinement (solver_create)           */
    double             pending_setup_s; /* creation time, reported by the first solve          */
    double             precond_setup_s; /* the preconditioner's share of it (or of a refresh)  */
};

/* ---- power-of-two scaling (exact) of a system the sums of squares cannot hold ------------
 * A dot product or a norm's sum of squares overflows once the entries pass ~1e154 and
 * underflows below ~1e-154, though A, b and x are finite and well conditioned. Outside these
 * ranges a system runs scaled by powers of two: A' = a_scale A (max |a_ij| brought to [0.5,
 * 1)), b' = b_scale b (||b'|| in [1, 2)), y = (b_scale / a_scale) x. Multiplying by a power of
 * two is exact and commutes with every operation of the methods, so a scaled solve takes the
 * same iterations as the same system scaled to 1 would; x, the residuals and the history are
 * given back in the caller's units. Inside the ranges nothing is scaled (and nothing copied). */
#define SPK_A_SCALE_EXP 128    /* max |a_ij| in [2^-128, 2^128]: squares of A p stay in range  */
#define SPK_B_SCALE_EXP 400    /* ||b|| in [2^-400, 2^400]                                      */

/* a_scale from A's value range; *fits = 0 when the smallest nonzero |a_ij| keeps the max
 * above 2^128 even so (its entries span more than doubles' sums of squares hold). */
static double matrix_scale(const spk_matrix_info *in, int *fits)
{
    *fits = 1;
    if (!(in->val_absmax > 0.0) || !isfinite(in->val_absmax))
        return 1.0;
    const int emax = ilogb(in->val_absmax), emin = ilogb(in->val_absmin);
    if (emax >= -SPK_A_SCALE_EXP && emax <= SPK_A_SCALE_EXP)
        return 1.0;
    /* bring the max to 2^0 unless the smallest nonzero would leave the normal range */
    const int c = emax < emin + 1021 ? emax : emin + 1021;
    *fits = emax - c <= SPK_A_SCALE_EXP;
    return ldexp(1.0, -c);
}

static double vector_scale(double norm)
{
    if (!(norm > 0.0) || !isfinite(norm))
        return 1.0;
    const int e = ilogb(norm);
    return e < -SPK_B_SCALE_EXP || e > SPK_B_SCALE_EXP ? ldexp(1.0, -e) : 1.0;
}

/* --method auto: CG needs A SPD; symmetry with a positive diagonal is the cheap necessary
 * test (it is not sufficient: CG then reports INDEFINITE if p'Ap <= 0 shows up). A symmetric
 * matrix with a diagonal entry <= 0 is not SPD: MINRES, which needs only symmetry, and whose
 * residual, like GMRES's, never grows, with three vectors of recurrence in place of a basis. */
static spk_method choose_method(const spk_matrix_info *info, char *why, size_t len)
{
    if (info->symmetric && info->diag_positive) {
        snprintf(why, len, "cg: the matrix is symmetric with a positive diagonal");
        return SPK_METHOD_CG;
    }
    if (info->symmetric) {
        snprintf(why, len, "minres: the matrix is symmetric but its diagonal is not positive");
        return SPK_METHOD_MINRES;
    }
    snprintf(why, len, "bicgstab: the matrix is not symmetric");
    return SPK_METHOD_BICGSTAB;
}

/* --precond auto: Jacobi where the diagonal allows it (positive for CG and MINRES, whose M
 * must be SPD; nonzero for BiCGStab and the GMRESes), else none. With BiCGStab and GMRES on the matrices of
 * inputs/, Jacobi took fewer iterations than none in 16 of the 18 cases where both converge,
 * as many as none in 1 (docs/solvers.md). */
static spk_precond choose_precond(const spk_matrix_info *info, spk_method m, char *why, size_t len)
{
    const int spd = m == SPK_METHOD_CG || m == SPK_METHOD_MINRES;
    const int ok = spd ? info->diag_positive : info->diag_nonzero;
    if (ok) {
        snprintf(why, len, "jacobi: the diagonal is %s", spd ? "positive" : "nonzero");
        return SPK_PRECOND_JACOBI;
    }
    snprintf(why, len, "none: the diagonal %s", spd ? "is not positive"
                                                    : "has a zero or a missing entry");
    return SPK_PRECOND_NONE;
}

static spk_status check_setup(spk_context *ctx, const char *fn, const spk_matrix *A,
                              const spk_options *opt)
{
    if (!ctx || !A || A->magic != SPK_MATRIX_MAGIC || !opt)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: NULL argument or destroyed matrix", fn);
    if (A->csr.nrows != A->csr.ncols)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: A is %lld x %lld, a square matrix is needed", fn,
                        (long long)A->csr.nrows, (long long)A->csr.ncols);
    if (!(opt->rtol >= 0) || !(opt->atol >= 0) || !isfinite(opt->rtol) || !isfinite(opt->atol))
        return spk_fail(ctx, SPK_ERR_ARG, "%s: rtol = %g and atol = %g must be finite and >= 0", fn,
                        opt->rtol, opt->atol);
    if (opt->maxiter < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: maxiter = %lld must be >= 0", fn, (long long)opt->maxiter);
    if (!(opt->dtol >= 0) || !(opt->max_time >= 0) || opt->stagnation < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: dtol = %g, max_time = %g and stagnation = %lld "
                        "must be >= 0", fn, opt->dtol, opt->max_time, (long long)opt->stagnation);
    if ((opt->method == SPK_METHOD_GMRES || opt->method == SPK_METHOD_FGMRES) && opt->restart < 1)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: %s restart = %d must be >= 1", fn,
                        opt->method == SPK_METHOD_GMRES ? "GMRES" : "FGMRES", opt->restart);
    if ((unsigned)opt->method > SPK_METHOD_MINRES)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: method = %d is not a spk_method", fn,
                        (int)opt->method);
    if ((unsigned)opt->precond >= SPK_PRECOND_COUNT)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: precond = %d is not a spk_precond", fn,
                        (int)opt->precond);
    if ((unsigned)opt->format >= SPK_FMT_COUNT)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: format = %d is not a spk_format", fn,
                        (int)opt->format);
    if ((unsigned)opt->reorder > SPK_REORDER_DEGREE)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: reorder = %d: none (0), rcm (1) or degree (2)",
                        fn, (int)opt->reorder);
    /* what the caller gives row by row, in A's order, that P A P^T would read in its own: a
     * user M (its apply would see P r), blocks of interleaved unknowns (a permutation splits
     * the nodes), the near-null space and the coordinates */
    if (opt->reorder != SPK_REORDER_NONE &&
        (opt->precond == SPK_PRECOND_USER || opt->block_size > 1 || opt->amg.block_size > 1 ||
         opt->amg.nullspace || opt->amg.coords))
        return spk_fail(ctx, SPK_ERR_ARG, "%s: reorder with a user preconditioner, block_size > 1, "
                        "an AMG near-null space or coordinates: those are given in A's order "
                        "(reorder the system yourself, or use reorder = none)", fn);
    if ((unsigned)opt->precision > SPK_PRECISION_AUTO)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: precision = %d: double, mixed or auto", fn,
                        (int)opt->precision);
    if (opt->precond == SPK_PRECOND_USER && (!opt->precond_user || !opt->precond_user->apply))
        return spk_fail(ctx, SPK_ERR_ARG, "%s: SPK_PRECOND_USER needs spk_options.precond_user "
                        "with an apply callback", fn);
    if ((unsigned)opt->history > 1 || (unsigned)opt->use_x0 > 1 || opt->monitor_every < 0 ||
        opt->block_size < 0)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: history = %d and use_x0 = %d must be 0 or 1, "
                        "monitor_every = %lld and block_size = %d must be >= 0", fn, opt->history,
                        opt->use_x0, (long long)opt->monitor_every, opt->block_size);
    const spk_amg_options *g = &opt->amg;
    if (opt->precond == SPK_PRECOND_AMG) {
        /* 0 takes each field's default; a negative value is a mistake, not a default */
        if (g->block_size < 0 || g->sweeps < 0 || g->degree < 0 || g->max_coarse < 0 ||
            g->max_levels < 0 || g->nullspace_cols < 0 || g->coord_dim < 0)
            return spk_fail(ctx, SPK_ERR_ARG, "%s: spk_amg_options: block_size = %d, sweeps = %d, "
                            "degree = %d, max_coarse = %lld, max_levels = %d, nullspace_cols = %d "
                            "and coord_dim = %d must be >= 0 (0: the default)", fn, g->block_size,
                            g->sweeps, g->degree, (long long)g->max_coarse, g->max_levels,
                            g->nullspace_cols, g->coord_dim);
        if ((unsigned)g->rebuild > 1)
            return spk_fail(ctx, SPK_ERR_ARG, "%s: spk_amg_options.rebuild = %d: 0 (keep the "
                            "aggregates) or 1 (build the hierarchy again)", fn, g->rebuild);
        /* (not over ranks: one without rows may pass NULL, and would stop alone) */
        if (!g->nullspace && g->nullspace_cols > 0 && !A->dist)
            return spk_fail(ctx, SPK_ERR_ARG, "%s: spk_amg_options.nullspace_cols = %d but "
                            "nullspace is NULL", fn, g->nullspace_cols);
    }
    return SPK_OK;
}

/* b and x0 on the host: finite, with the 1-based index of the first bad entry. */
static spk_status check_host_vectors(spk_context *ctx, const char *fn, int64_t n, const double *b,
                                     const double *x, int use_x0)
{
    if (n > 0 && (!b || !x))
        return spk_fail(ctx, SPK_ERR_ARG, "%s: b or x is NULL", fn);
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(b[i]))
            return spk_fail(ctx, SPK_ERR_ARG, "%s: b(%lld) = %g: the right-hand side must be finite",
                            fn, (long long)i + 1, b[i]);
        if (use_x0 && !isfinite(x[i]))
            return spk_fail(ctx, SPK_ERR_ARG, "%s: x0(%lld) = %g: the initial guess must be finite",
                            fn, (long long)i + 1, x[i]);
    }
    return SPK_OK;
}

/* ---- create, refresh, destroy ---------------------------------------------------------------- */

/* A distributed matrix: the options a distributed solve does not take yet, and the context
 * its ranks share. */
static spk_status check_dist(spk_context *ctx, const char *fn, const spk_matrix *A,
                             const spk_options *opt)
{
    if (!A->dist)
        return SPK_OK;
    if (!ctx->comm)
        return spk_fail(ctx, SPK_ERR_ARG, "%s: a distributed matrix needs the context it was "
                        "made on (spk_context_create_mpi)", fn);
    if (opt->reorder != SPK_REORDER_NONE || opt->precision == SPK_PRECISION_MIXED)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "%s: a distributed solve takes reorder none "
                        "and precision double (reorder each rank's rows, or mixed precision, "
                        "is not built for it)", fn);
    return SPK_OK;
}

static spk_status solver_create(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                                spk_solver **out);

/* precision AUTO (docs/solvers.md, "Mixed precision"): MIXED where the measurements found it
 * faster for the same answer. Measured (bench_amg @mixed on the H200, bench_mixed on the
 * 2-vCPU VM, 2026-12-02; docs/benchmarks.md): CG + Jacobi in mixed took 0.87 (lame3d:48) and,
 * with fp32 inner vectors, 0.77 and 0.69 (poisson3d:150, :200) of double's solve on the GPU
 * (0.95-0.97 on poisson3d:100-200 with fp64 vectors), 1.2x on poisson3d:50 (9 MB, inside the
 * 50 MB L2); on the CPU 0.53-0.93 on poisson3d:64/100 (15-56 MB of DIA slots),
 * 1.2-1.4x on bcsstk13 (1 MB, in cache). AMG in mixed (its V-cycle in fp32 values and
 * vectors inside the fp64 method, no refinement) took 0.78 of double's solve on poisson3d:150
 * and lame3d:48 (H200, 2026-12-03, resident: 9.6 against 12.3 ms, 7.9 against 10.2, the
 * same 15 and 19 iterations), so AUTO takes it for AMG. CG + block-Jacobi(3), one solve
 * each: 0.81 on elasticity3d:60, 1.05x on lame3d:48. The other methods and preconditioners
 * were not timed in mixed. */
#define AUTO_MIXED_MIN_BYTES_GPU SPK_CACHE_BYTES_GPU   /* above the H200's 50 MB L2      */
#define AUTO_MIXED_MIN_BYTES_CPU SPK_CACHE_BYTES_CPU

static spk_precision choose_precision(spk_context *ctx, spk_matrix *M, const spk_options *o,
                                      char *why, size_t len)
{
    const spk_matrix_info *info = spk_matrix_info_of(M);
    const size_t b = info->bytes[M->be->format];
    const double bytes = b == SIZE_MAX ? 0.0 : (double)b;
    const double min = ctx->device == SPK_DEVICE_CPU ? AUTO_MIXED_MIN_BYTES_CPU
                                                     : AUTO_MIXED_MIN_BYTES_GPU;
    const char *no = NULL;
    if (M->dist)
        no = "mixed is not built over MPI ranks";
    else if (o->precond == SPK_PRECOND_AMG && o->amg.fp32 < 0)
        no = "AMG's V-cycle asked for fp64 values (amg.fp32 < 0)";
    else if (o->precond == SPK_PRECOND_AMG) {
        snprintf(why, len, "auto: mixed: AMG's V-cycle in fp32 inside the fp64 method "
                 "(measured faster)");
        return SPK_PRECISION_MIXED;
    } else if (o->method != SPK_METHOD_CG ||
             (o->precond != SPK_PRECOND_NONE && o->precond != SPK_PRECOND_JACOBI))
        no = "mixed was measured faster for CG with no or Jacobi preconditioning and for AMG "
             "only";
    else if (!M->be->fp32 && ctx->device != SPK_DEVICE_CPU)
        no = "the format has no fp32 kernel on this device";
    else if (bytes < min)
        no = "the matrix is below the size where fp32 values were measured faster";
    if (no) {
        snprintf(why, len, "auto: double: %s (%s, %.1f MB)", no, spk_format_str(M->be->format),
                 bytes / 1e6);
        return SPK_PRECISION_DOUBLE;
    }
    snprintf(why, len, "auto: mixed: CG%s on %.1f MB of %s, above the %.0f MiB from which fp32 "
             "values were measured faster", o->precond == SPK_PRECOND_JACOBI ? " + Jacobi" : "",
             bytes / 1e6, spk_format_str(M->be->format), min / 1048576.0);
    return SPK_PRECISION_MIXED;
}

/* Over ranks every rank must fail or none: a preconditioner that breaks down on one rank's
 * block would leave the others waiting in the first reduction. */
spk_status spk_solver_create(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                             spk_solver **out)
{
    spk_status st = solver_create(ctx, A, opt, out);
    if (ctx && ctx->comm && A && A->magic == SPK_MATRIX_MAGIC && A->dist &&
        (st = ctx->comm->agree(ctx, st)) && out && *out) {
        spk_solver_destroy(*out);
        *out = NULL;
    }
    return st;
}

static spk_status solver_create(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                                spk_solver **out)
{
    spk_options defaults;
    if (!opt) {
        spk_options_default(&defaults);
        opt = &defaults;
    }
    if (!out)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_solver_create: NULL argument");
    *out = NULL;
    spk_status st = check_setup(ctx, "spk_solver_create", A, opt);
    if (!st)
        st = check_dist(ctx, "spk_solver_create", A, opt);
    if (st)
        return st;
    const double t0 = spk_now();
    const int64_t n = A->csr.nrows;
    spk_solver *S = spk_calloc(ctx, 1, sizeof *S);
    if (!S)
        return spk_fail(ctx, SPK_ERR_NOMEM, "solver handle of %zu bytes: out of memory", sizeof *S);
    S->magic = SPK_SOLVER_MAGIC;                     /* from here on, destroy undoes it   */
    S->ctx = ctx;
    S->A = A;
    S->opt = *opt;
    S->ops = A->dist ? spk_vec_ops_dist_for(ctx) : spk_vec_ops_for(ctx->device);
    S->method = opt->method;
    if (S->method == SPK_METHOD_AUTO || opt->precond == SPK_PRECOND_AUTO) {
        if ((st = spk_matrix_host_values(ctx, A)))  /* the statistics read the values */
            goto fail;
    }
    if (S->method == SPK_METHOD_AUTO) {
        S->method = choose_method(spk_matrix_info_of(A), S->method_reason, sizeof S->method_reason);
        S->method_auto = 1;
    }
    if (opt->precond == SPK_PRECOND_AUTO)
        S->opt.precond = choose_precond(spk_matrix_info_of(A), S->method, S->precond_reason,
                                        sizeof S->precond_reason);
    S->k.ctx = ctx;
    S->k.ops = S->ops;
    S->k.n = n;
    const int64_t n_all = A->dist ? A->dist->n_global : n;     /* the default counts them all */
    S->k.n_all = n_all;
    S->k.maxiter = opt->maxiter > 0 ? opt->maxiter : (10 * n_all > 1000 ? 10 * n_all : 1000);

    /* the method's and the preconditioner's matrix: B = P A P^T with a reorder (A's
     * statistics above hold for it: a symmetric permutation keeps symmetry, the diagonal and
     * the row lengths), then prepared as A would be */
    S->M = A;
    if (opt->reorder != SPK_REORDER_NONE) {
        if ((st = spk_reordering_create(ctx, A, opt->reorder, &S->R)))
            goto fail;
        S->M = S->R->B;
    }
    spk_matrix *M = S->M;
    if ((st = spk_matrix_prepare(ctx, M, opt->format)))
        goto fail;
    S->format = M->be->format;
    S->opt.method = S->method;                       /* the row sees the method resolved */
    S->a_scale = matrix_scale(spk_matrix_info_of(M), &S->a_fits);
    if (opt->precision == SPK_PRECISION_AUTO) {
        S->opt.precision = choose_precision(ctx, M, &S->opt, S->precision_choice,
                                            sizeof S->precision_choice);
    }
    /* MIXED with AMG: the V-cycle, most of an iteration's bytes, on fp32 values and (where its
     * matrices fuse their steps) fp32 vectors, inside the method on the fp64 A, whose residual
     * then is the fp64 one at every iteration: no refinement loop, whose restarts cost AMG-CG
     * more than A32 saves (docs/solvers.md, "Mixed precision") */
    if (S->opt.precision == SPK_PRECISION_MIXED && S->opt.precond == SPK_PRECOND_AMG && !M->dist) {
        S->mixed_cycle = 1;
        if (S->opt.amg.fp32 == 0)
            S->opt.amg.fp32 = 1;
        snprintf(S->mix.why, sizeof S->mix.why, "%s", S->opt.amg.fp32 > 0
                 ? "mixed: AMG's V-cycle in fp32 inside the method on the fp64 A (no refinement)"
                 : "mixed: the method on the fp64 A; AMG's V-cycle kept in fp64 (amg.fp32 < 0)");
    }
    if (S->opt.precision == SPK_PRECISION_MIXED && !S->mixed_cycle &&
        (st = spk_mixed_prepare(ctx, &S->mix, M, S->a_scale)))
        goto fail;
    S->pc = spk_precond_find(S->opt.precond, ctx->device);
    if (!S->pc) {
        st = spk_fail(ctx, SPK_ERR_UNSUPPORTED, "preconditioner %s: none for the %s",
                      spk_precond_str(S->opt.precond), spk_device_str(ctx->device));
        goto fail;
    }
    const double tp = spk_now();
    if ((st = S->pc->setup(ctx, M, &S->opt, &S->pc_state)))
        goto fail;
    S->precond_setup_s = spk_now() - tp;
    S->version = A->version;
    S->pending_setup_s = spk_now() - t0;
    *out = S;
    return SPK_OK;
fail:
    spk_solver_destroy(S);
    return st;
}

void spk_solver_destroy(spk_solver *S)
{
    if (!S || S->magic != SPK_SOLVER_MAGIC)
        return;
    spk_krylov_free(&S->k);
    spk_mixed_free(&S->mix);
    if (S->pc)
        S->pc->destroy(S->pc_state);
    spk_reordering_destroy(S->R);
    S->magic = 0;
    spk_free(S);
}

static int solver_ok(const spk_solver *S)
{
    return S && S->magic == SPK_SOLVER_MAGIC && S->A->magic == SPK_MATRIX_MAGIC;
}

static spk_status solver_refresh(spk_solver *S);

/* Over ranks a refresh that fails on one rank's block (a zero pivot after the update) fails
 * on every rank. */
spk_status spk_solver_refresh(spk_solver *S)
{
    if (!solver_ok(S))
        return spk_fail(S ? S->ctx : NULL, SPK_ERR_ARG,
                        "spk_solver_refresh: NULL or destroyed solver (or its matrix)");
    spk_status st = solver_refresh(S);
    return S->A->dist ? S->ctx->comm->agree(S->ctx, st) : st;
}

static spk_status solver_refresh(spk_solver *S)
{
    /* a layout dropped by an update made on another context is built again first */
    spk_status st0 = spk_matrix_prepare(S->ctx, S->M, S->format);
    if (st0)
        return st0;
    if (S->version == S->A->version) {
        S->version = S->A->version;
        return SPK_OK;
    }
    /* with a reorder, B's values follow A's first (through the map) */
    spk_status st = S->R ? spk_reordering_refill(S->ctx, S->R, S->A) : SPK_OK;
    if (st)
        return st;
    /* the scale follows the new values where the host holds them (an update made on the
     * GPU keeps the scale it had: a power of two stays exact, only its range may narrow) */
    if (!S->M->host_stale)
        S->a_scale = matrix_scale(spk_matrix_range_of(S->M), &S->a_fits);
    /* mixed: the fp32 copy of the matrix the method runs on, rounded and checked again (on
     * the GPU from its device layout, already refilled) */
    if (S->opt.precision == SPK_PRECISION_MIXED && !S->mixed_cycle)
        st = spk_mixed_prepare(S->ctx, &S->mix, S->M, S->a_scale);
    if (st)
        return st;
    const double tp = spk_now();
    st = S->pc->refresh ? S->pc->refresh(S->pc_state, S->M) : SPK_OK;
    S->precond_setup_s += spk_now() - tp;
    if (!st)
        S->version = S->A->version;
    return st;
}

spk_method spk_solver_method(const spk_solver *S)
{
    return S && S->magic == SPK_SOLVER_MAGIC ? S->method : SPK_METHOD_AUTO;
}

size_t spk_solver_precond_describe(const spk_solver *S, char *buf, size_t len)
{
    char dummy[1];
    if (!buf || len == 0) {
        buf = dummy;
        len = 1;
    }
    if (!S || S->magic != SPK_SOLVER_MAGIC)
        return (size_t)snprintf(buf, len, "no solver");
    if (S->pc->describe)
        return S->pc->describe(S->pc_state, buf, len);
    return (size_t)snprintf(buf, len, "%s", S->pc->name);
}

spk_format spk_solver_format(const spk_solver *S)
{
    return S && S->magic == SPK_SOLVER_MAGIC ? S->format : SPK_FMT_AUTO;
}

spk_matrix *spk_solver_operator(spk_solver *S)
{
    return S && S->magic == SPK_SOLVER_MAGIC ? S->M : NULL;
}

/* Seconds of one SpMV of `M` (prepared on ctx), the mean of reps after one untimed. */
static spk_status time_spmv(spk_solver *S, spk_matrix *M, int reps, const double *x, double *y,
                            double *sec)
{
    spk_context *ctx = S->ctx;
    spk_status st = M->be->spmv(ctx, M->state, 1.0, x, 0.0, y);
    if (!st)
        st = S->ops->sync(ctx);
    const double t = spk_now();
    for (int r = 0; !st && r < reps; r++)
        st = M->be->spmv(ctx, M->state, 1.0, x, 0.0, y);
    if (!st)
        st = S->ops->sync(ctx);
    *sec = (spk_now() - t) / reps;
    return st;
}

spk_status spk_solver_spmv_seconds(spk_solver *S, int reps, double *a_s, double *op_s)
{
    if (!solver_ok(S) || !a_s || !op_s)
        return spk_fail(S ? S->ctx : NULL, SPK_ERR_ARG, "spk_solver_spmv_seconds: NULL argument "
                        "(a_s or op_s) or destroyed solver");
    if (reps < 1)
        return spk_fail(S->ctx, SPK_ERR_ARG, "spk_solver_spmv_seconds: reps = %d must be >= 1",
                        reps);
    spk_context *ctx = S->ctx;
    const int64_t n = S->k.n;
    double *x, *y;
    spk_status st = spk_krylov_vec(&S->k, SPK_WS_X, n, &x);
    if (!st)
        st = spk_krylov_vec(&S->k, SPK_WS_R, n, &y);
    if (!st)
        st = S->ops->fill(ctx, n, 1.0, x);
    if (!st && S->A != S->M && (!S->A->be || S->A->ctx_prepared != ctx)) {
        /* A in the operator's format where it takes it (DIA may refuse A's diagonals) */
        st = spk_matrix_prepare(ctx, S->A, S->format);
        if (st == SPK_ERR_UNSUPPORTED)
            st = spk_matrix_prepare(ctx, S->A, SPK_FMT_AUTO);
    }
    if (!st)
        st = time_spmv(S, S->A, reps, x, y, a_s);
    if (!st)
        st = spk_matrix_prepare(ctx, S->M, S->format);
    if (!st)
        st = time_spmv(S, S->M, reps, x, y, op_s);
    return st;
}

/* ---- solve ----------------------------------------------------------------------------------- */

/* Before the vectors: A prepared in the solver's format on its context (again, if an update on
 * another context dropped the layout or another solver switched it), the diagonal current. */
static spk_status solver_ready(spk_solver *S, spk_result *res)
{
    memset(res, 0, sizeof *res);                     /* overwritten: see spk.h        */
    res->device = S->ctx->device;
    res->method = S->method;
    res->format = S->format;
    res->precond = S->pc->kind;
    snprintf(res->method_reason, sizeof res->method_reason, "%s", S->method_reason);
    snprintf(res->precond_reason, sizeof res->precond_reason, "%s", S->precond_reason);
    if (S->R) {
        res->reorder = S->R->kind;
        res->bandwidth_before = S->R->band_before;
        res->bandwidth_after = S->R->band_after;
        res->profile_before = S->R->profile_before;
        res->profile_after = S->R->profile_after;
    }
    spk_status st = spk_matrix_prepare(S->ctx, S->M, S->format);
    snprintf(res->format_reason, sizeof res->format_reason, "%s", S->M->format_reason);
    if (!st && S->version != S->A->version)
        st = solver_refresh(S);
    /* M's layout made again (another solver's format, or dropped after an update elsewhere):
     * the fp32 operator, which on the GPU borrows from it, is made again too */
    else if (!st && S->opt.precision == SPK_PRECISION_MIXED && !S->mixed_cycle &&
             S->mix.gen != S->M->layout_gen)
        st = spk_mixed_prepare(S->ctx, &S->mix, S->M, S->a_scale);
    res->precision = S->opt.precision == SPK_PRECISION_MIXED && (S->mix.ok || S->mixed_cycle)
                         ? SPK_PRECISION_MIXED
                         : SPK_PRECISION_DOUBLE;
    snprintf(res->precision_reason, sizeof res->precision_reason, "%s", S->mix.why);
    snprintf(res->precision_choice, sizeof res->precision_choice, "%s", S->precision_choice);
    return st;
}

/* Run the method on the device vectors and fill the true residual ||b - A x||. A convergence
 * the true residual does not bear out is not reported: NaN/Inf in it (x overflowed) is
 * DIVERGED_NANORINF, more than SPK_MISMATCH_FACTOR thresholds is
 * DIVERGED_TRUE_RESIDUAL_MISMATCH (CG's and BiCGStab's recursive r drifts from b - A x when
 * rtol is below what the conditioning allows, and r'r underflows on a matrix scaled near
 * 1e-160; GMRES checks the same at each restart). */
static spk_status true_residual(spk_krylov *k, const double *d_b, const double *d_x)
{
    double *d_r, tr = 0.0;
    const spk_vec_ops *ops = k->ops;
    spk_status st = spk_krylov_vec(k, SPK_WS_R, k->n, &d_r);
    if (!st && !(st = spk_apply_A(k, d_x, d_r)) &&
        !(st = ops->axpby(k->ctx, k->n, 1.0, d_b, -1.0, d_r)))
        st = ops->nrm2(k->ctx, k->n, d_r, &tr);
    spk_result *res = k->res;
    res->true_rnorm = tr;
    if (!st && (res->reason == SPK_CONVERGED_RTOL || res->reason == SPK_CONVERGED_ATOL)) {
        if (!isfinite(tr))
            res->reason = SPK_DIVERGED_NANORINF;
        else if (tr > SPK_MISMATCH_FACTOR * spk_stop_threshold(k->opt, res->bnorm))
            res->reason = SPK_DIVERGED_TRUE_RESIDUAL_MISMATCH;
    }
    return st;
}

/* The method, or with precision MIXED the refinement loop around it (src/mixed.c). */
static spk_status call_method(spk_solver *S, method_fn fn, const double *d_b, double *d_x)
{
    if (S->opt.precision == SPK_PRECISION_MIXED && S->mix.ok)
        return spk_mixed_solve(&S->k, &S->mix, fn, d_b, d_x);
    return fn(&S->k, d_b, d_x);
}

static spk_status run_method(spk_solver *S, method_fn fn, const double *d_b, double *d_x)
{
    spk_status st = call_method(S, fn, d_b, d_x);
    return st ? st : true_residual(&S->k, d_b, d_x);
}

/* run_method on the system scaled by powers of two where its magnitudes ask for it (see
 * matrix_scale): b' into its own vector, x scaled in place and back, atol and the reported
 * norms in the caller's units. */
static spk_status run_scaled(spk_solver *S, method_fn fn, const double *d_b, double *d_x)
{
    spk_krylov *k = &S->k;
    spk_context *ctx = S->ctx;
    const spk_vec_ops *ops = S->ops;
    const int64_t n = k->n;
    spk_result *res = k->res;
    const double bnorm = res->bnorm;
    k->a_scale = S->a_scale;
    k->b_scale = vector_scale(bnorm);
    k->dinv_scaled = NULL;
    if (k->a_scale == 1.0 && k->b_scale == 1.0)
        return run_method(S, fn, d_b, d_x);
    const double xs = k->b_scale / k->a_scale;       /* y = xs x, exact */
    double *bs = NULL, *ds = NULL;
    spk_status st = spk_krylov_vec(k, SPK_WS_BS, n, &bs);
    if (!st)
        st = ops->copy(ctx, n, d_b, bs);
    if (!st)
        st = ops->scal(ctx, n, k->b_scale, bs);
    if (!st)
        st = ops->scal(ctx, n, xs, d_x);
    if (!st && S->pc->diag && k->a_scale != 1.0) {  /* D'^-1 = D^-1 / a_scale */
        if (!(st = spk_krylov_vec(k, SPK_WS_DINV, n, &ds)) &&
            !(st = ops->copy(ctx, n, S->pc->diag(S->pc_state), ds)))
            st = ops->scal(ctx, n, 1.0 / k->a_scale, ds);
        k->dinv_scaled = ds;
    }
    if (st)
        return st;
    S->opt_run = S->opt;
    S->opt_run.atol = S->opt.atol * k->b_scale;
    k->opt = &S->opt_run;
    res->bnorm = bnorm * k->b_scale;
    st = call_method(S, fn, bs, d_x);
    k->opt = &S->opt;
    res->bnorm = bnorm;
    res->rnorm /= k->b_scale;
    /* x in the caller's units, and its true residual there: an x that overflows them (A near
     * 1e-300 with b near 1) is no converged result */
    if (!st)
        st = ops->scal(ctx, n, 1.0 / xs, d_x);
    k->a_scale = k->b_scale = 1.0;
    if (!st)
        st = true_residual(k, d_b, d_x);
    double xn = 0.0;
    if (!st && res->reason == SPK_DIVERGED_NANORINF && S->a_fits &&
        !(st = ops->nrm2(ctx, n, d_x, &xn)) && isinf(xn))
        snprintf(res->reason_detail, sizeof res->reason_detail, "x does not fit in doubles: "
                 "the solution's entries pass 1.8e308 (A's entries %.1e to %.1e, ||b|| = %.1e)",
                 S->M->info.val_absmin, S->M->info.val_absmax, bnorm);
    if (!st && res->reason == SPK_DIVERGED_NANORINF && !S->a_fits) {
        const spk_matrix_info *in = &S->M->info;
        snprintf(res->reason_detail, sizeof res->reason_detail, "the entries of A span %.1e "
                 "to %.1e: no power-of-two scaling keeps the methods' sums of squares in range "
                 "(equilibrate A's rows and columns)", in->val_absmin, in->val_absmax);
    }
    return st;
}

static method_fn method_of(spk_method m)
{
    switch (m) {
    case SPK_METHOD_CG: return spk_cg;
    case SPK_METHOD_GMRES: return spk_gmres;
    case SPK_METHOD_FGMRES: return spk_fgmres;
    case SPK_METHOD_MINRES: return spk_minres;
    default: return spk_bicgstab;
    }
}

/* Whether --method auto's first method hands over, on what it ended with: BiCGStab to GMRES
 * where it cannot go on (a breakdown, a residual past dtol, stagnation, a NaN/Inf): GMRES's
 * residual never grows and it breaks down only on a singular A (on orsirr_1 with Jacobi
 * BiCGStab breaks down after 449 iterations, GMRES(30) converges in 442). CG to MINRES where
 * p'Ap <= 0 showed the symmetric A indefinite though its diagonal is positive (jagmesh7: CG +
 * Jacobi stops after 4 iterations, MINRES + Jacobi converges in 2066); the preconditioner
 * auto took for CG is SPD, as MINRES needs. */
static spk_method auto_next(spk_method first, spk_reason r)
{
    if (first == SPK_METHOD_CG)
        return r == SPK_DIVERGED_INDEFINITE ? SPK_METHOD_MINRES : SPK_METHOD_AUTO;
    if (r == SPK_DIVERGED_BREAKDOWN || r == SPK_DIVERGED_DTOL || r == SPK_DIVERGED_STAGNATION ||
        r == SPK_DIVERGED_NANORINF)
        return SPK_METHOD_GMRES;
    return SPK_METHOD_AUTO;
}

/* --method auto's CG or BiCGStab, and the method auto_next names from the same x0 where it
 * cannot go on. The result is the second method's; the solver keeps it for its later
 * solves. */
static spk_status run_auto(spk_solver *S, const double *d_b, double *d_x)
{
    spk_krylov *k = &S->k;
    spk_result *res = k->res;
    const spk_method m1 = S->method;
    double *x0;
    spk_status st = spk_krylov_vec(k, SPK_WS_X0, k->n, &x0);
    if (!st)
        st = S->ops->copy(S->ctx, k->n, d_x, x0);
    if (!st)
        st = run_scaled(S, method_of(m1), d_b, d_x);
    const spk_method m2 = auto_next(m1, res->reason);
    if (st || m2 == SPK_METHOD_AUTO)
        return st;
    char first[96];
    snprintf(first, sizeof first, "%s stopped with %s after %lld iterations", spk_method_str(m1),
             spk_reason_str(res->reason), (long long)res->iterations);
    S->method = res->method = m2;
    S->method_auto = 0;
    snprintf(S->method_reason, sizeof S->method_reason, "%s: %.*s", spk_method_str(m2), 100, first);
    snprintf(res->method_reason, sizeof res->method_reason, "%s", S->method_reason);
    spk_result_free(res);                            /* the history starts again        */
    k->hist_cap = 0;
    res->iterations = 0;
    res->reason_detail[0] = '\0';
    if ((st = S->ops->copy(S->ctx, k->n, x0, d_x)))
        return st;
    /* the thread fit starts again with the second method: its iterations count from 0, and
     * GMRES's probe is a whole cycle */
    const int cycled = m2 == SPK_METHOD_GMRES || m2 == SPK_METHOD_FGMRES;
    spk_threads_end(&k->threads);
    spk_threads_begin(&k->threads, S->ctx->device, k->n, cycled ? S->opt.restart : 0);
    return run_scaled(S, method_of(m2), d_b, d_x);
}

/* The solve proper, on device vectors holding b and the initial x; host_x (or NULL) receives x.
 * t0: when the call began, for setup_s. */
static spk_status solver_run(spk_solver *S, const double *d_b, double *d_x, int zero_x,
                             double *host_x, spk_result *res, double t0)
{
    spk_krylov *k = &S->k;
    spk_context *ctx = S->ctx;
    const spk_vec_ops *ops = S->ops;
    const int64_t n = k->n;
    const spk_method m = S->method;
    method_fn fn = method_of(m);
    const spk_dist *dist = S->M->dist;              /* over ranks: the global operator  */
    k->be = dist ? dist->be : S->M->be;
    k->state = dist ? dist->state : S->M->state;
    if (dist)
        ctx->comm->stop_local = ctx->comm->stop_seen = SPK_REASON_NONE;
    k->pc = S->pc;
    k->pc_state = S->pc_state;
    k->opt = &S->opt;
    k->res = res;
    k->hist_cap = 0;                                 /* the history is per result         */
    k->host_stop = SPK_REASON_NONE;

    spk_status st = ops->nrm2(ctx, n, d_b, &res->bnorm);
    if (!st && !isfinite(res->bnorm))
        st = spk_fail(ctx, SPK_ERR_ARG, "spk_solver_solve: ||b|| = %g: b holds NaN or Inf, or overflows",
                      res->bnorm);
    if (!st && zero_x)                               /* x = 0 only once b passed      */
        st = ops->fill(ctx, n, 0.0, d_x);
    if (!st)
        st = ops->sync(ctx);
    if (st)
        return st;
    const double t1 = spk_now();
    res->setup_s = t1 - t0 + S->pending_setup_s;
    res->precond_setup_s = S->precond_setup_s;
    S->pending_setup_s = 0.0;
    S->precond_setup_s = 0.0;
    k->t0 = t1;

    if (res->bnorm == 0.0) {                         /* b = 0: x = 0 exactly              */
        k->a_scale = k->b_scale = 1.0;
        res->reason = SPK_CONVERGED_ZERO_RHS;
        st = ops->fill(ctx, n, 0.0, d_x);
        if (!st)
            st = spk_stop_record(k, 0, 0, 0.0);
    } else {
        const int cycled = m == SPK_METHOD_GMRES || m == SPK_METHOD_FGMRES;  /* a probe: a cycle */
        spk_threads_begin(&k->threads, ctx->device, n, cycled ? S->opt.restart : 0);
        if (S->method_auto && (m == SPK_METHOD_BICGSTAB || m == SPK_METHOD_CG))
            st = run_auto(S, d_b, d_x);
        else
            st = run_scaled(S, fn, d_b, d_x);
        spk_threads_end(&k->threads);
    }
    if (!st && host_x)
        st = ops->download(ctx, n, d_x, host_x);
    res->solve_s = spk_now() - t1;
    res->cold = !(ctx->methods_run & (1u << res->method));
    ctx->methods_run |= 1u << res->method | 1u << m;
    res->per_iter_s = res->solve_s / (double)(res->iterations > 0 ? res->iterations : 1);
    const double scale = res->bnorm > 0 ? res->bnorm : 1.0;
    res->rel = res->rnorm / scale;
    res->true_rel = res->true_rnorm / scale;
    /* the monitor always sees the final iteration */
    const spk_options *opt = &S->opt;
    if (!st && opt->monitor && opt->monitor_every > 1 && res->iterations % opt->monitor_every)
        (void)opt->monitor(opt->monitor_user, res->iterations, res->rnorm, res->rel, res->solve_s);
    if (st)
        spk_result_free(res);                        /* a failed call leaves nothing to free */
    return st;
}

/* With a reorder, B y = P b: b (and x0) permuted on the host into the reordering's vectors,
 * uploaded into the workspace, and x = P^T y written back to the caller's host array x. */
static spk_status solve_reordered(spk_solver *S, const double *b, double *x, spk_result *res,
                                  double t0)
{
    spk_reordering *R = S->R;
    const int64_t n = S->k.n;
    double *d_b, *d_x;
    spk_reorder_gather(R, b, R->hb);
    if (S->opt.use_x0)
        spk_reorder_gather(R, x, R->hx);
    spk_status st = spk_krylov_vec(&S->k, SPK_WS_B, n, &d_b);
    if (!st)
        st = spk_krylov_vec(&S->k, SPK_WS_X, n, &d_x);
    if (!st)
        st = S->ops->upload(S->ctx, n, R->hb, d_b);
    if (!st && S->opt.use_x0)
        st = S->ops->upload(S->ctx, n, R->hx, d_x);
    if (!st)
        st = solver_run(S, d_b, d_x, !S->opt.use_x0, R->hx, res, t0);
    if (!st)
        spk_reorder_scatter(R, R->hx, x);
    return st;
}

spk_status spk_solver_solve(spk_solver *S, const double *b, double *x, spk_result *res)
{
    if (!solver_ok(S) || !res)
        return spk_fail(S ? S->ctx : NULL, SPK_ERR_ARG,
                        "spk_solver_solve: NULL argument or destroyed solver (or its matrix)");
    const double t0 = spk_now();
    const int64_t n = S->k.n;
    memset(res, 0, sizeof *res);       /* overwritten, also when b or x0 is refused below */
    spk_status st = check_host_vectors(S->ctx, "spk_solver_solve", n, b, x, S->opt.use_x0);
    if (S->A->dist)                                  /* a rank's bad b stops them all    */
        st = S->ctx->comm->agree(S->ctx, st);
    if (!st) {
        st = solver_ready(S, res);
        if (S->A->dist)                              /* and a rank's failed refresh      */
            st = S->ctx->comm->agree(S->ctx, st);
    }
    if (st)
        return st;
    if (S->R)
        return solve_reordered(S, b, x, res, t0);
    double *d_b, *d_x;
    if ((st = spk_krylov_vec(&S->k, SPK_WS_B, n, &d_b)) ||
        (st = spk_krylov_vec(&S->k, SPK_WS_X, n, &d_x)) ||
        (st = S->ops->upload(S->ctx, n, b, d_b)) ||
        (S->opt.use_x0 && (st = S->ops->upload(S->ctx, n, x, d_x))))
        return st;
    return solver_run(S, d_b, d_x, !S->opt.use_x0, x, res, t0);
}

spk_status spk_solver_solve_device(spk_solver *S, const double *d_b, double *d_x, spk_result *res)
{
    if (!solver_ok(S) || !res)
        return spk_fail(S ? S->ctx : NULL, SPK_ERR_ARG,
                        "spk_solver_solve_device: NULL argument or destroyed solver (or its matrix)");
    const double t0 = spk_now();
    const int64_t n = S->k.n;
    memset(res, 0, sizeof *res);       /* overwritten, also when an argument is refused below */
    if (n > 0 && (!d_b || !d_x))
        return spk_fail(S->ctx, SPK_ERR_ARG, "spk_solver_solve_device: d_b or d_x is NULL");
    spk_status st = solver_ready(S, res);
    if (S->A->dist)
        st = S->ctx->comm->agree(S->ctx, st);
    if (st)
        return st;
    if (S->opt.use_x0) {
        double xn;
        if ((st = S->ops->nrm2(S->ctx, n, d_x, &xn)))
            return st;
        if (!isfinite(xn))
            return spk_fail(S->ctx, SPK_ERR_ARG, "spk_solver_solve_device: ||x0|| = %g: the "
                            "initial guess holds NaN or Inf", xn);
    }
    if (!S->R)
        return solver_run(S, d_b, d_x, !S->opt.use_x0, NULL, res, t0);   /* a refused b: x kept */
    /* with a reorder, staged through the host: the vector table has no gather */
    spk_reordering *R = S->R;
    if ((st = S->ops->download(S->ctx, n, d_b, R->tmp)))
        return st;
    if (S->opt.use_x0 && (st = S->ops->download(S->ctx, n, d_x, R->hx)))
        return st;
    double *b_perm = R->hb;                          /* P b, beside R->hx's x0 until permuted */
    spk_reorder_gather(R, R->tmp, b_perm);
    if (S->opt.use_x0) {
        memcpy(R->tmp, R->hx, (size_t)n * sizeof *R->tmp);
        spk_reorder_gather(R, R->tmp, R->hx);
    }
    double *w_b, *w_x;
    if ((st = spk_krylov_vec(&S->k, SPK_WS_B, n, &w_b)) ||
        (st = spk_krylov_vec(&S->k, SPK_WS_X, n, &w_x)) ||
        (st = S->ops->upload(S->ctx, n, b_perm, w_b)) ||
        (S->opt.use_x0 && (st = S->ops->upload(S->ctx, n, R->hx, w_x))))
        return st;
    if ((st = solver_run(S, w_b, w_x, !S->opt.use_x0, R->hx, res, t0)))
        return st;                                   /* a refused b: x kept */
    spk_reorder_scatter(R, R->hx, R->tmp);
    return S->ops->upload(S->ctx, n, R->tmp, d_x);
}

spk_status spk_solve(spk_context *ctx, spk_matrix *A, const double *b, double *x,
                     const spk_options *opt, spk_result *res)
{
    spk_options defaults;
    if (!opt) {                                      /* as spk_solver_create: the defaults */
        spk_options_default(&defaults);
        opt = &defaults;
    }
    if (res)
        memset(res, 0, sizeof *res);   /* overwritten, also when the call is refused below */
    spk_status st = check_setup(ctx, "spk_solve", A, opt);
    if (st)
        return st;
    if (!res)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_solve: NULL argument or destroyed matrix");
    st = check_host_vectors(ctx, "spk_solve", A->csr.nrows, b, x, opt->use_x0);
    if (A->dist && ctx->comm)
        st = ctx->comm->agree(ctx, st);
    if (st)
        return st;
    memset(res, 0, sizeof *res);
    res->device = ctx->device;
    spk_solver *S = NULL;
    if ((st = spk_solver_create(ctx, A, opt, &S)))
        return st;
    st = spk_solver_solve(S, b, x, res);
    spk_solver_destroy(S);
    return st;
}
