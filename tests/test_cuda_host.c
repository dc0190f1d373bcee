/* The CUDA norm kernel (examples/cuda/gnmr_norms.cuh), run on the CPU: the
   same layout and the same functions, executed warp by warp and thread by
   thread in the order the kernel gives, its blocks interleaved at their
   barriers in a random schedule (whichever block completes a group node, a
   tensor or a unit adds it), with the one device operation the CPU lacks
   (__shfl_down_sync) emulated. Every result must equal gnmr.h's canonical
   sums bit for bit, every unit be written once a launch, and every ticket
   be back at 0 after it. No GPU needed. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"
/* Trees of more than 4 groups (128 chunks) in the global scratch, so that a
   small test reaches that path. */
#define GNMR_NORMS_SHARED 4
#include "examples/cuda/gnmr_norms.cuh"
#include "tests/cuda/regions.h"

/* ---- the device operations, emulated --------------------------------- */

/* __shfl_down_sync(full mask, v, delta) and an add, for a whole warp: lane
   l reads lane l + delta, a lane whose source is past the warp its own
   value. */
static void shfl_down_add(double *lane, uint32_t delta) {
  double before[GNMR_SUM_LANES];
  uint32_t l;
  memcpy(before, lane, sizeof before);
  for (l = 0; l < GNMR_SUM_LANES; l++) {
    uint32_t src = l + delta < GNMR_SUM_LANES ? l + delta : l;
    lane[l] = before[l] + before[src];
  }
}

/* A block's tree: every thread runs the level, then the barrier. */
static void block_tree(double *p, uint64_t m, uint32_t nthreads) {
  uint64_t stride;
  uint32_t tid;
  for (stride = 1; stride < m; stride *= 2)
    for (tid = 0; tid < nthreads; tid++)
      gnmr_norms__tree_level(p, m, stride, tid, nthreads, 0);
}

static size_t dtype_size(uint32_t dtype) {
  return dtype == GNMR_DTYPE_F32 ? 4 : 2;
}

/* A warp on a chunk, one element per lane and load: the lane sums, then
   the fold by halves. */
static double warp_lane_chunk(const void *chunk, uint32_t dtype, uint32_t len) {
  double lane[GNMR_SUM_LANES];
  uint32_t l, delta;
  for (l = 0; l < GNMR_SUM_LANES; l++)
    lane[l] = gnmr_norms__lane_sum(chunk, dtype, len, l);
  for (delta = GNMR_SUM_LANES / 2; delta >= 1; delta /= 2)
    shfl_down_add(lane, delta);
  return lane[0];
}

/* A warp on a chunk of 16-bit elements, 16 bytes a load, as
   gnmr_norms__wide_chunk runs it: each batch of loads into the warp's
   buffer (thread t's word w = t + 32 (s + b), elements 8 w ... 8 w + 7,
   at 8 (32 b + t)), then every lane's additions from the buffer; then the
   fold. */
static double warp_wide_chunk(const void *chunk, uint32_t dtype, uint32_t len) {
  uint16_t buf[GNMR_NORMS_WIDE_BUF];
  double lane[GNMR_SUM_LANES];
  uint32_t s, b, t, k, delta;
  for (t = 0; t < GNMR_SUM_LANES; t++) lane[t] = 0.0;
  for (s = 0; s < GNMR_NORMS_WIDE_LOADS; s += GNMR_NORMS_WIDE_BATCH) {
    for (b = 0; b < GNMR_NORMS_WIDE_BATCH; b++)
      for (t = 0; t < GNMR_SUM_LANES; t++) {
        const uint32_t w = (s + b) * GNMR_SUM_LANES + t;
        uint16_t *dst = buf + 8 * (b * GNMR_SUM_LANES + t);
        if (8 * w + 8 <= len)
          memcpy(dst, (const char *)chunk + 16 * (size_t)w, 16);
        else
          for (k = 0; k < 8; k++)
            dst[k] = gnmr_norms__wide_part(chunk, len, w, k);
      }
    for (t = 0; t < GNMR_SUM_LANES; t++)
      lane[t] = gnmr_norms__wide_rows(buf, 8 * GNMR_NORMS_WIDE_BATCH, t, dtype,
                                      lane[t]);
  }
  for (delta = GNMR_SUM_LANES / 2; delta >= 1; delta /= 2)
    shfl_down_add(lane, delta);
  return lane[0];
}

/* Warp w's chunk sum, as gnmr_norms__chunk_sum: 16 bytes a load for
   16-byte aligned 16-bit data, else an element a load. */
static double chunk_sum(const gnmr_norms__tensor *x, uint64_t chunk) {
  const uint64_t start = (chunk - x->first_chunk) * GNMR_SUM_CHUNK;
  const uint32_t len =
      (uint32_t)(x->n - start < GNMR_SUM_CHUNK ? x->n - start : GNMR_SUM_CHUNK);
  const char *p = (const char *)x->data + start * dtype_size(x->dtype);
  if (x->dtype != GNMR_DTYPE_F32 && ((uintptr_t)x->data & 15u) == 0)
    return warp_wide_chunk(p, x->dtype, len);
  return warp_lane_chunk(p, x->dtype, len);
}

/* A warp's tree over 32 consecutive values, +0 past m (levels 1 to 5). */
static double warp_group_tree(const double *c, uint64_t first, uint64_t m) {
  double v[GNMR_NORMS_GROUP];
  uint32_t l, delta;
  for (l = 0; l < GNMR_NORMS_GROUP; l++)
    v[l] = first + l < m ? c[first + l] : 0.0;
  for (delta = 1; delta < GNMR_NORMS_GROUP; delta *= 2) shfl_down_add(v, delta);
  return v[0];
}

/* ---- gnmr_norms__kernel, emulated ---------------------------------------- */

/* One launch: the kernel's arguments, and how often each unit was
   written. */
typedef struct emu_launch {
  const gnmr_norms__tensor *t;
  const uint32_t *unit_first, *unit_tensors, *need, *empty;
  double *chunk_sums, *group_sums, *tensor_sums, *sumsq;
  float *norms;
  uint32_t *group_tickets, *tensor_tickets, *unit_tickets, *writes;
  uint64_t n_chunks, blocks;
  uint32_t nt, n_empty;
} emu_launch;

/* One block: its shared memory, and the next of its steps (1 to 5, the
   stretches between the kernel's block barriers). */
