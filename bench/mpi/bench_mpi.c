/* bench/mpi/bench_mpi.c -- the distributed solve's time per iteration, with the time spent in
 * MPI measured apart from the computation. Run it under a launcher, once per rank count:
 *
 *   mpirun -n P [--bind-to core] bench_mpi [--device cpu|gpu] [--method cg|bicgstab|gmres]
 *              [--precond P] [--rtol X] [--json FILE] SPEC...
 *
 * For each SPEC (a generator spec or a Matrix Market file) rank 0 makes the matrix and
 * scatters it (blocks of rows balanced by nonzeros); b = A x for x uniform in [0, 1) (seeded).
 * Each case times, on the same distributed matrix:
 *   solve   the second of two solves (warm), its iterations and seconds: the slowest rank's,
 *           and of them the seconds the ranks spent waiting in the halo exchanges and in the
 *           reductions (spk_mpi_stats; the largest over the ranks), the rest being computation;
 *   spmv    200 products y = A x alone: microseconds each and the halo's share;
 *   reduce  2000 MPI_Allreduce of two doubles (the CG step's r'r and r'z): microseconds each.
 * --device gpu: one GPU per rank (ranks sharing one where they outnumber them); the halo is
 * staged through the host unless the MPI is CUDA-aware. Halo bytes are those one product
 * sends over all ranks. A table on stdout (rank 0) and one JSON
 * object per case appended to FILE. Exit 0, or 1 when a solve failed or did not converge. */
#include "spk_mpi.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double max_over_ranks(double v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

