/* Two .cu files, one program, no -rdc: this file holds gnmr.h's
   implementation and the controller's (GNMR_CUDA_IMPLEMENTATION);
   ctl_two_b.cu holds neither and makes the norm plan, runs the norms and
   the controller's step and reads the device-side recovering flag. `make
   cuda` builds the pair (CI: it must compile and link); on a GPU it checks,
   in NOISE mode (gnmr_config_noise()) for a one-block (fused) and a
   multi-kernel unit count, that every norm, decision, step report and
   recovering flag, and at the end the whole state, equal the CPU's
   (gnmr_unit_norms, gnmr_step) bit for bit. Without a CUDA device it says
   so and exits 0. */
#define GNMR_IMPLEMENTATION
/* The norms header first here, after the controller's in ctl_two_b.cu:
   either order builds (GNMR_CUDA_ECUDA is gnmr.h's, not theirs). */
#include "examples/cuda/gnmr_norms.cuh"
#define GNMR_CUDA_IMPLEMENTATION
#include "examples/cuda/gnmr_ctl.cuh"

#include "tests/cuda/ctl_two.h"
#include "tests/cuda/no_device.h"

#include <stdio.h>
#include <stdlib.h>

#define ELEMS 700 /* per tensor; two tensors (f32, bf16) per unit */
#define STEPS 40

static int fails;
#define CHECK(cond, what)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("FAIL %s (%s:%d)\n", what, __FILE__, __LINE__);                   \
      fails++;                                                                 \
    }                                                                          \
  } while (0)

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float uniform(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)(rng >> 40) * (1.0f / 16777216.0f);
}

static uint16_t to_bf16(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  return (uint16_t)(b >> 16);
}

