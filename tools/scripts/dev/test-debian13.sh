#!/usr/bin/env bash
# Run numacoll's `make test` in a Debian 13 (trixie) root: GCC 14, CMake 3.31, Open MPI 5.0.x,
# MPICH 4.2.x, mpi4py 4. Not part of CI (building the root takes minutes and needs the Debian
# mirror); run it by hand as root before changing anything MPI-facing:
#
#   tools/scripts/dev/test-debian13.sh [--root DIR] [--rebuild-root] [--keep-build]
#
# The root is made once with debootstrap (minbase) plus the Makefile's TEST_PKGS and kept in
# DIR (default /var/tmp/numacoll-debian13) for the next run. Each run copies the working tree
# (tracked and untracked, not ignored, files) into DIR/src/numacoll, bind-mounts /proc, /sys,
# /dev and /dev/shm, runs `make test` there and prints a summary: the versions of the
# compilers and MPIs, ctest's totals, each MPI test's result (skips with their reason) and the
# failed tests. The mounts are undone on every exit path. The whole log is DIR/make-test.log.
# Exit status: that of `make test`.
set -euo pipefail

root=/var/tmp/numacoll-debian13
rebuild=0
keep_build=0
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root=$2; shift 2 ;;
    --rebuild-root) rebuild=1; shift ;;
    --keep-build) keep_build=1; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-debian13.sh: unknown argument '$1' (allowed: --root DIR, --rebuild-root, --keep-build)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "test-debian13.sh: must run as root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "test-debian13.sh: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }

repo=$(cd "$(dirname "$0")/../../.." && pwd)
log=$root/make-test.log

# The Debian mirror this machine's apt already uses (first deb.* URI of the main archive).
mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
           grep -oE 'https?://[^ ]+/debian/?$' | head -n1 || true)
fi
[ -n "$mirror" ] || { echo "test-debian13.sh: no Debian mirror found in /etc/apt; set DEBIAN_MIRROR" >&2; exit 2; }

mounted=()
cleanup() {
  local i
  for (( i=${#mounted[@]}-1; i>=0; i-- )); do
    umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bind() { # bind SRC DST: bind-mount and remember it for cleanup
  mkdir -p "$2"
  mount --bind "$1" "$2"
  mounted+=("$2")
}
mount_all() {
  # the root a mount point of its own: the tests' `unshare -m` (private /dev/shm) needs "/"
  # to be one to make it private
  bind "$root" "$root"
  mkdir -p "$root/proc" "$root/sys"
  mount -t proc proc "$root/proc"; mounted+=("$root/proc")
  mount -t sysfs sysfs "$root/sys"; mounted+=("$root/sys")
  bind /dev "$root/dev"
  bind /dev/shm "$root/dev/shm"
}

pkgs=$(make -s -C "$repo" --no-print-directory --eval 'nc-print-test-pkgs: ; @echo $(TEST_PKGS)' nc-print-test-pkgs)

if [ $rebuild = 1 ] || [ ! -f "$root/.numacoll-root-ready" ]; then
  echo "== building the Debian 13 root in $root (mirror $mirror)"
  rm -rf "$root"
  mkdir -p "$root"
  debootstrap --variant=minbase trixie "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
    { echo "debootstrap failed, see $root.debootstrap.log" >&2; exit 1; }
  mount_all
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # shellcheck disable=SC2086
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    make git ca-certificates $pkgs >>"$root.debootstrap.log" 2>&1 ||
    { echo "package install failed, see $root.debootstrap.log" >&2; exit 1; }
  touch "$root/.numacoll-root-ready"
else
  mount_all
fi

echo "== copying $repo into $root/src/numacoll"
mkdir -p "$root/src/numacoll"
if [ $keep_build = 0 ]; then
  rm -rf "$root/src/numacoll"
  mkdir -p "$root/src/numacoll"
fi
(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf -) | tar -xf - -C "$root/src/numacoll"
# a repository of its own (the benchmark summary records the commit): one commit of the copy
head=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
chroot "$root" sh -c "cd /src/numacoll && rm -rf .git && git init -q && git add -A &&
  git -c user.name=test-debian13 -c user.email=test-debian13@localhost commit -qm 'copy of $head'"

# the host's trust and pip settings, so that pip reaches the package index as it does here
# (mpi_openmpi_mpi4py fetches mpi4py's sdist)
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
fi
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
# this host's name must resolve in the root as it does here (mpi4py's testJoin)
cp /etc/hosts "$root/etc/hosts"
passenv=()
while IFS= read -r v; do passenv+=("$v"); done < <(env | grep -E '^(PIP_[A-Z_]+|REQUESTS_CA_BUNDLE|SSL_CERT_FILE)=' |
  while IFS='=' read -r n val; do [ -e "$root$val" ] || [[ "$n" == PIP_* && ! "$val" == /* ]] && printf '%s=%s\n' "$n" "$val"; done)

ver() { chroot "$root" dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "?"; }
echo "== Debian $(cat "$root/etc/debian_version"), gcc $(ver gcc-14), cmake $(ver cmake)," \
     "Open MPI $(ver libopenmpi-dev), MPICH $(ver libmpich-dev), mpi4py $(ver python3-mpi4py)"

echo "== make test (log: $log)"
start=$(date +%s)
set +e
chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 TERM=dumb "${passenv[@]}" bash -c 'cd /src/numacoll && make test' >"$log" 2>&1
rc=$?
set -e
wall=$(( $(date +%s) - start ))

echo "== summary ($(date -u +%Y-%m-%d), ${wall} s, make test exit $rc)"
grep -E 'tests passed|Total Test time' "$log" || echo "ctest did not finish (see $log)"
echo "-- MPI tests (passed / skipped / failed):"
for m in openmpi mpich; do
  r=$(grep -E "^ *[0-9]+/[0-9]+ Test +#[0-9]+: mpi_${m}_" "$log")
  printf '  %-8s %s / %s / %s\n' "$m" "$(grep -c ' Passed ' <<<"$r")" \
    "$(grep -c 'Skipped' <<<"$r")" "$(grep -Ec 'Failed|Timeout|Not Run' <<<"$r")"
done
r=$(grep -E "^ *[0-9]+/[0-9]+ Test +#[0-9]+: mpi_" "$log" | grep -Ev ": mpi_(openmpi|mpich)_")
printf '  %-8s %s / %s / %s\n' "both" "$(grep -c ' Passed ' <<<"$r")" \
  "$(grep -c 'Skipped' <<<"$r")" "$(grep -Ec 'Failed|Timeout|Not Run' <<<"$r")"
echo "-- skipped (with the reason the test printed: its 'SKIP' line in ctest's LastTest.log):"
last=$root/src/numacoll/build/Testing/Temporary/LastTest.log
grep -E '\*\*\*Skipped' "$log" | sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .*/\1/' |
  while read -r t; do
    why=$(awk -v t="$t" '$0 ~ "^[0-9]+/[0-9]+ Testing: " t "$" { p = 1; next }
                         p && /^[0-9]+\/[0-9]+ Testing: / { exit }
                         p && /SKIP|[Ss]kipped/ { print; exit }' "$last" 2>/dev/null)
    echo "  $t: ${why:-(no reason printed)}"
  done
echo "-- failed:"
sed -n '/The following tests FAILED/,$p' "$log" | grep -E '^\s+[0-9]+ - ' || echo "  none"
exit $rc
