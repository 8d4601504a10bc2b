#!/bin/bash
# numacoll-kvbench's reader processes do not outlive their parent: kill -9 the parent in
# the middle of a measurement (read-only and write-only modes) and expect every reader to
# exit within seconds with a message, instead of spinning on for ever as orphans.
#   kvbench_dead_parent.sh BIN_DIR
set -u
bin="$1"
fail=0
for mode in read-only write-only; do
    log=$(mktemp)
    "$bin/numacoll-kvbench" --mode $mode --readers 2 --fixed --lock seqlock --reps 1 \
        --duration 30 >"$log" 2>&1 &
    parent=$!
    sleep 1.5
    readers=$(pgrep -P "$parent" | tr '\n' ' ')
    kill -9 "$parent"
    wait "$parent" 2>/dev/null
    if [ -z "$readers" ]; then echo "FAILED: $mode: no reader process found"; fail=1; continue; fi
    left=""
    for _ in $(seq 100); do # up to 10 s
        left=""
        for r in $readers; do
            # a zombie (state Z) has ended; PID 1 here may be slow to reap it
            st=$(awk '{print $3}' "/proc/$r/stat" 2>/dev/null)
            [ -n "$st" ] && [ "$st" != Z ] && left="$left $r"
        done
        [ -z "$left" ] && break
        sleep 0.1
    done
    if [ -n "$left" ]; then
        echo "FAILED: $mode: reader(s)$left still running 10 s after their parent died"
        kill -9 $left 2>/dev/null
        fail=1
    elif ! grep -q "exited" "$log"; then
        echo "FAILED: $mode: the readers ended without saying why:"; cat "$log"; fail=1
    else
        echo "ok: $mode: readers ended after their parent was killed"
    fi
    rm -f "$log"
done
[ $fail = 0 ] && echo "kvbench_dead_parent: PASS"
exit $fail
