/* solvers/amg_setup.c -- the smoothed-aggregation hierarchy, built on the host (the algorithm
 * is in solvers/amg.h). Every step that depends on A's values is kept apart from the ones
 * that depend only on its pattern and on B, so that spk_amg_rebuild_values recomputes a
 * hierarchy for new values with the same aggregates, the same T and the same patterns, into
 * the arrays it has. */
#include "amg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define AMG_DENSE_MAX 6000         /* the coarsest level's dense inverse: 288 MB at most   */

void spk_amg_options_resolve(const spk_amg_options *in, spk_amg_options *out)
{
    *out = *in;
    if (out->block_size < 1)
        out->block_size = out->coords && out->coord_dim > 1 ? out->coord_dim : 1;
    if (out->sweeps < 1)
        out->sweeps = 1;
    if (out->degree < 1)
        out->degree = 2;
    if (out->max_coarse < 1)
        out->max_coarse = 500;
    if (out->max_levels < 1)
        out->max_levels = 10;
    if (out->omega == 0.0)
        out->omega = SPK_AMG_OMEGA;
}

static spk_status check_options(spk_context *ctx, int64_t n, const spk_amg_options *o)
{
    const int maxl = (int)(sizeof((spk_amg_hier *)0)->lev / sizeof(spk_amg_level));
    if (!(o->theta >= 0.0 && o->theta <= 1.0))
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: theta = %g must be in [0, 1]", o->theta);
    if (o->max_levels > maxl)
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: max_levels = %d, at most %d", o->max_levels, maxl);
    if (o->fp32 < -1 || o->fp32 > 1)
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: fp32 = %d: 1 (fp32 values), -1 (fp64) or 0 "
                        "(as the solve's precision)", o->fp32);
    if (!(o->omega > 0.0 && o->omega < 2.0))
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: omega = %g must be in (0, 2) (the Jacobi "
                        "smoother's weight times rho(D^-1 A); 0: %g)", o->omega, SPK_AMG_OMEGA);
    if (o->smoother != SPK_AMG_JACOBI && o->smoother != SPK_AMG_CHEBYSHEV)
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: unknown smoother %d", (int)o->smoother);
    if (o->degree > 10 || o->sweeps > 100)
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: degree = %d (at most 10) or sweeps = %d (at most "
                        "100) out of range", o->degree, o->sweeps);
    if (!o->nullspace && o->coords) {
        if (o->coord_dim != 2 && o->coord_dim != 3)
            return spk_fail(ctx, SPK_ERR_ARG, "AMG: coord_dim = %d, 2 or 3 coordinates a node",
                            o->coord_dim);
        if (o->block_size != o->coord_dim)
            return spk_fail(ctx, SPK_ERR_ARG, "AMG: coordinates of %d dimensions make rigid-body "
                            "modes of %d unknowns a node, but block_size = %d", o->coord_dim,
                            o->coord_dim, o->block_size);
    }
    if (o->block_size > AMG_MAX_BS || n % o->block_size != 0)
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: block_size = %d must divide the %lld unknowns "
                        "(and be at most 64)", o->block_size, (long long)n);
    if (o->nullspace && (o->nullspace_cols < 1 || o->nullspace_cols > AMG_MAX_BS))
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: nullspace_cols = %d must be in 1..64",
                        o->nullspace_cols);
    if (o->setup < SPK_AMG_SETUP_AUTO || o->setup > SPK_AMG_SETUP_DEVICE)
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: setup = %d: 0 (auto), 1 (host) or 2 (device)",
                        o->setup);
    if (o->aggregation < SPK_AMG_AGG_AUTO || o->aggregation > SPK_AMG_AGG_MIS2)
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: aggregation = %d: 0 (auto), 1 (standard) or 2 "
                        "(MIS(2))", o->aggregation);
    return SPK_OK;
}

void spk_amg_rigid_modes(const double *coords, int64_t nnodes, int dim, double *B)
{
    double c[3] = {0, 0, 0};
    for (int64_t i = 0; i < nnodes; i++)
        for (int d = 0; d < dim; d++)
            c[d] += coords[i * dim + d];
    for (int d = 0; d < dim; d++)
        c[d] = nnodes > 0 ? c[d] / (double)nnodes : 0.0;
    const int64_t n = nnodes * dim;
    const int k = dim == 2 ? 3 : 6;
    memset(B, 0, (size_t)n * (size_t)k * sizeof *B);
    for (int64_t i = 0; i < nnodes; i++) {
        const double x = coords[i * dim] - c[0], y = coords[i * dim + 1] - c[1];
        const int64_t r = i * dim;
        for (int d = 0; d < dim; d++)
            B[(int64_t)d * n + r + d] = 1.0;                 /* translations */
        if (dim == 2) {
            B[2 * n + r] = -y;                               /* rotation about z */
            B[2 * n + r + 1] = x;
        } else {
            const double z = coords[i * dim + 2] - c[2];
            B[3 * n + r] = -y;                               /* about z */
            B[3 * n + r + 1] = x;
            B[4 * n + r + 1] = -z;                           /* about x */
            B[4 * n + r + 2] = y;
            B[5 * n + r] = z;                                /* about y */
            B[5 * n + r + 2] = -x;
        }
    }
}

/* ---- host kernels ---------------------------------------------------------------------- */

static void spmv_par(const spk_csr *A, const double *x, double *y)
{
#pragma omp parallel for schedule(static) if (A->nrows > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            s += A->val[p] * x[A->colind[p]];
        y[i] = s;
    }
}

static double dot_host(int64_t n, const double *x, const double *y)
{
    double r = 0.0;
    spk_vec_ops_cpu()->dot(NULL, n, x, y, &r);    /* chunked: the same bits on every run */
    return r;
}

/* A deterministic start vector in [0.5, 1.5): the same estimate on every run (amg.h). */
void spk_amg_start_vector(int64_t n, double *v)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++)
        v[i] = spk_amg_start_entry(i);
}

/* Number of eigenvalues of the symmetric tridiagonal (a, b) below x (Sturm sequence). */
static int sturm_count(const double *a, const double *b, int m, double x)
{
    int c = 0;
    double q = 1.0;
    for (int i = 0; i < m; i++) {
        const double bb = i > 0 ? b[i - 1] * b[i - 1] : 0.0;
        q = a[i] - x - (i > 0 ? bb / q : 0.0);
        if (q == 0.0)
            q = -1e-300;
        if (q < 0.0)
            c++;
    }
    return c;
}

