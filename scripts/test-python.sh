#!/usr/bin/env bash
# The Python package's tests (python/): a venv in target/python-venv, the package installed from
# this checkout with its test extra, mypy over the package, the wheel and sdist built and checked
# (twine check, the wheel installed into a fresh venv), the Kubernetes manifests validated
# offline (deploy/kubernetes/validate.sh), then pytest against real brokers built by cargo (probe
# window and LibreCAD on Xvfb; deskbroker.ray on a local two-node Ray cluster), then the
# Verifiers 0.4 tests in their own venv. pytest's exit 5 (no tests collected) is a failure here,
# not a pass.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked -q -p deskbroker -p desk-test-support
venv=target/python-venv
cua_venv=target/python-cua-venv
vf04_venv=target/python-vf04-venv
scripts/python-venvs.sh
(cd python && "../$venv/bin/mypy")
# The wheel and sdist a user would install: built, accepted by `twine check --strict`, and the
# wheel installed into a fresh venv that imports the package.
dist=target/python-dist
rm -rf "$dist" && mkdir -p "$dist"
"$venv/bin/python" -m build --outdir "$dist" python >"$dist/build.log" 2>&1 \
  || { cat "$dist/build.log" >&2; exit 1; }
"$venv/bin/twine" check --strict "$dist"/*.whl "$dist"/*.tar.gz
python3 -m venv --clear target/python-wheel-venv
target/python-wheel-venv/bin/pip install -q --disable-pip-version-check --no-cache-dir "$dist"/*.whl
target/python-wheel-venv/bin/python -c "import deskbroker; print('wheel imports:', deskbroker.default_socket())"
deploy/kubernetes/validate.sh "$PWD/$venv/bin/kubernetes-validate"
status=0
(cd python && DESKBROKER_TARGET="$PWD/../target/debug" "../$venv/bin/python" -m pytest -q -p no:cacheprovider) || status=$?
if [ "$status" -eq 5 ]; then
  echo "test-python: pytest collected no tests" >&2
  exit 1
fi
# The Verifiers 0.4 tests alone, in their venv (a wrong venv fails instead of skipping).
vf04=0
(cd python && DESKBROKER_TARGET="$PWD/../target/debug" DESKBROKER_EXPECT_VERIFIERS=0.4 \
  "../$vf04_venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_verifiers_v1.py) || vf04=$?
if [ "$vf04" -eq 5 ]; then
  echo "test-python: pytest collected no Verifiers 0.4 tests" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  exit "$status"
fi
exit "$vf04"
