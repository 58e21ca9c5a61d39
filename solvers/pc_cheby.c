/* solvers/pc_cheby.c -- Chebyshev polynomial preconditioning: M^-1 = q(D^-1 A) D^-1, the
 * polynomial of degree K - 1 that K Chebyshev steps in D^-1 A on [lmax / 30, 1.1 lmax] make of
 * b from x = 0 (the AMG smoother's interval and the AMG smoother's code: spk_cheby_sweep,
 * solvers/cheby.c). lmax estimates rho(D^-1 A) by the AMG setup's host Lanczos
 * (spk_amg_spectral_radius: 20 steps on D^-1/2 A D^-1/2, power steps when A is not
 * symmetric). The apply is SpMVs and vector steps only: K - 1 SpMVs with A and 3K - 2 vector
 * passes (a copy, an axpby and a D^-1 axpby a step), through the backend and vector-ops
 * tables, so one row serves every device and is captured into CG's graph. Degree K here is
 * the number of Chebyshev steps, as the AMG smoother's degree: q has degree K - 1.
 *
 * M is SPD for CG when A is: M^-1 = D^-1/2 q(S) D^-1/2 with S = D^-1/2 A D^-1/2, and with
 * a, b the interval's ends, 1 - t q(t) = T_K((theta - t) / delta) / T_K(theta / delta) lies in
 * (-1, 1) for 0 < t < a + b, so q(t) > 0 on (0, a + b) = (0, 1.133 lmax): on the whole spectrum
 * of S unless rho(D^-1 A) exceeds its estimate by more than 13% (a Lanczos Ritz value is a
 * lower bound, and after 20 steps a close one). A zero diagonal is refused (D^-1), and for CG
 * a negative one (D^-1/2 must exist). A refresh re-reads the diagonal, re-estimates lmax and
 * uploads D^-1: no allocation. */
#include "amg.h"
#include "cheby.h"
#include "precond.h"

#include <math.h>
#include <stdio.h>

/* Degree 3 by default: two SpMVs an apply, which on poisson3d halves Jacobi-CG's iterations
 * (docs/solvers.md); the AMG's bound on the degree. */
#define CHEBY_DEFAULT_DEGREE 3
#define CHEBY_MAX_DEGREE 10

typedef struct pc_cheby {
    spk_cheby     c;              /* D^-1, interval, work vectors; the operator set at apply */
    const spk_matrix *A;          /* the solver's A: its row and state read at every apply
                                   * (another solver may re-prepare it in another format)    */
    double        rho;            /* the estimate of rho(D^-1 A)                              */
    int           lanczos;        /* it came from Lanczos (else power steps)                  */
    int           require_positive; /* CG: D must be positive                                 */
    double       *hdiag;          /* host n: D^-1 before its upload                           */
    double       *work;           /* host 4 n: the Lanczos vectors                            */
} pc_cheby;

/* D^-1, lmax and the interval from A's current values. */
static spk_status cheby_fill(pc_cheby *P, spk_matrix *A)
{
    spk_cheby *c = &P->c;
    spk_status st = spk_matrix_host_values(c->ctx, A);
    if (st)
        return st;
    spk_csr_diagonal(&A->csr, P->hdiag);
    for (int64_t i = 0; i < c->n; i++) {
        const double a = P->hdiag[i];
        if (P->require_positive ? !(a > 0.0) : a == 0.0)
            return spk_fail(c->ctx, SPK_ERR_UNSUPPORTED, "Chebyshev needs a %s diagonal (it "
                            "is a polynomial in D^-1 A), but a(%lld,%lld) = %g; use no "
                            "preconditioner (SPK_PRECOND_NONE)%s",
                            P->require_positive ? "positive" : "nonzero", (long long)i + 1,
                            (long long)i + 1, a,
                            P->require_positive ? ", or BiCGStab or GMRES if A is not SPD" : "");
        P->hdiag[i] = 1.0 / a;
    }
    /* spk_amg_spectral_radius takes Lanczos for a symmetric A with D^-1 >= 0 */
    P->lanczos = spk_matrix_info_of(A)->symmetric;
    for (int64_t i = 0; P->lanczos && i < c->n; i++)
        P->lanczos = P->hdiag[i] >= 0.0;
    P->rho = spk_amg_spectral_radius(&A->csr, P->hdiag, P->lanczos, P->work);
    c->lmax = 1.1 * P->rho;
    c->lmin = P->rho / 30.0;
    return c->ops->upload(c->ctx, c->n, P->hdiag, (double *)c->dinv);
}

