#!/usr/bin/env bash
# Installs versitygw (Versity S3 Gateway, Apache-2.0), the test bed's second real S3 server,
# into the deltaguard cache: $CACHE/bin/versitygw, built by `go install` at a released version
# (the Go module proxy serves it; ~1 minute cold, 84 MB). Idempotent: a stamp records the
# version; a second run with the same version is a no-op.
# Used by deltaguard.localstack.versitygw_server (see docs/reference/testbed.md).
set -euo pipefail

cache="${DELTAGUARD_CACHE:-$HOME/.cache/deltaguard}"
version="v1.8.0"
bin="$cache/bin/versitygw"
stamp="$cache/versitygw.stamp"

mkdir -p "$cache/bin"
exec 9>"$cache/versitygw.install.lock"
flock 9

if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
    exit 0
fi
go_bin="$(command -v go || true)"
[[ -n "$go_bin" ]] || go_bin=/usr/local/go/bin/go
[[ -x "$go_bin" ]] || { echo "localstack/install_versitygw.sh: versitygw is built with Go; no 'go' on PATH or at /usr/local/go/bin/go" >&2; exit 1; }
echo "[localstack/install_versitygw.sh] go install versitygw $version into $cache/bin"
GOBIN="$cache/bin" GOFLAGS=-mod=mod "$go_bin" install "github.com/versity/versitygw/cmd/versitygw@$version"
"$bin" --version >/dev/null
echo "$version" > "$stamp"
echo "[localstack/install_versitygw.sh] done"
