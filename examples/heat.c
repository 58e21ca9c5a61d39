/* examples/heat.c -- the heat equation u_t = Laplace(u) + f on the unit square with linear
 * finite elements, time-stepped with backward Euler, as a finite-element code embeds libspk:
 * assemble once, reuse the solver every step, update the matrix values when dt changes.
 * Uses the public API only (spk.h), linked against the shared library.
 *
 *   heat [--device cpu|gpu|auto] [--n N] [--steps S] [--precond jacobi|amg]
 *        [--amg-rebuild] [--write-matrix FILE]
 *
 * --precond amg runs CG with smoothed-aggregation AMG (docs/amg.md) instead of Jacobi: its
 * refresh after each value update recomputes the hierarchy's values (same aggregates, same
 * patterns), and the refresh time printed is then that; with --amg-rebuild each refresh
 * builds the hierarchy again (spk_amg_options.rebuild), for comparison.
 *
 * --write-matrix FILE writes the system matrix of the first time step, M + dt K with dt = T/S,
 * as Matrix Market (spk_matrix_write_mtx) and exits 0 without time-stepping: the matrix other
 * solvers are compared on (bench/compare_pyamg.py).
 *
 * Discretisation
 *  - Mesh: N x N squares, each cut into two triangles by its diagonal (x, y) -> (x+h, y+h).
 *  - P1 (linear) elements. Element stiffness K_e(i,j) = (b_i b_j + c_i c_j) / (4 |T|) with
 *    b_i = y_j - y_k, c_i = x_k - x_j (i, j, k cyclic); element mass M_e = |T|/12 [2 1 1; 1 2 1;
 *    1 1 2]. Each element writes its 3 x 3 block as COO triplets; spk_matrix_from_coo sums the
 *    duplicates, which is the assembly.
 *  - Dirichlet boundary u = 0 by ELIMINATION: only the (N-1)^2 interior nodes are unknowns, and
 *    every triplet that touches a boundary node is left out. With a zero boundary value nothing
 *    moves to the right-hand side, and the matrix stays symmetric positive definite (CG).
 *  - Backward Euler: (M + dt K) u_{n+1} = M u_n + dt M f_{n+1}, f_{n+1} the nodal interpolant.
 *  - Manufactured solution u = exp(-t) sin(pi x) sin(pi y): u_t = -u and Laplace(u) =
 *    -2 pi^2 u, so f = (2 pi^2 - 1) u. It vanishes on the boundary.
 *  - Time: T = 0.5. The first half [0, T/2] takes S/2 steps of dt = T/S; then dt is HALVED for
 *    the second half (S more steps): the values of M + dt K change, its pattern does not, so
 *    the program calls spk_matrix_update_values with the new triplet values (same order as
 *    the assembly) and spk_solver_refresh (the Jacobi diagonal); the solver and its workspace
 *    are kept. Default S = the smallest even number with dt <= h^2, so that the O(dt) time
 *    error stays at the size of the O(h^2) space error.
 *  - Timing (the target: update + solve <= solve + the copy of the values; docs/benchmarks.md):
 *    the update + refresh is made UPDATE_REPEATS more times with the same values (nothing
 *    changes) and the best is printed beside the solve time per step and, on the GPU, the time
 *    of a bare cudaMemcpy of the same values from the same array (built with CUDA only: the one
 *    use of the CUDA runtime here). The first update is printed apart: on the GPU it also
 *    makes the update's device buffers (the allocations it reports).
 *  - Error at t = T against the exact solution at the nodes: max |e_i| and the L2 norm of the
 *    P1 interpolant of e, sqrt(e' M e).
 *
 * The check: the L2 error must be at most ERR_BOUND_C * (h^2 + dt_final). Measured (CPU, CG +
 * Jacobi, rtol 1e-10, default S, dt_final = h^2 / 2): L2 error N = 8: 1.162e-2, N = 16:
 * 3.038e-3, N = 32: 7.682e-4, N = 64: 1.926e-4 -- 3.8x, 4.0x, 4.0x per halving of h with
 * dt ~ h^2, the O(h^2 + dt) behaviour, at a steady error / (h^2 + dt) of 0.50 to 0.53. The
 * space error dominates: with S = 8192 (dt 16x smaller at N = 32) the error is 7.719e-4.
 * ERR_BOUND_C = 1 leaves a factor 2 for rounding and the solver tolerance, and still fails on
 * a real mistake: at N = 32, keeping the old matrix after the dt change gives 1.6e-1, a mass
 * matrix with 0.9 off the diagonal 1.6e-2.
 *
 * Exit status: 0 the error is within the bound; 1 it is not, or a solve did not converge;
 * 2 bad usage; 3 a library failure; 77 --device gpu with no usable GPU (CTest skips). */