double spk_amg_tridiag_max(const double *a, const double *b, int m)
{
    double lo = a[0], hi = a[0];
    for (int i = 0; i < m; i++) {
        const double r = (i > 0 ? fabs(b[i - 1]) : 0.0) + (i < m - 1 ? fabs(b[i]) : 0.0);
        lo = fmin(lo, a[i] - r);
        hi = fmax(hi, a[i] + r);
    }
    for (int it = 0; it < 200 && hi - lo > 1e-14 * fmax(fabs(hi), fabs(lo)); it++) {
        const double mid = 0.5 * (lo + hi);
        if (sturm_count(a, b, m, mid) < m)   /* the largest is above mid */
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

double spk_amg_spectral_radius(const spk_csr *A, const double *dinv, int symmetric,
                               double *work)
{
    const int64_t n = A->nrows;
    if (n == 0)
        return 1.0;
    double *v = work, *vp = work + n, *w = work + 2 * n, *t = work + 3 * n;
    int sym = symmetric;
    for (int64_t i = 0; sym && i < n; i++)
        sym = dinv[i] >= 0.0;
    spk_amg_start_vector(n, v);
    double nv = sqrt(dot_host(n, v, v));
    for (int64_t i = 0; i < n; i++)
        v[i] /= nv;
    if (!sym) {
        double rho = 0.0;
        for (int it = 0; it < AMG_POWER_STEPS; it++) {
            spmv_par(A, v, w);
            for (int64_t i = 0; i < n; i++)
                w[i] *= dinv[i];
            rho = sqrt(dot_host(n, w, w));
            if (!(rho > 0.0) || !isfinite(rho))
                return rho > 0.0 ? rho : 1.0;
            for (int64_t i = 0; i < n; i++)
                v[i] = w[i] / rho;
        }
        return rho;
    }
    double al[AMG_LANCZOS_STEPS], be[AMG_LANCZOS_STEPS];
    int m = 0;
    memset(vp, 0, (size_t)n * sizeof *vp);
    double beta = 0.0;
    const int steps = n < AMG_LANCZOS_STEPS ? (int)n : AMG_LANCZOS_STEPS;
    for (int j = 0; j < steps; j++) {
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < n; i++)
            t[i] = sqrt(dinv[i]) * v[i];
        spmv_par(A, t, w);
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < n; i++)
            w[i] *= sqrt(dinv[i]);
        const double alpha = dot_host(n, w, v);
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < n; i++)
            w[i] -= alpha * v[i] + beta * vp[i];
        al[m] = alpha;
        m++;
        beta = sqrt(dot_host(n, w, w));
        if (!(beta > 1e-14 * fabs(alpha)) || j == steps - 1)
            break;
        be[m - 1] = beta;
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < n; i++) {
            vp[i] = v[i];
            v[i] = w[i] / beta;
        }
    }
    if (m == 0)
        return 1.0;
    const double rho = spk_amg_tridiag_max(al, be, m);
    return rho > 0.0 && isfinite(rho) ? rho : 1.0;
}

static void inv_diagonal(const spk_csr *A, double *dinv)
{
    spk_csr_diagonal(A, dinv);
#pragma omp parallel for schedule(static) if (A->nrows > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < A->nrows; i++)
        dinv[i] = dinv[i] != 0.0 ? 1.0 / dinv[i] : 0.0;
}

/* ---- strength of connection and aggregation --------------------------------------------- */

/* The graph of strong connections between nodes of bs unknowns (no self loops): node j is a
 * neighbour of i when the Frobenius norm c_ij of block (i, j) is >= theta sqrt(c_ii c_jj). */

/* theta 0 keeps every neighbour whatever its norm: where the node's bs rows hold the same
 * columns (a blocked matrix: a node couples to whole nodes), its neighbours are its first
 * row's columns by node, in order, without the merge or the norms. -1 where the rows differ. */
static int64_t strong_all(const spk_csr *A, int bs, int64_t i, int32_t *out)
{
    const int64_t r0 = A->rowptr[i * bs], len = A->rowptr[i * bs + 1] - r0;
    for (int c = 1; c < bs; c++) {
        const int64_t rc = A->rowptr[i * bs + c];
        if (A->rowptr[i * bs + c + 1] - rc != len ||
            memcmp(A->colind + rc, A->colind + r0, (size_t)len * sizeof *A->colind) != 0)
            return -1;
    }
    int64_t kept = 0, last = -1;
    for (int64_t p = r0; p < r0 + len; p++) {
        const int64_t j = A->colind[p] / bs;
        if (j != i && j != last) {
            if (out)
                out[kept] = (int32_t)j;
            kept++;
        }
        last = j;
    }
    return kept;
}

/* Node i's strong neighbours in increasing order into out (NULL: only counted). Its bs rows
 * each list their nodes in increasing order; they are merged, ties taken from the lower row
 * first, so that c_ij^2 is summed over the entries of block (i, j) row by row, in A's order.
 * pj, pv: scratch of the bs rows' length. At theta 0 a blocked node takes strong_all. */
static int64_t strong_of(const spk_csr *A, int bs, double theta, const double *cd, int64_t i,
                         int32_t *pj, double *pv, int32_t *out)
{
    if (theta == 0.0 && bs > 1) {
        const int64_t kept = strong_all(A, bs, i, out);
        if (kept >= 0)
            return kept;
    }
    int64_t pos[AMG_MAX_BS], end[AMG_MAX_BS];
    for (int c = 0; c < bs; c++) {
        pos[c] = A->rowptr[i * bs + c];
        end[c] = A->rowptr[i * bs + c + 1];
    }
    int64_t n = 0;                                   /* distinct neighbours so far          */
    for (;;) {
        int best = -1;
        int64_t bj = 0;
        for (int c = 0; c < bs; c++)
            if (pos[c] < end[c]) {
                const int64_t j = A->colind[pos[c]] / bs;
                if (best < 0 || j < bj) {
                    best = c;
                    bj = j;
                }
            }
        if (best < 0)
            break;
        const double a = A->val[pos[best]++];
        if (bj == i)
            continue;
        if (n == 0 || pj[n - 1] != (int32_t)bj) {
            pj[n] = (int32_t)bj;
            pv[n++] = 0.0;
        }
        pv[n - 1] += a * a;
    }
    int64_t kept = 0;
    for (int64_t q = 0; q < n; q++) {
        const int32_t j = pj[q];
        if (theta == 0.0 || sqrt(pv[q]) >= theta * sqrt(cd[i] * cd[j])) {
            if (out)
                out[kept] = j;
            kept++;
        }
    }
    return kept;
}

