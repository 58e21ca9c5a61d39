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

static spk_status b_dots(spk_context *ctx, int64_t n, spk_bicg_scalars *S, int phase,
                         const double *x, const double *y)
{
    if (S->state != SPK_BICG_RUN)
        return SPK_OK;
    double xy, xx;
    spk_host_dot2(n, x, y, x, &xy, &xx);
    if (phase == SPK_BICG_ALPHA)
        spk_bicg_alpha(S, xy, xx);
    else
        spk_bicg_omega(S, xy, xx);
    return SPK_OK;
}

static spk_status b_update_s(spk_context *ctx, int64_t n, spk_bicg_scalars *S, const double *v,
                             double *r, const double *dinv, double *sh)
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
    spk_bicg_half(S, spk_chunks_sum(part, nc));
    return SPK_OK;
}

/* sh may be r (no preconditioner): every element is read before it is written. */
static spk_status b_update_xr(spk_context *ctx, int64_t n, spk_bicg_scalars *S, double *x,
                              const double *ph, const double *sh, const double *t,
                              const double *r0, double *r)
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
    spk_bicg_end(S, spk_chunks_sum(part[0], nc), spk_chunks_sum(part[1], nc));
    return SPK_OK;
}

static const spk_bicg_ops cpu_bicg_ops = {
    .device = SPK_DEVICE_CPU,
    .update_p = b_update_p,
    .dots = b_dots,
    .update_s = b_update_s,
    .update_xr = b_update_xr,
};

const spk_bicg_ops *spk_bicg_ops_cpu(void) { return &cpu_bicg_ops; }

const spk_bicg_ops *spk_bicg_ops_for(spk_device dev)
{
    return dev == SPK_DEVICE_CUDA ? spk_bicg_ops_cuda() : &cpu_bicg_ops;
}
