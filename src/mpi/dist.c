/* src/mpi/dist.c -- distributed solves over MPI (include/spk_mpi.h): the context's ranks
 * (spk_comm: the reductions and the collective statuses), the distributed matrix (spk_dist:
 * the diagonal block as the handle's own CSR, the off-diagonal block over compressed ghost
 * columns, the halo plan with persistent requests) and its backend row, whose SpMV overlaps
 * the exchange with the diagonal block's product. libspk itself never links MPI: it reaches
 * all of this through the two hook structures (src/spk_internal.h). */
#include "spk_mpi.h"

#include "../spk_internal.h"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>                                 /* MPIX_Query_cuda_support */
#endif

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPK_HALO_TAG 7301

/* ---- the ranks of a context -------------------------------------------------------------- */

/* The values one reduction carries at most; a longer one (a CGS2 pass of GMRES with a restart
 * past it) runs in pieces of this many, the same pieces on every rank. */
#define SPK_REDUCE_CHUNK 64

typedef struct mpi_comm {
    spk_comm pub;                 /* first: ctx->comm points here                              */
    MPI_Comm comm;
    int      local_rank;          /* among the ranks of this node (MPI_COMM_TYPE_SHARED)       */
    int      gpu;                 /* the rank's GPU (CUDA ordinal), -1 on CPU ranks            */
    int      cuda_aware;          /* the MPI library takes device buffers                      */
    double   buf[SPK_REDUCE_CHUNK + 2];   /* the payload: values, then the two stop counts     */
} mpi_comm;

static mpi_comm *comm_of(const spk_context *ctx) { return (mpi_comm *)(void *)ctx->comm; }

static spk_status mpi_fail(spk_context *ctx, int err, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof s, "error %d", err);
    return spk_fail(ctx, SPK_ERR_MPI, "%s: MPI: %.*s", what, len, s);
}

/* The stop a rank asks for travels as two counts summed with the values (ranks asking to be
 * interrupted, ranks past the time limit), so one MPI_SUM carries both and every rank reads
 * the same verdict from the same reduction. */
static spk_status c_allreduce(spk_context *ctx, double *v, int n)
{
    mpi_comm *m = comm_of(ctx);
    for (int lo = 0; lo < n || (n == 0 && lo == 0); lo += SPK_REDUCE_CHUNK) {
        const int c = n - lo < SPK_REDUCE_CHUNK ? n - lo : SPK_REDUCE_CHUNK;
        memcpy(m->buf, v + lo, (size_t)c * sizeof *v);
        m->buf[c] = m->pub.stop_local == SPK_DIVERGED_INTERRUPTED;
        m->buf[c + 1] = m->pub.stop_local == SPK_DIVERGED_TIME_LIMIT;
        const double t = MPI_Wtime();
        const int err = MPI_Allreduce(MPI_IN_PLACE, m->buf, c + 2, MPI_DOUBLE, MPI_SUM, m->comm);
        m->pub.reduce_s += MPI_Wtime() - t;
        m->pub.reductions++;
        if (err != MPI_SUCCESS)
            return mpi_fail(ctx, err, "reduction over the ranks");
        memcpy(v + lo, m->buf, (size_t)c * sizeof *v);
        if (m->buf[c] > 0)
            m->pub.stop_seen = SPK_DIVERGED_INTERRUPTED;
        else if (m->buf[c + 1] > 0 && m->pub.stop_seen == SPK_REASON_NONE)
            m->pub.stop_seen = SPK_DIVERGED_TIME_LIMIT;
        if (n == 0)
            break;
    }
    return SPK_OK;
}

static spk_status c_allmax(spk_context *ctx, double *v, int n)
{
    mpi_comm *m = comm_of(ctx);
    const double t = MPI_Wtime();
    const int err = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, m->comm);
    m->pub.reduce_s += MPI_Wtime() - t;
    m->pub.reductions++;
    return err == MPI_SUCCESS ? SPK_OK : mpi_fail(ctx, err, "maximum over the ranks");
}

/* The lowest failing rank's status and message, on every rank. */
static spk_status c_agree(spk_context *ctx, spk_status st)
{
    mpi_comm *m = comm_of(ctx);
    int first = st ? m->pub.rank : m->pub.size;
    if (MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, m->comm) != MPI_SUCCESS)
        return spk_fail(ctx, SPK_ERR_MPI, "agreeing a status over the ranks: MPI failed");
    if (first == m->pub.size)
        return SPK_OK;
    int code = (int)st;
    char msg[SPK_MSG_LEN];
    snprintf(msg, sizeof msg, "%s", ctx->msg);
    if (MPI_Bcast(&code, 1, MPI_INT, first, m->comm) != MPI_SUCCESS ||
        MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, m->comm) != MPI_SUCCESS)
        return spk_fail(ctx, SPK_ERR_MPI, "agreeing a status over the ranks: MPI failed");
    msg[sizeof msg - 1] = '\0';
    if (m->pub.size == 1)
        return (spk_status)code;                     /* one rank: its own words            */
    return spk_fail(ctx, (spk_status)code, "rank %d: %s", first, msg);
}

static void c_destroy(spk_comm *c)
{
    mpi_comm *m = (mpi_comm *)(void *)c;
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Comm_free(&m->comm);
    free(m);
}

/* A rank's own failure (ctx may be NULL), made collective on `comm` before the context has
 * its ranks: 1 if any rank failed. */
static int any_failed(MPI_Comm comm, int failed)
{
    int any = failed;
    if (MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
        return 1;
    return any;
}

/* Does this MPI library take device pointers? Asked of the library where it can say (Open
 * MPI's MPIX_Query_cuda_support, MPICH's MPIX_GPU_query_support), at run time: the answer is
 * the library's build, not its headers'. */
static int mpi_cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support() == 1;
#elif defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000 && defined(MPIX_GPU_SUPPORT_CUDA)
    int yes = 0;
    return MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) == MPI_SUCCESS && yes;
#else
    return 0;
#endif
}

/* The device of the ranks: each rank takes GPU (node-local rank mod the GPUs it sees) when it
 * has one; AUTO is the GPU only when every rank has one (the ranks run one device kind). */
