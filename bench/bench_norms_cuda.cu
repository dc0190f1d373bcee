/* bench_norms_cuda - the device norm plan (examples/cuda/gnmr_norms.cuh)
   against a read probe on the same bytes.

   Cases, each in f32, bf16 and f16:
     gpt2-124m   the parameter list of GPT-2 124M (n_layer 12, n_embd 768,
                 vocab 50257, n_ctx 1024): 148 tensors, 124,439,808 values
     llama-7b    the parameter list of LLaMA-7B (32 layers, dim 4096, FFN
                 11008, vocab 32000): 291 tensors, 6,738,415,616 values
     single      one tensor of 256 MiB, and one of 1 GiB
   Every tensor is its own unit (what clip_grad_norm_'s per-parameter norms
   compute; bench/foreach_norm.py times torch._foreach_norm on the same
   shapes). A case that does not fit in device memory is skipped.

   Each figure is the median of REPS timed runs (CUDA events around the
   plan's launch, or around the probe), after two warm-up runs. The
   probe reads every byte of the case once, 16 bytes per thread per load,
   and keeps nothing: what reading the data costs at best. GB/s = 1e9 B/s.
   After the timing, each case of at most BITS_MAX bytes (all but LLaMA-7B)
   is copied to the host and every norm held to gnmr_unit_norms' bits on
   the CPU ("bits" column: tensors equal / tensors; the exit status is 1 if
   one differs).

   usage: bench_norms_cuda [--csv FILE] [--case NAME]
   Without a CUDA device it says so and exits 0. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "examples/cuda/gnmr_norms.cuh"
#include "examples/cuda/gnmr_device.cuh"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 15
#define BITS_MAX (1ull << 31)

static int failed;
#define CUDA_TRY(call)                                                         \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
              cudaGetErrorString(e_));                                         \
      failed = 1;                                                              \
      goto done;                                                               \
    }                                                                          \
  } while (0)

/* ---- the parameter lists, from the models' configs ---------------------- */

typedef struct shape {
  uint64_t rows, cols; /* cols 1 for vectors */
  uint32_t repeat;     /* this many tensors of the shape */
} shape;

/* GPT-2 124M (Hugging Face gpt2: n_layer 12, n_embd 768, n_head 12,
   vocab_size 50257, n_positions 1024): wte, wpe; per layer ln_1 (w, b),
   attn.c_attn (w 768x2304, b), attn.c_proj (w, b), ln_2 (w, b), mlp.c_fc
   (w 768x3072, b), mlp.c_proj (w 3072x768, b); ln_f (w, b). */
static const shape gpt2[] = {
    {50257, 768, 1}, {1024, 768, 1}, /* wte, wpe */
    {768, 1, 12},    {768, 1, 12},   /* ln_1 weight, bias */
    {768, 2304, 12}, {2304, 1, 12},  /* c_attn */
    {768, 768, 12},  {768, 1, 12},   /* attn c_proj */
    {768, 1, 12},    {768, 1, 12},   /* ln_2 */
    {768, 3072, 12}, {3072, 1, 12},  /* c_fc */
    {3072, 768, 12}, {768, 1, 12},   /* mlp c_proj */
    {768, 1, 1},     {768, 1, 1},    /* ln_f */
};

/* LLaMA-7B (dim 4096, n_layers 32, n_heads 32, hidden 11008, vocab 32000):
   tok_embeddings; per layer wq, wk, wv, wo (4096x4096), w1, w3 (11008x4096),
   w2 (4096x11008), attention_norm, ffn_norm (4096); norm; output. */
static const shape llama[] = {
    {32000, 4096, 1},                     /* tok_embeddings */
    {4096, 4096, 128},                    /* wq, wk, wv, wo x 32 */
    {11008, 4096, 64}, {4096, 11008, 32}, /* w1, w3; w2 */
    {4096, 1, 64},                        /* attention_norm, ffn_norm */
    {4096, 1, 1},      {32000, 4096, 1},  /* norm, output */
};

