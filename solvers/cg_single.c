/* solvers/cg_single.c -- preconditioned CG with one reduction per iteration (Chronopoulos and
 * Gear, J. Comput. Appl. Math. 25, 1989; PETSc's KSPCG with single reduction), the form spk_cg
 * takes over ranks. The textbook loop (solvers/cg.c) needs p'Ap before it can form r and then
 * r'z: two reductions in a row. Here the next A u is made before its scalars are known, and
 * r'u, (A u)'u and r'r go over the ranks in one MPI_Allreduce:
 *
 *     x += alpha p;  r -= alpha s;  u = M^-1 r;  w = A u;
 *     gamma' = r'u,  delta = w'u,  r'r                         one reduction
 *     beta = gamma' / gamma;  alpha = gamma' / (delta - beta gamma' / alpha)
 *     p = u + beta p;  s = w + beta s                           (s = A p by recurrence)
 *
 * In exact arithmetic alpha and beta are the textbook's, so the iterates are CG's; rounding
 * differs only in the last bits (tests/test_mpi.c holds the counts to the one-rank CG's within
 * 2). The price: two more vectors (w, s) and one more axpby a step, nothing a halo exchange
 * and a reduction's latency do not outweigh over ranks. The stopping tests (rtol, atol, dtol,
 * stagnation, the host's) are the textbook loop's, on the recursive residual r. */
#include "solver.h"

#include <math.h>

static spk_reason nonpositive(double v)
{
    return isnan(v) || isinf(v) ? SPK_DIVERGED_NANORINF : SPK_DIVERGED_INDEFINITE;
}

/* One pass over the vectors, the host loops of a distributed solve on CPU ranks. step 0 (the start)
 * only forms u and the sums from r. Otherwise, with upd, the directions of the last step first (p = u + beta p, s = w + beta s: u and w are read before r
 * moves, so u may be r), then x += alpha p, r -= alpha s, u = dinv .* r on the diagonal path,
 * and the local sums r'u (not on the general path: u is not made yet) and r'r, over chunks
 * fixed by n as every host sum is (src/spk_internal.h). */
static void cg1_pass(int64_t n, int step, int upd, double alpha, double beta, double *x, double *r,
                     double *p, double *s, double *u, const double *w, const double *dinv,
                     int ru, double *sums)
{
    double part[2][SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1)
    for (int c = 0; c < nc; c++) {
        const int64_t lo = spk_chunk_lo(n, nc, c), hi = spk_chunk_lo(n, nc, c + 1);
        double s_ru = 0.0, s_rr = 0.0;
#pragma omp simd reduction(+ : s_ru, s_rr) if (nc > 1)
        for (int64_t i = lo; i < hi; i++) {
            double ri = r[i];
            if (step) {
                double pi = p[i], si = s[i];
                if (upd) {
                    pi = u[i] + beta * pi;
                    si = w[i] + beta * si;
                    p[i] = pi;
                    s[i] = si;
                }
                x[i] += alpha * pi;
                ri -= alpha * si;
                r[i] = ri;
            }
            const double ui = dinv ? dinv[i] * ri : ri;
            if (dinv)
                u[i] = ui;
            s_ru += ri * ui;
            s_rr += ri * ri;
        }
        part[0][c] = s_ru;
        part[1][c] = s_rr;
    }
    sums[0] = ru ? spk_chunks_sum(part[0], nc) : 0.0;
    sums[2] = spk_chunks_sum(part[1], nc);
}

/* The same pass as calls of the device's own table (GPU ranks, SPK_DIST_COMPOSED): the two
 * direction updates, x and r, u = dinv .* r, then r'u and r'r in one dot2 (r'r alone on the
 * general path). Five vector passes where the host loop makes one; on a GPU each is a kernel
 * at the memory's speed. */
static spk_status cg1_composed(spk_krylov *k, int step, int upd, double alpha, double beta,
                               double *x, double *r, double *p, double *s, double *u,
                               const double *w, const double *dinv, int ru, double *sums)
{
    spk_context *ctx = k->ctx;
    const spk_vec_ops *loc = spk_vec_ops_for(ctx->device);
    const int64_t n = k->n;
    spk_status st = SPK_OK;
    if (step && upd && !(st = loc->axpby(ctx, n, 1.0, u, beta, p)))
        st = loc->axpby(ctx, n, 1.0, w, beta, s);
    if (step && !st && !(st = loc->axpy(ctx, n, alpha, p, x)))
        st = loc->axpy(ctx, n, -alpha, s, r);
    if (!st && dinv)
        st = loc->pmul(ctx, n, dinv, r, u);
    if (st)
        return st;
    sums[0] = 0.0;
    return ru ? loc->dot2(ctx, n, r, u, r, &sums[0], &sums[2]) : loc->dot(ctx, n, r, r, &sums[2]);
}

/* One pass of the loop, in the form of the vector table's kind. */
static spk_status cg1_step(spk_krylov *k, int step, int upd, double alpha, double beta,
                           double *x, double *r, double *p, double *s, double *u,
                           const double *w, const double *dinv, int ru, double *sums)
{
    if (k->ops->distributed == SPK_DIST_COMPOSED)
        return cg1_composed(k, step, upd, alpha, beta, x, r, p, s, u, w, dinv, ru, sums);
    cg1_pass(k->n, step, upd, alpha, beta, x, r, p, s, u, w, dinv, ru, sums);
    return SPK_OK;
}