static spk_device ranks_device(MPI_Comm comm, spk_device device, int local_rank, int *gpu,
                               int *have_gpu, char *why, size_t why_len)
{
    *gpu = -1;
    *have_gpu = 0;
    why[0] = '\0';
    if (device == SPK_DEVICE_CPU)
        return SPK_DEVICE_CPU;
    char name[128];
    int have = spk_cuda_probe(name, sizeof name, why, why_len) &&
               spk_cuda_select(local_rank, gpu, why, why_len);
    *have_gpu = have;
    int all = have;
    if (MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        all = 0;
    if (device == SPK_DEVICE_AUTO && !all)
        *gpu = -1;
    return device == SPK_DEVICE_CUDA || all ? SPK_DEVICE_CUDA : SPK_DEVICE_CPU;
}

spk_status spk_context_create_mpi(spk_context **out, MPI_Comm comm, spk_device device)
{
    if (!out)
        return SPK_ERR_ARG;
    *out = NULL;
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return SPK_ERR_ARG;                          /* no MPI to ask: nothing collective */
    int local_rank = 0, gpu = -1, sharers = 1, have_gpu = 0;
    MPI_Comm node = MPI_COMM_NULL;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        node = MPI_COMM_NULL;
    if (node != MPI_COMM_NULL)
        MPI_Comm_rank(node, &local_rank);
    char why[256];
    const spk_device dev = ranks_device(comm, device, local_rank, &gpu, &have_gpu, why,
                                        sizeof why);
    if (node != MPI_COMM_NULL) {
        /* the ranks of this node on the same GPU: they time-slice it (said in the name) */
        const int mine = dev == SPK_DEVICE_CUDA && have_gpu ? gpu : -1;
        MPI_Comm same;
        if (MPI_Comm_split(node, mine >= 0 ? mine : MPI_UNDEFINED, 0, &same) == MPI_SUCCESS &&
            same != MPI_COMM_NULL) {
            MPI_Comm_size(same, &sharers);
            MPI_Comm_free(&same);
        }
        MPI_Comm_free(&node);
    }
    spk_context *ctx = NULL;
    spk_status st;
    if (dev == SPK_DEVICE_CUDA && !have_gpu) {       /* no GPU here, or it cannot be made current */
        st = spk_context_create(&ctx, SPK_DEVICE_CPU);
        st = spk_fail(ctx, spk_has_cuda() ? SPK_ERR_CUDA : SPK_ERR_NOT_COMPILED,
                      "SPK_DEVICE_CUDA: no usable GPU: %s", why);
    } else {
        st = spk_context_create(&ctx, dev);
    }
    mpi_comm *m = calloc(1, sizeof *m);
    if (!st && !m)
        st = SPK_ERR_NOMEM;
    if (any_failed(comm, st != SPK_OK)) {
        free(m);
        if (!ctx)
            spk_context_create(&ctx, SPK_DEVICE_CPU);    /* a context to carry the message */
        /* every rank returns the lowest failing rank's status and words, as c_agree does */
        int me = 0, size = 1, first;
        MPI_Comm_rank(comm, &me);
        MPI_Comm_size(comm, &size);
        first = st ? me : size;
        MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm);
        int code = st ? (int)st : (int)SPK_ERR_NOMEM;
        char msg[SPK_MSG_LEN] = "";
        if (ctx)
            snprintf(msg, sizeof msg, "%s", ctx->msg);
        if (first < size && MPI_Bcast(&code, 1, MPI_INT, first, comm) == MPI_SUCCESS &&
            MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, comm) == MPI_SUCCESS) {
            msg[sizeof msg - 1] = '\0';
            st = (spk_status)code;
        } else {
            st = SPK_ERR_MPI;
            snprintf(msg, sizeof msg, "a rank could not make its context");
        }
        if (ctx && size > 1)
            spk_fail(ctx, st, "spk_context_create_mpi: rank %d: %s", first, msg);
        *out = ctx;                                  /* the caller reads spk_last_error     */
        return st;
    }
    m->local_rank = local_rank;
    m->gpu = dev == SPK_DEVICE_CUDA ? gpu : -1;
    m->cuda_aware = dev == SPK_DEVICE_CUDA && mpi_cuda_aware();
    int err = MPI_Comm_dup(comm, &m->comm);
    if (err != MPI_SUCCESS) {
        free(m);
        *out = ctx;
        return mpi_fail(ctx, err, "spk_context_create_mpi: duplicating the communicator");
    }
    MPI_Comm_rank(m->comm, &m->pub.rank);
    MPI_Comm_size(m->comm, &m->pub.size);
    /* knobs that choose collective steps hold on every rank alike: the largest asked for, and
     * a CUDA-aware path only where every rank's MPI says so */
    int knobs[2] = {ctx->tune.mpi_composed, -m->cuda_aware};
    MPI_Allreduce(MPI_IN_PLACE, knobs, 2, MPI_INT, MPI_MAX, m->comm);
    ctx->tune.mpi_composed = knobs[0];
    m->cuda_aware = -knobs[1];
    m->pub.allreduce = c_allreduce;
    m->pub.allmax = c_allmax;
    m->pub.agree = c_agree;
    m->pub.destroy = c_destroy;
    ctx->comm = &m->pub;
    if (m->gpu >= 0 && sharers > 1)
        snprintf(ctx->device_name + strlen(ctx->device_name),
                 sizeof ctx->device_name - strlen(ctx->device_name), " (rank %d of %d, GPU %d, "
                 "shared by %d ranks)",
                 m->pub.rank, m->pub.size, m->gpu, sharers);
    else if (m->gpu >= 0)
        snprintf(ctx->device_name + strlen(ctx->device_name),
                 sizeof ctx->device_name - strlen(ctx->device_name), " (rank %d of %d, GPU %d)",
                 m->pub.rank, m->pub.size, m->gpu);
    else
        snprintf(ctx->device_name + strlen(ctx->device_name),
                 sizeof ctx->device_name - strlen(ctx->device_name), " (rank %d of %d)",
                 m->pub.rank, m->pub.size);
    *out = ctx;
    return SPK_OK;
}

spk_status spk_mpi_stats_get(const spk_context *ctx, spk_mpi_stats *s)
{
    if (!ctx || !ctx->comm || !s)
        return SPK_ERR_ARG;
    const spk_comm *c = ctx->comm;
    s->halo_s = c->halo_s;
    s->reduce_s = c->reduce_s;
    s->halo_exchanges = c->halo_exchanges;
    s->halo_bytes = c->halo_bytes;
    s->reductions = c->reductions;
    s->rank = c->rank;
    s->size = c->size;
    return SPK_OK;
}

void spk_mpi_stats_reset(spk_context *ctx)
{
    if (!ctx || !ctx->comm)
        return;
    spk_comm *c = ctx->comm;
    c->halo_s = c->reduce_s = 0.0;
    c->halo_exchanges = c->halo_bytes = c->reductions = 0;
}

/* ---- the distributed matrix -------------------------------------------------------------- */

