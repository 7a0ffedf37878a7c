#!/usr/bin/env bash
# Writes the secrets compose.yaml reads, once: an existing file is kept (KNS_SECRET is pinned
# in the database on the first start and must never change; docs/operations.md).
#
#   deploy/compose/secrets.sh [dir]     (default: secrets/ at the repository's root)
#
#   kns.env       KNS_SECRET and DATABASE_URL (with the database password), for the replicas
#   db_password   the same password, for PostgreSQL (POSTGRES_PASSWORD_FILE)
#   tls.pem       a self-signed certificate and key for localhost, for HAProxy: replace it with
#                 your own (certificate chain and key in one PEM file)
#
# The directory is git- and docker-ignored and readable by its owner only. Needs openssl.
set -euo pipefail

dir=${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)/secrets"}
umask 077
mkdir -p -- "$dir"
chmod 0700 -- "$dir"

if [ ! -e "$dir/db_password" ] || [ ! -e "$dir/kns.env" ]; then
  [ ! -e "$dir/db_password" ] && [ ! -e "$dir/kns.env" ] ||
    { echo "secrets.sh: $dir has one of kns.env and db_password without the other; restore it or remove both" >&2; exit 1; }
  password=$(openssl rand -hex 24)
  printf '%s' "$password" >"$dir/db_password"
  printf 'KNS_SECRET=%s\nDATABASE_URL=postgres://kns:%s@postgres:5432/kns\n' "$(openssl rand -hex 32)" "$password" >"$dir/kns.env"
  echo "secrets.sh: wrote $dir/kns.env and $dir/db_password: keep a copy of KNS_SECRET where you keep your other secrets"
fi

if [ ! -e "$dir/tls.pem" ]; then
  key=$(mktemp)
  crt=$(mktemp)
  trap 'rm -f -- "$key" "$crt"' EXIT
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$key" -out "$crt" 2>/dev/null
  cat "$crt" "$key" >"$dir/tls.pem"
  # HAProxy in its container runs as its own user: it must read the file, which the
  # directory's 0700 keeps from the host's other users.
  chmod 0644 -- "$dir/tls.pem"
  echo "secrets.sh: wrote $dir/tls.pem (self-signed for localhost; replace it with your certificate and key)"
fi