typedef struct emu_block {
  uint64_t id;
  int step;
  uint32_t warp_group[GNMR_NORMS_WARPS], done_group[GNMR_NORMS_WARPS], n_done,
      tree[GNMR_NORMS_WARPS], done[GNMR_NORMS_WARPS];
} emu_block;

static void emu_unit_out(const emu_launch *a, uint32_t u, double sum) {
  a->sumsq[u] = sum;
  a->norms[u] = (float)sqrt(sum);
  a->writes[u]++;
}

/* Runs block b's next step, as every thread of the block would. */
static void emu_block_step(const emu_launch *a, emu_block *b) {
  static double node[GNMR_NORMS_SHARED]; /* the shared array */
  const gnmr_norms__tensor *t = a->t;
  uint32_t w;
  switch (b->step++) {
  case 1: { /* the empty units (grid-stride), the chunk sums */
    const uint64_t threads = a->blocks * GNMR_NORMS_THREADS;
    uint64_t i;
    for (w = 0; w < GNMR_NORMS_THREADS; w++)
      for (i = b->id * GNMR_NORMS_THREADS + w; i < a->n_empty; i += threads)
        emu_unit_out(a, a->empty[i], 0.0);
    for (w = 0; w < GNMR_NORMS_WARPS; w++) {
      const uint64_t chunk = b->id * GNMR_NORMS_WARPS + w;
      b->tree[w] = b->done[w] = b->warp_group[w] = GNMR_NORMS_NONE;
      if (chunk >= a->n_chunks) continue;
      {
        const gnmr_norms__tensor *x =
            &t[gnmr_norms__chunk_tensor(t, a->nt, chunk)];
        b->warp_group[w] = gnmr_norms__chunk_group(x, chunk);
        a->chunk_sums[chunk] = chunk_sum(x, chunk);
      }
    }
    break;
  }
  case 2: { /* thread 0: the group tickets */
    uint32_t group[GNMR_NORMS_WARPS], count[GNMR_NORMS_WARPS], i;
    const uint32_t n = gnmr_norms__claims(b->warp_group, group, count);
    b->n_done = 0;
    for (i = 0; i < n; i++) {
      const gnmr_norms__tensor *x =
          &t[gnmr_norms__group_tensor(t, a->nt, group[i])];
      if (gnmr_norms__ticket(&a->group_tickets[group[i]], count[i],
                             gnmr_norms__group_size(x, group[i])))
        b->done_group[b->n_done++] = group[i];
    }
    break;
  }
  case 3: /* warp w: group node done_group[w] */
    for (w = 0; w < b->n_done; w++) {
      const uint32_t g = b->done_group[w];
      const uint32_t ti = gnmr_norms__group_tensor(t, a->nt, g);
      const uint64_t m = gnmr_norms__chunks(t[ti].n);
      const double v =
          warp_group_tree(a->chunk_sums + t[ti].first_chunk,
                          (g - t[ti].first_group) * GNMR_NORMS_GROUP, m);
      if (m <= GNMR_NORMS_GROUP) {
        a->tensor_sums[ti] = v;
        b->done[w] = ti;
      } else {
        a->group_sums[g] = v;
        if (gnmr_norms__ticket(&a->tensor_tickets[ti], 1,
                               (uint32_t)gnmr_norms__groups(m)))
          b->tree[w] = ti;
      }
    }
    break;
  case 4: /* the block: the trees of the tensors it completed */
    for (w = 0; w < GNMR_NORMS_WARPS; w++) {
      const uint32_t ti = b->tree[w];
      uint64_t m;
      double *p;
      if (ti == GNMR_NORMS_NONE) continue;
      m = gnmr_norms__groups(gnmr_norms__chunks(t[ti].n));
      p = a->group_sums + t[ti].first_group;
      if (m <= GNMR_NORMS_SHARED) {
        memcpy(node, p, m * sizeof *p);
        p = node;
      }
      block_tree(p, m, GNMR_NORMS_THREADS);
      a->tensor_sums[ti] = p[0];
      b->done[w] = ti;
    }
    break;
  case 5: /* lane 0 of warp w: the unit tickets and sums */
    for (w = 0; w < GNMR_NORMS_WARPS; w++) {
      uint32_t u;
      if (b->done[w] == GNMR_NORMS_NONE) continue;
      u = t[b->done[w]].unit;
      if (gnmr_norms__ticket(&a->unit_tickets[u], 1, a->need[u]))
        emu_unit_out(a, u,
                     gnmr_norms__unit_sum(t, a->unit_first, a->unit_tensors,
                                          a->tensor_sums, u));
    }
    break;
  }
}

/* The launch: every block resident at once, the scheduler running a step
   of a random block at a time (blocks interleave at their barriers, as on
   the device with any schedule). */
static int emu_launch_run(const emu_launch *a) {
  emu_block *b = (emu_block *)malloc(a->blocks * sizeof *b);
  uint64_t live = a->blocks, k;
  if (!b) return GNMR_ESIZE;
  for (k = 0; k < a->blocks; k++) {
    b[k].id = k;
    b[k].step = 1;
  }
  while (live > 0) {
    k = check_rand() % live;
    emu_block_step(a, &b[k]);
    if (b[k].step > 5) b[k] = b[--live];
  }
  free(b);
  return GNMR_OK;
}

/* NaN with a payload: scratch that no launch should read before writing. */
static void poison(double *p, uint64_t n) {
  const uint64_t bits = 0x7FF8DEADBEEF0000ull;
  uint64_t i;
  for (i = 0; i < n; i++) memcpy(&p[i], &bits, sizeof bits);
}

/* The whole plan on the CPU: the layout and the kernel as
   gnmr_norms_plan_init and gnmr_norms_enqueue set them up, launched three
   times as a replayed graph would be, each time with the scratch and the
   outputs poisoned and another schedule: every unit written exactly once,
   every ticket back at 0 after each launch, and the same bits each time. */