typedef struct dist_mat {
    spk_dist     pub;             /* first: A->dist points here                                */
    spk_matrix  *A;               /* the handle; A->csr is the diagonal block                  */
    spk_comm    *cm;              /* the context's ranks (counters)                            */
    MPI_Comm     comm;
    int          rank, size;
    int64_t     *starts;          /* size + 1: rank r owns rows [starts[r], starts[r + 1])     */
    int64_t      nloc, nghost, nnz_global;
    int64_t     *ghost;           /* global column of each ghost, ascending                    */
    spk_csr      off;             /* nloc x nghost: the off-diagonal block                     */
    /* value updates: input entry p of the rank's arrays went to the off-diagonal block when
     * is_off[p]; off's entry q sums the off inputs og_src[og_ptr[q] .. og_ptr[q + 1]) (both
     * NULL: the identity); dv, ov: the split values' scratch */
    int64_t      nnz_in, nd_in, no_in;
    uint8_t     *is_off;
    int64_t     *og_ptr, *og_src;
    double      *dv, *ov;
    int32_t     *orow;            /* the rows of off holding entries (PETSc's compressed rows:
                                     the product walks these alone, not every row offset)      */
    int64_t      norow;
    int          nsend, nrecv;    /* neighbours sent to / received from                        */
    int          nreq;
    MPI_Request *req;             /* persistent: the receives, then the sends                  */
    int32_t     *send_idx;        /* local rows whose values are sent, neighbour by neighbour  */
    int64_t      nsend_vals;
    double      *send_buf, *ghost_val;
    int          ready;           /* the requests are made (at the first product)              */
    int64_t     *recv_off, *send_off;
    int         *recv_rank, *send_rank;
    /* The halo of device vectors (GPU ranks; CPU ranks under SPK_MPI_STEPS=composed): the
     * values to send gathered on the device by a selection matrix (one 1 a row), the ghost
     * block's product y += alpha off g on the device, both through the device's CSR backend;
     * d_send, d_ghost: device buffers, copied to and from send_buf, ghost_val unless the MPI
     * takes device buffers. */
    int          halo;            /* SPK_MPI_HALO_*                                            */
    const spk_vec_ops *dops;      /* the table that frees the device buffers                   */
    const spk_spmv_backend *cbe;
    spk_csr      sel;             /* nsend_vals x nloc                                         */
    void        *sel_st, *off_st;
    double      *d_send, *d_ghost;
    double      *stage;           /* device values of an update, copied to the host to split   */
} dist_mat;