static spk_status strength_graph(spk_context *ctx, const spk_csr *A, int bs, double theta,
                                 int64_t **gptr_out, int32_t **gcol_out)
{
    const int64_t nn = A->nrows / bs;
    const int nt = spk_omp_threads();
    *gptr_out = NULL;
    *gcol_out = NULL;
    /* the longest node row (its bs rows together): the merge's scratch */
    int64_t width = 0;
#pragma omp parallel for schedule(static) reduction(max : width) if (nn > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < nn; i++) {
        const int64_t w = A->rowptr[(i + 1) * bs] - A->rowptr[i * bs];
        width = w > width ? w : width;
    }
    int64_t *gptr = spk_calloc(ctx, (size_t)nn + 1, sizeof *gptr);
    double *cd = spk_calloc(ctx, (size_t)(nn > 0 ? nn : 1), sizeof *cd);
    int32_t *sj = spk_malloc(ctx, (size_t)nt * (size_t)(width > 0 ? width : 1), sizeof *sj);
    double *sv = spk_malloc(ctx, (size_t)nt * (size_t)(width > 0 ? width : 1), sizeof *sv);
    int32_t *gcol = NULL;
    spk_status st = SPK_OK;
    if (!gptr || !cd || !sj || !sv) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG strength of %lld nodes: out of memory",
                      (long long)nn);
        goto done;
    }
    /* the block norms of the diagonal */
#pragma omp parallel for schedule(static) if (nn > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < nn; i++) {
        double s = 0.0;
        for (int64_t r = i * bs; r < (i + 1) * bs; r++)
            for (int64_t p = A->rowptr[r]; p < A->rowptr[r + 1]; p++)
                if (A->colind[p] / bs == i)
                    s += A->val[p] * A->val[p];
        cd[i] = sqrt(s);
    }
    /* two passes over the node rows, each node on its own: count, then fill */
#pragma omp parallel for schedule(dynamic, 1024) if (nn > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < nn; i++) {
        const int64_t t = spk_omp_thread();
        gptr[i + 1] = strong_of(A, bs, theta, cd, i, sj + t * width, sv + t * width, NULL);
    }
    for (int64_t i = 0; i < nn; i++)
        gptr[i + 1] += gptr[i];
    gcol = spk_malloc(ctx, (size_t)(gptr[nn] > 0 ? gptr[nn] : 1), sizeof *gcol);
    if (!gcol) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG strength graph of %lld edges: out of memory",
                      (long long)gptr[nn]);
        goto done;
    }
#pragma omp parallel for schedule(dynamic, 1024) if (nn > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < nn; i++) {
        const int64_t t = spk_omp_thread();
        strong_of(A, bs, theta, cd, i, sj + t * width, sv + t * width, gcol + gptr[i]);
    }
done:
    spk_free(cd);
    spk_free(sj);
    spk_free(sv);
    if (st) {
        spk_free(gptr);
        spk_free(gcol);
        return st;
    }
    *gptr_out = gptr;
    *gcol_out = gcol;
    return SPK_OK;
}

/* Standard aggregation (PyAMG's standard_aggregation): agg[i] the aggregate of node i, -1
 * for a node with no neighbours; returns the number of aggregates. Pass three's new
 * aggregate takes node i and its free neighbours (PyAMG's pass three marks those neighbours
 * with the new 0-based number and then, reaching them, lowers it by one, giving them to the
 * previous aggregate; here they stay with i). */
static int64_t standard_aggregation(int64_t nn, const int64_t *gptr, const int32_t *gcol,
                                    int32_t *agg)
{
    enum { FREE = -3, ISOLATED = -2 };
    for (int64_t i = 0; i < nn; i++)
        agg[i] = FREE;
    int64_t next = 0;
    for (int64_t i = 0; i < nn; i++) {              /* pass 1 */
        if (agg[i] != FREE)
            continue;
        int has_nb = gptr[i + 1] > gptr[i], taken = 0;
        for (int64_t p = gptr[i]; p < gptr[i + 1] && !taken; p++)
            taken = agg[gcol[p]] != FREE;
        if (!has_nb) {
            agg[i] = ISOLATED;
        } else if (!taken) {
            agg[i] = (int32_t)next;
            for (int64_t p = gptr[i]; p < gptr[i + 1]; p++)
                agg[gcol[p]] = (int32_t)next;
            next++;
        }
    }
    /* pass 2: join the aggregate of a neighbour made in pass 1; a joiner is marked apart
     * (-4 - a) so that no node joins through another joiner */
    for (int64_t i = 0; i < nn; i++) {
        if (agg[i] != FREE)
            continue;
        for (int64_t p = gptr[i]; p < gptr[i + 1]; p++) {
            const int32_t a = agg[gcol[p]];
            if (a >= 0) {
                agg[i] = -4 - a;
                break;
            }
        }
    }
    for (int64_t i = 0; i < nn; i++)
        if (agg[i] <= -4)
            agg[i] = -4 - agg[i];
    /* pass 3 */
    for (int64_t i = 0; i < nn; i++) {
        if (agg[i] != FREE)
            continue;
        agg[i] = (int32_t)next;
        for (int64_t p = gptr[i]; p < gptr[i + 1]; p++)
            if (agg[gcol[p]] == FREE)
                agg[gcol[p]] = (int32_t)next;
        next++;
    }
    for (int64_t i = 0; i < nn; i++)
        if (agg[i] == ISOLATED)
            agg[i] = -1;
    return next;
}

/* MIS(2) rounds over every node: state in/out on return. */
static int mis2_rounds(int64_t nn, const int64_t *gptr, const int32_t *gcol, uint64_t *k0,
                       uint64_t *m1, int8_t *state)
{
    int rounds = 0;
    for (int64_t left = nn; left > 0;) {
        rounds++;
#pragma omp parallel for schedule(static) if (nn > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < nn; i++)
            k0[i] = spk_amg_key(state[i], i);
#pragma omp parallel for schedule(static) if (nn > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < nn; i++) {
            uint64_t m = k0[i];
            for (int64_t p = gptr[i]; p < gptr[i + 1]; p++)
                m = k0[gcol[p]] > m ? k0[gcol[p]] : m;
            m1[i] = m;
        }
        left = 0;
#pragma omp parallel for schedule(static) reduction(+ : left) if (nn > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < nn; i++) {
            if (state[i] != SPK_AMG_MIS_UNDECIDED)
                continue;
            uint64_t m = m1[i];
            for (int64_t p = gptr[i]; p < gptr[i + 1]; p++)
                m = m1[gcol[p]] > m ? m1[gcol[p]] : m;
            if (m == k0[i])
                state[i] = SPK_AMG_MIS_IN;
            else if ((m >> 62) == SPK_AMG_MIS_IN)
                state[i] = SPK_AMG_MIS_OUT;
            else
                left++;
        }
    }
    return rounds;
}

/* The roots (state in) numbered in node order into id and agg, each node next to a root into
 * the one of largest key (at most one root is a step away), the others -1; returns the count. */
