/* place_replay.c - the C side of tests/torch/test_placer.py: gnmr.h's
   placer, compiled into this program (not build/libgnmr.so), over a trace
   of signals, so the test compares the Python bridge's placements with an
   independent build of the library's.

   Input (stdin, host byte order): a gnmr_place_config as its raw bytes,
   uint32 n_units, uint32 steps, uint32 save_at, n_units double costs, then
   per step n_units double updates and n_units double quantization errors.
   Output (stdout): per step n_units uint8 of gnmr_place_step's high; then
   the checkpoint saved after step save_at (steps past the end: after the
   last), as uint64 length + bytes. Exit status 1 on any refused call. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include "tests/torch/replay_io.h"

int main(void) {
  gnmr_place_config cfg;
  gnmr_place pl;
  gnmr_place_unit *units;
  uint32_t n, steps, save_at, t;
  double *costs, *update, *qerr;
  uint8_t *high;
  unsigned char *ckpt = NULL;
  uint64_t ckpt_len = 0;
  int rc;
  replay_name = "place_replay";
  read_all(&cfg, sizeof cfg);
  read_header(&n, &steps, &save_at);
  units = (gnmr_place_unit *)alloc_zeroed(n, sizeof *units);
  costs = (double *)alloc_zeroed(n, sizeof *costs);
  update = (double *)alloc_zeroed(n, sizeof *update);
  qerr = (double *)alloc_zeroed(n, sizeof *qerr);
  high = (uint8_t *)alloc_zeroed(n, 1);
  read_all(costs, n * sizeof *costs);
  rc = gnmr_place_init(&pl, &cfg, units, costs, n);
  if (rc != GNMR_OK) die("gnmr_place_init", rc);
  for (t = 0; t < steps; t++) {
    read_all(update, n * sizeof *update);
    read_all(qerr, n * sizeof *qerr);
    rc = gnmr_place_step(&pl, update, qerr, high);
    if (rc != GNMR_OK) die("gnmr_place_step", rc);
    write_all(high, n);
    if (save_after(t, save_at, steps)) {
      size_t len = gnmr_place_checkpoint_size(&pl), written = 0;
      ckpt = (unsigned char *)alloc_zeroed(1, len ? len : 1);
      rc = gnmr_place_checkpoint_save(&pl, ckpt, len, &written);
      if (rc != GNMR_OK) die("gnmr_place_checkpoint_save", rc);
      ckpt_len = written;
    }
  }
  write_checkpoint(ckpt, ckpt_len);
  free(high);
  free(qerr);
  free(update);
  free(costs);
  free(units);
  return 0;
}