static void dist_destroy(spk_dist *d)
{
    dist_mat *D = (dist_mat *)(void *)d;
    int fin = 0;
    MPI_Finalized(&fin);
    for (int i = 0; D->ready && !fin && i < D->nreq; i++)
        if (D->req[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&D->req[i]);
    free(D->req);
    free(D->starts);
    free(D->ghost);
    spk_csr_free(&D->off);
    free(D->is_off);
    spk_free(D->og_ptr);
    spk_free(D->og_src);
    free(D->dv);
    free(D->ov);
    free(D->orow);
    free(D->send_idx);
    free(D->send_buf);
    free(D->ghost_val);
    free(D->recv_off);
    free(D->send_off);
    free(D->recv_rank);
    free(D->send_rank);
    if (D->cbe) {
        D->cbe->destroy(D->sel_st);
        D->cbe->destroy(D->off_st);
    }
    spk_csr_free(&D->sel);
    free(D->stage);
    if (D->dops) {                                   /* the context may be gone: the table */
        D->dops->free(NULL, D->d_send);              /* frees without it                   */
        D->dops->free(NULL, D->d_ghost);
    }
    free(D);
}

/* The halo of device vectors (after make_plan): the selection matrix and the ghost block on
 * the device's CSR backend, the two device buffers. */
static spk_status halo_device_setup(spk_context *ctx, dist_mat *D, int cuda_aware)
{
    const spk_vec_ops *ops = spk_vec_ops_for(ctx->device);
    const int64_t ns = D->nsend_vals;
    spk_status st;
    D->dops = ops;
    /* SPK_MPI_STEPS=direct on CPU ranks: the device-buffer exchange on host memory (what a
     * CUDA-aware MPI gets from a GPU rank, testable without one) */
    D->halo = (ctx->device == SPK_DEVICE_CUDA && cuda_aware) ||
                      (ctx->device == SPK_DEVICE_CPU && ctx->tune.mpi_composed == 2)
                  ? SPK_MPI_HALO_DEVICE
                  : SPK_MPI_HALO_STAGED;
    if (!(D->cbe = spk_backend_find(SPK_FMT_CSR, ctx->device)))
        return spk_fail(ctx, SPK_ERR_NOT_COMPILED, "the halo on the %s: no CSR backend",
                        spk_device_str(ctx->device));
    if ((st = spk_csr_alloc(ctx, ns, D->nloc, ns, &D->sel)))
        return st;
    for (int64_t i = 0; i < ns; i++) {
        D->sel.rowptr[i + 1] = i + 1;
        D->sel.colind[i] = D->send_idx[i];
        D->sel.val[i] = 1.0;
    }
    if (ns > 0 && ((st = D->cbe->setup(ctx, &D->sel, &D->sel_st)) ||
                   (st = ops->alloc(ctx, ns, &D->d_send))))
        return st;
    if (D->nghost > 0 && ((st = D->cbe->setup(ctx, &D->off, &D->off_st)) ||
                          (st = ops->alloc(ctx, D->nghost, &D->d_ghost))))
        return st;
    return SPK_OK;
}

/* The persistent requests, made once: a receive per neighbour into its slice of ghost_val (the
 * ghosts ascend and each rank owns a contiguous range, so one owner's ghosts are contiguous),
 * a send per neighbour from its slice of send_buf (d_ghost and d_send for a CUDA-aware MPI). */
static spk_status halo_ready(spk_context *ctx, dist_mat *D)
{
    if (D->ready)
        return SPK_OK;
    D->nreq = D->nrecv + D->nsend;
    D->req = calloc((size_t)(D->nreq > 0 ? D->nreq : 1), sizeof *D->req);
    if (!D->req)
        return spk_fail(ctx, SPK_ERR_NOMEM, "halo requests: out of memory");
    for (int i = 0; i < D->nreq; i++)
        D->req[i] = MPI_REQUEST_NULL;
    const int dev = D->halo == SPK_MPI_HALO_DEVICE;   /* a CUDA-aware MPI reads the device's */
    double *gb = dev ? D->d_ghost : D->ghost_val, *sb = dev ? D->d_send : D->send_buf;
    int err = MPI_SUCCESS;
    for (int i = 0; i < D->nrecv && err == MPI_SUCCESS; i++)
        err = MPI_Recv_init(gb + D->recv_off[i], (int)(D->recv_off[i + 1] - D->recv_off[i]),
                            MPI_DOUBLE, D->recv_rank[i], SPK_HALO_TAG, D->comm, &D->req[i]);
    for (int i = 0; i < D->nsend && err == MPI_SUCCESS; i++)
        err = MPI_Send_init(sb + D->send_off[i], (int)(D->send_off[i + 1] - D->send_off[i]),
                            MPI_DOUBLE, D->send_rank[i], SPK_HALO_TAG, D->comm, &D->req[D->nrecv + i]);
    D->ready = 1;                                    /* dist_destroy frees the requests */
    return err == MPI_SUCCESS ? SPK_OK : mpi_fail(ctx, err, "halo requests");
}

/* The exchange around the diagonal block's product: start the persistent requests, queue or
 * run y = alpha A_d x + beta y (on a GPU it runs while the host waits for the messages), wait;
 * the seconds waited and the bytes sent counted. */
static spk_status exchange(spk_context *ctx, dist_mat *D, double alpha, const double *x,
                           double beta, double *y)
{
    spk_matrix *A = D->A;
    double t = MPI_Wtime();
    int err = D->nreq ? MPI_Startall(D->nreq, D->req) : MPI_SUCCESS;
    double waited = MPI_Wtime() - t;
    if (err != MPI_SUCCESS)
        return mpi_fail(ctx, err, "halo exchange");
    const spk_status st = A->be->spmv(ctx, A->state, alpha, x, beta, y);
    t = MPI_Wtime();
    err = D->nreq ? MPI_Waitall(D->nreq, D->req, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    waited += MPI_Wtime() - t;
    D->cm->halo_s += waited;
    D->cm->halo_exchanges++;
    D->cm->halo_bytes += D->nsend_vals * (int64_t)sizeof(double);
    return err != MPI_SUCCESS ? mpi_fail(ctx, err, "halo exchange") : st;
}

/* y = alpha A x + beta y over the ranks: pack the values the neighbours need, the exchange
 * around the diagonal block's product, then the off-diagonal block's product on the ghosts.
 * Host vectors pack and multiply in host loops (the ghost product over the rows that hold
 * ghosts alone). Device vectors (SPK_MPI_HALO_STAGED, _DEVICE) gather on the device into
 * d_send, copied to the host unless the MPI takes device buffers, and take the ghosts back
 * into d_ghost for y += alpha off g, both through the device's CSR backend. */
static spk_status dist_spmv(spk_context *ctx, const void *state, double alpha, const double *x,
                            double beta, double *y)
{
    dist_mat *D = (dist_mat *)(uintptr_t)state;
    spk_matrix *A = D->A;
    spk_status st = SPK_OK;
    if (!A->be || A->ctx_prepared != ctx)
        return spk_fail(ctx, SPK_ERR_MPI, "distributed SpMV: the diagonal block is not "
                        "prepared on this context");
    const spk_vec_ops *ops = spk_vec_ops_for(ctx->device);
    const int64_t ns = D->nsend_vals;
    const int dev = D->halo != SPK_MPI_HALO_HOST, staged = D->halo == SPK_MPI_HALO_STAGED;
    if (!dev) {
#pragma omp parallel for simd schedule(static) if (ns > SPK_OMP_MIN_N)
        for (int64_t i = 0; i < ns; i++)
            D->send_buf[i] = x[D->send_idx[i]];
    } else {
        if (ns > 0)
            st = D->cbe->spmv(ctx, D->sel_st, 1.0, x, 0.0, D->d_send);
        /* staged: the copy waits for the gather; device buffers: MPI reads d_send and writes
         * d_ghost, which the last product's ghost kernel may still read, so wait for the
         * stream even when nothing is sent */
        if (!st && staged && ns > 0)
            st = ops->download(ctx, ns, D->d_send, D->send_buf);
        else if (!st && !staged && D->nreq > 0)
            st = ops->sync(ctx);
    }
    if (st || (st = exchange(ctx, D, alpha, x, beta, y)))
        return st;
    if (dev) {
        if (D->nghost == 0)
            return SPK_OK;
        if (staged && (st = ops->upload(ctx, D->nghost, D->ghost_val, D->d_ghost)))
            return st;
        return D->cbe->spmv(ctx, D->off_st, alpha, D->d_ghost, 1.0, y);
    }
    const spk_csr *O = &D->off;
    const double *g = D->ghost_val;
    const int32_t *orow = D->orow;
    const int64_t m = D->norow;
#pragma omp parallel for schedule(static) if (O->nnz > SPK_OMP_MIN_N)
    for (int64_t k = 0; k < m; k++) {
        const int32_t i = orow[k];
        double s = 0.0;
        for (int64_t p = O->rowptr[i]; p < O->rowptr[i + 1]; p++)
            s += O->val[p] * g[O->colind[p]];
        y[i] += alpha * s;
    }
    return SPK_OK;
}

static spk_status dist_no_setup(spk_context *ctx, const spk_csr *A, void **state)
{
    return spk_fail(ctx, SPK_ERR_MPI, "the distributed operator is made by "
                    "spk_matrix_create_mpi, not prepared");
}

static spk_status dist_no_update(spk_context *ctx, void *state, const spk_csr *A)
{
    return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "a distributed matrix takes no value update yet");
}

static void dist_no_destroy(void *state) { (void)state; }

static const spk_spmv_backend dist_backend = {
    .name = "mpi",
    .format = SPK_FMT_CSR,
    .device = SPK_DEVICE_CPU,
    .setup = dist_no_setup,
    .spmv = dist_spmv,
    .destroy = dist_no_destroy,                      /* the matrix's destroy frees the state */
    .update = dist_no_update,
};

static int owner_of(const int64_t *starts, int size, int64_t g)
{
    int lo = 0, hi = size;                           /* starts[lo] <= g < starts[hi]         */
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (starts[mid] <= g)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int64_t find_i64(const int64_t *a, int64_t n, int64_t v)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && a[lo] == v ? lo : -1;
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The halo plan: which ghost values come from which rank (from the ghosts alone), and which of
 * its rows each rank sends (each rank tells the owners what it needs: MPI_Alltoall of the
 * counts, MPI_Alltoallv of the global rows). */
static spk_status make_plan(spk_context *ctx, dist_mat *D)
{
    const int P = D->size;
    int *rc = calloc((size_t)P, sizeof *rc), *sc = calloc((size_t)P, sizeof *sc);
    int *rd = calloc((size_t)P, sizeof *rd), *sd = calloc((size_t)P, sizeof *sd);
    int64_t *want = NULL, total = 0;
    /* a rank's own failure is agreed before each collective call, so that none is left in one */
    spk_status st = rc && sc && rd && sd ? SPK_OK
                                         : spk_fail(ctx, SPK_ERR_NOMEM, "halo plan: out of memory");
    if ((st = D->cm->agree(ctx, st)))
        goto done;
    for (int64_t j = 0; j < D->nghost; j++)
        rc[owner_of(D->starts, P, D->ghost[j])]++;
    MPI_Alltoall(rc, 1, MPI_INT, sc, 1, MPI_INT, D->comm);
    for (int q = 0; q < P; q++) {
        sd[q] = (int)(total < INT_MAX ? total : 0);
        total += sc[q];
    }
    for (int q = 0, o = 0; q < P; q++) {
        rd[q] = o;
        o += rc[q];
    }
    D->nsend_vals = total;
    want = malloc((size_t)(total > 0 ? total : 1) * sizeof *want);
    D->send_idx = malloc((size_t)(total > 0 ? total : 1) * sizeof *D->send_idx);
    D->send_buf = malloc((size_t)(total > 0 ? total : 1) * sizeof *D->send_buf);
    D->ghost_val = malloc((size_t)(D->nghost > 0 ? D->nghost : 1) * sizeof *D->ghost_val);
    D->recv_rank = malloc((size_t)P * sizeof *D->recv_rank);
    D->send_rank = malloc((size_t)P * sizeof *D->send_rank);
    D->recv_off = malloc((size_t)(P + 1) * sizeof *D->recv_off);
    D->send_off = malloc((size_t)(P + 1) * sizeof *D->send_off);
    if (total > INT_MAX)
        st = spk_fail(ctx, SPK_ERR_UNSUPPORTED, "halo plan: more than 2^31 values sent by one rank");
    else if (!want || !D->send_idx || !D->send_buf || !D->ghost_val || !D->recv_rank ||
             !D->send_rank || !D->recv_off || !D->send_off)
        st = spk_fail(ctx, SPK_ERR_NOMEM, "halo plan: out of memory");
    if ((st = D->cm->agree(ctx, st)))
        goto done;
    MPI_Alltoallv(D->ghost, rc, rd, MPI_INT64_T, want, sc, sd, MPI_INT64_T, D->comm);
    const int64_t lo = D->starts[D->rank];
    for (int64_t i = 0; i < total; i++)
        D->send_idx[i] = (int32_t)(want[i] - lo);    /* asked of this rank: its own rows */
    D->nrecv = D->nsend = 0;
    D->recv_off[0] = D->send_off[0] = 0;
    for (int q = 0; q < P; q++) {
        if (rc[q]) {
            D->recv_rank[D->nrecv] = q;
            D->recv_off[D->nrecv + 1] = rd[q] + rc[q];
            D->nrecv++;
        }
        if (sc[q]) {
            D->send_rank[D->nsend] = q;
            D->send_off[D->nsend + 1] = sd[q] + sc[q];
            D->nsend++;
        }
    }
done:
    free(rc);
    free(sc);
    free(rd);
    free(sd);
    free(want);
    return st;
}

/* Symmetry of the whole matrix: each diagonal block symmetric, and every off-diagonal entry
 * (i, j, v) met by (j, i, v) on j's owner, which must receive exactly as many as it holds. */
static spk_status check_symmetric(spk_context *ctx, dist_mat *D, int *sym)
{
    const int P = D->size;
    const spk_csr *O = &D->off;
    const int64_t lo = D->starts[D->rank];
    int *sc = calloc((size_t)P, sizeof *sc), *rc = calloc((size_t)P, sizeof *rc);
    int *sd = calloc((size_t)P, sizeof *sd), *rd = calloc((size_t)P, sizeof *rd);
    int *fill = calloc((size_t)P, sizeof *fill);
    double *out = malloc((size_t)(3 * O->nnz + 1) * sizeof *out), *in = NULL;
    int ok = spk_csr_is_symmetric(&D->A->csr);
    spk_status st = SPK_OK;
    if (!sc || !rc || !sd || !rd || !fill || !out || 3 * O->nnz > INT_MAX)
        st = spk_fail(ctx, SPK_ERR_NOMEM, "symmetry check: out of memory");
    if ((st = D->cm->agree(ctx, st)))
        goto done;
    for (int64_t p = 0; p < O->nnz; p++)
        sc[owner_of(D->starts, P, D->ghost[O->colind[p]])] += 3;
    for (int q = 0, o = 0; q < P; q++) {
        sd[q] = o;
        o += sc[q];
    }
    for (int64_t i = 0; i < O->nrows; i++)
        for (int64_t p = O->rowptr[i]; p < O->rowptr[i + 1]; p++) {
            const int64_t g = D->ghost[O->colind[p]];
            const int q = owner_of(D->starts, P, g);
            double *e = out + sd[q] + fill[q];
            e[0] = (double)g;                        /* the mirror's row (q's)  */
            e[1] = (double)(lo + i);                 /* its column (this rank's) */
            e[2] = O->val[p];
            fill[q] += 3;
        }
    MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, D->comm);
    int64_t total = 0;
    for (int q = 0; q < P; q++) {
        rd[q] = (int)(total < INT_MAX ? total : 0);
        total += rc[q];
    }
    in = malloc((size_t)(total + 1) * sizeof *in);
    if (!in || total > INT_MAX)
        st = spk_fail(ctx, SPK_ERR_NOMEM, "symmetry check: out of memory");
    if ((st = D->cm->agree(ctx, st)))
        goto done;
    MPI_Alltoallv(out, sc, sd, MPI_DOUBLE, in, rc, rd, MPI_DOUBLE, D->comm);
    if (total / 3 != O->nnz)
        ok = 0;
    for (int64_t e = 0; ok && e < total; e += 3) {
        const int64_t i = (int64_t)in[e] - lo;
        const int64_t j = find_i64(D->ghost, D->nghost, (int64_t)in[e + 1]);
        int found = 0;
        if (i >= 0 && i < O->nrows && j >= 0)
            for (int64_t p = O->rowptr[i]; p < O->rowptr[i + 1]; p++)
                if (O->colind[p] == j) {
                    found = O->val[p] == in[e + 2];
                    break;
                }
        ok = found;
    }
done:
    free(sc);
    free(rc);
    free(sd);
    free(rd);
    free(fill);
    free(out);
    free(in);
    *sym = ok;
    return st;
}

/* The value-dependent statistics of the whole matrix into A->info (the row statistics stay
 * the diagonal block's: the format is chosen for what this rank multiplies). */
static spk_status global_info(spk_context *ctx, dist_mat *D)
{
    spk_matrix_info *in = &D->A->info;
    int sym = 0;
    spk_status st = check_symmetric(ctx, D, &sym);
    /* the diagonal lives in the diagonal block: its flags are the block's, over all ranks */
    double amin = D->off.nnz ? INFINITY : (in->val_absmin > 0 ? in->val_absmin : INFINITY);
    double amax = in->val_absmax;
    for (int64_t p = 0; p < D->off.nnz; p++) {
        const double a = fabs(D->off.val[p]);
        if (a > amax)
            amax = a;
        if (a > 0 && a < amin)
            amin = a;
    }
    if (in->val_absmin > 0 && in->val_absmin < amin)
        amin = in->val_absmin;
    double v[5] = {sym ? 0.0 : 1.0, in->diag_positive || D->nloc == 0 ? 0.0 : 1.0,
                   in->diag_nonzero || D->nloc == 0 ? 0.0 : 1.0, amax, -amin};
    if (st)                                          /* agreed: every rank has failed */
        return st;
    MPI_Allreduce(MPI_IN_PLACE, v, 5, MPI_DOUBLE, MPI_MAX, D->comm);
    in->symmetric = v[0] == 0.0;
    in->diag_positive = v[1] == 0.0;
    in->diag_nonzero = v[2] == 0.0;
    in->val_absmax = v[3];
    in->val_absmin = isfinite(v[4]) ? -v[4] : 0.0;
    return st;
}

/* One rank's part, before anything collective: the diagonal block (a handle of its own) and
 * the off-diagonal block with its ghosts. */
static spk_status split_rows(spk_context *ctx, dist_mat *D, int64_t n, int64_t lo, int64_t hi,
                             const int64_t *rowptr, const int64_t *colind, const double *val)
{
    const int64_t m = hi - lo;
    if (m > INT32_MAX || (m > 0 && (!rowptr || rowptr[0] != 0)))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_create_mpi: rowptr must start at 0 (and "
                        "a rank holds fewer than 2^31 rows)");
    const int64_t nnz = m > 0 ? rowptr[m] : 0;
    if (nnz > 0 && (!colind || !val))
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_create_mpi: colind or val is NULL");
    for (int64_t i = 0; i < m; i++)
        if (rowptr[i + 1] < rowptr[i])
            return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_create_mpi: rowptr decreases at local "
                            "row %lld", (long long)i);
    int64_t nd = 0, no = 0;
    for (int64_t p = 0; p < nnz; p++) {
        if (colind[p] < 0 || colind[p] >= n)
            return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_create_mpi: column %lld of entry %lld "
                            "is outside [0, %lld)", (long long)colind[p], (long long)p,
                            (long long)n);
        if (!isfinite(val[p]))
            return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_create_mpi: entry %lld (global row "
                            "%lld) is %g", (long long)p, (long long)lo, val[p]);
        if (colind[p] >= lo && colind[p] < hi)
            nd++;
        else
            no++;
    }
    int32_t *dr = malloc((size_t)(nd + 1) * sizeof *dr), *dc = malloc((size_t)(nd + 1) * sizeof *dc);
    double *dv = malloc((size_t)(nd + 1) * sizeof *dv);
    int64_t *g = malloc((size_t)(no + 1) * sizeof *g);
    spk_coo oc = {m, 0, no, malloc((size_t)(no + 1) * sizeof(int32_t)),
                  malloc((size_t)(no + 1) * sizeof(int32_t)), malloc((size_t)(no + 1) * sizeof(double))};
    spk_status st = SPK_OK;
    if (!dr || !dc || !dv || !g || !oc.row || !oc.col || !oc.val) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "distributed matrix of %lld local entries: out of "
                      "memory", (long long)nnz);
        goto done;
    }
    D->nnz_in = nnz;
    D->nd_in = nd;
    D->no_in = no;
    D->is_off = malloc((size_t)nnz + 1);
    D->dv = malloc((size_t)(nd + 1) * sizeof *D->dv);
    D->ov = malloc((size_t)(no + 1) * sizeof *D->ov);
    if (!D->is_off || !D->dv || !D->ov) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "distributed matrix's update map: out of memory");
        goto done;
    }
    nd = no = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++) {
            D->is_off[p] = !(colind[p] >= lo && colind[p] < hi);
            if (colind[p] >= lo && colind[p] < hi) {
                dr[nd] = (int32_t)i;
                dc[nd] = (int32_t)(colind[p] - lo);
                dv[nd++] = val[p];
            } else {
                oc.row[no] = (int32_t)i;
                g[no] = colind[p];
                oc.val[no++] = val[p];
            }
        }
    /* the ghosts: the distinct outside columns, ascending */
    int64_t *gs = malloc((size_t)(no + 1) * sizeof *gs);
    if (!gs) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "ghost columns: out of memory");
        goto done;
    }
    if (no)
        memcpy(gs, g, (size_t)no * sizeof *gs);
    qsort(gs, (size_t)no, sizeof *gs, cmp_i64);
    int64_t ng = 0;
    for (int64_t p = 0; p < no; p++)
        if (ng == 0 || gs[ng - 1] != gs[p])
            gs[ng++] = gs[p];
    D->ghost = gs;
    D->nghost = ng;
    if (ng > INT32_MAX) {
        st = spk_fail(ctx, SPK_ERR_UNSUPPORTED, "more than 2^31 ghost columns on one rank");
        goto done;
    }
    for (int64_t p = 0; p < no; p++)
        oc.col[p] = (int32_t)find_i64(gs, ng, g[p]);
    oc.ncols = ng;
    if ((st = spk_csr_from_coo(ctx, &oc, &D->off)) ||
        (st = spk_csr_source_map(ctx, &D->off, &oc, &D->og_ptr, &D->og_src)))
        goto done;
    int64_t nr = 0;
    for (int64_t i = 0; i < m; i++)
        nr += D->off.rowptr[i + 1] > D->off.rowptr[i];
    if (!(D->orow = malloc((size_t)(nr + 1) * sizeof *D->orow))) {
        st = spk_fail(ctx, SPK_ERR_NOMEM, "off-diagonal rows: out of memory");
        goto done;
    }
    for (int64_t i = 0; i < m; i++)
        if (D->off.rowptr[i + 1] > D->off.rowptr[i])
            D->orow[D->norow++] = (int32_t)i;
    st = spk_matrix_from_coo(ctx, m, m, nd, dr, dc, dv, 0, &D->A);
