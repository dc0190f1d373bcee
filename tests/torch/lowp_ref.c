/* lowp_ref.c - the C side of tests/torch/test_formats.py: lab/lowp.h's
   quantizers on floats from stdin, so the test compares the bridge's
   fake quantizers (gnmr_torch.round_format, quantize_nvfp4) with the C
   emulation the demos train with, bit for bit.

   Usage: torch_lowp FORMAT COLS < floats > floats (host byte order, f32).
   A per-element format (e4m3, e5m2, e2m1): each value through
   lp_quantize. A block format (nvfp4): rows of COLS values, blocks along
   each row, the tensor scale from the amax of all of them, as
   lab/train_lm.c's lm_quantize_blocks does. */
#include "lab/lowp.h"

#include <stdio.h>
#include <stdlib.h>

static void die(const char *what) {
  fprintf(stderr, "torch_lowp: %s\n", what);
  exit(1);
}

int main(int argc, char **argv) {
  const lp_format *f;
  float *x;
  size_t n = 0, cap = 1024, i, cols;
  if (argc != 3) die("usage: torch_lowp FORMAT COLS");
  f = lp_format_find(argv[1]);
  if (!f) die("unknown format");
  cols = (size_t)strtoul(argv[2], NULL, 10);
  x = (float *)malloc(cap * sizeof *x);
  if (!x) die("malloc");
  for (;;) {
    size_t got;
    if (n == cap) {
      float *y = (float *)realloc(x, 2 * cap * sizeof *x);
      if (!y) die("realloc");
      x = y;
      cap *= 2;
    }
    got = fread(x + n, sizeof *x, cap - n, stdin);
    n += got;
    if (got == 0) break;
  }
  if (!f->block) {
    for (i = 0; i < n; i++) x[i] = lp_quantize(x[i], f);
  } else {
    float ts;
    size_t r, b, k;
    if (cols == 0 || n % cols) die("block format: n must be rows x COLS");
    ts = lp_block_tensor_scale(lp_amax(x, n), f);
    for (r = 0; r < n / cols; r++)
      for (b = 0; b < cols; b += (size_t)f->block) {
        float *v = x + r * cols + b, ba, sc;
        size_t e = cols - b < (size_t)f->block ? cols - b : (size_t)f->block;
        ba = lp_amax(v, e);
        sc = lp_block_scale(ba, f, ts);
        for (k = 0; k < e; k++)
          v[k] = sc > 0.0f ? lp_quantize(v[k] / sc, f) * sc : 0.0f;
      }
  }
  if (n && fwrite(x, sizeof *x, n, stdout) != n) die("write");
  free(x);
  return 0;
}
