/* src/select.c -- the automatic format choice: a pure function of the row-length and column
 * statistics (src/stats.c) and the device, with a one-line reason. The rule and every
 * threshold are explained in docs/selection.md.
 *
 * GPU rule, first match wins (numbered as docs/selection.md's table):
 *   0.  no nonzeros                                  -> csr (nothing to balance)
 *   1a. one long row holds a large share of nnz, or
 *   1b. giant isolated rows over an ordinary bulk    -> coo (work split by nonzeros)
 *   B.  a pattern of full d x d blocks (d >= 2) whose
 *       block rows pad at most 1.5x                  -> bsr (one index a block)
 *   2.  padding at most 1.25x (max / mean) and rows
 *       that are shifts of their neighbours (coherent
 *       columns: stencils, grid-numbered meshes), or
 *       SELL's sorted slices would pad more          -> ell
 *   3s. a long tail (past ELL's guard) of short rows
 *       near the diagonal (int16 offsets) in slices
 *       that barely pad                              -> sell
 *   3.  any other long tail                          -> csr (row blocks, CSR-Adaptive);
 *   3'. ... too few rows for HYB's ELL width         -> coo
 *   4.  anything else (padding up to 3x, or scattered
 *       columns at any padding)                      -> sell (slices padded to their own
 *                                                       longest row after a local sort)
 * CPU rule: dia for a few well-filled diagonals, else csr (the end of spk_select_format).
 *
 * Rules 2 to 4 are measured: bench/select_sweep.py on the H200 (docs/selection.md) swept band
 * matrices of mean row length 8-48, max / mean 1 - 3.8, columns near the diagonal or anywhere;
 * bench_spmv's stencils and meshes are the coherent side of rule 2.
 * The coo rules (1) are guesses taken from Bell & Garland (SC'09), CUSP and Ginkgo, not yet
 * measured. */
#include "spk_internal.h"
#include "../kernels/formats.h"

#include <stdio.h>

/* ELL up to a padding (max / mean) of 1.25, whatever the spread of the rows: ELL moves n max
 * slots, so its cost follows the padding alone, and without padding its kernel (two rows a
 * thread on short rows, int16 offsets) is spk's fastest. Past it SELL, which pads each slice
 * of 32 rows only to its own longest after sorting the rows within windows of 1024: measured
 * on the sweep (bench/select_sweep.py, H200, docs/selection.md). */
#define SPK_SEL_ELL_FILL_LIMIT 1.25
/* ... and only where the columns are coherent (spk_matrix_info.coherence: the share of entries
 * whose diagonal neighbour is an entry too). There a warp's 32 rows gather 32 consecutive x
 * and ELL's two rows a thread keep twice the loads in flight: on the H200 ELL took 79.4 us on
 * poisson3d:150 (coherence 1.00) against SELL's 94.9, 74.1 / 76.6 on poisson3d27:100 (0.99),
 * 135.8 / 139.9 on elasticity3d:60 (0.84). Where the columns are scattered (the sweep's random
 * bands: 1 / the row length, the diagonal alone; mesh2d:2000, 0.14) every gather is a sector
 * of its own and SELL's slices, each a contiguous block of the arrays, won at every padding:
 * 65.4 against 73.5 us at none (band:2097152:8:8:4096), up to 1.43x at 1.25. 0.5 lies in the
 * gap between the two groups (no matrix measured between 0.14 and 0.84). */
#define SPK_SEL_ELL_COHERENCE 0.5

/* A long tail in SELL: a slice is walked by one warp, so its longest row sets the slice's
 * time; SELL takes the tail only where rows stay short, the sorted slices barely pad, and the
 * int16 offsets fit (every column within 32767 of its row: 10 bytes a slot, against the
 * row blocks' 8 + packed columns). On the sweep's near long tails (max 32-48, sell_fill 1.05,
 * columns within 4096) SELL took 110.3 / 152.4 us against CSR's 140.1 / 205.6; on the far one
 * (int32 columns) 156.5 against CSR's 139.1. */
#define SPK_SEL_SELL_TAIL_ROW 1024
#define SPK_SEL_SELL_TAIL_FILL 1.25

/* A row this long is past where Ginkgo stops giving one (sub)warp per row: its `automatical`
 * CSR strategy switches to load balancing when the longest row exceeds 1024 (NVIDIA). */
#define SPK_SEL_COO_MIN_ROW 1024
/* ... and if such a row holds this share of all nonzeros, the single warp that owns it in any
 * row-based kernel (CSR, ELL, JDS) serialises that share of the work: COO splits it evenly.
 * A guess. */
