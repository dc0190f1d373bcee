/* mpi_dp.c - data-parallel GNMR over MPI: every rank makes the same decisions.

   Each rank holds a shard of every unit's gradient (uneven shards; f32, f16
   and bf16 tensors). Per step it computes its local per-unit sums of squares
   with gnmr_unit_sumsq, the job all-reduces that double vector, every rank
   takes the square roots and runs gnmr_step on the same norms. No decision
   is ever broadcast: the controller is a deterministic function of its state
   and its input, and both are the same on every rank.

   Spikes and a NaN are injected into one rank's shard only, at known steps.
   The program checks, and exits non-zero with a message when a check fails:
     - every rank's decisions are identical, byte for byte, at every step;
     - the spike in one shard is flagged and admitted on all ranks;
     - the NaN in one shard gives scale 0 on all ranks;
     - the reduced norms are within 1e-12 relative of a single-process
       computation over the full gradients (each rank regenerates them);
     - a checkpoint written by rank 0 mid-run, loaded by every rank into a
       fresh controller, continues with decisions identical to a run never
       interrupted.

   Build and run:  make mpi-run   (or: mkdir -p build && mpicc -std=c99 -I.
                   examples/mpi_dp.c -lm -o build/mpi_dp &&
                   mpirun -np 4 build/mpi_dp)
   Options:
     --checkpoint PATH    where rank 0 writes the checkpoint
                          (build/mpi_dp.ckpt; its folder must exist)
     --reduce-bcast       MPI_Reduce to rank 0 + MPI_Bcast instead of
                          MPI_Allreduce (see README, "Distributed training")
     --perturb-rank R     rank R nudges one norm by one ulp at one step, as an
                          all-reduce that gave ranks different bits would:
                          the run must then fail (it shows the check bites) */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include <mpi.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_UNITS 10
#define STEPS 64
#define RESTART_AT 28 /* checkpoint after step 27; unit 5 is locked then */
#define PERTURB_STEP 30
#define SPIKE_FACTOR 40.0f
#define NORM_TOL 1e-12
#define SEED 0x6a09e667f3bcc908ull
#define DECISION_BYTES 40 /* one unit's decision, packed */

/* The model: tensors of every unit, in no particular unit order (the
   all-reduced vector is per unit, so the order does not matter). Sizes span
   one element to several GNMR_SUM_CHUNKs; unit 0 is so small that some ranks
   hold none of it. */
typedef struct tensor_spec {
  uint32_t unit;
  int dtype;
  size_t n;
} tensor_spec;

static const tensor_spec TENSORS[] = {
    {0, GNMR_DTYPE_F32, 3},      {1, GNMR_DTYPE_F16, 5000},
    {2, GNMR_DTYPE_BF16, 9000},  {3, GNMR_DTYPE_F32, 700},
    {1, GNMR_DTYPE_F32, 64},     {4, GNMR_DTYPE_F16, 12000},
    {5, GNMR_DTYPE_F32, 10000},  {5, GNMR_DTYPE_BF16, 33},
    {6, GNMR_DTYPE_BF16, 2500},  {7, GNMR_DTYPE_F16, 8200},
    {8, GNMR_DTYPE_F32, 1},      {8, GNMR_DTYPE_F16, 4096},
    {9, GNMR_DTYPE_BF16, 6000},  {9, GNMR_DTYPE_F32, 300},
    {2, GNMR_DTYPE_F16, 129},    {6, GNMR_DTYPE_F32, 20000},
    {3, GNMR_DTYPE_BF16, 17000}, {4, GNMR_DTYPE_F32, 511}};
#define N_TENSORS (sizeof TENSORS / sizeof TENSORS[0])

/* Anomalies, each in one rank's shard of one unit. rank -1 = the last rank.
   A spike multiplies that rank's elements of the unit by SPIKE_FACTOR; a NaN
   replaces the first element of that rank's shard of the unit's first
   tensor. */