static int run_plan(const gnmr_tensor *lib, size_t nt, uint32_t n_units,
                    double *sumsq, float *norms) {
  gnmr_norms__tensor *t = (gnmr_norms__tensor *)malloc((nt + 1) * sizeof *t);
  uint32_t *first = (uint32_t *)malloc((n_units + 1) * sizeof *first);
  uint32_t *order = (uint32_t *)malloc((nt + 1) * sizeof *order);
  uint32_t *need = (uint32_t *)malloc((n_units + 1) * sizeof *need);
  uint32_t *empty = (uint32_t *)malloc((n_units + 1) * sizeof *empty);
  uint32_t *writes = (uint32_t *)malloc((n_units + 1) * sizeof *writes);
  double *tensor_sums = (double *)malloc((nt + 1) * sizeof *tensor_sums);
  double *again = (double *)malloc((n_units + 1) * sizeof *again);
  double *chunk_sums = NULL, *group_sums = NULL;
  uint32_t *tickets = NULL;
  uint64_t chunks = 0, groups = 0, n_tickets = 0, i;
  emu_launch a;
  memset(&a, 0, sizeof a);
  int rc = GNMR_ESIZE, launch;
  if (t && first && order && need && empty && writes && tensor_sums && again)
    rc =
        gnmr_norms__layout(lib, nt, n_units, t, first, order, &chunks, &groups);
  if (rc == GNMR_OK) {
    n_tickets = groups + nt + n_units;
    chunk_sums = (double *)malloc((chunks + 1) * sizeof *chunk_sums);
    group_sums = (double *)malloc((groups + 1) * sizeof *group_sums);
    tickets = (uint32_t *)calloc(n_tickets + 1, sizeof *tickets);
    if (!chunk_sums || !group_sums || !tickets) rc = GNMR_ESIZE;
  }
  if (rc == GNMR_OK) {
    a.t = t;
    a.unit_first = first;
    a.unit_tensors = order;
    a.need = need;
    a.empty = empty;
    a.n_empty = gnmr_norms__unit_need(t, first, order, n_units, need, empty);
    a.chunk_sums = chunk_sums;
    a.group_sums = group_sums;
    a.tensor_sums = tensor_sums;
    a.norms = norms;
    a.group_tickets = tickets;
    a.tensor_tickets = tickets + groups;
    a.unit_tickets = a.tensor_tickets + nt;
    a.writes = writes;
    a.n_chunks = chunks;
    a.nt = (uint32_t)nt;
    a.blocks = (chunks + GNMR_NORMS_WARPS - 1) / GNMR_NORMS_WARPS;
    if (a.blocks == 0) a.blocks = 1; /* as gnmr_norms_enqueue */
  }
  for (launch = 0; launch < 3 && rc == GNMR_OK; launch++) {
    a.sumsq = launch == 0 ? sumsq : again;
    poison(chunk_sums, chunks);
    poison(group_sums, groups);
    poison(tensor_sums, nt);
    poison(a.sumsq, n_units);
    for (i = 0; i < n_units; i++) writes[i] = 0;
    rc = emu_launch_run(&a);
    for (i = 0; i < n_units && rc == GNMR_OK; i++)
      if (writes[i] != 1) rc = GNMR_ESTATE;
    for (i = 0; i < n_tickets && rc == GNMR_OK; i++)
      if (tickets[i] != 0) rc = GNMR_ESTATE;
    if (rc == GNMR_OK && launch > 0 &&
        memcmp(sumsq, again, n_units * sizeof *sumsq) != 0)
      rc = GNMR_ESTATE;
  }
  free(t);
  free(first);
  free(order);
  free(need);
  free(empty);
  free(writes);
  free(tensor_sums);
  free(again);
  free(chunk_sums);
  free(group_sums);
  free(tickets);
  return rc;
}

/* ---- test data ---------------------------------------------------------- */

/* Values over a wide range, subnormals included, in the tensor's dtype. */
static void fill(void *data, uint32_t dtype, uint64_t n) {
  uint64_t i;
  for (i = 0; i < n; i++) {
    uint64_t r = check_rand();
    uint32_t f32 = (uint32_t)(r & 0x807FFFFFu) |
                   (uint32_t)(60 + (r >> 32) % 100) << 23; /* 2^-67..2^32 */
    if ((r >> 48) % 64 == 0) f32 &= 0x807FFFFFu; /* subnormal or zero */
    if (dtype == GNMR_DTYPE_F32)
      memcpy((float *)data + i, &f32, 4);
    else if (dtype == GNMR_DTYPE_BF16)
      ((uint16_t *)data)[i] = (uint16_t)(f32 >> 16);
    else /* f16: any finite bits; exponent 0 gives subnormals */
      ((uint16_t *)data)[i] =
          (uint16_t)((r & 0x83FFu) | ((r >> 20) % 31) << 10);
  }
}

/* Sizes around every boundary of the layout: a warp (32), a chunk (4096),
   3 chunks + 17, 8 chunks (32768), 9 chunks + 5, 24 chunks, 64 chunks + 1,
   109 chunks + 300 (groups of 32 chunks: a partial last group, carried). */
static const uint64_t edge_sizes[] = {0,     1,     31,     32,    33,    4095,
                                      4096,  4097,  12305,  32767, 32768, 32769,
                                      36869, 98304, 262145, 446764};
#define N_EDGE (sizeof edge_sizes / sizeof edge_sizes[0])

static double library_sumsq(const gnmr_norms__tensor *x) {
  if (x->dtype == GNMR_DTYPE_F32)
    return gnmr_sumsq_f32((const float *)x->data, x->n);
  if (x->dtype == GNMR_DTYPE_F16)
    return gnmr_sumsq_f16((const uint16_t *)x->data, x->n);
  return gnmr_sumsq_bf16((const uint16_t *)x->data, x->n);
}

/* ---- tests -------------------------------------------------------------- */

/* A lane's sum: elements lane, lane + 32, ... of the chunk, in that order,
   past len as +0; every element of the chunk read by exactly one lane. */
TEST(lane_sum_is_the_canonical_lane) {
  static float x[GNMR_SUM_CHUNK];
  static const uint32_t lens[] = {0, 1, 31, 33, 1000, 4095, GNMR_SUM_CHUNK};
  size_t k;
  fill(x, GNMR_DTYPE_F32, GNMR_SUM_CHUNK);
  EXPECT_EQ_INT(GNMR_NORMS_LANE_STEPS % GNMR_NORMS_BATCH, 0);
  for (k = 0; k < sizeof lens / sizeof lens[0]; k++) {
    uint32_t lane;
    for (lane = 0; lane < GNMR_SUM_LANES; lane++) {
      double want = 0.0;
      uint32_t i;
      for (i = lane; i < lens[k]; i += GNMR_SUM_LANES)
        want += (double)x[i] * (double)x[i];
      EXPECT_EQ_BITS(gnmr_norms__lane_sum(x, GNMR_DTYPE_F32, lens[k], lane),
                     want);
    }
  }
}

/* 16 bytes a load: the chunk's canonical sum, for every length (full and
   partial last words), with NaN and Inf among the elements, both dtypes. */
