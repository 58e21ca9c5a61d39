/* src/cli/solve.c -- the `solve` command: the only main(), the only code that prints, exits or
 * reads argv. It uses the public API (include/spk.h) alone.
 *
 * Exit codes: 0 converged, 1 did not converge (reason printed), 2 bad usage or bad input,
 * 3 device or system failure, including output that could not be written (stdout, stderr,
 * -o, --history).
 *
 * Built with MPI and started by a launcher (mpirun -n P solve ...), the solve is distributed:
 * rank 0 reads A, b and x0 as a lone run would, the matrix and the vectors are scattered in
 * blocks of rows, every rank runs the solve, x is gathered back, and rank 0 alone writes and
 * prints (the other ranks' stdout and stderr go to /dev/null). Every rank exits with rank 0's
 * code. Outside a launcher MPI is never initialised. */
#define _XOPEN_SOURCE 700 /* realpath, beside the build's _POSIX_C_SOURCE */
#include "spk.h"
#ifdef SPK_CLI_MPI
#include "spk_mpi.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXIT_CONVERGED 0
#define EXIT_NOT_CONVERGED 1
#define EXIT_USAGE 2
#define EXIT_SYSTEM 3

/* ---- MPI (SPK_CLI_MPI builds, under a launcher) ---- */
static int mpi_on, mpi_rank;
#ifdef SPK_CLI_MPI
static int mpi_size;
/* rank 0 between the start and the scatter: the other ranks wait in mpi_go for its verdict, so
 * a failure there must tell them before it exits */
static int mpi_wait_go;
static void mpi_end(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
}

/* Rank 0's verdict on what it read: 0 go on, else the exit code every rank leaves with. */
static int mpi_go(int code)
{
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    mpi_wait_go = 0;
    return code;
}

/* The launchers' environment: Open MPI, MPICH's and Intel MPI's Hydra (PMI), PMIx. */
static void mpi_start(int *argc, char ***argv)
{
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_RANK"))
        return;
    MPI_Init(argc, argv);
    atexit(mpi_end);
    mpi_on = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    mpi_wait_go = mpi_rank == 0;
    if (mpi_rank != 0) {                 /* rank 0 speaks for all */
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
            MPI_Abort(MPI_COMM_WORLD, EXIT_SYSTEM);
    }
}
#endif

typedef struct cli {
    const char *A, *b, *x0, *out, *history, *nullspace, *coords;
    spk_options opt;
    spk_device device;
    int json, quiet, explain, monitor, restart_given;
    const char *amg_opt, *ilu_opt, *ilut_opt;   /* the last --amg-*, --ilu-*, --ilut-* given */
    int64_t monitor_every;
    double progress;                            /* --progress S; < 0: not given            */
} cli;

static const char usage_text[] =
    "usage: solve -A A.mtx|SPEC [-b b.mtx] [--x0 x0.mtx] [-o x.mtx] [options]\n"
    "\n"
    "Solve A x = b with a Krylov method on the GPU (or the CPU).\n"
    "\n"
    "  -A FILE|SPEC        the matrix: a Matrix Market file, or a generator spec:\n"
    "                      poisson2d:N, poisson3d:N, poisson3d27:N, elasticity3d:N,\n"
    "                      lame3d:N[:NU], jump3d:N[:CONTRAST],\n"
    "                      powerlaw:N:AVG[:SEED], band:N:MIN:MAX[:HALF[:SKEW[:SEED]]],\n"
    "                      rmat:SCALE[:EF[:SEED]] (Graph500's R-MAT graph), mesh2d:N[:SEED]\n"
    "                      (a 2-D triangle mesh numbered at random)\n"
    "                      (a file of that name, if there is one, is read instead)\n"
    "  -b FILE             right-hand side, n x 1 or 1 x n (array, or coordinate with\n"
    "                      missing entries 0); default b = A * ones, and the error of x\n"
    "                      against ones is reported\n"
    "  --x0 FILE           initial guess (default 0)\n"
    "  -o FILE             write the solution x (array n x 1, %%.17g); a regular file is\n"
    "                      replaced whole (keeping its mode; a read-only one is refused),\n"
    "                      anything else (a link's target, a FIFO, a device, /dev/stdout)\n"
    "                      is written in place; an input file (-A, -b, ...) is refused\n"
    "  --method M          the Krylov method (default auto: cg for a symmetric matrix with\n"
    "                      a positive diagonal, minres for another symmetric one, else\n"
    "                      bicgstab; cg hands over to minres on an indefinite A, bicgstab\n"
    "                      to gmres where it cannot go on):\n"
    "                      cg        A and M symmetric positive definite\n"
    "                      bicgstab  any nonsingular A, M fixed; short recurrences\n"
    "                      gmres     any nonsingular A, M fixed; restarted, ||r|| never grows\n"
    "                      fgmres    gmres keeping M^-1 v: M may change between iterations\n"
    "                      minres    A symmetric, indefinite allowed; M SPD; no breakdown\n"
    "                                on a nonsingular A\n"
    "  --restart M         GMRES and FGMRES restart length (default 30)\n"
    "  --precond P         the preconditioner (default auto):\n"
    "%s"
    "  --block-size D      D unknowns a node, interleaved (x0 y0 z0 x1 ...): bjacobi's\n"
    "                      D x D diagonal blocks (n mod D rows left over: a smaller last\n"
    "                      block); AMG's near-null space, then the D translations\n"
    "  --poly-degree K     chebyshev: K Chebyshev steps an apply, K - 1 SpMVs (1..10,\n"
    "                      default 3)\n"
    "  --nullspace FILE    AMG: the near-null space, an n x k Matrix Market array\n"
    "  --coords FILE|grid  AMG: node coordinates, a nodes x 2 or nodes x 3 array (one node\n"
    "                      per D unknowns), or `grid': the generator's own (lame3d: its\n"
    "                      nodes): the near-null space is then the rigid-body modes (3 in\n"
    "                      2-D, 6 in 3-D), as elasticity needs\n"
    "  --amg-theta X       AMG strength threshold (default 0: every entry is strong)\n"
    "  --amg-smoother S    jacobi|chebyshev (default jacobi)\n"
    "  --amg-omega W       the Jacobi smoother's weight omega = W / rho(D^-1 A), W in (0, 2)\n"
    "                      (default 1.6; 4/3 is the textbook value)\n"
    "  --amg-sweeps K      smoothing sweeps before and after (default 1)\n"
    "  --amg-degree K      Chebyshev degree (default 2)\n"
    "  --amg-max-coarse N  rows of the coarsest level, solved directly (default 500)\n"
    "  --amg-max-levels L  levels at most (default 10)\n"
    "  --amg-setup W       host|device|auto: where the hierarchy is built; device: every step\n"
    "                      on the GPU (MIS(2) aggregation, cuSPARSE's SpGEMM), on the host\n"
    "                      with the same aggregation where the GPU's build does not take the\n"
    "                      matrix (--explain says why); auto (default): host\n"
    "  --amg-aggregation G standard|mis2|auto: standard (PyAMG's greedy passes) or MIS(2)\n"
    "                      (the GPU's); auto (default): as --amg-setup builds; standard\n"
    "                      with --amg-setup device builds on the host\n"
    "  --amg-values V      fp32|fp64|auto: the V-cycle's matrix values; fp32 halves their\n"
    "                      bytes (products in fp64, the answer still fp64); auto (default):\n"
    "                      fp32 with --precision mixed or auto, fp64 otherwise\n"
    "  --ilu-trisolve T    ilu0, ic0, ilut: exact|jacobi|auto: the triangular solves exactly\n"
    "                      (the CPU's row loops, cuSPARSE SpSV on the GPU) or by a fixed\n"
    "                      number of Jacobi sweeps (SpMVs only); auto (default): exact, but\n"
    "                      the sweeps for ilu0 and ic0 on the GPU from 32768 rows on\n"
    "  --ilu-sweeps N      Jacobi sweeps per triangular solve (default 5)\n"
    "  --ilut-drop X       ILUT: drop entries below X times their row's mean magnitude\n"
    "                      (||a_i||_1 / nnz(a_i); default 1e-4)\n"
    "  --ilut-fill X       ILUT: at most X nnz(A) entries in L + U (default 10)\n"
    "  --format F          auto|coo|csr|ell|hyb|jds|dia|bsr|sell (default auto: from\n"
    "                      row-length statistics; dia: the CPU only; bsr: a pattern of\n"
    "                      d x d blocks; sell: SELL-C-sigma, for rows of uneven length)\n"
    "  --reorder R         none|rcm|degree (default none; the others are opt-in): solve\n"
    "                      P A P^T, P the reverse Cuthill-McKee order of A + A^T (rcm) or\n"
    "                      the rows by length, longest first (degree) (x stays in A's order);\n"
    "                      --explain and --json give the bandwidth and profile before and\n"
    "                      after, and the time of an SpMV with A and with P A P^T\n"
    "  --device D          auto|cpu|gpu (default auto: the GPU when one is usable)\n"
    "  --precision P       double|mixed|auto (default double). mixed: the method's SpMV on\n"
    "                      A's values in fp32 (its format's fp32 kernel, either device),\n"
    "                      iterative refinement in fp64 to the same rtol against the fp64 A;\n"
    "                      double where a value does not fit fp32. auto: mixed for CG with\n"
    "                      none or jacobi on a matrix past the cache (the measured rule) and\n"
    "                      for AMG (its V-cycle in fp32), else double; the precision line\n"
    "                      says which and why\n"
    "  --rtol X            relative tolerance: stop when ||r|| <= max(rtol ||b||, atol)\n"
    "                      (default 1e-8)\n"
    "  --atol X            absolute tolerance (default 0)\n"
    "  --dtol X            divergence: stop when ||r|| > X max(||b||, ||r0||) (default 1e5;\n"
    "                      0: no such test)\n"
    "  --stagnation K      stop when the smallest ||r|| has not fallen by 0.1%% in K\n"
    "                      iterations (default 2000; 0: no such test)\n"
    "  --max-time S        stop after S seconds of iterating (default 0: no limit)\n"
    "  --maxiter N         iteration limit (default max(1000, 10 n))\n"
    "  --monitor           print the residual every 10 iterations (to stderr)\n"
    "  --monitor-every K   ... every K iterations (implies --monitor)\n"
    "  --history FILE      write the residual history as CSV\n"
    "                      (iteration,cycle,residual_norm,relative_residual,seconds)\n"
    "  --json              print the whole result as JSON on stdout (with the history when\n"
    "                      --history is given) instead of the summary; a run that fails\n"
    "                      prints {\"error\": ..., \"status\": ..., \"exit\": ...}\n"
    "  --explain           print the row-length statistics and the range of |a_ij|, each\n"
    "                      format's memory, why the format was chosen, and the\n"
    "                      preconditioner (AMG: its levels)\n"
    "  --progress S        a line on stderr every S seconds of a step that has run S\n"
    "                      seconds (reading, setup, the solve: its iteration and residual,\n"
    "                      writing); default 5 when stderr is a terminal, else 0 (none)\n"
    "  --quiet, -q         print nothing but errors: no summary, --explain, --monitor,\n"
    "                      --progress or notes (-o, --history and --json are still written)\n"
    "  --help, -h, --version\n"
    "\n"
#ifdef SPK_CLI_MPI
    "Distributed (this build has MPI): mpirun -n P solve ... splits A into P blocks of rows\n"
    "(multiples of --block-size); rank 0 reads and writes, the preconditioner is built on\n"
    "each rank's diagonal block (block-Jacobi over the ranks). Each rank takes the GPU of its\n"
    "node-local rank (--device auto: when every rank has one, else all run on the CPU);\n"
    "--reorder and --precision mixed are refused there so far; --nullspace and --coords\n"
    "give each rank's AMG its rows of the near-null space.\n"
    "\n"