static int64_t mis2_join(int64_t nn, const int64_t *gptr, const int32_t *gcol, const int8_t *state,
                         int32_t *id, int32_t *agg)
{
    int64_t naggs = 0;
    for (int64_t i = 0; i < nn; i++)
        id[i] = state[i] == SPK_AMG_MIS_IN ? (int32_t)naggs++ : -1;
#pragma omp parallel for schedule(static) if (nn > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < nn; i++) {
        uint64_t best = 0;
        int32_t a = id[i];
        for (int64_t p = gptr[i]; a < 0 && p < gptr[i + 1]; p++) {
            const int32_t j = gcol[p];
            if (id[j] >= 0 && spk_amg_key(SPK_AMG_MIS_IN, j) > best) {
                best = spk_amg_key(SPK_AMG_MIS_IN, j);
                a = id[j];
            }
        }
        agg[i] = a;
    }
    return naggs;
}

int64_t spk_amg_mis2_aggregation(spk_context *ctx, int64_t nn, const int64_t *gptr,
                                 const int32_t *gcol, int32_t *agg, int *rounds)
{
    uint64_t *k0 = spk_malloc(ctx, (size_t)(nn > 0 ? nn : 1), sizeof *k0);
    uint64_t *m1 = spk_malloc(ctx, (size_t)(nn > 0 ? nn : 1), sizeof *m1);
    int8_t *state = spk_malloc(ctx, (size_t)(nn > 0 ? nn : 1), sizeof *state);
    int32_t *first = spk_malloc(ctx, (size_t)(nn > 0 ? nn : 1), sizeof *first);
    int64_t naggs = -1;
    *rounds = 0;
    if (!k0 || !m1 || !state || !first) {
        spk_fail(ctx, SPK_ERR_NOMEM, "AMG MIS(2) aggregation of %lld nodes: out of memory",
                 (long long)nn);
        goto done;
    }
#pragma omp parallel for schedule(static) if (nn > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < nn; i++)
        state[i] = gptr[i + 1] > gptr[i] ? SPK_AMG_MIS_UNDECIDED : SPK_AMG_MIS_OUT;
    *rounds = mis2_rounds(nn, gptr, gcol, k0, m1, state);
    naggs = mis2_join(nn, gptr, gcol, state, first, agg);
    /* two steps away: the aggregate most of its neighbours joined, ties to the neighbour of
     * largest key (read from `first`, a copy of the joins, so the order of this pass does not
     * matter) */
#pragma omp parallel for schedule(static) if (nn > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < nn; i++)
        first[i] = agg[i];
#pragma omp parallel for schedule(static) if (nn > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < nn; i++)
        if (first[i] < 0)
            agg[i] = spk_amg_join_most(first, gptr[i], gptr[i + 1], gcol);
done:
    spk_free(k0);
    spk_free(m1);
    spk_free(state);
    spk_free(first);
    return naggs;
}

/* ---- the tentative prolongator ---------------------------------------------------------- */

/* Aggregate a of `cnt` nodes (node numbers in `nodes`): its rows of B (n x k) into Q (column-
 * major, rows in node order), QR by modified Gram-Schmidt, Q's columns into T's rows of its
 * unknowns (columns a k .. a k + k - 1) and R into Bc's rows a k .. a k + k - 1 (Bc: nc x k,
 * column-major). A column whose norm falls below AMG_QR_DROP of its original is dropped (zero
 * in T and R). */
static void qr_aggregate(int64_t n, int bs, int k, const double *B, const int64_t *nodes,
                         int64_t cnt, int64_t a, int64_t nc, double *Q, double *Bc, spk_csr *T)
{
    const int64_t m = cnt * bs;
    for (int64_t q = 0; q < cnt; q++)
        for (int c = 0; c < bs; c++) {
            const int64_t r = nodes[q] * bs + c;
            for (int j = 0; j < k; j++)
                Q[(int64_t)j * m + q * bs + c] = B[(int64_t)j * n + r];
        }
    double *Ra = Bc + a * k;                        /* row a k + i, column j: Bc[j nc + a k + i] */
    for (int j = 0; j < k; j++) {
        double *qj = Q + (int64_t)j * m;
        double s = 0.0;
        for (int64_t i = 0; i < m; i++)
            s += qj[i] * qj[i];
        const double threshold = AMG_QR_DROP * sqrt(s);
        for (int i = 0; i < j; i++) {
            const double *qi = Q + (int64_t)i * m;
            double d = 0.0;
            for (int64_t r = 0; r < m; r++)
                d += qi[r] * qj[r];
            for (int64_t r = 0; r < m; r++)
                qj[r] -= d * qi[r];
            Ra[(int64_t)j * nc + i] = d;
        }
        s = 0.0;
        for (int64_t i = 0; i < m; i++)
            s += qj[i] * qj[i];
        const double nrm = sqrt(s);
        const double scale = nrm > threshold && nrm > 0.0 ? 1.0 / nrm : 0.0;
        for (int64_t i = 0; i < m; i++)
            qj[i] *= scale;
        Ra[(int64_t)j * nc + j] = scale > 0.0 ? nrm : 0.0;
    }
    for (int64_t q = 0; q < cnt; q++)
        for (int c = 0; c < bs; c++) {
            const int64_t r = nodes[q] * bs + c;
            for (int j = 0; j < k; j++) {
                T->colind[T->rowptr[r] + j] = (int32_t)(a * k + j);
                T->val[T->rowptr[r] + j] = Q[(int64_t)j * m + q * bs + c];
            }
        }
}

/* T (n x naggs k) and the coarse B (naggs k x k) from B (n x k) and the aggregates of nodes
 * of bs unknowns. Pattern: an unknown of aggregate a has the k columns a k .. a k + k - 1. */
