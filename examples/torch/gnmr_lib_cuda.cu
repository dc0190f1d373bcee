/* gnmr_lib_cuda.cu - examples/cuda/gnmr_norms.cuh as a shared library for
   examples/torch/gnmr_torch.py (make libgnmr builds build/libgnmr_cuda.so
   from it where nvcc is installed). The gradients stay on the device: the
   plan's kernels write one float per unit into a device buffer the caller
   owns (a torch tensor), on the caller's stream, with the bits gnmr.h's
   gnmr_unit_norms gives on the CPU. Only those n_units floats cross to the
   host, for gnmr_step (or, sharded, n_units double sums of squares, after
   the job's all-reduce). */
#include "examples/cuda/gnmr_norms.cuh"

#define GNMR_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

/* A plan over nt tensors of device memory (tensors[i].data), in *out; free
   it with gnmr_cuda_plan_free. Returns GNMR_OK, GNMR_EINVAL, GNMR_ESIZE or
   GNMR_CUDA_ECUDA (gnmr_cuda_error_string says which CUDA error; *out is
   then a plan holding only that error, to be freed as well). */
GNMR_CUDA_EXPORT int gnmr_cuda_plan_new(const gnmr_tensor *tensors, size_t nt,
                                        uint32_t n_units, void **out) {
  gnmr_norms_plan *plan;
  int rc;
  if (!out) return GNMR_EINVAL;
  *out = NULL;
  plan = (gnmr_norms_plan *)calloc(1, sizeof *plan);
  if (!plan) return GNMR_ESIZE;
  rc = gnmr_norms_plan_init(plan, tensors, nt, n_units);
  *out = plan;
  return rc;
}

GNMR_CUDA_EXPORT void gnmr_cuda_plan_free(void *plan) {
  gnmr_norms_plan_free((gnmr_norms_plan *)plan);
  free(plan);
}

/* norms: device memory, the plan's n_units floats; stream: a cudaStream_t
   (NULL: the legacy default stream). Launches only: no host sync. */
GNMR_CUDA_EXPORT int gnmr_cuda_norms(void *plan, float *norms, void *stream) {
  if (!plan || !norms) return GNMR_EINVAL;
  return gnmr_norms_enqueue((gnmr_norms_plan *)plan, NULL, norms,
                            (cudaStream_t)stream);
}

/* sumsq: device memory, the plan's n_units doubles (each unit's sum of
   squares, the vector a sharded job all-reduces); as gnmr_cuda_norms. */
GNMR_CUDA_EXPORT int gnmr_cuda_sumsq(void *plan, double *sumsq, void *stream) {
  if (!plan || !sumsq) return GNMR_EINVAL;
  return gnmr_norms_enqueue((gnmr_norms_plan *)plan, sumsq, NULL,
                            (cudaStream_t)stream);
}

/* The CUDA error behind the last GNMR_CUDA_ECUDA of this plan. */
GNMR_CUDA_EXPORT const char *gnmr_cuda_error_string(const void *plan) {
  if (!plan) return "no plan";
  return cudaGetErrorString(((const gnmr_norms_plan *)plan)->cuda_error);
}
