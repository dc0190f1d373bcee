/* The calls between the two files of tests/cuda/ctl_two_*.cu. */
#ifndef CTL_TWO_H
#define CTL_TWO_H
#include "gnmr.h"
#include "examples/cuda/gnmr_ctl.cuh"
#include "examples/cuda/gnmr_norms.cuh"

/* gnmr_norms_plan_init / _free, from the second file. */
int two_b_plan(gnmr_norms_plan *plan, const gnmr_tensor *t, size_t nt,
               uint32_t n_units);
void two_b_plan_free(gnmr_norms_plan *plan);
/* One step from the second file, on stream s: the unit norms by the plan
   into d_norms, the controller's step (decisions into d_out), its report
   into d_report, and d_rec[u] = gnmr_cuda_recovering(gc->lock, u). */
int two_b_step(gnmr_cuda_ctl *gc, gnmr_norms_plan *plan, float *d_norms,
               gnmr_decision *d_out, gnmr_step_report *d_report, int *d_rec,
               cudaStream_t s);
#endif