static spk_status tentative(spk_context *ctx, int64_t n, int bs, int k, const double *B,
                            const int32_t *agg, int64_t naggs, spk_csr *T, double **Bc_out)
{
    const int64_t nn = n / bs, nc = naggs * k;
    *Bc_out = NULL;
    int64_t *start = spk_calloc(ctx, (size_t)naggs + 1, sizeof *start);
    int64_t *nodes = spk_malloc(ctx, (size_t)(nn > 0 ? nn : 1), sizeof *nodes);
    double *Bc = spk_calloc(ctx, (size_t)(nc > 0 ? nc : 1) * (size_t)k, sizeof *Bc);
    spk_status st = SPK_OK;
    int64_t in = 0;
    for (int64_t i = 0; i < nn; i++)
        in += agg[i] >= 0;
    if (!start || !nodes || !Bc || (st = spk_csr_alloc(ctx, n, nc, in * bs * k, T))) {
        st = st ? st : spk_fail(ctx, SPK_ERR_NOMEM, "AMG tentative prolongator: out of memory");
        goto fail;
    }
    for (int64_t i = 0; i < nn; i++)
        if (agg[i] >= 0)
            start[agg[i] + 1]++;
    for (int64_t a = 0; a < naggs; a++)
        start[a + 1] += start[a];
    {
        int64_t *fill = spk_malloc(ctx, (size_t)naggs + 1, sizeof *fill);
        if (!fill) {
            st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG tentative prolongator: out of memory");
            goto fail;
        }
        memcpy(fill, start, ((size_t)naggs + 1) * sizeof *fill);
        for (int64_t i = 0; i < nn; i++)
            if (agg[i] >= 0)
                nodes[fill[agg[i]]++] = i;
        spk_free(fill);
    }
    for (int64_t r = 0; r < n; r++)
        T->rowptr[r + 1] = T->rowptr[r] + (agg[r / bs] >= 0 ? k : 0);
    int64_t maxm = 0;
    for (int64_t a = 0; a < naggs; a++)
        maxm = start[a + 1] - start[a] > maxm ? start[a + 1] - start[a] : maxm;
    maxm *= bs;
    /* the aggregates one by one, each with a Q of its own thread's */
    const int nt = spk_omp_threads();
    double *Q = spk_malloc(ctx, (size_t)nt * (size_t)(maxm > 0 ? maxm : 1) * (size_t)k, sizeof *Q);
    if (!Q) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG tentative prolongator: out of memory");
        goto fail;
    }
#pragma omp parallel for schedule(dynamic, 256) if (nn > SPK_OMP_MIN_N)
    for (int64_t a = 0; a < naggs; a++) {
        double *Qa = Q + (int64_t)spk_omp_thread() * (maxm > 0 ? maxm : 1) * k;
        qr_aggregate(n, bs, k, B, nodes + start[a], start[a + 1] - start[a], a, nc, Qa, Bc, T);
    }
    spk_free(Q);
    spk_free(start);
    spk_free(nodes);
    *Bc_out = Bc;
    return SPK_OK;
fail:
    spk_free(start);
    spk_free(nodes);
    spk_free(Bc);
    spk_csr_free(T);
    return st;
}

/* S = I - omega D^-1 A on A's pattern with its diagonal: the pattern once (values by
 * smoother_values). */
static spk_status smoother_pattern(spk_context *ctx, const spk_csr *A, spk_csr *S)
{
    const int64_t n = A->nrows;
    int64_t *len = spk_malloc(ctx, (size_t)n + 1, sizeof *len);
    if (!len)
        return spk_fail(ctx, SPK_ERR_NOMEM, "AMG smoother pattern of %lld rows: out of memory",
                        (long long)n);
    /* row i of S: row i of A, with (i, i) put in its place where A has none */
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++) {
        int has = 0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1] && !has; p++)
            has = A->colind[p] == i;
        len[i] = (A->rowptr[i + 1] - A->rowptr[i]) + !has;
    }
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t c = len[i];
        len[i] = nnz;
        nnz += c;
    }
    len[n] = nnz;
    spk_status st = spk_csr_alloc(ctx, n, A->ncols, nnz, S);
    if (!st)
        memcpy(S->rowptr, len, ((size_t)n + 1) * sizeof *len);
    spk_free(len);
    if (st)
        return st;
#pragma omp parallel for schedule(static) if (n > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < n; i++) {
        int64_t q = S->rowptr[i];
        int done = 0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            if (!done && A->colind[p] > i) {
                S->colind[q++] = (int32_t)i;
                done = 1;
            }
            done |= A->colind[p] == i;
            S->colind[q++] = A->colind[p];
        }
        if (!done)
            S->colind[q++] = (int32_t)i;
    }
    return SPK_OK;
}

static void smoother_values(const spk_csr *A, const double *dinv, double omega, spk_csr *S)
{
#pragma omp parallel for schedule(static) if (A->nrows > SPK_OMP_MIN_N)
    for (int64_t i = 0; i < A->nrows; i++) {
        int64_t p = A->rowptr[i];
        for (int64_t q = S->rowptr[i]; q < S->rowptr[i + 1]; q++) {
            const int32_t j = S->colind[q];
            double a = 0.0;
            if (p < A->rowptr[i + 1] && A->colind[p] == j)
                a = A->val[p++];
            S->val[q] = (j == i ? 1.0 : 0.0) - omega * dinv[i] * a;
        }
    }
}

/* ---- the coarsest level ----------------------------------------------------------------- */

/* cinv = A^-1 (dense, row-major) by LU with partial pivoting of R A, R = diag(2^-e_i) with
 * 2^e_i the power of two just above row i's largest |a_ij|: each row scaled exactly to a
 * largest entry in [0.5, 1), so that the pivots are judged against their own row's scale and
 * not the whole matrix's (a coefficient that jumps by 1e16, jump3d:N:1e16, leaves rows of
 * entries ~1 beside rows of ~1e16, whose pivots are not small); then A^-1 = (R A)^-1 R. An
 * unknown whose row and column are zero gets a zero row and column. lu: n x n, piv: 4 n + 1. */
static spk_status coarse_inverse(spk_context *ctx, const spk_csr *A, double *lu, int64_t *piv,
                                 double *cinv)
{
    const int64_t n = A->nrows;
    int64_t *re = piv + 3 * n;                      /* e_i: row i scaled by 2^-e_i */
    memset(lu, 0, (size_t)n * (size_t)n * sizeof *lu);
    for (int64_t i = 0; i < n; i++) {
        double m = 0.0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            if (!isfinite(A->val[p]))
                return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "AMG: the coarsest level's matrix (%lld "
                                "rows) has a(%lld,%lld) = %g: the hierarchy overflowed, or a "
                                "diagonal entry of A is so small that its reciprocal overflows; "
                                "scale the system (A and b by one constant) towards entries of "
                                "order 1", (long long)n, (long long)i + 1,
                                (long long)A->colind[p] + 1, A->val[p]);
            m = fmax(m, fabs(A->val[p]));
        }
        int e = 0;
        (void)frexp(m, &e);                         /* m = 0: e = 0 */
        re[i] = e;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            lu[i * n + A->colind[p]] = ldexp(A->val[p], -e);
    }
    /* zero row and column: decoupled, given 1 on the diagonal here and 0 in the inverse */
    char *zero = (char *)(piv + 2 * n);             /* piv: n pivots, n of perm, then zero[] */
    for (int64_t i = 0; i < n; i++) {
        int z = 1;
        for (int64_t j = 0; j < n && z; j++)
            z = lu[i * n + j] == 0.0 && lu[j * n + i] == 0.0;
        zero[i] = (char)z;
        if (z)
            lu[i * n + i] = 1.0;
    }
    const double amax = 1.0;                        /* above every row's largest entry */
    for (int64_t c = 0; c < n; c++) {
        int64_t pr = c;
        for (int64_t r = c + 1; r < n; r++)
            if (fabs(lu[r * n + c]) > fabs(lu[pr * n + c]))
                pr = r;
        piv[c] = pr;
        if (!(fabs(lu[pr * n + c]) > 1e-14 * amax))
            return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "AMG: the coarsest level's matrix (%lld "
                            "rows) is singular to working precision (pivot %g at column %lld, "
                            "the rows scaled to a largest entry in [0.5, 1)): A "
                            "is singular (a pure Neumann problem?) or its null space is not in "
                            "the near-null space B", (long long)n, lu[pr * n + c],
                            (long long)c + 1);
        if (pr != c)
            for (int64_t j = 0; j < n; j++) {
                const double t = lu[c * n + j];
                lu[c * n + j] = lu[pr * n + j];
                lu[pr * n + j] = t;
            }
        const double d = lu[c * n + c];
