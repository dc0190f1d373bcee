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

#include "tests/torch/replay_io.h"

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
  read_header(&n, &steps, &save_at);
  slots = (gnmr_slot *)alloc_zeroed(n, sizeof *slots);
  norms = (float *)alloc_zeroed(n, sizeof *norms);
  d = (gnmr_decision *)alloc_zeroed(n, sizeof *d);
  rec = (int32_t *)alloc_zeroed(n, sizeof *rec);
  rc = gnmr_init(&ctl, &cfg, slots, n);
  if (rc != GNMR_OK) die("gnmr_init", rc);
  for (t = 0; t < steps; t++) {
    read_all(norms, n * sizeof *norms);
    rc = gnmr_step(&ctl, norms, d);
    if (rc != GNMR_OK) die("gnmr_step", rc);
    for (u = 0; u < n; u++) rec[u] = gnmr_recovering(&ctl, u);
    write_all(d, n * sizeof *d);
    write_all(rec, n * sizeof *rec);
    if (save_after(t, save_at, steps)) {
      size_t len = gnmr_checkpoint_size(&ctl), written = 0;
      ckpt = (unsigned char *)alloc_zeroed(1, len ? len : 1);
      rc = gnmr_checkpoint_save(&ctl, ckpt, len, &written);
      if (rc != GNMR_OK) die("gnmr_checkpoint_save", rc);
      ckpt_len = written;
    }
  }
  write_checkpoint(ckpt, ckpt_len);
  free(rec);
  free(d);
  free(norms);
  free(slots);
  return 0;
}
