/* src/reorder.c -- reverse Cuthill-McKee (Cuthill & McKee 1969; George & Liu, Computer Solution
 * of Large Sparse Positive Definite Systems, 1981, ch. 4), after scipy.sparse.csgraph's
 * reverse_cuthill_mckee (which starts each component at a node of minimum degree; here George
 * & Liu's pseudo-peripheral node, a deeper start): per connected component of A + A^T, a
 * breadth-first search from a pseudo-peripheral node (George & Liu's algorithm: a node of
 * minimum degree, then the minimum-degree node of the deepest level of its level structure
 * while that structure deepens), each node's unvisited neighbours appended in increasing
 * degree (ties by index), the whole order reversed at the end. Cost: O(nnz log d) time for
 * the graph and the sorted neighbour lists, a few BFS per component, 2 nnz + 5 n integers.
 *
 * The solver that reorders holds B = P A P^T, its own matrix, made here with the map from B's
 * entries to A's, so a value update of A refills B by a gather and B's own update path. */
#include "reorder.h"

#include <stdlib.h>
#include <string.h>

/* The adjacency of A + A^T without the diagonal: xadj (n + 1) and adj, each list sorted and
 * unique. */
static spk_status sym_graph(spk_context *ctx, const spk_csr *A, int64_t **xadj_out,
                            int32_t **adj_out)
{
    const int64_t n = A->nrows;
    int64_t *xadj = spk_calloc(ctx, (size_t)n + 1, sizeof *xadj);
    int32_t *adj = spk_malloc(ctx, 2 * (size_t)A->nnz + 1, sizeof *adj);
    int64_t *fill = spk_malloc(ctx, (size_t)n + 1, sizeof *fill);
    if (!xadj || !adj || !fill) {
        spk_free(xadj), spk_free(adj), spk_free(fill);
        return spk_fail(ctx, SPK_ERR_NOMEM, "RCM: the graph of %lld entries: out of memory",
                        (long long)A->nnz);
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] != i) {
                xadj[i + 1]++;
                xadj[A->colind[p] + 1]++;
            }
    for (int64_t i = 0; i < n; i++)
        xadj[i + 1] += xadj[i];
    memcpy(fill, xadj, (size_t)n * sizeof *fill);
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const int32_t j = A->colind[p];
            if (j != i) {
                adj[fill[i]++] = j;
                adj[fill[j]++] = (int32_t)i;
            }
        }
    /* sort each list and drop the pairs (i,j), (j,i) both present: compacted in place */
    int64_t w = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t lo = xadj[i], hi = xadj[i + 1];
        spk_sort_i32(adj + lo, hi - lo);
        xadj[i] = w;
        for (int64_t p = lo; p < hi; p++)
            if (p == lo || adj[p] != adj[p - 1])
                adj[w++] = adj[p];
    }
    xadj[n] = w;
    spk_free(fill);
    *xadj_out = xadj;
    *adj_out = adj;
    return SPK_OK;
}

/* key = degree * 2^32 + index: sorting keys sorts by degree, then index */
static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void sort_by_degree(const int64_t *xadj, int32_t *v, int64_t len, int64_t *key)
{
    if (len < 2)
        return;
    for (int64_t k = 0; k < len; k++)
        key[k] = (xadj[v[k] + 1] - xadj[v[k]]) << 32 | v[k];
    qsort(key, (size_t)len, sizeof *key, cmp_i64);
    for (int64_t k = 0; k < len; k++)
        v[k] = (int32_t)(key[k] & 0xffffffff);
}

/* The level structure rooted at `root` into q[0 .. *len) (its component, level by level),
 * the deepest level from q[*last]; mark[v] == stamp for the visited. Returns the depth. */
static int64_t bfs_levels(const int64_t *xadj, const int32_t *adj, int32_t root, int32_t *q,
                          uint32_t *mark, uint32_t stamp, int64_t *len, int64_t *last)
{
    int64_t head = 0, tail = 0, depth = 0;
    q[tail++] = root;
    mark[root] = stamp;
    while (head < tail) {
        const int64_t level_end = tail;
        *last = head;
        depth++;
        for (; head < level_end; head++)
            for (int64_t p = xadj[q[head]]; p < xadj[q[head] + 1]; p++)
                if (mark[adj[p]] != stamp) {
                    mark[adj[p]] = stamp;
                    q[tail++] = adj[p];
                }
    }
    *len = tail;
    return depth;
}

/* George & Liu's pseudo-peripheral node of the component of `start`. */
static int32_t pseudo_peripheral(const int64_t *xadj, const int32_t *adj, int32_t start,
                                 int32_t *q, uint32_t *mark, uint32_t *stamp)
{
    int64_t len, last;
    int32_t r = start;
    int64_t depth = bfs_levels(xadj, adj, r, q, mark, ++*stamp, &len, &last);
    for (;;) {
        int32_t x = q[last];
        for (int64_t k = last + 1; k < len; k++) {
            const int64_t dk = xadj[q[k] + 1] - xadj[q[k]], dx = xadj[x + 1] - xadj[x];
            if (dk < dx || (dk == dx && q[k] < x))
                x = q[k];
        }
        const int64_t dx = bfs_levels(xadj, adj, x, q, mark, ++*stamp, &len, &last);
        if (dx <= depth)
            return r;
        r = x;
        depth = dx;
    }
}

