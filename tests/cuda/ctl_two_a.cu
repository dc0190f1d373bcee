/* Two .cu files that both include gnmr_ctl.cuh, linked into one program
   (make cuda builds it: no duplicate symbols). Where a GPU is present it
   steps from this file and from ctl_two_b.cu in turn, reads the device-side
   recovering flag from a kernel here, and checks both against gnmr_step. */
#define GNMR_STATIC
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "examples/cuda/gnmr_ctl.cuh"

#include <stdio.h>

#define N 64

cudaError_t two_b_step(const gnmr_cuda_ctl *d, const float *norms,
                       gnmr_decision *out, cudaStream_t s);

__global__ void flags_of(const gnmr_ctl *ctl, int *out) {
  if (threadIdx.x < N)
    out[threadIdx.x] = gnmr_cuda_recovering(ctl, threadIdx.x);
}

int main(void) {
  gnmr_slot sa[N], sb[N];
  gnmr_ctl a, b;
  gnmr_cuda_ctl dev;
  gnmr_config cfg = gnmr_config_paper();
  float x[N], *d_x;
  int rec[N], *d_rec, count = 0, step, u, bad = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    printf("ctl_two_files: skipped: no CUDA device\n0 passed, 0 failed\n");
    return 0;
  }
  cfg.max_recovering = 3;
  cfg.warmup_steps = 2;
  if (gnmr_init(&a, &cfg, sa, N) || gnmr_init(&b, &cfg, sb, N) ||
      gnmr_cuda_ctl_create(&dev, &b) != cudaSuccess ||
      cudaMalloc((void **)&d_x, sizeof x) != cudaSuccess ||
      cudaMalloc((void **)&d_rec, sizeof rec) != cudaSuccess)
    return 1;
  for (step = 0; step < 40; step++) {
    for (u = 0; u < N; u++)
      x[u] = 1.0f + 0.01f * (float)((u * 7 + step * 3) % 11) +
             ((u + step) % 17 == 0 ? 30.0f : 0.0f);
    gnmr_step(&a, x, NULL);
    if (cudaMemcpy(d_x, x, sizeof x, cudaMemcpyHostToDevice) != cudaSuccess ||
        (step % 2 ? two_b_step(&dev, d_x, NULL, 0)
                  : gnmr_cuda_step(&dev, d_x, NULL, 0)) != cudaSuccess)
      return 1;
    flags_of<<<1, N>>>(dev.ctl, d_rec);
    if (cudaMemcpy(rec, d_rec, sizeof rec, cudaMemcpyDeviceToHost) !=
        cudaSuccess)
      return 1;
    for (u = 0; u < N; u++) bad |= rec[u] != gnmr_recovering(&a, (uint32_t)u);
  }
  printf("%s two_files_step_as_the_cpu\n%d passed, %d failed\n",
         bad ? "FAIL" : "ok  ", !bad, bad);
  gnmr_cuda_ctl_destroy(&dev);
  cudaFree(d_x);
  cudaFree(d_rec);
  return bad;
}
