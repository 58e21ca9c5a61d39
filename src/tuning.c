/* src/tuning.c -- the library's tuning knobs: environment variables for benchmarks and tests
 * (A/B runs of one kernel against another), read here and nowhere else, once per context at
 * spk_context_create. An empty or unset variable takes the default; any other value must be
 * one the knob knows, else the context is not made and the message names the variable, its
 * value and what it takes. docs/api.md lists the same table. */
#include "spk_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A knob that takes one of a few words: the index of the word, or SPK_TUNE_AUTO when unset. */
static spk_status knob_word(spk_context *ctx, const char *name, const char *const *words,
                            int nwords, int *out)
{
    const char *e = getenv(name);
    *out = SPK_TUNE_AUTO;
    if (!e || !*e)
        return SPK_OK;
    char list[128] = "";
    for (int i = 0; i < nwords; i++) {
        if (strcmp(e, words[i]) == 0) {
            *out = i;
            return SPK_OK;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 words[i]);
    }
    return spk_fail(ctx, SPK_ERR_ARG, "%s=%s: expected one of %s (or unset)", name, e, list);
}

/* A knob in microseconds below 1e7, above 0 (or from 0 with zero_ok): seconds into
 * *seconds, def when unset. */
static spk_status knob_us(spk_context *ctx, const char *name, int zero_ok, double def,
                          double *seconds)
{
    const char *e = getenv(name);
    *seconds = def;
    if (!e || !*e)
        return SPK_OK;
    char *end;
    const double us = strtod(e, &end);
    if (end == e || *end || !((us > 0 || (zero_ok && us == 0)) && us < 1e7))
        return spk_fail(ctx, SPK_ERR_ARG, "%s=%s: expected microseconds in %s0, 1e7) (or unset)",
                        name, e, zero_ok ? "[" : "(");
    *seconds = us * 1e-6;
    return SPK_OK;
}

/* SPK_HOST_MEMORY: a decimal number of bytes ("8e9"), 0 when unset, -1 when not a number. */
static double host_memory_of(const char *e)
{
    char *end;
    if (!e || !*e)
        return 0.0;
    if (strpbrk(e, "xX"))                                /* no hexadecimal floats */
        return -1.0;
    const double v = strtod(e, &end);
    return *end == '\0' && v > 0 && v < 1e30 ? v : -1.0;
}

double spk_tuning_host_memory(void)
{
    const double v = host_memory_of(getenv("SPK_HOST_MEMORY"));
    return v > 0 ? v : 0.0;
}

