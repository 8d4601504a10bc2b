#!/bin/bash
# numacoll-plot draws every plot from the fixture CSVs (tests/report/) and summary.md opens
# with the headline table:  report_plots.sh BIN_DIR FIXTURE_DIR
set -u
bin="$1" fixture="$2"
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    echo "report_plots: SKIP (no /usr/bin/python3 with matplotlib)"
    exit 77
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$fixture"/*.csv "$fixture"/*.json "$fixture"/run.md "$tmp"/
fail=0
bad() { echo "FAIL: $*"; fail=1; }
if ! out="$(/usr/bin/python3 "$bin/numacoll-plot" "$tmp" 2>&1)"; then
    bad "numacoll-plot exited non-zero: $out"
fi
# every plot: the headline and variants per collective, MPI and np, and the papers' figures
for png in mpi_barrier_openmpi_np2 mpi_barrier_openmpi_np2_variants mpi_barrier_mpich_np2 \
    mpi_bcast_openmpi_np2 mpi_bcast_openmpi_np2_variants mpi_bcast_mpich_np2 \
    mpi_allreduce_openmpi_np2 mpi_allreduce_openmpi_np2_variants \
    mpi_reduce_scatter_block_openmpi_np2 mpi_reduce_scatter_block_openmpi_np2_variants \
    mpi_scan_openmpi_np2 mpi_scan_openmpi_np2_variants \
    paper1_barriers paper2_logp paper_fig7_bcast_slots paper_fig8_bcast_fragment \
    paper_fig10_bcast_trees paper_fig11_bcast_rootshift paper4_kv_throughput \
    paper4_kv_get_profile; do
    [ -s "$tmp/$png.png" ] || bad "$png.png missing or empty"
done
s="$tmp/summary.md"
# the first table of summary.md is the headline table, with a row per collective
first="$(grep -m1 '^|' "$s")"
case "$first" in
"| collective | MPI | np | sizes | default / best native: worst |"*) ;;
*) bad "summary.md's first table is not the headline table: '$first'" ;;
esac
table="$(awk '/^\|/ { t = 1; print; next } t { exit }' "$s")"
for re in '^\| barrier \| Open MPI [0-9.]+ \| 2 \| - \| \*\*[0-9.]+x\*\*' \
    '^\| bcast \| MPICH [0-9.]+ \| 2 \| 1 - 1K B \|' \
    '^\| allreduce \| Open MPI [0-9.]+ \| 2 \| 8 B \| \*\*0\.62x\*\* \(8\) \| 0\.62x \(8\) \| '\
'\*\*2\.50x\*\* \(8\) \| 2\.50x \(8\) \| limit:signal \|' \
    '^\| allreduce \| Open MPI [0-9.]+ \| 2 \| 1M B \| \*\*0\.67x\*\* \(1M\)' \
    '^\| reduce_scatter_block \| Open MPI [0-9.]+ \| 2 \| 8 - 1K B \| \*\*0\.98x\*\* \(8\) \| '\
'0\.62x \(1K\) \| \*\*13\.42x\*\* \(8\) \| 2\.45x \(1K\) \| limit:fold \|' \
    '^\| scan \| Open MPI [0-9.]+ \| 2 \| 64K B \| \*\*1\.31x\*\* \(64K\) \| 1\.31x \(64K\) \| '\
'\*\*5\.42x\*\* \(64K\) \| 5\.42x \(64K\) \| limit:fold \|'; do
    grep -Eq -- "$re" <<<"$table" || bad "the headline table lacks /$re/: $table"
done
for sec in "## Paper 1" "#### Fig. 2" "#### Fig. 3" "## Paper 2" "Regret of the adaptive choice" \
    "## Paper 3" "### Fig. 11 and 13" "## Paper 4" "### Get profile" "## This run"; do
    grep -q -- "$sec" "$s" || bad "summary.md lacks '$sec'"
done
# numacoll-topo's groups of the paper's Fig. 2 and 3 match the paper's
if grep -q '| \*\*no\*\* |' "$s"; then
    bad "a group differs from the paper's: $(grep -F '**no**' "$s")"
fi
[ $fail = 0 ] && echo "report_plots: PASS"
exit $fail