spk_status spk_degree_order(spk_context *ctx, const spk_csr *A, int32_t *perm)
{
    const int64_t n = A->nrows;
    int64_t maxlen = 0;
    for (int64_t i = 0; i < n; i++)
        maxlen = A->rowptr[i + 1] - A->rowptr[i] > maxlen ? A->rowptr[i + 1] - A->rowptr[i] : maxlen;
    int64_t *start = spk_calloc(ctx, (size_t)maxlen + 1, sizeof *start);
    if (!start)
        return spk_fail(ctx, SPK_ERR_NOMEM, "degree ordering: out of memory (%lld counters)",
                        (long long)maxlen + 1);
    for (int64_t i = 0; i < n; i++)
        start[A->rowptr[i + 1] - A->rowptr[i]]++;
    int64_t pos = 0;                         /* lengths descending: the longest rows first */
    for (int64_t len = maxlen; len >= 0; len--) {
        const int64_t c = start[len];
        start[len] = pos;
        pos += c;
    }
    for (int64_t i = 0; i < n; i++)          /* ascending i: ties keep their order */
        perm[start[A->rowptr[i + 1] - A->rowptr[i]]++] = (int32_t)i;
    spk_free(start);
    return SPK_OK;
}

spk_status spk_rcm(spk_context *ctx, const spk_csr *A, int32_t *perm)
{
    const int64_t n = A->nrows;
    if (n == 0)
        return SPK_OK;
    int64_t *xadj = NULL;
    int32_t *adj = NULL;
    spk_status st = sym_graph(ctx, A, &xadj, &adj);
    if (st)
        return st;
    int32_t *q = spk_malloc(ctx, (size_t)n, sizeof *q), *bydeg = spk_malloc(ctx, (size_t)n, sizeof *bydeg);
    uint32_t *mark = spk_calloc(ctx, (size_t)n, sizeof *mark);
    uint8_t *done = spk_calloc(ctx, (size_t)n, sizeof *done);
    int64_t *key = spk_malloc(ctx, (size_t)n, sizeof *key);
    if (!q || !bydeg || !mark || !done || !key) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "RCM of %lld rows: out of memory", (long long)n);
        goto out;
    }
    for (int64_t i = 0; i < n; i++)
        bydeg[i] = (int32_t)i;
    sort_by_degree(xadj, bydeg, n, key);           /* each component starts at its min degree */
    uint32_t stamp = 0;
    int64_t pos = 0;                               /* Cuthill-McKee order, into perm */
    for (int64_t s = 0; s < n; s++) {
        if (done[bydeg[s]])
            continue;
        const int32_t root = pseudo_peripheral(xadj, adj, bydeg[s], q, mark, &stamp);
        int64_t head = pos;
        perm[pos++] = root;
        done[root] = 1;
        while (head < pos) {
            const int32_t v = perm[head++];
            const int64_t first = pos;
            for (int64_t p = xadj[v]; p < xadj[v + 1]; p++)
                if (!done[adj[p]]) {
                    done[adj[p]] = 1;
                    perm[pos++] = adj[p];
                }
            sort_by_degree(xadj, perm + first, pos - first, key);
        }
    }
    for (int64_t i = 0; i < n / 2; i++) {          /* reversed: RCM */
        const int32_t t = perm[i];
        perm[i] = perm[n - 1 - i];
        perm[n - 1 - i] = t;
    }
out:
    spk_free(xadj), spk_free(adj), spk_free(q), spk_free(bydeg), spk_free(mark), spk_free(done),
        spk_free(key);
    return st;
}

void spk_csr_band(const spk_csr *A, int64_t *bandwidth, int64_t *profile)
{
    int64_t bw = 0, prof = 0;
    for (int64_t i = 0; i < A->nrows; i++) {
        int64_t lo = i;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const int64_t j = A->colind[p], d = j > i ? j - i : i - j;
            if (d > bw)
                bw = d;
            if (j < lo)
                lo = j;
        }
        prof += i - lo;
    }
    *bandwidth = bw;
    *profile = prof;
}

