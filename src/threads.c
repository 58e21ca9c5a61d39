/* src/threads.c -- the CPU's OpenMP thread count during a solve, fitted to the cores that are
 * really free. A parallel loop with a static schedule waits for its slowest thread: with one
 * core of two taken by another process, the thread that shares it gets a scheduler time slice
 * now and then, and every loop waits for it (CG on poisson3d:64, 2 cores: 1.0 ms per iteration
 * idle, 15.6 ms with one core busy and GNU OpenMP's spinning idle threads). So a solve on the
 * CPU times its iterations under a few thread counts (all, all but one, half, one), keeps the
 * fastest, and tries them again now and then, further apart while the choice holds. A round
 * starts with the last choice (the first round with one thread, the safe guess), so a count
 * that is slower stops after two iterations: on a loaded machine a round costs two slow
 * iterations, not a window. The sums do not depend on the thread count (src/spk_internal.h),
 * so neither do the iterates.
 *
 * A probe times PROBE_WINDOW iterations, or as many as took PROBE_SECONDS (at least
 * PROBE_MIN): an AMG-CG iteration of a million unknowns takes some 40 ms on one core, and
 * eight of them on one thread were a third of a 13-iteration solve on an idle machine. The
 * fit is the solver's: a later solve starts on the count the earlier ones chose and goes on
 * counting towards the next round, so a finite-element loop of short solves does not pay a
 * first round on one thread at every solve.
 * The caller's own thread count is put back at the end of the solve. */
#include "spk_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define PROBE_WINDOW 8          /* iterations a thread count is timed over (GMRES: a cycle)   */
#define PROBE_SECONDS 0.02      /* ... or fewer, once they took this long (not GMRES's cycle)  */
#define PROBE_MIN 2             /* ... but never fewer than this                              */
#define PROBE_FIRST 128         /* iterations between the first two rounds of probes          */
#define PROBE_MAX 4096          /* ... growing twofold while the choice holds, up to this     */
#define PROBE_ABORT 1.5         /* a probe slower than this times the best so far stops early  */

#ifdef _OPENMP
/* The candidate the fit runs now: the one a round is timing, else the choice. */
static int current(const spk_threads *t)
{
    if (t->probe < 0)
        return t->chosen;
    return (t->prev < 0 ? t->chosen : t->prev + t->probe) % t->ncand;
}
#endif

void spk_threads_begin(spk_threads *t, spk_device dev, int64_t n, int64_t window)
{
    t->active = 0;
#ifdef _OPENMP
    t->saved = omp_get_max_threads();
    if (dev != SPK_DEVICE_CPU || n <= SPK_OMP_MIN_N || t->saved < 2 || omp_in_parallel())
        return;
    const int64_t w = window > 0 ? window : PROBE_WINDOW;
    t->active = 1;
    t->it0 = -1;                 /* the solve's first record starts the clock */
    if (t->fit_for == t->saved && t->window == w) {
        omp_set_num_threads(t->cand[current(t)]);    /* an earlier solve's fit goes on */
        return;
    }
    const int p = t->saved;
    const int want[4] = {p, p - 1, p / 2, 1};
    t->ncand = 0;
    for (int i = 0; i < 4; i++) {
        int dup = want[i] < 1;
        for (int j = 0; j < t->ncand; j++)
            dup |= t->cand[j] == want[i];
        if (!dup)
            t->cand[t->ncand++] = want[i];
    }
    t->fit_for = p;
    t->window = w;
    t->window_s = window > 0 ? 0.0 : PROBE_SECONDS;
    t->chosen = t->ncand - 1;    /* one thread */
    t->probe = 0;
    t->interval = PROBE_FIRST;
    t->ran = 0;
    t->best = 0.0;
    t->prev = -1;
    omp_set_num_threads(t->cand[t->chosen]);
#else
    (void)dev;
    (void)n;
    (void)window;
#endif
}

void spk_threads_tick(spk_threads *t, int64_t it, double now)
{
#ifdef _OPENMP
    if (!t->active)
        return;
    t->last = it;
    if (t->it0 < 0) {            /* the first record: time from here */
        t->it0 = it;
        t->t0 = now;
        return;
    }
    const int64_t done = it - t->it0;
    if (t->probe < 0) {          /* running the choice: time for the next round? */
        if (t->ran + done >= t->interval) {
            t->probe = 0;
            t->ran = 0;
            t->best = 0.0;
            t->prev = t->chosen;
            t->it0 = it;
            t->t0 = now;
        }
        return;
    }
    /* the round's step `probe` times candidate (prev + probe) mod ncand: the last choice first */
    const int c = current(t);
    const double per = done > 0 ? (now - t->t0) / (double)done : 0.0;
    const int over = t->best > 0 && done >= 2 && per > PROBE_ABORT * t->best;
    const int timed = done >= t->window ||
                      (t->window_s > 0 && done >= PROBE_MIN && now - t->t0 >= t->window_s);
    if (!timed && !over)
        return;
    if (!over && (t->best == 0.0 || per < t->best)) {
        t->best = per;
        t->chosen = c;
    }
    t->it0 = it;
    t->t0 = now;
    if (t->prev < 0)
        t->prev = c;             /* the first round: its start is its "last choice" */
    if (++t->probe < t->ncand) {
        omp_set_num_threads(t->cand[current(t)]);
        return;
    }
    t->probe = -1;               /* the round is over: run the fastest */
    omp_set_num_threads(t->cand[t->chosen]);
    t->interval = t->chosen == t->prev && t->interval < PROBE_MAX ? 2 * t->interval : PROBE_FIRST;
    t->prev = t->chosen;
#else
    (void)t;
    (void)it;
    (void)now;
#endif
}

void spk_threads_end(spk_threads *t)
{
#ifdef _OPENMP
    if (t->active && t->probe < 0 && t->it0 >= 0)
        t->ran += t->last - t->it0;                  /* towards the next round */
    if (t->active)
        omp_set_num_threads(t->saved);
    t->active = 0;
#else
    (void)t;
#endif
}

int spk_threads_now(const spk_threads *t)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    (void)t;
    return 1;
#endif
}

int spk_omp_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int spk_omp_thread(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
