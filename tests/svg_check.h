/* svg_check.h - what the demos' and the efficacy report's tests check in
   the files they write: the first line, and the geometry of the pictures
   (examples/common.h, bench/efficacy.c).

   svg_geometry_errors() reads an SVG (attributes in either quote) and
   counts the coordinates that lie outside its viewBox (every x, y, x1, y1,
   x2, y2, cx, cy attribute and every points pair) and, where the picture has a
   plot rectangle (clipPath "plot"), the coordinates of its legend (g class
   "legend") that lie inside the plot rectangle: a legend must stand beside the
   data, not over it. -1 when the file, its viewBox or a plot's legend is
   missing. Include after check.h. */
#ifndef SVG_CHECK_H
#define SVG_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CHECK_UNUSED int file_starts_with(const char *path, const char *prefix) {
  FILE *f = fopen(path, "r");
  char buf[64] = {0};
  if (!f) return 0;
  if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
  fclose(f);
  return strncmp(buf, prefix, strlen(prefix)) == 0;
}

/* Where the value of the next ` name=` attribute at or after p (before
   end) begins, either quote; NULL when there is none. */
static const char *svg__next(const char *p, const char *end, const char *name) {
  char key[16];
  const char *dq, *sq;
  snprintf(key, sizeof key, " %s=\"", name);
  dq = strstr(p, key);
  key[strlen(key) - 1] = '\'';
  sq = strstr(p, key);
  if (!dq || (sq && sq < dq)) dq = sq;
  return dq && dq < end ? dq + strlen(key) : NULL;
}

/* The number of the next ` name=` attribute at or after p, or NULL. */
static const char *svg__attr(const char *p, const char *end, const char *name,
                             double *v) {
  const char *at = svg__next(p, end, name);
  if (at) *v = strtod(at, NULL);
  return at;
}

/* Counts the coordinates of [p, end) outside [xlo, xhi] x [ylo, yhi]
   (inside, with `inside` set: the legend against the plot). */
static int svg__count(const char *p, const char *end, double xlo, double xhi,
                      double ylo, double yhi, int inside) {
  static const char *const xs[] = {"x", "x1", "x2", "cx"};
  static const char *const ys[] = {"y", "y1", "y2", "cy"};
  const char *q, *pts;
  double v, y;
  int bad = 0;
  size_t k;
  for (k = 0; k < 4; k++) {
    for (q = p; (q = svg__attr(q, end, xs[k], &v)) != NULL;)
      bad += inside ? (v > xlo && v < xhi) : (v < xlo || v > xhi);
    if (inside) continue; /* beside the plot: its x alone says so */
    for (q = p; (q = svg__attr(q, end, ys[k], &v)) != NULL;)
      bad += v < ylo || v > yhi;
  }
  for (q = p; !inside && (q = svg__next(q, end, "points")) != NULL;) {
    char *next;
    for (pts = q;; pts = next) {
      v = strtod(pts, &next);
      if (next == pts || *next != ',') break;
      y = strtod(next + 1, &next);
      bad += v < xlo || v > xhi || y < ylo || y > yhi;
    }
  }
  return bad;
}

static CHECK_UNUSED int svg_geometry_errors(const char *path) {
  static char buf[1 << 22];
  FILE *f = fopen(path, "rb");
  const char *vb, *clip, *legend, *legend_end;
  double w, h, x0 = 0, y0 = 0, pw = 0, ph = 0;
  size_t n;
  int bad;
  if (!f) return -1;
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  vb = strstr(buf, "viewBox=\"");
  if (!vb) vb = strstr(buf, "viewBox='");
  if (!vb || sscanf(vb + 9, "0 0 %lf %lf", &w, &h) != 2) return -1;
  bad = svg__count(buf, buf + n, 0, w, 0, h, 0);
  clip = strstr(buf, "<clipPath id=\"plot\">");
  legend = strstr(buf, "<g class=\"legend\">");
  if (clip) { /* a plot: its legend beside it */
    legend_end = legend ? strstr(legend, "</g>") : NULL;
    if (!legend_end || !svg__attr(clip, buf + n, "x", &x0) ||
        !svg__attr(clip, buf + n, "y", &y0) ||
        !svg__attr(clip, buf + n, "width", &pw) ||
        !svg__attr(clip, buf + n, "height", &ph))
      return -1;
    bad += svg__count(legend, legend_end, x0, x0 + pw, y0, y0 + ph, 1);
  }
  return bad;
}

#endif /* SVG_CHECK_H */
