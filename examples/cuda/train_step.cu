/* train_step.cu - one training step with GNMR on a CUDA device, the way a
   trainer wires it in: the device part captured once as a CUDA graph and
   replayed every step, no host sync inside the step, the library's default
   (paper) rules, and the path of each unit picked on the host, as an
   llm.c-style trainer picks FP8 or BF16 GEMMs in cuBLASLt.

   Each step t, on one stream:
     gnmr_cuda_paths_wait  the host: step t - 1's path bits, waited for on
                       their own event (no stream or device sync); the
                       device is still busy with step t - 1's update
     the graph:
       backward        (here: synthetic gradients: noise, spikes in one
                       unit, a NaN, and one step where every unit's
                       gradient grows at once)
       gnmr_norms_enqueue  every unit's gradient norm, with the CPU's bits
       gnmr_cuda_step  the controller: decisions, admissions, the verdict
       gnmr_cuda_scale_grads  gradient of unit u times decision[u].scale
       log_report      the step's report (GLOBAL, G, flagged) into a log
     gnmr_cuda_paths_publish  step t's path bits, copied to pinned memory
                       while the update runs
     update_f32 / update_bf16  per unit, the kernel the host picked from
                       step t - 1's bits (a decision takes effect from the
                       next step): high fidelity, an f32 update; else one
                       rounded through bf16 (the cheap path)
   The path bits are the controller's, one a unit: a 1 puts the whole unit
   on the high-fidelity path (here its update; in a trainer, every GEMM of
   it). This example does not run the placer
   (gnmr_cuda_place_*, gnmr_ctl.cuh), whose high[u] is GNMR_GEMM_* bits
   (which of the unit's GEMMs), not a yes/no; a trainer with both runs
   GEMM g of unit u high-fidelity when the path bit is 1 or high[u] holds
   g.

   Build: make cuda (nvcc -I. -Iexamples/cuda: the headers are included by
   name, so a trainer copies gnmr.h and the three .cuh files next to this
   file and builds it as it is). Runs where a CUDA device is present, else
   says so and exits 0. In a trainer of several .cu files only one holds
   the two implementation macros below; the others include the headers
   alone. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#define GNMR_CUDA_IMPLEMENTATION
#include "gnmr_ctl.cuh"
#include "gnmr_device.cuh"
#include "gnmr_norms.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define UNITS 48
#define STEPS 300
#define THREADS 256

/* A CUDA call, a GNMR call: print and leave main on failure. */
#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                       \
              cudaGetErrorString(e_));                                         \
      return 1;                                                                \
    }                                                                          \
  } while (0)
#define GK(call, cuda_error)                                                   \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != GNMR_OK) {                                                      \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                       \
              rc_ == GNMR_CUDA_ECUDA ? cudaGetErrorString(cuda_error)          \
                                     : gnmr_strerror(rc_));                    \
      return 1;                                                                \
    }                                                                          \
  } while (0)

/* The model: unit u owns param[first[u] .. first[u] + len[u]). */
typedef struct model {
  float *param, *grad; /* device */
  uint32_t *first, *len;
  uint32_t *step;           /* device: the step counter the graph reads */
  float *norms;             /* device, UNITS */
  gnmr_decision *decisions; /* device, UNITS */
  gnmr_cuda_grad *grads;    /* device, UNITS */
  gnmr_step_report *log;    /* device, STEPS: each step's report */
  uint32_t total, max_len;
} model;

static __device__ float hash01(uint32_t a, uint32_t b) {
  uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u;
  h ^= h >> 15;
  h *= 0xC2B2AE3Du;
  h ^= h >> 13;
  return (float)(h >> 8) * (1.0f / 16777216.0f);
}

/* Stand-in for the backward pass: small noise around the parameter, a
   40x spike on unit 7 every 50 steps, a NaN in unit 30 at step 120, every
   unit 8x at step 200 (a shared rise: a GLOBAL step, not a local fault). */
__global__ void backward(model m) {
  const uint32_t u = blockIdx.y, step = *m.step;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < m.len[u];
       i += gridDim.x * blockDim.x) {
    const uint32_t at = m.first[u] + i;
    float g = 0.01f * m.param[at] + 0.02f * (hash01(step, at) - 0.5f);
    if (u == 7 && step % 50 == 49) g *= 40.0f;
    if (step == 200) g *= 8.0f;
    if (u == 30 && step == 120 && i == 0) g = __int_as_float(0x7FC00000);
    m.grad[at] = g;
  }
}

/* The controller's report of this step, kept per step (a trainer would
   log it, or skip the optimiser on a GLOBAL step under its own policy). */
__global__ void log_report(model m, const gnmr_step_report *report) {
  m.log[*m.step] = *report;
}

/* SGD of unit u, the two paths the host picks between (stand-ins for an
   FP8 and a BF16 GEMM): f32, or the new value rounded through bf16. */