typedef struct bench_case {
  const char *name;
  const shape *shapes;
  size_t n_shapes;
  uint64_t single; /* bytes of one tensor, when shapes == NULL */
} bench_case;

static const bench_case cases[] = {
    {"gpt2-124m", gpt2, sizeof gpt2 / sizeof gpt2[0], 0},
    {"llama-7b", llama, sizeof llama / sizeof llama[0], 0},
    {"single-256MiB", NULL, 0, 256ull << 20},
    {"single-1GiB", NULL, 0, 1ull << 30},
};

static size_t esize(int dtype) { return dtype == GNMR_DTYPE_F32 ? 4 : 2; }
static const char *dtype_name(int dtype) {
  return dtype == GNMR_DTYPE_F32    ? "f32"
         : dtype == GNMR_DTYPE_BF16 ? "bf16"
                                    : "f16";
}

/* The case's tensors over one arena (offsets 256-byte aligned, as a
   framework's allocator gives); *bytes: the arena size. */
static size_t case_tensors(const bench_case *c, int dtype, gnmr_tensor *t,
                           size_t cap, uint64_t *bytes) {
  size_t nt = 0, k;
  uint64_t off = 0;
  uint32_t r;
  if (!c->shapes) {
    if (t && cap > 0) {
      t[0].data = (const void *)0;
      t[0].n = (size_t)(c->single / esize(dtype));
      t[0].dtype = dtype;
      t[0].unit = 0;
    }
    *bytes = c->single;
    return 1;
  }
  for (k = 0; k < c->n_shapes; k++)
    for (r = 0; r < c->shapes[k].repeat; r++, nt++) {
      const uint64_t n = c->shapes[k].rows * c->shapes[k].cols;
      if (t && nt < cap) {
        t[nt].data = (const void *)(uintptr_t)off;
        t[nt].n = (size_t)n;
        t[nt].dtype = dtype;
        t[nt].unit = (uint32_t)nt;
      }
      off += (n * esize(dtype) + 255) & ~(uint64_t)255;
    }
  *bytes = off;
  return nt;
}

/* ---- device kernels ------------------------------------------------------ */

__global__ void read_probe(const uint4 *p, size_t n16, uint32_t *sink) {
  uint32_t acc = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
#pragma unroll 4
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16;
       i += stride) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u && threadIdx.x == 0x3FF) *sink = acc;
}

/* Finite values of moderate size from a hash of the index. */
__global__ void fill(void *data, int dtype, uint64_t n) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 0x9E3779B1u ^ (uint32_t)(i >> 32);
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 13;
    if (dtype == GNMR_DTYPE_F32)
      ((uint32_t *)data)[i] = (h & 0x807FFFFFu) | (110u + h % 16) << 23;
    else if (dtype == GNMR_DTYPE_BF16)
      ((uint16_t *)data)[i] = (uint16_t)((h & 0x807Fu) | (110u + h % 16) << 7);
    else
      ((uint16_t *)data)[i] = (uint16_t)((h & 0x83FFu) | (5u + h % 16) << 10);
  }
}

static float median(float *x, int n) {
  int i, j;
  for (i = 1; i < n; i++)
    for (j = i; j > 0 && x[j] < x[j - 1]; j--) {
      float t = x[j];
      x[j] = x[j - 1];
      x[j - 1] = t;
    }
  return x[n / 2];
}

/* The case's norms (d_norms, one per tensor) against gnmr_unit_norms on a
   host copy of the arena: how many are bit-identical, or -1 if the copy
   could not be made. */
