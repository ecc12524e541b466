#!/usr/bin/env bash
# The Python venvs the tests use, created and filled (idempotent: a few seconds when they are
# already complete). scripts/test.sh starts this in the background while cargo builds, so the
# minutes of pip installs on a fresh machine overlap the Rust build; scripts/test-python.sh runs
# it again (then a no-op) so it also works alone. Never run two of these at once on one target/.
set -euo pipefail
cd "$(dirname "$0")/.."
# Skipped when a run already completed for this pyproject.toml and this script (the stamp).
stamp=target/python-venvs.stamp
want=$(cat python/pyproject.toml "$0" | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
  && [ -x target/python-venv/bin/python ] && [ -x target/python-cua-venv/bin/python ] \
  && [ -x target/python-vf04-venv/bin/python ]; then
  exit 0
fi
rm -f "$stamp"
venv=target/python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir -e "python[test]"
"$venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir --no-deps cua-agent==0.9.1
# cua's quick start (python/README.md, `python run-cua`) in a venv of its own: cua-agent 0.9.1
# needs openai<3 (litellm), the Agents SDK openai>=3. About 130 s the first time.
cua_venv=target/python-cua-venv
[ -x "$cua_venv/bin/python" ] || python3 -m venv "$cua_venv"
"$cua_venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir cua-agent==0.9.1
"$cua_venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir --no-deps -e python
# Verifiers 0.4 (verifiers.v1: the taskset and harness of deskbroker.verifiers_v1) in a venv of
# its own: 0.3 (the test extra) and 0.4 cannot share one. 53-99 s the first time here (589 MB),
# 3 s after.
vf04_venv=target/python-vf04-venv
[ -x "$vf04_venv/bin/python" ] || python3 -m venv "$vf04_venv"
"$vf04_venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir verifiers==0.4.0 \
  pytest==9.2.0 pytest-asyncio==1.5.0
"$vf04_venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir --no-deps -e python
echo "$want" > "$stamp"
