/* bench/bench_amg.c -- AMG-CG against Jacobi-CG, side by side in one run, on the same matrix
 * and right-hand side: for each, the setup (the solver's creation: format, upload,
 * preconditioner; for AMG the hierarchy, on the host or with @dev on the GPU, and its levels
 * on the device), the setup again (a second creation on the same matrix, without the
 * process's one-time costs; the description printed is its), a refresh after a value update of the same pattern (AMG: the hierarchy's
 * values again), the solve
 * (warm: the second of two solves, so that no first-use cost is in it), the iterations and
 * the time to solution (setup + solve).
 *
 *   bench_amg [--device cpu|gpu|auto] [--rtol X] [--json FILE] [--resident]
 *             SPEC[@rbm][@bN][@chebK][@fp32][@mixed][@dev][@mcN][@wW]...
 *
 * SPEC is a generator spec or a Matrix Market file; SPEC@rbm gives AMG the generator's node
 * coordinates (spk_generate_coords: the rigid-body modes, lame3d), @bN a block size N, @chebK
 * Chebyshev smoothing of degree K instead of damped Jacobi, @fp32 the V-cycle's matrices in
 * fp32 values inside the fp64 solve (spk_amg_options.fp32), @mixed both solves in mixed
 * precision (spk_options.precision; AMG's cycle then takes fp32 values too), @dev the
 * hierarchy built on the GPU (spk_amg_options.setup; MIS(2) aggregation), @mcN the coarsest
 * level at most N rows (spk_amg_options.max_coarse, solve's --amg-max-coarse), @wW the Jacobi
 * smoother's weight W / rho (spk_amg_options.omega, --amg-omega). The same SPEC
 * with and without a suffix, in one run, measures what it changes.
 * b = A x with x uniform in [0, 1) (seeded): a right-hand side with every frequency, unlike
 * A * ones, which lies in smoothed aggregation's coarse space (one V-cycle solves it).
 * --resident: b and x in device memory (spk_solver_solve_device), so that the solve's time
 * holds no transfer of b or x (bench/bench_case.h).
 * A table on stdout, and one JSON object per case in FILE. Exit 0, or 1 when a solve failed
 * or did not converge. */
#include "bench_case.h"

