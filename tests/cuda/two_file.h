/* The call between the two files of the two-file CUDA build. */
#ifndef TWO_FILE_H
#define TWO_FILE_H
#include <cuda_runtime.h>
#include <stdint.h>

/* Launches, on stream, a kernel of two_file_kernel.cu that writes
   d_out[u] = gnmr_recovering(d_ctl, u) for u < n_units and, for i <
   n_halves, d_conv[i] = gnmr_bf16_to_f32(d_bf16[i]) and d_conv[n_halves +
   i] = gnmr_f16_to_f32(d_f16[i]). 0, or -1 if the launch failed. */
int two_file_launch(const gnmr_ctl *d_ctl, uint32_t n_units, int *d_out,
                    const uint16_t *d_bf16, const uint16_t *d_f16,
                    uint32_t n_halves, float *d_conv, cudaStream_t stream);
#endif
