/* solvers/bicgstab_cpu.c -- the fused BiCGStab steps on the host (solvers/bicgstab_scalar.h):
 * the specification solvers/bicgstab_cuda.cu is tested against. Each step is one OpenMP loop
 * over its vectors, then the scalar step of solvers/bicgstab_scalar.h on the block, as the CUDA
 * kernels' last block does. Reductions carry `simd` for the reason kernels/vec_cpu.c gives, and
 * run over chunks fixed by n, added in chunk order (src/spk_internal.h): the same bits
 * whatever the thread count. */
#include "bicgstab_scalar.h"

#include <string.h>

static spk_status b_update_p(spk_context *ctx, int64_t n, spk_bicg_scalars *S, const double *r,
                             const double *v, double *p, const double *dinv, double *ph,
                             double *r0)
{
    if (S->state != SPK_BICG_RUN)
        return SPK_OK;
    if (S->restart && n > 0)
        memcpy(r0, r, (size_t)n * sizeof *r0);       /* the shadow residual restarted */
    const double beta = S->beta, omega = S->omega;
    if (dinv) {
#pragma omp parallel for simd schedule(static) if (n > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < n; i++) {
            const double pi = r[i] + beta * (p[i] - omega * v[i]);
            p[i] = pi;
            ph[i] = dinv[i] * pi;                    /* p^ = M^-1 p */
        }
    } else {
#pragma omp parallel for simd schedule(static) if (n > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < n; i++)
            p[i] = r[i] + beta * (p[i] - omega * v[i]);
    }
    return SPK_OK;
}

/* dist: the rows of a distributed vector; the sums are summed over the ranks before the
 * scalar step (the table spk_bicg_ops_of gives for CPU ranks' SPK_DIST_HOST vectors). Over
 * ranks (s, s) travels with (t, s) and (t, t): update_s leaves its local sum in S->ss, and the
 * half-step test runs here, before omega, on the summed one: three reductions an iteration,
 * not four. The test comes one product later than on one rank, where t = A s^ is made anyway
 * (the steps are queued without reading the state). */
static void half_then_omega(spk_bicg_scalars *S, const double v[3])
{
    spk_bicg_half(S, v[2]);
    if (S->state == SPK_BICG_RUN)
        spk_bicg_omega(S, v[0], v[1]);
}

static spk_status dots_step(spk_context *ctx, int64_t n, spk_bicg_scalars *S, int phase,
                            const double *x, const double *y, int dist)
{
    if (S->state != SPK_BICG_RUN)
        return SPK_OK;
    double v[3];
    spk_host_dot2(n, x, y, x, &v[0], &v[1]);
    v[2] = S->ss;
    const int omega = phase != SPK_BICG_ALPHA;
    spk_status st = dist ? spk_comm_allreduce(ctx, v, omega ? 3 : 2) : SPK_OK;
    if (!omega)
        spk_bicg_alpha(S, v[0], v[1]);
    else if (dist)
        half_then_omega(S, v);
    else
        spk_bicg_omega(S, v[0], v[1]);
    return st;
}

static spk_status s_step(spk_context *ctx, int64_t n, spk_bicg_scalars *S, const double *v,
                         double *r, const double *dinv, double *sh, int dist)
{
    if (S->state != SPK_BICG_RUN)
        return SPK_OK;
    const double alpha = S->alpha;
    double part[SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1)
    for (int c = 0; c < nc; c++) {
        const int64_t lo = spk_chunk_lo(n, nc, c), hi = spk_chunk_lo(n, nc, c + 1);
        double ss = 0.0;
        if (dinv) {
#pragma omp simd reduction(+ : ss) if (nc > 1)
            for (int64_t i = lo; i < hi; i++) {
                const double si = r[i] - alpha * v[i];   /* s = r - alpha v */
                r[i] = si;
                sh[i] = dinv[i] * si;                    /* s^ = M^-1 s     */
                ss += si * si;
            }
        } else {
#pragma omp simd reduction(+ : ss) if (nc > 1)
            for (int64_t i = lo; i < hi; i++) {
                const double si = r[i] - alpha * v[i];
                r[i] = si;
                ss += si * si;
            }
        }
        part[c] = ss;
    }
    const double ss = spk_chunks_sum(part, nc);
    if (dist)
        S->ss = ss;                                  /* summed with the omega dots */
    else
        spk_bicg_half(S, ss);
    return SPK_OK;
}