done:
    free(dr);
    free(dc);
    free(dv);
    free(g);
    spk_coo_free(&oc);
    return st;
}

/* New values for the rank's input entries, in the order of the arrays the matrix was made
 * from: the diagonal block's through its own update (its map, its layout refilled, its
 * version bumped, so that solvers refresh), the off-diagonal block's through og_ptr / og_src
 * (summed in input order, as assembly summed them), then the whole matrix's statistics. */
static spk_status dist_update(spk_context *ctx, spk_matrix *A, int64_t nnz, const double *val,
                              int val_on_device)
{
    dist_mat *D = (dist_mat *)(void *)A->dist;
    spk_status st = SPK_OK;
    if (!ctx->comm || ctx->comm != D->cm)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_update_values: a distributed matrix is "
                        "updated on the context it was made on");
    if (nnz != D->nnz_in)
        st = spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_update_values: %lld values given, but this "
                      "rank's rows were made from %lld entries (the pattern cannot change: make "
                      "a new matrix)", (long long)nnz, (long long)D->nnz_in);
    else if (nnz > 0 && !val)
        st = spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_update_values: val is NULL");
    if (!st && nnz > 0 && val_on_device && ctx->device == SPK_DEVICE_CUDA) {
        /* the split runs on the host: the values come over first (then as host values) */
        if (!D->stage && !(D->stage = malloc((size_t)nnz * sizeof *D->stage)))
            st = spk_fail(ctx, SPK_ERR_NOMEM, "spk_matrix_update_values: host staging of %lld "
                          "values: out of memory", (long long)nnz);
        if (!st && !(st = spk_cuda_download_bytes(ctx, D->stage, val, (size_t)nnz * sizeof *val))) {
            val = D->stage;
            val_on_device = 0;
        }
    }
    for (int64_t p = 0; !st && p < nnz; p++)
        if (!isfinite(val[p]))
            st = spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_update_values: val[%lld] = %g (this "
                          "rank's entry)", (long long)p, val[p]);
    if ((st = D->cm->agree(ctx, st)))                /* refused on every rank: A unchanged */
        return st;
    int64_t nd = 0, no = 0;
    for (int64_t p = 0; p < nnz; p++) {
        if (D->is_off[p])
            D->ov[no++] = val[p];
        else
            D->dv[nd++] = val[p];
    }
    st = spk_matrix_update_local(ctx, A, nd, D->dv, val_on_device);
    double *a = D->off.val;
    if (st) {
        /* the diagonal block kept its values (or was refilled but its layout dropped): the
         * ghost block keeps its own; the statistics below are made again on every rank */
    } else if (D->og_ptr) {
        for (int64_t q = 0; q < D->off.nnz; q++) {
            int64_t k = D->og_ptr[q];
            double v = k < D->og_ptr[q + 1] ? D->ov[D->og_src[k]] : 0.0;
            for (k++; k < D->og_ptr[q + 1]; k++)
                v += D->ov[D->og_src[k]];
            a[q] = v;
        }
    } else if (no > 0) {
        memcpy(a, D->ov, (size_t)no * sizeof *a);
    }
    if (!st && D->off_st)                            /* the ghost block's device copy */
        st = D->cbe->update(ctx, D->off_st, &D->off);
    st = D->cm->agree(ctx, st);
    (void)spk_matrix_info_of(A);                     /* the block's statistics, then the whole's */
    const spk_status si = global_info(ctx, D);       /* on every rank, whatever happened */
    return st ? st : si;
}