spk_status spk_csr_permute(spk_context *ctx, const spk_csr *A, const int32_t *perm, spk_csr *B,
                           int64_t *map)
{
    const int64_t n = A->nrows;
    int32_t *iperm = spk_malloc(ctx, (size_t)n + 1, sizeof *iperm);
    if (!iperm)
        return spk_fail(ctx, SPK_ERR_NOMEM, "reordering %lld rows: out of memory", (long long)n);
    spk_status st = spk_csr_alloc(ctx, n, A->ncols, A->nnz, B);
    if (st) {
        spk_free(iperm);
        return st;
    }
    for (int64_t k = 0; k < n; k++)
        iperm[perm[k]] = (int32_t)k;
    for (int64_t k = 0; k < n; k++)
        B->rowptr[k + 1] = B->rowptr[k] + A->rowptr[perm[k] + 1] - A->rowptr[perm[k]];
    /* row k of B is row perm[k] of A with columns iperm[j]: sorted as keys new column * 2^32
     * + offset in A's row, held in map until decoded */
#pragma omp parallel for schedule(dynamic, 256) if (A->nnz > 65536)
    for (int64_t k = 0; k < n; k++) {
        const int64_t a0 = A->rowptr[perm[k]], b0 = B->rowptr[k], len = B->rowptr[k + 1] - b0;
        for (int64_t t = 0; t < len; t++)
            map[b0 + t] = (int64_t)iperm[A->colind[a0 + t]] << 32 | t;
        qsort(map + b0, (size_t)len, sizeof *map, cmp_i64);
        for (int64_t t = 0; t < len; t++) {
            B->colind[b0 + t] = (int32_t)(map[b0 + t] >> 32);
            map[b0 + t] = a0 + (map[b0 + t] & 0xffffffff);
            B->val[b0 + t] = A->val[map[b0 + t]];
        }
    }
    spk_free(iperm);
    return SPK_OK;
}

void spk_reordering_destroy(spk_reordering *R)
{
    if (!R)
        return;
    spk_matrix_destroy(R->B);
    spk_free(R->perm), spk_free(R->map), spk_free(R->val);
    spk_free(R->hb), spk_free(R->hx), spk_free(R->tmp);
    spk_free(R);
}

spk_status spk_reordering_create(spk_context *ctx, spk_matrix *A, spk_reorder kind,
                                 spk_reordering **out)
{
    *out = NULL;
    spk_status st = spk_matrix_host_values(ctx, A);
    if (st)
        return st;
    const spk_csr *a = &A->csr;
    const int64_t n = a->nrows;
    /* B (CSR) and its map, the graph of A + A^T, six vectors of n: held together at the peak */
    st = spk_check_memory(ctx, spk_csr_bytes(n, a->nnz) + 24.0 * (double)a->nnz + 48.0 * (double)n,
                          "reordering %lld rows, %lld entries", (long long)n, (long long)a->nnz);
    if (st)
        return st;
    spk_reordering *R = spk_calloc(ctx, 1, sizeof *R);
    if (!R)
        return spk_fail(ctx, SPK_ERR_NOMEM, "reordering: out of memory");
    R->kind = kind;
    R->n = n;
    R->perm = spk_malloc(ctx, (size_t)n + 1, sizeof *R->perm);
    R->map = spk_malloc(ctx, (size_t)a->nnz + 1, sizeof *R->map);
    R->val = spk_malloc(ctx, (size_t)a->nnz + 1, sizeof *R->val);
    R->hb = spk_malloc(ctx, (size_t)n + 1, sizeof *R->hb);
    R->hx = spk_malloc(ctx, (size_t)n + 1, sizeof *R->hx);
    R->tmp = spk_malloc(ctx, (size_t)n + 1, sizeof *R->tmp);
    if (!R->perm || !R->map || !R->val || !R->hb || !R->hx || !R->tmp) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "reordering %lld rows, %lld entries: out of memory",
                      (long long)n, (long long)a->nnz);
        goto fail;
    }
    if ((st = kind == SPK_REORDER_DEGREE ? spk_degree_order(ctx, a, R->perm)
                                         : spk_rcm(ctx, a, R->perm)))
        goto fail;
    spk_csr b;
    if ((st = spk_csr_permute(ctx, a, R->perm, &b, R->map)))
        goto fail;
    spk_csr_band(a, &R->band_before, &R->profile_before);
    spk_csr_band(&b, &R->band_after, &R->profile_after);
    st = spk_matrix_from_canonical(ctx, &b, &R->B);
    spk_csr_free(&b);
    if (st)
        goto fail;
    *out = R;
    return SPK_OK;
fail:
    spk_reordering_destroy(R);
    return st;
}

spk_status spk_reordering_refill(spk_context *ctx, spk_reordering *R, spk_matrix *A)
{
    spk_status st = spk_matrix_host_values(ctx, A);
    if (st)
        return st;
    const double *a = A->csr.val;
    const int64_t nnz = A->csr.nnz;
#pragma omp parallel for schedule(static) if (nnz > 65536)
    for (int64_t q = 0; q < nnz; q++)
        R->val[q] = a[R->map[q]];
    return spk_matrix_update_values(ctx, R->B, nnz, R->val, 0);
}

void spk_reorder_gather(const spk_reordering *R, const double *x, double *y)
{
#pragma omp parallel for schedule(static) if (R->n > SPK_OMP_MIN_N)
    for (int64_t k = 0; k < R->n; k++)
        y[k] = x[R->perm[k]];
}

void spk_reorder_scatter(const spk_reordering *R, const double *y, double *x)
{
#pragma omp parallel for schedule(static) if (R->n > SPK_OMP_MIN_N)
    for (int64_t k = 0; k < R->n; k++)
        x[R->perm[k]] = y[k];
}
