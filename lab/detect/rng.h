/* ========================================================================
   Random numbers
   ======================================================================== */

static uint64_t rng_s;
static double uni(void) { /* (0, 1): never 0, for log() */
  return ((double)(splitmix_next(&rng_s) >> 11) + 0.5) *
         (1.0 / 9007199254740992.0);
}
static double gauss(void) {
  return sqrt(-2.0 * log(uni())) * cos(6.283185307179586 * uni());
}
static unsigned urange(unsigned lo, unsigned hi) { /* inclusive */
  unsigned v = lo + (unsigned)(uni() * (double)(hi - lo + 1));
  return v > hi ? hi : v;
}
static double loguni(double lo, double hi) {
  return exp(log(lo) + uni() * (log(hi) - log(lo)));
}
