#!/usr/bin/env bash
# The Python package's tests (python/): a venv in target/python-venv, the package installed from
# this checkout with its test extra, mypy over the package, the Kubernetes manifests validated
# offline (deploy/kubernetes/validate.sh), then pytest against real brokers built by cargo (probe
# window and LibreCAD on Xvfb; deskbroker.ray on a local two-node Ray cluster). pytest's exit 5
# (no tests collected) is a failure here, not a pass.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked -q -p deskbroker -p desk-test-support
venv=target/python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir -e "python[test]"
"$venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir --no-deps cua-agent==0.9.1
(cd python && "../$venv/bin/mypy")
deploy/kubernetes/validate.sh "$PWD/$venv/bin/kubernetes-validate"
status=0
(cd python && DESKBROKER_TARGET="$PWD/../target/debug" "../$venv/bin/python" -m pytest -q -p no:cacheprovider) || status=$?
if [ "$status" -eq 5 ]; then
  echo "test-python: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