enum { EV_SPIKE, EV_NAN };
typedef struct event {
  int step;
  uint32_t unit;
  int kind;
  int rank;
} event;

static const event EVENTS[] = {{24, 5, EV_SPIKE, -1},
                               {40, 2, EV_NAN, 1},
                               {50, 7, EV_SPIKE, 0},
                               {50, 9, EV_SPIKE, -1}};
#define N_EVENTS (sizeof EVENTS / sizeof EVENTS[0])

typedef struct job {
  int rank, size;
  int reduce_bcast;
  int perturb_rank;
  const char *checkpoint_path;
  void *shard[N_TENSORS], *full[N_TENSORS];
  double local[N_UNITS], prev_local[N_UNITS], global[N_UNITS];
  double max_rel_diff;
  long float_norms_equal, norms_compared;
  long failures;         /* this rank's failed checks, all kinds */
  long ranks_disagree;   /* steps where some rank's decisions differed */
  long restart_mismatch; /* checks of the restart that failed */
} job;

/* ---- helpers ------------------------------------------------------------ */

#define FAILURES_SHOWN 8

/* Records a failed check; shows the first few (one write each, so lines
   from different ranks do not interleave). */
static void fail(job *j, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (j->failures < FAILURES_SHOWN)
    fprintf(stderr, "mpi_dp: FAIL (rank %d): %s\n", j->rank, msg);
  else if (j->failures == FAILURES_SHOWN)
    fprintf(stderr, "mpi_dp: (rank %d: further failures counted, not shown)\n",
            j->rank);
  j->failures++;
}

/* A library call refused: no sensible way on. Stop the whole job rather
   than leave the other ranks waiting in a collective. */
static void die(const char *what, int rc) {
  fprintf(stderr, "mpi_dp: %s: %s\n", what, gnmr_strerror(rc));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "mpi_dp: out of memory (%lu bytes)\n", (unsigned long)n);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

static size_t dtype_size(int dtype) { return dtype == GNMR_DTYPE_F32 ? 4 : 2; }

static int event_rank(const job *j, const event *e) {
  return e->rank < 0 ? j->size + e->rank : e->rank % j->size;
}

/* Rank r's shard of tensor t: [*begin, *end). Uneven on purpose: rank r
   gets weight 1, 3 or 5 depending on r and t. */
static void shard_range(const job *j, size_t t, int r, size_t *begin,
                        size_t *end) {
  uint64_t n = TENSORS[t].n, total = 0, before = 0;
  int q;
  for (q = 0; q < j->size; q++) {
    uint64_t w = 1 + 2 * (uint64_t)((q + (int)t) % 3);
    if (q < r) before += w;
    total += w;
  }
  *begin = (size_t)(n * before / total);
  *end = (size_t)(n * (before + 1 + 2 * (uint64_t)((r + (int)t) % 3)) / total);
}

