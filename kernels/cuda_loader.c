/* kernels/cuda_loader.c -- the CUDA entry points of the shared library libspk.so, which holds
 * no CUDA code: the first context that asks for a GPU (SPK_DEVICE_CUDA, or AUTO's probe)
 * loads the CUDA backend libspk_cuda.so with dlopen, and each entry point then forwards to the
 * backend's table (kernels/cuda_plugin.h). A program that never asks for a GPU never loads
 * it, nor the CUDA runtime and cuBLAS it needs.
 *
 * Where it is looked for, in this order: the file SPK_CUDA_LIBRARY names (and only that one,
 * when set); libspk_cuda.so in the directory libspk.so was loaded from (the install puts both
 * in one libdir, the build tree too); libspk_cuda.so on the dynamic loader's search path
 * (LD_LIBRARY_PATH, the program's run path, ld.so.cache). A backend of another spk version or
 * table layout is refused. While none is loaded, every entry point answers as the CPU-only
 * build's (kernels/cuda_stub.c, included below with its names prefixed stub_), with the
 * reason it did not load: what was looked for, where, and the loader's message. */
#define _GNU_SOURCE                      /* dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static char loader_why[1024] = "the CUDA backend was not looked for";

#define SPK_CUDA_STUB(name) stub_##name
#define SPK_CUDA_STUB_SCOPE static __attribute__((unused))
#define NO_CUDA loader_why
#include "cuda_stub.c"

#include "cuda_plugin.h"

#define PLUGIN_FILE "libspk_cuda.so"

static const spk_cuda_plugin *plugin_table;
static pthread_once_t plugin_once = PTHREAD_ONCE_INIT;

/* The table of a loaded backend, or NULL (with loader_why) when it is not this library's. */
static const spk_cuda_plugin *plugin_check(void *h, const char *path)
{
    spk_cuda_plugin_entry_fn entry;
    *(void **)&entry = dlsym(h, SPK_CUDA_PLUGIN_ENTRY);
    const spk_cuda_plugin *p = entry ? entry() : NULL;
    if (!p) {
        snprintf(loader_why, sizeof loader_why, "%s is not an spk CUDA backend (no %s)", path,
                 SPK_CUDA_PLUGIN_ENTRY);
        return NULL;
    }
    /* the table's layout first: a backend of another ABI has rows of another shape, whose
     * members below must not be read. Then every row and its fp32 twin have what the
     * forwarding rows below call: update_device on all, the fused spmv_dot on CSR, ELL, SELL and
     * BSR, and spmv_dot32 on the ELL and BSR twins */
    const int same = p->abi == SPK_CUDA_PLUGIN_ABI && strcmp(p->version, SPK_VERSION_STRING) == 0 &&
                     p->context_size == sizeof(spk_context);
    int shape_ok = same && p->backend[1] && p->backend[1]->spmv_dot && p->backend[2] &&
                   p->backend[2]->spmv_dot && p->backend[5] && p->backend[5]->spmv_dot &&
                   p->backend[6] && p->backend[6]->spmv_dot;
    for (int i = 0; i < 7 && shape_ok; i++) {
        shape_ok = shape_ok && p->backend[i] && p->backend[i]->setup && p->backend[i]->spmv &&
                   p->backend[i]->update && p->backend[i]->update_device && p->backend[i]->fp32;
        const spk_spmv_backend *t = shape_ok ? p->backend[i]->fp32 : NULL;
        shape_ok = shape_ok && t->setup && t->spmv && t->update && t->update_device &&
                   t->setup_from && t->refill &&
                   (i != 1 && i != 2 && i != 5 && i != 6 ? 1 : t->spmv_dot != NULL) &&
                   (i != 2 && i != 5 ? 1 : t->spmv_dot32 != NULL);
    }
    if (!same || !shape_ok) {
        snprintf(loader_why, sizeof loader_why, "%s is the CUDA backend of spk %s (table %d), "
                 "not of this libspk %s (table %d): install the two from one build", path,
                 p->version, p->abi, SPK_VERSION_STRING, SPK_CUDA_PLUGIN_ABI);
        return NULL;
    }
    return p;
}