static int64_t sum_over_ranks(int64_t v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    spk_options opt;
    spk_options_default(&opt);
    opt.method = SPK_METHOD_CG;
    opt.precond = SPK_PRECOND_JACOBI;
    const char *json_path = NULL;
    spk_device dev = SPK_DEVICE_CPU;
    int first = 1, bad = 0;
    for (; first < argc && argv[first][0] == '-'; first++) {
        const char *a = argv[first], *v = first + 1 < argc ? argv[first + 1] : NULL;
        if (!strcmp(a, "--method") && v && spk_method_parse(v, &opt.method) == SPK_OK)
            first++;
        else if (!strcmp(a, "--precond") && v && spk_precond_parse(v, &opt.precond) == SPK_OK)
            first++;
        else if (!strcmp(a, "--rtol") && v)
            opt.rtol = strtod(argv[++first], NULL);
        else if (!strcmp(a, "--json") && v)
            json_path = argv[++first];
        else if (!strcmp(a, "--device") && v && (!strcmp(v, "cpu") || !strcmp(v, "gpu")))
            dev = !strcmp(argv[++first], "gpu") ? SPK_DEVICE_CUDA : SPK_DEVICE_CPU;
        else
            bad = 1;
    }
    if (bad || first >= argc) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -n P bench_mpi [--device cpu|gpu] [--method M] "
                            "[--precond P] [--rtol X] [--json FILE] SPEC...\n");
        MPI_Finalize();
        return 2;
    }
    spk_context *ctx = NULL, *ctx0 = NULL;
    if (spk_context_create_mpi(&ctx, MPI_COMM_WORLD, dev) ||
        (rank == 0 && spk_context_create(&ctx0, SPK_DEVICE_CPU))) {
        fprintf(stderr, "bench_mpi: no context: %s\n", spk_last_error(ctx));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int code = 0;
    if (rank == 0)
        printf("%-16s %5s %9s %10s %6s %10s %10s %10s %9s %9s %9s %9s\n", "matrix", "ranks",
               "rows", "halo_B", "its", "solve_s", "us/it", "comm_us/it", "halo_us", "reduce_us",
               "spmv_us", "allred_us");
    for (int a = first; a < argc; a++) {
        const char *spec = argv[a];
        spk_matrix *G = NULL, *D = NULL;
        int gen = 0;
        if (rank == 0 && spk_is_generator_spec(spec))
            gen = spk_matrix_generate(ctx0, spec, &G) == SPK_OK;
        else if (rank == 0)
            gen = spk_matrix_read_mtx(ctx0, spec, &G) == SPK_OK;
        if (rank == 0 && !gen)
            fprintf(stderr, "bench_mpi: %s: %s\n", spec, spk_last_error(ctx0));
        if (spk_matrix_scatter_mpi(ctx, 0, G, 1, &D)) {
            if (rank == 0)
                fprintf(stderr, "bench_mpi: %s: %s\n", spec, spk_last_error(ctx));
            code = 1;
            spk_matrix_destroy(G);
            continue;
        }
        spk_mpi_matrix_info mi;
        spk_matrix_info_mpi(D, &mi);
        const int64_t n = mi.n_global, m = mi.row_end - mi.row_begin;
        double *xg = NULL, *bg = NULL;
        double *xl = calloc((size_t)m + 1, sizeof *xl), *bl = calloc((size_t)m + 1, sizeof *bl);
        if (rank == 0) {
            xg = malloc((size_t)n * sizeof *xg);
            bg = malloc((size_t)n * sizeof *bg);
            uint64_t s = 88172645463325252ull;
            for (int64_t i = 0; i < n; i++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                xg[i] = (double)(s >> 11) * 0x1.0p-53;
            }
            spk_matrix_spmv(ctx0, G, 1.0, xg, 0.0, bg);
        }
        spk_vector_scatter_mpi(ctx, D, 0, bg, bl);
        spk_solver *S = NULL;
        spk_result r;
        memset(&r, 0, sizeof r);
        spk_status st = spk_solver_create(ctx, D, &opt, &S);
        if (!st)
            st = spk_solver_solve(S, bl, xl, &r);        /* cold: first-use costs */
        spk_result_free(&r);
        spk_mpi_stats ms = {0};
        if (!st) {
            memset(xl, 0, (size_t)m * sizeof *xl);
            spk_mpi_stats_reset(ctx);
            st = spk_solver_solve(S, bl, xl, &r);
            spk_mpi_stats_get(ctx, &ms);
        }
        if (st || r.reason <= 0) {
            if (rank == 0)
                fprintf(stderr, "bench_mpi: %s: %s\n", spec,
                        st ? spk_last_error(ctx) : spk_reason_str(r.reason));
            code = 1;
        }
        const double solve_s = max_over_ranks(r.solve_s);
        const double halo_s = max_over_ranks(ms.halo_s), reduce_s = max_over_ranks(ms.reduce_s);
        const int64_t its = r.iterations > 0 ? r.iterations : 1;
        /* the products alone */
        const int reps = 200;
        MPI_Barrier(MPI_COMM_WORLD);
        spk_mpi_stats_reset(ctx);
        double t = MPI_Wtime();
        for (int k = 0; k < reps; k++)
            spk_matrix_spmv(ctx, D, 1.0, xl, 0.0, bl);
        const double spmv_s = max_over_ranks(MPI_Wtime() - t) / reps;
        spk_mpi_stats sp;
        spk_mpi_stats_get(ctx, &sp);
        const double spmv_halo_s = max_over_ranks(sp.halo_s) / reps;
        const int64_t halo_bytes = sum_over_ranks(sp.halo_bytes) / reps;
        /* a reduction alone */
        double v[2] = {1.0, 2.0};
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int k = 0; k < 2000; k++)
            MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        const double allred_s = max_over_ranks(MPI_Wtime() - t) / 2000;
        if (rank == 0) {
            const double comm = (halo_s + reduce_s) / its;
            printf("%-16s %5d %9lld %10lld %6lld %10.4f %10.2f %10.2f %9.2f %9.2f %9.2f %9.2f\n",
                   spec, size, (long long)n, (long long)halo_bytes, (long long)r.iterations,
                   solve_s, 1e6 * solve_s / its, 1e6 * comm, 1e6 * halo_s / its,
                   1e6 * reduce_s / its, 1e6 * spmv_s, 1e6 * allred_s);
            FILE *f = json_path ? fopen(json_path, "a") : NULL;
            if (f) {
                fprintf(f, "{\"matrix\": \"%s\", \"ranks\": %d, \"device\": \"%s\", \"halo\": \"%s\", "
                        "\"rows\": %lld, \"method\": \"%s\", "
                        "\"precond\": \"%s\", \"iterations\": %lld, \"reason\": \"%s\", "
                        "\"solve_s\": %.6g, \"per_iter_s\": %.6g, \"halo_wait_s\": %.6g, "
                        "\"reduce_s\": %.6g, \"reductions\": %lld, \"halo_bytes_per_spmv\": %lld, "
                        "\"spmv_s\": %.6g, \"spmv_halo_wait_s\": %.6g, \"allreduce_s\": %.6g}\n",
                        spec, size, spk_device_str(dev),
                        mi.halo == SPK_MPI_HALO_DEVICE ? "device"
                        : mi.halo == SPK_MPI_HALO_STAGED ? "staged" : "host",
                        (long long)n, spk_method_str(opt.method),
                        spk_precond_str(opt.precond), (long long)r.iterations,
                        spk_reason_str(r.reason), solve_s, solve_s / its, halo_s, reduce_s,
                        (long long)ms.reductions, (long long)halo_bytes, spmv_s, spmv_halo_s,
                        allred_s);
                fclose(f);
            }
        }
        spk_result_free(&r);
        spk_solver_destroy(S);
        free(xl);
        free(bl);
        free(xg);
        free(bg);
        spk_matrix_destroy(D);
        spk_matrix_destroy(G);
    }
    spk_context_destroy(ctx);
    spk_context_destroy(ctx0);
    MPI_Finalize();
    return code;
}
