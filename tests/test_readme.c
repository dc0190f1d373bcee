/* test_readme.c - every C block of README.md compiles as written.

   Each ```c block is taken from the README as it stands and compiled with
   the compiler that built this test, -std=c99 -Wall -Wextra -Wpedantic
   -Werror, once as it is and once with -DGNMR_NO_SIMD (gnmr.h then
   includes no system header beyond its own, so a block that relies on one
   it did not include fails there). Its lines that start with '#' go to file
   scope, the rest into a function body. A block that continues the
   quickstart (the first block) gets the quickstart's own '#' lines first,
   without GNMR_IMPLEMENTATION. What the prose leaves to the reader (N, the
   step count, the caller's buffers) is declared before the block by the
   table below, and a value the block hands on is used after it; nothing
   the block itself should declare or include is supplied. A C block the
   table does not know fails the test.

   One block cannot be compiled here: the CUDA one needs nvcc and the CUDA
   headers (make cuda builds examples/cuda/train_step.cu, which makes the
   same calls). For it the test checks that every gnmr_ name it calls is in
   examples/cuda/gnmr_norms.cuh or gnmr_ctl.cuh. Run from the repository
   root. */
#include "tests/check.h"

#include <ctype.h>

#ifdef __clang__
#define README_CC "clang"
#else
#define README_CC "gcc"
#endif
/* Where the blocks are written: a directory of this program's own (the
   Makefile passes "<program>.out"), so the test programs can run side by
   side (tests/run.sh). */
#ifdef TEST_OUT
#define README_DIR TEST_OUT
#else
#define README_DIR "build/" README_CC "/readme"
#endif

enum { CONTINUES = 1, CUDA = 2 };

typedef struct readme_context {
  const char *first;  /* the block's first line starts with this */
  int kind;           /* 0: the quickstart; CONTINUES; CUDA */
  const char *scope;  /* file-scope declarations (stubs of other APIs) */
  const char *before; /* the body's declarations, before the block */
  const char *after;  /* the body's end, after the block */
} readme_context;

static const readme_context contexts[] = {
    {"#include <stdlib.h>", 0, "", "enum { N = 4 };\nint steps = 2;\n", ""},
    {"gnmr_norms_enqueue(", CUDA, "", "", ""},
    {"gnmr_place_config pc", CONTINUES, "", "enum { N = 4 };\nint steps = 2;\n",
     ""},
    /* the MPI example: mpi.h is no dependency of make test, so its three
       names are stubs of MPI's own signatures */
    {"gnmr_unit_sumsq(my_shards", CONTINUES,
     "#include <math.h>\n"
     "typedef int MPI_Datatype;\ntypedef int MPI_Op;\ntypedef int MPI_Comm;\n"
     "enum { MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD };\n"
     "int MPI_Allreduce(const void *, void *, int, MPI_Datatype, MPI_Op,\n"
     "                  MPI_Comm);\n",
     "enum { N_UNITS = 4 };\nconst gnmr_tensor *my_shards = NULL;\n"
     "size_t n_my_shards = 0;\ndouble local[N_UNITS], global[N_UNITS];\n"
     "float norms[N_UNITS];\ngnmr_decision d[N_UNITS];\ngnmr_ctl ctl;\n",
     ""},
    {"double s = gnmr_sumsq_f32(grad, n);", CONTINUES, "",
     "size_t n = 1, n0 = 1, n1 = 1, n2 = 1;\n"
     "float grad[1] = {0}, w0[1] = {0};\nuint16_t w1[1] = {0}, w2[1] = {0};\n",
     "(void)s;\n"},
    /* "Vendoring into a C trainer": the trainer's own pieces are stubs */
    {"/* One unit per parameter tensor:", CONTINUES,
     "void forward_backward(int step);\nvoid adamw_update(int step);\n",
     "enum { NT = 4 };\nint steps = 2;\nstatic float g0[1];\n"
     "float *grad[NT] = {g0, g0, g0, g0};\nsize_t numel[NT] = {1, 1, 1, 1};\n",
     ""},
    {"/* qkvw's gradient, one unit per layer", CONTINUES, "",
     "enum { L = 2, C = 1 };\nstatic float grad_qkvw[L * 3 * C * C];\n",
     "(void)q;\n"}};

/* The lines of text[0 .. len) that start (after blanks) with '#' if hash,
   else the others, each with its newline, appended to out. */
static void lines_of(const char *text, size_t len, int hash, char *out,
                     size_t cap) {
  size_t i = 0;
  while (i < len) {
    size_t e = i, b = i;
    while (e < len && text[e] != '\n') e++;
    while (b < e && (text[b] == ' ' || text[b] == '\t')) b++;
    if ((b < e && text[b] == '#') == (hash != 0)) {
      size_t have = strlen(out);
      if (have + (e - i) + 2 < cap) {
        memcpy(out + have, text + i, e - i);
        out[have + (e - i)] = '\n';
        out[have + (e - i) + 1] = '\0';
      }
    }
    i = e + 1;
  }
}

