/* train_stress.c - the training stress demo of gnmr.h.

   An MLP classifier (3 hidden ReLU layers, AdamW) trains with every linear
   layer on a low-cost path: the GEMM inputs (activation and weight) are
   quantized per tensor to FP8 E4M3, FP8 E5M2 or FP4 E2M1 (round to nearest
   even, saturating) with delayed scaling from an amax history, as Transformer
   Engine does. Each linear layer is one recoverable unit whose high-fidelity
   path is plain f32. `--stress N` injects N short numerical faults per 1000
   steps into the low-cost path of a few layers (ground truth in stress.csv):

     burst  a few input channels of the layer's quantized GEMM input come out
            TS_BURST_GAIN times too large for 2-6 steps (an activation outlier
            burst); the burst also lands in the amax history, so for the next
            LP_AMAX_HISTORY steps the scale is stale and small values lose
            their bits.
     stale  the layer's activation scale is TS_STALE_GAIN times too large for
            2-6 steps (a stale amax history): most of the tensor saturates.
            With `--stale under` it is TS_STALE_GAIN times too small instead
            (an amax history still holding an old outlier): values fall
            below the format's smallest and flush to zero, which only FP4
            E2M1's narrow range feels.

   A unit on the f32 path does not see its faults. Two training events that
   are not faults (lab/common.h): `--freeze L:P` trains layer L only
   after the first P% of steps (before, it has no gradient: its norm is
   exactly 0, as a frozen layer's or an unused LoRA factor's); `--shift L:P`
   reparametrises layer L at P% of the steps so that its gradient norm moves
   up 10x for good while the training goes on unchanged.

   The arms, with the same
   seeds, initial weights, data order and faults:

     f32    the reference: every unit f32, no faults
     lowp   low precision, no control
     clip   low precision, global gradient-norm clipping to 1.0
     adagc  low precision, per-unit adaptive clipping (AdaGC style): a unit's
            gradient is clipped to 1.05 x the EMA (beta 0.98) of its norm
     zclip, gstab, spam (only when --arms names them): peers of the
            library (lab/arms.h): ZClip's z-score clip of the global
            norm; GradientStabilizer style, each unit's norm bounded by
            mean + 3 sd of its own history; SPAM, AdamW's spike-aware
            per-entry clip and momentum reset
     gnmr   low precision with gnmr.h: per-unit norms from gnmr_unit_norms,
            decisions from gnmr_step; a recovering unit runs f32 for its lock
            interval and its gradient is multiplied by the decision's scale;
            on admission its amax histories start afresh (the f32 steps
            refill them), so it never returns to a scale the fault left stale

   Data: Fashion-MNIST in IDX form (`--data DIR`, files *-idx?-ubyte.gz or
   uncompressed) or, without --data, a built-in deterministic synthetic task
   (a random teacher network labels Gaussian inputs; `--heavy NU` gives its
   inputs Student-t tails with NU degrees of freedom, the same labels).

   Outputs in --out (default demo-out/): summary.csv, trace.csv (the first
   GNMR arm listed, first seed), stress.csv, loss.svg, recovery.svg, and with
   --sweep sweep.csv. A table on stdout, with a legend under it.

   Build: make demo (built-in data), make demo-full (Fashion-MNIST),
   make demo-sweep. Define TRAIN_STRESS_NO_MAIN to include this file in a
   test without its main(). */
#define _POSIX_C_SOURCE 200809L /* popen/pclose for gzip, see ts_open_idx */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lowp.h"
#include "arms.h"
#define DEMO_PROGRAM "train_stress"
#include "common.h"

/* ---- constants ----------------------------------------------------------- */

#define TS_LAYERS 4           /* 3 hidden layers + the output layer */
#define TS_MAX_ARMS ARM_COUNT /* arms in one run: lab/arms.h's table */
#define TS_BURST_GAIN 256.0f  /* outlier burst: channel gain */
#define TS_BURST_CHANNELS 4   /* outlier burst: channels hit */
#define TS_STALE_GAIN 64.0f   /* stale scale: factor the scale is off by */
#define TS_SPIKE_FACTOR 2.0   /* a loss spike: loss > 2 x its running EMA */

/* ---- data -----------------------------------------------------------------
 */

typedef struct ts_data {
  int n, dim, classes;
  float *x;   /* n x dim */
  uint8_t *y; /* n */
} ts_data;

static void ts_data_free(ts_data *d) {
  free(d->x);
  free(d->y);
  memset(d, 0, sizeof *d);
}

/* The built-in task: 64-dimensional Gaussian inputs labelled by a fixed
   random teacher (64 -> 24 ReLU -> 10, argmax). Deterministic, needs no
   file, and an MLP can learn it well but not perfectly. */
static void ts_synthetic(ts_data *train, ts_data *test) {
  enum { D = 64, H = 24, C = 10 };
  static float a[H][D], b[C][H];
  demo_rng r = {12345};
  ts_data *sets[2];
  int s, i, j, k, c;
  sets[0] = train;
  sets[1] = test;
  for (i = 0; i < H; i++)
    for (j = 0; j < D; j++) a[i][j] = (float)(demo_normal(&r) / sqrt(D));
  for (i = 0; i < C; i++)
    for (j = 0; j < H; j++) b[i][j] = (float)(demo_normal(&r) / sqrt(H));
  train->n = 16384;
  test->n = 2048;
  for (s = 0; s < 2; s++) {
    ts_data *d = sets[s];
    d->dim = D;
    d->classes = C;
    d->x = DEMO_CALLOC((size_t)d->n * D, float);
    d->y = DEMO_CALLOC((size_t)d->n, uint8_t);
    for (k = 0; k < d->n; k++) {
      float *x = d->x + (size_t)k * D, h[H], best = -1e30f;
      for (j = 0; j < D; j++) x[j] = (float)demo_normal(&r);
      for (i = 0; i < H; i++) {
        float z = 0.0f;
        for (j = 0; j < D; j++) z += a[i][j] * x[j];
        h[i] = z > 0.0f ? z : 0.0f;
      }
      for (c = 0; c < C; c++) {
        float z = 0.0f;
        for (i = 0; i < H; i++) z += b[c][i] * h[i];
        if (z > best) {
          best = z;
          d->y[k] = (uint8_t)c;
        }
      }
    }
  }
}

/* The built-in task with heavy tails (--heavy NU): each input row, drawn
   and labelled as above, is scaled by sqrt(NU / chi2_NU) (chi2_NU: a sum of
   NU squared standard normals from a stream of its own), which makes it a
   multivariate Student-t row with NU degrees of freedom. The labels are the
   Gaussian task's (taken before the scaling), so the task is the same and
   only its inputs, and so the gradients of a small batch, have heavy tails.
   Deterministic: the same rows for every seed, as the Gaussian task's. */
static void ts_heavy_tails(ts_data *d, int nu, uint64_t stream) {
  demo_rng r = {stream};
  int k, j, i;
  for (k = 0; k < d->n; k++) {
    float *x = d->x + (size_t)k * (size_t)d->dim;
    double chi2 = 0.0, s;
    for (i = 0; i < nu; i++) {
      double z = demo_normal(&r);
      chi2 += z * z;
    }
    s = sqrt((double)nu / (chi2 > 1e-300 ? chi2 : 1e-300));
    for (j = 0; j < d->dim; j++) x[j] = (float)(s * x[j]);
  }
}

/* IDX files come gzip-compressed in Debian's dataset-fashion-mnist. Rather
   than link zlib (the demo keeps to libc + libm like the library) or carry
   an inflate of its own, the demo reads them through `gzip -dc` (POSIX
   popen; gzip is on every system that has the package). An uncompressed
   file of the same name without .gz is read directly. */
typedef struct ts_stream {
  FILE *f;
  int piped;
  char path[1024];
} ts_stream;

static int ts_open_idx(ts_stream *s, const char *dir, const char *name) {
  char cmd[1200];
  FILE *probe;
  snprintf(s->path, sizeof s->path, "%s/%s", dir, name);
  if ((s->f = fopen(s->path, "rb")) != NULL) {
    s->piped = 0;
    return 0;
  }
  snprintf(s->path, sizeof s->path, "%s/%s.gz", dir, name);
  if (!(probe = fopen(s->path, "rb"))) return -1;
  fclose(probe);
  if (strchr(s->path, '\'')) return -1;
  snprintf(cmd, sizeof cmd, "gzip -dc '%s'", s->path);
  s->f = popen(cmd, "r");
  s->piped = 1;
  return s->f ? 0 : -1;
}

static int ts_close_idx(ts_stream *s) {
  return s->piped ? pclose(s->f) : fclose(s->f);
}

static uint32_t ts_be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

/* Reads one IDX file of unsigned bytes: images (3 dims) or labels (1 dim).
   Returns the item count; *dim gets the item size. Any problem is an error
   that names the file. */
