#!/usr/bin/env bash
# Install the given Debian packages if any is missing: with apt-get when run as root,
# otherwise print the exact command to run and fail.
set -euo pipefail
missing=()
for p in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "numacoll: installing missing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null || true
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi
echo "numacoll: missing Debian packages: ${missing[*]}" >&2
echo "install them with:" >&2
echo "  sudo apt-get install -y ${missing[*]}" >&2
exit 1
