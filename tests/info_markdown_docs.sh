#!/bin/sh
# docs/tuning.md is what `numacoll-info --markdown` prints (the table is generated from the
# rows, src/*/config_rows.c), and every help text is at most 300 characters (config.h:
# NC_CFG_DOC_MAX; the measurements behind a default go to docs/tuning-notes.md).
#   info_markdown_docs.sh BIN_DIR SOURCE_DIR
bin="$1" src="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# an empty environment: the table does not depend on it, and an invalid NUMACOLL_* value
# of the caller's must not make the test fail
if ! env -i PATH="$PATH" "$bin/numacoll-info" --markdown >"$tmp/tuning.md"; then
    echo "FAIL: numacoll-info --markdown exited with status $?"
    exit 1
fi
if ! diff -u "$src/docs/tuning.md" "$tmp/tuning.md"; then
    echo "FAIL: docs/tuning.md differs from numacoll-info --markdown (above: - committed," \
        "+ generated); regenerate it: build/bin/numacoll-info --markdown > docs/tuning.md"
    fail=1
fi
env -i PATH="$PATH" "$bin/numacoll-info" --parsable --config >"$tmp/table" || {
    echo "FAIL: numacoll-info --parsable --config exited with status $?"
    exit 1
}
rows=$(grep -c '^config\.NUMACOLL_[A-Z0-9_]*\.doc:' "$tmp/table")
[ "$rows" -ge 50 ] || { echo "FAIL: only $rows help texts in numacoll-info --parsable"; fail=1; }
long=$(sed -n 's/^config\.\(NUMACOLL_[A-Z0-9_]*\)\.doc:\(.*\)$/\1 \2/p' "$tmp/table" |
    LC_ALL=C awk '{ n = length($0) - length($1) - 1; if (n > 300) print $1 " (" n " characters)" }')
if [ -n "$long" ]; then
    echo "FAIL: help texts over 300 characters (move the detail to docs/tuning-notes.md):"
    echo "$long"
    fail=1
fi
[ $fail = 0 ] && echo "info_markdown_docs: PASS ($rows help texts, docs/tuning.md up to date)"
exit $fail
