/* no_device.h - the first check of every CUDA test: no_cuda_device(name,
   runner) is examples/cuda/gnmr_device.cuh's gnmr_cuda_no_device (0 where a
   device is usable, else it says why and is 1), and with runner also the
   test runners' last line; the program then ends with NO_DEVICE_EXIT: 0, a
   skip, by default, so CPU-only machines build and pass; 1 where
   GNMR_REQUIRE_GPU is set, as make gpu-check sets it on a machine with a
   GPU. */
#ifndef GNMR_TESTS_NO_DEVICE_H
#define GNMR_TESTS_NO_DEVICE_H
#include "examples/cuda/gnmr_device.cuh"
#define NO_DEVICE_EXIT GNMR_CUDA_GPU_REQUIRED

static int no_cuda_device(const char *name, int runner) {
  if (!gnmr_cuda_no_device(name)) return 0;
  if (runner) printf("0 passed, %d failed\n", NO_DEVICE_EXIT);
  return 1;
}
#endif