#define SPK_SEL_COO_ROW_SHARE 0.10
/* Giant isolated rows: max > 100x the mean while the 99th percentile stays within 2x of it,
 * i.e. a regular bulk plus a handful of outliers (a constraint row, a ground net). COO's cost
 * depends on nnz only (Bell & Garland: COO is "insensitive to row length distribution"); HYB
 * would also serve, the measurement will tell. Both numbers are guesses. */
#define SPK_SEL_COO_MAX_OVER_MEAN 100.0
#define SPK_SEL_COO_P99_OVER_MEAN 2.0

/* A long tail: ELL would pad past its guard, the case CUSP's ELL conversion refuses with the
 * advice to use HYB (Bell & Garland sec. 3.4). Measured on the H200, CSR's
 * row-block kernel (CUDA CSR picks it at row-length cv > 1) beats HYB there: powerlaw:2000000:16
 * 254 against 279 us, powerlaw:4000000:4 145 against 186 (cuSPARSE's CSR 250 and 158). So the
 * tail goes to csr; HYB stays a format to ask for. */
#define SPK_SEL_HYB_MIN_FILL SPK_ELL_MAX_FILL

/* Between ELL's limit and its guard, SELL (Kreutzer et al., SISC 2014): the padding of
 * sorted slices (sell_fill, 1.0-1.06 on the sweep's matrices) in place of ELL's, and no
 * second kernel for a tail as HYB's COO part needs. On the sweep it took the place of HYB,
 * spk's fastest format there before it (docs/selection.md). HYB and JDS stay formats to ask
 * for; JDS, a global sort, loses x's locality and lost to ELL or HYB on every swept matrix but
 * one of the first run (by 1% there). */

/* CPU: DIA when its slots are at most 1.5x the entries: there CSR's 12 B per entry + 8 per row
 * and DIA's 8 B per slot break even in bytes (fill 1.5 + rows / nnz). Measured on a 2-core
 * EPYC (bench/bench_dia_cpu, docs/selection.md): on the 7-point matrix of 64^3 rows with
 * entries dropped at random, DIA took 0.65-0.99x CSR's SpMV time for every fill from 1.005 to
 * 2.87 and every share of partial rows from 3% to 100% -- CSR loses
 * on the uneven rows as much as DIA on the padding, so random holes do not find the
 * crossover; 1.5 is the bytes' break-even for rows that stay regular. Partial rows cost
 * nothing while x is finite (kernels/dia_cpu.c), so they are not a condition. */
#define SPK_SEL_DIA_MAX_FILL 1.5

/* BSR where the pattern is made of full d x d blocks and the block rows pad at most 1.5x, the
 * bound ELL had before SELL took its place past 1.25: BSR moves the values and 4 / d^2 bytes
 * of index per value (8.44 bytes an entry at d = 3 against ELL's 10-12), and its layout is
 * ELL's over block rows. Measured on the H200: docs/selection.md. */
#define SPK_SEL_BSR_FILL_LIMIT 1.5

