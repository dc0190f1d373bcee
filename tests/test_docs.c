/* test_docs.c - the README's figures live in bench/RESULTS.md. The README
   quotes them in blocks marked <!-- BEGIN quote NAME --> ... <!-- END quote
   NAME -->; each block must equal RESULTS' block of that name byte for byte,
   every RESULTS block must be quoted, and outside its blocks the README
   states no measured figure (a percentage, a decimal ratio "0.8x", a time
   in ns). So a figure that changes is changed in RESULTS, and a stale copy
   fails here. Run from the repository's root. */
#include "tests/check.h"

#include <ctype.h>

#define BEGIN_MARK "<!-- BEGIN quote "
#define END_MARK "<!-- END quote "

/* The block of `text` named `name` (len chars): its body's start and length,
   or NULL when there is none or it has no end mark. */
static const char *block(const char *text, const char *name, size_t len,
                         size_t *body_len) {
  const char *p = text, *body, *end;
  char end_mark[128];
  while ((p = strstr(p, BEGIN_MARK)) != NULL) {
    p += strlen(BEGIN_MARK);
    if (strncmp(p, name, len) == 0 && strncmp(p + len, " -->\n", 5) == 0) break;
  }
  if (!p || len + 32 > sizeof end_mark) return NULL;
  body = p + len + 5;
  snprintf(end_mark, sizeof end_mark, END_MARK "%.*s -->\n", (int)len, name);
  end = strstr(body, end_mark);
  if (!end) return NULL;
  *body_len = (size_t)(end - body);
  return body;
}

/* Every block of `from` should have its twin in `in`, the same bytes; *bad
   counts those that do not (each printed). Returns the number of blocks in
   `from`. */
static int blocks_match(const char *from, const char *from_name, const char *in,
                        const char *in_name, int *bad) {
  const char *p = from;
  int n = 0;
  while ((p = strstr(p, BEGIN_MARK)) != NULL) {
    const char *name = p + strlen(BEGIN_MARK), *a, *b;
    size_t len = strcspn(name, " \n"), la, lb;
    n++;
    a = block(from, name, len, &la);
    b = block(in, name, len, &lb);
    if (!a) {
      printf("  %s: block '%.*s' has no end mark\n", from_name, (int)len, name);
      ++*bad;
    } else if (!b) {
      printf("  %s has no block '%.*s' (%s has)\n", in_name, (int)len, name,
             from_name);
      ++*bad;
    } else if (la != lb || memcmp(a, b, la) != 0) {
      size_t k = 0;
      while (k < la && k < lb && a[k] == b[k]) k++;
      printf("  block '%.*s' differs at byte %zu: %s \"%.30s\", %s \"%.30s\"\n",
             (int)len, name, k, from_name, a + k, in_name, b + k);
      ++*bad;
    }
    p = name;
  }
  return n;
}

TEST(readme_quotes_equal_results_blocks) {
  char *readme = check_read_text("README.md"),
       *results = check_read_text("bench/RESULTS.md");
  int bad = 0;
  if (readme && results) {
    EXPECT(blocks_match(readme, "README.md", results, "RESULTS.md", &bad) >= 4);
    EXPECT(blocks_match(results, "RESULTS.md", readme, "README.md", &bad) >= 4);
    EXPECT_EQ_INT(bad, 0);
  } else {
    EXPECT(!!readme && !!results);
  }
  free(readme);
  free(results);
}

/* A measured figure at p: a number (digits, maybe '.' digits) then '%' or
   " ns", or a decimal then 'x' not followed by a letter ("0.8x"; "10x" is a
   scenario's factor, not a measure). Its length, or 0. */
