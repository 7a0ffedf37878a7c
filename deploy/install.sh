#!/usr/bin/env bash
# Lays KNS out the one way it is deployed. The container image (deploy/docker/Dockerfile) and
# every KNS host of the cluster test (npm run test:cluster) are made by this script, so what
# the image runs is what the tests run (docs/deploy.md).
#
#   deploy/install.sh build <out-dir>
#       From the repository this script is in: builds the web pages if dist/web is missing or
#       stale (that needs the repository's dev dependencies: npm ci), copies what runs (bin/,
#       src/, dist/web, package.json, package-lock.json, LICENSE) into <out-dir> and installs
#       the production dependencies there. Then `node <out-dir>/bin/kns.js serve` runs on
#       Node 24 with nothing else. Run again, it lays the same files out again. <out-dir> must
#       be empty, missing, or an earlier output of this command.
#
#   deploy/install.sh user
#       Creates the system group and user kns (no login shell, home /var/lib/kns owned by it)
#       where they are missing. Needs root. KNS_UID=<n> gives both that number (the image:
#       10001, which Kubernetes' runAsUser names); unset, the system picks one. DESTDIR=<dir>
#       works on <dir>/etc and <dir>/var instead of the machine's (an image's root file system
#       being assembled; the tests).
#
# Needs bash, npm and, for the pages, the repository's dev dependencies; no network but the
# npm registry (and none when npm's cache has the packages).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
# What `kns` reads at run time; nothing else goes into the app (no tests, pages' sources, docs).
runtime=(bin src package.json package-lock.json LICENSE)
# Marks a directory this script laid out, the only non-empty kind it will overwrite.
marker=.kns-install
home=/var/lib/kns

die() {
  printf 'install.sh: %s\n' "$*" >&2
  exit 1
}

usage() {
  die "usage: deploy/install.sh build <out-dir> | deploy/install.sh user"
}

# Refuses an output directory that is the repository (or holds it) or lies inside what is copied.
check_out() {
  case "$repo/" in "$1/"*) die "build: $1 holds the repository itself; give a directory of its own" ;; esac
  case "$1/" in "$repo/bin/"* | "$repo/src/"* | "$repo/dist/"* | "$repo/node_modules/"*)
    die "build: $1 is inside what is copied from the repository; give a directory outside bin/, src/, dist/ and node_modules/" ;;
  esac
}

build() {
  [ $# -eq 1 ] && [ -n "$1" ] || usage
  local out=$1
  case "$out" in /*) ;; *) out=$PWD/$out ;; esac
  check_out "${out%/}"
  mkdir -p -- "$out"
  # Again with symbolic links resolved.
  out=$(cd -- "$out" && pwd -P)
  check_out "$out"
  if [ -n "$(ls -A -- "$out")" ] && [ ! -e "$out/$marker" ]; then
    die "build: $out is not empty and was not laid out by this script; give an empty or new directory"
  fi
  : >"$out/$marker"

  # The pages: web/build.ts --if-stale rebuilds only when web/, src/contract/ or the lock
  # changed since dist/web was built (its .build-stamp), through npm so that npm picks the
  # project's pinned node; bin/require-node.js refuses an older one in one line.
  echo "install.sh: the web pages (dist/web), built if missing or stale"
  (cd "$repo" && npm run --silent build:web -- --if-stale) ||
    die "build: the web pages could not be built (above); they need the repository's dev dependencies: run npm ci in $repo"
  [ -f "$repo/dist/web/.build-stamp" ] || die "build: $repo/dist/web has no .build-stamp after the build"

  echo "install.sh: copying ${runtime[*]} and dist/web into $out"
  local name
  for name in "${runtime[@]}" dist node_modules; do rm -rf -- "${out:?}/$name"; done
  for name in "${runtime[@]}"; do
    [ -e "$repo/$name" ] || die "build: $repo/$name is missing"
    cp -R -- "$repo/$name" "$out/$name"
  done
  mkdir -p "$out/dist"
  cp -R -- "$repo/dist/web" "$out/dist/web"

  echo "install.sh: production dependencies (npm ci --omit=dev) in $out"
  # --ignore-scripts: no production dependency needs an install script, and none may run one.
  (cd "$out" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund)
  # Readable by the service user, writable by none but the owner (the image: root).
  chmod -R u+rwX,go+rX,go-w -- "$out"
  echo "install.sh: done: node $out/bin/kns.js serve (Node 24)"
}

# Lookups in DESTDIR's files when given, else through NSS (which also sees LDAP and the like).
entry() {
  if [ -n "${DESTDIR:-}" ]; then
    grep -E "^$2:" "$DESTDIR/etc/$1" 2>/dev/null || true
  else
    getent "$1" "$2" || true
  fi
}

user() {
  [ $# -eq 0 ] || usage
  [ "$(id -u)" -eq 0 ] || die "user: needs root (it creates the system user kns)"
  local prefix=()
  if [ -n "${DESTDIR:-}" ]; then
    DESTDIR=$(cd -- "$DESTDIR" && pwd -P)
    prefix=(--prefix "$DESTDIR")
  fi
  local nologin=/usr/sbin/nologin
  [ -x "${DESTDIR:-}$nologin" ] || nologin=/sbin/nologin
  [ -x "${DESTDIR:-}$nologin" ] || nologin=/bin/false
  local ids=()
  if [ -n "${KNS_UID:-}" ]; then
    case "$KNS_UID" in '' | *[!0-9]*) die "user: KNS_UID must be a number, got $KNS_UID" ;; esac
    ids=(--uid "$KNS_UID")
  fi
  if [ -z "$(entry group kns)" ]; then
    groupadd --system ${KNS_UID:+--gid "$KNS_UID"} "${prefix[@]}" kns
    echo "install.sh: created the group kns"
  fi
  if [ -z "$(entry passwd kns)" ]; then
    useradd --system "${ids[@]}" --gid kns --home-dir "$home" --no-create-home --shell "$nologin" --comment 'KNS server' "${prefix[@]}" kns
    echo "install.sh: created the user kns (home $home, shell $nologin)"
  fi
  local uid gid
  uid=$(entry passwd kns | cut -d: -f3)
  gid=$(entry group kns | cut -d: -f3)
  [ -n "$uid" ] && [ -n "$gid" ] || die "user: kns has no uid or gid after creating it"
  # An existing kns with another number than asked: say so rather than run under a surprise.
  if [ -n "${KNS_UID:-}" ] && { [ "$uid" != "$KNS_UID" ] || [ "$gid" != "$KNS_UID" ]; }; then
    die "user: kns exists with uid $uid and gid $gid, not KNS_UID=$KNS_UID"
  fi
  # Numeric ids: under DESTDIR the machine's own user database does not know kns.
  install -d -m 0750 -o "$uid" -g "$gid" -- "${DESTDIR:-}$home"
}

[ $# -ge 1 ] || usage
command=$1
shift
case "$command" in
  build) build "$@" ;;
  user) user "$@" ;;
  *) usage ;;
esac
