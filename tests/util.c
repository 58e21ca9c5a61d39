/* tests/util.c -- see util.h. */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int t_pass, t_fail;

spk_device t_device_from_args(int argc, char **argv)
{
    spk_device dev = SPK_DEVICE_CPU;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--device") == 0 && spk_device_parse(argv[i + 1], &dev) != SPK_OK) {
            fprintf(stderr, "unknown device '%s'\n", argv[i + 1]);
            exit(2);
        }
    if (dev == SPK_DEVICE_CUDA) {
        char name[128], why[256];
        if (!spk_has_cuda()) {
            printf("SKIP: this build has no CUDA backend\n");
            exit(77);
        }
        if (!spk_cuda_probe(name, sizeof name, why, sizeof why)) {
            printf("SKIP: no usable GPU: %s\n", why);
            exit(77);
        }
    }
    return dev;
}

spk_context *t_context(spk_device dev)
{
    spk_context *ctx = NULL;
    spk_status st = spk_context_create(&ctx, dev);
    if (st != SPK_OK) {
        fprintf(stderr, "spk_context_create: %s: %s\n", spk_status_str(st), spk_last_error(ctx));
        exit(2);
    }
    return ctx;
}

int t_done(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, t_pass, t_fail);
    return t_fail ? 1 : 0;
}

const char *t_input(const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", SPK_INPUTS_DIR, name);
    return buf;
}

uint64_t t_rand(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

double t_randu(uint64_t *s)
{
    return (double)(t_rand(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

void t_random_csr(spk_context *ctx, int64_t nrows, int64_t ncols, int64_t avg, uint64_t seed,
                  spk_csr *out)
{
    uint64_t s = seed * 2654435761u + 1;
    int64_t cap = 0;
    int64_t *len = calloc((size_t)nrows + 1, sizeof *len);
    for (int64_t i = 0; i < nrows; i++) {
        len[i] = ncols ? (int64_t)(t_rand(&s) % (uint64_t)(2 * avg + 1)) : 0;
        cap += len[i];
    }
    spk_coo coo = {nrows, ncols, cap, malloc((size_t)cap * 4 + 4), malloc((size_t)cap * 4 + 4),
                   malloc((size_t)cap * 8 + 8)};
    int64_t k = 0;
    for (int64_t i = 0; i < nrows; i++)
        for (int64_t j = 0; j < len[i]; j++, k++) {
            coo.row[k] = (int32_t)i;
            coo.col[k] = (int32_t)(t_rand(&s) % (uint64_t)ncols);
            coo.val[k] = t_randu(&s);
        }
    free(len);
    if (spk_csr_from_coo(ctx, &coo, out) != SPK_OK) {
        fprintf(stderr, "t_random_csr: %s\n", spk_last_error(ctx));
        exit(2);
    }
    spk_coo_free(&coo);
}

void t_block_csr(spk_context *ctx, int64_t nbrows, int64_t nbcols, int64_t d, int64_t avg,
                 uint64_t seed, spk_csr *out)
{
    uint64_t s = seed * 2654435761u + 7;
    int64_t cap = 0;
    int64_t *len = calloc((size_t)nbrows + 1, sizeof *len);
    for (int64_t I = 0; I < nbrows; I++) {
        len[I] = nbcols ? (int64_t)(t_rand(&s) % (uint64_t)(2 * avg + 1)) : 0;
        cap += len[I] * d * d;
    }
    spk_coo coo = {nbrows * d, nbcols * d, cap, malloc((size_t)cap * 4 + 4),
                   malloc((size_t)cap * 4 + 4), malloc((size_t)cap * 8 + 8)};
    int64_t k = 0;
    for (int64_t I = 0; I < nbrows; I++)
        for (int64_t b = 0; b < len[I]; b++) {
            const int64_t J = (int64_t)(t_rand(&s) % (uint64_t)nbcols);
            for (int64_t a = 0; a < d; a++)
                for (int64_t c = 0; c < d; c++, k++) {
                    coo.row[k] = (int32_t)(I * d + a);
                    coo.col[k] = (int32_t)(J * d + c);
                    coo.val[k] = t_randu(&s);
                }
        }
    free(len);
    if (spk_csr_from_coo(ctx, &coo, out) != SPK_OK) {
        fprintf(stderr, "t_block_csr: %s\n", spk_last_error(ctx));
        exit(2);
    }
    spk_coo_free(&coo);
}

double t_rel_diff(const double *a, const double *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]))
            return INFINITY;
        double d = fabs(a[i] - b[i]);
        if (d > num)
            num = d;
        if (fabs(b[i]) > den)
            den = fabs(b[i]);
    }
    return num / (den > 1e-300 ? den : 1e-300);
}

