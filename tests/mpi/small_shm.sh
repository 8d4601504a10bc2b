#!/bin/bash
# small_shm.sh SIZE COMMAND [ARGS...]: run COMMAND in a private mount namespace whose
# /dev/shm is a fresh tmpfs of SIZE (e.g. 48m), so that a test can fill it without touching
# the machine's. Needs root (unshare -m, mount); exits 77 (ctest: skipped) with a message
# saying why when that is not possible.
set -u
size="$1"; shift
if [ "$(id -u)" != 0 ]; then
    echo "small_shm.sh: skipped: needs root (a private tmpfs on /dev/shm)"; exit 77
fi
if ! command -v unshare >/dev/null; then
    echo "small_shm.sh: skipped: unshare (util-linux) not found"; exit 77
fi
if ! unshare -m --propagation private true 2>/dev/null; then
    echo "small_shm.sh: skipped: unshare -m is not permitted here"; exit 77
fi
exec unshare -m --propagation private bash -c '
    mount -t tmpfs -o size="$0",mode=1777 nc-small-shm /dev/shm ||
        { echo "small_shm.sh: skipped: cannot mount a tmpfs on /dev/shm"; exit 77; }
    exec "$@"' "$size" "$@"