spk_status spk_matrix_create_mpi(spk_context *ctx, int64_t n, int64_t lo, int64_t hi,
                                 const int64_t *rowptr, const int64_t *colind, const double *val,
                                 spk_matrix **out)
{
    if (!out)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_create_mpi: NULL argument");
    *out = NULL;
    if (!ctx || !ctx->comm)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_create_mpi: the context has no ranks "
                        "(make it with spk_context_create_mpi)");
    mpi_comm *mc = comm_of(ctx);
    const int P = mc->pub.size, me = mc->pub.rank;
    dist_mat *D = calloc(1, sizeof *D);
    spk_status st = D ? SPK_OK : spk_fail(ctx, SPK_ERR_NOMEM, "distributed matrix: out of memory");
    if (D) {
        D->comm = mc->comm;
        D->cm = &mc->pub;
        D->rank = me;
        D->size = P;
        D->starts = calloc((size_t)P + 1, sizeof *D->starts);
        if (!D->starts)
            st = spk_fail(ctx, SPK_ERR_NOMEM, "distributed matrix: out of memory");
    }
    /* the row ranges, checked on every rank alike */
    int64_t mine[3] = {lo, hi, n}, *all = malloc((size_t)3 * (size_t)P * sizeof *all);
    if (!all && !st)
        st = spk_fail(ctx, SPK_ERR_NOMEM, "distributed matrix: out of memory");
    if ((st = mc->pub.agree(ctx, st))) {
        free(all);
        if (D)
            dist_destroy(&D->pub);
        return st;
    }
    if (MPI_Allgather(mine, 3, MPI_INT64_T, all, 3, MPI_INT64_T, mc->comm) != MPI_SUCCESS)
        st = spk_fail(ctx, SPK_ERR_MPI, "spk_matrix_create_mpi: MPI_Allgather failed");
    for (int r = 0; !st && r < P; r++) {
        const int64_t rlo = all[3 * r], rhi = all[3 * r + 1], rn = all[3 * r + 2];
        const int64_t expect = r == 0 ? 0 : all[3 * (r - 1) + 1];
        if (rn != n || rlo != expect || rhi < rlo || (r == P - 1 && rhi != n))
            st = spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_create_mpi: rank %d holds rows [%lld, "
                          "%lld) of n = %lld: the ranks' rows must follow each other in rank "
                          "order from 0 and end at n = %lld", r, (long long)rlo, (long long)rhi,
                          (long long)rn, (long long)n);
        D->starts[r] = rlo;
    }
    free(all);
    D->starts[P] = n;
    D->nloc = hi - lo;
    if (!st)
        st = split_rows(ctx, D, n, lo, hi, rowptr, colind, val);
    if (!(st = mc->pub.agree(ctx, st)) && !(st = make_plan(ctx, D)) &&
        (!(ctx->device != SPK_DEVICE_CPU || ctx->tune.mpi_composed) ||
         !(st = mc->pub.agree(ctx, halo_device_setup(ctx, D, mc->cuda_aware)))) &&
        !(st = mc->pub.agree(ctx, halo_ready(ctx, D)))) {
        int64_t nz[1] = {D->A->csr.nnz + D->off.nnz};
        MPI_Allreduce(MPI_IN_PLACE, nz, 1, MPI_INT64_T, MPI_SUM, D->comm);
        D->nnz_global = nz[0];
        st = global_info(ctx, D);
    }
    if (st) {
        spk_matrix_destroy(D->A);                    /* D->A->dist is not set yet */
        dist_destroy(&D->pub);
        return st;
    }
    D->pub.be = &dist_backend;
    D->pub.state = D;
    D->pub.n_global = n;
    D->pub.destroy = dist_destroy;
    D->pub.update = dist_update;
    D->A->dist = &D->pub;
    *out = D->A;
    return SPK_OK;
}