#endif
    "Exit status: 0 converged, 1 not converged, 2 bad usage or input, 3 device or system\n"
    "failure (an output that could not be written included).\n";

/* The preconditioners the command line takes, from the library's table: "none|jacobi", or
 * for --help each name with its one-line summary, wrapped under the option column. */
static void precond_list(char *buf, size_t len, int help)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int q = 0; q < SPK_PRECOND_COUNT; q++) {
        /* the table's rows in order, auto last */
        const int p = q < SPK_PRECOND_AUTO ? q : q == SPK_PRECOND_COUNT - 1 ? SPK_PRECOND_AUTO : q + 1;
        spk_precond parsed;
        const char *name = spk_precond_str((spk_precond)p);
        if (spk_precond_parse(name, &parsed) != SPK_OK)
            continue;                    /* not a command-line word ("user": the API only) */
        /* a name too long for its column takes a line of its own */
        int w = help ? snprintf(buf + used, len - used, "%22s%-8s%s", "", name,
                                strlen(name) > 7 ? "\n                              " : "")
                     : snprintf(buf + used, len - used, "%s%s", used ? "|" : "", name);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
        for (const char *t = spk_precond_summary((spk_precond)p); help && *t;) {
            size_t n = strlen(t);
            if (n > 50) {                /* break at the last space within the column */
                n = 50;
                while (n > 0 && t[n] != ' ')
                    n--;
                if (n == 0)
                    n = 50;
            }
            w = snprintf(buf + used, len - used, "%s%.*s\n", t == spk_precond_summary((spk_precond)p)
                         ? "" : "                              ", (int)n, t);
            if (w < 0 || (size_t)w >= len - used)
                return;
            used += (size_t)w;
            t += n;
            while (*t == ' ')
                t++;
        }
    }
}

static void print_usage(void)
{
    char lines[4096];
    precond_list(lines, sizeof lines, 1);
    printf(usage_text, lines);
}

static void json_str(FILE *f, const char *key, const char *str, int comma);

/* --json: a failure is also said on stdout, as JSON (main sets it before the arguments are
 * parsed, so that a bad option is said so too). */
static int json_errors;

/* With --json: {"error", "status", "exit"} on stdout. */
static void json_error(const char *msg, const char *status, int code)
{
    if (!json_errors || (mpi_on && mpi_rank != 0))
        return;
    printf("{\n");
    json_str(stdout, "error", msg, 1);
    json_str(stdout, "status", status, 1);
    printf("  \"exit\": %d\n}\n", code);
}

/* A bad command line: the message, where the options are listed, exit 2. */
static void usage_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;
static void progress_stop(void);

static void usage_fail(const char *fmt, ...)
{
    progress_stop();                     /* no progress line after the message */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "solve: %s\n(solve --help lists the options)\n", msg);
    json_error(msg, spk_status_str(SPK_ERR_ARG), EXIT_USAGE);
    fflush(stdout);
    exit(EXIT_USAGE);
}

static void die_usage(const char *fmt, const char *arg)
{
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, arg);
    usage_fail("%s", msg);
}

static int status_exit(spk_status st)
{
    switch (st) {
    case SPK_OK: return EXIT_CONVERGED;
    case SPK_ERR_ARG:
    case SPK_ERR_IO:
    case SPK_ERR_PARSE:
    case SPK_ERR_UNSUPPORTED: return EXIT_USAGE;
    default: return EXIT_SYSTEM;
    }
}

/* Flush stdout and stderr; output that did not arrive (--json > /dev/full, a closed stdout)
 * must not look like success, so a failed write turns exit 0 or 1 into 3. A run that failed
 * already (2 or 3) keeps its code: that failure is the one to report. */
static int finish(int code)
{
    errno = 0;
    const int bad_out = fflush(stdout) != 0 || ferror(stdout);
    const int err = errno;
    if (bad_out)
        fprintf(stderr, "solve: cannot write to stdout: %s\n",
                err ? strerror(err) : "a write failed");
    const int bad_err = fflush(stderr) != 0 || ferror(stderr);
    return (bad_out || bad_err) && code < EXIT_USAGE ? EXIT_SYSTEM : code;
}

/* The message on stderr (and with --json as {"error", "status", "exit"} on stdout), then exit
 * with `code`. status: the spk_status text of the failure ("malformed input"). */
static void fail_exit(spk_context *ctx, int code, const char *status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5), noreturn))
#endif
    ;
static void fail_exit(spk_context *ctx, int code, const char *status, const char *fmt, ...)
{
    progress_stop();
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "solve: %s\n", msg);
    json_error(msg, status, code);
    spk_context_destroy(ctx);
#ifdef SPK_CLI_MPI
    if (mpi_on && mpi_wait_go)
        mpi_go(code);
#endif
    exit(finish(code));
}

/* The library's message in the command's words: it names the API (SPK_PRECOND_ILUT,
 * SPK_METHOD_GMRES), a user of solve types --precond ilut, --method gmres. */
static void cli_words(const char *in, char *out, size_t len)
{
    static const char *const api[] = {"SPK_PRECOND_", "SPK_METHOD_"};
    static const char *const opt[] = {"--precond ", "--method "};
    size_t o = 0;
    while (*in && o + 1 < len) {
        int k = 0;
        while (k < 2 && strncmp(in, api[k], strlen(api[k])) != 0)
            k++;
        const char *w = in + (k < 2 ? strlen(api[k]) : 0);
        size_t m = 0;
        while (k < 2 && ((w[m] >= 'A' && w[m] <= 'Z') || (w[m] >= '0' && w[m] <= '9')))
            m++;
        if (k < 2 && m > 0 && o + strlen(opt[k]) + m + 1 < len) {
            o += (size_t)snprintf(out + o, len - o, "%s", opt[k]);
            for (size_t i = 0; i < m; i++)
                out[o++] = (char)(w[i] >= 'A' && w[i] <= 'Z' ? w[i] - 'A' + 'a' : w[i]);
            in = w + m;
        } else {
            out[o++] = *in++;
        }
    }
    out[o] = '\0';
}

/* Print the library's message and exit with the status's code. */
static void die_status(spk_context *ctx, spk_status st, const char *what)
{
    char detail[1100];
    cli_words(spk_last_error(ctx), detail, sizeof detail);
    fail_exit(ctx, status_exit(st), spk_status_str(st), "%s: %s: %s", what, spk_status_str(st),
              detail);
}

/* A decimal number, as the Matrix Market reader takes them: strtod's hexadecimal floats
 * ("0x10"), "inf" and "nan" are refused, as are values that over- or underflow. */
static double parse_double(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < 0 ||
        strspn(s, "0123456789.eE+-") != strlen(s))
        usage_fail("%s expects a finite decimal number >= 0, got '%s'%s", opt, s,
                   errno == ERANGE ? " (out of a double's range, about 2.2e-308 to 1.8e308)" : "");
    return v;
}

static int64_t parse_int(const char *opt, const char *s, int64_t min, int64_t max)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < min || v > max)
        usage_fail("%s expects an integer in [%lld, %lld], got '%s'", opt, (long long)min,
                   (long long)max, s);
    return (int64_t)v;
}

static const char *need_arg(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc)
        die_usage("option %s needs a value", argv[*i]);
    return argv[++*i];
}

/* Whether the help lists name[0 .. len) as an option followed by a value ("  --rtol X",
 * "  -o FILE"). */
static int takes_value(const char *name, ptrdiff_t len)
{
    for (const char *p = usage_text; (p = strstr(p, "\n  -")) != NULL; p++) {
        const char *o = p + 3;
        if (!strncmp(o, name, (size_t)len) && o[len] == ' ' && o[len + 1] >= 'A' &&
            o[len + 1] <= 'Z')
            return 1;
    }
    return 0;
}

