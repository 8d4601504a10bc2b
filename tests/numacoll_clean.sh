#!/bin/bash
# numacoll-clean in a private directory (--dir; the real /dev/shm only read, with --dry-run):
# of the segments numacoll-<pid>-<16 hex>, it removes those whose creator is gone (no such
# process, or a zombie) and that no process maps or holds open; it keeps one whose creator
# runs, one held open and one mapped by a live process; --dry-run removes nothing; names of
# other forms and other users' files are left alone.
#   numacoll_clean.sh BIN_DIR VERSION
set -u
clean="$1/numacoll-clean"
version="$2"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

base=/dev/shm
[ -w "$base" ] || base=${TMPDIR:-/tmp}
dir=$(mktemp -d "$base/nc-clean-test.XXXXXX")
pids=()
cleanup() {
    [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

# a pid that is gone (exited and reaped), and one of a zombie (its parent never waits for
# it: a shell could reap a child that ends before the shell execs its next program)
( : ) & dead=$!
wait "$dead"
zfile="$dir/zombie.pid"
python3 -c '
import os, sys, time
child = os.fork()
if child == 0:
    os._exit(0)
with open(sys.argv[1], "w") as f:
    f.write(str(child))
time.sleep(60)
' "$zfile" &
pids+=($!)
for _ in $(seq 100); do [ -s "$zfile" ] && break; sleep 0.05; done
zombie=$(cat "$zfile")
for _ in $(seq 100); do
    st=$(cat "/proc/$zombie/stat" 2>/dev/null); st=${st##*) }
    [ "${st:0:1}" = Z ] && break
    sleep 0.05
done
[ "${st:0:1}" = Z ] || bad "setup: pid $zombie did not become a zombie (state '${st:0:1}')"

mk() { head -c 4096 /dev/zero >"$dir/$1"; }
stale=numacoll-$dead-0123456789abcdef       # creator gone, unused: removed
stalez=numacoll-$zombie-00112233445566ff    # creator a zombie, unused: removed
running=numacoll-$$-89abcdef01234567        # creator (this script) running: kept
held=numacoll-$dead-fedcba9876543210        # creator gone, open in a live process: kept
mapped=numacoll-$dead-a0a1a2a3a4a5a6a7      # creator gone, mapped by a live process: kept
other=numacoll-notasegment                  # another form: not touched
for f in $stale $stalez $running $held $mapped $other; do mk "$f"; done
sleep 60 <"$dir/$held" &
holder=$!
pids+=($holder)
# the child opens the file after the fork: wait until it holds it (a loaded machine may run
# numacoll-clean first otherwise, which then rightly removes the file)
for _ in $(seq 200); do
    [ "$(readlink "/proc/$holder/fd/0" 2>/dev/null)" = "$dir/$held" ] && break
    sleep 0.05
done
[ "$(readlink "/proc/$holder/fd/0" 2>/dev/null)" = "$dir/$held" ] ||
    bad "setup: the holding process did not open $held"
# mapped through libc's mmap and the descriptor closed (Python's mmap module would keep a
# duplicate open): only /proc/<pid>/maps shows it
python3 -c '
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDWR)
addr = libc.mmap(None, 4096, 3, 1, fd, 0)  # PROT_READ|PROT_WRITE, MAP_SHARED
os.close(fd)
if addr in (None, ctypes.c_void_p(-1).value):
    sys.exit("mmap failed")
print("mapped", flush=True)
time.sleep(60)' "$dir/$mapped" >"$dir/mapped.ready" &
pids+=($!)
for _ in $(seq 200); do grep -q mapped "$dir/mapped.ready" 2>/dev/null && break; sleep 0.05; done
grep -q mapped "$dir/mapped.ready" || bad "setup: the mapping process did not start"
# another user's leftover (root only): never touched, never listed
foreign=numacoll-$dead-0f0f0f0f0f0f0f0f
if [ "$(id -u)" = 0 ] && mk "$foreign" && chown 65534 "$dir/$foreign" 2>/dev/null; then
    has_foreign=1
else
    rm -f "$dir/$foreign"; has_foreign=0
fi

all="$stale $stalez $running $held $mapped $other"
[ $has_foreign = 1 ] && all="$all $foreign"
exists() { for f in "$@"; do [ -e "$dir/$f" ] || return 1; done; }

out=$("$clean" --dry-run --dir "$dir" 2>&1); rc=$?
[ $rc = 0 ] || bad "--dry-run exited $rc: $out"
exists $all || bad "--dry-run removed something: $(ls "$dir") / $out"
for f in $stale $stalez; do
    grep -q "would remove $dir/$f" <<<"$out" || bad "--dry-run does not list $f as stale: $out"
done
grep -q "kept .*$running.*pid $$, is running" <<<"$out" || bad "--dry-run: $running not kept: $out"

out=$("$clean" --dir "$dir" 2>&1); rc=$?
echo "$out"
[ $rc = 0 ] || bad "numacoll-clean exited $rc"
[ -e "$dir/$stale" ] && bad "$stale (creator gone, unused) was not removed"
[ -e "$dir/$stalez" ] && bad "$stalez (creator a zombie, unused) was not removed"
exists $running $held $mapped $other || bad "a live or foreign segment was removed: $(ls "$dir")"
[ $has_foreign = 1 ] && ! exists $foreign && bad "another user's file was removed"
grep -q "$other" <<<"$out" && bad "a name of another form is listed: $out"
[ $has_foreign = 1 ] && grep -q "$foreign" <<<"$out" && bad "another user's file is listed"
grep -q "kept .*$held.*: pid [0-9]* has it open" <<<"$out" || bad "$held not reported as in use: $out"
grep -q "kept .*$mapped.*: pid [0-9]* maps it" <<<"$out" || bad "$mapped not reported as in use: $out"
grep -q "2 removed, 3 kept" <<<"$out" || bad "summary: $out"

# the interface: --help states the rule, --version the project's, a bad option exit 2
out=$("$clean" --help 2>&1); rc=$?
[ $rc = 0 ] || bad "--help exited $rc"
for w in --dry-run --dir --version /proc/\<pid\>/maps zombie "owned by the calling user"; do
    grep -q -- "$w" <<<"$out" || bad "--help does not mention $w"
done
[ "$("$clean" --version)" = "numacoll-clean (numacoll) $version" ] || bad "--version: $("$clean" --version)"
out=$("$clean" --frob 2>&1); rc=$?
{ [ $rc = 2 ] && grep -q "unknown option '--frob'; allowed: --dry-run" <<<"$out"; } ||
    bad "--frob: exit $rc: $out"
# a directory that cannot be read: exit 1 naming it, as --help says
out=$("$clean" --dir "$dir/none" 2>&1); rc=$?
{ [ $rc = 1 ] && grep -q "cannot read $dir/none" <<<"$out"; } || bad "--dir none: exit $rc: $out"
grep -q "1 if DIR cannot be read or a removal failed" <<<"$("$clean" --help | tr "\n" " ")" ||
    bad "--help does not give exit status 1 for an unreadable DIR"
# the real /dev/shm, read only
"$clean" --dry-run >/dev/null || bad "--dry-run on /dev/shm exited $?"
[ $fail = 0 ] && echo "numacoll_clean: PASS"
exit $fail