static const readme_context *context_of(const char *block) {
  size_t k;
  for (k = 0; k < sizeof contexts / sizeof contexts[0]; k++)
    if (strncmp(block, contexts[k].first, strlen(contexts[k].first)) == 0)
      return &contexts[k];
  return NULL;
}

/* Compiles one source in both modes; 1 if both compiled. */
static int compiles(const char *path, int line) {
  static const char *const modes[2] = {"", "-DGNMR_NO_SIMD "};
  char cmd[1024];
  int m, ok = 1;
  for (m = 0; m < 2; m++) {
    snprintf(cmd, sizeof cmd,
             README_CC " -std=c99 -Wall -Wextra -Wpedantic -Werror %s-I. "
                       "-c -o %s.o %s 2>&1",
             modes[m], path, path);
    if (system(cmd) != 0) {
      printf("  the block at README.md:%d does not compile (%s)\n", line, cmd);
      ok = 0;
    }
  }
  return ok;
}

/* Every gnmr_ name the CUDA block calls is in the CUDA headers. */
static int cuda_names_declared(const char *block, size_t len, int line) {
  char *h1 = check_read_text("examples/cuda/gnmr_norms.cuh");
  char *h2 = check_read_text("examples/cuda/gnmr_ctl.cuh");
  size_t i;
  int ok = h1 && h2, names = 0;
  for (i = 0; ok && i + 5 < len; i++) {
    char name[80];
    size_t e = i;
    if (strncmp(block + i, "gnmr_", 5) != 0 ||
        (i > 0 &&
         (isalnum((unsigned char)block[i - 1]) || block[i - 1] == '_')))
      continue;
    while (e < len && (isalnum((unsigned char)block[e]) || block[e] == '_'))
      e++;
    if (e >= len || block[e] != '(' || e - i + 2 > sizeof name) continue;
    memcpy(name, block + i, e - i);
    name[e - i] = '(';
    name[e - i + 1] = '\0';
    names++;
    if (!strstr(h1, name) && !strstr(h2, name)) {
      printf("  README.md:%d calls %s), in neither CUDA header\n", line, name);
      ok = 0;
    }
  }
  free(h1);
  free(h2);
  if (names == 0) ok = 0;
  printf("  README.md:%d: CUDA, not compiled here (nvcc; make cuda builds "
         "examples/cuda/train_step.cu); %d calls checked declared\n",
         line, names);
  return ok;
}

TEST(every_c_block_of_the_readme_compiles) {
  static char src[1 << 16], quick_hash[4096];
  char *readme = check_read_text("README.md");
  const char *p;
  int blocks = 0, compiled = 0;
  REQUIRE(readme != NULL);
  REQUIRE(system("mkdir -p " README_DIR) == 0);
  quick_hash[0] = '\0';
  for (p = readme; (p = strstr(p, "```c\n")) != NULL;) {
    const char *body = p + 5, *end = strstr(body, "\n```");
    const readme_context *c = context_of(body);
    const size_t len = end ? (size_t)(end - body) + 1 : 0;
    int line = 2;
    const char *q;
    char path[128];
    FILE *f;
    for (q = readme; q < body; q++) line += *q == '\n';
    REQUIRE(end != NULL);
    p = end + 4;
    blocks++;
    if (!c) {
      printf("  README.md:%d: a C block the test has no context for\n", line);
      check__failed_here = 1;
      continue;
    }
    if (c->kind == CUDA) {
      EXPECT(cuda_names_declared(body, len, line));
      continue;
    }
    src[0] = '\0';
    if (c->kind == CONTINUES) {
      REQUIRE(quick_hash[0] != '\0'); /* the quickstart comes first */
      strcat(src, quick_hash);
    }
    lines_of(body, len, 1, src, sizeof src);
    if (c->kind == 0) /* the quickstart's includes, for the blocks after */
      lines_of(body, len, 1, quick_hash, sizeof quick_hash);
    strcat(src, c->scope);
    strcat(src, "void readme_block(void);\nvoid readme_block(void) {\n");
    strcat(src, c->before);
    lines_of(body, len, 0, src, sizeof src);
    strcat(src, c->after);
    strcat(src, "}\n");
    if (c->kind == 0) { /* one implementation: the others include gnmr.h */
      char *impl = strstr(quick_hash, "#define GNMR_IMPLEMENTATION\n");
      if (impl) memmove(impl, impl + 28, strlen(impl + 28) + 1);
    }
    snprintf(path, sizeof path, README_DIR "/block_%d.c", line);
    f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs(src, f);
    fclose(f);
    if (compiles(path, line))
      compiled++;
    else
      check__failed_here = 1;
  }
  free(readme);
  printf("  %d C blocks, %d compiled in both modes\n", blocks, compiled);
  EXPECT(blocks >= 2 && compiled >= 1);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(every_c_block_of_the_readme_compiles)};
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
