/* tests/util.h -- the small harness every test executable shares: checks that count instead of
 * abort, the --device argument (gpu tests exit 77 when no GPU is present), paths to inputs/,
 * and seeded random matrices. */
#ifndef SPK_TEST_UTIL_H
#define SPK_TEST_UTIL_H

#include "spk_internal.h"

#include <stdint.h>
#include <stdio.h>

extern int t_pass, t_fail;

/* Record one check; print the failing expression with its location and a detail. */
#define T_CHECK(cond, ...)                                                                    \
    do {                                                                                      \
        if (cond) {                                                                           \
            t_pass++;                                                                         \
        } else {                                                                              \
            t_fail++;                                                                         \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                   \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
        }                                                                                     \
    } while (0)

/* 1 if spk_matrix_prepare(fmt) must succeed on `device` for a matrix with these statistics:
 * DIA has no GPU backend and refuses more than SPK_DIA_MAX_DIAGS diagonals or a fill above
 * SPK_DIA_MAX_FILL; ELL refuses a fill above SPK_ELL_MAX_FILL (3, kernels/formats.h). A
 * format that does not fit must be refused with SPK_ERR_UNSUPPORTED. */
static inline int t_format_fits(spk_device device, spk_format fmt, const spk_matrix_info *in)
{
    if (fmt == SPK_FMT_DIA)
        return device == SPK_DEVICE_CPU && in->dia_diags <= SPK_DIA_MAX_DIAGS &&
               in->dia_fill <= SPK_DIA_MAX_FILL;
    if (fmt == SPK_FMT_ELL)
        return in->ell_fill <= 3.0;
    if (fmt == SPK_FMT_BSR)
        return in->bsr_block >= 2 && in->bsr_fill <= 3.0;
    return 1;
}

/* Parse "--device cpu|gpu" (default cpu). For gpu with no usable GPU or no CUDA build, print
 * why and exit 77 (CTest SKIP_RETURN_CODE). */
spk_device t_device_from_args(int argc, char **argv);
/* A context on dev, or exit 2 with the message. */
spk_context *t_context(spk_device dev);
/* Print "N passed, N failed" and return the exit code. */
int t_done(const char *name);
/* Path of inputs/<name> (static buffer, valid until the next call). */
const char *t_input(const char *name);
/* Deterministic xorshift random numbers. */
uint64_t t_rand(uint64_t *state);
double t_randu(uint64_t *state);                 /* uniform in [-1, 1) */
/* A random nrows x ncols CSR (canonical) with row lengths uniform in [0, 2*avg]. */
void t_random_csr(spk_context *ctx, int64_t nrows, int64_t ncols, int64_t avg, uint64_t seed,
                  spk_csr *out);
/* A random matrix of nbrows x nbcols dense d x d blocks (every entry of a block stored): block
 * rows of 0 .. 2 avg blocks (a repeated block column sums into one block), values in [-1, 1). */
void t_block_csr(spk_context *ctx, int64_t nbrows, int64_t nbcols, int64_t d, int64_t avg,
                 uint64_t seed, spk_csr *out);
/* max_i |a_i - b_i| / max(max_i |b_i|, tiny); NaN anywhere gives +inf. */
double t_rel_diff(const double *a, const double *b, int64_t n);
/* ||b - A x|| / ||b|| (||b - A x|| when b = 0) recomputed on the host from the canonical CSR:
 * the check every solver test makes, never trusting the library's own number. */
double t_true_rel(const spk_matrix *A, const double *b, const double *x);
/* spk_generate_csr(spec) with allocation k failing, k = 1, 2, ... until it succeeds (at most
 * 10): 1 if every failure was SPK_ERR_NOMEM leaving the CSR empty and a run succeeded. */
int t_generate_under_failures(spk_context *ctx, const char *spec);
/* Read a matrix from inputs/ into the canonical CSR (exit 2 on failure). */
/* A generated (a generator spec) or read from inputs/ (a file name there); exit 2 on failure. */
spk_matrix *t_matrix(spk_context *ctx, const char *what);
/* A solver made afresh on a copy of A's current values (what a refresh must reproduce): x
 * into xf (n doubles, zeroed first unless opt->use_x0), its iterations returned; -1 (and a
 * message on stderr) when the copy or the solve fails. */
int64_t t_fresh_solve(spk_context *ctx, const spk_matrix *A, const double *b,
                      const spk_options *opt, double *xf);
/* n values uniform in [-1, 1) from `seed` (malloc'd, at least one element). */
double *t_rand_vec(int64_t n, uint64_t seed);
void t_read_csr(spk_context *ctx, const char *name, spk_csr *out);

/* be->spmv_dot(state) on ctx's device with the host x (n, square A): y (host, n) and out[k]
 * = x'y of two calls in a row, then a third call with the sink's skip set over `poison` in
 * out: *out_skip what out holds after it (poison, when the kernel honours skip). */
spk_status t_spmv_dot(spk_context *ctx, const spk_spmv_backend *be, const void *state,
                      int64_t n, const double *x, double *y, double out[2], double poison,
                      double *out_skip);
/* The same with be->spmv_dot32 on float x and y. */
spk_status t_spmv_dot32(spk_context *ctx, const spk_spmv_backend *be, const void *state,
                        int64_t n, const float *x, float *y, double out[2], double poison,
                        double *out_skip);

#endif
