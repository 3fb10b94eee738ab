# SPDX-License-Identifier: GPL-2.0
# Reading perftest's output: its result row and a rate that holds when
# perftest's estimate of the CPU clock failed (under TCG it often prints
# "Correlation coefficient r^2 < 0.9" and a rate of 0 or inf, with the
# iteration count still right).

# pt_row OUTPUT: the first result row (after the "#bytes" header).
pt_row() {
	awk '/#bytes/ {h=1; next} h && NF>=4 && $1 ~ /^[0-9]+$/ {print; exit}' <<<"$1"
}

# good_num VALUE: true for a finite, positive number.
good_num() { awk -v v="$1" 'BEGIN { exit !(v ~ /^[0-9.]+$/ && v + 0 > 0) }'; }

# pt_gbps ROW SIZE WINDOW: the average bandwidth of a `--report_gbits`
# bandwidth row in Gb/s (its fourth column); from the iteration count
# (second column) over the WINDOW seconds perftest sampled (-D minus
# twice -f) when that column is not a good number. Empty if neither is.
pt_gbps() {
	local g
	g=$(awk '{print $4}' <<<"$1")
	good_num "$g" && { echo "$g"; return; }
	g=$(awk -v s="$2" -v w="$3" '{ if ($2 > 0 && w > 0) printf "%.6f", $2 * s * 8e-9 / w }' <<<"$1")
	good_num "$g" && echo "$g"
}
