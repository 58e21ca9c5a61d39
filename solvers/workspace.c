/* solvers/workspace.c -- the solver object's workspace: each slot holds one device vector,
 * made at the first solve that asks for it and handed back unchanged to every later solve
 * that asks for the same length, so that a solve loop allocates only on its first pass. */
#include "solver.h"

#include <string.h>

spk_status spk_krylov_vec(spk_krylov *k, int slot, int64_t len, double **v)
{
    *v = NULL;
    if (slot < 0 || slot >= SPK_WS_MAX)
        return spk_fail(k->ctx, SPK_ERR_ARG, "workspace slot %d outside [0, %d)", slot, SPK_WS_MAX);
    if (k->ws[slot] && k->ws_len[slot] == len) {
        *v = k->ws[slot];
        return SPK_OK;
    }
    k->ops->free(k->ctx, k->ws[slot]);               /* another length: GMRES's m changed */
    k->ws[slot] = NULL;
    k->ws_len[slot] = 0;
    spk_status st = k->ops->alloc(k->ctx, len, &k->ws[slot]);
    /* over ranks every rank allocates here at once (the same slots at the same step of the
     * same solve): one rank out of memory stops them all */
    if (k->ops->distributed && k->ctx->comm)
        st = k->ctx->comm->agree(k->ctx, st);
    if (st)
        return st;
    k->ws_len[slot] = len;
    *v = k->ws[slot];
    return SPK_OK;
}

spk_status spk_krylov_host(spk_krylov *k, int64_t len, double **h)
{
    *h = NULL;
    if (!k->hws || k->hws_len != len) {
        spk_free(k->hws);
        k->hws_len = 0;
        k->hws = spk_calloc(k->ctx, (size_t)(len > 0 ? len : 1), sizeof *k->hws);
        spk_status st = k->hws ? SPK_OK
                               : spk_fail(k->ctx, SPK_ERR_NOMEM, "solver host workspace of %lld "
                                          "doubles: out of memory", (long long)len);
        if (k->ops->distributed && k->ctx->comm)
            st = k->ctx->comm->agree(k->ctx, st);
        if (st)
            return st;
        k->hws_len = len;
    }
    *h = k->hws;
    return SPK_OK;
}

void spk_krylov_free(spk_krylov *k)
{
    if (!k)
        return;
    for (int s = 0; s < SPK_WS_MAX; s++) {
        if (k->ops)
            k->ops->free(k->ctx, k->ws[s]);
        k->ws[s] = NULL;
        k->ws_len[s] = 0;
    }
    spk_free(k->hws);
    k->hws = NULL;
    k->hws_len = 0;
}