/* dlopen's message when it says more than that the file is not there */
static const char *load_error(const char *err)
{
    return err && !strstr(err, "cannot open shared object file") ? err : NULL;
}

static void plugin_load(void)
{
    const char *env = getenv("SPK_CUDA_LIBRARY");
    char beside[4096] = "";
    const char *path = NULL;
    void *h = NULL;
    if (env && *env) {
        path = env;
        if (!(h = dlopen(env, RTLD_NOW | RTLD_LOCAL))) {
            snprintf(loader_why, sizeof loader_why, "the CUDA backend SPK_CUDA_LIBRARY=%s did "
                     "not load: %s", env, dlerror());
            return;
        }
    } else {
        Dl_info info;
        int dir = 0;
        if (dladdr((void *)&plugin_load, &info) && info.dli_fname &&
            strrchr(info.dli_fname, '/')) {
            dir = (int)(strrchr(info.dli_fname, '/') - info.dli_fname);
            snprintf(beside, sizeof beside, "%.*s/%s", dir, info.dli_fname, PLUGIN_FILE);
            path = beside;
            if (!(h = dlopen(beside, RTLD_NOW | RTLD_LOCAL))) {
                const char *e = load_error(dlerror());
                if (e) {                 /* there, but it did not load (its CUDA libraries?) */
                    snprintf(loader_why, sizeof loader_why, "the CUDA backend %s did not "
                             "load: %s", beside, e);
                    return;
                }
            }
        }
        if (!h) {
            path = PLUGIN_FILE;
            if (!(h = dlopen(PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL))) {
                const char *e = load_error(dlerror());
                if (e)
                    snprintf(loader_why, sizeof loader_why, "the CUDA backend %s did not "
                             "load: %s", PLUGIN_FILE, e);
                else
                    snprintf(loader_why, sizeof loader_why, "no CUDA backend: %s is neither "
                             "in %.*s nor on the library path (SPK_CUDA_LIBRARY may name it)",
                             PLUGIN_FILE, dir ? dir : 1, dir ? info.dli_fname : ".");
                return;
            }
        }
    }
    const spk_cuda_plugin *p = plugin_check(h, path);
    if (!p) {
        dlclose(h);
        return;
    }
    plugin_table = p;                    /* kept loaded until the process ends */
}

/* The backend's table, loaded at the first call; NULL when there is none (loader_why). */
static const spk_cuda_plugin *plugin(void)
{
    pthread_once(&plugin_once, plugin_load);
    return plugin_table;
}

/* A call on a CUDA context: its creation loaded the backend. */
static const spk_cuda_plugin *on_gpu(const spk_context *ctx)
{
    return ctx && ctx->device == SPK_DEVICE_CUDA ? plugin() : NULL;
}

/* ---- the context ---------------------------------------------------------------------- */

int spk_has_cuda(void) { return plugin() != NULL; }

int spk_cuda_probe(char *name, size_t name_len, char *why, size_t why_len)
{
    const spk_cuda_plugin *p = plugin();
    return p ? p->probe(name, name_len, why, why_len)
             : stub_spk_cuda_probe(name, name_len, why, why_len);
}

int spk_cuda_select(int local_rank, int *ordinal, char *why, size_t why_len)
{
    const spk_cuda_plugin *p = plugin();
    return p ? p->select(local_rank, ordinal, why, why_len)
             : stub_spk_cuda_select(local_rank, ordinal, why, why_len);
}

spk_status spk_cuda_init(spk_context *ctx)
{
    const spk_cuda_plugin *p = plugin();
    return p ? p->init(ctx) : stub_spk_cuda_init(ctx);
}

void spk_cuda_fini(spk_context *ctx)
{
    if (ctx && ctx->cuda)                /* made by the backend's init: it is loaded */
        plugin()->fini(ctx);
}

spk_status spk_cuda_download_bytes(spk_context *ctx, void *host, const void *dev, size_t bytes)
{
    const spk_cuda_plugin *p = on_gpu(ctx);
    return p ? p->download_bytes(ctx, host, dev, bytes)
             : stub_spk_cuda_download_bytes(ctx, host, dev, bytes);
}

void *spk_context_stream(const spk_context *ctx)
{
    const spk_cuda_plugin *p = on_gpu(ctx);
    return p ? p->context_stream(ctx) : NULL;
}