static void parse_args(int argc, char **argv, cli *c)
{
    memset(c, 0, sizeof *c);
    spk_options_default(&c->opt);
    c->device = SPK_DEVICE_AUTO;
    c->monitor_every = 10;
    c->progress = -1.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--amg-", 6))
            c->amg_opt = a;
        else if (!strncmp(a, "--ilut-", 7))
            c->ilut_opt = a;
        else if (!strncmp(a, "--ilu-", 6))
            c->ilu_opt = a;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_usage();
            exit(0);
        } else if (!strcmp(a, "--version")) {
            printf("solve (spk) %s, CUDA support %s\n", SPK_VERSION_STRING,
                   spk_has_cuda() ? "available" : "not available (see --device gpu's message)");
            exit(0);
        } else if (!strcmp(a, "-A")) {
            c->A = need_arg(argc, argv, &i);
        } else if (!strcmp(a, "-b")) {
            c->b = need_arg(argc, argv, &i);
        } else if (!strcmp(a, "--x0")) {
            c->x0 = need_arg(argc, argv, &i);
        } else if (!strcmp(a, "-o")) {
            c->out = need_arg(argc, argv, &i);
        } else if (!strcmp(a, "--history")) {
            c->history = need_arg(argc, argv, &i);
        } else if (!strcmp(a, "--method")) {
            const char *v = need_arg(argc, argv, &i);
            if (spk_method_parse(v, &c->opt.method))
                die_usage("--method expects auto|cg|bicgstab|gmres|fgmres|minres, got '%s'", v);
        } else if (!strcmp(a, "--precond")) {
            const char *v = need_arg(argc, argv, &i);
            if (spk_precond_parse(v, &c->opt.precond)) {
                char names[256];
                precond_list(names, sizeof names, 0);
                usage_fail("--precond expects %s, got '%s'", names, v);
            }
        } else if (!strcmp(a, "--format")) {
            const char *v = need_arg(argc, argv, &i);
            if (spk_format_parse(v, &c->opt.format))
                die_usage("--format expects auto|coo|csr|ell|hyb|jds|dia|bsr|sell, got '%s'", v);
        } else if (!strcmp(a, "--reorder")) {
            const char *v = need_arg(argc, argv, &i);
            if (!strcmp(v, "none"))
                c->opt.reorder = SPK_REORDER_NONE;
            else if (!strcmp(v, "rcm"))
                c->opt.reorder = SPK_REORDER_RCM;
            else if (!strcmp(v, "degree"))
                c->opt.reorder = SPK_REORDER_DEGREE;
            else
                die_usage("--reorder expects none|rcm|degree, got '%s'", v);
        } else if (!strcmp(a, "--device")) {
            const char *v = need_arg(argc, argv, &i);
            if (spk_device_parse(v, &c->device))
                die_usage("--device expects auto|cpu|gpu, got '%s'", v);
        } else if (!strcmp(a, "--precision")) {
            const char *v = need_arg(argc, argv, &i);
            if (!strcmp(v, "double"))
                c->opt.precision = SPK_PRECISION_DOUBLE;
            else if (!strcmp(v, "mixed"))
                c->opt.precision = SPK_PRECISION_MIXED;
            else if (!strcmp(v, "auto"))
                c->opt.precision = SPK_PRECISION_AUTO;
            else
                die_usage("--precision expects double|mixed|auto, got '%s'", v);
        } else if (!strcmp(a, "--rtol")) {
            c->opt.rtol = parse_double(a, need_arg(argc, argv, &i));
        } else if (!strcmp(a, "--atol")) {
            c->opt.atol = parse_double(a, need_arg(argc, argv, &i));
        } else if (!strcmp(a, "--maxiter")) {
            c->opt.maxiter = parse_int(a, need_arg(argc, argv, &i), 1, INT64_MAX);
        } else if (!strcmp(a, "--dtol")) {
            c->opt.dtol = parse_double(a, need_arg(argc, argv, &i));
        } else if (!strcmp(a, "--stagnation")) {
            c->opt.stagnation = parse_int(a, need_arg(argc, argv, &i), 0, INT64_MAX);
        } else if (!strcmp(a, "--max-time")) {
            c->opt.max_time = parse_double(a, need_arg(argc, argv, &i));
        } else if (!strcmp(a, "--restart")) {
            c->restart_given = 1;
            c->opt.restart = (int)parse_int(a, need_arg(argc, argv, &i), 1, 1 << 20);
        } else if (!strcmp(a, "--monitor")) {
            c->monitor = 1;
        } else if (!strcmp(a, "--monitor-every")) {
            c->monitor = 1;
            c->monitor_every = parse_int(a, need_arg(argc, argv, &i), 1, INT64_MAX);
        } else if (!strcmp(a, "--progress")) {
            c->progress = parse_double(a, need_arg(argc, argv, &i));
            if (!(c->progress >= 0 && c->progress <= 1e6))
                die_usage("--progress takes seconds in [0, 1e6] (0: no progress lines), not %s",
                          argv[i]);
        } else if (!strcmp(a, "--json")) {
            c->json = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            c->quiet = 1;
        } else if (!strcmp(a, "--block-size")) {
            c->opt.block_size = (int)parse_int(a, need_arg(argc, argv, &i), 1, 64);
            c->opt.amg.block_size = c->opt.block_size;
        } else if (!strcmp(a, "--poly-degree")) {
            c->opt.poly_degree = (int)parse_int(a, need_arg(argc, argv, &i), 1, 10);
        } else if (!strcmp(a, "--nullspace")) {
            c->nullspace = need_arg(argc, argv, &i);
        } else if (!strcmp(a, "--coords")) {
            c->coords = need_arg(argc, argv, &i);
        } else if (!strcmp(a, "--amg-theta")) {
            c->opt.amg.theta = parse_double(a, need_arg(argc, argv, &i));
            if (c->opt.amg.theta > 1.0)
                die_usage("--amg-theta expects a number in [0, 1], got '%s'", argv[i]);
        } else if (!strcmp(a, "--amg-smoother")) {
            const char *v = need_arg(argc, argv, &i);
            if (!strcmp(v, "jacobi"))
                c->opt.amg.smoother = SPK_AMG_JACOBI;
            else if (!strcmp(v, "chebyshev"))
                c->opt.amg.smoother = SPK_AMG_CHEBYSHEV;
            else
                die_usage("--amg-smoother expects jacobi|chebyshev, got '%s'", v);
        } else if (!strcmp(a, "--amg-values")) {
            const char *v = need_arg(argc, argv, &i);
            if (!strcmp(v, "fp32"))
                c->opt.amg.fp32 = 1;
            else if (!strcmp(v, "fp64"))
                c->opt.amg.fp32 = -1;
            else if (!strcmp(v, "auto"))
                c->opt.amg.fp32 = 0;
            else
                die_usage("--amg-values expects fp32|fp64|auto, got '%s'", v);
        } else if (!strcmp(a, "--amg-setup")) {
            const char *v = need_arg(argc, argv, &i);
            if (!strcmp(v, "host"))
                c->opt.amg.setup = SPK_AMG_SETUP_HOST;
            else if (!strcmp(v, "device"))
                c->opt.amg.setup = SPK_AMG_SETUP_DEVICE;
            else if (!strcmp(v, "auto"))
                c->opt.amg.setup = SPK_AMG_SETUP_AUTO;
            else
                die_usage("--amg-setup expects host|device|auto, got '%s'", v);
        } else if (!strcmp(a, "--amg-aggregation")) {
            const char *v = need_arg(argc, argv, &i);
            if (!strcmp(v, "standard"))
                c->opt.amg.aggregation = SPK_AMG_AGG_STANDARD;
            else if (!strcmp(v, "mis2"))
                c->opt.amg.aggregation = SPK_AMG_AGG_MIS2;
            else if (!strcmp(v, "auto"))
                c->opt.amg.aggregation = SPK_AMG_AGG_AUTO;
            else
                die_usage("--amg-aggregation expects standard|mis2|auto, got '%s'", v);
        } else if (!strcmp(a, "--amg-omega")) {
            c->opt.amg.omega = parse_double(a, need_arg(argc, argv, &i));
            if (!(c->opt.amg.omega > 0.0 && c->opt.amg.omega < 2.0))
                die_usage("--amg-omega expects a number in (0, 2), got '%s'", argv[i]);
        } else if (!strcmp(a, "--amg-sweeps")) {
            c->opt.amg.sweeps = (int)parse_int(a, need_arg(argc, argv, &i), 1, 100);
        } else if (!strcmp(a, "--amg-degree")) {
            c->opt.amg.degree = (int)parse_int(a, need_arg(argc, argv, &i), 1, 10);
        } else if (!strcmp(a, "--amg-max-coarse")) {
            c->opt.amg.max_coarse = parse_int(a, need_arg(argc, argv, &i), 1, 6000);
        } else if (!strcmp(a, "--amg-max-levels")) {
            c->opt.amg.max_levels = (int)parse_int(a, need_arg(argc, argv, &i), 1, 32);
        } else if (!strcmp(a, "--ilu-trisolve")) {
            const char *v = need_arg(argc, argv, &i);
            if (!strcmp(v, "exact"))
                c->opt.ilu.trisolve = SPK_TRISOLVE_EXACT;
            else if (!strcmp(v, "jacobi"))
                c->opt.ilu.trisolve = SPK_TRISOLVE_JACOBI;
            else if (!strcmp(v, "auto"))
                c->opt.ilu.trisolve = SPK_TRISOLVE_AUTO;
            else
                die_usage("--ilu-trisolve expects exact|jacobi|auto, got '%s'", v);
        } else if (!strcmp(a, "--ilu-sweeps")) {
            c->opt.ilu.sweeps = (int)parse_int(a, need_arg(argc, argv, &i), 1, 1000);
        } else if (!strcmp(a, "--ilut-drop")) {
            c->opt.ilu.drop_tol = parse_double(a, need_arg(argc, argv, &i));
            if (!(c->opt.ilu.drop_tol >= 0.0 && c->opt.ilu.drop_tol < 1.0))
                die_usage("--ilut-drop expects a number in [0, 1), got '%s'", argv[i]);
        } else if (!strcmp(a, "--ilut-fill")) {
            c->opt.ilu.fill_factor = parse_double(a, need_arg(argc, argv, &i));
            if (!(c->opt.ilu.fill_factor > 0.0))
                die_usage("--ilut-fill expects a number > 0, got '%s'", argv[i]);
        } else if (!strcmp(a, "--explain")) {
            c->explain = 1;
        } else if (!strncmp(a, "--", 2) && strchr(a, '=') && takes_value(a, strchr(a, '=') - a)) {
            usage_fail("unknown option '%s' (give the value apart: %.*s %s)", a,
                       (int)(strchr(a, '=') - a), a, strchr(a, '=') + 1);
        } else {
            die_usage("unknown option '%s'", a);
        }
    }
    if (!c->A)
        die_usage("%s", "no matrix: -A FILE|SPEC is required");
    if (c->nullspace && c->coords)
        die_usage("%s", "--nullspace and --coords both give the near-null space: give one");
}

/* ---- the solve's monitor: progress lines when asked, and the stop a signal asks for -------
 * SIGINT / SIGTERM during the solve set `stop_signal`; the monitor, called for every
 * iteration, returns it, and the library ends the solve at its next check with
 * DIVERGED_INTERRUPTED: x and the history so far are written as usual and the exit status is
 * 128 + the signal. A second signal while the first waits ends the process at once. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    if (stop_signal)
        signal(sig, SIG_DFL), raise(sig);
    stop_signal = sig;
}

/* ---- progress on long work ----------------------------------------------------------------
 * A step that has run `every` seconds (reading A, preparing its format, reading the vectors,
 * the solver's setup, the solve, writing the outputs) gets a line on stderr every `every`
 * seconds from a thread of its own, since the library's steps cannot report while they run:
 * the step and its seconds, and in the solve the iteration and relative residual the monitor
 * saw last, with the iterations to rtol at the rate since the first it saw. Off where --monitor
 * prints the solve's lines already. */
typedef struct progress {
    pthread_mutex_t lock;
    pthread_cond_t  wake;
    pthread_t       thread;
    int             running, quit, monitored;
    double          every, rtol;
    char            step[PATH_MAX + 64];       /* "" between steps                           */
    double          t0, last;                  /* the step's start; the last line's time     */
    int64_t         it, it0;                   /* the solve's: -1 before the monitor's first */
    double          rel, rel0;
} progress;

static progress prog = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The line into buf, p's fields read under the lock; printed after it is let go, so that a
 * stderr that blocks (a full pipe, a paused pager) never holds the solve's monitor. */
static void progress_line(progress *p, double now, char *buf, size_t len)
{
    char solve[160] = "";
    if (p->it >= 0) {
        int n = snprintf(solve, sizeof solve, ", iteration %lld, relative residual %.3e",
                         (long long)p->it, p->rel);
        const double rate = p->it > p->it0 && p->rel > 0 && p->rel0 > 0
                                ? (log(p->rel) - log(p->rel0)) / (double)(p->it - p->it0)
                                : 0.0;
        if (rate < 0 && p->rel > p->rtol && p->rtol > 0 && n > 0 && (size_t)n < sizeof solve)
            snprintf(solve + n, sizeof solve - (size_t)n, " (rtol in ~%.0f more at this rate)",
                     ceil(log(p->rtol / p->rel) / rate));
    }
    snprintf(buf, len, "solve: %s: %.1f s%s\n", p->step, now - p->t0, solve);
    p->last = now;
}

static void *progress_run(void *arg)
{
    progress *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->quit) {
        const double now = mono_now();
        if (p->step[0] && !(p->monitored && p->it >= 0) && now - p->t0 >= p->every &&
            now - p->last >= p->every) {
            char line[sizeof p->step + 256];
            progress_line(p, now, line, sizeof line);
            pthread_mutex_unlock(&p->lock);
            fputs(line, stderr);
            pthread_mutex_lock(&p->lock);
            if (p->quit)
                break;
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        const double nap = p->every < 0.004 ? 0.001 : p->every < 0.5 ? p->every / 4 : 0.1;
        until.tv_nsec += (long)(nap * 1e9);
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&p->wake, &p->lock, &until);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* The thread, when lines are wanted (every > 0); without it the calls below do nothing. */
static void progress_start(double every, double rtol, int monitored)
{
    prog.every = every;
    prog.rtol = rtol;
    prog.monitored = monitored;
    prog.it = -1;
    if (every <= 0)
        return;
    /* the thread takes no signal: SIGINT's handler runs on the main thread, which polls it */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&prog.thread, NULL, progress_run, &prog) == 0)
        prog.running = 1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A new step begins ("" : none); printf-style. */
static void progress_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void progress_step(const char *fmt, ...)
{
    if (!prog.running)
        return;
    pthread_mutex_lock(&prog.lock);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prog.step, sizeof prog.step, fmt, ap);
    va_end(ap);
    prog.t0 = prog.last = mono_now();
    prog.it = -1;
    pthread_mutex_unlock(&prog.lock);
}

static void progress_stop(void)
{
    if (!prog.running)
        return;
    pthread_mutex_lock(&prog.lock);
    prog.quit = 1;
    pthread_cond_signal(&prog.wake);
    pthread_mutex_unlock(&prog.lock);
    pthread_join(prog.thread, NULL);
    prog.running = 0;
}

typedef struct monitor_state {
    int64_t every;                       /* a progress line every `every` iterations, 0: none */
} monitor_state;