spk_format spk_select_shape(const spk_matrix_info *s, char *why, size_t len)
{
    const double mean = s->row_mean, fill = s->ell_fill;
    const double share = s->nnz ? (double)s->row_max / (double)s->nnz : 0.0;

    if (s->nnz == 0) {
        snprintf(why, len, "csr: no nonzeros (%lld x %lld), nothing to balance",
                 (long long)s->nrows, (long long)s->ncols);
        return SPK_FMT_CSR;
    }
    if (s->row_max >= SPK_SEL_COO_MIN_ROW && share >= SPK_SEL_COO_ROW_SHARE) {
        snprintf(why, len, "coo: one row of %lld entries holds %.0f%% of the nonzeros (mean %.1f); "
                 "COO splits it across threads", (long long)s->row_max, 100.0 * share, mean);
        return SPK_FMT_COO;
    }
    if ((double)s->row_max > SPK_SEL_COO_MAX_OVER_MEAN * mean &&
        (double)s->row_p99 <= SPK_SEL_COO_P99_OVER_MEAN * mean) {
        snprintf(why, len, "coo: isolated giant rows (max %lld = %.0fx mean %.1f, p99 %lld); "
                 "COO's cost depends on nnz only", (long long)s->row_max, fill, mean,
                 (long long)s->row_p99);
        return SPK_FMT_COO;
    }
    if (s->bsr_block >= SPK_BSR_MIN_D && s->bsr_fill <= SPK_SEL_BSR_FILL_LIMIT) {
        snprintf(why, len, "bsr: the pattern is made of %lldx%lld blocks, block rows padded "
                 "%.2fx: one index a block (%.2f bytes an entry with the padding; ELL 10-12)",
                 (long long)s->bsr_block, (long long)s->bsr_block, s->bsr_fill,
                 s->nnz ? (double)s->bytes[SPK_FMT_BSR] / (double)s->nnz : 0.0);
        return SPK_FMT_BSR;
    }
    const int coherent = s->coherence >= SPK_SEL_ELL_COHERENCE;
    if (fill <= SPK_SEL_ELL_FILL_LIMIT && fill <= SPK_ELL_MAX_FILL && coherent) {
        snprintf(why, len, "ell: padding %.2fx (max %lld, mean %.1f, cv %.2f) is at most 1.25x "
                 "and the columns are coherent (%.2f of the entries continue a diagonal), where "
                 "ELL was measured fastest", fill, (long long)s->row_max, mean, s->row_cv,
                 s->coherence);
        return SPK_FMT_ELL;
    }
    /* a few rows (a slice's missing rows are padding), or lengths that vary within every
     * slice: SELL gains nothing on ELL's padding (nor, with coherent columns, at equal
     * padding) */
    if (fill <= SPK_ELL_MAX_FILL &&
        (s->sell_fill > fill || (coherent && s->sell_fill >= fill))) {
        snprintf(why, len, "ell: padding %.2fx (max %lld, mean %.1f), and sell's sorted slices "
                 "would pad %.2fx", fill, (long long)s->row_max, mean, s->sell_fill);
        return SPK_FMT_ELL;
    }
    if (fill > SPK_SEL_HYB_MIN_FILL && s->hyb_width >= 1 && s->row_max <= SPK_SEL_SELL_TAIL_ROW &&
        s->sell_fill <= SPK_SEL_SELL_TAIL_FILL && s->bandwidth <= SPK_ELL_OFF16_MAX) {
        snprintf(why, len, "sell: long tail (max %lld = %.1fx mean %.1f) with short rows and "
                 "columns within %lld of the diagonal (int16 offsets): slices of 32 rows "
                 "sorted within 1024 pad %.2fx", (long long)s->row_max, fill, mean,
                 (long long)s->bandwidth, s->sell_fill);
        return SPK_FMT_SELL;
    }
    if (fill > SPK_SEL_HYB_MIN_FILL) {
        if (s->hyb_width >= 1) {
            snprintf(why, len, "csr: long tail (cv %.2f, max %lld = %.1fx mean, p95 %lld) would pad "
                     "ELL %.1fx; CSR row blocks balance it (measured ahead of hyb: ELL width "
                     "%lld + %.0f%% in COO)", s->row_cv, (long long)s->row_max, fill,
                     (long long)s->row_p95, fill, (long long)s->hyb_width,
                     100.0 * (double)s->hyb_coo_nnz / (double)s->nnz);
            return SPK_FMT_CSR;
        }
        snprintf(why, len, "coo: too few rows reach HYB's ELL width (%lld of %lld non-empty, max "
                 "%lld = %.1fx mean): HYB would be all COO", (long long)(s->nrows - s->empty_rows),
                 (long long)s->nrows, (long long)s->row_max, fill);
        return SPK_FMT_COO;
    }
    if (fill <= SPK_SEL_ELL_FILL_LIMIT) {
        snprintf(why, len, "sell: padding %.2fx (max %lld, mean %.1f) but scattered columns "
                 "(%.2f of the entries continue a diagonal): slices of 32 rows sorted within "
                 "1024 pad %.2fx, each slice contiguous", fill, (long long)s->row_max, mean,
                 s->coherence, s->sell_fill);
        return SPK_FMT_SELL;
    }
    snprintf(why, len, "sell: padding %.2fx (max %lld, mean %.1f, cv %.2f) too much for ell; "
             "slices of 32 rows sorted within 1024 pad %.2fx", fill, (long long)s->row_max, mean,
             s->row_cv, s->sell_fill);
    return SPK_FMT_SELL;
}

