/* replay_io.h - what the bridge tests' C replays (replay.c: the controller,
   place_replay.c: the placer) share: their input header, raw reads and
   writes of stdin and stdout, the checkpoint at the end, and one way to
   fail (the message on stderr, exit status 1). */
#ifndef TESTS_TORCH_REPLAY_IO_H
#define TESTS_TORCH_REPLAY_IO_H

#include "gnmr.h"

#include <stdio.h>
#include <stdlib.h>

/* The program's name in its messages (each replay sets it first). */
static const char *replay_name = "replay";

static void die(const char *what, int rc) {
  fprintf(stderr, "%s: %s: %s\n", replay_name, what, gnmr_strerror(rc));
  exit(1);
}

static void read_all(void *p, size_t size) {
  if (size && fread(p, 1, size, stdin) != size) die("short input", GNMR_ESIZE);
}

static void write_all(const void *p, size_t size) {
  if (size && fwrite(p, 1, size, stdout) != size) die("write", GNMR_ESIZE);
}

/* The header after the config: uint32 n_units, steps and save_at. */
static void read_header(uint32_t *n, uint32_t *steps, uint32_t *save_at) {
  read_all(n, sizeof *n);
  read_all(steps, sizeof *steps);
  read_all(save_at, sizeof *save_at);
}

/* 1 after step t (0-based) if the checkpoint is saved there: after step
   save_at, or after the last when save_at is past the end. */
static int save_after(uint32_t t, uint32_t save_at, uint32_t steps) {
  return t + 1 == save_at || (save_at > steps && t + 1 == steps);
}

/* n zeroed elements of size bytes (at least one), or exit. */
static void *alloc_zeroed(uint32_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) die("malloc", GNMR_ESIZE);
  return p;
}

/* The checkpoint (len bytes at ckpt; none: 0, NULL) as uint64 length +
   bytes, then freed. */
static void write_checkpoint(unsigned char *ckpt, uint64_t len) {
  write_all(&len, sizeof len);
  write_all(ckpt, (size_t)len);
  free(ckpt);
}

#endif /* TESTS_TORCH_REPLAY_IO_H */
