/* The two-file CUDA build: this file holds the implementation
   (GNMR_IMPLEMENTATION); tests/cuda/two_file_kernel.cu, built separately,
   holds a kernel that calls gnmr_recovering and the f16/bf16 conversions.
   Both include gnmr_norms.cuh and both use it. `make cuda` builds the pair
   twice: with relocatable device code (nvcc -rdc=true, gnmr_recovering
   defined here only) and with GNMR_STATIC in both files (no -rdc: each
   file its own copy). `make cuda-test` runs them.

   Checks: the second file's kernel reads, on the device, the same
   recovering units as gnmr_recovering on the host, and the same converted
   values as the host's conversions; a norm plan made in this file gives
   gnmr_unit_norms' bits. Without a CUDA device it says so and exits 0. */
#ifdef TWO_FILE_STATIC
#define GNMR_STATIC
#endif
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "examples/cuda/gnmr_norms.cuh"
#include "tests/cuda/two_file.h"
#include "tests/cuda/no_device.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define N_UNITS 40
#define N_HALVES 6

static int fails;
#define CHECK(cond, what)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("FAIL %s (%s:%d)\n", what, __FILE__, __LINE__);                   \
      fails++;                                                                 \
    }                                                                          \
  } while (0)
#define CUDA_OK(call) CHECK((call) == cudaSuccess, #call)

int main(void) {
  static const uint16_t bf16[N_HALVES] = {0x3F80u, 0x0001u, 0xC2F7u,
                                          0x7F80u, 0x7FC1u, 0x8000u};
  static const uint16_t f16[N_HALVES] = {0x3C00u, 0x0001u, 0x03FFu,
                                         0xFBFFu, 0x7C00u, 0x7E01u};
  int host_rec[N_UNITS], dev_rec[N_UNITS], recovering = 0;
  float conv[2 * N_HALVES], norms[N_UNITS], ref[N_UNITS];
  gnmr_slot units[N_UNITS];
  gnmr_ctl ctl, *d_ctl = NULL;
  gnmr_config cfg = gnmr_config_paper(); /* recoveries within 12 steps */
  gnmr_tensor t[3];
  gnmr_norms_plan plan;
  float values[5000];
  uint32_t s, u;
  if (no_cuda_device("two_file", 1)) return NO_DEVICE_EXIT;
  /* a controller with some units in recovery */
  cfg.max_recovering = 4;
  cfg.warmup_steps = 2;
  CHECK(gnmr_init(&ctl, &cfg, units, N_UNITS) == GNMR_OK, "gnmr_init");
  for (s = 0; s < 12; s++) {
    float g[N_UNITS];
    for (u = 0; u < N_UNITS; u++) g[u] = s == 10 && u % 7 == 3 ? 50.0f : 1.0f;
    CHECK(gnmr_step(&ctl, g, NULL) == GNMR_OK, "gnmr_step");
  }
  for (u = 0; u < N_UNITS; u++) {
    host_rec[u] = gnmr_recovering(&ctl, u);
    recovering += host_rec[u] == 1;
  }
  CHECK(recovering > 0, "some unit in recovery");

  /* the controller on the device, read by the other file's kernel */
  gnmr_ctl dev = ctl;
  gnmr_slot *d_units = NULL;
  uint16_t *d_bf16 = NULL, *d_f16 = NULL;
  int *d_rec = NULL;
  float *d_conv = NULL, *d_values = NULL, *d_norms = NULL;
  CUDA_OK(cudaMalloc(&d_units, sizeof units));
  CUDA_OK(cudaMemcpy(d_units, units, sizeof units, cudaMemcpyHostToDevice));
  dev.units = d_units;
  CUDA_OK(cudaMalloc(&d_ctl, sizeof dev));
  CUDA_OK(cudaMemcpy(d_ctl, &dev, sizeof dev, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMalloc(&d_bf16, sizeof bf16));
  CUDA_OK(cudaMalloc(&d_f16, sizeof f16));
  CUDA_OK(cudaMemcpy(d_bf16, bf16, sizeof bf16, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_f16, f16, sizeof f16, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMalloc(&d_rec, sizeof dev_rec));
  CUDA_OK(cudaMalloc(&d_conv, sizeof conv));
  CHECK(two_file_launch(d_ctl, N_UNITS, d_rec, d_bf16, d_f16, N_HALVES, d_conv,
                        0) == 0,
        "two_file_launch");
  CUDA_OK(cudaMemcpy(dev_rec, d_rec, sizeof dev_rec, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(conv, d_conv, sizeof conv, cudaMemcpyDeviceToHost));
  CHECK(memcmp(dev_rec, host_rec, sizeof dev_rec) == 0,
        "gnmr_recovering on the device = on the host");
  for (u = 0; u < N_HALVES; u++) {
    float b = gnmr_bf16_to_f32(bf16[u]), h = gnmr_f16_to_f32(f16[u]);
    CHECK(memcmp(&conv[u], &b, 4) == 0, "gnmr_bf16_to_f32 device = host");
    CHECK(memcmp(&conv[N_HALVES + u], &h, 4) == 0,
          "gnmr_f16_to_f32 device = host");
  }

  /* a norm plan from this file */
  for (u = 0; u < 5000; u++) values[u] = (float)u * 0.25f - 300.0f;
  CUDA_OK(cudaMalloc(&d_values, sizeof values));
  CUDA_OK(cudaMalloc(&d_norms, sizeof norms));
  CUDA_OK(cudaMemcpy(d_values, values, sizeof values, cudaMemcpyHostToDevice));
  t[0].data = d_values;
  t[0].n = 5000;
  t[0].dtype = GNMR_DTYPE_F32;
  t[0].unit = 2;
  t[1] = t[0];
  t[1].n = 33;
  t[1].unit = 0;
  t[2] = t[0];
  t[2].data = d_values + 100;
  t[2].n = 4097;
  t[2].unit = 2;
  CHECK(gnmr_norms_plan_init(&plan, t, 3, N_UNITS) == GNMR_OK, "plan_init");
  CHECK(gnmr_norms_enqueue(&plan, NULL, d_norms, 0) == GNMR_OK, "enqueue");
  CUDA_OK(cudaMemcpy(norms, d_norms, sizeof norms, cudaMemcpyDeviceToHost));
  t[0].data = values;
  t[1].data = values;
  t[2].data = values + 100;
  CHECK(gnmr_unit_norms(t, 3, ref, N_UNITS) == GNMR_OK, "gnmr_unit_norms");
  CHECK(memcmp(norms, ref, sizeof norms) == 0, "plan norms = CPU norms");
  gnmr_norms_plan_free(&plan);

  cudaFree(d_units);
  cudaFree(d_ctl);
  cudaFree(d_bf16);
  cudaFree(d_f16);
  cudaFree(d_rec);
  cudaFree(d_conv);
  cudaFree(d_values);
  cudaFree(d_norms);
  printf("two_file%s: %u units (%d recovering), %d failure(s)\n",
#ifdef TWO_FILE_STATIC
         " (GNMR_STATIC)",
#else
         " (-rdc)",
#endif
         N_UNITS, recovering, fails);
  printf("%d passed, %d failed\n", fails ? 0 : 1, fails ? 1 : 0);
  return fails ? 1 : 0;
}