static size_t figure_at(const char *p) {
  size_t n = 0, frac = 0;
  while (isdigit((unsigned char)p[n])) n++;
  if (n == 0) return 0;
  if (p[n] == '.' && isdigit((unsigned char)p[n + 1]))
    for (n++; isdigit((unsigned char)p[n]); n++) frac++;
  if (p[n] == '%') return n + 1;
  if (strncmp(p + n, " ns", 3) == 0 && !isalpha((unsigned char)p[n + 3]))
    return n + 3;
  if (frac && p[n] == 'x' && !isalpha((unsigned char)p[n + 1])) return n + 1;
  return 0;
}

/* Numbers that define a term or a setting, not measures; a space here
   matches any run of white space in the README, however it wraps. */
static const char *const not_figures[] = {
    "100% is as good as f32", /* what gap recovered means */
    "0% no better than",      /* the same */
    "95% interval",           /* what [CI] means */
    "1.05x the EMA",          /* AdaGC's setting */
    "budget 0.1: 10%",        /* the placer's default, in a code comment */
};

/* The length of the text at p that matches pat, white space runs matching
   white space runs; 0 if it does not match. */
static size_t match_wrapped(const char *p, const char *pat) {
  const char *q = p;
  while (*pat) {
    if (*pat == ' ') {
      if (!isspace((unsigned char)*q)) return 0;
      while (isspace((unsigned char)*q)) q++;
      pat++;
    } else if (*q++ != *pat++) {
      return 0;
    }
  }
  return (size_t)(q - p);
}

TEST(readme_states_figures_only_in_quotes) {
  char *readme = check_read_text("README.md");
  const char *p;
  int line = 1, quoted = 0, found = 0;
  REQUIRE(readme != NULL);
  for (p = readme; *p; p++) {
    size_t len, k;
    if (*p == '\n') line++;
    if (strncmp(p, BEGIN_MARK, strlen(BEGIN_MARK)) == 0) quoted = 1;
    if (strncmp(p, END_MARK, strlen(END_MARK)) == 0) quoted = 0;
    if (quoted || (p > readme && isalnum((unsigned char)p[-1]))) continue;
    for (k = 0; k < sizeof not_figures / sizeof not_figures[0]; k++)
      if ((len = match_wrapped(p, not_figures[k])) > 0)
        for (; len > 1; len--)
          if (*++p == '\n') line++;
    len = figure_at(p);
    if (len) {
      printf("  README.md:%d: \"%.*s\" outside a quote\n", line, (int)len, p);
      found++;
      p += len - 1;
    }
  }
  EXPECT_EQ_INT(found, 0);
  free(readme);
}

/* The two checks above can fail: a changed byte and a loose figure. */
TEST(checks_catch_a_stale_copy_and_a_loose_figure) {
  const char *a = "x\n" BEGIN_MARK "t -->\n| 80% |\n" END_MARK "t -->\n";
  const char *b = "y\n" BEGIN_MARK "t -->\n| 81% |\n" END_MARK "t -->\n";
  const char *c = "y\n" BEGIN_MARK "u -->\n| 80% |\n" END_MARK "u -->\n";
  int bad = 0;
  EXPECT_EQ_INT(blocks_match(a, "a", a, "a", &bad), 1);
  EXPECT_EQ_INT(bad, 0);
  printf("  (expected below: one differing block, one missing)\n");
  blocks_match(a, "a", b, "b", &bad);
  EXPECT_EQ_INT(bad, 1);
  blocks_match(a, "a", c, "c", &bad);
  EXPECT_EQ_INT(bad, 2);
  EXPECT(figure_at("80% of") == 3);
  EXPECT(figure_at("0.8x that") == 4);
  EXPECT(figure_at("2.1 ns per") == 6);
  EXPECT(figure_at("-0.90% and") == 0); /* found from the digit after '-' */
  EXPECT(figure_at("10x") == 0);
  EXPECT(figure_at("0.8xy") == 0);
  EXPECT(figure_at("4096 units") == 0);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(readme_quotes_equal_results_blocks),
      CHECK_CASE(readme_states_figures_only_in_quotes),
      CHECK_CASE(checks_catch_a_stale_copy_and_a_loose_figure),
  };
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
