/* bench_ctl_cuda.cu - device time per step of the CUDA controller
   (examples/cuda/gnmr_ctl.cuh), graph-launched.

   For 1,024 and 65,536 units (or --units N), both rule sets (PAPER, the
   default, and NOISE), calm inputs (every norm within 10% of 1) and spiky
   ones (one unit in 13 at 40x, so the admission select runs), with
   decisions written and without: one CUDA graph of STEPS steps
   cycling over POOL norm vectors, launched REPEATS times; the figure is the
   median (min, max) of the launches' event time over STEPS. Beside them,
   the anchor that needs no PyTorch: the same graph of empty launches of
   the step's shapes (the floor no step can go under), and the targets of
   the default rules (bench/RESULTS.md). Skips where no CUDA device is
   present. Build: make cuda; run: make cuda-bench. */
#define GNMR_STATIC
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#define GNMR_CUDA_IMPLEMENTATION
#include "examples/cuda/gnmr_ctl.cuh"
#include "examples/cuda/gnmr_device.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 200
#define POOL 16
#define REPEATS 9

#define GK(call)                                                               \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != GNMR_OK) {                                                      \
      fprintf(stderr, "%s:%d: %s: %d\n", __FILE__, __LINE__, #call, rc_);      \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
              cudaGetErrorString(e_));                                         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static uint64_t rng = 0x243F6A8885A308D3ull;