static int ts_read_idx(const char *dir, const char *name, int want_dims,
                       unsigned char **out, int *dim) {
  ts_stream s;
  unsigned char head[16];
  uint32_t n, rows = 1, cols = 1;
  size_t size;
  int extra;
  if (ts_open_idx(&s, dir, name) != 0)
    DEMO_DIE("missing data file %s/%s(.gz) (Debian: apt-get install "
             "dataset-fashion-mnist, then --data "
             "/usr/share/datasets/fashion-mnist)",
             dir, name);
  if (fread(head, 1, 4 + 4 * (size_t)want_dims, s.f) !=
          4 + 4 * (size_t)want_dims ||
      head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] != want_dims)
    DEMO_DIE("%s: not an IDX file of unsigned bytes with %d dimension(s)",
             s.path, want_dims);
  n = ts_be32(head + 4);
  if (want_dims == 3) {
    rows = ts_be32(head + 8);
    cols = ts_be32(head + 12);
  }
  if (n == 0 || n > 1000000 || rows == 0 || rows > 1024 || cols == 0 ||
      cols > 1024)
    DEMO_DIE("%s: implausible IDX sizes %u x %u x %u", s.path, n, rows, cols);
  size = (size_t)n * rows * cols;
  *out = DEMO_CALLOC(size, unsigned char);
  if (fread(*out, 1, size, s.f) != size)
    DEMO_DIE("%s: truncated (%u items of %u bytes expected)", s.path, n,
             rows * cols);
  extra = fgetc(s.f) != EOF;
  if (ts_close_idx(&s) != 0) DEMO_DIE("%s: could not be decompressed", s.path);
  if (extra) DEMO_DIE("%s: trailing bytes after the data", s.path);
  *dim = (int)(rows * cols);
  return (int)n;
}

static void ts_load_split(const char *dir, const char *prefix, ts_data *d) {
  char img_name[64], lab_name[64];
  unsigned char *img, *lab;
  int n, nl, dim, one, i;
  snprintf(img_name, sizeof img_name, "%s-images-idx3-ubyte", prefix);
  snprintf(lab_name, sizeof lab_name, "%s-labels-idx1-ubyte", prefix);
  n = ts_read_idx(dir, img_name, 3, &img, &dim);
  nl = ts_read_idx(dir, lab_name, 1, &lab, &one);
  if (n != nl) DEMO_DIE("%s/%s: %d images but %d labels", dir, prefix, n, nl);
  d->n = n;
  d->dim = dim;
  d->classes = 10;
  d->x = DEMO_CALLOC((size_t)n * (size_t)dim, float);
  d->y = DEMO_CALLOC((size_t)n, uint8_t);
  for (i = 0; i < n; i++) {
    size_t row = (size_t)i * (size_t)dim;
    int j;
    if (lab[i] > 9)
      DEMO_DIE("%s/%s: label %d out of range", dir, lab_name, lab[i]);
    d->y[i] = lab[i];
    /* Pixels to [-1, 1]-ish: (p/255 - mean) / std of Fashion-MNIST. */
    for (j = 0; j < dim; j++)
      d->x[row + (size_t)j] =
          ((float)img[row + (size_t)j] / 255.0f - 0.2860f) / 0.3530f;
  }
  free(img);
  free(lab);
}

/* ---- the model: an MLP whose linear layers are the recoverable units ---- */

typedef struct ts_layer {
  int in, out;
  float *w, *b;             /* w: in x out (row i = input feature i), b: out */
  float *dw, *db;           /* gradients */
  float *mw, *vw, *mb, *vb; /* AdamW moments */
  float *xq, *wq;   /* the GEMM inputs used this step (quantized or not) */
  float *wt;        /* scratch: wq transposed, for the input gradient */
  lp_scaler sx, sw; /* delayed scaling of the activation and the weight */
  float qerr;       /* forward signal (forward arms): lowp.h lp_quant_error */
  float gain;       /* output multiplier: 1, DEMO_SHIFT_GAIN after --shift */
} ts_layer;

typedef struct ts_model {
  int batch, dims[TS_LAYERS + 1];
  ts_layer layer[TS_LAYERS];
  float *act[TS_LAYERS + 1]; /* act[0] = input, act[l+1] = layer l output */
  float *grad[TS_LAYERS + 1];
  float *probs;
} ts_model;

static void ts_model_init(ts_model *m, const int *dims, int batch,
                          demo_rng *r) {
  int l, i;
  memset(m, 0, sizeof *m);
  m->batch = batch;
  for (l = 0; l <= TS_LAYERS; l++) {
    m->dims[l] = dims[l];
    m->act[l] = DEMO_CALLOC((size_t)batch * (size_t)dims[l], float);
    m->grad[l] = DEMO_CALLOC((size_t)batch * (size_t)dims[l], float);
  }
  m->probs = DEMO_CALLOC((size_t)batch * (size_t)dims[TS_LAYERS], float);
  for (l = 0; l < TS_LAYERS; l++) {
    ts_layer *L = &m->layer[l];
    size_t nw = (size_t)dims[l] * (size_t)dims[l + 1];
    double bound = sqrt(6.0 / dims[l]); /* He uniform, for ReLU */
    L->in = dims[l];
    L->out = dims[l + 1];
    L->gain = 1.0f;
    L->w = DEMO_CALLOC(nw, float);
    L->dw = DEMO_CALLOC(nw, float);
    L->mw = DEMO_CALLOC(nw, float);
    L->vw = DEMO_CALLOC(nw, float);
    L->wq = DEMO_CALLOC(nw, float);
    L->wt = DEMO_CALLOC(nw, float);
    L->xq = DEMO_CALLOC((size_t)batch * (size_t)dims[l], float);
    L->b = DEMO_CALLOC((size_t)dims[l + 1], float);
    L->db = DEMO_CALLOC((size_t)dims[l + 1], float);
    L->mb = DEMO_CALLOC((size_t)dims[l + 1], float);
    L->vb = DEMO_CALLOC((size_t)dims[l + 1], float);
    for (i = 0; i < (int)nw; i++)
      L->w[i] = (float)((2.0 * demo_uniform(r) - 1.0) * bound);
  }
}

static void ts_model_free(ts_model *m) {
  int l;
  for (l = 0; l <= TS_LAYERS; l++) {
    free(m->act[l]);
    free(m->grad[l]);
  }
  free(m->probs);
  for (l = 0; l < TS_LAYERS; l++) {
    ts_layer *L = &m->layer[l];
    free(L->w), free(L->dw), free(L->mw), free(L->vw), free(L->wq);
    free(L->wt), free(L->xq), free(L->b), free(L->db), free(L->mb);
    free(L->vb);
  }
}

/* What the low-cost path of one layer does this step. */
typedef struct ts_path {
  const lp_format *fmt; /* NULL: the f32 path */
  int burst;            /* outlier burst: channels [c0, c0+4) x gain */
  int burst_c0;
  int stale; /* stale activation scale: 1 x TS_STALE_GAIN, -1 / it */
  int track; /* f32 path that keeps the amax histories fresh */
  const lp_format *probe; /* forward arms: the format of the signal */
} ts_path;

/* y += a * x (lab/common.h). */
DEMO_AXPY(ts_axpy, float)

/* y[b][o] = sum_i x[b][i] w[i][o] + bias[o], the i-outer loop order so the
   inner loop runs over contiguous o and vectorizes. */
static void ts_gemm_xw(const float *restrict x, const float *restrict w,
                       const float *restrict bias, int batch, int in, int out,
                       float *restrict y) {
  int b, i, o;
  for (b = 0; b < batch; b++) {
    float *restrict yr = y + (size_t)b * (size_t)out;
    for (o = 0; o < out; o++) yr[o] = bias[o];
    for (i = 0; i < in; i++) {
      float a = x[(size_t)b * (size_t)in + (size_t)i];
      const float *restrict wr = w + (size_t)i * (size_t)out;
      if (a == 0.0f) continue; /* ReLU zeros: a third to half of inputs */
      ts_axpy(yr, a, wr, out);
    }
  }
}