int main(int argc, char **argv)
{
    spk_device dev = SPK_DEVICE_AUTO;
    double rtol = 1e-8;
    const char *json_path = NULL;
    int first = 1, resident = 0;
    for (; first < argc && argv[first][0] == '-'; first++) {
        const char *a = argv[first], *v = first + 1 < argc ? argv[first + 1] : NULL;
        if (!strcmp(a, "--device") && v && spk_device_parse(v, &dev) == SPK_OK)
            first++;
        else if (!strcmp(a, "--rtol") && v)
            rtol = strtod(argv[++first], NULL);
        else if (!strcmp(a, "--json") && v)
            json_path = argv[++first];
        else if (!strcmp(a, "--resident"))
            resident = 1;
        else {
            fprintf(stderr, "usage: bench_amg [--device cpu|gpu|auto] [--rtol X] [--json FILE] "
                            "[--resident] SPEC[@rbm][@bN][@chebK][@fp32][@mixed][@dev][@mcN][@wW]...\n");
            return 2;
        }
    }
    int code = 0;
    spk_context *ctx = bc_context("bench_amg", dev, &code);
    if (!ctx)
        return code;
    spk_status st;
    FILE *js = json_path ? fopen(json_path, "w") : NULL;
    printf("bench_amg on %s (%s), rtol %g, b = A x_rand; solve: the second of two, warm, %s\n",
           spk_device_str(spk_context_device(ctx)), spk_context_device_name(ctx), rtol,
           resident ? "b and x on the device" : "b and x host arrays");
    printf("%-16s %9s | %-6s %5s %9s %9s %9s %9s %9s | %s\n", "matrix", "rows", "M", "its",
           "setup s", "again s", "refresh s", "solve s", "total s", "AMG solve / Jacobi solve");
    int status = 0;
    for (int c = first; c < argc; c++) {
        char spec[256];
        snprintf(spec, sizeof spec, "%s", argv[c]);
        /* SPEC@rbm, @bN (block size N), @chebK (Chebyshev smoothing of degree K), @mcN (the
         * coarsest level's rows), @wW (the smoother's weight), combinable */
        int rbm = 0, bs = 0, cheb = 0, fp32 = 0, mixed = 0, dev = 0;
        long long max_coarse = 0;
        double omega = 0.0;
        for (char *at = strchr(spec, '@'); at; at = strchr(at + 1, '@')) {
            *at = '\0';
            if (!strncmp(at + 1, "rbm", 3))
                rbm = 1;
            else if (!strncmp(at + 1, "fp32", 4))
                fp32 = 1;
            else if (!strncmp(at + 1, "mixed", 5))
                mixed = 1;
            else if (!strncmp(at + 1, "dev", 3))
                dev = 1;
            else if (!strncmp(at + 1, "cheb", 4))
                cheb = atoi(at + 5);
            else if (!strncmp(at + 1, "mc", 2))
                max_coarse = atoll(at + 3);
            else if (at[1] == 'w')
                omega = atof(at + 2);
            else if (at[1] == 'b')
                bs = atoi(at + 2);
        }
        spk_matrix *A = bc_matrix("bench_amg", ctx, spec);
        if (!A) {
            status = 1;
            continue;
        }
        spk_matrix_info in;
        spk_matrix_get_info(A, &in);
        const int64_t n = in.nrows;
        double *b = bc_rhs(ctx, A, n);
        spk_options opt;
        spk_options_default(&opt);
        opt.method = SPK_METHOD_CG;
        opt.rtol = rtol;
        double *xyz = NULL;
        if (rbm) {
            int64_t nodes;
            int dim;
            if ((st = spk_generate_coords(ctx, spec, &xyz, &nodes, &dim)) != SPK_OK) {
                fprintf(stderr, "bench_amg: %s@rbm: %s\n", spec, spk_last_error(ctx));
                status = 1;
            } else {
                opt.amg.coords = xyz;
                opt.amg.coord_dim = dim;
            }
        }
        opt.amg.block_size = bs;
        opt.amg.fp32 = fp32;
        opt.amg.max_coarse = max_coarse;
        opt.amg.omega = omega;
        if (dev)
            opt.amg.setup = SPK_AMG_SETUP_DEVICE;
        if (mixed)
            opt.precision = SPK_PRECISION_MIXED;
        if (cheb > 0) {
            opt.amg.smoother = SPK_AMG_CHEBYSHEV;
            opt.amg.degree = cheb;
        }
        bc_outcome o[2];
        const char *names[2] = {"jacobi", "amg"};
        for (int k = 0; k < 2; k++) {
            opt.precond = k ? SPK_PRECOND_AMG : SPK_PRECOND_JACOBI;
            status |= bc_run("bench_amg", ctx, A, b, n, &opt, resident, &o[k]);
            printf("%-16s %9lld | %-6s %5lld %9.4f %9.4f %9.4f %9.4f %9.4f |", argv[c],
                   (long long)n, names[k], (long long)o[k].its, o[k].setup_s, o[k].setup2_s,
                   o[k].refresh_s, o[k].solve_s, o[k].setup_s + o[k].solve_s);
            if (k)
                printf(" %.3f (time to solution %.3f; with the setups again %.3f)",
                       o[1].solve_s / o[0].solve_s,
                       (o[1].setup_s + o[1].solve_s) / (o[0].setup_s + o[0].solve_s),
                       (o[1].setup2_s + o[1].solve_s) / (o[0].setup2_s + o[0].solve_s));
            printf("\n");
            bc_json(js, ctx, argv[c], n, in.nnz, names[k], &o[k]);
        }
        printf("    %s\n", o[1].info);
        fflush(stdout);
        free(xyz);
        free(b);
        spk_matrix_destroy(A);
    }
    if (js)
        fclose(js);
    spk_context_destroy(ctx);
    return status;
}