/* ---- value updates on the device ------------------------------------------------------ */

spk_status spk_matrix_dev_update(spk_context *ctx, spk_matrix *A, const double *val,
                                 int val_on_device, spk_dev_upd *how)
{
    const spk_cuda_plugin *p = on_gpu(ctx);
    return p ? p->matrix_dev_update(ctx, A, val, val_on_device, how)
             : stub_spk_matrix_dev_update(ctx, A, val, val_on_device, how);
}

spk_status spk_matrix_dev_diagonal(spk_context *ctx, spk_matrix *A, double *d_diag, int *done)
{
    const spk_cuda_plugin *p = on_gpu(ctx);
    return p ? p->matrix_dev_diagonal(ctx, A, d_diag, done)
             : stub_spk_matrix_dev_diagonal(ctx, A, d_diag, done);
}

spk_status spk_matrix_dev_download(spk_context *ctx, spk_matrix *A)
{
    /* the copies need no context: a matrix with device copies was made on a CUDA one, so the
     * backend is loaded (a caller without a context, spk_matrix_info_of, reaches it too) */
    const spk_cuda_plugin *p = A->dev || A->dev_colind ? plugin() : on_gpu(ctx);
    return p ? p->matrix_dev_download(ctx, A) : stub_spk_matrix_dev_download(ctx, A);
}

spk_status spk_matrix_dev_borrow(spk_context *ctx, spk_matrix *A, double *d_val)
{
    const spk_cuda_plugin *p = on_gpu(ctx);
    return p ? p->matrix_dev_borrow(ctx, A, d_val) : stub_spk_matrix_dev_borrow(ctx, A, d_val);
}

void spk_matrix_dev_free(struct spk_matrix_dev *d)
{
    if (d)                               /* made on a CUDA context: the backend is loaded */
        plugin()->matrix_dev_free(d);
}

/* ---- the SpMV rows: a setup runs on a CUDA context, so every call after it finds the
 * backend loaded; its state is the backend's ------------------------------------------------ */

#define BACKEND_ROW(idx, fmt, name_)                                                          \
    static spk_status fwd_setup_##idx(spk_context *ctx, const spk_csr *A, void **state)        \
    {                                                                                         \
        const spk_cuda_plugin *p = on_gpu(ctx);                                               \
        return p ? p->backend[idx]->setup(ctx, A, state)                                      \
                 : stub_spk_backend_##name_##_cuda.setup(ctx, A, state);                      \
    }                                                                                         \
    static spk_status fwd_spmv_##idx(spk_context *ctx, const void *state, double alpha,       \
                                     const double *x, double beta, double *y)                 \
    {                                                                                         \
        return plugin()->backend[idx]->spmv(ctx, state, alpha, x, beta, y);                   \
    }                                                                                         \
    static void fwd_destroy_##idx(void *state)                                                \
    {                                                                                         \
        if (state)                                                                            \
            plugin()->backend[idx]->destroy(state);                                           \
    }                                                                                         \
    static spk_status fwd_update_##idx(spk_context *ctx, void *state, const spk_csr *A)       \
    {                                                                                         \
        return plugin()->backend[idx]->update(ctx, state, A);                                 \
    }                                                                                         \
    static spk_status fwd_update_device_##idx(spk_context *ctx, void *state, const spk_csr *A, \
                                              const double *d_val)                            \
    {                                                                                         \
        return plugin()->backend[idx]->update_device(ctx, state, A, d_val);                   \
    }

BACKEND_ROW(0, SPK_FMT_COO, coo)
BACKEND_ROW(1, SPK_FMT_CSR, csr)
BACKEND_ROW(2, SPK_FMT_ELL, ell)
BACKEND_ROW(3, SPK_FMT_HYB, hyb)
BACKEND_ROW(4, SPK_FMT_JDS, jds)
BACKEND_ROW(5, SPK_FMT_BSR, bsr)
BACKEND_ROW(6, SPK_FMT_SELL, sell)