/* One layer forward on the given path; saves the GEMM inputs. */
static void ts_layer_forward(ts_layer *L, const float *x, int batch,
                             const ts_path *p, float *y) {
  size_t nx = (size_t)batch * (size_t)L->in,
         nw = (size_t)L->in * (size_t)L->out;
  if (!p->fmt) {
    memcpy(L->xq, x, nx * sizeof *x);
    memcpy(L->wq, L->w, nw * sizeof *x);
    if (p->track) {
      float amax = lp_amax(x, nx);
      if (p->probe)
        L->qerr = lp_quant_error(x, NULL, nx, p->probe,
                                 lp_scaler_scale(&L->sx, p->probe, amax));
      lp_scaler_push(&L->sx, amax);
      lp_scaler_push(&L->sw, lp_amax(L->w, nw));
    }
  } else {
    float sx, sw, amax;
    memcpy(L->xq, x, nx * sizeof *x);
    if (p->burst) {
      int b, c;
      for (b = 0; b < batch; b++)
        for (c = 0; c < TS_BURST_CHANNELS; c++) {
          float *v = &L->xq[(size_t)b * (size_t)L->in +
                            (size_t)((p->burst_c0 + c) % L->in)];
          *v = *v * TS_BURST_GAIN + (*v == 0.0f ? TS_BURST_GAIN * 0.1f : 0.0f);
        }
    }
    amax = lp_amax(L->xq, nx);
    sx = lp_scaler_scale(&L->sx, p->fmt, amax);
    if (p->stale) sx = p->stale > 0 ? sx * TS_STALE_GAIN : sx / TS_STALE_GAIN;
    lp_quantize_tensor(L->xq, nx, p->fmt, sx, L->xq);
    lp_scaler_push(&L->sx, amax);
    if (p->probe) L->qerr = lp_quant_error(x, L->xq, nx, NULL, 1.0f);
    amax = lp_amax(L->w, nw);
    sw = lp_scaler_scale(&L->sw, p->fmt, amax);
    lp_quantize_tensor(L->w, nw, p->fmt, sw, L->wq);
    lp_scaler_push(&L->sw, amax);
  }
  ts_gemm_xw(L->xq, L->wq, L->b, batch, L->in, L->out, y);
  if (L->gain != 1.0f) {
    size_t i, ny = (size_t)batch * (size_t)L->out;
    for (i = 0; i < ny; i++) y[i] *= L->gain;
  }
}

/* Gradients of one layer from dy; dx (may be NULL for the first layer) is
   the gradient of the layer's input (through the GEMM inputs it used: the
   straight-through estimator on the quantizer). */
static void ts_layer_backward(ts_layer *L, const float *restrict dy, int batch,
                              float *restrict dx) {
  int b, i, o, in = L->in, out = L->out;
  float *restrict dw = L->dw, *restrict wt = L->wt;
  const float *restrict xq = L->xq;
  memset(L->dw, 0, sizeof *L->dw * (size_t)in * (size_t)out);
  memset(L->db, 0, sizeof *L->db * (size_t)out);
  for (b = 0; b < batch; b++) {
    const float *d = dy + (size_t)b * (size_t)out;
    for (o = 0; o < out; o++) L->db[o] += d[o];
    for (i = 0; i < in; i++) {
      float a = xq[(size_t)b * (size_t)in + (size_t)i];
      float *restrict g = dw + (size_t)i * (size_t)out;
      if (a == 0.0f) continue;
      ts_axpy(g, a, d, out);
    }
  }
  if (L->gain != 1.0f) { /* y = gain (x W + b): dW, db and dx take it too */
    for (i = 0; i < in * out; i++) dw[i] *= L->gain;
    for (o = 0; o < out; o++) L->db[o] *= L->gain;
  }
  if (!dx) return;
  for (i = 0; i < in; i++)
    for (o = 0; o < out; o++)
      wt[(size_t)o * (size_t)in + (size_t)i] =
          L->wq[(size_t)i * (size_t)out + (size_t)o];
  for (b = 0; b < batch; b++) {
    float *restrict g = dx + (size_t)b * (size_t)in;
    const float *restrict d = dy + (size_t)b * (size_t)out;
    memset(g, 0, sizeof *g * (size_t)in);
    for (o = 0; o < out; o++) {
      ts_axpy(g, d[o], wt + (size_t)o * (size_t)in, in);
    }
    if (L->gain != 1.0f)
      for (i = 0; i < in; i++) g[i] *= L->gain;
  }
}

/* Forward of the whole batch (x: batch x dims[0]); returns the mean
   cross-entropy; counts correct predictions into *correct if not NULL. */
static double ts_forward(ts_model *m, const float *x, const uint8_t *y,
                         int batch, const ts_path *paths, int *correct) {
  int l, b, c, C = m->dims[TS_LAYERS];
  double loss = 0.0;
  memcpy(m->act[0], x, sizeof *x * (size_t)batch * (size_t)m->dims[0]);
  for (l = 0; l < TS_LAYERS; l++) {
    float *out = m->act[l + 1];
    size_t i, n = (size_t)batch * (size_t)m->dims[l + 1];
    ts_layer_forward(&m->layer[l], m->act[l], batch, &paths[l], out);
    if (l < TS_LAYERS - 1)
      for (i = 0; i < n; i++) out[i] = out[i] > 0.0f ? out[i] : 0.0f;
  }
  for (b = 0; b < batch; b++) {
    const float *z = m->act[TS_LAYERS] + (size_t)b * (size_t)C;
    float *p = m->probs + (size_t)b * (size_t)C;
    double mx = z[0], sum = 0.0;
    int arg = 0;
    for (c = 1; c < C; c++)
      if (z[c] > mx) mx = z[c], arg = c;
    for (c = 0; c < C; c++) sum += exp((double)z[c] - mx);
    for (c = 0; c < C; c++) p[c] = (float)(exp((double)z[c] - mx) / sum);
    loss += log(sum) + mx - (double)z[y[b]];
    if (correct && arg == y[b]) (*correct)++;
  }
  return loss / batch;
}

/* Backward of the mean cross-entropy after ts_forward. */
static void ts_backward(ts_model *m, const uint8_t *y, int batch) {
  int l, b, c, C = m->dims[TS_LAYERS];
  float *g = m->grad[TS_LAYERS];
  for (b = 0; b < batch; b++)
    for (c = 0; c < C; c++)
      g[(size_t)b * (size_t)C + (size_t)c] =
          (m->probs[(size_t)b * (size_t)C + (size_t)c] -
           (c == y[b] ? 1.0f : 0.0f)) /
          (float)batch;
  for (l = TS_LAYERS - 1; l >= 0; l--) {
    ts_layer_backward(&m->layer[l], m->grad[l + 1], batch,
                      l > 0 ? m->grad[l] : NULL);
    if (l > 0) {
      size_t i, n = (size_t)batch * (size_t)m->dims[l];
      for (i = 0; i < n; i++)
        if (m->act[l][i] <= 0.0f) m->grad[l][i] = 0.0f;
    }
  }
}

/* AdamW (decoupled weight decay on the weights, not the biases). */
typedef struct ts_adamw {
  double lr, beta1, beta2, eps, wd;
} ts_adamw;

static void ts_adamw_update(float *p, float *g, float *mo, float *v, size_t n,
                            const ts_adamw *o, double lr, long t, double wd) {
  double c1 = 1.0 - pow(o->beta1, (double)t),
         c2 = 1.0 - pow(o->beta2, (double)t);
  size_t i;
  for (i = 0; i < n; i++) {
    double mh, vh;
    mo[i] = (float)(o->beta1 * mo[i] + (1.0 - o->beta1) * g[i]);
    v[i] = (float)(o->beta2 * v[i] + (1.0 - o->beta2) * (double)g[i] * g[i]);
    mh = mo[i] / c1;
    vh = v[i] / c2;
    p[i] = (float)(p[i] - lr * (mh / (sqrt(vh) + o->eps) + wd * p[i]));
  }
}

/* The spam arm's clip over a layer's entries (lab/arms.h). */
ARM_SPAM_CLIP(ts_spam_clip, float)

/* The spam arm's control before step's update: a layer's AdamW moments
   zeroed on a reset step, then its gradients clipped; returns the entries
   clipped. */
static long ts_spam_step(ts_layer *L, int step) {
  size_t nw = (size_t)L->in * (size_t)L->out, nb = (size_t)L->out;
  if (arm_spam_resets(step)) {
    memset(L->mw, 0, sizeof *L->mw * nw);
    memset(L->vw, 0, sizeof *L->vw * nw);
    memset(L->mb, 0, sizeof *L->mb * nb);
    memset(L->vb, 0, sizeof *L->vb * nb);
  }
  return ts_spam_clip(L->dw, L->vw, nw) + ts_spam_clip(L->db, L->vb, nb);
}

static void ts_scale_grads(ts_layer *L, double s) {
  size_t i, nw = (size_t)L->in * (size_t)L->out;
  /* Scale 0 means drop: a NaN times 0 would still be NaN. */
  for (i = 0; i < nw; i++) L->dw[i] = s == 0.0 ? 0.0f : (float)(L->dw[i] * s);
  for (i = 0; i < (size_t)L->out; i++)
    L->db[i] = s == 0.0 ? 0.0f : (float)(L->db[i] * s);
}

/* --shift: the reparametrisation of lab/common.h's DEMO_SHIFT_GAIN,
   y = g (x W/g + b/g), with the optimizer state and the weight's amax
   history to match; the caller divides the layer's learning rate by its
   gain and multiplies its decay by it. */
static void ts_reparametrise(ts_layer *L, float g) {
  size_t i, nw = (size_t)L->in * (size_t)L->out;
  for (i = 0; i < nw; i++) L->w[i] /= g, L->mw[i] *= g, L->vw[i] *= g * g;
  for (i = 0; i < (size_t)L->out; i++)
    L->b[i] /= g, L->mb[i] *= g, L->vb[i] *= g * g;
  for (i = 0; i < LP_AMAX_HISTORY; i++) L->sw.hist[i] /= g;
  L->gain *= g;
}