static const dist_mat *dist_of(const spk_matrix *A)
{
    return A && A->magic == SPK_MATRIX_MAGIC && A->dist ? (const dist_mat *)(const void *)A->dist
                                                        : NULL;
}

spk_status spk_matrix_info_mpi(const spk_matrix *A, spk_mpi_matrix_info *info)
{
    const dist_mat *D = dist_of(A);
    if (!D || !info)
        return SPK_ERR_ARG;
    memset(info, 0, sizeof *info);
    info->n_global = D->pub.n_global;
    info->row_begin = D->starts[D->rank];
    info->row_end = D->starts[D->rank + 1];
    info->nnz_diag = A->csr.nnz;
    info->nnz_offdiag = D->off.nnz;
    info->ghosts = D->nghost;
    info->send_values = D->nsend_vals;
    info->neighbours = D->nrecv > D->nsend ? D->nrecv : D->nsend;
    info->rank = D->rank;
    info->size = D->size;
    info->nnz_global = D->nnz_global;
    info->halo = D->halo;
    return SPK_OK;
}

/* ---- vectors in the row distribution ----------------------------------------------------- */

static spk_status counts_of(spk_context *ctx, const dist_mat *D, int *cnt, int *dsp)
{
    for (int r = 0; r < D->size; r++) {
        const int64_t c = D->starts[r + 1] - D->starts[r];
        if (c > INT_MAX || D->starts[r] > INT_MAX)
            return spk_fail(ctx, SPK_ERR_UNSUPPORTED, "vectors of more than 2^31 entries: not "
                            "scattered or gathered by this build");
        cnt[r] = (int)c;
        dsp[r] = (int)D->starts[r];
    }
    return SPK_OK;
}