spk_matrix *t_matrix(spk_context *ctx, const char *what)
{
    spk_matrix *A = NULL;
    spk_status st = spk_is_generator_spec(what) ? spk_matrix_generate(ctx, what, &A)
                                                : spk_matrix_read_mtx(ctx, t_input(what), &A);
    if (st != SPK_OK) {
        fprintf(stderr, "t_matrix(%s): %s\n", what, spk_last_error(ctx));
        exit(2);
    }
    return A;
}

int64_t t_fresh_solve(spk_context *ctx, const spk_matrix *A, const double *b,
                      const spk_options *opt, double *xf)
{
    spk_matrix_info in;
    spk_matrix_get_info(A, &in);
    const int64_t *rp;
    const int32_t *ci;
    const double *va;
    spk_matrix_csr(A, &rp, &ci, &va);
    spk_matrix *F = NULL;
    spk_result rf;
    int64_t its = -1;
    if (spk_matrix_from_csr(ctx, in.nrows, in.ncols, rp, ci, va, 0, &F) == SPK_OK &&
        spk_solve(ctx, F, b, xf, opt, &rf) == SPK_OK) {
        its = rf.iterations;
        spk_result_free(&rf);
    } else {
        fprintf(stderr, "t_fresh_solve: %s\n", spk_last_error(ctx));
    }
    spk_matrix_destroy(F);
    return its;
}

double *t_rand_vec(int64_t n, uint64_t seed)
{
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = t_randu(&seed);
    return v;
}

void t_read_csr(spk_context *ctx, const char *name, spk_csr *out)
{
    spk_mm_header h;
    spk_coo coo;
    if (spk_mm_read_coo(ctx, t_input(name), &h, &coo) != SPK_OK ||
        spk_csr_from_coo(ctx, &coo, out) != SPK_OK) {
        fprintf(stderr, "t_read_csr(%s): %s\n", name, spk_last_error(ctx));
        exit(2);
    }
    spk_coo_free(&coo);
}

double t_true_rel(const spk_matrix *A, const double *b, const double *x)
{
    const int64_t *rp;
    const int32_t *ci;
    const double *v;
    spk_matrix_info info;
    spk_matrix_csr(A, &rp, &ci, &v);
    spk_matrix_get_info(A, &info);
    /* long double: its exponent range holds the squares of entries near 1e300 */
    long double rr = 0, bb = 0;
    for (int64_t i = 0; i < info.nrows; i++) {
        long double s = b[i];
        for (int64_t p = rp[i]; p < rp[i + 1]; p++)
            s -= (long double)v[p] * x[ci[p]];
        rr += s * s;
        bb += (long double)b[i] * b[i];
    }
    return (double)(bb > 0 ? sqrtl(rr / bb) : sqrtl(rr));
}

int t_generate_under_failures(spk_context *ctx, const char *spec)
{
    int bad = 0;
    for (int k = 1; k <= 10; k++) {
        spk_csr A;
        ctx->fail_alloc_at = spk_context_alloc_count(ctx) + (uint64_t)k;
        spk_status st = spk_generate_csr(ctx, spec, &A);
        ctx->fail_alloc_at = 0;
        if (st == SPK_OK) {
            spk_csr_free(&A);
            return bad == 0;
        }
        bad += st != SPK_ERR_NOMEM || A.rowptr != NULL;
    }
    return 0;
}