#pragma omp parallel for schedule(static) if (n > 256)
        for (int64_t r = c + 1; r < n; r++) {
            const double l = lu[r * n + c] / d;
            lu[r * n + c] = l;
            if (l != 0.0)
                for (int64_t j = c + 1; j < n; j++)
                    lu[r * n + j] -= l * lu[c * n + j];
        }
    }
    /* A^-1 = U^-1 L^-1 P for all n columns at once, row-major: X = P (row i of P is e_perm[i]),
     * then X's rows updated by whole-row axpys, L X forward and U X backward. Every inner loop
     * runs along a row of X (contiguous, vectorised), so the n^3 multiply-adds run at the
     * core's vector rate; the columns are cut into slabs, one thread a slab, and each entry is
     * computed by the same operations whatever the thread count. */
    int64_t *perm = piv + n;
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t c = 0; c < n; c++)
        if (piv[c] != c) {
            const int64_t t = perm[c];
            perm[c] = perm[piv[c]];
            perm[piv[c]] = t;
        }
    memset(cinv, 0, (size_t)n * (size_t)n * sizeof *cinv);
    for (int64_t i = 0; i < n; i++)
        cinv[i * n + perm[i]] = 1.0;
    const int64_t slab = 128, nslabs = (n + slab - 1) / slab;
#pragma omp parallel for schedule(dynamic, 1) if (n > 256)
    for (int64_t b = 0; b < nslabs; b++) {
        const int64_t j0 = b * slab, j1 = j0 + slab < n ? j0 + slab : n;
        for (int64_t r = 1; r < n; r++) {           /* L X = P, unit diagonal */
            double *xr = cinv + r * n;
            for (int64_t c = 0; c < r; c++) {
                const double l = lu[r * n + c];
                if (l != 0.0) {
                    const double *xc = cinv + c * n;
                    for (int64_t j = j0; j < j1; j++)
                        xr[j] -= l * xc[j];
                }
            }
        }
        for (int64_t r = n - 1; r >= 0; r--) {      /* U X = Y */
            double *xr = cinv + r * n;
            for (int64_t c = r + 1; c < n; c++) {
                const double u = lu[r * n + c];
                if (u != 0.0) {
                    const double *xc = cinv + c * n;
                    for (int64_t j = j0; j < j1; j++)
                        xr[j] -= u * xc[j];
                }
            }
            const double d = lu[r * n + r];
            for (int64_t j = j0; j < j1; j++)
                xr[j] /= d;
        }
    }
    /* (R A)^-1 R: column j times 2^-e_j */
#pragma omp parallel for schedule(static) if (n > 256)
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            cinv[i * n + j] = ldexp(cinv[i * n + j], -(int)re[j]);
    for (int64_t i = 0; i < n; i++)
        if (zero[i])
            for (int64_t j = 0; j < n; j++)
                cinv[i * n + j] = cinv[j * n + i] = 0.0;
    return SPK_OK;
}

/* ---- the hierarchy ---------------------------------------------------------------------- */

static const spk_csr *level_A(const spk_amg_hier *H, const spk_csr *A0, int l)
{
    return l == 0 ? A0 : &H->lev[l].A;
}

/* The values of level l's links to l + 1 (S, P, R, AP) and of A_{l+1}, from A_l's values. */
static spk_status level_values(spk_context *ctx, spk_amg_hier *H, const spk_csr *A0, int l)
{
    spk_amg_level *L = &H->lev[l];
    const spk_csr *A = level_A(H, A0, l);
    smoother_values(A, L->dinv, 4.0 / (3.0 * L->rho), &L->S);
    spk_status st = spk_csr_spgemm_numeric(ctx, &L->S, &L->T, &L->P, H->acc, H->nacc, L->k);
    if (!st) {
        spk_csr_transpose_values(&L->P, L->rmap, &L->R);
        st = spk_csr_spgemm_numeric(ctx, A, &L->P, &L->AP, H->acc, H->nacc, L->k);
    }
    if (!st)
        st = spk_csr_spgemm_numeric(ctx, &L->R, &L->AP, &H->lev[l + 1].A, H->acc, H->nacc,
                                    L->k);
    return st;
}

/* The diagonal and the spectral estimate of level l. */
static void level_diag(spk_amg_hier *H, const spk_csr *A0, int l)
{
    spk_amg_level *L = &H->lev[l];
    const spk_csr *A = level_A(H, A0, l);
    inv_diagonal(A, L->dinv);
    L->rho = spk_amg_spectral_radius(A, L->dinv, H->symmetric, H->work);
}

/* Level l's links and the next level's A, patterns and values together (the first setup):
 * S, P = S T, R = P^T with its map, A P and R (A P), each product by spk_csr_spgemm, whose
 * values have the bits level_values gives them at a refresh. */
static spk_status level_build(spk_context *ctx, spk_amg_hier *H, const spk_csr *A0, int l)
{
    spk_amg_level *L = &H->lev[l], *C = &H->lev[l + 1];
    const spk_csr *A = level_A(H, A0, l);
    spk_status st = smoother_pattern(ctx, A, &L->S);
    if (st)
        return st;
    smoother_values(A, L->dinv, 4.0 / (3.0 * L->rho), &L->S);
    /* S and A in groups of bs rows (a node's), T, P and A P in runs of k columns (an
     * aggregate's), R in groups of k rows: the blocked products where the pattern is so */
    const int bs = (int)L->bs, k = (int)L->k;
    if ((st = spk_csr_spgemm(ctx, &L->S, &L->T, &L->P, H->acc, H->nacc, bs, k)) ||
        (st = spk_csr_transpose(ctx, &L->P, &L->R, &L->rmap)) ||
        (st = spk_csr_spgemm(ctx, A, &L->P, &L->AP, H->acc, H->nacc, bs, k)))
        return st;
    return spk_csr_spgemm(ctx, &L->R, &L->AP, &C->A, H->acc, H->nacc, k, k);
}