TEST(wide_chunk_equals_library_chunk) {
  static uint16_t x[GNMR_SUM_CHUNK];
  static const uint32_t lens[] = {0,    1,    2,    7,    8,    9,
                                  31,   32,   33,   63,   64,   65,
                                  255,  256,  257,  1000, 1001, 1023,
                                  1024, 1025, 2047, 2048, 4095, GNMR_SUM_CHUNK};
  uint32_t dtype;
  size_t k;
  for (dtype = GNMR_DTYPE_F16; dtype <= GNMR_DTYPE_BF16; dtype++) {
    fill(x, dtype, GNMR_SUM_CHUNK);
    for (k = 0; k < sizeof lens / sizeof lens[0]; k++) {
      double want = dtype == GNMR_DTYPE_BF16 ? gnmr_sumsq_bf16(x, lens[k])
                                             : gnmr_sumsq_f16(x, lens[k]);
      EXPECT_EQ_BITS(warp_wide_chunk(x, dtype, lens[k]), want);
      EXPECT_EQ_BITS(warp_lane_chunk(x, dtype, lens[k]), want);
    }
    x[777] = dtype == GNMR_DTYPE_BF16 ? 0x7F80u : 0x7C00u; /* Inf */
    EXPECT(isinf(warp_wide_chunk(x, dtype, GNMR_SUM_CHUNK)));
    x[778] = dtype == GNMR_DTYPE_BF16 ? 0x7FC0u : 0x7E00u; /* NaN */
    EXPECT(isnan(warp_wide_chunk(x, dtype, GNMR_SUM_CHUNK)));
    EXPECT(isinf(warp_wide_chunk(x, dtype, 778))); /* the NaN past len */
  }
}

TEST(shuffle_down_fold_equals_library_fold) {
  int trial;
  for (trial = 0; trial < 1000; trial++) {
    double lane[GNMR_SUM_LANES], copy[GNMR_SUM_LANES];
    uint32_t l, delta;
    for (l = 0; l < GNMR_SUM_LANES; l++)
      lane[l] = ldexp(check_uniform(), (int)(check_rand() % 80) - 40);
    memcpy(copy, lane, sizeof copy);
    for (delta = GNMR_SUM_LANES / 2; delta >= 1; delta /= 2)
      shfl_down_add(lane, delta);
    EXPECT_EQ_BITS(lane[0], gnmr__lane_fold(copy));
  }
}

/* Any thread count, any number of nodes: the library's streamed tree. */
TEST(tree_levels_equal_library_tree) {
  static const uint32_t threads[] = {1, 3, GNMR_NORMS_WARPS,
                                     GNMR_NORMS_THREADS};
  uint64_t m;
  size_t k;
  for (m = 0; m <= 200; m++)
    for (k = 0; k < sizeof threads / sizeof threads[0]; k++) {
      double p[200];
      gnmr__tree tree;
      uint64_t i;
      memset(&tree, 0, sizeof tree);
      for (i = 0; i < m; i++) {
        p[i] = ldexp(check_uniform(), (int)(check_rand() % 60) - 30);
        gnmr__tree_add(&tree, p[i]);
      }
      block_tree(p, m, threads[k]);
      EXPECT_EQ_BITS(m ? p[0] : 0.0, gnmr__tree_sum(&tree));
    }
}

/* The split the group kernel makes: groups of 32 chunks treed by a warp's
   shuffles with +0 past the end, then the tree over the groups. Also with
   an Inf and a NaN among the chunks. */
TEST(group_tree_then_block_tree_equals_one_tree) {
  static double flat[2200], groups[2200 / GNMR_NORMS_GROUP + 1];
  uint64_t m;
  for (m = 1; m <= 2200; m += m < 300 ? 1 : 37) {
    gnmr__tree tree;
    uint64_t i, n_groups = gnmr_norms__groups(m);
    int special = (int)(m % 3);
    double want;
    memset(&tree, 0, sizeof tree);
    for (i = 0; i < m; i++) {
      flat[i] = ldexp(check_uniform(), (int)(check_rand() % 60) - 30);
      if (special && i == m / 2) flat[i] = special == 1 ? INFINITY : NAN;
      gnmr__tree_add(&tree, flat[i]);
    }
    want = gnmr__tree_sum(&tree);
    for (i = 0; i < n_groups; i++)
      groups[i] = warp_group_tree(flat, i * GNMR_NORMS_GROUP, m);
    block_tree(groups, n_groups, GNMR_NORMS_THREADS);
    if (isnan(want))
      EXPECT(isnan(groups[0]));
    else
      EXPECT_EQ_BITS(groups[0], want);
  }
}

/* A block's warps as ticket claims: runs of one tensor, warps with
   nothing to claim skipped. */
TEST(claims_count_each_tensors_warps) {
  const uint32_t N = GNMR_NORMS_NONE;
  static const uint32_t warps[4][GNMR_NORMS_WARPS] = {{3, 3, 3, 3, 3, 3, 3, 3},
                                                      {N, 2, 2, N, 5, 5, 5, 6},
                                                      {N, N, N, N, N, N, N, N},
                                                      {0, 1, 2, 3, 4, 5, 6, 7}};
  static const uint32_t want_n[4] = {1, 3, 0, 8};
  uint32_t tensor[GNMR_NORMS_WARPS], count[GNMR_NORMS_WARPS], k;
  EXPECT_EQ_INT(GNMR_NORMS_WARPS, 8);
  for (k = 0; k < 4; k++)
    EXPECT_EQ_INT(gnmr_norms__claims(warps[k], tensor, count), want_n[k]);
  gnmr_norms__claims(warps[0], tensor, count);
  EXPECT(tensor[0] == 3 && count[0] == 8);
  gnmr_norms__claims(warps[1], tensor, count);
  EXPECT(tensor[0] == 2 && count[0] == 2 && tensor[1] == 5 && count[1] == 3 &&
         tensor[2] == 6 && count[2] == 1);
}

/* Tensors of 1 to 10 group nodes (some past the shared array, 4 here)
   side by side, so a block's warps write nodes of several tensors and
   tensors are completed by any block: unit sums against the library. */
