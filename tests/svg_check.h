/* svg_check.h - what the demos' and the efficacy report's tests check in
   the files they write: the first line, and the geometry of the pictures
   (lab/common.h, lab/efficacy.c).

   svg_geometry_errors() reads an SVG (attributes in either quote) and
   counts the coordinates that lie outside its viewBox (every x, y, x1, y1,
   x2, y2, cx, cy attribute and every points pair) and, where the picture has a
   plot rectangle (clipPath "plot"), the coordinates of its legend (g class
   "legend") that lie inside the plot rectangle: a legend must stand beside the
   data, not over it. -1 when the file, its viewBox or a plot's legend is
   missing.

   svg_label_errors() reads a demo's raster (lab/common.h,
   demo_svg_raster) and counts the fault letters (text class "fault") that
   are smaller than 11 px or whose box touches a lane, a bar or a frame
   (rect class "lane", "hf", "fault"): a letter on a frame's edge cannot be
   read. svg_dash_errors() reads a loss plot (demo_svg_loss) and counts the
   curves that share a dash pattern with an earlier one, and the legend
   samples whose pattern is not their curve's: arms that train alike draw
   one over the other, and only their styles tell them apart. Both are -1
   where the file, or anything they check, is missing. Include after
   check.h. */
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
  char key[32];
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

/* The whole file at path in buf (cap bytes), or 0. */
static size_t svg__read(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  size_t n;
  if (!f) return 0;
  n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = 0;
  return n;
}

/* One element's number attribute (the element ends at its '>'). */
static int svg__num(const char *el, const char *name, double *v) {
  const char *end = strchr(el, '>');
  return end && svg__attr(el, end, name, v) != NULL;
}

static CHECK_UNUSED int svg_label_errors(const char *path) {
  static char buf[1 << 22];
  static const char *const boxes[] = {
      "<rect class=\"lane\"", "<rect class=\"hf\"", "<rect class=\"fault\""};
  const char *t, *r;
  int bad = 0, labels = 0;
  size_t k;
  if (!svg__read(path, buf, sizeof buf)) return -1;
  for (t = buf; (t = strstr(t, "<text class=\"fault\"")) != NULL; t++) {
    double x, y, size, lx, rx, top, bottom;
    const char *end = strchr(t, '>');
    if (!end || !svg__num(t, "x", &x) || !svg__num(t, "y", &y) ||
        !svg__num(t, "font-size", &size))
      return -1;
    labels++;
    /* the glyph's box: cap height above the baseline, a little below */
    lx = x, rx = x + 0.8 * size;
    if (strstr(t, "text-anchor=\"middle\"") &&
        strstr(t, "text-anchor=\"middle\"") < end)
      lx = x - 0.4 * size, rx = x + 0.4 * size;
    top = y - 0.8 * size, bottom = y + 0.2 * size;
    if (size < 11) bad++;
    for (k = 0; k < sizeof boxes / sizeof *boxes; k++)
      for (r = buf; (r = strstr(r, boxes[k])) != NULL; r++) {
        double bx, by, bw, bh;
        if (!svg__num(r, "x", &bx) || !svg__num(r, "y", &by) ||
            !svg__num(r, "width", &bw) || !svg__num(r, "height", &bh))
          return -1;
        bad += lx < bx + bw && rx > bx && top < by + bh && bottom > by;
      }
  }
  return labels ? bad : -1;
}

static CHECK_UNUSED int svg_dash_errors(const char *path) {
  static char buf[1 << 22];
  char dash[16][32];
  const char *p, *legend, *at;
  int n = 0, i, bad = 0;
  if (!svg__read(path, buf, sizeof buf)) return -1;
  legend = strstr(buf, "<g class=\"legend\">");
  if (!legend) return -1;
  for (p = buf; (p = strstr(p, "<polyline")) != NULL && p < legend; p++) {
    const char *end = strchr(p, '>');
    size_t len;
    at = svg__next(p, end, "stroke-dasharray");
    if (!at || n == 16) return -1;
    len = strcspn(at, "\"'");
    if (len >= sizeof dash[0]) return -1;
    memcpy(dash[n], at, len);
    dash[n][len] = 0;
    for (i = 0; i < n; i++) bad += strcmp(dash[i], dash[n]) == 0;
    n++;
  }
  for (i = 0, p = legend; (p = strstr(p, "<line")) != NULL; p++, i++) {
    at = svg__next(p, strchr(p, '>'), "stroke-dasharray");
    if (i >= n || !at) return -1;
    bad += strncmp(at, dash[i], strlen(dash[i])) != 0 ||
           (at[strlen(dash[i])] != '"' && at[strlen(dash[i])] != '\'');
  }
  return n > 0 && i == n ? bad : -1;
}

#endif /* SVG_CHECK_H */