static int monitor_line(void *user, int64_t it, double rnorm, double rel, double seconds)
{
    const monitor_state *m = user;
    if (m->every > 0 && it % m->every == 0)
        fprintf(stderr, "  it %8lld  ||r|| %.6e  rel %.6e  %8.3f s\n", (long long)it, rnorm, rel,
                seconds);
    if (prog.running) {
        pthread_mutex_lock(&prog.lock);
        if (prog.it < 0) {
            prog.it0 = it;
            prog.rel0 = rel;
        }
        prog.it = it;
        prog.rel = rel;
        pthread_mutex_unlock(&prog.lock);
    }
    return stop_signal != 0;
}

/* What to try when the solve did not converge, from docs/solvers.md's table of reasons. */
static const char *hint(const spk_result *res)
{
    const int cg = res->method == SPK_METHOD_CG, none = res->precond == SPK_PRECOND_NONE;
    const int gm = res->method == SPK_METHOD_GMRES || res->method == SPK_METHOD_FGMRES;
    switch (res->reason) {
    case SPK_DIVERGED_MAXIT:
        return none ? "try --precond jacobi, or a larger --maxiter"
                    : gm ? "try a larger --restart or --maxiter"
                         : "try a larger --maxiter, or another --method";
    case SPK_DIVERGED_DTOL:
        return cg ? "the residual grew past --dtol: A may not be SPD; try --method gmres"
                  : "the residual grew past --dtol: the method diverges on this matrix; try "
                    "--method gmres (its residual cannot grow)";
    case SPK_DIVERGED_STAGNATION:
        if (none)
            return gm ? "no progress: try a larger --restart, or a preconditioner"
                      : "no progress: try --method gmres, or a preconditioner";
        return gm ? "no progress: try a larger --restart, or another preconditioner"
                  : "no progress: try --method gmres, or another preconditioner";
    case SPK_DIVERGED_BREAKDOWN:
        return res->method == SPK_METHOD_BICGSTAB ? "try --method gmres (it does not break down "
                                                    "on a nonsingular A)"
                                                  : "A looks singular on the Krylov space: check "
                                                    "for zero rows or a missing boundary condition";
    case SPK_DIVERGED_INDEFINITE:
        if (strstr(res->reason_detail, "at round-off"))      /* CG's detail: rtol = atol = 0 */
            return "give --rtol or --atol > 0: x is as good as floating point makes it";
        return res->method == SPK_METHOD_MINRES
                   ? "try an SPD preconditioner (--precond ic0, or jacobi with a positive "
                     "diagonal, or none), or --method gmres"
                   : "A (or M) is not SPD: try --method minres if A is symmetric, else "
                     "bicgstab or gmres";
    case SPK_DIVERGED_TRUE_RESIDUAL_MISMATCH:
        return "rtol is below what the conditioning allows: try a larger --rtol";
    case SPK_DIVERGED_TIME_LIMIT:
        return "--max-time passed; x is the last iterate";
    case SPK_DIVERGED_INTERRUPTED:
        return "interrupted; x and the history so far are written";
    case SPK_DIVERGED_NANORINF:
        return "a product overflowed or a division by an underflowed value met an infinity: "
               "entries of A or b near double's limits (--explain prints the largest and "
               "smallest |a_ij|) want the system scaled towards entries of order 1";
    default:
        return "";
    }
}

/* ---- output files --------------------------------------------------------------------------
 * Only a file that solve creates is ever removed. A regular file named directly is written to a
 * temporary NAME.tmp.PID beside it, with the mode the old file had (or the umask's for a new
 * one), and renamed over it: a failed or killed run never leaves a truncated result under the
 * name. A read-only regular file is refused, as cp without -f refuses it (root included, who
 * could write it anyway). Everything else is written in place and never replaced or removed:
 * a symbolic link's target (the link, the target's inode, owner and mode stay), a FIFO, a
 * device (/dev/null, /dev/full), a directory (refused by the open). A path that names the file
 * stdout or stderr is open on -- /dev/stdout, /dev/fd/1, or the file stdout was redirected to --
 * is written through that descriptor, from where it stands: `-o /dev/stdout >> log` appends.
 * SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE and SIGXFSZ remove the temporary before the process
 * dies of them (where they are not ignored); only SIGKILL can leave one behind. */
typedef enum { OUT_REPLACE, OUT_IN_PLACE, OUT_STREAM } out_how;

typedef struct out_file {
    out_how how;
    int     fd;                        /* OUT_STREAM: 1 or 2                                 */
    mode_t  mode;                      /* OUT_REPLACE: the mode the temporary gets           */
    char    path[PATH_MAX + 64];       /* the name as given                                  */
    char    tmp[PATH_MAX + 96];        /* OUT_REPLACE: the temporary name                    */
} out_file;

static mode_t new_file_mode;           /* 0666 & ~umask, read at start                       */

/* The temporary a signal must remove: armed only while `pending_tmp` holds a whole name. */
static char pending_tmp[PATH_MAX + 96];
static volatile sig_atomic_t pending_armed;

static void on_fatal_signal(int sig)
{
    if (pending_armed)
        unlink(pending_tmp);           /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Handlers for the signals that would kill the process with a temporary in place, except those
 * the caller ignores (a test's trap '' XFSZ wants write() to fail with EFBIG instead). */
static void catch_fatal_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

static void arm_tmp(const char *tmp)
{
    pending_armed = 0;
    snprintf(pending_tmp, sizeof pending_tmp, "%s", tmp);
    pending_armed = 1;
}

static void disarm_tmp(void) { pending_armed = 0; }

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* -1 with the reason in why when the regular file st (path, or a link's target) must not be
 * written: no write permission at all, or none for this user. */
static int out_read_only(const char *path, const struct stat *st, char *why, size_t len)
{
    if (!S_ISREG(st->st_mode) || ((st->st_mode & 0222) && access(path, W_OK) == 0))
        return 0;
    snprintf(why, len, "%s is read-only (mode %04o): not replaced (as cp without -f: make it "
             "writable or remove it first)", path, (unsigned)(st->st_mode & 07777));
    return -1;
}

/* How to write `path`; -1 with the reason in why when it must not be written at all. */
static int out_plan(const char *path, out_file *o, char *why, size_t len)
{
    struct stat st, fst;
    memset(o, 0, sizeof *o);
    snprintf(o->path, sizeof o->path, "%s", path);
    const int target = stat(path, &st) == 0;      /* what the path leads to, links followed */
    if (target)
        for (int fd = 1; fd <= 2; fd++)
            if (fstat(fd, &fst) == 0 && same_file(&st, &fst)) {
                o->how = OUT_STREAM;
                o->fd = fd;
                return 0;
            }
    if (target && out_read_only(path, &st, why, len) != 0)
        return -1;
    const int exists = lstat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        o->how = OUT_IN_PLACE;                  /* a link, FIFO, device or directory */
        return 0;
    }
    o->how = OUT_REPLACE;
    o->mode = exists ? st.st_mode & 07777 : new_file_mode;   /* a regular file keeps its mode */
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", path, (long)getpid());
    return 0;
}

/* For OUT_REPLACE: create the temporary with its final mode before anything is written into
 * it (a file of mode 0600 is never readable by others, not even briefly). */
static int out_create_tmp(out_file *o, char *why, size_t len)
{
    arm_tmp(o->tmp);
    int fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || fchmod(fd, o->mode) != 0) {
        snprintf(why, len, "%s: cannot open for writing: %s", o->tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(o->tmp);
        }
        disarm_tmp();
        return -1;
    }
    close(fd);
    return 0;
}

/* After the write: rename the temporary into place (or remove it when the write failed). */
static int out_finish(const out_file *o, int ok, char *why, size_t len)
{
    if (o->how != OUT_REPLACE)
        return ok ? 0 : -1;
    if (ok && rename(o->tmp, o->path) == 0) {
        disarm_tmp();
        return 0;
    }
    if (ok)
        snprintf(why, len, "rename %s -> %s: %s", o->tmp, o->path, strerror(errno));
    unlink(o->tmp);
    disarm_tmp();
    return -1;
}

/* A stdio stream onto the planned output: the temporary, the path itself, or a duplicate of
 * stdout/stderr (flushed first, so that what was printed comes before). */
static FILE *out_open_stream(out_file *o, char *why, size_t len)
{
    FILE *f = NULL;
    if (o->how == OUT_STREAM) {
        fflush(o->fd == 1 ? stdout : stderr);
        int d = fcntl(o->fd, F_DUPFD_CLOEXEC, 0);
        f = d >= 0 ? fdopen(d, "w") : NULL;
        if (!f && d >= 0)
            close(d);
    } else if (o->how == OUT_REPLACE) {
        if (out_create_tmp(o, why, len) != 0)
            return NULL;
        f = fopen(o->tmp, "w");
    } else {
        f = fopen(o->path, "w");
    }
    if (!f)
        snprintf(why, len, "%s: %s", o->how == OUT_REPLACE ? o->tmp : o->path, strerror(errno));
    return f;
}

static int write_history(const char *path, const spk_result *res, char *why, size_t len)
{
    out_file o;
    if (out_plan(path, &o, why, len) != 0)
        return -1;
    FILE *f = out_open_stream(&o, why, len);
    if (!f)
        return out_finish(&o, 0, why, len);
    fprintf(f, "iteration,cycle,residual_norm,relative_residual,seconds\n");
    for (int64_t i = 0; i < res->history_len; i++) {
        const spk_history_entry *e = &res->history[i];
        fprintf(f, "%lld,%lld,%.17g,%.17g,%.9f\n", (long long)e->it, (long long)e->cycle, e->rnorm,
                e->rel, e->seconds);
    }
    int ok = !ferror(f);
    ok &= fclose(f) == 0;
    if (!ok)
        snprintf(why, len, "%s: %s", o.how == OUT_REPLACE ? o.tmp : o.path, strerror(errno));
    return out_finish(&o, ok, why, len);
}

/* Whether two paths name one regular file: the same file where both exist (not a device
 * or a FIFO: two outputs to /dev/null or /dev/stdout are fine), else the same name (the
 * directory resolved, so "x.mtx" and "./x.mtx" agree). */
static int same_path(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return same_file(&sa, &sb) && S_ISREG(sa.st_mode);
    char ca[2 * PATH_MAX + 2], cb[2 * PATH_MAX + 2];
    const char *const p[2] = {a, b};
    char *const out[2] = {ca, cb};
    for (int k = 0; k < 2; k++) {
        char dir[PATH_MAX + 1], real[PATH_MAX + 1];
        snprintf(dir, sizeof dir, "%s", p[k]);
        char *slash = strrchr(dir, '/');
        const char *base = slash ? slash + 1 : p[k];
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == dir)
            dir[1] = '\0';
        else
            *slash = '\0';
        if (realpath(dir, real))
            snprintf(out[k], sizeof ca, "%s/%s", real, base);
        else
            snprintf(out[k], sizeof ca, "%s", p[k]);
    }
    return strcmp(ca, cb) == 0;
}

/* Before any work: an output that is one of the inputs would destroy it, and two outputs of
 * one name would leave one of them; 0, or -1 with the reason in why. */
static int out_conflicts(const cli *c, char *why, size_t len)
{
    const char *const outs[2] = {c->out, c->history}, *const out_opt[2] = {"-o", "--history"};
    const char *const ins[5] = {c->A, c->b, c->x0, c->nullspace, c->coords};
    const char *const in_opt[5] = {"-A", "-b", "--x0", "--nullspace", "--coords"};
    struct stat so, si;
    for (int i = 0; i < 2; i++) {
        if (!outs[i] || stat(outs[i], &so) != 0)
            continue;                     /* a new name cannot be an input's file */
        for (int k = 0; k < 5; k++)
            if (ins[k] && stat(ins[k], &si) == 0 && S_ISREG(si.st_mode) && same_file(&so, &si)) {
                snprintf(why, len, "%s %s is the file given to %s (%s): an input is not "
                         "overwritten; write the output elsewhere", out_opt[i], outs[i],
                         in_opt[k], ins[k]);
                return -1;
            }
    }
    out_file po, ph;                      /* through stdout or stderr both are written, in turn */
    char ignore[PATH_MAX + 256];
    if (c->out && c->history && out_plan(c->out, &po, ignore, sizeof ignore) == 0 &&
        out_plan(c->history, &ph, ignore, sizeof ignore) == 0 && po.how != OUT_STREAM &&
        ph.how != OUT_STREAM && same_path(c->out, c->history)) {
        snprintf(why, len, "-o %s and --history %s are one file: one would replace the other",
                 c->out, c->history);
        return -1;
    }
    return 0;
}

