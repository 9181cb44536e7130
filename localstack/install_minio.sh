#!/usr/bin/env bash
# Installs MinIO (AGPL-3.0), the test bed's third real S3 server, into the deltaguard cache:
# $CACHE/bin/minio, built by `go install` from the Go module proxy. MinIO tags no Go-module
# releases the proxy serves, so the version is a pseudo-version (a commit of 2026-02-12); cold
# it takes about 4 minutes and 150 MB. Idempotent: a stamp records the version; a second run
# with the same version is a no-op.
# Used by deltaguard.localstack.minio_server (see docs/reference/testbed.md).
set -euo pipefail

cache="${DELTAGUARD_CACHE:-$HOME/.cache/deltaguard}"
version="v0.0.0-20260212201848-7aac2a2c5b7c"
bin="$cache/bin/minio"
stamp="$cache/minio.stamp"

mkdir -p "$cache/bin"
exec 9>"$cache/minio.install.lock"
flock 9

if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
    exit 0
fi
go_bin="$(command -v go || true)"
[[ -n "$go_bin" ]] || go_bin=/usr/local/go/bin/go
[[ -x "$go_bin" ]] || { echo "localstack/install_minio.sh: MinIO is built with Go; no 'go' on PATH or at /usr/local/go/bin/go" >&2; exit 1; }
echo "[localstack/install_minio.sh] go install minio $version into $cache/bin"
GOBIN="$cache/bin" GOFLAGS=-mod=mod "$go_bin" install "github.com/minio/minio@$version"
"$bin" --version >/dev/null
echo "$version" > "$stamp"
echo "[localstack/install_minio.sh] done"