static uint64_t mix64(uint64_t x) { /* splitmix64's finaliser */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* f32 -> IEEE binary16 bits, truncating (any deterministic mapping will do
   for test data; subnormals kept). */
static uint16_t f32_to_f16(float f) {
  uint32_t b, sign, exp, mant;
  int e;
  memcpy(&b, &f, 4);
  sign = (b >> 16) & 0x8000u;
  exp = (b >> 23) & 0xFFu;
  mant = b & 0x7FFFFFu;
  if (exp == 0xFF) return (uint16_t)(sign | 0x7C00u | (mant ? 0x200u : 0));
  e = (int)exp - 112;
  if (e >= 31) return (uint16_t)(sign | 0x7C00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    return (uint16_t)(sign | ((mant | 0x800000u) >> (14 - e)));
  }
  return (uint16_t)(sign | ((uint32_t)e << 10) | (mant >> 13));
}

static uint16_t f32_to_bf16(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return (uint16_t)(b >> 16);
}

/* Elements [begin, end) of tensor t at this step, as every rank sees them:
   a pure function of (seed, step, tensor, index), so any rank can make any
   shard, or the whole tensor for the single-process reference. */
static void make_elements(const job *j, int step, size_t t, size_t begin,
                          size_t end, void *out) {
  const tensor_spec *ts = &TENSORS[t];
  uint64_t key = mix64(SEED + (uint64_t)step * 0x9e3779b97f4a7c15ull +
                       (uint64_t)t * 0xd1b54a32d192ed03ull);
  /* A gently varying scale per unit and step: calm, never flagged. */
  float scale = 0.05f * (float)(1 + ts->unit) *
                (1.0f + 0.02f * (float)((step + (int)ts->unit) % 7));
  size_t spike_begin = 0, spike_end = 0, nan_at = (size_t)-1, i, k;
  for (k = 0; k < N_EVENTS; k++) {
    const event *e = &EVENTS[k];
    size_t b, en;
    if (e->step != step || e->unit != ts->unit) continue;
    shard_range(j, t, event_rank(j, e), &b, &en);
    if (e->kind == EV_SPIKE) {
      spike_begin = b;
      spike_end = en;
    } else {
      size_t first = 0;
      while (TENSORS[first].unit != e->unit) first++;
      if (first == t) nan_at = b;
    }
  }
  for (i = begin; i < end; i++) {
    uint64_t h = mix64(key + i);
    float v = (float)((double)(int32_t)(uint32_t)(h >> 32) / 2147483648.0);
    v *= scale;
    if (i >= spike_begin && i < spike_end) v *= SPIKE_FACTOR;
    if (i == nan_at) v = NAN;
    if (ts->dtype == GNMR_DTYPE_F32)
      ((float *)out)[i - begin] = v;
    else if (ts->dtype == GNMR_DTYPE_F16)
      ((uint16_t *)out)[i - begin] = f32_to_f16(v);
    else
      ((uint16_t *)out)[i - begin] = f32_to_bf16(v);
  }
}

/* One unit's decision as bytes, little-endian, every field: what the ranks
   compare. */
static unsigned char *put_u64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
  return p + 8;
}

static unsigned char *put_f64(unsigned char *p, double v) {
  uint64_t b;
  memcpy(&b, &v, 8);
  return put_u64(p, b);
}

static void pack_decisions(const gnmr_decision *d, unsigned char *out) {
  uint32_t u;
  for (u = 0; u < N_UNITS; u++) {
    out = put_u64(out,
                  (uint64_t)(uint32_t)d[u].action | (uint64_t)d[u].flags << 32);
    out = put_f64(out, d[u].ratio);
    out = put_f64(out, d[u].delta);
    out = put_f64(out, d[u].score);
    out = put_f64(out, d[u].scale);
  }
}

static const event *event_at(int step, uint32_t unit) {
  size_t k;
  for (k = 0; k < N_EVENTS; k++)
    if (EVENTS[k].step == step && EVENTS[k].unit == unit) return &EVENTS[k];
  return NULL;
}

/* ---- one training step --------------------------------------------------- */