static void cheby_destroy(void *state)
{
    pc_cheby *P = state;
    if (!P)
        return;
    const spk_vec_ops *o = P->c.ops;
    o->free(P->c.ctx, (double *)P->c.dinv);
    o->free(P->c.ctx, P->c.r);
    o->free(P->c.ctx, P->c.d);
    spk_free(P->hdiag);
    spk_free(P->work);
    spk_free(P);
}

static spk_status cheby_setup(spk_context *ctx, spk_matrix *A, const spk_options *opt,
                              void **state)
{
    *state = NULL;
    const int degree = opt->poly_degree ? opt->poly_degree : CHEBY_DEFAULT_DEGREE;
    if (degree < 1 || degree > CHEBY_MAX_DEGREE)
        return spk_fail(ctx, SPK_ERR_ARG, "Chebyshev: poly_degree = %d must be in 1..%d (0: %d)",
                        opt->poly_degree, CHEBY_MAX_DEGREE, CHEBY_DEFAULT_DEGREE);
    pc_cheby *P = spk_calloc(ctx, 1, sizeof *P);
    if (!P)
        return spk_fail(ctx, SPK_ERR_NOMEM, "Chebyshev preconditioner: out of memory");
    const int64_t n = A->csr.nrows;
    spk_cheby *c = &P->c;
    c->ctx = ctx;
    c->ops = spk_vec_ops_for(ctx->device);
    P->A = A;
    c->n = n;
    c->degree = degree;
    P->require_positive = opt->method == SPK_METHOD_CG;
    P->hdiag = spk_malloc(ctx, (size_t)(n > 0 ? n : 1), sizeof *P->hdiag);
    P->work = spk_malloc(ctx, (size_t)(4 * n + 4), sizeof *P->work);
    double *dinv = NULL;
    spk_status st = P->hdiag && P->work
                        ? SPK_OK
                        : spk_fail(ctx, SPK_ERR_NOMEM, "Chebyshev: host workspace of %lld "
                                   "doubles: out of memory", (long long)(5 * n));
    if (!st)
        st = c->ops->alloc(ctx, n, &dinv);
    c->dinv = dinv;
    if (!st)
        st = c->ops->alloc(ctx, n, &c->r);
    if (!st)
        st = c->ops->alloc(ctx, n, &c->d);
    if (!st)
        st = cheby_fill(P, A);
    if (st) {
        cheby_destroy(P);
        return st;
    }
    *state = P;
    return SPK_OK;
}

static spk_status cheby_refresh(void *state, spk_matrix *A)
{
    ((pc_cheby *)state)->A = A;
    return cheby_fill(state, A);
}

/* z = M^-1 r: one sweep of the smoother's recurrence from z = 0 */
static spk_status cheby_apply(void *state, const double *r, double *z)
{
    const pc_cheby *P = state;
    spk_cheby c = P->c;
    c.be = P->A->be;
    c.state = P->A->state;
    return spk_cheby_sweep(&c, r, z, 1);
}

static size_t cheby_describe(const void *state, char *buf, size_t len)
{
    const pc_cheby *P = state;
    const spk_cheby *c = &P->c;
    const int w = snprintf(buf, len, "chebyshev: degree %d in D^-1 A (%d SpMV%s an apply) on "
                           "[lmax/30, 1.1 lmax] = [%.4g, %.4g], lmax = rho(D^-1 A) ~ %.6g (%s "
                           "on the host); %.1f MB on the device (D^-1 and 2 work vectors)",
                           c->degree, c->degree - 1, c->degree == 2 ? "" : "s", c->lmin,
                           c->lmax, P->rho,
                           P->lanczos ? "20 Lanczos steps" : "30 power steps",
                           24.0 * (double)c->n / 1e6);
    return w > 0 ? (size_t)w : 0;
}

const spk_precond_ops spk_pc_chebyshev = {
    .name = "chebyshev",
    .kind = SPK_PRECOND_CHEBYSHEV,
    .device = SPK_DEVICE_AUTO,
    .summary = "Chebyshev polynomial in D^-1 A on [lmax/30, 1.1 lmax] (--poly-degree K, "
               "default 3): K - 1 SpMVs an apply, no triangular solve; for SPD A with a "
               "positive diagonal",
    .setup = cheby_setup,
    .refresh = cheby_refresh,
    .apply = cheby_apply,
    .destroy = cheby_destroy,
    .graph_safe = 1,
    .describe = cheby_describe,
};