/* After the pass: u = M^-1 r on the general path (and r'u), w = A u, u'w, and the three sums
 * over the ranks in one reduction. */
static spk_status cg1_finish(spk_krylov *k, const double *r, double *u, double *w, double v[3])
{
    const spk_vec_ops *loc = spk_vec_ops_for(k->ctx->device);   /* the local sums */
    spk_status st = SPK_OK;
    if (spk_krylov_pc_path(k) == SPK_PC_GENERAL) {
        if ((st = spk_precond_apply(k, r, u)) || (st = loc->dot(k->ctx, k->n, r, u, &v[0])))
            return st;
    }
    const double *uu = k->pc->identity ? r : u;
    if ((st = spk_apply_A(k, uu, w)) || (st = loc->dot(k->ctx, k->n, uu, w, &v[1])))
        return st;
    return spk_comm_allreduce(k->ctx, v, 3);
}

spk_status spk_cg_single(spk_krylov *k, const double *b, double *x)
{
    spk_context *ctx = k->ctx;
    const spk_vec_ops *ops = k->ops;
    const int64_t n = k->n;
    spk_result *res = k->res;
    double *r, *u = NULL, *w, *p, *s;
    spk_status st = spk_krylov_vec(k, SPK_WS_METHOD + 0, n, &r);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 1, n, &w);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 2, n, &p);
    if (!st)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 3, n, &s);
    if (!st && !k->pc->identity)
        st = spk_krylov_vec(k, SPK_WS_METHOD + 4, n, &u);
    if (!st && !(st = spk_apply_A(k, x, r)))
        st = ops->axpby(ctx, n, 1.0, b, -1.0, r);
    const double *dinv = spk_krylov_dinv(k);          /* the diagonal path, else NULL   */
    const int ru = spk_krylov_pc_path(k) != SPK_PC_GENERAL;
    double v[3];
    if (st || (st = cg1_step(k, 0, 0, 0.0, 0.0, x, r, p, s, u ? u : r, w, dinv, ru, v)) ||
        (st = cg1_finish(k, r, u, w, v)))
        return st;
    const double *uu = u ? u : r;
    double gamma = v[0], delta = v[1];
    res->rnorm = sqrt(v[2]);
    if ((st = spk_stop_record(k, 0, 0, res->rnorm)))
        return st;
    res->reason = spk_stop_check(k->opt, res->bnorm, res->rnorm);
    if (res->reason == SPK_REASON_NONE)
        res->reason = k->host_stop;
    if (res->reason == SPK_REASON_NONE && !(gamma > 0)) {
        res->reason = nonpositive(gamma);            /* r'M^-1 r <= 0: M not SPD */
        spk_cg_indefinite_detail(res, "r'M^-1 r", gamma, 1, res->rnorm);
    }
    if (res->reason == SPK_REASON_NONE && !(delta > 0)) {
        res->reason = nonpositive(delta);            /* u'A u <= 0: A not SPD    */
        spk_cg_indefinite_detail(res, "u'A u", delta, 1, res->rnorm);
    }
    if (res->reason != SPK_REASON_NONE)
        return SPK_OK;
    const double div_thr = spk_stop_dtol_threshold(k->opt, res->bnorm, res->rnorm);
    double best = res->rnorm, alpha = gamma / delta;
    int64_t best_it = 0;
    if ((st = ops->copy(ctx, n, uu, p)) || (st = ops->copy(ctx, n, w, s)))
        return st;
    double beta = 0.0;
    for (int64_t it = 1; it <= k->maxiter; it++) {
        if ((st = cg1_step(k, 1, it > 1, alpha, beta, x, r, p, s, u ? u : r, w, dinv, ru, v)) ||
            (st = cg1_finish(k, r, u, w, v)))
            return st;
        const double rnorm = sqrt(v[2]);
        res->iterations = it;
        res->rnorm = rnorm;
        if ((st = spk_stop_record(k, it, 0, rnorm)))
            return st;
        spk_reason why = spk_stop_check(k->opt, res->bnorm, rnorm);
        if (why == SPK_REASON_NONE && rnorm > div_thr)
            why = SPK_DIVERGED_DTOL;
        if (why == SPK_REASON_NONE) {
            if (rnorm < SPK_STAG_FACTOR * best) {
                best = rnorm;
                best_it = it;
            } else if (k->opt->stagnation > 0 && it - best_it >= k->opt->stagnation) {
                why = SPK_DIVERGED_STAGNATION;
            }
        }
        if (why == SPK_REASON_NONE)
            why = k->host_stop;
        const double gamma_new = v[0];
        delta = v[1];
        const char *what = NULL;
        double bad = 0.0;
        if (why == SPK_REASON_NONE && !(gamma_new > 0)) {
            why = nonpositive(gamma_new);
            what = "r'M^-1 r";
            bad = gamma_new;
        }
        beta = gamma_new / gamma;
        const double denom = delta - beta * gamma_new / alpha;
        if (why == SPK_REASON_NONE && !(denom > 0)) {
            why = nonpositive(denom);                /* p'A p <= 0 */
            what = "p'Ap";
            bad = denom;
        }
        if (why != SPK_REASON_NONE) {
            res->reason = why;
            if (what)
                spk_cg_indefinite_detail(res, what, bad, it + 1, rnorm);
            return SPK_OK;
        }
        alpha = gamma_new / denom;
        gamma = gamma_new;                           /* p and s: the next pass's first step */
    }
    res->reason = SPK_DIVERGED_MAXIT;
    return SPK_OK;
}