/* The fp32 twins (spk_spmv_backend.fp32): the backend's row idx's twin, checked at load. */
#define BACKEND_ROW32(idx, name_)                                                             \
    static spk_status fwd32_setup_##idx(spk_context *ctx, const spk_csr *A, void **state)      \
    {                                                                                         \
        const spk_cuda_plugin *p = on_gpu(ctx);                                               \
        return p ? p->backend[idx]->fp32->setup(ctx, A, state)                                \
                 : stub_spk_backend_##name_##_cuda.setup(ctx, A, state);                      \
    }                                                                                         \
    static spk_status fwd32_spmv_##idx(spk_context *ctx, const void *state, double alpha,     \
                                       const double *x, double beta, double *y)               \
    {                                                                                         \
        return plugin()->backend[idx]->fp32->spmv(ctx, state, alpha, x, beta, y);             \
    }                                                                                         \
    static void fwd32_destroy_##idx(void *state)                                              \
    {                                                                                         \
        if (state)                                                                            \
            plugin()->backend[idx]->fp32->destroy(state);                                     \
    }                                                                                         \
    static spk_status fwd32_update_##idx(spk_context *ctx, void *state, const spk_csr *A)     \
    {                                                                                         \
        return plugin()->backend[idx]->fp32->update(ctx, state, A);                           \
    }                                                                                         \
    static spk_status fwd32_update_device_##idx(spk_context *ctx, void *state,                \
                                                const spk_csr *A, const double *d_val)        \
    {                                                                                         \
        return plugin()->backend[idx]->fp32->update_device(ctx, state, A, d_val);             \
    }                                                                                         \
    static spk_status fwd32_setup_from_##idx(spk_context *ctx, const void *row, void **state, \
                                             int *fits)                                       \
    {                                                                                         \
        return plugin()->backend[idx]->fp32->setup_from(ctx, row, state, fits);               \
    }                                                                                         \
    static spk_status fwd32_refill_##idx(spk_context *ctx, void *state, const void *row,      \
                                         int *fits)                                           \
    {                                                                                         \
        return plugin()->backend[idx]->fp32->refill(ctx, state, row, fits);                   \
    }

BACKEND_ROW32(0, coo)
BACKEND_ROW32(1, csr)
BACKEND_ROW32(2, ell)
BACKEND_ROW32(3, hyb)
BACKEND_ROW32(4, jds)
BACKEND_ROW32(5, bsr)
BACKEND_ROW32(6, sell)

/* The fused y = A x, x'y of the rows that have one (CSR, ELL, BSR and SELL, checked at load); the
 * others' spmv_dot stays NULL, and the methods take their spmv + dot path, as they do with the
 * static library. */
static spk_status fwd_spmv_dot_1(spk_context *ctx, const void *state, const double *x,
                                 double *y, const struct spk_dot_sink *sink)
{
    return plugin()->backend[1]->spmv_dot(ctx, state, x, y, sink);
}
static spk_status fwd_spmv_dot_2(spk_context *ctx, const void *state, const double *x,
                                 double *y, const struct spk_dot_sink *sink)
{
    return plugin()->backend[2]->spmv_dot(ctx, state, x, y, sink);
}
static spk_status fwd_spmv_dot_5(spk_context *ctx, const void *state, const double *x,
                                 double *y, const struct spk_dot_sink *sink)
{
    return plugin()->backend[5]->spmv_dot(ctx, state, x, y, sink);
}
static spk_status fwd32_spmv_dot_5(spk_context *ctx, const void *state, const double *x,
                                   double *y, const struct spk_dot_sink *sink)
{
    return plugin()->backend[5]->fp32->spmv_dot(ctx, state, x, y, sink);
}
static spk_status fwd_spmv_dot_6(spk_context *ctx, const void *state, const double *x,
                                 double *y, const struct spk_dot_sink *sink)
{
    return plugin()->backend[6]->spmv_dot(ctx, state, x, y, sink);
}
static spk_status fwd32_spmv_dot_6(spk_context *ctx, const void *state, const double *x,
                                   double *y, const struct spk_dot_sink *sink)
{
    return plugin()->backend[6]->fp32->spmv_dot(ctx, state, x, y, sink);
}
static spk_status fwd32_spmv_dot_1(spk_context *ctx, const void *state, const double *x,
                                   double *y, const struct spk_dot_sink *sink)
{
    return plugin()->backend[1]->fp32->spmv_dot(ctx, state, x, y, sink);
}
static spk_status fwd32_spmv_dot_2(spk_context *ctx, const void *state, const double *x,
                                   double *y, const struct spk_dot_sink *sink)
{
    return plugin()->backend[2]->fp32->spmv_dot(ctx, state, x, y, sink);
}