/* Before any work: can `path` be written as out_plan would write it? A regular file or a new
 * name needs a writable directory (the temporary goes beside it), and so does a dangling link's
 * target; a directory is refused; a read-only file is refused by out_plan. 0, or -1 with the
 * reason in why. Nothing is created: a bad path fails in milliseconds instead of after the
 * solve. */
static int out_check(const char *path, char *why, size_t len)
{
    out_file o;
    struct stat st;
    if (out_plan(path, &o, why, len) != 0)
        return -1;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(why, len, "%s is a directory", path);
        return -1;
    }
    char dir[PATH_MAX + 64], link[PATH_MAX + 1], hop[PATH_MAX + 64];
    if (o.how == OUT_IN_PLACE && lstat(path, &st) == 0 && S_ISLNK(st.st_mode) &&
        stat(path, &st) != 0) {
        if (errno == ELOOP) {
            snprintf(why, len, "%s: %s", path, strerror(errno));
            return -1;
        }
        /* a dangling link (or a chain of them): the last one's target is created where it
         * points, so that directory must be there and writable (a relative target counts from
         * its link's directory) */
        snprintf(dir, sizeof dir, "%s", path);
        for (int hops = 0; hops < 40 && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode); hops++) {
            const ssize_t k = readlink(dir, link, PATH_MAX);
            if (k <= 0)
                return 0;
            link[k] = '\0';
            const char *slash = strrchr(dir, '/');
            const int w = link[0] != '/' && slash
                              ? snprintf(hop, sizeof hop, "%.*s/%s", (int)(slash - dir), dir, link)
                              : snprintf(hop, sizeof hop, "%s", link);
            if (w < 0 || (size_t)w >= sizeof hop)
                return 0;               /* a name past PATH_MAX: the write will say */
            memcpy(dir, hop, (size_t)w + 1);
        }
    } else if (o.how != OUT_REPLACE) {
        return 0;                       /* written in place: a FIFO is not opened early    */
    } else {
        snprintf(dir, sizeof dir, "%s", path);
    }
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, len, "%s: no such directory", dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, len, "%s: cannot create files in %s: %s", path, dir, strerror(errno));
        return -1;
    }
    return 0;
}

static int write_solution(spk_context *ctx, const char *path, const double *x, int64_t n,
                          char *why, size_t len)
{
    static const char comment[] = "solution written by spk solve";
    out_file o;
    if (out_plan(path, &o, why, len) != 0)
        return -1;
    spk_context *own = NULL;            /* over MPI ranks the solve's context is gone by now:
                                         * the writer's message needs one to be kept in */
    if (!ctx && spk_context_create(&own, SPK_DEVICE_CPU) == SPK_OK)
        ctx = own;
    spk_status st;
    if (o.how == OUT_STREAM) {
        fflush(o.fd == 1 ? stdout : stderr);
        st = spk_vector_write_mtx_fd(ctx, o.fd, path, x, n, comment);
    } else if (o.how == OUT_IN_PLACE) {
        st = spk_vector_write_mtx(ctx, path, x, n, comment);
    } else {
        if (out_create_tmp(&o, why, len) != 0) {
            spk_context_destroy(own);
            return -1;
        }
        st = spk_vector_write_mtx(ctx, o.tmp, x, n, comment);
    }
    if (st)
        snprintf(why, len, "%s", spk_last_error(ctx));
    spk_context_destroy(own);
    return out_finish(&o, st == SPK_OK, why, len);
}

/* ---- JSON ---- */
/* Length of the well-formed UTF-8 sequence at s (1-4), or 0 where s does not start one. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3
          : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((n == 2 && s[0] < 0xC2) ||                                  /* overlong             */
        (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) ||
        (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || s[0] > 0xF4 ||
                    (s[0] == 0xF4 && s[1] >= 0x90))))               /* overlong, > U+10FFFF */
        return 0;
    return n;
}

/* A JSON string: quotes, backslashes and control characters escaped; a byte that is not part
 * of well-formed UTF-8 (a file name in another encoding) becomes U+FFFD, so the output stays
 * valid JSON. */
static void json_str(FILE *f, const char *key, const char *str, int comma)
{
    const unsigned char *s = (const unsigned char *)str;
    fprintf(f, "  \"%s\": \"", key);
    while (*s) {
        int n = utf8_len(s);
        if (n == 0) {
            fputs("\\ufffd", f);
            s++;
        } else if (*s == '"' || *s == '\\') {
            fprintf(f, "\\%c", *s++);
        } else if (*s < 0x20) {
            fprintf(f, "\\u%04x", *s++);
        } else {
            fwrite(s, 1, (size_t)n, f);
            s += n;
        }
    }
    fprintf(f, "\"%s\n", comma ? "," : "");
}

/* JSON has no NaN or Inf: print null for them. */
static void json_num(FILE *f, const char *key, double v, int comma)
{
    if (isfinite(v))
        fprintf(f, "  \"%s\": %.17g%s\n", key, v, comma ? "," : "");
    else
        fprintf(f, "  \"%s\": null%s\n", key, comma ? "," : "");
}

typedef struct report {
    const char *matrix, *device_name, *format_reason;
    const char *precond_info;          /* spk_solver_precond_describe */
    double spmv_s[2];                  /* --reorder: one SpMV with A and with P A P^T */
    char device_note[300];             /* why --device auto took the CPU */
    spk_matrix_info info;
    spk_result res;
    double read_s, err_inf;
    int have_err;
    int64_t summed, both_triangles;    /* spk_matrix_input_counts */
    char error[16384];                 /* a failure after the solve (writing -o, --history) */
    const cli *c;
    char precond_buf[4096];            /* precond_info's text                                  */
    char device_buf[160];              /* device_name, kept past a distributed context        */
    /* a distributed solve (mpirun): ranks, rows per rank, the halo of one product over all
     * ranks (values and rank-to-rank links), rank 0's seconds in MPI during the solve */
    int mpi_ranks, mpi_halo;
    int64_t mpi_rows_min, mpi_rows_max, mpi_halo_values, mpi_links, mpi_reductions;
    double mpi_halo_s, mpi_reduce_s;
} report;
/* spk_mpi_halo: the JSON word, and what the summary says */
static const char *const halo_word[] = {"host", "staged", "device"};
static const char *const halo_how[] = {"", " (staged through host buffers)",
                                       " (device buffers handed to MPI)"};

static void print_json(const report *r)
{
    const spk_result *res = &r->res;
    const spk_matrix_info *in = &r->info;
    FILE *f = stdout;
    fprintf(f, "{\n");
    if (r->error[0]) {
        json_str(f, "error", r->error, 1);
        json_str(f, "status", spk_status_str(SPK_ERR_IO), 1);
        fprintf(f, "  \"exit\": %d,\n", EXIT_SYSTEM);
    }
    json_str(f, "matrix", r->matrix, 1);
    fprintf(f, "  \"rows\": %lld,\n  \"cols\": %lld,\n  \"nnz\": %lld,\n", (long long)in->nrows,
            (long long)in->ncols, (long long)in->nnz);
    fprintf(f, "  \"summed_entries\": %lld,\n  \"both_triangles\": %lld,\n",
            (long long)r->summed, (long long)r->both_triangles);
    fprintf(f, "  \"row_length\": {\"min\": %lld, \"mean\": %.6g, \"max\": %lld, \"sd\": %.6g, \"cv\": %.6g},\n",
            (long long)in->row_min, in->row_mean, (long long)in->row_max, in->row_sd, in->row_cv);
    json_str(f, "device", spk_device_str(res->device), 1);
    json_str(f, "device_name", r->device_name, 1);
    json_str(f, "device_note", r->device_note, 1);
    json_str(f, "format", spk_format_str(res->format), 1);
    json_str(f, "format_reason", r->format_reason, 1);
    json_str(f, "method", spk_method_str(res->method), 1);
    json_str(f, "method_reason", res->method_reason, 1);
    json_str(f, "precond", spk_precond_str(res->precond), 1);
    json_str(f, "precond_reason", res->precond_reason, 1);
    json_str(f, "reorder", res->reorder == SPK_REORDER_RCM      ? "rcm"
                           : res->reorder == SPK_REORDER_DEGREE ? "degree"
                                                                : "none", 1);
    if (res->reorder != SPK_REORDER_NONE) {
        fprintf(f, "  \"bandwidth_before\": %lld,\n  \"bandwidth_after\": %lld,\n",
                (long long)res->bandwidth_before, (long long)res->bandwidth_after);
        fprintf(f, "  \"profile_before\": %lld,\n  \"profile_after\": %lld,\n",
                (long long)res->profile_before, (long long)res->profile_after);
        if (r->spmv_s[0] > 0) {
            json_num(f, "spmv_s_original", r->spmv_s[0], 1);
            json_num(f, "spmv_s_reordered", r->spmv_s[1], 1);
        }
    }
    json_str(f, "precision", spk_precision_str(res->precision), 1);
    json_str(f, "precision_reason", res->precision_reason, 1);
    json_str(f, "precision_choice", res->precision_choice, 1);
    fprintf(f, "  \"refinement_steps\": %lld,\n", (long long)res->refinement_steps);
    json_num(f, "rtol", r->c->opt.rtol, 1);
    json_num(f, "atol", r->c->opt.atol, 1);
    fprintf(f, "  \"restart\": %d,\n", r->c->opt.restart);
    json_str(f, "reason", spk_reason_str(res->reason), 1);
    json_str(f, "reason_detail", res->reason_detail, 1);
    fprintf(f, "  \"converged\": %s,\n", res->reason > 0 ? "true" : "false");
    fprintf(f, "  \"iterations\": %lld,\n", (long long)res->iterations);
    json_num(f, "bnorm", res->bnorm, 1);
    json_num(f, "rnorm", res->rnorm, 1);
    json_num(f, "rel", res->rel, 1);
    json_num(f, "true_rnorm", res->true_rnorm, 1);
    json_num(f, "true_rel", res->true_rel, 1);
    if (r->have_err)
        json_num(f, "error_inf", r->err_inf, 1);
    json_num(f, "read_s", r->read_s, 1);
    json_num(f, "setup_s", res->setup_s, 1);
    json_num(f, "precond_setup_s", res->precond_setup_s, 1);
    if (r->precond_info)
        json_str(f, "precond_info", r->precond_info, 1);
    json_num(f, "solve_s", res->solve_s, 1);
    json_num(f, "per_iter_s", res->per_iter_s, 1);
    fprintf(f, "  \"ranks\": %d,\n", r->mpi_ranks ? r->mpi_ranks : 1);
    if (r->mpi_ranks) {
        fprintf(f, "  \"mpi\": {\"rows_min\": %lld, \"rows_max\": %lld, \"halo_values\": %lld, "
                "\"links\": %lld, \"halo\": \"%s\", \"halo_s\": %.9g, \"reduce_s\": %.9g, "
                "\"reductions\": %lld},\n",
                (long long)r->mpi_rows_min, (long long)r->mpi_rows_max,
                (long long)r->mpi_halo_values, (long long)r->mpi_links, halo_word[r->mpi_halo],
                r->mpi_halo_s, r->mpi_reduce_s, (long long)r->mpi_reductions);
    }
    fprintf(f, "  \"cold\": %s%s\n", res->cold ? "true" : "false", res->history_len > 0 ? "," : "");
    if (res->history_len > 0) {
        fprintf(f, "  \"history\": [\n");
        for (int64_t i = 0; i < res->history_len; i++) {
            const spk_history_entry *e = &res->history[i];
            char rn[32] = "null", rl[32] = "null";          /* JSON has no NaN or Inf */
            if (isfinite(e->rnorm))
                snprintf(rn, sizeof rn, "%.17g", e->rnorm);
            if (isfinite(e->rel))
                snprintf(rl, sizeof rl, "%.17g", e->rel);
            fprintf(f, "    {\"it\": %lld, \"cycle\": %lld, \"rnorm\": %s, \"rel\": %s, \"seconds\": %.9f}%s\n",
                    (long long)e->it, (long long)e->cycle, rn, rl, e->seconds,
                    i + 1 < res->history_len ? "," : "");
        }
        fprintf(f, "  ]\n");
    }
    fprintf(f, "}\n");
}

