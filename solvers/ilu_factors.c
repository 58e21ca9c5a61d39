/* solvers/ilu_factors.c -- what every incomplete factorization's factors share (solvers/ilu.h). */
#include "ilu.h"

#include <string.h>

void spk_ilu_factors_free(spk_ilu_factors *F)
{
    if (!F)
        return;
    spk_csr_free(&F->L);
    spk_csr_free(&F->U);
    spk_free(F->perm);
    memset(F, 0, sizeof *F);
}