TEST(plan_tensors_spanning_blocks) {
  enum { NT = 40, NU = 7 };
  int trial;
  for (trial = 0; trial < 4; trial++) {
    gnmr_tensor t[NT];
    void *data[NT];
    double sumsq[NU], lib_sumsq[NU];
    float norms[NU], lib_norms[NU];
    uint32_t i, u;
    for (i = 0; i < NT; i++) {
      const uint32_t dtype = (uint32_t)(check_rand() % 3);
      const size_t n = (size_t)(check_rand() % (300 * GNMR_SUM_CHUNK)) + 1;
      data[i] = malloc(n * dtype_size(dtype));
      REQUIRE(data[i]);
      fill(data[i], dtype, n);
      t[i].data = data[i];
      t[i].n = n;
      t[i].dtype = (int)dtype;
      t[i].unit = (uint32_t)(check_rand() % NU);
    }
    REQUIRE(run_plan(t, NT, NU, sumsq, norms) == GNMR_OK);
    REQUIRE(gnmr_unit_sumsq(t, NT, lib_sumsq, NU) == GNMR_OK);
    REQUIRE(gnmr_unit_norms(t, NT, lib_norms, NU) == GNMR_OK);
    for (u = 0; u < NU; u++) {
      EXPECT_EQ_BITS(sumsq[u], lib_sumsq[u]);
      EXPECT_EQ_BITS(norms[u], lib_norms[u]);
    }
    for (i = 0; i < NT; i++) free(data[i]);
  }
}

TEST(chunk_to_tensor_lookup_with_empty_tensors) {
  static const uint64_t sizes[] = {0, 5, 0, 0, 4096 * 3 + 1, 0, 4096, 0};
  gnmr_tensor lib[8];
  gnmr_norms__tensor t[8];
  uint32_t first[9], order[8], i;
  uint64_t chunks, groups, c;
  for (i = 0; i < 8; i++) {
    lib[i].data = sizes[i] ? (const void *)sizes : NULL;
    lib[i].n = (size_t)sizes[i];
    lib[i].dtype = GNMR_DTYPE_F32;
    lib[i].unit = i;
  }
  REQUIRE(gnmr_norms__layout(lib, 8, 8, t, first, order, &chunks, &groups) ==
          GNMR_OK);
  EXPECT_EQ_INT(chunks, 1 + 4 + 1);
  EXPECT_EQ_INT(groups, 3);
  for (c = 0; c < chunks; c++) {
    const gnmr_norms__tensor *x = &t[gnmr_norms__chunk_tensor(t, 8, c)];
    EXPECT(x->n > 0);
    EXPECT(c >= x->first_chunk &&
           c < x->first_chunk + gnmr_norms__chunks(x->n));
  }
  for (c = 0; c < groups; c++) {
    const gnmr_norms__tensor *x = &t[gnmr_norms__group_tensor(t, 8, c)];
    EXPECT(x->n > 0);
    EXPECT(c >= x->first_group &&
           c < x->first_group + gnmr_norms__groups(gnmr_norms__chunks(x->n)));
  }
}

/* Units in any order: each unit's tensors listed in tensor order; bad
   tensors refused with nothing written. */
TEST(layout_groups_units_stably_and_refuses_whole) {
  enum { NT = 9, NU = 5 };
  static const uint32_t unit_of[NT] = {3, 0, 3, 1, 0, 3, 4, 1, 0};
  static float data[4];
  gnmr_tensor lib[NT];
  gnmr_norms__tensor t[NT];
  uint32_t first[NU + 1], order[NT], i, u, k = 0;
  uint64_t chunks = 77, groups = 77;
  for (i = 0; i < NT; i++) {
    lib[i].data = data;
    lib[i].n = 4;
    lib[i].dtype = GNMR_DTYPE_F32;
    lib[i].unit = unit_of[i];
  }
  REQUIRE(gnmr_norms__layout(lib, NT, NU, t, first, order, &chunks, &groups) ==
          GNMR_OK);
  EXPECT_EQ_INT(chunks, NT);
  EXPECT_EQ_INT(groups, NT);
  EXPECT_EQ_INT(first[0], 0);
  EXPECT_EQ_INT(first[NU], NT);
  for (u = 0; u < NU; u++) /* unit u: every tensor of unit u, in order */
    for (i = 0; i < NT; i++)
      if (unit_of[i] == u) {
        EXPECT(k >= first[u] && k < first[u + 1]);
        EXPECT_EQ_INT(order[k++], i);
      }
  EXPECT_EQ_INT(first[2], first[3]); /* unit 2 has no tensor */
  /* refusals: nothing written */
  memset(order, 0xAB, sizeof order);
  lib[4].unit = NU;
  EXPECT_EQ_INT(
      gnmr_norms__layout(lib, NT, NU, t, first, order, &chunks, &groups),
      GNMR_EINVAL);
  lib[4].unit = 0;
  lib[4].dtype = 9;
  EXPECT_EQ_INT(
      gnmr_norms__layout(lib, NT, NU, t, first, order, &chunks, &groups),
      GNMR_EINVAL);
  lib[4].data = (const char *)data + 2; /* f32 off 4-byte alignment */
  EXPECT_EQ_INT(
      gnmr_norms__layout(lib, NT, NU, t, first, order, &chunks, &groups),
      GNMR_EINVAL);
  lib[4].dtype = GNMR_DTYPE_BF16; /* ... fine for 16-bit elements */
  EXPECT_EQ_INT(
      gnmr_norms__layout(lib, NT, NU, t, first, order, &chunks, &groups),
      GNMR_OK);
  memset(order, 0xAB, sizeof order);
  chunks = 77;
  lib[4].data = (const char *)data + 1; /* odd: not even for bf16 */
  EXPECT_EQ_INT(
      gnmr_norms__layout(lib, NT, NU, t, first, order, &chunks, &groups),
      GNMR_EINVAL);
  lib[4].data = NULL;
  EXPECT_EQ_INT(
      gnmr_norms__layout(lib, NT, NU, t, first, order, &chunks, &groups),
      GNMR_EINVAL);
  EXPECT_EQ_INT(
      gnmr_norms__layout(NULL, NT, NU, t, first, order, &chunks, &groups),
      GNMR_EINVAL);
  EXPECT_EQ_INT(order[0], 0xABABABABu);
  EXPECT_EQ_INT(chunks, 77);
  lib[4].n = 0; /* NULL data is fine for an empty tensor */
  EXPECT_EQ_INT(
      gnmr_norms__layout(lib, NT, NU, t, first, order, &chunks, &groups),
      GNMR_OK);
  EXPECT_EQ_INT(chunks, NT - 1);
}

/* The whole plan over mixed dtypes and edge sizes, units in any order and
   interleaved, NaN and Inf in some tensors: unit sums against
   gnmr_unit_sumsq, norms against gnmr_unit_norms, and (one unit per
   tensor) every tensor against gnmr_sumsq_*, bit for bit. */