static void print_explain(spk_context *ctx, const report *r)
{
    const spk_matrix_info *in = &r->info;
    printf("statistics\n");
    printf("  rows %lld, cols %lld, nnz %lld, empty rows %lld\n", (long long)in->nrows,
           (long long)in->ncols, (long long)in->nnz, (long long)in->empty_rows);
    printf("  row length: min %lld, mean %.2f, max %lld, sd %.2f, cv %.3f\n", (long long)in->row_min,
           in->row_mean, (long long)in->row_max, in->row_sd, in->row_cv);
    printf("  percentiles: p33 %lld, p50 %lld, p95 %lld, p99 %lld\n", (long long)in->row_p33,
           (long long)in->row_p50, (long long)in->row_p95, (long long)in->row_p99);
    printf("  ELL fill %.3fx (padded slots / nnz); HYB split: width %lld, %lld entries in COO; "
           "SELL fill %.3fx (slices of 32 sorted within 1024)\n",
           in->ell_fill, (long long)in->hyb_width, (long long)in->hyb_coo_nnz, in->sell_fill);
    printf("  columns: bandwidth %lld (max |j - i|), coherence %.3f (share of the entries whose "
           "diagonal neighbour (i-1, j-1) is an entry)\n", (long long)in->bandwidth,
           in->coherence);
    printf("  values: |a_ij| from %.3g to %.3g (the nonzero ones)\n", in->val_absmin,
           in->val_absmax);
    if (in->bytes[SPK_FMT_DIA] != SIZE_MAX)
        printf("  DIA: %lld diagonals, fill %.3fx, %lld rows without every diagonal\n",
               (long long)in->dia_diags, in->dia_fill, (long long)in->dia_partial_rows);
    else
        printf("  DIA: more diagonals than a DIA layout holds\n");
    if (in->bsr_block > 1)
        printf("  BSR: the pattern is made of %lldx%lld blocks, block rows padded %.3fx\n",
               (long long)in->bsr_block, (long long)in->bsr_block, in->bsr_fill);
    else
        printf("  BSR: the pattern is not made of full d x d blocks (d = 2 .. 8)\n");
    printf("  symmetric %s, diagonal positive %s\n", in->symmetric ? "yes" : "no",
           in->diag_positive ? "yes" : "no");
    printf("  input: %lld entries summed into others (duplicates, met mirrors), %lld positions "
           "listed in both triangles of symmetric storage\n", (long long)r->summed,
           (long long)r->both_triangles);
    printf("memory per format\n");
    for (int f = SPK_FMT_COO; f < SPK_FMT_COUNT; f++) {
        char why[160], note[176] = "";
        if (spk_format_check(in, (spk_format)f, spk_context_device(ctx), why, sizeof why))
            snprintf(note, sizeof note, "  (refused: %s)", why);
        if (in->bytes[f] == SIZE_MAX)
            printf("  %-4s %12s%s\n", spk_format_str((spk_format)f), "-", note);
        else
            printf("  %-4s %12.3f MB%s\n", spk_format_str((spk_format)f), in->bytes[f] / 1e6, note);
    }
    printf("choice (%s)\n  %s\n", spk_device_str(spk_context_device(ctx)), r->format_reason);
}

static void print_summary(spk_context *ctx, const report *r)
{
    const spk_result *res = &r->res;
    const spk_matrix_info *in = &r->info;
    const cli *c = r->c;
    printf("matrix    %s: %lld x %lld, %lld nonzeros\n", r->matrix, (long long)in->nrows,
           (long long)in->ncols, (long long)in->nnz);
    printf("rows      length min %lld / mean %.2f / max %lld, sd %.2f (cv %.2f)\n",
           (long long)in->row_min, in->row_mean, (long long)in->row_max, in->row_sd, in->row_cv);
    printf("device    %s: %s%s%s\n", spk_device_str(res->device), r->device_name,
           r->device_note[0] ? "; " : "", r->device_note);
    printf("format    %s%s\n", c->opt.format == SPK_FMT_AUTO ? "auto: " : "", r->format_reason);
    printf("method    %s%s%s%s, precond %s%s%s%s\n", spk_method_str(res->method),
           res->method_reason[0] ? " (auto: " : "", res->method_reason, res->method_reason[0] ? ")" : "",
           spk_precond_str(res->precond), res->precond_reason[0] ? " (auto: " : "",
           res->precond_reason, res->precond_reason[0] ? ")" : "");
    if (res->reorder != SPK_REORDER_NONE)
        printf("reorder   %s: bandwidth %lld -> %lld, profile %lld -> %lld\n",
               res->reorder == SPK_REORDER_DEGREE ? "degree" : "rcm", (long long)res->bandwidth_before, (long long)res->bandwidth_after,
               (long long)res->profile_before, (long long)res->profile_after);
    if (res->reorder != SPK_REORDER_NONE && r->spmv_s[0] > 0)
        printf("spmv      A %.2f us, P A P^T %.2f us (mean of 50, %s)\n", 1e6 * r->spmv_s[0],
               1e6 * r->spmv_s[1], spk_device_str(res->device));
    if (c->opt.precision == SPK_PRECISION_AUTO)
        printf("precision %s\n", res->precision_choice);
    if (c->opt.precision != SPK_PRECISION_DOUBLE && res->precision_reason[0])
        printf("precision %s\n", res->precision_reason);
    else if (c->opt.precision == SPK_PRECISION_MIXED)
        printf("precision %s\n", spk_precision_str(res->precision));
    if (r->mpi_ranks)
        printf("ranks     %d (MPI): %lld to %lld rows each; a product exchanges %lld values over "
               "%lld links%s; rank 0 waited %.3f s in halo exchanges, %.3f s in %lld "
               "reductions\n",
               r->mpi_ranks, (long long)r->mpi_rows_min, (long long)r->mpi_rows_max,
               (long long)r->mpi_halo_values, (long long)r->mpi_links, halo_how[r->mpi_halo],
               r->mpi_halo_s, r->mpi_reduce_s, (long long)r->mpi_reductions);
    printf("result    %s after %lld iterations\n", spk_reason_str(res->reason), (long long)res->iterations);
    printf("residual  recursive %.3e, true %.3e (relative to ||b|| = %.3e; rtol %.1e)\n", res->rel,
           res->true_rel, res->bnorm, c->opt.rtol);
    if (r->have_err)
        printf("error     max |x - 1| = %.3e (b = A * ones)\n", r->err_inf);
    printf("time      read %.3f s, setup %.3f s", r->read_s, res->setup_s);
    if (res->precond == SPK_PRECOND_AMG)
        printf(" (the preconditioner %.3f s)", res->precond_setup_s);
    printf(", solve %.3f s%s", res->solve_s,
           res->cold && res->device == SPK_DEVICE_CUDA ? " (cold)" : "");
    if (res->iterations > 0)
        printf(" (%.2f us per iteration)", 1e6 * res->per_iter_s);
    printf("\n");
    (void)ctx;
}

static double *read_vector(spk_context *ctx, const char *path, int64_t n, const char *what)
{
    double *v = NULL;
    spk_status st = spk_vector_read_mtx_len(ctx, path, n, &v);
    if (st)
        die_status(ctx, st, what);
    return v;
}

/* An array file (--nullspace, --coords) as column-major doubles: *rows x *cols. */
static double *read_dense(spk_context *ctx, const char *path, const char *what, int64_t *rows,
                          int64_t *cols)
{
    spk_matrix *M = NULL;
    spk_status st = spk_matrix_read_mtx(ctx, path, &M);
    if (st)
        die_status(ctx, st, what);
    spk_matrix_info in;
    spk_matrix_get_info(M, &in);
    const int64_t *rp;
    const int32_t *ci;
    const double *va;
    spk_matrix_csr(M, &rp, &ci, &va);
    double *v = calloc((size_t)(in.nrows * in.ncols) + 1, sizeof *v);
    if (!v)
        fail_exit(ctx, EXIT_SYSTEM, spk_status_str(SPK_ERR_NOMEM), "%s %s: out of memory for "
                  "%lld x %lld", what, path, (long long)in.nrows, (long long)in.ncols);
    for (int64_t i = 0; i < in.nrows; i++)
        for (int64_t p = rp[i]; p < rp[i + 1]; p++)
            v[(int64_t)ci[p] * in.nrows + i] = va[p];
    *rows = in.nrows;
    *cols = in.ncols;
    spk_matrix_destroy(M);
    return v;
}

