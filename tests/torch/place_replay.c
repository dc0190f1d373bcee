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

#include <stdio.h>
#include <stdlib.h>

static void die(const char *what, int rc) {
  fprintf(stderr, "place_replay: %s: %s\n", what, gnmr_strerror(rc));
  exit(1);
}

static void read_all(void *p, size_t size) {
  if (size && fread(p, 1, size, stdin) != size) die("short input", GNMR_ESIZE);
}

static void write_all(const void *p, size_t size) {
  if (size && fwrite(p, 1, size, stdout) != size) die("write", GNMR_ESIZE);
}

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
  read_all(&cfg, sizeof cfg);
  read_all(&n, sizeof n);
  read_all(&steps, sizeof steps);
  read_all(&save_at, sizeof save_at);
  units = (gnmr_place_unit *)calloc(n ? n : 1, sizeof *units);
  costs = (double *)malloc((n ? n : 1) * sizeof *costs);
  update = (double *)malloc((n ? n : 1) * sizeof *update);
  qerr = (double *)malloc((n ? n : 1) * sizeof *qerr);
  high = (uint8_t *)malloc(n ? n : 1);
  if (!units || !costs || !update || !qerr || !high) die("malloc", GNMR_ESIZE);
  read_all(costs, n * sizeof *costs);
  rc = gnmr_place_init(&pl, &cfg, units, costs, n);
  if (rc != GNMR_OK) die("gnmr_place_init", rc);
  for (t = 0; t < steps; t++) {
    read_all(update, n * sizeof *update);
    read_all(qerr, n * sizeof *qerr);
    rc = gnmr_place_step(&pl, update, qerr, high);
    if (rc != GNMR_OK) die("gnmr_place_step", rc);
    write_all(high, n);
    if (t + 1 == save_at || (save_at > steps && t + 1 == steps)) {
      size_t len = gnmr_place_checkpoint_size(&pl), written = 0;
      ckpt = (unsigned char *)malloc(len ? len : 1);
      if (!ckpt) die("malloc", GNMR_ESIZE);
      rc = gnmr_place_checkpoint_save(&pl, ckpt, len, &written);
      if (rc != GNMR_OK) die("gnmr_place_checkpoint_save", rc);
      ckpt_len = written;
    }
  }
  write_all(&ckpt_len, sizeof ckpt_len);
  write_all(ckpt, (size_t)ckpt_len);
  free(ckpt);
  free(high);
  free(qerr);
  free(update);
  free(costs);
  free(units);
  return 0;
}
