#!/usr/bin/env bash
# Installs one of the test bed's Go S3 servers into the deltaguard cache: $CACHE/bin/NAME, built
# by `go install` from the Go module proxy.
#   versitygw  Versity S3 Gateway (Apache-2.0), the second real S3 server, at a released
#              version (~1 minute cold, 84 MB).
#   minio      MinIO (AGPL-3.0), the third real S3 server. MinIO tags no Go-module releases the
#              proxy serves, so the version is a pseudo-version (a commit of 2026-02-12); cold it
#              takes about 4 minutes and 150 MB.
# Usage: bash localstack/install_go_s3_server.sh versitygw|minio
# Idempotent: a stamp ($CACHE/NAME.stamp) records the version; a second run with the same
# version is a no-op. One installer of a server at a time ($CACHE/NAME.install.lock).
# Used by deltaguard.localstack.versitygw_server and .minio_server (see docs/reference/testbed.md).
set -euo pipefail

me="localstack/install_go_s3_server.sh"
name="${1:-}"
case "$name" in
    versitygw)
        label="versitygw"
        module="github.com/versity/versitygw/cmd/versitygw"
        version="v1.8.0"
        ;;
    minio)
        label="MinIO"
        module="github.com/minio/minio"
        version="v0.0.0-20260212201848-7aac2a2c5b7c"
        ;;
    *)
        echo "usage: bash $me versitygw|minio" >&2
        exit 2
        ;;
esac

cache="${DELTAGUARD_CACHE:-$HOME/.cache/deltaguard}"
bin="$cache/bin/$name"
stamp="$cache/$name.stamp"

mkdir -p "$cache/bin"
exec 9>"$cache/$name.install.lock"
flock 9

if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
    exit 0
fi
go_bin="$(command -v go || true)"
[[ -n "$go_bin" ]] || go_bin=/usr/local/go/bin/go
[[ -x "$go_bin" ]] || { echo "$me: $label is built with Go; no 'go' on PATH or at /usr/local/go/bin/go" >&2; exit 1; }
echo "[$me] go install $name $version into $cache/bin"
GOBIN="$cache/bin" GOFLAGS=-mod=mod "$go_bin" install "$module@$version"
"$bin" --version >/dev/null
echo "$version" > "$stamp"
echo "[$me] done"