/* The twins' q = A p with fp32 vectors (ELL and BSR, checked at load). */
static spk_status fwd32_spmv_dot32_2(spk_context *ctx, const void *state, const float *x,
                                     float *y, const struct spk_dot_sink *sink)
{
    return plugin()->backend[2]->fp32->spmv_dot32(ctx, state, x, y, sink);
}
static spk_status fwd32_spmv_dot32_5(spk_context *ctx, const void *state, const float *x,
                                     float *y, const struct spk_dot_sink *sink)
{
    return plugin()->backend[5]->fp32->spmv_dot32(ctx, state, x, y, sink);
}

#define ROW32(idx, fmt, name_, dot, dot32)                                                    \
    {                                                                                         \
        .name = #name_ "32-cuda", .format = fmt, .device = SPK_DEVICE_CUDA,                   \
        .setup = fwd32_setup_##idx, .spmv = fwd32_spmv_##idx, .destroy = fwd32_destroy_##idx, \
        .update = fwd32_update_##idx, .spmv_dot = dot,                                        \
        .update_device = fwd32_update_device_##idx, .fp32 = NULL,                             \
        .setup_from = fwd32_setup_from_##idx, .refill = fwd32_refill_##idx,                   \
        .spmv_dot32 = dot32                                                                   \
    }

const spk_spmv_backend spk_backend_coo32_cuda = ROW32(0, SPK_FMT_COO, coo, NULL, NULL);
const spk_spmv_backend spk_backend_csr32_cuda = ROW32(1, SPK_FMT_CSR, csr, fwd32_spmv_dot_1, NULL);
const spk_spmv_backend spk_backend_ell32_cuda = ROW32(2, SPK_FMT_ELL, ell, fwd32_spmv_dot_2,
                                                      fwd32_spmv_dot32_2);
const spk_spmv_backend spk_backend_hyb32_cuda = ROW32(3, SPK_FMT_HYB, hyb, NULL, NULL);
const spk_spmv_backend spk_backend_jds32_cuda = ROW32(4, SPK_FMT_JDS, jds, NULL, NULL);
const spk_spmv_backend spk_backend_bsr32_cuda = ROW32(5, SPK_FMT_BSR, bsr, fwd32_spmv_dot_5,
                                                      fwd32_spmv_dot32_5);
const spk_spmv_backend spk_backend_sell32_cuda = ROW32(6, SPK_FMT_SELL, sell, fwd32_spmv_dot_6,
                                                       NULL);

#define ROW(idx, fmt, name_, dot)                                                             \
    {                                                                                         \
        .name = #name_ "-cuda", .format = fmt, .device = SPK_DEVICE_CUDA,                     \
        .setup = fwd_setup_##idx, .spmv = fwd_spmv_##idx, .destroy = fwd_destroy_##idx,       \
        .update = fwd_update_##idx, .spmv_dot = dot, .update_device = fwd_update_device_##idx, \
        .fp32 = &spk_backend_##name_##32_cuda                                                 \
    }

const spk_spmv_backend spk_backend_coo_cuda = ROW(0, SPK_FMT_COO, coo, NULL);
const spk_spmv_backend spk_backend_csr_cuda = ROW(1, SPK_FMT_CSR, csr, fwd_spmv_dot_1);
const spk_spmv_backend spk_backend_ell_cuda = ROW(2, SPK_FMT_ELL, ell, fwd_spmv_dot_2);
const spk_spmv_backend spk_backend_hyb_cuda = ROW(3, SPK_FMT_HYB, hyb, NULL);
const spk_spmv_backend spk_backend_jds_cuda = ROW(4, SPK_FMT_JDS, jds, NULL);
const spk_spmv_backend spk_backend_bsr_cuda = ROW(5, SPK_FMT_BSR, bsr, fwd_spmv_dot_5);
const spk_spmv_backend spk_backend_sell_cuda = ROW(6, SPK_FMT_SELL, sell, fwd_spmv_dot_6);