/* sh may be r (no preconditioner): every element is read before it is written. */
static spk_status xr_step(spk_context *ctx, int64_t n, spk_bicg_scalars *S, double *x,
                          const double *ph, const double *sh, const double *t,
                          const double *r0, double *r, int dist)
{
    const double alpha = S->alpha, omega = S->omega;
    if (S->state == SPK_BICG_LAST) {
#pragma omp parallel for simd schedule(static) if (n > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < n; i++)
            x[i] += alpha * ph[i];
        S->state = SPK_BICG_DONE;
        return SPK_OK;
    }
    if (S->state != SPK_BICG_RUN)
        return SPK_OK;
    double part[2][SPK_CHUNKS];
    const int nc = spk_chunks(n);
#pragma omp parallel for schedule(static) if (nc > 1)
    for (int c = 0; c < nc; c++) {
        const int64_t lo = spk_chunk_lo(n, nc, c), hi = spk_chunk_lo(n, nc, c + 1);
        double rho = 0.0, rr = 0.0;
#pragma omp simd reduction(+ : rho, rr) if (nc > 1)
        for (int64_t i = lo; i < hi; i++) {
            const double xi = x[i] + alpha * ph[i];      /* the two updates of x, rounded as  */
            x[i] = xi + omega * sh[i];                   /* two passes would round them        */
            const double ri = r[i] - omega * t[i];       /* r = s - omega t */
            r[i] = ri;
            rho += r0[i] * ri;
            rr += ri * ri;
        }
        part[0][c] = rho;
        part[1][c] = rr;
    }
    double v[2] = {spk_chunks_sum(part[0], nc), spk_chunks_sum(part[1], nc)};
    spk_status st = dist ? spk_comm_allreduce(ctx, v, 2) : SPK_OK;
    spk_bicg_end(S, v[0], v[1]);
    return st;
}

#define BICG_STEPS(pre, dist)                                                                     \
    static spk_status pre##_dots(spk_context *ctx, int64_t n, spk_bicg_scalars *S, int phase,     \
                                 const double *x, const double *y)                                \
    {                                                                                             \
        return dots_step(ctx, n, S, phase, x, y, dist);                                           \
    }                                                                                             \
    static spk_status pre##_update_s(spk_context *ctx, int64_t n, spk_bicg_scalars *S,            \
                                     const double *v, double *r, const double *dinv, double *sh)  \
    {                                                                                             \
        return s_step(ctx, n, S, v, r, dinv, sh, dist);                                           \
    }                                                                                             \
    static spk_status pre##_update_xr(spk_context *ctx, int64_t n, spk_bicg_scalars *S,           \
                                      double *x, const double *ph, const double *sh,              \
                                      const double *t, const double *r0, double *r)               \
    {                                                                                             \
        return xr_step(ctx, n, S, x, ph, sh, t, r0, r, dist);                                     \
    }
BICG_STEPS(b, 0)
BICG_STEPS(d, 1)

static const spk_bicg_ops cpu_bicg_ops = {
    .device = SPK_DEVICE_CPU,
    .update_p = b_update_p,
    .dots = b_dots,
    .update_s = b_update_s,
    .update_xr = b_update_xr,
};

/* The same steps over the rows of a distributed vector (update_p reduces nothing). */
static const spk_bicg_ops dist_bicg_ops = {
    .device = SPK_DEVICE_CPU,
    .update_p = b_update_p,
    .dots = d_dots,
    .update_s = d_update_s,
    .update_xr = d_update_xr,
};

/* ---- the composed steps (GPU ranks, SPK_DIST_COMPOSED): each a few calls of the device's own
 * table and its local sums reduced over the ranks on the host; the block S stays in device
 * memory (the driver's read-backs find it there), read before a step and written after one
 * that moves it. ---- */

static spk_status s_get(spk_context *ctx, const spk_bicg_scalars *S, spk_bicg_scalars *h)
{
    if (ctx->device == SPK_DEVICE_CPU) {
        memcpy(h, S, sizeof *h);
        return SPK_OK;
    }
    return spk_cuda_download_bytes(ctx, h, S, sizeof *h);
}

static spk_status s_put(spk_context *ctx, spk_bicg_scalars *S, const spk_bicg_scalars *h)
{
    return spk_vec_ops_for(ctx->device)->put(ctx, h, sizeof *h, S);
}

