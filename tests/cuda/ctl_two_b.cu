/* Second file of a two-file program using gnmr_ctl.cuh (see ctl_two_a.cu):
   its own private copy of gnmr.h (GNMR_STATIC) and of the kernels. */
#define GNMR_STATIC
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "examples/cuda/gnmr_ctl.cuh"

/* Steps the controller from this file: the kernels of this file's copy. */
cudaError_t two_b_step(const gnmr_cuda_ctl *d, const float *norms,
                       gnmr_decision *out, cudaStream_t s) {
  return gnmr_cuda_step(d, norms, out, s);
}