static void ts_scale_all(ts_model *m, double s) {
  int l;
  if (s != 1.0)
    for (l = 0; l < TS_LAYERS; l++) ts_scale_grads(&m->layer[l], s);
}

/* Each layer's gradient norm (weights and bias: one unit), gnmr.h's. */
static void ts_layer_norms(const ts_model *m, float *norms) {
  gnmr_tensor t[2 * TS_LAYERS];
  int l;
  for (l = 0; l < TS_LAYERS; l++) {
    t[2 * l].data = m->layer[l].dw;
    t[2 * l].n = (size_t)m->layer[l].in * (size_t)m->layer[l].out;
    t[2 * l].dtype = GNMR_DTYPE_F32;
    t[2 * l].unit = (uint32_t)l;
    t[2 * l + 1].data = m->layer[l].db;
    t[2 * l + 1].n = (size_t)m->layer[l].out;
    t[2 * l + 1].dtype = GNMR_DTYPE_F32;
    t[2 * l + 1].unit = (uint32_t)l;
  }
  if (gnmr_unit_norms(t, 2 * TS_LAYERS, norms, TS_LAYERS) != GNMR_OK)
    DEMO_DIE("gnmr_unit_norms failed");
}

static double ts_global_norm(const float *norms) {
  double total = 0.0;
  int l;
  for (l = 0; l < TS_LAYERS; l++) total += (double)norms[l] * norms[l];
  return sqrt(total);
}

/* ---- the stress schedule (ground truth) --------------------------------- */

/* demo_event's kinds; `where` is a burst's first channel */
enum { TS_BURST = 0, TS_STALE = 1 };

/* 1 while fault e is active at layer l on this step. */
static int ts_in_fault(const demo_event *e, int l, int step) {
  return e->unit == l && step >= e->start && step < e->start + e->steps;
}

/* `per_k` events per 1000 steps, none in the first 10%, at most one at a
   time, at random layers, kinds alternating; deterministic in the seed. */
static int ts_make_events(int per_k, int steps, int n_layers, int dim_hint,
                          uint64_t seed, demo_event *ev, int cap) {
  demo_rng r;
  int n = per_k * steps / 1000, i, first = steps / 10, span;
  if (n > cap) n = cap;
  if (n <= 0) return 0;
  r.s = seed * 0x2545F4914F6CDD1Dull + 77;
  span = (steps - first) / n;
  for (i = 0; i < n; i++) {
    ev[i].start = first + i * span + (int)demo_below(&r, (uint32_t)(span / 2));
    ev[i].steps = 2 + (int)demo_below(&r, 5);
    ev[i].unit = (int)demo_below(&r, (uint32_t)n_layers);
    ev[i].kind = i % 2 ? TS_STALE : TS_BURST;
    ev[i].where = (int)demo_below(&r, (uint32_t)dim_hint);
  }
  return n;
}

/* ---- one training run ---------------------------------------------------- */

/* The arms are lab/arms.h's table (ARMS), shared with the LM demo.
   The gnmr arm's config is ts_opts.gnmr: gnmr_config_default() with the
   --tau-r ... flags (the sweep varies it); every GNMR arm takes --max-rec,
   --lock, --tau-r and --tau-d (as in train_lm.c). */
#define TS_ARM_F32 0 /* ARMS[0], [1] and [4]: ts_parse checks the names */
#define TS_ARM_LOWP 1
#define TS_ARM_GNMR 4
#define TS_N_DEFAULT_ARMS 7 /* the arms a run without --arms trains */

typedef struct ts_opts {
  int steps, batch, seed, seeds, stress, sweep, quiet;
  int stale_under; /* --stale under: stale scales too small, not too large */
  int heavy;       /* --heavy NU: Student-t inputs (built-in task), 0: off */
  int clip_first;  /* --clip-first: the global clip before the control */
  int hidden[TS_LAYERS - 1];
  int arms[TS_MAX_ARMS], n_arms;
  const lp_format *fmt;
  const char *data_dir, *out_dir;
  double lr, global_clip; /* global_clip > 0: --global-clip */
  /* given: every GNMR arm takes them (as in train_lm.c) */
  int set_max_rec, set_lock, set_tau_r, set_tau_d;
  demo_at freeze; /* --freeze: layer, share of the run frozen */
  demo_at shift;  /* --shift: layer, where it is reparametrised */
  gnmr_config gnmr;
} ts_opts;

/* Detection, GNMR arms: a fault is caught when its own layer is admitted
   (RECOVER) on one of the fault's steps, or already runs f32 on one;
   admissions counts every RECOVER, in_fault those at a layer on one of its
   own fault's steps. Other arms: 0. */
typedef struct ts_result {
  double test_loss, test_acc; /* on the f32 path */
  /* each layer's forward as its last step ran it (ts_served_paths) */
  double test_loss_served, test_acc_served;
  double recovery_fraction, overhead_pct, seconds;
  int loss_spikes, diverged;
  int caught[2], faults[2], admissions, in_fault; /* [TS_BURST, TS_STALE] */
  float *loss; /* per step training loss (caller frees) */
} ts_result;

typedef struct ts_trace {
  FILE *f;             /* trace.csv rows of the traced arm, or NULL */
  uint8_t *recovering; /* steps x units: unit ran f32 at that step */
} ts_trace;

static double ts_seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }

/* The served paths (the served evaluation): each layer's forward as its
   last training step ran it, on the format (its delayed scaling as training
   left it: ts_evaluate) or f32; no faults, no signals. */
static void ts_served_paths(const ts_path *last, ts_path *served) {
  int l;
  memset(served, 0, sizeof *served * TS_LAYERS);
  for (l = 0; l < TS_LAYERS; l++) served[l].fmt = last[l].fmt;
}

/* Test loss and accuracy; paths NULL: every layer on the f32 path, else
   each on paths[l] (ts_served_paths), a layer on the format scaled by the
   delayed scale its amax histories held at the end of training, the same
   for every batch (restored after each: the evaluation changes nothing). */
static double ts_evaluate(ts_model *m, const ts_data *d, const ts_path *paths,
                          double *acc) {
  ts_path f32[TS_LAYERS];
  lp_scaler sx[TS_LAYERS], sw[TS_LAYERS];
  int start, correct = 0, l;
  double loss = 0.0;
  memset(f32, 0, sizeof f32);
  if (!paths) paths = f32;
  for (l = 0; l < TS_LAYERS; l++)
    sx[l] = m->layer[l].sx, sw[l] = m->layer[l].sw;
  for (start = 0; start + m->batch <= d->n; start += m->batch) {
    loss += ts_forward(m, d->x + (size_t)start * (size_t)d->dim, d->y + start,
                       m->batch, paths, &correct) *
            m->batch;
    for (l = 0; l < TS_LAYERS; l++)
      m->layer[l].sx = sx[l], m->layer[l].sw = sw[l];
  }
  *acc = (double)correct / (start ? start : 1);
  return loss / (start ? start : 1);
}

/* Trains one arm for o->steps steps and evaluates it on the test set on
   the f32 path and as served (ts_served_paths). Same seed: same initial
   weights, same data order, same faults. */
