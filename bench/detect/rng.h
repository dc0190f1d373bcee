/* ========================================================================
   Random numbers
   ======================================================================== */

static unsigned long long rng_s;
static double uni(void) {
  unsigned long long z = (rng_s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return ((double)(z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
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
