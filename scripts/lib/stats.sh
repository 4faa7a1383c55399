# shellcheck shell=bash
# Sourced by the benchmark scripts: the statistics they report.

# The median of the numbers on stdin, one per line ("n/a" when there are none; the mean of the two
# middle values for an even count, printed with up to 10 significant digits).
median() {
  sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.10g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
