#!/bin/sh
# splice_section.sh FILE HEADING NEW: replace the section of FILE that
# starts with the line HEADING (up to the next line starting with "## ", or
# the end) by the contents of NEW; append it when FILE has no such section.
set -e
file=$1 heading=$2 new=$3
[ -f "$new" ] || { echo "splice_section: $new missing" >&2; exit 1; }
tmp=$file.tmp.$$
awk -v h="$heading" -v nf="$new" '
  function emit(  l) { while ((getline l < nf) > 0) print l; close(nf); done = 1 }
  $0 == h { emit(); skip = 1; next }
  skip && /^## / { skip = 0; print ""; }
  !skip { print }
  END { if (!done) { print ""; emit() } }
' "$file" > "$tmp"
mv "$tmp" "$file"