static spk_status c_update_p(spk_context *ctx, int64_t n, spk_bicg_scalars *S, const double *r,
                             const double *v, double *p, const double *dinv, double *ph,
                             double *r0)
{
    const spk_vec_ops *loc = spk_vec_ops_for(ctx->device);
    spk_bicg_scalars h;
    spk_status st = s_get(ctx, S, &h);
    if (st || h.state != SPK_BICG_RUN)
        return st;
    if (h.restart)
        st = loc->copy(ctx, n, r, r0);               /* the shadow residual restarted */
    if (!st && !(st = loc->axpy(ctx, n, -h.omega, v, p)))
        st = loc->axpby(ctx, n, 1.0, r, h.beta, p);  /* p = r + beta (p - omega v)   */
    return st || !dinv ? st : loc->pmul(ctx, n, dinv, p, ph);
}

static spk_status c_dots(spk_context *ctx, int64_t n, spk_bicg_scalars *S, int phase,
                         const double *x, const double *y)
{
    spk_bicg_scalars h;
    double v[3];
    spk_status st = s_get(ctx, S, &h);
    if (st || h.state != SPK_BICG_RUN)
        return st;
    const int omega = phase != SPK_BICG_ALPHA;
    v[2] = h.ss;                                     /* update_s's local (s, s) */
    if ((st = spk_vec_ops_for(ctx->device)->dot2(ctx, n, x, y, x, &v[0], &v[1])) ||
        (st = spk_comm_allreduce(ctx, v, omega ? 3 : 2)))
        return st;
    if (omega)
        half_then_omega(&h, v);
    else
        spk_bicg_alpha(&h, v[0], v[1]);
    return s_put(ctx, S, &h);
}

static spk_status c_update_s(spk_context *ctx, int64_t n, spk_bicg_scalars *S, const double *v,
                             double *r, const double *dinv, double *sh)
{
    const spk_vec_ops *loc = spk_vec_ops_for(ctx->device);
    spk_bicg_scalars h;
    double ss;
    spk_status st = s_get(ctx, S, &h);
    if (st || h.state != SPK_BICG_RUN)
        return st;
    if ((st = loc->axpy(ctx, n, -h.alpha, v, r)) ||                 /* s = r - alpha v */
        (dinv && (st = loc->pmul(ctx, n, dinv, r, sh))) ||          /* s^ = M^-1 s     */
        (st = loc->dot(ctx, n, r, r, &ss)))
        return st;
    h.ss = ss;                                       /* summed with the omega dots */
    return s_put(ctx, S, &h);
}

/* sh may be r (no preconditioner): x takes omega s^ before r moves. */
static spk_status c_update_xr(spk_context *ctx, int64_t n, spk_bicg_scalars *S, double *x,
                              const double *ph, const double *sh, const double *t,
                              const double *r0, double *r)
{
    const spk_vec_ops *loc = spk_vec_ops_for(ctx->device);
    spk_bicg_scalars h;
    double v[2];
    spk_status st = s_get(ctx, S, &h);
    if (st)
        return st;
    if (h.state == SPK_BICG_LAST) {
        if ((st = loc->axpy(ctx, n, h.alpha, ph, x)))
            return st;
        h.state = SPK_BICG_DONE;
        return s_put(ctx, S, &h);
    }
    if (h.state != SPK_BICG_RUN)
        return SPK_OK;
    if ((st = loc->axpy(ctx, n, h.alpha, ph, x)) || (st = loc->axpy(ctx, n, h.omega, sh, x)) ||
        (st = loc->axpy(ctx, n, -h.omega, t, r)) ||                 /* r = s - omega t */
        (st = loc->dot2(ctx, n, r, r0, r, &v[0], &v[1])) || (st = spk_comm_allreduce(ctx, v, 2)))
        return st;
    spk_bicg_end(&h, v[0], v[1]);
    return s_put(ctx, S, &h);
}

static const spk_bicg_ops composed_bicg_ops = {
    .device = SPK_DEVICE_AUTO,                       /* the context's */
    .update_p = c_update_p,
    .dots = c_dots,
    .update_s = c_update_s,
    .update_xr = c_update_xr,
};

const spk_bicg_ops *spk_bicg_ops_cpu(void) { return &cpu_bicg_ops; }

const spk_bicg_ops *spk_bicg_ops_of(const spk_vec_ops *ops)
{
    return ops->distributed == SPK_DIST_COMPOSED ? &composed_bicg_ops
           : ops->distributed                    ? &dist_bicg_ops
                                                 : spk_bicg_ops_for(ops->device);
}

const spk_bicg_ops *spk_bicg_ops_for(spk_device dev)
{
    return dev == SPK_DEVICE_CUDA ? spk_bicg_ops_cuda() : &cpu_bicg_ops;
}