static ts_result ts_train(const ts_opts *o, int arm, int seed,
                          const ts_data *train, const ts_data *test,
                          const demo_event *ev, int n_ev, ts_trace *trace) {
  ts_model m;
  demo_rng init = {(uint64_t)seed * 1000003u + 1},
           order = {(uint64_t)seed + 99};
  int dims[TS_LAYERS + 1], l, step, i, e, *perm, pos;
  ts_adamw opt;
  gnmr_slot units[2 * TS_LAYERS];
  gnmr_ctl ctl;
  double ema_loss = 0.0, ctl_time = 0.0, t0, adagc_ema[TS_LAYERS];
  const demo_arm *A = &ARMS[arm];
  /* controller units: the layers, then with forward signals one more each */
  int CU = A->forward ? 2 * TS_LAYERS : TS_LAYERS;
  /* the arm does control work (timed as its overhead); f32 and lowp do
     none but a global clip, so theirs is 0, not the timer's own cost */
  const int controls =
      (A->kind != ARM_F32 && A->kind != ARM_LOWP) || o->global_clip > 0;
  long hf_steps = 0; /* unit-steps on the f32 path (forward arms) */
  /* --freeze: the layer gets no gradient and no update before step
     freeze_end (its norm is exactly 0), then trains with Adam state of its
     own from there; --shift: reparametrised at the start of shift_step */
  int freeze_end = o->freeze.index >= 0 ? o->steps * o->freeze.pct / 100 : 0;
  int shift_step = o->shift.index >= 0 ? o->steps * o->shift.pct / 100 : -1;
  arm_zclip zc = {0, 0, 0};
  arm_gstab gs[TS_LAYERS];
  arm_persist ps; /* the calm-admission arms' own admissions */
  const int persist = arm_persist_init(&ps, A->name, 0) != ARM_ADMIT_NONE;
  int p_lock = 8, p_cool = 4, p_admit[TS_LAYERS];
  float *xb, norms[2 * TS_LAYERS];
  uint8_t *yb, caught[256];
  ts_result res;
  ts_path last[TS_LAYERS]; /* the last step's paths */
  memset(&res, 0, sizeof res);
  memset(last, 0, sizeof last);
  memset(caught, 0, sizeof caught);
  memset(p_admit, 0, sizeof p_admit);
  if (n_ev > 256) DEMO_DIE("%d faults: at most 256", n_ev);
  dims[0] = train->dim;
  for (l = 0; l < TS_LAYERS - 1; l++) dims[l + 1] = o->hidden[l];
  dims[TS_LAYERS] = train->classes;
  ts_model_init(&m, dims, o->batch, &init);
  opt.lr = o->lr;
  opt.beta1 = 0.9;
  opt.beta2 = 0.999;
  opt.eps = 1e-8;
  opt.wd = 1e-4;
  if (A->kind == ARM_GNMR) {
    const char *field = NULL;
    gnmr_config cfg = o->gnmr;
    int rc;
    if (arm != TS_ARM_GNMR) {
      cfg = A->config();
      if (o->set_max_rec) cfg.max_recovering = o->gnmr.max_recovering;
      if (o->set_lock) cfg.lock_steps = o->gnmr.lock_steps;
      if (o->set_tau_r) cfg.ratio_threshold = o->gnmr.ratio_threshold;
      if (o->set_tau_d) cfg.delta_threshold = o->gnmr.delta_threshold;
      if (cfg.max_recovering > (uint32_t)CU) cfg.max_recovering = (uint32_t)CU;
    }
    p_lock = (int)cfg.lock_steps;
    p_cool = (int)cfg.cooldown_steps;
    if (persist) arm_persist_init(&ps, A->name, p_lock);
    /* The default 8 is more units than this MLP has: the step-level verdict
       would never be reached. */
    if (cfg.common_min_units > TS_LAYERS) cfg.common_min_units = TS_LAYERS;
    rc = gnmr_init(&ctl, &cfg, units, (uint32_t)CU);
    gnmr_config_check(&cfg, (uint32_t)CU, &field);
    if (rc != GNMR_OK)
      DEMO_DIE("gnmr_init: %s (%s)", gnmr_strerror(rc), field ? field : "-");
  }
  for (l = 0; l < TS_LAYERS; l++) adagc_ema[l] = 0.0;
  memset(gs, 0, sizeof gs);
  perm = DEMO_CALLOC((size_t)train->n, int);
  for (i = 0; i < train->n; i++) perm[i] = i;
  pos = train->n;
  xb = DEMO_CALLOC((size_t)o->batch * (size_t)train->dim, float);
  yb = DEMO_CALLOC((size_t)o->batch, uint8_t);
  res.loss = DEMO_CALLOC((size_t)o->steps, float);
  t0 = ts_seconds();

  for (step = 0; step < o->steps; step++) {
    ts_path paths[TS_LAYERS];
    gnmr_decision d[2 * TS_LAYERS];
    double loss, lr, tc;
    int b;
    if (step == shift_step)
      ts_reparametrise(&m.layer[o->shift.index], (float)DEMO_SHIFT_GAIN);
    /* The next batch; reshuffle (Fisher-Yates) at each epoch. */
    for (b = 0; b < o->batch; b++) {
      if (pos == train->n) {
        for (i = train->n - 1; i > 0; i--) {
          int j = (int)demo_below(&order, (uint32_t)i + 1), t = perm[i];
          perm[i] = perm[j];
          perm[j] = t;
        }
        pos = 0;
      }
      memcpy(xb + (size_t)b * (size_t)train->dim,
             train->x + (size_t)perm[pos] * (size_t)train->dim,
             sizeof *xb * (size_t)train->dim);
      yb[b] = train->y[perm[pos++]];
    }
    /* Each layer's path this step: f32 for the reference arm and for units
       GNMR holds in recovery; otherwise low precision, with its faults. */
    for (l = 0; l < TS_LAYERS; l++) {
      memset(&paths[l], 0, sizeof paths[l]);
      if (A->f32) continue;
      if (A->forward) paths[l].probe = o->fmt;
      if (A->kind == ARM_GNMR &&
          (persist
               ? ps.left[l] > 0
               : gnmr_recovering(&ctl, (uint32_t)l) == 1 ||
                     (A->forward &&
                      gnmr_recovering(&ctl, (uint32_t)(TS_LAYERS + l)) == 1))) {
        paths[l].track = 1;
        hf_steps++;
        if (trace && trace->recovering)
          trace->recovering[(size_t)step * TS_LAYERS + (size_t)l] = 1;
        for (e = 0; e < n_ev; e++) /* the fault does not reach it */
          caught[e] |= (uint8_t)ts_in_fault(&ev[e], l, step);
        continue;
      }
      paths[l].fmt = o->fmt;
      for (e = 0; e < n_ev; e++)
        if (ts_in_fault(&ev[e], l, step)) {
          if (ev[e].kind == TS_BURST) {
            paths[l].burst = 1;
            paths[l].burst_c0 = ev[e].where;
          } else {
            paths[l].stale = o->stale_under ? -1 : 1;
          }
        }
    }
    memcpy(last, paths, sizeof last);
    loss = ts_forward(&m, xb, yb, o->batch, paths, NULL);
    ts_backward(&m, yb, o->batch);
    if (step < freeze_end) ts_scale_grads(&m.layer[o->freeze.index], 0.0);
    res.loss[step] = (float)loss;
    if (!isfinite(loss)) res.diverged = 1;
    if (step >= 20 && isfinite(loss) && loss > TS_SPIKE_FACTOR * ema_loss)
      res.loss_spikes++;
    if (isfinite(loss))
      ema_loss = step == 0 ? loss : 0.9 * ema_loss + 0.1 * loss;

    /* Control: the arms' extra work, timed as their overhead. */
    tc = ts_seconds();
    if (o->global_clip > 0 && o->clip_first) { /* the control sees it clipped */
      float before[TS_LAYERS];
      ts_layer_norms(&m, before);
      ts_scale_all(&m, arm_clip_scale(ts_global_norm(before), o->global_clip));
    }
    if (A->kind != ARM_F32 && A->kind != ARM_LOWP) ts_layer_norms(&m, norms);
    if (A->kind == ARM_CLIP) {
      ts_scale_all(&m, arm_clip_scale(ts_global_norm(norms), ARM_GLOBAL_CLIP));
    } else if (A->kind == ARM_ZCLIP) {
      ts_scale_all(&m, arm_zclip_scale(&zc, ts_global_norm(norms)));
    } else if (A->kind == ARM_ADAGC) {
      for (l = 0; l < TS_LAYERS; l++) {
        double sc = arm_adagc_scale(&adagc_ema[l], norms[l]);
        if (sc != 1.0) ts_scale_grads(&m.layer[l], sc);
      }
    } else if (A->kind == ARM_GSTAB) {
      for (l = 0; l < TS_LAYERS; l++) {
        double sc = arm_gstab_scale(&gs[l], norms[l]);
        if (sc != 1.0) ts_scale_grads(&m.layer[l], sc);
      }
    } else if (A->kind == ARM_SPAM) {
      for (l = 0; l < TS_LAYERS; l++) ts_spam_step(&m.layer[l], step);
    } else if (A->kind == ARM_GNMR) {
      int rc;
      for (l = 0; l < CU - TS_LAYERS; l++)
        norms[TS_LAYERS + l] = m.layer[l].qerr;
      rc = gnmr_step(&ctl, norms, d);
      if (rc != GNMR_OK) DEMO_DIE("gnmr_step: %s", gnmr_strerror(rc));
      if (persist)
        arm_persist_step(&ps, d, norms, TS_LAYERS, p_lock, p_cool, p_admit);
      for (l = 0; l < TS_LAYERS; l++) {
        if (d[l].scale != 1.0) ts_scale_grads(&m.layer[l], d[l].scale);
        /* Admitted: the unit's scaling state is suspect (a burst in the amax
           history is a stale scale waiting to happen). Start its histories
           afresh; the f32 steps refill them from the true tensors. */
        if (d[l].action == GNMR_ACTION_RECOVER || p_admit[l] ||
            (CU > TS_LAYERS &&
             d[TS_LAYERS + l].action == GNMR_ACTION_RECOVER)) {
          int hit = 0;
          memset(&m.layer[l].sx, 0, sizeof m.layer[l].sx);
          memset(&m.layer[l].sw, 0, sizeof m.layer[l].sw);
          for (e = 0; e < n_ev; e++)
            if (ts_in_fault(&ev[e], l, step)) caught[e] = 1, hit = 1;
          res.admissions++;
          res.in_fault += hit;
        }
      }
    }
    if (o->global_clip > 0 && !o->clip_first) {
      float after[TS_LAYERS];
      ts_layer_norms(&m, after);
      ts_scale_all(&m, arm_clip_scale(ts_global_norm(after), o->global_clip));
    }
    if (controls) ctl_time += ts_seconds() - tc;
    if (trace && trace->f) /* not timed: I/O */
      for (l = 0; l < TS_LAYERS; l++)
        fprintf(trace->f, "%d,%d,%.6g,%.6g,%.6g,%s\n", step, l,
                (double)norms[l], d[l].ratio, d[l].delta,
                gnmr_action_name(d[l].action));

    /* Cosine decay to a tenth of the learning rate. */
    lr =
        o->lr * (0.1 + 0.45 * (1.0 + cos(3.141592653589793 * step / o->steps)));
    if (A->kind == ARM_SPAM) lr *= arm_spam_lr_scale(step);
    for (l = 0; l < TS_LAYERS; l++) {
      ts_layer *L = &m.layer[l];
      long t = step + 1 - (l == o->freeze.index ? freeze_end : 0);
      if (t < 1) continue; /* frozen */
      ts_adamw_update(L->w, L->dw, L->mw, L->vw, (size_t)L->in * (size_t)L->out,
                      &opt, lr / L->gain, t, opt.wd * L->gain);
      ts_adamw_update(L->b, L->db, L->mb, L->vb, (size_t)L->out, &opt,
                      lr / L->gain, t, 0.0);
    }
  }
  res.seconds = ts_seconds() - t0;
  res.overhead_pct = res.seconds > 0 ? 100.0 * ctl_time / res.seconds : 0.0;
  for (e = 0; e < n_ev; e++) {
    res.faults[ev[e].kind]++;
    res.caught[ev[e].kind] += caught[e];
  }
  if (A->kind == ARM_GNMR) {
    gnmr_counters c;
    gnmr_counters_get(&ctl, GNMR_ALL_UNITS, &c);
    res.recovery_fraction =
        (double)(CU > TS_LAYERS || persist ? hf_steps
                                           : (long)c.recovery_steps) /
        ((double)o->steps * TS_LAYERS);
  }
  res.test_loss = ts_evaluate(&m, test, NULL, &res.test_acc);
  {
    ts_path served[TS_LAYERS];
    ts_served_paths(last, served);
    res.test_loss_served = ts_evaluate(&m, test, served, &res.test_acc_served);
  }
  if (!isfinite(res.test_loss) || res.test_loss > log((double)test->classes))
    res.diverged = 1;
  ts_model_free(&m);
  free(perm);
  free(xb);
  free(yb);
  return res;
}

