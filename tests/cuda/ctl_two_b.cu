/* Second file of the two-file program (see ctl_two_a.cu): it holds neither
   gnmr.h's implementation nor the controller's, and is built without -rdc.
   It uses the norm plan (gnmr_norms.cuh: all static, a copy per file), the
   controller's host functions (defined once, in ctl_two_a.cu) and the
   device-side recovering read. */
#include "gnmr.h"
#include "examples/cuda/gnmr_ctl.cuh"
#include "examples/cuda/gnmr_norms.cuh"

#include "tests/cuda/ctl_two.h"
#include "tests/cuda/regions.h"

/* out[u] = 1 if unit u runs high-fidelity next step. */
static __global__ void recovering_of(const uint32_t *lock, uint32_t n,
                                     int *out) {
  const uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;
  if (u < n) out[u] = gnmr_cuda_recovering(lock, u);
}

int two_b_plan(gnmr_norms_plan *plan, const gnmr_tensor *t, size_t nt,
               uint32_t n_units) {
  return gnmr_norms_plan_init(plan, t, nt, n_units);
}

void two_b_plan_free(gnmr_norms_plan *plan) { gnmr_norms_plan_free(plan); }

int two_b_step(gnmr_cuda_ctl *gc, gnmr_norms_plan *plan, float *d_norms,
               gnmr_decision *d_out, gnmr_step_report *d_report, int *d_rec,
               cudaStream_t s) {
  int rc = gnmr_norms_enqueue(plan, NULL, d_norms, s);
  if (rc == GNMR_OK) rc = gnmr_cuda_step(gc, d_norms, d_out, s);
  if (rc == GNMR_OK) rc = gnmr_cuda_report_async(gc, d_report, s);
  if (rc != GNMR_OK) return rc;
  if (!region_aligned(d_rec, sizeof *d_rec)) return GNMR_EINVAL;
  if (gc->n_units > 0)
    recovering_of<<<(gc->n_units + 127) / 128, 128, 0, s>>>(gc->lock,
                                                            gc->n_units, d_rec);
  return cudaGetLastError() == cudaSuccess ? GNMR_OK : GNMR_CUDA_ECUDA;
}