/* The accumulator for the numeric products: as wide as the widest right-hand factor. */
static spk_status ensure_acc(spk_context *ctx, spk_amg_hier *H, int64_t w)
{
    if (w <= H->acc_w && H->acc)
        return SPK_OK;
    spk_free(H->acc);
    H->nacc = spk_csr_spgemm_threads();
    H->acc_w = w;
    H->acc = spk_calloc(ctx, (size_t)H->nacc * (size_t)(w > 0 ? w : 1), sizeof *H->acc);
    return H->acc ? SPK_OK : spk_fail(ctx, SPK_ERR_NOMEM, "AMG: SpGEMM accumulator of %d x %lld "
                                      "doubles: out of memory", H->nacc, (long long)w);
}

void spk_amg_free(spk_amg_hier *H)
{
    if (!H)
        return;
    if (H->dev)
        spk_amg_device_free(H);
    for (int l = 0; l < (int)(sizeof H->lev / sizeof H->lev[0]); l++) {
        spk_amg_level *L = &H->lev[l];
        spk_csr_free(&L->A);
        spk_free(L->B);
        spk_free(L->dinv);
        spk_free(L->agg);
        spk_csr_free(&L->T);
        spk_csr_free(&L->S);
        spk_csr_free(&L->P);
        spk_csr_free(&L->R);
        spk_free(L->rmap);
        spk_csr_free(&L->AP);
    }
    spk_free(H->cinv);
    spk_csr_free(&H->Cinv);
    spk_free(H->acc);
    spk_free(H->work);
    spk_free(H->lu);
    spk_free(H->piv);
    memset(H, 0, sizeof *H);
}

static spk_status coarse_setup(spk_context *ctx, spk_amg_hier *H, const spk_csr *A0)
{
    const int l = H->nlevels - 1;
    const spk_csr *A = level_A(H, A0, l);
    const int64_t n = A->nrows;
    if (n > AMG_DENSE_MAX && H->stop_aggs > 0)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "AMG: the coarsening stopped at %lld rows on "
                        "level %d: its %lld aggregates of %d near-null vectors each would make "
                        "%lld coarse rows, no fewer; more than the coarsest level's dense solve "
                        "takes (%d): use fewer near-null vectors, or Jacobi", (long long)n, l,
                        (long long)H->stop_aggs, H->lev[l].k,
                        (long long)H->stop_aggs * H->lev[l].k, AMG_DENSE_MAX);
    if (n > AMG_DENSE_MAX)
        return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "AMG: the coarsening stopped at %lld rows on "
                        "level %d (aggregation no longer coarsens, or max_levels = %d), more "
                        "than the coarsest level's dense solve takes (%d): raise max_levels, or "
                        "use Jacobi", (long long)n, l, H->opt.max_levels, AMG_DENSE_MAX);
    spk_status st = spk_check_memory(ctx, 16.0 * (double)n * (double)n, "AMG: the coarsest "
                                     "level's dense inverse of order %lld", (long long)n);
    if (st)
        return st;
    H->nc = n;
    H->lu = spk_malloc(ctx, (size_t)(n > 0 ? n * n : 1), sizeof *H->lu);
    H->cinv = spk_malloc(ctx, (size_t)(n > 0 ? n * n : 1), sizeof *H->cinv);
    H->piv = spk_malloc(ctx, (size_t)(4 * n + 1), sizeof *H->piv);
    if (!H->lu || !H->cinv || !H->piv)
        return spk_fail(ctx, SPK_ERR_NOMEM, "AMG: the coarsest level's dense inverse of order "
                        "%lld: out of memory", (long long)n);
    if ((st = spk_csr_alloc(ctx, n, n, n * n, &H->Cinv)))
        return st;
    for (int64_t i = 0; i < n; i++) {
        H->Cinv.rowptr[i + 1] = (i + 1) * n;
        for (int64_t j = 0; j < n; j++)
            H->Cinv.colind[i * n + j] = (int32_t)j;
    }
    return SPK_OK;
}

static spk_status coarse_values(spk_context *ctx, spk_amg_hier *H, const spk_csr *A0)
{
    const spk_csr *A = level_A(H, A0, H->nlevels - 1);
    spk_status st = coarse_inverse(ctx, A, H->lu, H->piv, H->cinv);
    if (!st)
        memcpy(H->Cinv.val, H->cinv, (size_t)(H->nc * H->nc) * sizeof *H->cinv);
    return st;
}

/* Level 0's B, given or made from coordinates (the translations are 0 and 1 already), each
 * column scaled by a power of two to a largest |entry| in [0.5, 1): the span is B's, and so
 * are the hierarchy's bits (the tentative prolongator's QR takes a power of two out exactly),
 * but the QR's norms can no longer overflow or underflow (a B of 1e160 or 1e-170 used to lose
 * its columns without a word). A zero column spans nothing: a given one is refused; a
 * rigid-body rotation that moves no node (every node on its axis, or all at one point) is
 * left out, and k counts the modes that remain. */
static spk_status scale_columns(spk_context *ctx, const spk_amg_options *o, spk_amg_level *L0)
{
    const int64_t n = L0->n;
    int kept = 0;
    for (int c = 0; c < L0->k; c++) {
        double *col = L0->B + (int64_t)c * n, m = 0.0;
        for (int64_t i = 0; i < n; i++)
            m = fmax(m, fabs(col[i]));
        if (m == 0.0 && n > 0) {
            if (o->nullspace)
                return spk_fail(ctx, SPK_ERR_ARG, "AMG: near-null space vector %d of %d is zero: "
                                "it spans nothing", c + 1, L0->k);
            continue;                           /* a rotation that moves no node */
        }
        int e = 0;
        (void)frexp(m, &e);
        double *to = L0->B + (int64_t)kept * n;
        for (int64_t i = 0; i < n; i++)
            to[i] = ldexp(col[i], -e);
        kept++;
    }
    if (kept == 0 && n > 0)
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: the near-null space is empty");
    L0->k = kept;
    return SPK_OK;
}