/* ---- pictures -------------------------------------------------------------
 */

/* Training loss of every arm (EMA-smoothed, mean over seeds) per step; the
   y range leaves out the first 2% of steps (lab/common.h). */
static void ts_svg_loss(const char *path, const ts_opts *o, float **curves) {
  char title[160];
  snprintf(title, sizeof title,
           "training loss (EMA 0.98, mean of %d seed(s)), format %s, "
           "stress %d",
           o->seeds, o->fmt->name, o->stress);
  demo_svg_loss(path, title, "training loss", curves, o->arms, o->n_arms,
                o->steps, o->steps / 50);
}

/* Layers x steps: where the gnmr arm ran a layer on f32, and the faults. */
static void ts_svg_raster(const char *path, const ts_opts *o,
                          const uint8_t *rec, const demo_event *ev, int n_ev) {
  static const char *const names[TS_LAYERS] = {"layer 0", "layer 1", "layer 2",
                                               "layer 3"};
  demo_svg_raster(path,
                  "gnmr arm, first seed: blue = unit on the f32 path, red "
                  "frame = injected fault (B burst, S stale scale)",
                  TS_LAYERS, names, o->steps, rec, ev, n_ev, "BS");
}

/* ---- command line ---------------------------------------------------------
 */

/* ---- the command line: one table (lab/common.h reads it) ----------- */

static void ts_opt_arms(void *dst, const char *v, const char *name) {
  ts_opts *o = (ts_opts *)dst;
  int a;
  o->n_arms = demo_parse_arms(v, o->arms, TS_MAX_ARMS);
  for (a = 0; a < o->n_arms; a++)
    if (ARMS[o->arms[a]].kind == ARM_PLACE ||
        strcmp(ARMS[o->arms[a]].name, ARM_JIT_NAME) == 0 ||
        strcmp(ARMS[o->arms[a]].name, ARM_SRD_NAME) == 0)
      DEMO_DIE("%s: %s is an arm of the LM demo only", name,
               ARMS[o->arms[a]].name);
}

static void ts_show_arms(char *buf, size_t cap, const void *dst) {
  const ts_opts *o = (const ts_opts *)dst;
  demo_show_arms(buf, cap, o->arms, o->n_arms);
}

static void ts_opt_format(void *dst, const char *v, const char *name) {
  const lp_format **fmt = (const lp_format **)dst;
  *fmt = lp_format_find(v);
  if (!*fmt || (*fmt)->block)
    DEMO_DIE("%s: expected e4m3, e5m2 or e2m1, got '%s'", name, v);
}

static void ts_show_format(char *buf, size_t cap, const void *dst) {
  demo_cat(buf, cap, "%s", (*(const lp_format *const *)dst)->name);
}

static void ts_opt_hidden(void *dst, const char *v, const char *name) {
  int *h = (int *)dst;
  char tail;
  if (sscanf(v, "%d,%d,%d%c", &h[0], &h[1], &h[2], &tail) != 3 || h[0] < 1 ||
      h[1] < 1 || h[2] < 1)
    DEMO_DIE("%s: expected three positive widths A,B,C, got '%s'", name, v);
}

static void ts_show_hidden(char *buf, size_t cap, const void *dst) {
  const int *h = (const int *)dst;
  demo_cat(buf, cap, "%d,%d,%d", h[0], h[1], h[2]);
}