TEST(plan_equals_library_bits) {
  enum { NT = N_EDGE * 3, NU = 20 };
  gnmr_tensor lib[NT], single[NT];
  char *blocks[NT];
  double sumsq[NT], lib_sumsq[NT];
  float norms[NT], lib_norms[NT];
  uint32_t i, u;
  for (i = 0; i < NT; i++) {
    uint32_t dtype = i % 3 == 0   ? GNMR_DTYPE_F32
                     : i % 3 == 1 ? GNMR_DTYPE_BF16
                                  : GNMR_DTYPE_F16;
    uint64_t n = edge_sizes[(i * 7) % N_EDGE];
    /* every fourth 16-bit tensor 2 bytes off 4-byte alignment: read one
       element per load */
    size_t skew = dtype != GNMR_DTYPE_F32 && i % 4 == 3 ? 2 : 0;
    char *block = n ? (char *)malloc(n * dtype_size(dtype) + skew) : NULL;
    void *data = block ? block + skew : NULL;
    REQUIRE(n == 0 || data);
    blocks[i] = block;
    fill(data, dtype, n);
    if (n > 100 && i % 11 == 0) { /* a NaN or an Inf */
      uint32_t bits = i % 2 ? 0x7FC00000u : 0x7F800000u;
      if (dtype == GNMR_DTYPE_F32)
        memcpy((float *)data + n / 2, &bits, 4);
      else
        ((uint16_t *)data)[n / 2] = dtype == GNMR_DTYPE_BF16
                                        ? (uint16_t)(bits >> 16)
                                        : (i % 2 ? 0x7E00u : 0x7C00u);
    }
    lib[i].data = data;
    lib[i].n = (size_t)n;
    lib[i].dtype = (int)dtype;
    lib[i].unit = (i * 7 + i / 5) % NU; /* any order, interleaved */
    single[i] = lib[i];
    single[i].unit = i;
  }

  REQUIRE(run_plan(single, NT, NT, sumsq, norms) == GNMR_OK);
  for (i = 0; i < NT; i++) {
    gnmr_norms__tensor x;
    double want;
    x.data = lib[i].data;
    x.n = lib[i].n;
    x.dtype = (uint32_t)lib[i].dtype;
    want = library_sumsq(&x);
    if (isnan(want))
      EXPECT(isnan(sumsq[i]));
    else
      EXPECT_EQ_BITS(sumsq[i], want);
  }

  REQUIRE(run_plan(lib, NT, NU, sumsq, norms) == GNMR_OK);
  REQUIRE(gnmr_unit_sumsq(lib, NT, lib_sumsq, NU) == GNMR_OK);
  REQUIRE(gnmr_unit_norms(lib, NT, lib_norms, NU) == GNMR_OK);
  for (u = 0; u < NU; u++) {
    if (isnan(lib_sumsq[u])) {
      EXPECT(isnan(sumsq[u]) && isnan(norms[u]));
      continue;
    }
    EXPECT_EQ_BITS(sumsq[u], lib_sumsq[u]);
    EXPECT_EQ_BITS(norms[u], lib_norms[u]);
  }
  for (i = 0; i < NT; i++) free(blocks[i]);
}

/* Units that no tensor completes (no tensors, or only empty ones), with
   and without any chunk in the launch: the kernel writes their +0 first
   thing (one block at least is launched). */
TEST(plan_units_without_data_read_zero) {
  static float y[5000];
  gnmr_tensor t[4];
  double sumsq[6], lib_sumsq[6];
  float norms[6];
  uint32_t i, u;
  fill(y, GNMR_DTYPE_F32, 5000);
  for (i = 0; i < 4; i++) {
    t[i].data = NULL;
    t[i].n = 0;
    t[i].dtype = GNMR_DTYPE_F32;
    t[i].unit = i; /* units 4 and 5 have no tensor */
  }
  REQUIRE(run_plan(t, 4, 6, sumsq, norms) == GNMR_OK);
  for (u = 0; u < 6; u++) {
    EXPECT_EQ_BITS(sumsq[u], 0.0);
    EXPECT_EQ_BITS(norms[u], 0.0f);
  }
  t[2].data = y; /* unit 2: one tensor of two chunks */
  t[2].n = 5000;
  REQUIRE(run_plan(t, 4, 6, sumsq, norms) == GNMR_OK);
  REQUIRE(gnmr_unit_sumsq(t, 4, lib_sumsq, 6) == GNMR_OK);
  for (u = 0; u < 6; u++) EXPECT_EQ_BITS(sumsq[u], lib_sumsq[u]);
  EXPECT(sumsq[2] > 0.0);
}

/* A ticket: a count that is the whole total takes none; otherwise the
   count that completes it says so and leaves it at 0. */
TEST(ticket_completes_once_and_rests_at_zero) {
  uint32_t c = 0;
  EXPECT(gnmr_norms__ticket(&c, 5, 5));
  EXPECT_EQ_INT(c, 0);
  EXPECT(!gnmr_norms__ticket(&c, 2, 5));
  EXPECT_EQ_INT(c, 2);
  EXPECT(!gnmr_norms__ticket(&c, 1, 5));
  EXPECT(gnmr_norms__ticket(&c, 2, 5));
  EXPECT_EQ_INT(c, 0);
}

/* A tensor of more than GNMR_NORMS_SHARED groups (its tree in the global
   scratch) beside small ones in the same unit. */
TEST(plan_big_tensor_tree_in_global_scratch) {
  const size_t big =
      (size_t)GNMR_NORMS_SHARED * GNMR_NORMS_GROUP * GNMR_SUM_CHUNK +
      GNMR_SUM_CHUNK * 40 + 3;
  uint16_t *x = (uint16_t *)malloc(big * 2);
  float y[1000], norms[2], lib_norms[2];
  double sumsq[2], lib_sumsq[2];
  gnmr_tensor t[3];
  REQUIRE(x);
  fill(x, GNMR_DTYPE_BF16, big);
  fill(y, GNMR_DTYPE_F32, 1000);
  t[0].data = y;
  t[0].n = 1000;
  t[0].dtype = GNMR_DTYPE_F32;
  t[0].unit = 1;
  t[1].data = x;
  t[1].n = big;
  t[1].dtype = GNMR_DTYPE_BF16;
  t[1].unit = 1;
  t[2] = t[0];
  t[2].unit = 0;
  EXPECT(gnmr_norms__groups(gnmr_norms__chunks(big)) > GNMR_NORMS_SHARED);
  REQUIRE(run_plan(t, 3, 2, sumsq, norms) == GNMR_OK);
  REQUIRE(gnmr_unit_sumsq(t, 3, lib_sumsq, 2) == GNMR_OK);
  REQUIRE(gnmr_unit_norms(t, 3, lib_norms, 2) == GNMR_OK);
  EXPECT_EQ_BITS(sumsq[0], lib_sumsq[0]);
  EXPECT_EQ_BITS(sumsq[1], lib_sumsq[1]);
  EXPECT_EQ_BITS(norms[0], lib_norms[0]);
  EXPECT_EQ_BITS(norms[1], lib_norms[1]);
  free(x);
}