static double uniform(void) {
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* The anchor: what the same graph costs with the step's launches doing
   nothing (one empty block of 1,024 threads for a one-launch step, four
   empty kernels of the step's shapes above GNMR_CUDA_FUSED_MAX, and the
   grid select's passes and rule 7 instead of the one-block admit above
   GNMR_CUDA_GRID_SELECT_MIN). A step cannot cost less. */
static __global__ void empty_kernel(void) {}

/* Launches exec REPEATS times (after one warm-up) on stream: us per step,
   median, min and max of the launches. */
static void time_graph(cudaGraphExec_t exec, cudaStream_t stream,
                       float res[3]) {
  cudaEvent_t t0, t1;
  float ms[REPEATS];
  int r;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  CK(cudaGraphLaunch(exec, stream));
  for (r = 0; r < REPEATS; r++) {
    CK(cudaEventRecord(t0, stream));
    CK(cudaGraphLaunch(exec, stream));
    CK(cudaEventRecord(t1, stream));
    CK(cudaEventSynchronize(t1));
    CK(cudaEventElapsedTime(&ms[r], t0, t1));
  }
  qsort(ms, REPEATS, sizeof ms[0], cmp_float);
  res[0] = ms[REPEATS / 2] * 1000.0f / STEPS;
  res[1] = ms[0] * 1000.0f / STEPS;
  res[2] = ms[REPEATS - 1] * 1000.0f / STEPS;
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
}

static void launch_floor(uint32_t n, float res[3]) {
  const uint32_t blocks = (n + 255) / 256;
  cudaStream_t stream;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  uint32_t s;
  CK(cudaStreamCreate(&stream));
  CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (s = 0; s < STEPS; s++)
    if (n <= GNMR_CUDA_FUSED_MAX) {
      empty_kernel<<<1, GNMR_CUDA_ADMIT_THREADS, 0, stream>>>();
    } else {
      empty_kernel<<<blocks, GNMR_CUDA_UNIT_THREADS, 0, stream>>>();
      empty_kernel<<<1, GNMR_CUDA_UNIT_THREADS, 0, stream>>>();
      empty_kernel<<<blocks, GNMR_CUDA_UNIT_THREADS, 0, stream>>>();
      if (n <= GNMR_CUDA_GRID_SELECT_MIN) {
        empty_kernel<<<1, GNMR_CUDA_ADMIT_THREADS, 0, stream>>>();
      } else { /* the grid's select: its passes, then rule 7 */
        const uint32_t pass_blocks =
            (n + GNMR_CUDA_ADMIT_THREADS - 1) / GNMR_CUDA_ADMIT_THREADS;
        for (int p = 0; p < GNMR_CUDA_GRID_PASSES; p++)
          empty_kernel<<<pass_blocks, GNMR_CUDA_ADMIT_THREADS, 0, stream>>>();
        empty_kernel<<<blocks, GNMR_CUDA_UNIT_THREADS, 0, stream>>>();
      }
    }
  CK(cudaGetLastError());
  CK(cudaStreamEndCapture(stream, &graph));
  CK(cudaGraphInstantiateWithFlags(&exec, graph, 0));
  time_graph(exec, stream, res);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

/* A size's device buffers, allocated once for all of its measurements:
   the calm and the spiky pools of POOL norm vectors, and the decisions. */
typedef struct inputs {
  float *d_pool[2]; /* [spiky] */
  gnmr_decision *d_out;
} inputs;

static inputs inputs_make(uint32_t n) {
  inputs in;
  float *x = (float *)malloc(sizeof *x * POOL * n);
  uint32_t s, u;
  int spiky;
  if (!x) exit(1);
  for (spiky = 0; spiky <= 1; spiky++) {
    for (s = 0; s < POOL; s++)
      for (u = 0; u < n; u++) {
        double v = 1.0 + 0.1 * uniform();
        if (spiky && uniform() < 1.0 / 13.0) v *= 40.0;
        x[(size_t)s * n + u] = (float)v;
      }
    CK(cudaMalloc((void **)&in.d_pool[spiky], sizeof *x * POOL * n));
    CK(cudaMemcpy(in.d_pool[spiky], x, sizeof *x * POOL * n,
                  cudaMemcpyHostToDevice));
  }
  CK(cudaMalloc((void **)&in.d_out, sizeof *in.d_out * n));
  free(x);
  return in;
}

static void inputs_free(inputs *in) {
  cudaFree(in->d_pool[0]);
  cudaFree(in->d_pool[1]);
  cudaFree(in->d_out);
}

/* Microseconds of device time per step: median, min, max of the launches. */
static void measure(uint32_t n, int rule, int spiky, uint32_t max_o,
                    int with_out, const inputs *in, float res[3]) {
  gnmr_config cfg =
      rule == GNMR_RULE_NOISE ? gnmr_config_noise() : gnmr_config_paper();
  gnmr_slot *slots = (gnmr_slot *)calloc(n, sizeof *slots);
  const float *d_x = in->d_pool[spiky];
  gnmr_decision *d_out = with_out ? in->d_out : NULL;
  gnmr_ctl host;
  gnmr_cuda_ctl dev;
  cudaStream_t stream;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  uint32_t s;
  if (!slots) exit(1);
  cfg.max_recovering = max_o;
  cfg.warmup_steps = 4;
  if (gnmr_init(&host, &cfg, slots, n) != GNMR_OK) exit(1);
  CK(cudaStreamCreate(&stream));
  GK(gnmr_cuda_ctl_create(&dev, &host));
  CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (s = 0; s < STEPS; s++)
    GK(gnmr_cuda_step(&dev, d_x + (size_t)(s % POOL) * n, d_out, stream));
  CK(cudaStreamEndCapture(stream, &graph));
  CK(cudaGraphInstantiateWithFlags(&exec, graph, 0));
  time_graph(exec, stream, res); /* its warm-up passes the warm-up steps */
  {
    int last, first;
    GK(gnmr_cuda_status(&dev, &last, &first));
    if (last != GNMR_OK || first != GNMR_OK) {
      fprintf(stderr, "a step was refused: %d\n", first);
      exit(1);
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  gnmr_cuda_ctl_destroy(&dev);
  cudaStreamDestroy(stream);
  free(slots);
}

int main(int argc, char **argv) {
  uint32_t sizes[2] = {1024, 65536}, n_sizes = 2, i;
  int driver = 0, rule, spiky, with_out;
  cudaDeviceProp prop;
  for (i = 1; i < (uint32_t)argc; i++)
    if (strcmp(argv[i], "--units") == 0 && i + 1 < (uint32_t)argc) {
      sizes[0] = (uint32_t)strtoul(argv[++i], NULL, 10);
      n_sizes = 1;
    }
  if (gnmr_cuda_no_device("bench_ctl_cuda")) return GNMR_CUDA_GPU_REQUIRED;
  CK(cudaGetDeviceProperties(&prop, 0));
  CK(cudaDriverGetVersion(&driver));
  printf("CUDA controller step, device time per step in us, graph of %d "
         "steps (median [min, max] of %d launches)\n",
         STEPS, REPEATS);
  printf("device: %s; driver %d.%d\n\n", prop.name, driver / 1000,
         (driver % 1000) / 10);
  printf("%9s  %-6s %-6s %6s  %-24s %-24s %s\n", "units", "rules", "input",
         "maxO", "with decisions", "out = NULL", "target");
  for (i = 0; i < n_sizes; i++) {
    const uint32_t n = sizes[i], max_o = n / 8 > 4 ? 4 : 1;
    /* the targets for the default rules (PAPER), with decisions */
    const char *target = n <= 1024 ? "<= 8 (stretch 4)" : "<= 25";
    float floor_us[3];
    inputs in = inputs_make(n);
    launch_floor(n, floor_us);
    printf("%9u  %-20s %6.2f [%6.2f, %6.2f]   (empty launches: the floor)\n", n,
           "launch floor", floor_us[0], floor_us[1], floor_us[2]);
    for (rule = GNMR_RULE_PAPER; rule <= GNMR_RULE_NOISE; rule++)
      for (spiky = 0; spiky <= 1; spiky++) {
        float res[2][3];
        for (with_out = 1; with_out >= 0; with_out--)
          measure(n, rule, spiky, max_o, with_out, &in, res[1 - with_out]);
        printf("%9u  %-6s %-6s %6u  %6.2f [%6.2f, %6.2f]   %6.2f [%6.2f, "
               "%6.2f]   %s\n",
               n, rule == GNMR_RULE_NOISE ? "noise" : "paper",
               spiky ? "spiky" : "calm", max_o, res[0][0], res[0][1], res[0][2],
               res[1][0], res[1][1], res[1][2],
               rule == GNMR_RULE_PAPER ? target : "");
      }
    inputs_free(&in);
  }
  return 0;
}