static void ts_parse(ts_opts *o, int argc, char **argv) {
  int a;
  memset(o, 0, sizeof *o);
  o->steps = 1000;
  o->batch = 128;
  o->seed = 1;
  o->seeds = 1;
  o->hidden[0] = 256;
  o->hidden[1] = 128;
  o->hidden[2] = 64;
  o->lr = 1e-3;
  o->fmt = &LP_FORMATS[0];
  o->out_dir = "demo-out";
  o->freeze.index = o->shift.index = -1;
  o->gnmr = gnmr_config_default();
  o->gnmr.max_recovering =
      o->gnmr.max_recovering > TS_LAYERS ? TS_LAYERS : o->gnmr.max_recovering;
  if (strcmp(ARMS[TS_ARM_F32].name, "f32") ||
      strcmp(ARMS[TS_ARM_LOWP].name, "lowp") ||
      strcmp(ARMS[TS_ARM_GNMR].name, "gnmr"))
    DEMO_DIE("lab/arms.h: f32, lowp, gnmr are not ARMS[0], [1], [4]");
  for (a = 0; a < TS_N_DEFAULT_ARMS; a++) o->arms[a] = a;
  o->n_arms = TS_N_DEFAULT_ARMS;
  {
    demo_opt opts[] = {
        DEMO_OPT("--data", "DIR", DEMO_STR, &o->data_dir, 0, 0,
                 "Fashion-MNIST IDX files (default: a built-in\n"
                 "synthetic task)"),
        DEMO_OPT_CALL("--arms", "LIST", ts_opt_arms, ts_show_arms, o,
                      "comma list of arms (lab/arms.h); --arms\n"
                      "list names them all"),
        DEMO_OPT("--global-clip", "X", DEMO_REAL, &o->global_clip, 1, 0,
                 "every arm: clip the global gradient norm to X\n"
                 "after its own control (0: off)"),
        DEMO_OPT("--clip-first", NULL, DEMO_FLAG, &o->clip_first, 0, 0,
                 "the global clip before the arm's control, which\n"
                 "then sees the clipped gradients"),
        DEMO_OPT("--seed", "S", DEMO_INT, &o->seed, 0, 1 << 30, "first seed"),
        DEMO_OPT("--seeds", "N", DEMO_INT, &o->seeds, 1, 100,
                 "seeds S, S+1, ..."),
        DEMO_OPT("--steps", "N", DEMO_INT, &o->steps, 1, 10000000,
                 "training steps"),
        DEMO_OPT("--batch", "N", DEMO_INT, &o->batch, 1, 4096, "batch size"),
        DEMO_OPT("--heavy", "NU", DEMO_INT, &o->heavy, 0, 1000,
                 "built-in task: Student-t inputs, NU degrees of\n"
                 "freedom (heavy tails; 0: Gaussian)"),
        DEMO_OPT_CALL("--hidden", "A,B,C", ts_opt_hidden, ts_show_hidden,
                      o->hidden, "hidden layer widths"),
        DEMO_OPT("--lr", "X", DEMO_REAL, &o->lr, 0, 0, "AdamW learning rate"),
        DEMO_OPT_CALL("--format", "F", ts_opt_format, ts_show_format, &o->fmt,
                      "e4m3, e5m2 or e2m1"),
        DEMO_OPT("--stress", "N", DEMO_INT, &o->stress, 0, 1000,
                 "faults per 1000 steps on the low-precision path"),
        DEMO_OPT("--stale", "over|under", DEMO_CHOICE, &o->stale_under, 0, 0,
                 "stale scales too large (saturate) or too small\n"
                 "(underflow)"),
        DEMO_OPT("--freeze", "L:P", DEMO_AT, &o->freeze, 0, TS_LAYERS - 1,
                 "layer L " DEMO_FREEZE_HELP),
        DEMO_OPT("--shift", "L:P", DEMO_AT, &o->shift, 0, TS_LAYERS - 1,
                 "layer L " DEMO_SHIFT_HELP),
        DEMO_OPT("--tau-r", "X", DEMO_REAL, &o->gnmr.ratio_threshold, 0, 0,
                 "every GNMR arm's ratio threshold"),
        DEMO_OPT("--tau-d", "X", DEMO_REAL, &o->gnmr.delta_threshold, 0, 0,
                 "every GNMR arm's delta threshold"),
        DEMO_OPT("--window", "N", DEMO_U32, &o->gnmr.delta_window, 1,
                 GNMR_WINDOW_MAX, "the gnmr arm's delta window"),
        DEMO_OPT("--lock", "N", DEMO_U32, &o->gnmr.lock_steps, 1, 1 << 20,
                 "lock steps (every GNMR arm)"),
        DEMO_OPT("--max-rec", "N", DEMO_U32, &o->gnmr.max_recovering, 0,
                 TS_LAYERS, "units in recovery at once (every GNMR arm)"),
        DEMO_OPT("--sweep", NULL, DEMO_FLAG, &o->sweep, 0, 0,
                 "sweep the GNMR settings (gnmr arm) instead"),
        DEMO_OPT("--out", "DIR", DEMO_STR, &o->out_dir, 0, 0,
                 "output directory"),
        DEMO_OPT("--quiet", NULL, DEMO_FLAG, &o->quiet, 0, 0,
                 "no table on stdout"),
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    demo_parse_options(argc, argv, opts, n);
    o->set_lock = demo_given(opts, n, "--lock");
    o->set_max_rec = demo_given(opts, n, "--max-rec");
    o->set_tau_r = demo_given(opts, n, "--tau-r");
    o->set_tau_d = demo_given(opts, n, "--tau-d");
  }
  if (gnmr_config_check(&o->gnmr, UINT32_MAX, NULL) != GNMR_OK)
    DEMO_DIE("the GNMR settings are out of range");
}

/* ---- the runs --------------------------------------------------------------
 */

static void ts_path_join(char *buf, size_t cap, const char *dir,
                         const char *name) {
  snprintf(buf, cap, "%s/%s", dir, name);
}

#define TS_MAX_EVENTS 256

/* All arms x seeds; summary.csv, trace.csv, stress.csv, the pictures. */
static int ts_run_arms(const ts_opts *o, const ts_data *train,
                       const ts_data *test) {
  char path[1100];
  FILE *summary, *stress_f;
  ts_trace trace;
  float *curves[TS_MAX_ARMS];
  double acc[TS_MAX_ARMS][100], tl[TS_MAX_ARMS][100], rf[TS_MAX_ARMS][100],
      ov[TS_MAX_ARMS][100], secs[TS_MAX_ARMS];
  int spikes[TS_MAX_ARMS], div[TS_MAX_ARMS], a, s, i, n_ev0 = 0;
  int faults[TS_MAX_ARMS][2], caught[TS_MAX_ARMS][2], adm[TS_MAX_ARMS][2];
  int trace_arm = -1; /* the first GNMR arm listed: trace.csv's */
  demo_event ev0[TS_MAX_EVENTS];

  demo_mkdir(o->out_dir);
  ts_path_join(path, sizeof path, o->out_dir, "summary.csv");
  summary = DEMO_FOPEN(path, "w");
  fprintf(summary, "arm,seed,format,stress,test_loss,test_acc,recovery_"
                   "fraction,loss_spikes,diverged,overhead_pct,bursts,"
                   "bursts_caught,stales,stales_caught,admissions,"
                   "admissions_in_fault,test_loss_served,test_acc_served\n");
  ts_path_join(path, sizeof path, o->out_dir, "trace.csv");
  trace.f = DEMO_FOPEN(path, "w");
  fprintf(trace.f, "step,unit,norm,gnmr,delta,action\n");
  trace.recovering = DEMO_CALLOC((size_t)o->steps * TS_LAYERS, uint8_t);
  ts_path_join(path, sizeof path, o->out_dir, "stress.csv");
  stress_f = DEMO_FOPEN(path, "w");
  fprintf(stress_f, "seed,start,steps,unit,kind,channel\n");
  for (a = o->n_arms - 1; a >= 0; a--)
    if (ARMS[o->arms[a]].kind == ARM_GNMR) trace_arm = o->arms[a];
  for (a = 0; a < o->n_arms; a++) {
    curves[a] = DEMO_CALLOC((size_t)o->steps, float);
    spikes[a] = div[a] = 0;
    secs[a] = 0.0;
    faults[a][0] = faults[a][1] = caught[a][0] = caught[a][1] = 0;
    adm[a][0] = adm[a][1] = 0;
  }
  for (s = 0; s < o->seeds; s++) {
    int seed = o->seed + s;
    demo_event ev[TS_MAX_EVENTS];
    int n_ev = ts_make_events(o->stress, o->steps, TS_LAYERS, 1 << 16,
                              (uint64_t)seed, ev, TS_MAX_EVENTS);
    for (i = 0; i < n_ev; i++) {
      /* A burst hits input channels channel .. channel+3 of the layer's
         GEMM (wrapping at its width); a stale scale hits no channel: -1. */
      int width = ev[i].unit == 0 ? train->dim : o->hidden[ev[i].unit - 1];
      fprintf(stress_f, "%d,%d,%d,%d,%s,%d\n", seed, ev[i].start, ev[i].steps,
              ev[i].unit, ev[i].kind == TS_BURST ? "burst" : "stale",
              ev[i].kind == TS_BURST ? ev[i].where % width : -1);
    }
    if (s == 0) {
      memcpy(ev0, ev, sizeof ev[0] * (size_t)n_ev);
      n_ev0 = n_ev;
    }
    for (a = 0; a < o->n_arms; a++) {
      int arm = o->arms[a];
      ts_trace *tr = s == 0 && arm == trace_arm ? &trace : NULL;
      ts_result r = ts_train(o, arm, seed, train, test, ev, n_ev, tr);
      double ema = r.loss[0];
      for (i = 0; i < o->steps; i++) {
        if (isfinite(r.loss[i])) ema = 0.98 * ema + 0.02 * r.loss[i];
        curves[a][i] += (float)(ema / o->seeds);
      }
      acc[a][s] = r.test_acc;
      tl[a][s] = r.test_loss;
      rf[a][s] = r.recovery_fraction;
      ov[a][s] = r.overhead_pct;
      spikes[a] += r.loss_spikes;
      div[a] += r.diverged;
      secs[a] += r.seconds;
      fprintf(summary,
              "%s,%d,%s,%d,%.6f,%.6f,%.6f,%d,%d,%.4f,%d,%d,%d,%d,%d,%d,%.6f,"
              "%.6f\n",
              ARMS[arm].name, seed, o->fmt->name, o->stress, r.test_loss,
              r.test_acc, r.recovery_fraction, r.loss_spikes, r.diverged,
              r.overhead_pct, r.faults[TS_BURST], r.caught[TS_BURST],
              r.faults[TS_STALE], r.caught[TS_STALE], r.admissions, r.in_fault,
              r.test_loss_served, r.test_acc_served);
      for (i = 0; i < 2; i++) {
        faults[a][i] += r.faults[i];
        caught[a][i] += r.caught[i];
      }
      adm[a][0] += r.admissions;
      adm[a][1] += r.in_fault;
      fflush(summary);
      if (!o->quiet)
        fprintf(stderr,
                "  seed %d %-5s acc %.4f loss %.4f, served %.4f (%.1fs)\n",
                seed, ARMS[arm].name, r.test_acc, r.test_loss,
                r.test_loss_served, r.seconds);
      free(r.loss);
    }
  }
  if (fclose(summary) != 0 || fclose(trace.f) != 0 || fclose(stress_f) != 0)
    DEMO_DIE("writing the CSV files in %s failed", o->out_dir);
  ts_path_join(path, sizeof path, o->out_dir, "loss.svg");
  ts_svg_loss(path, o, curves);
  ts_path_join(path, sizeof path, o->out_dir, "recovery.svg");
  ts_svg_raster(path, o, trace.recovering, ev0, n_ev0);
  if (!o->quiet) {
    printf("format %s, stress %d, %d steps, %d seed(s) from %d, data %s\n",
           o->fmt->name, o->stress, o->steps, o->seeds, o->seed,
           o->data_dir ? o->data_dir : "built-in");
    printf("%-11s %17s %9s %9s %7s %8s %9s %8s  %s\n", "arm", "test_acc(sd)",
           "test_loss", "recovery", "spikes", "diverged", "overhead", "cpu_s",
           "caught: bursts stales, admissions (in a fault)");
    for (a = 0; a < o->n_arms; a++) {
      printf("%-11s %8.2f%% (%4.2f) %9.4f %8.2f%% %7d %8d %8.2f%% %8.1f",
             ARMS[o->arms[a]].name, 100.0 * demo_mean(acc[a], o->seeds),
             100.0 * demo_sd(acc[a], o->seeds), demo_mean(tl[a], o->seeds),
             100.0 * demo_mean(rf[a], o->seeds), spikes[a], div[a],
             demo_mean(ov[a], o->seeds), secs[a]);
      if (ARMS[o->arms[a]].kind == ARM_GNMR)
        printf("  %d/%d %d/%d, %d (%d)", caught[a][0], faults[a][0],
               caught[a][1], faults[a][1], adm[a][0], adm[a][1]);
      putchar('\n');
    }
    {
      char line[2][160], others[256];
      const char *columns[3];
      snprintf(line[0], sizeof line[0],
               "recovery: share of layer-steps on the f32 path; spikes: steps "
               "whose loss passed %gx its EMA;",
               TS_SPIKE_FACTOR);
      snprintf(line[1], sizeof line[1],
               "overhead: the control's share of run time; caught: faults "
               "caught/injected (their layer ran f32 in them)");
      columns[0] = line[0], columns[1] = line[1];
      columns[2] = "admissions (in a fault): layers admitted to f32, and how "
                   "many in an injected fault; the rest answered the run's "
                   "own spikes (blue outside the red frames of recovery.svg)";
      demo_legend(
          columns, 3,
          demo_other_gnmr_arms(o->arms, o->n_arms, others, sizeof others),
          o->out_dir, "summary.csv trace.csv stress.csv");
    }
  }
  for (a = 0; a < o->n_arms; a++) free(curves[a]);
  free(trace.recovering);
  return 0;
}

/* One setting changed at a time around the defaults (a full grid is out of
   reach on two cores): tau_r, tau_d, W, L, maxO and the spike policy. The gnmr
   arm on the stress setting over all seeds, beside the f32 and lowp arms for
   scale. */
static int ts_run_sweep(const ts_opts *o, const ts_data *train,
                        const ts_data *test) {
  static const double tau_r[] = {2.0, 3.0, 5.0}, tau_d[] = {1.0, 1.5, 3.0};
  static const int window[] = {4, 8, 16}, lock[] = {4, 8, 16}, maxo[] = {1, 2};
  static const int policy[] = {GNMR_SPIKE_PASS, GNMR_SPIKE_CLIP,
                               GNMR_SPIKE_SKIP};
  static const char *policy_name[] = {"keep", "clip", "skip"};
  gnmr_config cfgs[20];
  int n_cfg = 0, i, s, c;
  char path[1100];
  FILE *f;
  double ref[2][100];
  gnmr_config base = o->gnmr;
  cfgs[n_cfg++] = base;
  for (i = 0; i < 3; i++)
    if (tau_r[i] != base.ratio_threshold)
      cfgs[n_cfg] = base, cfgs[n_cfg++].ratio_threshold = tau_r[i];
  for (i = 0; i < 3; i++)
    if (tau_d[i] != base.delta_threshold)
      cfgs[n_cfg] = base, cfgs[n_cfg++].delta_threshold = tau_d[i];
  for (i = 0; i < 3; i++)
    if (window[i] != (int)base.delta_window)
      cfgs[n_cfg] = base, cfgs[n_cfg++].delta_window = (uint32_t)window[i];
  for (i = 0; i < 3; i++)
    if (lock[i] != (int)base.lock_steps)
      cfgs[n_cfg] = base, cfgs[n_cfg++].lock_steps = (uint32_t)lock[i];
  for (i = 0; i < 2; i++)
    if (maxo[i] != (int)base.max_recovering)
      cfgs[n_cfg] = base, cfgs[n_cfg++].max_recovering = (uint32_t)maxo[i];
  for (i = 0; i < 3; i++)
    if (policy[i] != base.spike_policy)
      cfgs[n_cfg] = base, cfgs[n_cfg++].spike_policy = policy[i];

  demo_mkdir(o->out_dir);
  ts_path_join(path, sizeof path, o->out_dir, "sweep.csv");
  f = DEMO_FOPEN(path, "w");
  fprintf(f, "tau_r,tau_d,window,lock,max_rec,policy,seeds,test_acc,"
             "test_acc_sd,recovery_fraction,loss_spikes,diverged\n");
  for (s = 0; s < o->seeds; s++) {
    demo_event ev[TS_MAX_EVENTS];
    int n_ev = ts_make_events(o->stress, o->steps, TS_LAYERS, 1 << 16,
                              (uint64_t)(o->seed + s), ev, TS_MAX_EVENTS);
    for (i = 0; i < 2; i++) {
      ts_result r = ts_train(o, i == 0 ? TS_ARM_F32 : TS_ARM_LOWP, o->seed + s,
                             train, test, ev, n_ev, NULL);
      ref[i][s] = r.test_acc;
      free(r.loss);
    }
  }
  printf("sweep: format %s, stress %d, %d steps, %d seed(s); f32 %.2f%%, "
         "lowp %.2f%%\n",
         o->fmt->name, o->stress, o->steps, o->seeds,
         100.0 * demo_mean(ref[0], o->seeds),
         100.0 * demo_mean(ref[1], o->seeds));
  printf("%5s %5s %3s %3s %4s %6s %15s %9s %6s %4s\n", "tau_r", "tau_d", "W",
         "L", "maxO", "policy", "test_acc(sd)", "recovery", "spikes", "div");
  for (c = 0; c < n_cfg; c++) {
    ts_opts oc = *o;
    double acc[100], rf[100];
    int spikes = 0, div = 0;
    oc.gnmr = cfgs[c];
    for (s = 0; s < o->seeds; s++) {
      demo_event ev[TS_MAX_EVENTS];
      int n_ev = ts_make_events(o->stress, o->steps, TS_LAYERS, 1 << 16,
                                (uint64_t)(o->seed + s), ev, TS_MAX_EVENTS);
      ts_result r =
          ts_train(&oc, TS_ARM_GNMR, o->seed + s, train, test, ev, n_ev, NULL);
      acc[s] = r.test_acc;
      rf[s] = r.recovery_fraction;
      spikes += r.loss_spikes;
      div += r.diverged;
      free(r.loss);
    }
    printf("%5.2g %5.2g %3u %3u %4u %6s %7.2f%% (%4.2f) %8.2f%% %6d %4d\n",
           cfgs[c].ratio_threshold, cfgs[c].delta_threshold,
           cfgs[c].delta_window, cfgs[c].lock_steps, cfgs[c].max_recovering,
           policy_name[cfgs[c].spike_policy], 100.0 * demo_mean(acc, o->seeds),
           100.0 * demo_sd(acc, o->seeds), 100.0 * demo_mean(rf, o->seeds),
           spikes, div);
    fflush(stdout);
    fprintf(f, "%g,%g,%u,%u,%u,%s,%d,%.6f,%.6f,%.6f,%d,%d\n",
            cfgs[c].ratio_threshold, cfgs[c].delta_threshold,
            cfgs[c].delta_window, cfgs[c].lock_steps, cfgs[c].max_recovering,
            policy_name[cfgs[c].spike_policy], o->seeds,
            demo_mean(acc, o->seeds), demo_sd(acc, o->seeds),
            demo_mean(rf, o->seeds), spikes, div);
  }
  if (fclose(f) != 0) DEMO_DIE("writing %s failed", path);
  printf("outputs in %s/: sweep.csv\n", o->out_dir);
  return 0;
}

/* The whole program, callable from a test. */
static int train_stress_main(int argc, char **argv) {
  ts_opts o;
  ts_data train, test;
  int rc;
  ts_parse(&o, argc, argv);
  memset(&train, 0, sizeof train);
  memset(&test, 0, sizeof test);
  if (o.data_dir && o.heavy)
    DEMO_DIE("--heavy: the built-in task only (no --data)");
  if (o.data_dir) {
    ts_load_split(o.data_dir, "train", &train);
    ts_load_split(o.data_dir, "t10k", &test);
    if (train.dim != test.dim)
      DEMO_DIE("%s: train and test images differ in size", o.data_dir);
  } else {
    ts_synthetic(&train, &test);
    if (o.heavy) {
      ts_heavy_tails(&train, o.heavy, 777);
      ts_heavy_tails(&test, o.heavy, 778);
    }
  }
  if (train.n < o.batch || test.n < o.batch)
    DEMO_DIE("the data has fewer items than one batch (%d)", o.batch);
  if (!o.quiet && !o.sweep) demo_note_spam(o.arms, o.n_arms, o.steps);
  rc = o.sweep ? ts_run_sweep(&o, &train, &test)
               : ts_run_arms(&o, &train, &test);
  ts_data_free(&train);
  ts_data_free(&test);
  return rc;
}

#ifndef TRAIN_STRESS_NO_MAIN
int main(int argc, char **argv) { return train_stress_main(argc, argv); }
#endif