int spk_ell_cuda_state_rows(const void *state)
{
    return state && plugin() ? plugin()->ell_state_rows(state) : 0;
}

int spk_hyb_cuda_state_rows(const void *state)
{
    return state && plugin() ? plugin()->hyb_state_rows(state) : 0;
}

/* ---- the vector-ops and method-step tables: the backend's own ------------------------- */

const spk_vec_ops *spk_vec_ops_cuda(void)
{
    const spk_cuda_plugin *p = plugin();
    return p ? p->vec_ops() : stub_spk_vec_ops_cuda();
}

const struct spk_cg_ops *spk_cg_ops_cuda(void)
{
    const spk_cuda_plugin *p = plugin();
    return p ? p->cg_ops() : NULL;
}

const struct spk_bicg_ops *spk_bicg_ops_cuda(void)
{
    const spk_cuda_plugin *p = plugin();
    return p ? p->bicg_ops() : NULL;
}

const struct spk_gmres_ops *spk_gmres_ops_cuda(void)
{
    const spk_cuda_plugin *p = plugin();
    return p ? p->gmres_ops() : NULL;
}

/* ---- the incomplete factorizations' exact solves: made on a CUDA context, so a state that
 * exists was made by the loaded backend ------------------------------------------------------ */
spk_status spk_ilu_sv_setup(spk_context *ctx, const spk_ilu_factors *F, spk_ilu_sv **sv)
{
    const spk_cuda_plugin *p = on_gpu(ctx);
    return p ? p->ilu_sv_setup(ctx, F, sv) : stub_spk_ilu_sv_setup(ctx, F, sv);
}

spk_status spk_ilu_sv_update(spk_context *ctx, spk_ilu_sv *sv, const spk_ilu_factors *F)
{
    const spk_cuda_plugin *p = on_gpu(ctx);
    return p ? p->ilu_sv_update(ctx, sv, F) : stub_spk_ilu_sv_update(ctx, sv, F);
}

spk_status spk_ilu_sv_apply(spk_context *ctx, spk_ilu_sv *sv, const double *r, double *y,
                            double *z)
{
    const spk_cuda_plugin *p = on_gpu(ctx);
    return p ? p->ilu_sv_apply(ctx, sv, r, y, z) : stub_spk_ilu_sv_apply(ctx, sv, r, y, z);
}

size_t spk_ilu_sv_bytes(const spk_ilu_sv *sv)
{
    return sv ? plugin()->ilu_sv_bytes(sv) : 0;
}

void spk_ilu_sv_free(spk_ilu_sv *sv)
{
    if (sv)
        plugin()->ilu_sv_free(sv);
}

spk_status spk_amg_build_device(spk_context *ctx, const spk_csr *A, const spk_matrix *M,
                                int symmetric, const spk_amg_options *opt, int host_values,
                                spk_amg_hier *H)
{
    const spk_cuda_plugin *p = on_gpu(ctx);
    return p ? p->amg_build_device(ctx, A, M, symmetric, opt, host_values, H)
             : stub_spk_amg_build_device(ctx, A, M, symmetric, opt, host_values, H);
}

spk_status spk_amg_refresh_device(spk_context *ctx, const spk_csr *A, spk_matrix *M,
                                  spk_amg_hier *H)
{
    const spk_cuda_plugin *p = on_gpu(ctx);
    return p ? p->amg_refresh_device(ctx, A, M, H) : stub_spk_amg_refresh_device(ctx, A, M, H);
}

spk_status spk_amg_device_layout(spk_context *ctx, spk_amg_hier *H, int l, char which,
                                 const spk_csr *A, void **state)
{
    const spk_cuda_plugin *p = on_gpu(ctx);
    return p && H->dev ? p->amg_device_layout(ctx, H, l, which, A, state)
                       : stub_spk_amg_device_layout(ctx, H, l, which, A, state);
}

/* a device hierarchy exists only where the backend made it */
void spk_amg_device_free(spk_amg_hier *H)
{
    if (H->dev)
        plugin()->amg_device_free(H);
}