#include "spk.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SPK_HEAT_CUDA
#include <cuda_runtime_api.h>   /* only to time a bare copy of the values beside the update */
#endif

#define T_FINAL 0.5
#define ERR_BOUND_C 1.0
/* The update is made again this many times with the same values (nothing changes) to time it
 * once the device side of updates exists: the first update also makes it. */
#define UPDATE_REPEATS 3

static const double PI = 3.14159265358979323846;

typedef struct mesh {
    int      N;                 /* squares per side                                        */
    double   h;
    int64_t  n;                 /* unknowns: interior nodes, (N-1)^2                        */
    int64_t  nnz;               /* triplets kept (both endpoints interior)                  */
    int32_t *row, *col;
    double  *mval, *kval;       /* mass and stiffness value of each triplet                 */
} mesh;

/* Unknown number of node (i, j), or -1 on the boundary (eliminated). */
static int32_t unknown(const mesh *m, int i, int j)
{
    if (i <= 0 || j <= 0 || i >= m->N || j >= m->N)
        return -1;
    return (int32_t)((j - 1) * (m->N - 1) + (i - 1));
}

/* One triangle's 3 x 3 blocks into the triplet arrays (interior pairs only). */
static void add_triangle(mesh *m, const int vi[3], const int vj[3])
{
    double x[3], y[3];
    int32_t u[3];
    for (int a = 0; a < 3; a++) {
        x[a] = vi[a] * m->h;
        y[a] = vj[a] * m->h;
        u[a] = unknown(m, vi[a], vj[a]);
    }
    const double area = 0.5 * fabs((x[1] - x[0]) * (y[2] - y[0]) - (x[2] - x[0]) * (y[1] - y[0]));
    double b[3], c[3];
    for (int a = 0; a < 3; a++) {
        const int j = (a + 1) % 3, k = (a + 2) % 3;
        b[a] = y[j] - y[k];
        c[a] = x[k] - x[j];
    }
    for (int a = 0; a < 3; a++)
        for (int d = 0; d < 3; d++) {
            if (u[a] < 0 || u[d] < 0)
                continue;                            /* Dirichlet node: eliminated       */
            m->row[m->nnz] = u[a];
            m->col[m->nnz] = u[d];
            m->kval[m->nnz] = (b[a] * b[d] + c[a] * c[d]) / (4.0 * area);
            m->mval[m->nnz] = area / 12.0 * (a == d ? 2.0 : 1.0);
            m->nnz++;
        }
}

static int mesh_build(mesh *m, int N)
{
    memset(m, 0, sizeof *m);
    m->N = N;
    m->h = 1.0 / N;
    m->n = (int64_t)(N - 1) * (N - 1);
    const size_t cap = (size_t)N * N * 2 * 9;        /* 2 triangles x 9 pairs per square */
    m->row = malloc(cap * sizeof *m->row);
    m->col = malloc(cap * sizeof *m->col);
    m->mval = malloc(cap * sizeof *m->mval);
    m->kval = malloc(cap * sizeof *m->kval);
    if (!m->row || !m->col || !m->mval || !m->kval)
        return -1;
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++) {
            const int t1i[3] = {i, i + 1, i + 1}, t1j[3] = {j, j, j + 1};
            const int t2i[3] = {i, i + 1, i}, t2j[3] = {j, j + 1, j + 1};
            add_triangle(m, t1i, t1j);
            add_triangle(m, t2i, t2j);
        }
    return 0;
}