/* One run over n units; returns when a check fails. */
static void run(uint32_t n) {
  const size_t per = (size_t)n * ELEMS;
  float *f = (float *)malloc(sizeof *f * per), *d_f = NULL, *d_norms = NULL;
  uint16_t *h = (uint16_t *)malloc(sizeof *h * per), *d_h = NULL;
  gnmr_tensor *ht = (gnmr_tensor *)malloc(sizeof *ht * 2 * n);
  gnmr_tensor *dt = (gnmr_tensor *)malloc(sizeof *dt * 2 * n);
  float *norms = (float *)malloc(sizeof *norms * n);
  gnmr_decision *da = (gnmr_decision *)malloc(sizeof *da * n);
  gnmr_decision *db = (gnmr_decision *)malloc(sizeof *db * n), *d_out = NULL;
  int *rec = (int *)malloc(sizeof *rec * n), *d_rec = NULL;
  gnmr_slot *sa = (gnmr_slot *)calloc(n, sizeof *sa);
  gnmr_slot *sb = (gnmr_slot *)calloc(n, sizeof *sb);
  gnmr_step_report ra, rb, *d_report = NULL;
  gnmr_config cfg = gnmr_config_noise(); /* NOISE mode */
  gnmr_ctl a, b;
  gnmr_cuda_ctl gc;
  gnmr_norms_plan plan;
  unsigned char *ka, *kb;
  size_t na, nb;
  uint32_t s, u, i;
  int last, first;
  if (!f || !h || !ht || !dt || !norms || !da || !db || !rec || !sa || !sb) {
    CHECK(0, "host memory");
    return;
  }
  cfg.max_recovering = 3;
  cfg.warmup_steps = 4;
  cfg.global_policy = GNMR_GLOBAL_CLIP;
  CHECK(gnmr_init(&a, &cfg, sa, n) == GNMR_OK, "init a");
  CHECK(gnmr_init(&b, &cfg, sb, n) == GNMR_OK, "init b");
  CHECK(gnmr_cuda_ctl_create(&gc, &b) == GNMR_OK, "create");
  CHECK(cudaMalloc((void **)&d_f, sizeof *f * per) == cudaSuccess &&
            cudaMalloc((void **)&d_h, sizeof *h * per) == cudaSuccess &&
            cudaMalloc((void **)&d_norms, sizeof *norms * n) == cudaSuccess &&
            cudaMalloc((void **)&d_out, sizeof *db * n) == cudaSuccess &&
            cudaMalloc((void **)&d_rec, sizeof *rec * n) == cudaSuccess &&
            cudaMalloc((void **)&d_report, sizeof rb) == cudaSuccess,
        "device memory");
  if (fails) return;
  for (u = 0; u < n; u++) {
    ht[2 * u].data = f + (size_t)u * ELEMS;
    dt[2 * u].data = d_f + (size_t)u * ELEMS;
    ht[2 * u + 1].data = h + (size_t)u * ELEMS;
    dt[2 * u + 1].data = d_h + (size_t)u * ELEMS;
    for (i = 0; i < 2; i++) {
      ht[2 * u + i].n = dt[2 * u + i].n = ELEMS;
      ht[2 * u + i].dtype = dt[2 * u + i].dtype =
          i ? GNMR_DTYPE_BF16 : GNMR_DTYPE_F32;
      ht[2 * u + i].unit = dt[2 * u + i].unit = u;
    }
  }
  CHECK(two_b_plan(&plan, dt, 2 * (size_t)n, n) == GNMR_OK, "plan");
  for (s = 0; s < STEPS && !fails; s++) {
    /* calm noise; spikes and falls in a few units; a step where every
       unit rises (GLOBAL); a NaN */
    for (u = 0; u < n; u++) {
      float k = 1.0f;
      if (s > 8 && (u * 7 + s) % 29 == 0) k = 30.0f;
      if (s > 8 && (u * 5 + s) % 37 == 0) k = 0.02f;
      if (s == 20) k = 6.0f;
      for (i = 0; i < ELEMS; i++) {
        f[(size_t)u * ELEMS + i] = k * (uniform() - 0.5f);
        h[(size_t)u * ELEMS + i] = to_bf16(k * (uniform() - 0.5f));
      }
    }
    if (s == 30) f[(size_t)(n / 2) * ELEMS + 3] = (float)NAN;
    CHECK(gnmr_unit_norms(ht, 2 * (size_t)n, norms, n) == GNMR_OK, "norms");
    CHECK(gnmr_step(&a, norms, da) == GNMR_OK, "gnmr_step");
    CHECK(gnmr_step_info(&a, &ra) == GNMR_OK, "step_info");
    CHECK(cudaMemcpy(d_f, f, sizeof *f * per, cudaMemcpyHostToDevice) ==
                  cudaSuccess &&
              cudaMemcpy(d_h, h, sizeof *h * per, cudaMemcpyHostToDevice) ==
                  cudaSuccess,
          "upload gradients");
    CHECK(two_b_step(&gc, &plan, d_norms, d_out, d_report, d_rec, 0) == GNMR_OK,
          "two_b_step");
    CHECK(cudaMemcpy(db, d_out, sizeof *db * n, cudaMemcpyDeviceToHost) ==
                  cudaSuccess &&
              cudaMemcpy(rec, d_rec, sizeof *rec * n, cudaMemcpyDeviceToHost) ==
                  cudaSuccess &&
              cudaMemcpy(&rb, d_report, sizeof rb, cudaMemcpyDeviceToHost) ==
                  cudaSuccess,
          "download");
    CHECK(memcmp(da, db, sizeof *da * n) == 0, "decisions");
    CHECK(memcmp(&ra, &rb, sizeof ra) == 0, "step report");
    for (u = 0; u < n; u++)
      if (rec[u] != gnmr_recovering(&a, u)) {
        CHECK(0, "recovering");
        break;
      }
  }
  CHECK(a.global_steps > 0, "a GLOBAL step happened");
  CHECK(gnmr_cuda_status(&gc, &last, &first) == GNMR_OK && last == GNMR_OK &&
            first == GNMR_OK,
        "status");
  CHECK(gnmr_cuda_ctl_download(&gc, &b) == GNMR_OK, "download state");
  na = gnmr_checkpoint_size(&a);
  nb = gnmr_checkpoint_size(&b);
  ka = (unsigned char *)malloc(na);
  kb = (unsigned char *)malloc(nb);
  CHECK(ka && kb && gnmr_checkpoint_save(&a, ka, na, &na) == GNMR_OK &&
            gnmr_checkpoint_save(&b, kb, nb, &nb) == GNMR_OK && na == nb &&
            memcmp(ka, kb, na) == 0,
        "state");
  printf("%s n %u: %u steps, %llu GLOBAL, %llu admissions\n",
         fails ? "FAIL" : "ok  ", n, s, (unsigned long long)a.global_steps,
         (unsigned long long)a.admissions);
  two_b_plan_free(&plan);
  gnmr_cuda_ctl_destroy(&gc);
  cudaFree(d_f);
  cudaFree(d_h);
  cudaFree(d_norms);
  cudaFree(d_out);
  cudaFree(d_rec);
  cudaFree(d_report);
  free(ka);
  free(kb);
  free(f);
  free(h);
  free(ht);
  free(dt);
  free(norms);
  free(da);
  free(db);
  free(rec);
  free(sa);
  free(sb);
}

int main(void) {
  if (no_cuda_device("ctl_two_files", 1)) return NO_DEVICE_EXIT;
  run(300);  /* one block: the fused kernel */
  run(3000); /* scan, verdict, units, admit */
  printf("%d passed, %d failed\n", fails ? 0 : 1, fails ? 1 : 0);
  return fails != 0;
}
