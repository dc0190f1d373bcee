/* gnmr_device.cuh - two things every program that uses the CUDA headers
   (gnmr_norms.cuh, gnmr_ctl.cuh) may want, shared by the project's CUDA
   example, tests and benchmarks: is a CUDA device there, and what to say
   when the device's bits are not the CPU's. Host code only, nvcc only.

   gnmr_cuda_no_device(name) is 0 where a CUDA device is usable. Otherwise
   it prints one line, "no CUDA device" first and the CUDA error second:
       NAME: no CUDA device, skipped (no NVIDIA driver is installed; CUDA
       error: CUDA driver version is insufficient for CUDA runtime version)
   and is 1. On a machine without an NVIDIA driver CUDA reports the
   missing driver as a driver "insufficient" for the runtime: the line
   says which it is (no driver; a driver older than the runtime; a driver
   that sees no device). Where the environment sets GNMR_REQUIRE_GPU (make
   gpu-check does, on a machine that has a GPU) the line says FAILED
   instead of skipped, and GNMR_CUDA_GPU_REQUIRED is 1: the program's exit
   status, so that a refused device fails there instead of passing with
   nothing run.

   GNMR_CUDA_BITS_HINT: what a program prints when the device's norms or
   decisions differ from the CPU's. The headers refuse --use_fast_math and
   --ftz=true at build time, but nvcc lets no header see --fmad: it defines
   no macro for it (nvcc 13.0: the same predefined macros with
   --fmad=true and --fmad=false) and NVVM answers no query about it, so a
   build without --fmad=false compiles and may give other bits. */
#ifndef GNMR_DEVICE_CUH
#define GNMR_DEVICE_CUH

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define GNMR_CUDA_GPU_REQUIRED (getenv("GNMR_REQUIRE_GPU") != NULL)

#define GNMR_CUDA_BITS_HINT                                                    \
  "the device gives the CPU's bits only when built with nvcc --fmad=false "    \
  "-Xcompiler -ffp-contract=off and without --use_fast_math (nvcc lets no "    \
  "header check --fmad)"

static inline int gnmr_cuda_no_device(const char *name) {
  int count = 0, driver = 0, runtime = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  char why[96];
  if (e == cudaSuccess && count > 0) return 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = -1;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  if (e == cudaSuccess)
    snprintf(why, sizeof why, "the driver sees no device");
  else if (driver == 0)
    snprintf(why, sizeof why, "no NVIDIA driver is installed; ");
  else if (e == cudaErrorInsufficientDriver && driver > 0)
    snprintf(why, sizeof why,
             "the NVIDIA driver's CUDA %d.%d is older than the runtime's "
             "%d.%d; ",
             driver / 1000, driver % 1000 / 10, runtime / 1000,
             runtime % 1000 / 10);
  else
    why[0] = '\0';
  printf("%s: no CUDA device, %s (%s%s%s)\n", name,
         GNMR_CUDA_GPU_REQUIRED ? "FAILED: GNMR_REQUIRE_GPU is set" : "skipped",
         why, e == cudaSuccess ? "" : "CUDA error: ",
         e == cudaSuccess ? "" : cudaGetErrorString(e));
  return 1;
}
#endif /* GNMR_DEVICE_CUH */
