/* replay.c - the C side of tests/torch/test_gnmr_torch.py: runs gnmr.h's
   controller, compiled into this program (not build/libgnmr.so), over a
   trace of norms, so the test compares the Python bridge's decisions with
   an independent build of the library's.

   Input (stdin, host byte order): a gnmr_config as its raw bytes, uint32
   n_units, uint32 steps, uint32 save_at, then steps * n_units floats.
   Output (stdout): per step, n_units gnmr_decision as raw bytes followed by
   n_units int32 of gnmr_recovering; then the checkpoint saved after step
   save_at (steps past the end: after the last), as uint64 length + bytes.
   Exit status 1 on any refused call (the message on stderr). */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include <stdio.h>
#include <stdlib.h>

static void die(const char *what, int rc) {
  fprintf(stderr, "replay: %s: %s\n", what, gnmr_strerror(rc));
  exit(1);
}

static void read_all(void *p, size_t size) {
  if (size && fread(p, 1, size, stdin) != size) die("short input", GNMR_ESIZE);
}

static void write_all(const void *p, size_t size) {
  if (size && fwrite(p, 1, size, stdout) != size) die("write", GNMR_ESIZE);
}

int main(void) {
  gnmr_config cfg;
  gnmr_ctl ctl;
  uint32_t n, steps, save_at, t, u;
  gnmr_slot *slots;
  float *norms;
  gnmr_decision *d;
  int32_t *rec;
  unsigned char *ckpt = NULL;
  uint64_t ckpt_len = 0;
  int rc;
  read_all(&cfg, sizeof cfg);
  read_all(&n, sizeof n);
  read_all(&steps, sizeof steps);
  read_all(&save_at, sizeof save_at);
  slots = (gnmr_slot *)calloc(n ? n : 1, sizeof *slots);
  norms = (float *)malloc((n ? n : 1) * sizeof *norms);
  d = (gnmr_decision *)malloc((n ? n : 1) * sizeof *d);
  rec = (int32_t *)malloc((n ? n : 1) * sizeof *rec);
  if (!slots || !norms || !d || !rec) die("malloc", GNMR_ESIZE);
  rc = gnmr_init(&ctl, &cfg, slots, n);
  if (rc != GNMR_OK) die("gnmr_init", rc);
  for (t = 0; t < steps; t++) {
    read_all(norms, n * sizeof *norms);
    rc = gnmr_step(&ctl, norms, d);
    if (rc != GNMR_OK) die("gnmr_step", rc);
    for (u = 0; u < n; u++) rec[u] = gnmr_recovering(&ctl, u);
    write_all(d, n * sizeof *d);
    write_all(rec, n * sizeof *rec);
    if (t + 1 == save_at || (save_at > steps && t + 1 == steps)) {
      size_t len = gnmr_checkpoint_size(&ctl), written = 0;
      ckpt = (unsigned char *)malloc(len ? len : 1);
      if (!ckpt) die("malloc", GNMR_ESIZE);
      rc = gnmr_checkpoint_save(&ctl, ckpt, len, &written);
      if (rc != GNMR_OK) die("gnmr_checkpoint_save", rc);
      ckpt_len = written;
    }
  }
  write_all(&ckpt_len, sizeof ckpt_len);
  write_all(ckpt, (size_t)ckpt_len);
  free(ckpt);
  free(rec);
  free(d);
  free(norms);
  free(slots);
  return 0;
}
