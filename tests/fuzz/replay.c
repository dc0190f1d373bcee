/* replay.c - runs a fuzz harness without libFuzzer over its committed
   corpus (FUZZ_CORPUS, a directory, set by the Makefile), one line per
   input, closing with "N passed, N failed". `make test` builds it with gcc
   and clang, so every seed and every regression input found by fuzzing is
   replayed on each run; an invariant that fails aborts the program. Extra
   arguments are files or directories to replay instead. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *data;
  long len;
  size_t got;
  if (!f) return 0;
  if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return 0;
  }
  /* Exactly the input's size, like libFuzzer, so ASan sees overreads. */
  data = (uint8_t *)malloc(len > 0 ? (size_t)len : 1u);
  if (!data) {
    fclose(f);
    return 0;
  }
  got = fread(data, 1, (size_t)len, f);
  fclose(f);
  if (got != (size_t)len) {
    free(data);
    return 0;
  }
  LLVMFuzzerTestOneInput(data, got);
  free(data);
  return 1;
}

static void replay_path(const char *path, int *passed, int *failed) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    DIR *dir = opendir(path);
    struct dirent *e;
    if (!dir) {
      printf("FAIL %s (cannot open)\n", path);
      (*failed)++;
      return;
    }
    while ((e = readdir(dir)) != NULL) {
      char child[4096];
      if (e->d_name[0] == '.') continue;
      snprintf(child, sizeof child, "%s/%s", path, e->d_name);
      replay_path(child, passed, failed);
    }
    closedir(dir);
    return;
  }
  if (replay_file(path)) {
    printf("ok   %s\n", path);
    (*passed)++;
  } else {
    printf("FAIL %s (cannot read)\n", path);
    (*failed)++;
  }
}

int main(int argc, char **argv) {
  int passed = 0, failed = 0, i;
  if (argc > 1)
    for (i = 1; i < argc; i++) replay_path(argv[i], &passed, &failed);
  else
    replay_path(FUZZ_CORPUS, &passed, &failed);
  if (passed == 0) failed++; /* an empty corpus tests nothing */
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
