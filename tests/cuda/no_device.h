/* no_device.h - the first check of every CUDA test and benchmark:
   no_cuda_device(name, runner) is 0 where a device is usable; otherwise it
   says why (the CUDA error: a driver older than the runtime reads
   "CUDA driver version is insufficient ...") and is 1, and the program
   ends with NO_DEVICE_EXIT: 0, a skip, by default, so CPU-only machines
   build and pass; 1 where GNMR_REQUIRE_GPU is set, as make gpu-check sets
   it on a machine with a GPU, so that a refused device fails there instead
   of passing with nothing run. runner: also print the test runners' last
   line. */
#ifndef GNMR_TESTS_NO_DEVICE_H
#define GNMR_TESTS_NO_DEVICE_H
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#define NO_DEVICE_EXIT (getenv("GNMR_REQUIRE_GPU") != NULL)

static int no_cuda_device(const char *name, int runner) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaSuccess && count > 0) return 0;
  printf("%s: no CUDA device (%s): %s\n", name,
         e != cudaSuccess ? cudaGetErrorString(e) : "0 devices",
         NO_DEVICE_EXIT ? "FAILED, GNMR_REQUIRE_GPU is set" : "skipped");
  if (runner) printf("0 passed, %d failed\n", NO_DEVICE_EXIT);
  return 1;
}
#endif