__global__ void update_f32(model m, uint32_t u, float lr) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < m.len[u];
       i += gridDim.x * blockDim.x) {
    const uint32_t at = m.first[u] + i;
    m.param[at] = m.param[at] - lr * m.grad[at];
  }
}
__global__ void update_bf16(model m, uint32_t u, float lr) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < m.len[u];
       i += gridDim.x * blockDim.x) {
    const uint32_t at = m.first[u] + i;
    m.param[at] =
        __bfloat162float(__float2bfloat16(m.param[at] - lr * m.grad[at]));
  }
}

__global__ void next_step(uint32_t *step) { ++*step; }

/* The device part of a step, on one stream: what the graph captures. */
static int device_step(model *m, gnmr_norms_plan *plan, gnmr_cuda_ctl *gc,
                       cudaStream_t s) {
  const dim3 per_unit(8, UNITS);
  int rc;
  backward<<<per_unit, THREADS, 0, s>>>(*m);
  rc = gnmr_norms_enqueue(plan, NULL, m->norms, s);
  if (rc == GNMR_OK) rc = gnmr_cuda_step(gc, m->norms, m->decisions, s);
  if (rc == GNMR_OK)
    rc =
        gnmr_cuda_scale_grads(gc, m->grads, UNITS, m->max_len, m->decisions, s);
  if (rc != GNMR_OK) return rc;
  log_report<<<1, 1, 0, s>>>(*m, gc->report);
  next_step<<<1, 1, 0, s>>>(m->step);
  return cudaGetLastError() == cudaSuccess ? GNMR_OK : GNMR_CUDA_ECUDA;
}

/* One training step: the host waits for the last step's path bits on their
   event only, launches the graph, publishes this step's bits and queues
   each unit's update on the path the bits say. No stream or device sync.
   *high_steps counts the unit-steps on the high-fidelity path. */
static int train_step(model *m, cudaGraphExec_t graph, gnmr_cuda_ctl *gc,
                      gnmr_cuda_paths *paths, cudaStream_t s,
                      unsigned *high_steps) {
  const uint32_t *bits;
  uint32_t u;
  int rc = gnmr_cuda_paths_wait(paths, &bits);
  if (rc != GNMR_OK) return rc;
  if (cudaGraphLaunch(graph, s) != cudaSuccess) return GNMR_CUDA_ECUDA;
  rc = gnmr_cuda_paths_publish(paths, gc, s);
  if (rc != GNMR_OK) return rc;
  for (u = 0; u < UNITS; u++) {
    if (gnmr_cuda_path_high(bits, u)) {
      update_f32<<<8, THREADS, 0, s>>>(*m, u, 0.1f);
      ++*high_steps;
    } else {
      update_bf16<<<8, THREADS, 0, s>>>(*m, u, 0.1f);
    }
  }
  return cudaGetLastError() == cudaSuccess ? GNMR_OK : GNMR_CUDA_ECUDA;
}