static void mesh_free(mesh *m)
{
    free(m->row);
    free(m->col);
    free(m->mval);
    free(m->kval);
}

/* exp(-t) sin(pi x) sin(pi y) at the unknowns, times `scale` */
static void exact(const mesh *m, double t, double scale, double *u)
{
    for (int j = 1; j < m->N; j++)
        for (int i = 1; i < m->N; i++)
            u[unknown(m, i, j)] = scale * exp(-t) * sin(PI * i * m->h) * sin(PI * j * m->h);
}

/* val = M + dt K, triplet by triplet, in assembly order */
static void system_values(const mesh *m, double dt, double *val)
{
    for (int64_t k = 0; k < m->nnz; k++)
        val[k] = m->mval[k] + dt * m->kval[k];
}

static double now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The preconditioner (--precond): Jacobi by default. */
static spk_precond heat_precond = SPK_PRECOND_JACOBI;
/* --amg-rebuild: each refresh builds the whole AMG hierarchy again (spk_amg_options.rebuild) */
static int heat_rebuild;

static int usage(const char *msg)
{
    fprintf(stderr, "heat: %s\nusage: heat [--device cpu|gpu|auto] [--n N] [--steps S] "
            "[--precond jacobi|amg] [--amg-rebuild] [--write-matrix FILE]\n", msg);
    return 2;
}

/* A whole decimal integer in [lo, hi] (no trailing characters), or -1. */
static long long parse_count(const char *v, long long lo, long long hi)
{
    char *end;
    errno = 0;
    const long long x = strtoll(v, &end, 10);
    return end != v && *end == '\0' && errno == 0 && x >= lo && x <= hi ? x : -1;
}

/* A library failure: the status and the context's detail. */
static int fail(spk_context *ctx, const char *what, spk_status st)
{
    fprintf(stderr, "heat: %s: %s: %s\n", what, spk_status_str(st), spk_last_error(ctx));
    return 3;
}

typedef struct run {
    spk_context *ctx;
    spk_matrix  *A, *M;
    spk_solver  *S;
    const mesh  *m;
    double      *u, *w, *rhs, *val;
    int64_t      steps, iterations;
    double       t_rhs, t_solve;             /* seconds in M (u + dt f), in solves           */
    double       t_update_first, t_update;   /* the first update + refresh, the best repeat  */
    uint64_t     allocs_update;              /* allocations of the first update + refresh    */
} run;

/* spk_matrix_update_values + spk_solver_refresh, timed (the refresh waits for its result, so
 * the update's work on the device is done when it returns). */
static spk_status update_values(run *r, double *seconds)
{
    const double t0 = now();
    spk_status st = spk_matrix_update_values(r->ctx, r->A, r->m->nnz, r->val, 0);
    if (!st)
        st = spk_solver_refresh(r->S);
    *seconds = now() - t0;
    return st;
}

/* Seconds of one bare copy of the nnz new values to the GPU, from the same (pageable) array
 * the update copies from: the floor of any update. The best of 3; -1 if not measured. */