/* --nullspace and --coords into c->opt.amg (malloc'ed arrays, freed at the end of main). */
static void read_amg_inputs(spk_context *ctx, cli *c, int64_t n)
{
    int64_t rows, cols;
    if (c->nullspace) {
        double *B = read_dense(ctx, c->nullspace, "--nullspace", &rows, &cols);
        if (rows != n || cols < 1 || cols > 64)
            fail_exit(ctx, EXIT_USAGE, spk_status_str(SPK_ERR_ARG), "--nullspace %s is %lld x "
                      "%lld: an n x k array is needed, n = %lld (the matrix's rows), 1 <= k <= 64",
                      c->nullspace, (long long)rows, (long long)cols, (long long)n);
        c->opt.amg.nullspace = B;
        c->opt.amg.nullspace_cols = (int)cols;
    }
    if (c->coords && !strcmp(c->coords, "grid")) {
        double *xyz = NULL;
        int64_t nodes = 0;
        int dim = 0;
        if (!spk_is_generator_spec(c->A))
            fail_exit(ctx, EXIT_USAGE, spk_status_str(SPK_ERR_ARG), "--coords grid: %s is not a "
                      "generator spec (give the coordinates as a file)", c->A);
        spk_status st = spk_generate_coords(ctx, c->A, &xyz, &nodes, &dim);
        if (st)
            die_status(ctx, st, "--coords grid");
        if (nodes * dim != n)
            fail_exit(ctx, EXIT_USAGE, spk_status_str(SPK_ERR_ARG), "--coords grid: %s has %lld "
                      "nodes of %d coordinates for %lld unknowns: rigid-body modes need one "
                      "unknown a coordinate (lame3d)", c->A, (long long)nodes, dim, (long long)n);
        c->opt.amg.coords = xyz;
        c->opt.amg.coord_dim = dim;
    } else if (c->coords) {
        double *X = read_dense(ctx, c->coords, "--coords", &rows, &cols);
        if ((cols != 2 && cols != 3) || rows * cols != n)
            fail_exit(ctx, EXIT_USAGE, spk_status_str(SPK_ERR_ARG), "--coords %s is %lld x %lld: "
                      "a nodes x 2 or nodes x 3 array is needed, with nodes x %lld = %lld (the "
                      "matrix's rows, one unknown a coordinate)", c->coords, (long long)rows,
                      (long long)cols, (long long)cols, (long long)n);
        double *node_major = malloc((size_t)n * sizeof *node_major + 1);
        if (!node_major)
            fail_exit(ctx, EXIT_SYSTEM, spk_status_str(SPK_ERR_NOMEM), "--coords: out of memory");
        for (int64_t i = 0; i < rows; i++)
            for (int64_t d = 0; d < cols; d++)
                node_major[i * cols + d] = X[d * rows + i];
        free(X);
        c->opt.amg.coords = node_major;
        c->opt.amg.coord_dim = (int)cols;
    }
    /* what the library would refuse by its field names, said here by the options' */
    const int bs = c->opt.amg.block_size;
    if (c->opt.precond == SPK_PRECOND_AMG && bs > 1 && n % bs)
        fail_exit(ctx, EXIT_USAGE, spk_status_str(SPK_ERR_ARG), "--block-size %d must divide the "
                  "%lld rows of %s", bs, (long long)n, c->A);
    if (c->opt.precond == SPK_PRECOND_AMG && bs > 1 && c->opt.amg.coords && !c->nullspace &&
        c->opt.amg.coord_dim != bs)
        fail_exit(ctx, EXIT_USAGE, spk_status_str(SPK_ERR_ARG), "--coords %s gives %d coordinates "
                  "a node, whose rigid-body modes act on %d unknowns a node, but --block-size is "
                  "%d", c->coords, c->opt.amg.coord_dim, c->opt.amg.coord_dim, bs);
    if ((c->nullspace || c->coords) && c->opt.precond != SPK_PRECOND_AMG && !c->quiet)
        fprintf(stderr, "solve: warning: --nullspace and --coords apply to --precond amg only "
                "(the preconditioner is %s)\n", spk_precond_str(c->opt.precond));
    if (c->opt.block_size > 1 && c->opt.precond != SPK_PRECOND_AMG &&
        c->opt.precond != SPK_PRECOND_BJACOBI && !c->quiet)
        fprintf(stderr, "solve: warning: --block-size applies to --precond amg and bjacobi "
                "only (the preconditioner is %s)\n", spk_precond_str(c->opt.precond));
    if (c->opt.poly_degree && c->opt.precond != SPK_PRECOND_CHEBYSHEV && !c->quiet)
        fprintf(stderr, "solve: warning: --poly-degree applies to --precond chebyshev only (the "
                "preconditioner is %s)\n", spk_precond_str(c->opt.precond));
    const spk_precond p = c->opt.precond;
    if (c->opt.amg.degree && p == SPK_PRECOND_AMG && c->opt.amg.smoother != SPK_AMG_CHEBYSHEV &&
        !c->quiet)
        fprintf(stderr, "solve: warning: --amg-degree applies to --amg-smoother chebyshev only "
                "(the smoother is jacobi)\n");
    if (c->opt.amg.omega != 0.0 && p == SPK_PRECOND_AMG &&
        c->opt.amg.smoother == SPK_AMG_CHEBYSHEV && !c->quiet)
        fprintf(stderr, "solve: warning: --amg-omega applies to --amg-smoother jacobi only "
                "(the smoother is chebyshev)\n");
    if (c->amg_opt && p != SPK_PRECOND_AMG && !c->quiet)
        fprintf(stderr, "solve: warning: %s applies to --precond amg only (the preconditioner "
                "is %s)\n", c->amg_opt, spk_precond_str(p));
    if (c->ilu_opt && p != SPK_PRECOND_ILU0 && p != SPK_PRECOND_IC0 && p != SPK_PRECOND_ILUT &&
        !c->quiet)
        fprintf(stderr, "solve: warning: %s applies to --precond ilu0, ic0 and ilut only (the "
                "preconditioner is %s)\n", c->ilu_opt, spk_precond_str(p));
    if (c->ilut_opt && p != SPK_PRECOND_ILUT && !c->quiet)
        fprintf(stderr, "solve: warning: %s applies to --precond ilut only (the preconditioner "
                "is %s)\n", c->ilut_opt, spk_precond_str(p));
}

/* A closed stdin, stdout or stderr would be taken by the next open(): the solution's file would
 * become "stdout" and receive the summary. Each closed one is opened onto /dev/null -- stdout
 * and stderr read-only, so that writing to them still fails, and is reported, as it would have. */
static void reserve_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
            int nfd = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
            if (nfd >= 0 && nfd != fd) {
                dup2(nfd, fd);
                close(nfd);
            }
        }
}

/* b = A * ones on the host, from the canonical CSR, the same on every device. A finite matrix
 * can still have a row whose sum overflows: said as that, not as a bad b the user never gave. */
static double *ones_rhs(spk_context *ctx, const spk_matrix *A, int64_t n)
{
    const int64_t *rp;
    const int32_t *ci;
    const double *va;
    spk_matrix_csr(A, &rp, &ci, &va);
    double *b = calloc((size_t)n + 1, sizeof *b);
    for (int64_t i = 0; b && i < n; i++) {
        for (int64_t p = rp[i]; p < rp[i + 1]; p++)
            b[i] += va[p];
        if (!isfinite(b[i])) {
            const double bi = b[i];
            free(b);
            fail_exit(ctx, EXIT_USAGE, spk_status_str(SPK_ERR_ARG), "the default right-hand "
                      "side b = A * ones: b(%lld) = %g: row %lld of the matrix sums past the "
                      "largest double (its entries are finite); give one with -b",
                      (long long)i + 1, bi, (long long)i + 1);
        }
    }
    return b;
}

#ifdef SPK_CLI_MPI
/* The distributed solve (all ranks): the context over the ranks, A scattered from rank 0 in
 * blocks of rows (multiples of --block-size), b and x0 scattered, the solve, x gathered into
 * rank 0's x. Failures are collective (every rank has the same status): each rank leaves. */
static void solve_mpi(cli *c, report *r, spk_context *ctx0, spk_matrix *A, const double *b,
                      double *x)
{
    /* what rank 0 read: x0, b's error, the near-null space's columns, the coordinates' dim */
    int flags[4] = {c->opt.use_x0, r->have_err, c->opt.amg.nullspace ? c->opt.amg.nullspace_cols : 0,
                    c->opt.amg.coords ? c->opt.amg.coord_dim : 0};
    MPI_Bcast(flags, 4, MPI_INT, 0, MPI_COMM_WORLD);
    c->opt.use_x0 = flags[0];
    r->have_err = flags[1];
    const int ns_cols = flags[2], coord_dim = flags[3];
    spk_context *ctx = NULL;
    spk_status st = spk_context_create_mpi(&ctx, MPI_COMM_WORLD, c->device);
    if (st)
        die_status(ctx, st, "device");
    spk_context_destroy(ctx0);
    r->device_name = spk_context_device_name(ctx);
    if (c->device == SPK_DEVICE_AUTO && spk_context_device(ctx) == SPK_DEVICE_CPU)
        snprintf(r->device_note, sizeof r->device_note, "auto: the ranks run on the CPU (not "
                 "every rank found a usable GPU)");
    spk_matrix *D = NULL;
    /* whole nodes on each rank: the block size, or the coordinates' dim */
    const int block = c->opt.block_size > 1 ? c->opt.block_size
                      : c->opt.amg.block_size > 1 ? c->opt.amg.block_size
                      : coord_dim > 1 ? coord_dim : 1;
    if ((st = spk_matrix_scatter_mpi(ctx, 0, A, block, &D)))
        die_status(ctx, st, "distributing the matrix");
    spk_mpi_matrix_info mi;
    spk_matrix_info_mpi(D, &mi);
    const int64_t m = mi.row_end - mi.row_begin;
    double *bl = calloc((size_t)m + 1, sizeof *bl), *xl = calloc((size_t)m + 1, sizeof *xl);
    if (!bl || !xl)
        MPI_Abort(MPI_COMM_WORLD, EXIT_SYSTEM);
    if ((st = spk_vector_scatter_mpi(ctx, D, 0, b, bl)) ||
        (c->opt.use_x0 && (st = spk_vector_scatter_mpi(ctx, D, 0, x, xl))))
        die_status(ctx, st, "distributing the vectors");
    /* the near-null space (n x k, column-major) and the coordinates (node-major, one unknown a
     * coordinate: an n-vector in the unknowns' order) in each rank's rows, for its own AMG */
    spk_options opt = c->opt;
    double *ns_l = NULL, *xyz_l = NULL;
    if (ns_cols > 0 || coord_dim > 0) {
        ns_l = calloc((size_t)m * (size_t)(ns_cols > 0 ? ns_cols : 0) + 1, sizeof *ns_l);
        xyz_l = calloc((size_t)m + 1, sizeof *xyz_l);
        if (!ns_l || !xyz_l)
            MPI_Abort(MPI_COMM_WORLD, EXIT_SYSTEM);
        const int64_t ng = mi.n_global;
        for (int j = 0; j < ns_cols && !st; j++)
            st = spk_vector_scatter_mpi(ctx, D, 0, mpi_rank == 0 ? c->opt.amg.nullspace + j * ng : NULL,
                                        ns_l + (int64_t)j * m);
        if (!st && coord_dim > 0)
            st = spk_vector_scatter_mpi(ctx, D, 0, mpi_rank == 0 ? c->opt.amg.coords : NULL, xyz_l);
        if (st)
            die_status(ctx, st, "distributing the near-null space");
        opt.amg.nullspace = ns_cols > 0 ? ns_l : NULL;
        opt.amg.nullspace_cols = ns_cols;
        opt.amg.coords = coord_dim > 0 ? xyz_l : NULL;
        opt.amg.coord_dim = coord_dim;
    }
    /* the rows per rank and the halo, as rank 0 reports them */
    int64_t v[4] = {m, -m, mi.send_values, mi.neighbours};
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, v + 2, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    r->mpi_ranks = mi.size;
    r->mpi_rows_max = v[0];
    r->mpi_rows_min = -v[1];
    r->mpi_halo_values = v[2];
    r->mpi_links = v[3];
    r->mpi_halo = mi.halo >= SPK_MPI_HALO_HOST && mi.halo <= SPK_MPI_HALO_DEVICE ? mi.halo : 0;
    spk_solver *S = NULL;
    if ((st = spk_solver_create(ctx, D, &opt, &S)))
        die_status(ctx, st, "setting up the solver");
    spk_solver_precond_describe(S, r->precond_buf, sizeof r->precond_buf);
    r->precond_info = r->precond_buf;
    if (c->explain && !c->json && !c->quiet)
        printf("preconditioner\n  %s (each rank's diagonal block: block-Jacobi over %d ranks)\n"
               "halo\n  %s\n", r->precond_buf, mi.size,
               r->mpi_halo == SPK_MPI_HALO_DEVICE
                   ? "device buffers handed to the MPI library, which is CUDA-aware"
               : r->mpi_halo == SPK_MPI_HALO_STAGED
                   ? "device vectors: the values to send gathered on the GPU and copied to the "
                     "host, sent by MPI (not CUDA-aware), the ghosts copied back"
                   : "host vectors (CPU ranks), packed and sent from host memory");
    spk_mpi_stats_reset(ctx);
    st = spk_solver_solve(S, bl, xl, &r->res);
    spk_solver_destroy(S);
    if (st)
        die_status(ctx, st, "solving");
    spk_mpi_stats ms;
    spk_mpi_stats_get(ctx, &ms);
    r->mpi_halo_s = ms.halo_s;
    r->mpi_reduce_s = ms.reduce_s;
    r->mpi_reductions = ms.reductions;
    if ((st = spk_vector_gather_mpi(ctx, D, 0, xl, x)))
        die_status(ctx, st, "gathering x");
    free(bl);
    free(xl);
    free(ns_l);
    free(xyz_l);
    spk_matrix_destroy(D);
    /* the device name lives in ctx: kept until the end (a copy), the context freed here */
    snprintf(r->device_buf, sizeof r->device_buf, "%s", r->device_name);
    r->device_name = r->device_buf;
    spk_context_destroy(ctx);
}
#endif