/* The device tests' placement of several dtypes in one allocation
   (tests/cuda/regions.h): after a region of any size, the next starts
   aligned for any element. test_device once put f32 right after an odd
   number of bf16 elements; the check before each launch sees that
   address, and so does the plan's layout. */
TEST(regions_align_each_dtype_after_odd_sizes) {
  static const size_t odd_n = 12345;
  const size_t two[2] = {2 * odd_n, 4096 * 4};
  size_t at[2], bytes[7], off[7], total, i;
  int trial;
  total = regions_place(two, 2, at);
  EXPECT_EQ_INT(at[0], 0);
  EXPECT(at[1] >= 2 * odd_n && at[1] % REGION_ALIGN == 0);
  EXPECT_EQ_INT(total, at[1] + two[1]);
  EXPECT(region_aligned((const void *)(uintptr_t)(at[1]), 4));
  EXPECT(!region_aligned((const void *)(uintptr_t)(2 * odd_n),
                         4)); /* the old one */
  EXPECT(region_aligned((const void *)(uintptr_t)(2 * odd_n), 2));
  /* a struct's size need not be a power of two: a 40-byte gnmr_decision at
     cudaMalloc's 256-byte alignment is fine, at 4 mod 8 it is not */
  EXPECT(region_aligned((const void *)(uintptr_t)REGION_ALIGN, 40));
  EXPECT(region_aligned((const void *)(uintptr_t)(REGION_ALIGN + 40), 40));
  EXPECT(!region_aligned((const void *)(uintptr_t)(REGION_ALIGN + 4), 40));
  EXPECT(region_aligned((const void *)(uintptr_t)(REGION_ALIGN + 4), 12));
  EXPECT(!region_aligned((const void *)(uintptr_t)(REGION_ALIGN + 2), 12));
  for (trial = 0; trial < 1000; trial++) {
    for (i = 0; i < 7; i++) bytes[i] = (size_t)(check_rand() % 5000);
    total = regions_place(bytes, 7, off);
    for (i = 0; i < 7; i++) {
      EXPECT(region_aligned((const void *)(uintptr_t)(off[i]), 16));
      if (i > 0) EXPECT(off[i] >= off[i - 1] + bytes[i - 1]);
    }
    EXPECT_EQ_INT(total, off[6] + bytes[6]);
  }
}

/* The same two tensors through the emulated plan: the old placement is
   refused before any load, the placed one gives the library's bits. */
TEST(plan_after_odd_bf16_region_needs_placement) {
  enum { N = 3 * GNMR_SUM_CHUNK + 7 }; /* odd */
  const size_t bytes[2] = {2 * N, 1000 * 4};
  size_t at[2];
  const size_t total = regions_place(bytes, 2, at);
  char *arena = (char *)malloc(total + 2 * N + 4 * 1000);
  gnmr_tensor t[2];
  double sumsq[1], lib_sumsq[1];
  float norms[1], lib_norms[1];
  gnmr_norms__tensor out[2];
  uint32_t first[2], order[2];
  uint64_t chunks, groups;
  REQUIRE(arena);
  t[0].data = arena + at[0];
  t[0].n = N;
  t[0].dtype = GNMR_DTYPE_BF16;
  t[0].unit = 0;
  t[1].data = arena + 2 * N; /* f32 right after: 2-byte aligned */
  t[1].n = 1000;
  t[1].dtype = GNMR_DTYPE_F32;
  t[1].unit = 0;
  EXPECT_EQ_INT(
      gnmr_norms__layout(t, 2, 1, out, first, order, &chunks, &groups),
      GNMR_EINVAL);
  t[1].data = arena + at[1];
  fill(arena + at[0], GNMR_DTYPE_BF16, N);
  fill(arena + at[1], GNMR_DTYPE_F32, 1000);
  REQUIRE(run_plan(t, 2, 1, sumsq, norms) == GNMR_OK);
  REQUIRE(gnmr_unit_sumsq(t, 2, lib_sumsq, 1) == GNMR_OK);
  REQUIRE(gnmr_unit_norms(t, 2, lib_norms, 1) == GNMR_OK);
  EXPECT_EQ_BITS(sumsq[0], lib_sumsq[0]);
  EXPECT_EQ_BITS(norms[0], lib_norms[0]);
  free(arena);
}

/* The example checks S steps with one CPU pass over the data because its
   gradients are the base tensors times 2^e (e >= 0, no overflow): every
   square scales by 4^e and every partial sum with it, exactly. */
TEST(power_of_two_scaling_scales_the_sum_exactly) {
  enum { N = 3 * 4096 + 77 };
  static float f32[N], f32s[N];
  static uint16_t h[N], hs[N];
  int e;
  uint32_t i;
  fill(f32, GNMR_DTYPE_F32, N);
  for (i = 0; i < N; i++) f32[i] = ldexpf(f32[i], -40); /* headroom */
  for (e = 0; e <= 8; e++) {
    for (i = 0; i < N; i++) f32s[i] = ldexpf(f32[i], e);
    EXPECT_EQ_BITS(gnmr_sumsq_f32(f32s, N),
                   ldexp(gnmr_sumsq_f32(f32, N), 2 * e));
  }
  /* bf16 as the example scales it: widen, multiply, keep the top half. */
  fill(h, GNMR_DTYPE_BF16, N);
  for (i = 0; i < N; i++) h[i] &= 0xBFFFu; /* below 2^1: headroom */
  for (e = 0; e <= 8; e++) {
    for (i = 0; i < N; i++) {
      float f = ldexpf(gnmr_bf16_to_f32(h[i]), e);
      uint32_t bits;
      memcpy(&bits, &f, 4);
      hs[i] = (uint16_t)(bits >> 16);
    }
    EXPECT_EQ_BITS(gnmr_sumsq_bf16(hs, N), ldexp(gnmr_sumsq_bf16(h, N), 2 * e));
  }
  /* f16 normals: scaling adds e to the exponent field. */
  for (i = 0; i < N; i++)
    h[i] = (uint16_t)((check_rand() & 0x83FFu) | (1 + check_rand() % 20) << 10);
  for (e = 0; e <= 8; e++) {
    for (i = 0; i < N; i++) hs[i] = (uint16_t)(h[i] + (e << 10));
    EXPECT_EQ_BITS(gnmr_sumsq_f16(hs, N), ldexp(gnmr_sumsq_f16(h, N), 2 * e));
  }
}