static double copy_seconds(const run *r)
{
#ifdef SPK_HEAT_CUDA
    if (spk_context_device(r->ctx) != SPK_DEVICE_CUDA)
        return -1.0;
    const size_t bytes = (size_t)r->m->nnz * sizeof *r->val;
    void *d = NULL;
    if (cudaMalloc(&d, bytes) != cudaSuccess)
        return -1.0;
    double best = -1.0;
    for (int rep = 0; rep < 4; rep++) {              /* the first one warms up */
        const double t0 = now();
        if (cudaMemcpy(d, r->val, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
            break;
        const double t = now() - t0;
        if (rep > 0 && (best < 0 || t < best))
            best = t;
    }
    cudaFree(d);
    return best;
#else
    (void)r;
    return -1.0;
#endif
}

/* One backward Euler step from t to t + dt: rhs = M (u + dt f(t + dt)), solve with u as the
 * initial guess. Returns an exit status (0 ok). */
static int step(run *r, double t, double dt)
{
    const int64_t n = r->m->n;
    exact(r->m, t + dt, 2.0 * PI * PI - 1.0, r->w);  /* f = (2 pi^2 - 1) u at t + dt    */
    for (int64_t i = 0; i < n; i++)
        r->w[i] = r->u[i] + dt * r->w[i];
    double t0 = now();
    spk_status st = spk_matrix_spmv(r->ctx, r->M, 1.0, r->w, 0.0, r->rhs);
    if (st)
        return fail(r->ctx, "M (u + dt f)", st);
    double t1 = now();
    spk_result res;
    if ((st = spk_solver_solve(r->S, r->rhs, r->u, &res)))
        return fail(r->ctx, "solve", st);
    r->t_rhs += t1 - t0;
    r->t_solve += now() - t1;
    if (res.reason <= 0) {
        fprintf(stderr, "heat: step at t = %g did not converge: %s after %lld iterations\n", t + dt,
                spk_reason_str(res.reason), (long long)res.iterations);
        return 1;
    }
    r->iterations += res.iterations;
    r->steps++;
    return 0;
}

/* The time loop with the dt change, then the error check. */
static int simulate(run *r, int64_t S)
{
    const mesh *m = r->m;
    const double dt1 = T_FINAL / (double)S, dt2 = dt1 / 2.0;
    double t = 0.0;
    uint64_t allocs_after_first = 0;
    int rc;
    exact(m, 0.0, 1.0, r->u);
    for (int64_t s = 0; s < S / 2; s++, t += dt1) {
        if ((rc = step(r, t, dt1)))
            return rc;
        if (s == 0)
            allocs_after_first = spk_context_alloc_count(r->ctx);
    }
    /* dt halves: new values for M + dt K, same pattern, same solver */
    system_values(m, dt2, r->val);
    const uint64_t a0 = spk_context_alloc_count(r->ctx);
    spk_status st = update_values(r, &r->t_update_first);
    if (st)
        return fail(r->ctx, "update to the new dt", st);
    r->allocs_update = spk_context_alloc_count(r->ctx) - a0;
    for (int rep = 0; rep < UPDATE_REPEATS; rep++) {     /* the same values: nothing changes */
        double tu;
        if ((st = update_values(r, &tu)))
            return fail(r->ctx, "update to the new dt (repeated)", st);
        r->t_update = rep == 0 || tu < r->t_update ? tu : r->t_update;
    }
    printf("t = %.3f: dt %.3g -> %.3g (matrix values updated in place, %s refreshed)\n", t, dt1,
           dt2, spk_precond_str(heat_precond));
    for (int64_t s = 0; s < S; s++, t += dt2)
        if ((rc = step(r, t, dt2)))
            return rc;
    const uint64_t extra =
        spk_context_alloc_count(r->ctx) - allocs_after_first - r->allocs_update;

    /* error against the exact solution at T */
    const int64_t n = m->n;
    exact(m, T_FINAL, 1.0, r->w);
    double emax = 0.0;
    for (int64_t i = 0; i < n; i++) {
        r->w[i] = r->u[i] - r->w[i];
        emax = fmax(emax, fabs(r->w[i]));
    }
    if ((st = spk_matrix_spmv(r->ctx, r->M, 1.0, r->w, 0.0, r->rhs)))
        return fail(r->ctx, "M e", st);
    double eMe = 0.0;
    for (int64_t i = 0; i < n; i++)
        eMe += r->w[i] * r->rhs[i];
    const double el2 = sqrt(fmax(eMe, 0.0));
    const double bound = ERR_BOUND_C * (m->h * m->h + dt2);
    printf("t = %.3f: L2 error %.3e, max error %.3e; bound %.1f (h^2 + dt) = %.3e: %s\n", T_FINAL,
           el2, emax, ERR_BOUND_C, bound, el2 <= bound ? "ok" : "EXCEEDED");
    printf("%lld steps, %lld CG iterations (%.1f per step), %llu allocations after the first "
           "step (and %llu made once by the first value update)\n", (long long)r->steps,
           (long long)r->iterations, (double)r->iterations / (double)(r->steps ? r->steps : 1),
           (unsigned long long)extra, (unsigned long long)r->allocs_update);
    const double solve_ms = 1e3 * r->t_solve / (double)r->steps, upd_ms = 1e3 * r->t_update;
    printf("time: %.3g s in solves (%.3g ms per step), %.3g s in M (u + dt f)\n", r->t_solve,
           solve_ms, r->t_rhs);
    printf("value update + %s refresh%s (%lld values): %.3g ms (best of %d repeats; the first "
           "update %.3g ms%s)\n", spk_precond_str(heat_precond),
           heat_rebuild && heat_precond == SPK_PRECOND_AMG ? " by a rebuild" : "",
           (long long)m->nnz, upd_ms,
           UPDATE_REPEATS,
           1e3 * r->t_update_first, spk_context_device(r->ctx) == SPK_DEVICE_CUDA
                                        ? ", with the making of its buffers on the GPU" : "");
    const double copy_s = copy_seconds(r);
    if (copy_s >= 0) {
        const double copy_ms = 1e3 * copy_s;
        printf("copy of the %lld values to the GPU alone (cudaMemcpy from the same pageable "
               "array, best of 3): %.3g ms (%.3g GB/s)\n", (long long)m->nnz, copy_ms,
               1e-9 * (double)m->nnz * sizeof(double) / copy_s);
        printf("update + solve %.4g ms vs solve + copy %.4g ms: the update takes %.3g ms %s "
               "the copy (%.2g%% of a solve)\n", upd_ms + solve_ms, solve_ms + copy_ms,
               fabs(upd_ms - copy_ms), upd_ms > copy_ms ? "more than" : "less than",
               100.0 * fabs(upd_ms - copy_ms) / solve_ms);
    }
    return el2 <= bound ? 0 : 1;
}

int main(int argc, char **argv)
{
    spk_device device = SPK_DEVICE_AUTO;
    int N = 32;
    int64_t S = 0;
    const char *matrix_path = NULL;
    for (int a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            printf("usage: heat [--device cpu|gpu|auto] [--n N] [--steps S] [--precond jacobi|amg]\n"
                   "            [--amg-rebuild] [--write-matrix FILE]\n"
                   "  --device D  auto (default: the GPU when one is usable), cpu or gpu\n"
                   "  --precond P jacobi (default) or amg (smoothed aggregation)\n"
                   "  --amg-rebuild  with amg: each refresh builds the hierarchy again, instead of\n"
                   "              keeping its aggregates and recomputing its values\n"
                   "  --n N       N x N squares of the unit square, 2..4096 (default 32)\n"
                   "  --steps S   S/2 steps of dt = T/S to T/2, then S steps of dt/2 to T;\n"
                   "              S even, 2..2^30 (an odd S is taken as S + 1; default: the\n"
                   "              smallest with dt <= h^2)\n"
                   "  --write-matrix FILE  write the first step's system matrix M + dt K\n"
                   "              (Matrix Market) and exit 0 without time-stepping\n"
                   "Exit status: 0 the error is within its bound, 1 it is not or a solve did not\n"
                   "converge, 2 bad usage, 3 a library failure, 77 --device gpu without a\n"
                   "usable GPU.\n");
            return 0;
        }
        if (strcmp(argv[a], "--device") == 0 && v) {
            if (spk_device_parse(v, &device))
                return usage("--device: expected cpu, gpu or auto");
        } else if (strcmp(argv[a], "--n") == 0 && v) {
            N = (int)parse_count(v, 2, 4096);
            if (N < 0)
                return usage("--n: expected an integer in 2..4096");
        } else if (strcmp(argv[a], "--steps") == 0 && v) {
            S = parse_count(v, 2, (long long)1 << 30);
            if (S < 0)
                return usage("--steps: expected an integer in 2..2^30");
        } else if (strcmp(argv[a], "--precond") == 0 && v) {
            if (spk_precond_parse(v, &heat_precond) != SPK_OK ||
                (heat_precond != SPK_PRECOND_JACOBI && heat_precond != SPK_PRECOND_AMG))
                return usage("--precond: expected jacobi or amg");
        } else if (strcmp(argv[a], "--amg-rebuild") == 0) {
            heat_rebuild = 1;
            continue;
        } else if (strcmp(argv[a], "--write-matrix") == 0 && v) {
            matrix_path = v;
        } else {
            return usage(argv[a]);
        }
        a++;
    }
    const double h = 1.0 / N;
    if (S == 0)                                      /* dt = T / S <= h^2, S even          */
        S = 2 * (int64_t)ceil(T_FINAL / (h * h) / 2.0);
    if (S & 1) {
        fprintf(stderr, "heat: note: --steps %lld is odd: %lld taken (S/2 steps, then S)\n",
                (long long)S, (long long)S + 1);
        S++;
    }

    run r;
    memset(&r, 0, sizeof r);
    spk_status st = spk_context_create(&r.ctx, device);
    if (st) {
        fprintf(stderr, "heat: %s: %s\n", spk_status_str(st), spk_last_error(r.ctx));
        spk_context_destroy(r.ctx);
        return device == SPK_DEVICE_CUDA && (st == SPK_ERR_CUDA || st == SPK_ERR_NOT_COMPILED) ? 77 : 3;
    }
    mesh m;
    int rc = 3;
    r.m = &m;
    if (mesh_build(&m, N)) {
        fprintf(stderr, "heat: out of memory for the mesh\n");
        goto out;
    }
    r.u = malloc((size_t)m.n * sizeof *r.u);
    r.w = malloc((size_t)m.n * sizeof *r.w);
    r.rhs = malloc((size_t)m.n * sizeof *r.rhs);
    r.val = malloc((size_t)m.nnz * sizeof *r.val);
    if (!r.u || !r.w || !r.rhs || !r.val) {
        fprintf(stderr, "heat: out of memory\n");
        goto out;
    }
    /* A = M + dt K and M, both assembled from the same triplets */
    system_values(&m, T_FINAL / (double)S, r.val);
    if ((st = spk_matrix_from_coo(r.ctx, m.n, m.n, m.nnz, m.row, m.col, r.val, 0, &r.A)) ||
        (st = spk_matrix_from_coo(r.ctx, m.n, m.n, m.nnz, m.row, m.col, m.mval, 0, &r.M))) {
        rc = fail(r.ctx, "assembly", st);
        goto out;
    }
    if (matrix_path) {
        st = spk_matrix_write_mtx(r.ctx, matrix_path, r.A);
        if (st) {
            rc = fail(r.ctx, "--write-matrix", st);
        } else {
            printf("heat: M + dt K (dt = %.17g, N = %d, %lld unknowns) written to %s\n",
                   T_FINAL / (double)S, N, (long long)m.n, matrix_path);
            rc = 0;
        }
        goto out;
    }
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = heat_precond;
    opt.amg.rebuild = heat_rebuild;
    opt.rtol = 1e-10;                                /* far below the discretisation error */
    opt.use_x0 = 1;                                  /* warm start from u_n                */
    if ((st = spk_solver_create(r.ctx, r.A, &opt, &r.S))) {
        rc = fail(r.ctx, "solver", st);
        goto out;
    }
    spk_matrix_info info;
    if ((st = spk_matrix_get_info(r.A, &info))) {
        rc = fail(r.ctx, "matrix info", st);
        goto out;
    }
    printf("heat: P1 elements on %d x %d squares (%d triangles), %lld unknowns, %lld nonzeros "
           "(%lld triplets assembled)\n", N, N, 2 * N * N, (long long)m.n, (long long)info.nnz,
           (long long)m.nnz);
    printf("device %s (%s), CG + %s in %s, T = %g, %lld + %lld steps\n",
           spk_device_str(spk_context_device(r.ctx)), spk_context_device_name(r.ctx),
           spk_precond_str(heat_precond),
           spk_format_str(spk_solver_format(r.S)), T_FINAL, (long long)S / 2, (long long)S);
    rc = simulate(&r, S);
out:
    spk_solver_destroy(r.S);
    spk_matrix_destroy(r.A);
    spk_matrix_destroy(r.M);
    spk_context_destroy(r.ctx);
    mesh_free(&m);
    free(r.u);
    free(r.w);
    free(r.rhs);
    free(r.val);
    return rc;
}