int main(int argc, char **argv)
{
    reserve_std_fds();
    const mode_t um = umask(0);
    umask(um);
    new_file_mode = 0666 & ~um;
#ifdef SPK_CLI_MPI
    mpi_start(&argc, &argv);
#endif
    cli c;
    for (int i = 1; i < argc; i++) {                 /* before the parse: its errors too */
        json_errors |= !strcmp(argv[i], "--json");
        i += takes_value(argv[i], (ptrdiff_t)strlen(argv[i]));   /* not an option's value */
    }
    parse_args(argc, argv, &c);
    json_errors = c.json;
    catch_fatal_signals();
    report r;
    memset(&r, 0, sizeof r);
    r.c = &c;
    r.matrix = c.A;
    const int root = !mpi_on || mpi_rank == 0;       /* reads, writes and prints            */
    if (root && !c.quiet)
        progress_start(c.progress >= 0 ? c.progress : isatty(STDERR_FILENO) ? 5.0 : 0.0,
                       c.opt.rtol, c.monitor);
    spk_context *ctx = NULL;
    spk_matrix *A = NULL;
    double *b = NULL, *x = NULL;
    int64_t n = 0;
    spk_status st;
    if (root) {
        /* cheap checks first: an output that cannot be written fails before the matrix is read */
        const char *outs[2] = {c.out, c.history}, *what[2] = {"-o", "--history"};
        for (int i = 0; i < 2; i++) {
            char why[PATH_MAX + 256];
            if (outs[i] && out_check(outs[i], why, sizeof why) != 0)
                fail_exit(NULL, EXIT_USAGE, spk_status_str(SPK_ERR_IO), "%s %s: %s", what[i],
                          outs[i], why);
        }
        {
            char why[3 * PATH_MAX + 256];
            if (out_conflicts(&c, why, sizeof why) != 0)
                fail_exit(NULL, EXIT_USAGE, spk_status_str(SPK_ERR_ARG), "%s", why);
        }
        /* over ranks rank 0 reads on the CPU; the ranks' device is the distributed context's */
        st = spk_context_create(&ctx, mpi_on ? SPK_DEVICE_CPU : c.device);
        if (st)
            die_status(ctx, st, "device");
        r.device_name = spk_context_device_name(ctx);
        if (c.device == SPK_DEVICE_AUTO && spk_context_device(ctx) == SPK_DEVICE_CPU && !mpi_on)
            snprintf(r.device_note, sizeof r.device_note, "auto: %s", spk_last_error(ctx));

        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        /* a file wins over a generator spec of the same name: "poisson2d:3" can still be read */
        struct stat sb;
        const int generate = spk_is_generator_spec(c.A) && stat(c.A, &sb) != 0;
        progress_step("%s %s", generate ? "generating" : "reading", c.A);
        st = generate ? spk_matrix_generate(ctx, c.A, &A) : spk_matrix_read_mtx(ctx, c.A, &A);
        if (st && !generate && stat(c.A, &sb) != 0 && strchr(c.A, ':') && !strchr(c.A, '/'))
            fail_exit(ctx, EXIT_USAGE, spk_status_str(st), "-A %s: no such file, and not a "
                      "generator spec (poisson2d:N, poisson3d:N, lame3d:N, ...: solve --help "
                      "lists them)", c.A);
        if (st)
            die_status(ctx, st, "reading the matrix");
        clock_gettime(CLOCK_MONOTONIC, &t1);
        r.read_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        spk_matrix_get_info(A, &r.info);
        spk_matrix_input_counts(A, &r.summed, &r.both_triangles);
        n = r.info.nrows;
        if (r.both_triangles > 0 && !c.quiet)
            fprintf(stderr, "solve: note: %s lists %lld off-diagonal position%s in both triangles "
                    "of its symmetric storage: each such a(i,j) is the sum of the two entries (a "
                    "symmetric file should list one triangle)\n", c.A, (long long)r.both_triangles,
                    r.both_triangles == 1 ? "" : "s");

        if (r.info.nrows != r.info.ncols) {
            spk_matrix_destroy(A);
            fail_exit(ctx, EXIT_USAGE, spk_status_str(SPK_ERR_ARG), "%s is %lld x %lld: a square "
                      "matrix is needed", c.A, (long long)r.info.nrows, (long long)r.info.ncols);
        }
        /* the format is chosen (and its reason kept) once, here; the solve finds A prepared */
        progress_step("preparing %s's format", c.A);
        if ((st = spk_matrix_prepare(ctx, A, c.opt.format)))
            die_status(ctx, st, "preparing the matrix");
        r.format_reason = spk_matrix_format_reason(A);
        if (c.explain && !c.json && !c.quiet)
            print_explain(ctx, &r);

        progress_step("reading the vectors");
        x = calloc((size_t)n + 1, sizeof *x);
        if (c.b) {
            b = read_vector(ctx, c.b, n, "right-hand side");
        } else {
            b = ones_rhs(ctx, A, n);
            r.have_err = 1;
        }
        if (!b || !x)
            fail_exit(ctx, EXIT_SYSTEM, spk_status_str(SPK_ERR_NOMEM), "out of memory for vectors "
                      "of %lld entries", (long long)n);
        if (c.x0) {
            double *x0 = read_vector(ctx, c.x0, n, "initial guess");
            memcpy(x, x0, (size_t)n * sizeof *x);
            free(x0);
            c.opt.use_x0 = 1;
        }
        read_amg_inputs(ctx, &c, n);
        progress_step("%s", "");
    }
#ifdef SPK_CLI_MPI
    if (mpi_on) {
        const int go = mpi_go(0);
        if (go) {
            progress_stop();
            exit(finish(go));                        /* rank 0 said why */
        }
    }
#endif
    c.opt.history = c.history != NULL;
    monitor_state mon = {c.monitor && !c.quiet ? c.monitor_every : 0};
    c.opt.monitor = monitor_line;                /* every iteration: it also polls the signal */
    c.opt.monitor_user = &mon;
    c.opt.monitor_every = 1;

    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    if (mpi_on) {
#ifdef SPK_CLI_MPI
        progress_step("setting up and solving over %d ranks", mpi_size);
        solve_mpi(&c, &r, ctx, A, b, x);
        ctx = NULL;                                  /* solve_mpi destroyed it */
#endif
    } else {
        spk_solver *S = NULL;
        progress_step("setting up the solver (preconditioner %s)", spk_precond_str(c.opt.precond));
        if ((st = spk_solver_create(ctx, A, &c.opt, &S)))
            die_status(ctx, st, "setting up the solver");
        spk_solver_precond_describe(S, r.precond_buf, sizeof r.precond_buf);
        r.precond_info = r.precond_buf;
        if (c.explain && !c.json && !c.quiet)
            printf("preconditioner\n  %s\n", r.precond_buf);
        progress_step("solving");
        st = spk_solver_solve(S, b, x, &r.res);
        progress_step("%s", "");
        /* 50 SpMVs each: past the noise of one on a small matrix, a fraction of a solve */
        if (!st && c.opt.reorder != SPK_REORDER_NONE && (c.explain || c.json) &&
            (st = spk_solver_spmv_seconds(S, 50, &r.spmv_s[0], &r.spmv_s[1])))
            die_status(ctx, st, "timing the SpMVs");
        spk_solver_destroy(S);
        if (st)
            die_status(ctx, st, "solving");
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    const int converged = r.res.reason > 0;
    int code = converged ? EXIT_CONVERGED : EXIT_NOT_CONVERGED;
    if (root) {
        r.format_reason = r.res.format_reason;   /* with --reorder, P A P^T's (auto may differ) */
        if (c.restart_given && r.res.method != SPK_METHOD_GMRES && r.res.method != SPK_METHOD_FGMRES)
            fprintf(stderr, "solve: warning: --restart applies to gmres and fgmres only (the method "
                    "was %s)\n",
                    spk_method_str(r.res.method));
        if (r.have_err) {
            for (int64_t i = 0; i < n; i++)
                if (!(fabs(x[i] - 1.0) <= r.err_inf))
                    r.err_inf = fabs(x[i] - 1.0);
        }
        char why[2 * sizeof(((out_file *)0)->tmp) + 512];
        if (c.history)
            progress_step("writing the history to %s", c.history);
        if (c.history && write_history(c.history, &r.res, why, sizeof why) != 0) {
            snprintf(r.error, sizeof r.error, "cannot write the history to %s: %s", c.history, why);
            fprintf(stderr, "solve: %s\n", r.error);
            code = EXIT_SYSTEM;
        }
        int64_t bad = -1;                    /* a NaN/Inf in x (a diverged solve): not written */
        for (int64_t i = 0; c.out && bad < 0 && i < n; i++)
            if (!isfinite(x[i]))
                bad = i;
        int wrote_x = 0;
        if (bad >= 0) {
            fprintf(stderr, "solve: not writing the solution to %s: x(%lld) = %g\n", c.out,
                    (long long)bad + 1, x[bad]);
        } else if (c.out && (progress_step("writing the solution to %s", c.out),
                             write_solution(ctx, c.out, x, n, why, sizeof why) != 0)) {
            snprintf(r.error, sizeof r.error, "cannot write the solution to %s: %s", c.out, why);
            fprintf(stderr, "solve: %s\n", r.error);
            code = EXIT_SYSTEM;
        } else {
            wrote_x = c.out != NULL;
        }
        progress_stop();
        if (c.json)
            print_json(&r);
        else if (!c.quiet)
            print_summary(ctx, &r);
        if (!converged) {
            const char *h = hint(&r.res);
            fprintf(stderr, "solve: did not converge: %s after %lld iterations (true relative residual "
                    "%.3e)%s%s%s%s\n", spk_reason_str(r.res.reason), (long long)r.res.iterations,
                    r.res.true_rel, r.res.reason_detail[0] ? ": " : "", r.res.reason_detail,
                    h[0] ? "; " : "", h);
            if (wrote_x)
                fprintf(stderr, "solve: note: %s holds x as the solve left it (the last iterate), "
                        "not a converged solution\n", c.out);
        }
        /* b = A * ones, and ones lies in the span of AMG's default near-null space (the
         * constant, the translations, the rigid-body modes), which the coarse levels
         * reproduce: where the smoother's weight is P's (--amg-omega 4/3) a cycle or two solve
         * it, whatever the hierarchy's quality (docs/amg.md) */
        if (converged && !c.b && r.res.precond == SPK_PRECOND_AMG && !c.nullspace && !c.quiet &&
            !c.json && r.res.iterations <= 2)
            fprintf(stderr, "solve: note: x = ones (b = A * ones) lies in the span of AMG's "
                    "near-null space, which its coarse levels reproduce, so its %lld iteration%s "
                    "say%s little of other right-hand sides: give -b for a representative count\n",
                    (long long)r.res.iterations, r.res.iterations == 1 ? "" : "s",
                    r.res.iterations == 1 ? "s" : "");
        if (r.res.reason == SPK_DIVERGED_INTERRUPTED && stop_signal && code == EXIT_NOT_CONVERGED)
            code = 128 + stop_signal;
    }
#ifdef SPK_CLI_MPI
    if (mpi_on)                                      /* every rank leaves with rank 0's code */
        MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif

    spk_result_free(&r.res);
    free(b);
    free(x);
    free((void *)c.opt.amg.nullspace);               /* read_amg_inputs's arrays */
    free((void *)c.opt.amg.coords);
    spk_matrix_destroy(A);
    spk_context_destroy(ctx);
    return finish(code);
}
