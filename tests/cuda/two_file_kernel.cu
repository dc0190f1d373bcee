/* The second file of the two-file CUDA build (tests/cuda/two_file_main.cu
   is the first): device code that calls gnmr_recovering and the public
   f16/bf16 conversions from a file that does not hold the implementation,
   and includes gnmr_norms.cuh as well (its kernels are static: one copy per
   file, no clash at link time).

   gnmr_recovering is defined once, in the implementation's file: this file
   is built with relocatable device code (nvcc -rdc=true) and linked with
   it. Built with -DTWO_FILE_STATIC instead, it defines GNMR_STATIC and
   GNMR_IMPLEMENTATION itself and needs no -rdc: a private copy. The
   conversions are inline and need neither. */
#ifdef TWO_FILE_STATIC
#define GNMR_STATIC
#define GNMR_IMPLEMENTATION
#endif
#include "gnmr.h"
#include "examples/cuda/gnmr_norms.cuh"
#include "tests/cuda/two_file.h"
#include "tests/cuda/regions.h"

/* out[u] = gnmr_recovering(ctl, u); conv[i] = element i of bf16[] and then
   of f16[], converted on the device. */
static __global__ void read_units(const gnmr_ctl *ctl, int *out,
                                  const uint16_t *bf16, const uint16_t *f16,
                                  uint32_t n_halves, float *conv) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < ctl->n_units) out[i] = gnmr_recovering(ctl, i);
  if (i < n_halves) {
    conv[i] = gnmr_bf16_to_f32(bf16[i]);
    conv[n_halves + i] = gnmr_f16_to_f32(f16[i]);
  }
}

int two_file_launch(const gnmr_ctl *d_ctl, uint32_t n_units, int *d_out,
                    const uint16_t *d_bf16, const uint16_t *d_f16,
                    uint32_t n_halves, float *d_conv, cudaStream_t stream) {
  const uint32_t n = n_units > n_halves ? n_units : n_halves;
  if (!region_aligned(d_out, sizeof *d_out) ||
      !region_aligned(d_conv, sizeof *d_conv))
    return -1;
  read_units<<<(n + 127) / 128, 128, 0, stream>>>(d_ctl, d_out, d_bf16, d_f16,
                                                  n_halves, d_conv);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
