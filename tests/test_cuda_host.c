/* The CUDA example's norm kernels, run on the CPU: the same layout and the
   same functions (examples/cuda/gnmr_cuda_index.h), executed thread by
   thread in the order the kernels give, with the one device operation the
   CPU lacks (__shfl_down_sync) emulated. Every result must equal gnmr.h's
   canonical sums bit for bit. No GPU needed. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"
#include "examples/cuda/gnmr_cuda_index.h"

/* ---- the device operations, emulated --------------------------------- */

/* __shfl_down_sync(full mask, v, delta) for a whole warp: lane l reads lane
   l + delta, and a lane whose source is past the warp reads its own value. */
static void shfl_down_add(double *lane, uint32_t delta) {
  double before[GNMR_SUM_LANES];
  uint32_t l;
  memcpy(before, lane, sizeof before);
  for (l = 0; l < GNMR_SUM_LANES; l++) {
    uint32_t src = l + delta < GNMR_SUM_LANES ? l + delta : l;
    lane[l] = before[l] + before[src];
  }
}

/* One warp on one chunk, as norm_tasks runs it. */
static double warp_chunk_sum(const void *chunk, uint32_t dtype, uint32_t len) {
  double lane[GNMR_SUM_LANES];
  uint32_t l, delta;
  for (l = 0; l < GNMR_SUM_LANES; l++)
    lane[l] = gc_lane_sum(chunk, dtype, len, l);
  for (delta = GNMR_SUM_LANES / 2; delta >= 1; delta /= 2)
    shfl_down_add(lane, delta);
  return lane[0];
}

/* A block's tree: every thread runs gc_tree_level, then the barrier. */
static void block_tree(double *p, uint64_t m, uint32_t nthreads) {
  uint64_t stride;
  uint32_t tid;
  for (stride = 1; stride < m; stride *= 2)
    for (tid = 0; tid < nthreads; tid++)
      gc_tree_level(p, m, stride, tid, nthreads);
}

static size_t dtype_size(uint32_t dtype) {
  return dtype == GNMR_DTYPE_F32 ? 4 : 2;
}

/* norm_tasks: block b runs task b. */
static void run_norm_tasks(const gc_tensor *t, uint32_t nt, uint64_t n_tasks,
                           double *partial) {
  uint64_t b;
  for (b = 0; b < n_tasks; b++) {
    const gc_tensor *x = &t[gc_task_tensor(t, nt, b)];
    uint64_t first_chunk = (b - x->first_task) * GC_WARPS;
    uint64_t m = gc_chunks(x->n) - first_chunk;
    double chunk_sum[GC_WARPS];
    uint32_t w;
    if (m > GC_WARPS) m = GC_WARPS;
    for (w = 0; w < m; w++) {
      uint64_t start = (first_chunk + w) * GNMR_SUM_CHUNK;
      uint64_t len = x->n - start;
      chunk_sum[w] = warp_chunk_sum(
          (const char *)x->data + start * dtype_size(x->dtype), x->dtype,
          (uint32_t)(len < GNMR_SUM_CHUNK ? len : GNMR_SUM_CHUNK));
    }
    block_tree(chunk_sum, m, GC_THREADS);
    partial[b] = chunk_sum[0];
  }
}

