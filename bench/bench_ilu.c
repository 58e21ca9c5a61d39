/* bench/bench_ilu.c -- ILU(0)-GMRES(30) with the exact triangular solves (the CPU's row
 * loops, cuSPARSE SpSV on the GPU) and with 1..5 Jacobi sweeps per triangle, against
 * Jacobi-GMRES(30), on the same matrix and right-hand side: for each, the setup (the
 * solver's creation: format, upload, factorization, the factors' device data and SpSV's
 * analysis), a refresh after a value update of the same pattern, the iterations, the time
 * per iteration and the time to solution (setup + solve). The figures that set
 * --ilu-trisolve auto on each device (solvers/pc_ilu.c, docs/solvers.md).
 *
 *   bench_ilu [--device cpu|gpu|auto] [--rtol X] [--precond ilu0|ic0] [--json FILE] SPEC...
 *
 * SPEC is a generator spec or a Matrix Market file. b = A x with x uniform in [0, 1)
 * (seeded). --precond ic0 runs CG in place of GMRES (an SPD A). The solve reported is the
 * second of two (warm: no first-use cost in it). A table on stdout, one JSON object per case
 * in FILE. Exit 0, or 1 when a setup or solve failed or did not converge. */
#include "bench_case.h"

int main(int argc, char **argv)
{
    spk_device dev = SPK_DEVICE_AUTO;
    double rtol = 1e-8;
    const char *json_path = NULL;
    spk_precond ilu = SPK_PRECOND_ILU0;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        const char *a = argv[first], *v = first + 1 < argc ? argv[first + 1] : NULL;
        if (!strcmp(a, "--device") && v && spk_device_parse(v, &dev) == SPK_OK)
            first++;
        else if (!strcmp(a, "--rtol") && v)
            rtol = strtod(argv[++first], NULL);
        else if (!strcmp(a, "--json") && v)
            json_path = argv[++first];
        else if (!strcmp(a, "--precond") && v && (!strcmp(v, "ilu0") || !strcmp(v, "ic0"))) {
            ilu = !strcmp(v, "ic0") ? SPK_PRECOND_IC0 : SPK_PRECOND_ILU0;
            first++;
        } else {
            fprintf(stderr, "usage: bench_ilu [--device cpu|gpu|auto] [--rtol X] "
                            "[--precond ilu0|ic0] [--json FILE] SPEC...\n");
            return 2;
        }
    }
    int code = 0;
    spk_context *ctx = bc_context("bench_ilu", dev, &code);
    if (!ctx)
        return code;
    const spk_method method = ilu == SPK_PRECOND_IC0 ? SPK_METHOD_CG : SPK_METHOD_GMRES;
    FILE *js = json_path ? fopen(json_path, "w") : NULL;
    printf("bench_ilu on %s (%s), %s, rtol %g, b = A x_rand; solve: the second of two\n",
           spk_device_str(spk_context_device(ctx)), spk_context_device_name(ctx),
           method == SPK_METHOD_CG ? "cg" : "gmres(30)", rtol);
    printf("%-20s %9s | %-14s %6s %9s %9s %9s %10s %9s\n", "matrix", "rows", "M", "its",
           "setup s", "refresh s", "solve s", "us / it", "total s");
    int status = 0;
    for (int c = first; c < argc; c++) {
        spk_matrix *A = bc_matrix("bench_ilu", ctx, argv[c]);
        if (!A) {
            status = 1;
            continue;
        }
        spk_matrix_info in;
        spk_matrix_get_info(A, &in);
        const int64_t n = in.nrows;
        double *b = bc_rhs(ctx, A, n);
        /* case 0: Jacobi; 1: exact; 2..6: 1..5 sweeps */
        for (int k = 0; k < 7; k++) {
            spk_options opt;
            spk_options_default(&opt);
            opt.method = method;
            opt.rtol = rtol;
            opt.restart = 30;
            opt.precond = k == 0 ? SPK_PRECOND_JACOBI : ilu;
            opt.ilu.trisolve = k <= 1 ? SPK_TRISOLVE_EXACT : SPK_TRISOLVE_JACOBI;
            opt.ilu.sweeps = k >= 2 ? k - 1 : 0;
            char name[32];
            if (k == 0)
                snprintf(name, sizeof name, "jacobi");
            else if (k == 1)
                snprintf(name, sizeof name, "%s exact", spk_precond_str(ilu));
            else
                snprintf(name, sizeof name, "%s sweeps %d", spk_precond_str(ilu), k - 1);
            bc_outcome o;
            status |= bc_run("bench_ilu", ctx, A, b, n, &opt, 0, &o);
            const double per = o.its > 0 ? o.solve_s / (double)o.its : 0.0;
            printf("%-20s %9lld | %-14s %6lld %9.4f %9.4f %9.4f %10.2f %9.4f %s\n", argv[c],
                   (long long)n, name, (long long)o.its, o.setup_s, o.refresh_s, o.solve_s,
                   1e6 * per, o.setup_s + o.solve_s, o.reason > 0 ? "" : spk_reason_str(o.reason));
            bc_json(js, ctx, argv[c], n, in.nnz, name, &o);
        }
        free(b);
        spk_matrix_destroy(A);
    }
    if (js)
        fclose(js);
    spk_context_destroy(ctx);
    return status;
}