spk_format spk_select_format(const spk_matrix_info *info, spk_device device, char *reason,
                             size_t reason_len)
{
    char gpu_why[256], sink[8];
    if (!reason || reason_len == 0) {
        reason = sink;
        reason_len = sizeof sink;
    }
    if (!info) {
        snprintf(reason, reason_len, "csr: no statistics given");
        return SPK_FMT_CSR;
    }
    spk_format gpu = spk_select_shape(info, gpu_why, sizeof gpu_why);
    if (info->nnz > 0 && info->nnz < SPK_SEL_SMALL_NNZ) {
        snprintf(gpu_why, sizeof gpu_why, "csr: small (%lld nonzeros < 2^20): the SpMV is "
                 "launch-bound, so one kernel with no conversion wins (measured on the H200; "
                 "by shape: %s)", (long long)info->nnz, spk_format_str(gpu));
        gpu = SPK_FMT_CSR;
    }
    if (device != SPK_DEVICE_CPU) {                   /* CUDA, and AUTO: the GPU rule */
        snprintf(reason, reason_len, "%s", gpu_why);
        return gpu;
    }
    /* On a CPU, DIA where the entries lie on a few well-filled diagonals (8 B per slot and
     * no index loads against CSR's 12 B per entry + 8 per row, and the same bits); otherwise
     * row-parallel CSR: no padding or permutation, and the caches absorb the irregular reads
     * of x that ELL/JDS/HYB reorganise for GPU coalescing. */
    if (info->nnz > 0 && info->dia_diags >= 1 && info->dia_diags <= SPK_DIA_MAX_DIAGS &&
        info->dia_fill >= 1.0 && info->dia_fill <= SPK_SEL_DIA_MAX_FILL) {
        snprintf(reason, reason_len, "dia: cpu device, the entries lie on %lld diagonals (fill "
                 "%.2fx, %.0f%% of the rows partial): 8 B per slot, no index loads",
                 (long long)info->dia_diags, info->dia_fill,
                 info->nrows ? 100.0 * (double)info->dia_partial_rows / (double)info->nrows : 0.0);
        return SPK_FMT_DIA;
    }
    char dia_why[96];
    if (info->dia_diags > SPK_DIA_MAX_DIAGS)
        snprintf(dia_why, sizeof dia_why, "more than 64 diagonals for dia");
    else if (info->nnz == 0 || info->dia_diags < 1 || info->dia_fill < 1.0)
        snprintf(dia_why, sizeof dia_why, "no diagonals counted for dia");
    else
        snprintf(dia_why, sizeof dia_why, "dia would pad %.2fx", info->dia_fill);
    snprintf(reason, reason_len, "csr: cpu device, row-parallel CSR is usually best on CPUs "
             "(no padding, no permutation; %s; the gpu rule would pick %s)", dia_why,
             spk_format_str(gpu));
    return SPK_FMT_CSR;
}

spk_status spk_format_check(const spk_matrix_info *info, spk_format fmt, spk_device device,
                            char *why, size_t why_len)
{
    char sink[8];
    if (!why || why_len == 0) {
        why = sink;
        why_len = sizeof sink;
    }
    why[0] = '\0';
    if (!info || (unsigned)fmt >= SPK_FMT_COUNT) {
        snprintf(why, why_len, "no statistics or an unknown format");
        return SPK_ERR_ARG;
    }
    if (fmt == SPK_FMT_ELL && info->ell_fill > SPK_ELL_MAX_FILL) {
        snprintf(why, why_len, "ell: padding %.2fx above the %.0fx limit (use hyb)",
                 info->ell_fill, SPK_ELL_MAX_FILL);
        return SPK_ERR_UNSUPPORTED;
    }
    if (fmt == SPK_FMT_BSR) {
        if (info->bsr_block < SPK_BSR_MIN_D) {
            snprintf(why, why_len, "bsr: the pattern is not made of full d x d blocks (d = %d .. "
                     "%d; use csr or ell)", SPK_BSR_MIN_D, SPK_BSR_MAX_D);
            return SPK_ERR_UNSUPPORTED;
        }
        if (info->bsr_fill > SPK_BSR_MAX_FILL) {
            snprintf(why, why_len, "bsr: block rows pad %.2fx, above the %.0fx limit (use csr)",
                     info->bsr_fill, SPK_BSR_MAX_FILL);
            return SPK_ERR_UNSUPPORTED;
        }
    }
    if (fmt == SPK_FMT_DIA) {
        if (device == SPK_DEVICE_CUDA) {
            snprintf(why, why_len, "dia: the cpu only");
            return SPK_ERR_UNSUPPORTED;
        }
        if (info->dia_diags > SPK_DIA_MAX_DIAGS) {
            snprintf(why, why_len, "dia: more than %d diagonals (use csr)", SPK_DIA_MAX_DIAGS);
            return SPK_ERR_UNSUPPORTED;
        }
        if (info->dia_fill > SPK_DIA_MAX_FILL) {
            snprintf(why, why_len, "dia: %lld diagonals pad %.2fx, above the %.0fx limit (use csr)",
                     (long long)info->dia_diags, info->dia_fill, SPK_DIA_MAX_FILL);
            return SPK_ERR_UNSUPPORTED;
        }
    }
    return SPK_OK;
}
