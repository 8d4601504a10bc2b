#!/bin/sh
# Run test_core's huge-page test ($1) with shmem_enabled = always, then put the kernel's
# previous setting back whatever happens. Exit 77 (skip) where the setting cannot be changed.
knob=/sys/kernel/mm/transparent_hugepage/shmem_enabled
[ -r "$knob" ] || { echo "no $knob (kernel without shmem THP): skipped"; exit 77; }
old=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$knob")
[ -n "$old" ] || { echo "cannot read the current value of $knob: skipped"; exit 77; }
if ! (echo always > "$knob") 2>/dev/null; then
    echo "cannot write $knob (not root, or a read-only sysfs): skipped"
    exit 77
fi
trap 'echo "$old" > "$knob"' EXIT INT TERM
NC_TEST_THP_FORCED=1 "$1"