static spk_status scatter_gather(spk_context *ctx, const spk_matrix *A, int root,
                                 const double *src, double *dst, int gather)
{
    const dist_mat *D = dist_of(A);
    if (!ctx || !ctx->comm || !D)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_vector_%s_mpi: NULL context or a matrix that "
                        "is not distributed", gather ? "gather" : "scatter");
    const int P = D->size;
    if (root < 0 || root >= P)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_vector_%s_mpi: root %d of %d ranks",
                        gather ? "gather" : "scatter", root, P);
    int *cnt = malloc((size_t)P * sizeof *cnt), *dsp = malloc((size_t)P * sizeof *dsp);
    spk_status st = cnt && dsp ? counts_of(ctx, D, cnt, dsp)
                               : spk_fail(ctx, SPK_ERR_NOMEM, "vector counts: out of memory");
    if (!st && D->rank == root && D->pub.n_global > 0 && !(gather ? dst : src))
        st = spk_fail(ctx, SPK_ERR_ARG, "spk_vector_%s_mpi: the global vector is NULL on the "
                      "root", gather ? "gather" : "scatter");
    if ((st = comm_of(ctx)->pub.agree(ctx, st)) == SPK_OK) {
        const int me = (int)(D->starts[D->rank + 1] - D->starts[D->rank]);
        const int err = gather ? MPI_Gatherv(src, me, MPI_DOUBLE, dst, cnt, dsp, MPI_DOUBLE, root, D->comm)
                               : MPI_Scatterv(src, cnt, dsp, MPI_DOUBLE, dst, me, MPI_DOUBLE, root, D->comm);
        if (err != MPI_SUCCESS)
            st = mpi_fail(ctx, err, gather ? "spk_vector_gather_mpi" : "spk_vector_scatter_mpi");
    }
    free(cnt);
    free(dsp);
    return st;
}

spk_status spk_vector_scatter_mpi(spk_context *ctx, const spk_matrix *A, int root,
                                  const double *global, double *local)
{
    return scatter_gather(ctx, A, root, global, local, 0);
}

spk_status spk_vector_gather_mpi(spk_context *ctx, const spk_matrix *A, int root,
                                 const double *local, double *global)
{
    return scatter_gather(ctx, A, root, local, global, 1);
}

/* ---- a matrix one rank holds, distributed -------------------------------------------------- */

/* Row blocks balanced by nonzeros: rank r's first row is the first block boundary at which
 * the rows before hold r / P of the entries. */
static void partition(const spk_csr *A, int P, int block, int64_t *starts)
{
    const int64_t n = A->nrows, nnz = A->nnz;
    starts[0] = 0;
    int64_t i = 0;
    for (int r = 1; r < P; r++) {
        const double want = (double)nnz * r / P;
        while (i < n && (double)A->rowptr[i] < want)
            i++;
        int64_t b = (i + block - 1) / block * block;
        if (b > n)
            b = n;
        if (b < starts[r - 1])
            b = starts[r - 1];
        starts[r] = b;
    }
    starts[P] = n;
}

spk_status spk_matrix_scatter_mpi(spk_context *ctx, int root, const spk_matrix *A_root,
                                  int block, spk_matrix **out)
{
    if (!out)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_scatter_mpi: NULL argument");
    *out = NULL;
    if (!ctx || !ctx->comm)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_scatter_mpi: the context has no ranks");
    mpi_comm *mc = comm_of(ctx);
    const int P = mc->pub.size, me = mc->pub.rank;
    if (root < 0 || root >= P || block < 1)
        return spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_scatter_mpi: root %d of %d ranks, block "
                        "%d (>= 1)", root, P, block);
    int64_t *starts = calloc((size_t)P + 1, sizeof *starts), *rp = NULL, *c64 = NULL;
    int *rcnt = calloc((size_t)P, sizeof *rcnt), *rdsp = calloc((size_t)P, sizeof *rdsp);
    int *ecnt = calloc((size_t)P, sizeof *ecnt), *edsp = calloc((size_t)P, sizeof *edsp);
    int32_t *c32 = NULL;
    double *v = NULL;
    const spk_csr *C = NULL;
    spk_status st = SPK_OK;
    if (!starts || !rcnt || !rdsp || !ecnt || !edsp)
        st = spk_fail(ctx, SPK_ERR_NOMEM, "spk_matrix_scatter_mpi: out of memory");
    if (!st && me == root) {
        if (!A_root || A_root->magic != SPK_MATRIX_MAGIC || A_root->dist)
            st = spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_scatter_mpi: the root's matrix is "
                          "NULL, destroyed or distributed already");
        else if (A_root->csr.nrows != A_root->csr.ncols)
            st = spk_fail(ctx, SPK_ERR_ARG, "spk_matrix_scatter_mpi: A is %lld x %lld, a "
                          "square matrix is needed", (long long)A_root->csr.nrows,
                          (long long)A_root->csr.ncols);
        else if ((st = spk_matrix_host_values(ctx, (spk_matrix *)A_root)) == SPK_OK) {
            C = &A_root->csr;
            partition(C, P, block, starts);
            for (int r = 0; r < P && !st; r++) {
                const int64_t e0 = C->rowptr[starts[r]], e1 = C->rowptr[starts[r + 1]];
                if (e1 > INT_MAX || starts[r + 1] > INT_MAX)
                    st = spk_fail(ctx, SPK_ERR_UNSUPPORTED, "spk_matrix_scatter_mpi: more than "
                                  "2^31 rows or entries: give each rank its rows with "
                                  "spk_matrix_create_mpi");
                rcnt[r] = (int)(starts[r + 1] - starts[r]);
                rdsp[r] = (int)starts[r];
                ecnt[r] = (int)(e1 - e0);
                edsp[r] = (int)e0;
            }
        }
    }
    /* the partition and each rank's count of entries, then its rows' offsets and entries */
    int nz = 0;
    if ((st = mc->pub.agree(ctx, st)))
        goto done;
    MPI_Bcast(starts, P + 1, MPI_INT64_T, root, mc->comm);
    MPI_Scatter(ecnt, 1, MPI_INT, &nz, 1, MPI_INT, root, mc->comm);
    const int64_t n = starts[P], lo = starts[me], hi = starts[me + 1], m = hi - lo;
    rp = malloc((size_t)(m + 1) * sizeof *rp);
    c32 = malloc((size_t)nz * sizeof *c32 + 1);
    c64 = malloc((size_t)nz * sizeof *c64 + 1);
    v = malloc((size_t)nz * sizeof *v + 1);
    if (!rp || !c32 || !c64 || !v)
        st = spk_fail(ctx, SPK_ERR_NOMEM, "spk_matrix_scatter_mpi: %d entries: out of memory", nz);
    if ((st = mc->pub.agree(ctx, st)))
        goto done;
    MPI_Scatterv(C ? C->rowptr : NULL, rcnt, rdsp, MPI_INT64_T, rp, (int)m, MPI_INT64_T, root,
                 mc->comm);
    MPI_Scatterv(C ? C->colind : NULL, ecnt, edsp, MPI_INT32_T, c32, nz, MPI_INT32_T, root,
                 mc->comm);
    MPI_Scatterv(C ? C->val : NULL, ecnt, edsp, MPI_DOUBLE, v, nz, MPI_DOUBLE, root, mc->comm);
    const int64_t first = m > 0 ? rp[0] : 0;         /* global offsets, made local */
    for (int64_t i = 0; i < m; i++)
        rp[i] -= first;
    rp[m] = nz;
    for (int p = 0; p < nz; p++)
        c64[p] = c32[p];
    st = spk_matrix_create_mpi(ctx, n, lo, hi, rp, c64, v, out);
done:
    free(starts);
    free(rcnt);
    free(rdsp);
    free(ecnt);
    free(edsp);
    free(rp);
    free(c32);
    free(c64);
    free(v);
    return st;
}