/* The CUDA headers use gnmr.h's private names only as gnmr.h's contract
   block lists them, and every listed name still exists in gnmr.h. */
static int is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

/* name (len bytes) is listed, or extends a listed name that ends in '_'. */
static int in_contract(const char *block, const char *name, size_t len) {
  const char *p = block;
  while ((p = strstr(p, "\n     ")) != NULL) {
    const char *w = p + 6;
    size_t n = 0;
    while (is_ident(w[n])) n++;
    if (n > 0 && (n == len || (w[n - 1] == '_' && n < len)) &&
        memcmp(w, name, n) == 0)
      return 1;
    p = w;
  }
  return 0;
}

TEST(cuda_headers_use_only_the_listed_private_names) {
  static const char *const headers[] = {"examples/cuda/gnmr_ctl.cuh",
                                        "examples/cuda/gnmr_norms.cuh"};
  char *lib = check_read_text("gnmr.h"), *start, *end;
  size_t h;
  REQUIRE(lib != NULL);
  start = strstr(lib, "The private names the CUDA headers");
  REQUIRE(start != NULL);
  end = strstr(start, "*/");
  REQUIRE(end != NULL);
  *end = '\0';
  for (h = 0; h < sizeof headers / sizeof headers[0]; h++) {
    char *text = check_read_text(headers[h]), *p;
    REQUIRE(text != NULL);
    for (p = text; *p; p++) {
      size_t n = 0;
      if ((p != text && is_ident(p[-1])) ||
          (strncmp(p, "gnmr__", 6) != 0 && strncmp(p, "GNMR__", 6) != 0))
        continue;
      while (is_ident(p[n])) n++;
      if (!in_contract(start, p, n)) {
        printf("  %s: %.*s is not in gnmr.h's contract block\n", headers[h],
               (int)n, p);
        EXPECT(0);
      }
      p += n - 1;
    }
    free(text);
  }
  /* Each listed name is still in gnmr.h outside the block. */
  {
    const char *p = start;
    while ((p = strstr(p, "\n     ")) != NULL) {
      char name[64];
      const char *first;
      size_t n = 0;
      p += 6;
      while (is_ident(p[n]) && n < sizeof name - 1) n++;
      memcpy(name, p, n);
      name[n] = '\0';
      first = strstr(lib, name); /* before the block, or after it */
      if (n > 0 && !(first && first < start) && !strstr(end + 2, name)) {
        printf("  gnmr.h lists %s but no longer has it\n", name);
        EXPECT(0);
      }
    }
  }
  free(lib);
}

/* gnmr_norms.cuh's own names: those its manual (the opening comment) shows
   are the API; every other one is private (gnmr_norms__), so that a
   trainer's names cannot collide with a helper's. */
TEST(norms_header_helpers_are_private) {
  static const char prefix[] = "gnmr_norms_";
  char *text = check_read_text("examples/cuda/gnmr_norms.cuh"), *manual_end, *p;
  REQUIRE(text != NULL);
  manual_end = strstr(text, "*/");
  REQUIRE(manual_end != NULL);
  for (p = manual_end; *p; p++) {
    size_t n = 0;
    int shown = 0;
    const char *m;
    if ((p != text && is_ident(p[-1])) ||
        strncmp(p, prefix, sizeof prefix - 1) != 0 ||
        p[sizeof prefix - 1] == '_')
      continue;
    while (is_ident(p[n])) n++;
    for (m = strstr(text, prefix); !shown && m && m < manual_end;
         m = strstr(m + 1, prefix))
      shown = (m == text || !is_ident(m[-1])) && strncmp(m, p, n) == 0 &&
              !is_ident(m[n]);
    if (!shown) {
      printf("  gnmr_norms.cuh: %.*s is neither in its manual nor private "
             "(gnmr_norms__)\n",
             (int)n, p);
      EXPECT(0);
    }
    p += n - 1;
  }
  free(text);
}

/* GNMR_CUDA_ECUDA, gnmr.h's one code of the CUDA headers, has one copy
   outside C: the PyTorch bridge's, which must read the same. */
TEST(bridge_has_gnmr_cuda_ecuda) {
  char *text = check_read_text("examples/torch/gnmr_torch.py");
  const char *at;
  REQUIRE(text != NULL);
  at = strstr(text, "\nGNMR_CUDA_ECUDA = ");
  EXPECT(at != NULL);
  if (at) EXPECT_EQ_INT(atoi(at + 19), GNMR_CUDA_ECUDA);
  free(text);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(lane_sum_is_the_canonical_lane),
      CHECK_CASE(norms_header_helpers_are_private),
      CHECK_CASE(bridge_has_gnmr_cuda_ecuda),
      CHECK_CASE(wide_chunk_equals_library_chunk),
      CHECK_CASE(shuffle_down_fold_equals_library_fold),
      CHECK_CASE(tree_levels_equal_library_tree),
      CHECK_CASE(group_tree_then_block_tree_equals_one_tree),
      CHECK_CASE(claims_count_each_tensors_warps),
      CHECK_CASE(chunk_to_tensor_lookup_with_empty_tensors),
      CHECK_CASE(layout_groups_units_stably_and_refuses_whole),
      CHECK_CASE(plan_equals_library_bits),
      CHECK_CASE(plan_big_tensor_tree_in_global_scratch),
      CHECK_CASE(plan_units_without_data_read_zero),
      CHECK_CASE(ticket_completes_once_and_rests_at_zero),
      CHECK_CASE(plan_tensors_spanning_blocks),
      CHECK_CASE(power_of_two_scaling_scales_the_sum_exactly),
      CHECK_CASE(regions_align_each_dtype_after_odd_sizes),
      CHECK_CASE(plan_after_odd_bf16_region_needs_placement),
      CHECK_CASE(cuda_headers_use_only_the_listed_private_names),
  };
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