/* The pattern itself: local sumsq -> all-reduce (double) -> sqrt -> step. */
static void reduce_norms(job *j, int step, float *norms) {
  gnmr_tensor local[N_TENSORS];
  size_t t;
  uint32_t u;
  int rc;
  for (t = 0; t < N_TENSORS; t++) {
    size_t b, e;
    shard_range(j, t, j->rank, &b, &e);
    make_elements(j, step, t, b, e, j->shard[t]);
    local[t].data = j->shard[t];
    local[t].n = e - b;
    local[t].dtype = TENSORS[t].dtype;
    local[t].unit = TENSORS[t].unit;
  }
  memcpy(j->prev_local, j->local, sizeof j->local);
  rc = gnmr_unit_sumsq(local, N_TENSORS, j->local, N_UNITS);
  if (rc != GNMR_OK) die("gnmr_unit_sumsq", rc);
  if (j->reduce_bcast) {
    MPI_Reduce(j->local, j->global, N_UNITS, MPI_DOUBLE, MPI_SUM, 0,
               MPI_COMM_WORLD);
    MPI_Bcast(j->global, N_UNITS, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  } else {
    MPI_Allreduce(j->local, j->global, N_UNITS, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
  }
  for (u = 0; u < N_UNITS; u++) norms[u] = (float)sqrt(j->global[u]);
  if (step == PERTURB_STEP && j->rank == j->perturb_rank)
    norms[3] = nextafterf(norms[3], INFINITY);
}

/* The single-process reference: the full gradients, regenerated here. */
static void check_norms(job *j, int step, const float *norms) {
  gnmr_tensor full[N_TENSORS];
  double ref[N_UNITS];
  size_t t;
  uint32_t u;
  int rc;
  for (t = 0; t < N_TENSORS; t++) {
    make_elements(j, step, t, 0, TENSORS[t].n, j->full[t]);
    full[t].data = j->full[t];
    full[t].n = TENSORS[t].n;
    full[t].dtype = TENSORS[t].dtype;
    full[t].unit = TENSORS[t].unit;
  }
  rc = gnmr_unit_sumsq(full, N_TENSORS, ref, N_UNITS);
  if (rc != GNMR_OK) die("gnmr_unit_sumsq", rc);
  for (u = 0; u < N_UNITS; u++) {
    double a = sqrt(j->global[u]), b = sqrt(ref[u]), rel;
    if (!isfinite(a) || !isfinite(b)) {
      if (isnan(a) != isnan(b) || isinf(a) != isinf(b))
        fail(j, "step %d unit %u: reduced norm %g, single-process %g", step, u,
             a, b);
      continue;
    }
    rel = b > 0.0 ? fabs(a - b) / b : fabs(a - b);
    if (rel > j->max_rel_diff) j->max_rel_diff = rel;
    if (!(rel <= NORM_TOL))
      fail(j,
           "step %d unit %u: reduced norm %.17g differs from the "
           "single-process %.17g by %.3g relative (limit %g)",
           step, u, a, b, rel, NORM_TOL);
    j->norms_compared++;
    j->float_norms_equal += norms[u] == (float)b;
  }
}

/* Every rank's decisions, byte for byte, against rank 0's. */
static void check_ranks_agree(job *j, int step, const unsigned char *mine) {
  const size_t bytes = N_UNITS * DECISION_BYTES;
  unsigned char *all = (unsigned char *)xmalloc(bytes * (size_t)j->size);
  int r;
  MPI_Allgather((void *)mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                MPI_COMM_WORLD);
  for (r = 1; r < j->size; r++) {
    const unsigned char *theirs = all + bytes * (size_t)r;
    size_t at;
    if (memcmp(all, theirs, bytes) == 0) continue;
    for (at = 0; all[at] == theirs[at]; at++) continue;
    /* Every rank sees the same gathered bytes; rank 0 tells. */
    if (j->rank == 0)
      fail(j, "step %d: rank %d's decisions differ from rank 0's (unit %u)",
           step, r, (unsigned)(at / DECISION_BYTES));
    j->ranks_disagree++;
  }
  free(all);
}

/* The anomalies: in one rank's shard only, acted on by every rank. */
static void check_events(job *j, int step, const gnmr_decision *d) {
  uint32_t u;
  for (u = 0; u < N_UNITS; u++) {
    const event *e = event_at(step, u);
    const gnmr_decision *x = &d[u];
    const uint32_t risky =
        GNMR_FLAG_RATIO | GNMR_FLAG_DELTA | GNMR_FLAG_NONFINITE;
    int in_mine, *in_rank, r, holders = 0, ok;
    char flags[GNMR_FLAGS_STRING_MAX];
    gnmr_flags_string(x->flags, flags, sizeof flags);
    if (!e) {
      if (x->action == GNMR_ACTION_RECOVER || (x->flags & risky))
        fail(j, "step %d unit %u: %s, flags %s with no anomaly injected", step,
             u, gnmr_action_name(x->action), flags);
      continue;
    }
    /* Which ranks saw the anomaly in their own shard? */
    in_mine = e->kind == EV_NAN ? !isfinite(j->local[u])
                                : j->prev_local[u] > 0.0 &&
                                      j->local[u] > 100.0 * j->prev_local[u];
    in_rank = (int *)xmalloc(sizeof(int) * (size_t)j->size);
    MPI_Allgather(&in_mine, 1, MPI_INT, in_rank, 1, MPI_INT, MPI_COMM_WORLD);
    for (r = 0; r < j->size; r++) holders += in_rank[r];
    if (holders != 1 || !in_rank[event_rank(j, e)])
      fail(j,
           "step %d unit %u: the anomaly was meant for rank %d's shard "
           "only, but %d rank(s) saw it locally",
           step, u, event_rank(j, e), holders);
    free(in_rank);
    if (e->kind == EV_NAN) {
      ok = (x->flags & GNMR_FLAG_NONFINITE) && x->scale == 0.0 &&
           x->action == GNMR_ACTION_RECOVER;
    } else {
      ok = (x->flags & GNMR_FLAG_RATIO) && x->action == GNMR_ACTION_RECOVER &&
           x->scale > 0.0 && x->scale < 1.0;
    }
    if (!ok)
      fail(j,
           "step %d unit %u: %s in rank %d's shard not acted on here: %s, "
           "flags %s, scale %g",
           step, u, e->kind == EV_NAN ? "NaN" : "spike", event_rank(j, e),
           gnmr_action_name(x->action), flags, x->scale);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (j->rank == 0)
      printf("step %2d unit %u: %-5s in rank %d's shard only -> rank 0: %s, "
             "ratio %g, scale %.4g; acted on by every rank: %s\n",
             step, u, e->kind == EV_NAN ? "NaN" : "spike", event_rank(j, e),
             gnmr_action_name(x->action), x->ratio, x->scale,
             ok ? "yes" : "NO");
  }
}

/* Steps [from, to); log[step] gets the packed decisions. */
static void train(job *j, gnmr_ctl *ctl, int from, int to, unsigned char *log,
                  int report) {
  int step, rc;
  for (step = from; step < to; step++) {
    float norms[N_UNITS];
    gnmr_decision d[N_UNITS];
    unsigned char *packed = log + (size_t)step * N_UNITS * DECISION_BYTES;
    reduce_norms(j, step, norms);
    rc = gnmr_step(ctl, norms, d);
    if (rc != GNMR_OK) die("gnmr_step", rc);
    pack_decisions(d, packed);
    check_ranks_agree(j, step, packed);
    check_norms(j, step, norms);
    if (report) check_events(j, step, d);
  }
}

/* ---- checkpoint and restart ---------------------------------------------- */

static unsigned char *save(const gnmr_ctl *ctl, size_t *len) {
  unsigned char *buf;
  int rc = gnmr_checkpoint_save(ctl, NULL, 0, len);
  if (rc != GNMR_OK) die("gnmr_checkpoint_save", rc);
  buf = (unsigned char *)xmalloc(*len);
  rc = gnmr_checkpoint_save(ctl, buf, *len, len);
  if (rc != GNMR_OK) die("gnmr_checkpoint_save", rc);
  return buf;
}

static void write_file(const char *path, const unsigned char *buf, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
    fprintf(stderr,
            "mpi_dp: cannot write checkpoint %s (does its folder exist? "
            "--checkpoint PATH picks another)\n",
            path);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* Rank 0 reads the file back and broadcasts the bytes: no shared file
   system needed. */
static unsigned char *read_and_broadcast(job *j, uint64_t *len) {
  unsigned char *buf = NULL;
  if (j->rank == 0) {
    FILE *f = fopen(j->checkpoint_path, "rb");
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (!f || size < 0 || fseek(f, 0, SEEK_SET) != 0) {
      fprintf(stderr, "mpi_dp: cannot read checkpoint %s\n",
              j->checkpoint_path);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    *len = (uint64_t)size;
    buf = (unsigned char *)xmalloc((size_t)*len);
    if (fread(buf, 1, (size_t)*len, f) != (size_t)*len) {
      fprintf(stderr, "mpi_dp: short read of %s\n", j->checkpoint_path);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fclose(f);
  }
  MPI_Bcast(len, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (j->rank != 0) buf = (unsigned char *)xmalloc((size_t)*len);
  MPI_Bcast(buf, (int)*len, MPI_BYTE, 0, MPI_COMM_WORLD);
  return buf;
}

static gnmr_config run_config(void) {
  gnmr_config cfg = gnmr_config_default();
  cfg.max_recovering = 2;
  cfg.lock_steps = 8;
  cfg.warmup_steps = 16;
  cfg.spike_policy = GNMR_SPIKE_CLIP;
  return cfg;
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv) {
  static job j;
  gnmr_slot units[N_UNITS];
  gnmr_ctl ctl;
  gnmr_config cfg = run_config(), fresh = gnmr_config_default();
  const size_t log_bytes = (size_t)STEPS * N_UNITS * DECISION_BYTES;
  unsigned char *log_straight, *log_restart, *mine, *loaded, *final_a, *final_b;
  size_t mine_len, final_a_len, final_b_len, t, elements = 0;
  uint64_t loaded_len;
  long total_failures, float_equal = 0, restart_mismatch = 0;
  double max_rel = 0.0;
  int i, rc, step;

  MPI_Init(&argc, &argv);
  /* mpirun pipes our output: keep rank 0's lines in step with failures. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &j.size);
  j.perturb_rank = -1;
  j.checkpoint_path = "build/mpi_dp.ckpt"; /* build outputs stay in build/ */
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--checkpoint") == 0 && i + 1 < argc)
      j.checkpoint_path = argv[++i];
    else if (strcmp(argv[i], "--reduce-bcast") == 0)
      j.reduce_bcast = 1;
    else if (strcmp(argv[i], "--perturb-rank") == 0 && i + 1 < argc)
      j.perturb_rank = atoi(argv[++i]);
    else {
      if (j.rank == 0)
        fprintf(stderr, "usage: mpi_dp [--checkpoint PATH] [--reduce-bcast] "
                        "[--perturb-rank R]\n");
      MPI_Finalize();
      return 2;
    }
  }
  for (t = 0; t < N_TENSORS; t++) {
    size_t b, e;
    shard_range(&j, t, j.rank, &b, &e);
    j.shard[t] = xmalloc((e - b) * dtype_size(TENSORS[t].dtype));
    j.full[t] = xmalloc(TENSORS[t].n * dtype_size(TENSORS[t].dtype));
    elements += TENSORS[t].n;
  }
  if (j.rank == 0)
    printf("mpi_dp: %d ranks, %u units in %u tensors (f32, f16, bf16), %lu "
           "elements a step, uneven shards, %s\n",
           j.size, (unsigned)N_UNITS, (unsigned)N_TENSORS,
           (unsigned long)elements,
           j.reduce_bcast ? "MPI_Reduce + MPI_Bcast" : "MPI_Allreduce");

  /* Run A: never interrupted. */
  log_straight = (unsigned char *)xmalloc(log_bytes);
  rc = gnmr_init(&ctl, &cfg, units, N_UNITS);
  if (rc != GNMR_OK) die("gnmr_init", rc);
  train(&j, &ctl, 0, STEPS, log_straight, 1);
  final_a = save(&ctl, &final_a_len);

  /* Run B: the same job, killed after step RESTART_AT - 1 and restarted
     from rank 0's checkpoint. */
  log_restart = (unsigned char *)xmalloc(log_bytes);
  rc = gnmr_init(&ctl, &cfg, units, N_UNITS);
  if (rc != GNMR_OK) die("gnmr_init", rc);
  train(&j, &ctl, 0, RESTART_AT, log_restart, 0);
  mine = save(&ctl, &mine_len);
  if (j.rank == 0) write_file(j.checkpoint_path, mine, mine_len);
  MPI_Barrier(MPI_COMM_WORLD);

  /* The crash: the controller and its units are gone. The restarted process
     initialises a fresh controller (any config: the checkpoint restores
     it) and loads the bytes rank 0 wrote. */
  memset(&ctl, 0xA5, sizeof ctl);
  memset(units, 0xA5, sizeof units);
  rc = gnmr_init(&ctl, &fresh, units, N_UNITS);
  if (rc != GNMR_OK) die("gnmr_init", rc);
  loaded = read_and_broadcast(&j, &loaded_len);
  rc = gnmr_checkpoint_load(&ctl, loaded, (size_t)loaded_len);
  if (rc != GNMR_OK) {
    fail(&j, "gnmr_checkpoint_load: %s", gnmr_strerror(rc));
    j.restart_mismatch++;
  }
  /* Rank 0's state was every rank's state. */
  if (loaded_len != mine_len || memcmp(loaded, mine, mine_len) != 0) {
    fail(&j, "rank 0's checkpoint differs from this rank's own state");
    j.restart_mismatch++;
  }
  train(&j, &ctl, RESTART_AT, STEPS, log_restart, 0);
  final_b = save(&ctl, &final_b_len);

  for (step = 0; step < STEPS; step++) {
    size_t at = (size_t)step * N_UNITS * DECISION_BYTES;
    if (memcmp(log_straight + at, log_restart + at, N_UNITS * DECISION_BYTES) !=
        0) {
      fail(&j,
           "step %d: decisions after the restart differ from the "
           "uninterrupted run",
           step);
      j.restart_mismatch++;
      break;
    }
  }
  if (final_a_len != final_b_len ||
      memcmp(final_a, final_b, final_a_len) != 0) {
    fail(&j, "final controller state after the restart differs from the "
             "uninterrupted run");
    j.restart_mismatch++;
  }

  MPI_Reduce(&j.max_rel_diff, &max_rel, 1, MPI_DOUBLE, MPI_MAX, 0,
             MPI_COMM_WORLD);
  MPI_Reduce(&j.float_norms_equal, &float_equal, 1, MPI_LONG, MPI_MIN, 0,
             MPI_COMM_WORLD);
  MPI_Reduce(&j.restart_mismatch, &restart_mismatch, 1, MPI_LONG, MPI_SUM, 0,
             MPI_COMM_WORLD);
  MPI_Allreduce(&j.failures, &total_failures, 1, MPI_LONG, MPI_SUM,
                MPI_COMM_WORLD);
  if (j.rank == 0) {
    if (j.ranks_disagree)
      printf("decisions: ranks DISAGREED at %ld step(s)\n", j.ranks_disagree);
    else
      printf("decisions: byte-identical on all %d ranks at every step of "
             "both runs (%d + %d steps)\n",
             j.size, STEPS, STEPS);
    printf(
        "norms vs single-process: max relative difference %.3g (limit "
        "%g); float norms equal at %ld of %ld finite unit-steps (both runs)\n",
        max_rel, NORM_TOL, float_equal, j.norms_compared);
    printf("restart: %lu-byte checkpoint written by rank 0 after step %d, "
           "loaded by all %d ranks into fresh controllers; steps %d..%d and "
           "final state identical to the uninterrupted run: %s\n",
           (unsigned long)loaded_len, RESTART_AT - 1, j.size, RESTART_AT,
           STEPS - 1, restart_mismatch ? "NO" : "yes");
    if (total_failures)
      printf("mpi_dp: FAILED, %ld failed check(s) across ranks\n",
             total_failures);
    else
      printf("mpi_dp: all checks passed on %d ranks\n", j.size);
  }
  for (t = 0; t < N_TENSORS; t++) {
    free(j.shard[t]);
    free(j.full[t]);
  }
  free(log_straight);
  free(log_restart);
  free(mine);
  free(loaded);
  free(final_a);
  free(final_b);
  MPI_Finalize();
  return total_failures ? 1 : 0;
}
