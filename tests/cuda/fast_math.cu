/* fast_math.cu - make cuda builds this with nvcc --use_fast_math, once with
   each CUDA header (-DFAST_MATH_NORMS, -DFAST_MATH_CTL), and expects the
   build to fail naming gnmr_cuda_needs_ieee_floats_build_without_use_fast_math:
   the headers need IEEE floats (subnormals kept, no fused multiply-add) to
   give gnmr.h's bits, and refuse a build that would not. Never run. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#if defined(FAST_MATH_NORMS)
#include "examples/cuda/gnmr_norms.cuh"
#else
#define GNMR_CUDA_IMPLEMENTATION
#include "examples/cuda/gnmr_ctl.cuh"
#endif

int main(void) {
#if defined(FAST_MATH_NORMS)
  gnmr_norms_plan plan;
  memset(&plan, 0, sizeof plan);
  return gnmr_norms_enqueue(&plan, NULL, NULL, 0);
#else
  gnmr_cuda_ctl gc;
  memset(&gc, 0, sizeof gc);
  return gnmr_cuda_step(&gc, NULL, NULL, 0);
#endif
}
