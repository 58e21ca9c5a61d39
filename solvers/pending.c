/* solvers/pending.c -- TEMPORARY: BiCGStab and GMRES land in their own files; until then the
 * methods answer SPK_ERR_NOT_COMPILED. Delete this file when bicgstab.c and gmres.c exist. */
#include "solver.h"

spk_status spk_bicgstab(spk_krylov *k, const double *b, double *x)
{
    return spk_fail(k->ctx, SPK_ERR_NOT_COMPILED, "bicgstab is not built yet");
}

spk_status spk_gmres(spk_krylov *k, const double *b, double *x)
{
    return spk_fail(k->ctx, SPK_ERR_NOT_COMPILED, "gmres is not built yet");
}