/* t_spmv_dot and t_spmv_dot32: x and y of n elements of `elem` bytes (8: spmv_dot, 4:
 * spmv_dot32), moved as the doubles that hold them. */
static spk_status spmv_dot_run(spk_context *ctx, const spk_spmv_backend *be, const void *state,
                               int64_t n, size_t elem, const void *x, void *y, double out[2],
                               double poison, double *out_skip)
{
    const spk_vec_ops *ops = spk_vec_ops_for(spk_context_device(ctx));
    const int64_t nd = elem == sizeof(double) ? n : n / 2 + 1;   /* doubles holding n elements */
    double *hx = calloc((size_t)nd + 1, sizeof *hx), *hy = calloc((size_t)nd + 1, sizeof *hy);
    memcpy(hx, x, (size_t)n * elem);
    memcpy(hy, y, (size_t)n * elem);
    /* device: x, y, out, the counter (a zeroed double holds the uint32), partials, skip */
    double *d_x = NULL, *d_y = NULL, *d_out = NULL, *d_count = NULL, *d_part = NULL,
           *d_skip = NULL;
    spk_status st = ops->alloc(ctx, nd ? nd : 1, &d_x);
    if (!st)
        st = ops->alloc(ctx, nd ? nd : 1, &d_y);
    if (!st)
        st = ops->alloc(ctx, 1, &d_out);
    if (!st)
        st = ops->alloc(ctx, 1, &d_count);
    if (!st)
        st = ops->alloc(ctx, SPK_MAX_BLOCKS, &d_part);
    if (!st)
        st = ops->alloc(ctx, 1, &d_skip);
    if (!st && nd)
        st = ops->upload(ctx, nd, hx, d_x);
    if (!st && nd)
        st = ops->upload(ctx, nd, hy, d_y);                   /* the caller's NaN: all written */
    spk_dot_sink sink = {NULL, d_out, (uint32_t *)d_count, d_part};
    /* one call of the product the element size names */
#define T_DOT_CALL()                                                                           \
    (elem == sizeof(double)                                                                    \
         ? be->spmv_dot(ctx, state, d_x, d_y, &sink)                                           \
         : be->spmv_dot32(ctx, state, (const float *)(void *)d_x, (float *)(void *)d_y, &sink))
    for (int k = 0; k < 2 && !st; k++) {
        st = T_DOT_CALL();
        if (!st)
            st = ops->download(ctx, 1, d_out, &out[k]);
    }
    if (!st && nd)
        st = ops->download(ctx, nd, d_y, hy);
    if (!st) {                                  /* skip set: out may not change */
        int32_t one[2] = {1, 1};
        double skip_host;
        memcpy(&skip_host, one, sizeof skip_host);
        sink.skip = (const int32_t *)d_skip;
        st = ops->upload(ctx, 1, &skip_host, d_skip);
        if (!st)
            st = ops->upload(ctx, 1, &poison, d_out);
        if (!st)
            st = T_DOT_CALL();
        if (!st)
            st = ops->download(ctx, 1, d_out, out_skip);
    }
#undef T_DOT_CALL
    if (!st)
        st = ops->sync(ctx);
    if (!st)
        memcpy(y, hy, (size_t)n * elem);
    ops->free(ctx, d_x);
    ops->free(ctx, d_y);
    ops->free(ctx, d_out);
    ops->free(ctx, d_count);
    ops->free(ctx, d_part);
    ops->free(ctx, d_skip);
    free(hx);
    free(hy);
    return st;
}

spk_status t_spmv_dot(spk_context *ctx, const spk_spmv_backend *be, const void *state,
                      int64_t n, const double *x, double *y, double out[2], double poison,
                      double *out_skip)
{
    return spmv_dot_run(ctx, be, state, n, sizeof(double), x, y, out, poison, out_skip);
}

spk_status t_spmv_dot32(spk_context *ctx, const spk_spmv_backend *be, const void *state,
                        int64_t n, const float *x, float *y, double out[2], double poison,
                        double *out_skip)
{
    return spmv_dot_run(ctx, be, state, n, sizeof(float), x, y, out, poison, out_skip);
}