spk_status spk_amg_begin(spk_context *ctx, const spk_csr *A0, int symmetric,
                         const spk_amg_options *in, spk_amg_hier *H)
{
    memset(H, 0, sizeof *H);
    spk_amg_options_resolve(in, &H->opt);
    const spk_amg_options *o = &H->opt;
    const int64_t n = A0->nrows;
    spk_status st = check_options(ctx, n, o);
    if (st)
        return st;
    H->symmetric = symmetric;
    H->work = spk_malloc(ctx, (size_t)(4 * n + 4), sizeof *H->work);
    if (!H->work) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG workspace of %lld doubles: out of memory",
                      (long long)(4 * n));
        goto fail;
    }
    /* level 0's near-null space */
    spk_amg_level *L0 = &H->lev[0];
    L0->n = n;
    L0->bs = o->block_size;
    L0->k = o->nullspace ? o->nullspace_cols : o->coords ? (o->coord_dim == 2 ? 3 : 6)
                                                         : o->block_size;
    L0->B = spk_malloc(ctx, (size_t)(n > 0 ? n : 1) * (size_t)L0->k, sizeof *L0->B);
    if (!L0->B) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG near-null space of %lld x %d: out of memory",
                      (long long)n, L0->k);
        goto fail;
    }
    if (o->nullspace) {
        memcpy(L0->B, o->nullspace, (size_t)n * (size_t)L0->k * sizeof *L0->B);
        for (int64_t i = 0; i < n * L0->k; i++)
            if (!isfinite(L0->B[i])) {
                st = spk_fail(ctx, SPK_ERR_ARG, "AMG: nullspace[%lld] = %g (vector %lld, entry "
                              "(%lld)) is not finite", (long long)i, L0->B[i],
                              (long long)(i / n) + 1, (long long)(i % n) + 1);
                goto fail;
            }
    } else if (o->coords) {
        for (int64_t i = 0; i < n; i++)
            if (!isfinite(o->coords[i])) {
                st = spk_fail(ctx, SPK_ERR_ARG, "AMG: coords[%lld] = %g (node %lld) is not "
                              "finite", (long long)i, o->coords[i], (long long)(i / o->coord_dim) + 1);
                goto fail;
            }
        spk_amg_rigid_modes(o->coords, n / o->coord_dim, o->coord_dim, L0->B);
    } else {                            /* the bs translations: B[c n + i] = (i % bs == c) */
        const int k = L0->k;
        double *B = L0->B;
#pragma omp parallel for schedule(static) if (n > 65536)
        for (int64_t i = 0; i < n; i++)
            for (int c = 0; c < k; c++)
                B[(int64_t)c * n + i] = i % k == c ? 1.0 : 0.0;
    }
    if ((o->nullspace || o->coords) && (st = scale_columns(ctx, o, L0)))
        goto fail;
    H->nlevels = 1;
    return SPK_OK;
fail:
    spk_amg_free(H);
    return st;
}

spk_status spk_amg_coarse_refresh(spk_context *ctx, spk_amg_hier *H, const spk_csr *A0)
{
    return coarse_values(ctx, H, A0);
}

spk_status spk_amg_finish(spk_context *ctx, spk_amg_hier *H, const spk_csr *A0)
{
    const double t0 = spk_now();
    spk_status st;
    if ((st = coarse_setup(ctx, H, A0)) || (st = coarse_values(ctx, H, A0)))
        return st;
    H->setup_s[H->nlevels - 1] += spk_now() - t0;
    return SPK_OK;
}

spk_status spk_amg_build(spk_context *ctx, const spk_csr *A0, int symmetric,
                         const spk_amg_options *in, spk_amg_hier *H)
{
    spk_status st = spk_amg_begin(ctx, A0, symmetric, in, H);
    if (st)
        return st;
    const spk_amg_options *o = &H->opt;
    H->mis2 = o->aggregation == SPK_AMG_AGG_MIS2 ||
              (o->aggregation == SPK_AMG_AGG_AUTO && o->setup == SPK_AMG_SETUP_DEVICE);
    for (int l = 0;; l++) {
        const double t0 = spk_now();
        spk_amg_level *L = &H->lev[l];
        const spk_csr *A = level_A(H, A0, l);
        L->dinv = spk_malloc(ctx, (size_t)(L->n > 0 ? L->n : 1), sizeof *L->dinv);
        if (!L->dinv) {
            st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG level %d: out of memory", l);
            goto fail;
        }
        level_diag(H, A0, l);
        if (L->n <= o->max_coarse || l + 1 >= o->max_levels) {
            H->setup_s[l] = spk_now() - t0;
            break;
        }
        int64_t *gptr = NULL;
        int32_t *gcol = NULL;
        if ((st = strength_graph(ctx, A, L->bs, o->theta, &gptr, &gcol)))
            goto fail;
        const int64_t nn = L->n / L->bs;
        L->agg = spk_malloc(ctx, (size_t)(nn > 0 ? nn : 1), sizeof *L->agg);
        if (!L->agg) {
            spk_free(gptr);
            spk_free(gcol);
            st = spk_fail(ctx, SPK_ERR_NOMEM, "AMG aggregates of %lld nodes: out of memory",
                          (long long)nn);
            goto fail;
        }
        L->naggs = H->mis2 ? spk_amg_mis2_aggregation(ctx, nn, gptr, gcol, L->agg,
                                                      &H->mis_rounds[l])
                           : standard_aggregation(nn, gptr, gcol, L->agg);
        spk_free(gptr);
        spk_free(gcol);
        if (L->naggs < 0) {
            st = SPK_ERR_NOMEM;
            goto fail;
        }
        if (L->naggs == 0 || L->naggs * L->k >= L->n) {  /* no coarsening: this is the last */
            H->stop_aggs = L->naggs;
            spk_free(L->agg);
            L->agg = NULL;
            L->naggs = 0;
            H->setup_s[l] = spk_now() - t0;
            break;
        }
        spk_amg_level *C = &H->lev[l + 1];
        /* the accumulator as wide as T: P = S T, A P and R (A P) all have its columns */
        if ((st = tentative(ctx, L->n, L->bs, L->k, L->B, L->agg, L->naggs, &L->T, &C->B)) ||
            (st = ensure_acc(ctx, H, L->T.ncols)) || (st = level_build(ctx, H, A0, l)))
            goto fail;
        C->n = L->naggs * L->k;
        C->bs = L->k;
        C->k = L->k;
        H->nlevels = l + 2;
        H->setup_s[l] = spk_now() - t0;
    }
    if ((st = spk_amg_finish(ctx, H, A0)))
        goto fail;
    return SPK_OK;
fail:
    spk_amg_free(H);
    return st;
}

spk_status spk_amg_rebuild_values(spk_context *ctx, const spk_csr *A0, spk_amg_hier *H)
{
    if (H->device)
        return spk_fail(ctx, SPK_ERR_ARG, "AMG: a hierarchy built on the GPU is refreshed there "
                        "(spk_amg_refresh_device)");
    spk_status st = SPK_OK;
    for (int l = 0; l < H->nlevels && !st; l++) {
        level_diag(H, A0, l);
        if (l + 1 < H->nlevels)
            st = level_values(ctx, H, A0, l);
    }
    return st ? st : coarse_values(ctx, H, A0);
}