/* norm_units: block u adds its tensors' trees in tensor order. */
static void run_norm_units(const gc_tensor *t, const gc_unit *units,
                           uint32_t n_units, double *partial, double *sumsq,
                           float *norms) {
  uint32_t u, i;
  for (u = 0; u < n_units; u++) {
    double sum = 0.0;
    for (i = 0; i < units[u].n_tensors; i++) {
      static double node[GC_UNIT_SHARED_TASKS]; /* the shared array */
      const gc_tensor *x = &t[units[u].first_tensor + i];
      uint64_t m = gc_tasks(x->n);
      double *p = partial + x->first_task;
      if (m <= GC_UNIT_SHARED_TASKS) {
        memcpy(node, p, m * sizeof *p);
        p = node;
      }
      block_tree(p, m, GC_THREADS);
      sum += m ? p[0] : 0.0;
    }
    sumsq[u] = sum;
    norms[u] = (float)sqrt(sum);
  }
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
   3 chunks + 17, a task of 8 chunks (32768), 9 chunks + 5, 3 tasks, 8 tasks
   + 1 (a partial ninth task: the carry), 13 tasks + 5 chunks + 300. */
static const uint64_t edge_sizes[] = {0,     1,     31,     32,    33,    4095,
                                      4096,  4097,  12305,  32767, 32768, 32769,
                                      36869, 98304, 262145, 446764};
#define N_EDGE (sizeof edge_sizes / sizeof edge_sizes[0])

static double library_sumsq(const gc_tensor *x) {
  if (x->dtype == GNMR_DTYPE_F32)
    return gnmr_sumsq_f32((const float *)x->data, x->n);
  if (x->dtype == GNMR_DTYPE_F16)
    return gnmr_sumsq_f16((const uint16_t *)x->data, x->n);
  return gnmr_sumsq_bf16((const uint16_t *)x->data, x->n);
}

/* ---- tests -------------------------------------------------------------- */

TEST(lane_offsets_cover_each_element_once_in_order) {
  static unsigned char seen[GNMR_SUM_CHUNK];
  uint32_t lane, step;
  memset(seen, 0, sizeof seen);
  for (lane = 0; lane < GNMR_SUM_LANES; lane++)
    for (step = 0; step < GC_LANE_STEPS; step++) {
      uint32_t off = gc_lane_offset(lane, step);
      REQUIRE(off < GNMR_SUM_CHUNK);
      EXPECT_EQ_INT(off % GNMR_SUM_LANES, lane);
      if (step > 0) EXPECT(off > gc_lane_offset(lane, step - 1));
      seen[off]++;
    }
  for (step = 0; step < GNMR_SUM_CHUNK; step++) EXPECT_EQ_INT(seen[step], 1);
  EXPECT_EQ_INT(GC_LANE_STEPS % GC_BATCH, 0);
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
  static const uint32_t threads[] = {1, 3, GC_WARPS, GC_THREADS};
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

/* The split the kernels make: subtrees of GC_WARPS chunks in norm_tasks,
   then the tree over their results in norm_units. */
TEST(two_level_tree_equals_one_tree) {
  uint64_t m;
  for (m = 1; m <= 300; m++) {
    double flat[300], tasks[300 / GC_WARPS + 1];
    gnmr__tree tree;
    uint64_t i, n_tasks = (m + GC_WARPS - 1) / GC_WARPS;
    memset(&tree, 0, sizeof tree);
    for (i = 0; i < m; i++) {
      flat[i] = ldexp(check_uniform(), (int)(check_rand() % 60) - 30);
      gnmr__tree_add(&tree, flat[i]);
    }
    for (i = 0; i < n_tasks; i++) {
      uint64_t len = m - i * GC_WARPS < GC_WARPS ? m - i * GC_WARPS : GC_WARPS;
      block_tree(flat + i * GC_WARPS, len, GC_THREADS);
      tasks[i] = flat[i * GC_WARPS];
    }
    block_tree(tasks, n_tasks, GC_THREADS);
    EXPECT_EQ_BITS(tasks[0], gnmr__tree_sum(&tree));
  }
}

TEST(task_to_tensor_lookup_with_empty_tensors) {
  static const uint64_t sizes[] = {0, 5, 0, 0, 8 * 4096 * 3 + 1, 0, 4096, 0};
  gc_tensor t[8];
  uint64_t task = 0, b;
  uint32_t i;
  for (i = 0; i < 8; i++) {
    t[i].data = NULL;
    t[i].n = sizes[i];
    t[i].first_task = task;
    t[i].dtype = GNMR_DTYPE_F32;
    t[i].unit = i;
    task += gc_tasks(sizes[i]);
  }
  EXPECT_EQ_INT(task, 1 + 4 + 1);
  for (b = 0; b < task; b++) {
    const gc_tensor *x = &t[gc_task_tensor(t, 8, b)];
    EXPECT(x->n > 0);
    EXPECT(b >= x->first_task && b < x->first_task + gc_tasks(x->n));
  }
}

/* The whole pipeline over a multi-tensor launch of mixed dtypes and edge
   sizes: per-tensor sums against gnmr_sumsq_*, unit norms against
   gnmr_unit_norms, bit for bit. */
TEST(pipeline_equals_library_bits) {
  enum { NT = N_EDGE * 3, NU = 20 };
  gc_tensor t[NT], single[NT];
  gc_unit units[NU], singles[NT];
  gnmr_tensor lib[NT];
  double sumsq[NT], *partial;
  float norms[NT], lib_norms[NU];
  uint64_t task = 0;
  uint32_t i, u;
  for (i = 0; i < NT; i++) {
    uint32_t dtype = i % 3 == 0   ? GNMR_DTYPE_F32
                     : i % 3 == 1 ? GNMR_DTYPE_BF16
                                  : GNMR_DTYPE_F16;
    uint64_t n = edge_sizes[(i * 7) % N_EDGE];
    void *data = n ? malloc(n * dtype_size(dtype)) : NULL;
    REQUIRE(n == 0 || data);
    fill(data, dtype, n);
    t[i].data = data;
    t[i].n = n;
    t[i].dtype = dtype;
    t[i].unit = (uint32_t)((uint64_t)i * NU / NT); /* sorted, 2-3 per unit */
    t[i].first_task = task;
    task += gc_tasks(n);
    lib[i].data = data;
    lib[i].n = n;
    lib[i].dtype = (int)dtype;
    lib[i].unit = t[i].unit;
  }
  for (u = 0; u < NU; u++) units[u].n_tensors = 0;
  for (i = NT; i-- > 0;) {
    units[t[i].unit].first_tensor = i;
    units[t[i].unit].n_tensors++;
  }
  partial = (double *)malloc((task ? task : 1) * sizeof *partial);
  REQUIRE(partial);

  /* One unit per tensor: every tensor's own sum. */
  for (i = 0; i < NT; i++) {
    single[i] = t[i];
    single[i].unit = i;
    singles[i].first_tensor = i;
    singles[i].n_tensors = 1;
  }
  run_norm_tasks(single, NT, task, partial);
  run_norm_units(single, singles, NT, partial, sumsq, norms);
  for (i = 0; i < NT; i++) EXPECT_EQ_BITS(sumsq[i], library_sumsq(&t[i]));

  run_norm_tasks(t, NT, task, partial);
  run_norm_units(t, units, NU, partial, sumsq, norms);
  REQUIRE(gnmr_unit_norms(lib, NT, lib_norms, NU) == GNMR_OK);
  for (u = 0; u < NU; u++) EXPECT_EQ_BITS(norms[u], lib_norms[u]);

  free(partial);
  for (i = 0; i < NT; i++) free((void *)t[i].data);
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

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(lane_offsets_cover_each_element_once_in_order),
      CHECK_CASE(shuffle_down_fold_equals_library_fold),
      CHECK_CASE(tree_levels_equal_library_tree),
      CHECK_CASE(two_level_tree_equals_one_tree),
      CHECK_CASE(task_to_tensor_lookup_with_empty_tensors),
      CHECK_CASE(pipeline_equals_library_bits),
      CHECK_CASE(power_of_two_scaling_scales_the_sum_exactly),
  };
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