static long bits_vs_cpu(const gnmr_tensor *t, size_t nt, const char *arena,
                        uint64_t bytes, const float *d_norms) {
  char *host = (char *)malloc(bytes);
  gnmr_tensor *h = (gnmr_tensor *)malloc(nt * sizeof *h);
  float *dev = (float *)malloc(nt * sizeof *dev),
        *ref = (float *)malloc(nt * sizeof *ref);
  long same = -1;
  if (host && h && dev && ref &&
      cudaMemcpy(host, arena, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
      cudaMemcpy(dev, d_norms, nt * sizeof *dev, cudaMemcpyDeviceToHost) ==
          cudaSuccess) {
    for (size_t k = 0; k < nt; k++) {
      h[k] = t[k];
      h[k].data = host + ((const char *)t[k].data - arena);
    }
    if (gnmr_unit_norms(h, nt, ref, (uint32_t)nt) == GNMR_OK) {
      same = 0;
      for (size_t k = 0; k < nt; k++)
        same += memcmp(&dev[k], &ref[k], sizeof(float)) == 0;
    }
  }
  free(host);
  free(h);
  free(dev);
  free(ref);
  return same;
}

int main(int argc, char **argv) {
  const char *only = NULL, *csv_path = NULL;
  FILE *csv = NULL;
  int i, sms = 0, probe_blocks = 0;
  cudaDeviceProp prop;
  cudaStream_t stream = NULL;
  cudaEvent_t ev0 = NULL, ev1 = NULL;
  uint32_t *d_sink = NULL;
  char *arena = NULL;
  float *d_norms = NULL;
  uint64_t arena_bytes = 0;
  size_t max_nt = 0;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) csv_path = argv[++i];
    if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) only = argv[++i];
  }
  if (gnmr_cuda_no_device("bench_norms_cuda")) return GNMR_CUDA_GPU_REQUIRED;
  CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
  sms = prop.multiProcessorCount;
  CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&probe_blocks,
                                                         read_probe, 256, 0));
  probe_blocks *= sms;
  CUDA_TRY(cudaStreamCreate(&stream));
  CUDA_TRY(cudaEventCreate(&ev0));
  CUDA_TRY(cudaEventCreate(&ev1));
  CUDA_TRY(cudaMalloc(&d_sink, sizeof *d_sink));
  if (csv_path) {
    csv = fopen(csv_path, "w");
    if (!csv) {
      perror(csv_path);
      failed = 1;
      goto done;
    }
    fprintf(csv, "case,dtype,tensors,bytes,norms_ms,norms_gbs,probe_ms,"
                 "probe_gbs,ratio,bits_same\n");
  }
  /* One arena and one norms buffer for every case, allocated once: the
     largest case that fits (with 256 MiB to spare); a case that does not
     fit is skipped below. */
  {
    size_t free_b, total_b;
    CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      if (only && strcmp(only, cases[c].name) != 0) continue;
      for (int dtype = 0; dtype < 3; dtype++) {
        uint64_t bytes;
        const size_t nt = case_tensors(&cases[c], dtype, NULL, 0, &bytes);
        if (bytes + (256u << 20) > free_b) continue;
        if (bytes > arena_bytes) arena_bytes = bytes;
        if (nt > max_nt) max_nt = nt;
      }
    }
    if (arena_bytes > 0) CUDA_TRY(cudaMalloc(&arena, arena_bytes));
    if (max_nt > 0) CUDA_TRY(cudaMalloc(&d_norms, max_nt * sizeof(float)));
  }
  printf("bench_norms_cuda on %s (%d SMs), gnmr.h %s, median of %d, "
         "%d blocks an SM at least (GNMR_NORMS_BLOCKS_PER_SM)\n\n",
         prop.name, sms, gnmr_version(), REPS, GNMR_NORMS_BLOCKS_PER_SM);
  printf("| case | dtype | tensors | MB | norms ms | norms GB/s | probe GB/s "
         "| norms/probe | bits |\n|---|---|---|---|---|---|---|---|---|\n");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    if (only && strcmp(only, cases[c].name) != 0) continue;
    for (int dtype = 0; dtype < 3; dtype++) {
      uint64_t bytes;
      const size_t nt = case_tensors(&cases[c], dtype, NULL, 0, &bytes);
      gnmr_tensor *t = (gnmr_tensor *)malloc(nt * sizeof *t);
      gnmr_norms_plan plan;
      float tn[REPS], tp[REPS];
      memset(&plan, 0, sizeof plan);
      if (!t) {
        failed = 1;
        goto done;
      }
      case_tensors(&cases[c], dtype, t, nt, &bytes);
      if (bytes > arena_bytes) {
        printf("| %s | %s | %zu | %.0f | skipped: does not fit (%.0f MB "
               "arena) | | | | |\n",
               cases[c].name, dtype_name(dtype), nt, (double)bytes / 1e6,
               (double)arena_bytes / 1e6);
        free(t);
        continue;
      }
      fill<<<sms * 8, 256, 0, stream>>>(arena, dtype, bytes / esize(dtype));
      CUDA_TRY(cudaGetLastError());
      for (size_t k = 0; k < nt; k++) t[k].data = arena + (uintptr_t)t[k].data;
      if (gnmr_norms_plan_init(&plan, t, nt, (uint32_t)nt) != GNMR_OK) {
        fprintf(stderr, "plan_init failed: %s\n",
                cudaGetErrorString(plan.cuda_error));
        failed = 1;
        goto done;
      }
      for (int r = -2; r < REPS; r++) {
        CUDA_TRY(cudaEventRecord(ev0, stream));
        if (gnmr_norms_enqueue(&plan, NULL, d_norms, stream) != GNMR_OK) {
          fprintf(stderr, "enqueue failed: %s\n",
                  cudaGetErrorString(plan.cuda_error));
          failed = 1;
          goto done;
        }
        CUDA_TRY(cudaEventRecord(ev1, stream));
        CUDA_TRY(cudaEventSynchronize(ev1));
        if (r >= 0) CUDA_TRY(cudaEventElapsedTime(&tn[r], ev0, ev1));
      }
      for (int r = -2; r < REPS; r++) {
        CUDA_TRY(cudaEventRecord(ev0, stream));
        read_probe<<<probe_blocks, 256, 0, stream>>>((const uint4 *)arena,
                                                     bytes / 16, d_sink);
        CUDA_TRY(cudaGetLastError());
        CUDA_TRY(cudaEventRecord(ev1, stream));
        CUDA_TRY(cudaEventSynchronize(ev1));
        if (r >= 0) CUDA_TRY(cudaEventElapsedTime(&tp[r], ev0, ev1));
      }
      {
        const double ms = median(tn, REPS), pms = median(tp, REPS);
        const double gbs = (double)bytes / (ms * 1e6),
                     pgbs = (double)bytes / (pms * 1e6);
        const long same =
            bytes <= BITS_MAX ? bits_vs_cpu(t, nt, arena, bytes, d_norms) : -2;
        char bits[48];
        if (same == -2)
          snprintf(bits, sizeof bits, "not checked (size)");
        else
          snprintf(bits, sizeof bits, "%ld/%zu%s", same, nt,
                   same == (long)nt ? "" : " DIFFER");
        if (same != -2 && same != (long)nt) failed = 1;
        printf("| %s | %s | %zu | %.0f | %.3f | %.0f | %.0f | %.1f%% | %s |\n",
               cases[c].name, dtype_name(dtype), nt, (double)bytes / 1e6, ms,
               gbs, pgbs, 100.0 * gbs / pgbs, bits);
        if (csv)
          fprintf(csv, "%s,%s,%zu,%llu,%.4f,%.1f,%.4f,%.1f,%.4f,%ld\n",
                  cases[c].name, dtype_name(dtype), nt,
                  (unsigned long long)bytes, ms, gbs, pms, pgbs, gbs / pgbs,
                  same);
      }
      gnmr_norms_plan_free(&plan);
      free(t);
    }
  }
done:
  if (csv) fclose(csv);
  if (arena) cudaFree(arena);
  if (d_norms) cudaFree(d_norms);
  if (d_sink) cudaFree(d_sink);
  if (ev0) cudaEventDestroy(ev0);
  if (ev1) cudaEventDestroy(ev1);
  if (stream) cudaStreamDestroy(stream);
  return failed;
}