int main(void) {
  uint32_t first[UNITS], len[UNITS], u;
  gnmr_cuda_grad grads[UNITS];
  gnmr_tensor tensors[UNITS];
  gnmr_slot slots[UNITS];
  gnmr_config cfg = gnmr_config_default(); /* the paper rules */
  gnmr_ctl host;
  gnmr_cuda_ctl gc;
  gnmr_norms_plan plan;
  gnmr_cuda_paths paths;
  gnmr_counters tot = gnmr_counters(); /* read after a refusal too */
  static gnmr_step_report log[STEPS];
  model m;
  cudaStream_t stream;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  float *init;
  int last, first_error, step;
  unsigned high_steps = 0;

  if (gnmr_cuda_no_device("train_step"))
    return GNMR_CUDA_GPU_REQUIRED; /* make gpu-check: a failure */
  /* Model and controller: parameter groups of 1 Ki to 64 Ki floats. */
  m.total = m.max_len = 0;
  for (u = 0; u < UNITS; u++) {
    first[u] = m.total;
    len[u] = 1024u << (u % 7);
    m.total += len[u];
    if (len[u] > m.max_len) m.max_len = len[u];
  }
  cfg.max_recovering = 2;
  GK(gnmr_init(&host, &cfg, slots, UNITS), cudaSuccess);
  GK(gnmr_cuda_ctl_create(&gc, &host), gc.cuda_error);
  GK(gnmr_cuda_paths_create(&paths, &host), paths.cuda_error);
  CK(cudaMalloc((void **)&m.param, sizeof(float) * m.total));
  CK(cudaMalloc((void **)&m.grad, sizeof(float) * m.total));
  CK(cudaMalloc((void **)&m.first, sizeof first));
  CK(cudaMalloc((void **)&m.len, sizeof len));
  CK(cudaMalloc((void **)&m.step, sizeof(uint32_t)));
  CK(cudaMalloc((void **)&m.norms, sizeof(float) * UNITS));
  CK(cudaMalloc((void **)&m.decisions, sizeof(gnmr_decision) * UNITS));
  CK(cudaMalloc((void **)&m.grads, sizeof grads));
  CK(cudaMalloc((void **)&m.log, sizeof log));
  for (u = 0; u < UNITS; u++) {
    grads[u].data = m.grad + first[u];
    grads[u].n = len[u];
    grads[u].dtype = GNMR_DTYPE_F32;
    grads[u].unit = u;
    tensors[u].data = m.grad + first[u]; /* the norms read the gradients */
    tensors[u].n = len[u];
    tensors[u].dtype = GNMR_DTYPE_F32;
    tensors[u].unit = u;
  }
  GK(gnmr_norms_plan_init(&plan, tensors, UNITS, UNITS), plan.cuda_error);
  init = (float *)malloc(sizeof(float) * m.total);
  if (!init) return 1;
  for (u = 0; u < m.total; u++) init[u] = (float)(u % 97) / 97.0f - 0.5f;
  CK(cudaMemcpy(m.param, init, sizeof(float) * m.total,
                cudaMemcpyHostToDevice));
  free(init);
  CK(cudaMemcpy(m.first, first, sizeof first, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(m.len, len, sizeof len, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(m.grads, grads, sizeof grads, cudaMemcpyHostToDevice));
  CK(cudaMemset(m.step, 0, sizeof(uint32_t)));

  /* Capture the device part once; train. */
  CK(cudaStreamCreate(&stream));
  CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  GK(device_step(&m, &plan, &gc, stream), cudaGetLastError());
  CK(cudaStreamEndCapture(stream, &graph));
  CK(cudaGraphInstantiateWithFlags(&exec, graph, 0));
  for (step = 0; step < STEPS; step++)
    GK(train_step(&m, exec, &gc, &paths, stream, &high_steps),
       paths.cuda_error != cudaSuccess ? paths.cuda_error : cudaGetLastError());
  CK(cudaStreamSynchronize(stream)); /* the run is over */

  /* After the run: did every step pass, and what did GNMR do? */
  GK(gnmr_cuda_status(&gc, &last, &first_error), gc.cuda_error);
  if (first_error != GNMR_OK) {
    printf("a step was refused: %s\n", gnmr_strerror(first_error));
    return 1;
  }
  GK(gnmr_cuda_ctl_download(&gc, &host), gc.cuda_error); /* a checkpoint */
  gnmr_counters_get(&host, GNMR_ALL_UNITS, &tot);
  CK(cudaMemcpy(log, m.log, sizeof log, cudaMemcpyDeviceToHost));
  printf("train_step: %d graph-launched steps, %d units (paper rules), %u "
         "unit-steps on the high-fidelity path (picked on the host)\n",
         STEPS, UNITS, high_steps);
  printf("  risky %llu (non-finite %llu, falls %llu), admissions %llu, "
         "renewals %llu, over budget %llu, GLOBAL steps %llu\n",
         (unsigned long long)tot.risky, (unsigned long long)tot.nonfinite,
         (unsigned long long)tot.falls, (unsigned long long)tot.admissions,
         (unsigned long long)tot.renewals, (unsigned long long)tot.over_budget,
         (unsigned long long)tot.global_steps);
  /* The NaN of step 120 was scaled by 0 (rule 8): no parameter saw it. */
  init = (float *)malloc(sizeof(float) * m.total);
  if (!init) return 1;
  CK(cudaMemcpy(init, m.param, sizeof(float) * m.total,
                cudaMemcpyDeviceToHost));
  for (u = 0; u < m.total && isfinite(init[u]); u++) continue;
  free(init);
  if (u < m.total) {
    printf("train_step: parameter %u is not finite: a gradient the "
           "controller scaled by 0 reached the update\n",
           u);
    return 1;
  }
  printf("  every parameter finite after the run (the NaN of step 120 "
         "dropped)\n");
  for (step = 0; step < STEPS; step++)
    if (log[step].global || log[step].flagged)
      printf("  step %3d: G %.4g (x%.3g of its mean), flagged %u%s\n", step,
             log[step].global_norm, log[step].global_ratio, log[step].flagged,
             log[step].global ? ", GLOBAL" : "");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  gnmr_norms_plan_free(&plan);
  gnmr_cuda_paths_destroy(&paths);
  gnmr_cuda_ctl_destroy(&gc);
  cudaFree(m.param);
  cudaFree(m.grad);
  cudaFree(m.first);
  cudaFree(m.len);
  cudaFree(m.step);
  cudaFree(m.norms);
  cudaFree(m.decisions);
  cudaFree(m.grads);
  cudaFree(m.log);
  return 0;
}