spk_status spk_tuning_read(spk_context *ctx, spk_tuning *t)
{
    static const char *const on_off[] = {"0", "1"};
    static const char *const csr[] = {"auto", "vector", "merge", "adaptive"};
    static const char *const csr_group[] = {"auto", "1", "2", "4", "8", "16", "32"};
    static const char *const csr_sums[] = {"auto", "rows", "segmented"};
    static const char *const ell_index[] = {"auto", "32"};
    static const char *const ell_rows[] = {"auto", "1", "2", "4"};
    static const char *const gs_rows[] = {"auto", "1", "2", "4"};
    static const char *const bsr[] = {"auto", "branch", "flat", "split"};
    static const char *const gs_kernel[] = {"auto", "rows"};
    static const char *const mpi_steps[] = {"auto", "host", "composed", "direct"};
    static const char *const mixed_vec[] = {"auto", "fp64", "fp32"};
    static const char *const amg_steps[] = {"auto", "fused", "plain"};
    int w;
    spk_status st = knob_us(ctx, "SPK_BATCH_US", 0, SPK_BATCH_SECONDS, &t->batch_s);
    if (!st)
        st = knob_us(ctx, "SPK_BATCH_SLACK_US", 1, SPK_BATCH_SLACK_SECONDS, &t->batch_slack_s);
    if (!st && !(st = knob_word(ctx, "SPK_CUDA_GRAPH", on_off, 2, &w)))
        t->cuda_graph = w != 0;                           /* unset or "1": on */
    if (!st && !(st = knob_word(ctx, "SPK_CSR_KERNEL", csr, 4, &w)))
        t->csr_kernel = w <= 0 ? SPK_TUNE_AUTO : w - 1;   /* SPK_CSR_VECTOR, _MERGE, _ADAPTIVE */
    if (!st && !(st = knob_word(ctx, "SPK_CSR_GROUP", csr_group, 7, &w)))
        t->csr_group = w <= 0 ? 0 : 1 << (w - 1);         /* 0: by the row lengths */
    if (!st && !(st = knob_word(ctx, "SPK_CSR_SUMS", csr_sums, 3, &w)))
        t->csr_sums = w <= 0 ? SPK_CSR_SUMS_AUTO : w;    /* _ROWS, _SEGMENTED */
    if (!st && !(st = knob_word(ctx, "SPK_ELL_INDEX", ell_index, 2, &w)))
        t->ell_index32 = w == 1;
    if (!st && !(st = knob_word(ctx, "SPK_ELL_ROWS", ell_rows, 4, &w)))
        t->ell_rows = w <= 0 ? 0 : w == 3 ? 4 : w;        /* 0: by the width */
    if (!st && !(st = knob_word(ctx, "SPK_BSR_KERNEL", bsr, 4, &w)))
        t->bsr_kernel = w <= 0 ? SPK_TUNE_AUTO : w - 1;   /* SPK_BSR_BRANCH, _FLAT, _SPLIT */
    if (!st && !(st = knob_word(ctx, "SPK_GS_ROWS", gs_rows, 4, &w)))
        t->gs_rows = w <= 0 ? 0 : 1 << (w - 1);           /* 0: by n; else 1, 2, 4 */
    if (!st && !(st = knob_word(ctx, "SPK_GS_KERNEL", gs_kernel, 2, &w)))
        t->gs_rows_only = w == 1;
    if (!st && !(st = knob_word(ctx, "SPK_HUGEPAGES", on_off, 2, &w)))
        t->hugepages = w != 0;
    if (!st && !(st = knob_word(ctx, "SPK_MPI_STEPS", mpi_steps, 4, &w)))
        t->mpi_composed = w >= 2 ? w - 1 : 0;             /* auto, host: by the device */
    if (!st && !(st = knob_word(ctx, "SPK_MIXED_VECTORS", mixed_vec, 3, &w)))
        t->mixed_vectors = w <= 0 ? 0 : w;
    if (!st && !(st = knob_word(ctx, "SPK_AMG_VECTORS", mixed_vec, 3, &w)))
        t->amg_vectors = w <= 0 ? 0 : w;
    if (!st && !(st = knob_word(ctx, "SPK_AMG_STEPS", amg_steps, 3, &w)))
        t->amg_steps = w <= 0 ? 0 : w;
    if (!st) {
        const char *e = getenv("SPK_HOST_MEMORY");
        t->host_memory = host_memory_of(e);
        if (t->host_memory < 0)
            st = spk_fail(ctx, SPK_ERR_ARG, "SPK_HOST_MEMORY=%s: expected a number of bytes "
                          "(8e9) (or unset)", e);
    }
    return st;
}

void spk_tuning_default(spk_tuning *t)
{
    t->batch_s = SPK_BATCH_SECONDS;
    t->batch_slack_s = SPK_BATCH_SLACK_SECONDS;
    t->cuda_graph = 1;
    t->csr_kernel = SPK_TUNE_AUTO;
    t->csr_group = 0;
    t->csr_sums = SPK_CSR_SUMS_AUTO;
    t->ell_index32 = 0;
    t->ell_rows = 0;
    t->bsr_kernel = SPK_TUNE_AUTO;
    t->gs_rows = 0;
    t->gs_rows_only = 0;
    t->hugepages = 1;
    t->mpi_composed = 0;
    t->host_memory = 0.0;
    t->mixed_vectors = 0;
    t->amg_vectors = 0;
    t->amg_steps = 0;
}
