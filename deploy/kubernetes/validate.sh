#!/usr/bin/env bash
# Validates the manifests here offline against the Kubernetes OpenAPI schemas that the PyPI
# package kubernetes-validate ships (strict: unknown fields fail too), for the oldest Kubernetes
# version they need (1.33: pod user namespaces, procMount, appArmorProfile). Then checks that
# each deliberately broken manifest in testdata/ is refused, so a validator that passes
# everything fails this script. Then checks the broker's sizing, probes, preStop drain and
# PodDisruptionBudget against each other and the profiles (check_sizing.py, with the Python
# beside the validator), and that broken copies of broker.yaml fail that check.
# Usage: validate.sh [kubernetes-validate executable]
set -euo pipefail
cd "$(dirname "$0")"
validate=${1:-kubernetes-validate}
version=1.33.0
manifests=(*.yaml)
[ "${#manifests[@]}" -ge 2 ] || { echo "validate: no manifests found" >&2; exit 1; }
"$validate" --strict --quiet -k "$version" "${manifests[@]}"
for broken in testdata/broken-*.yaml; do
  if "$validate" --strict --quiet -k "$version" "$broken" >/dev/null 2>&1; then
    echo "validate: $broken passed but must be refused" >&2
    exit 1
  fi
done
python=$(dirname "$(command -v "$validate")")/python
[ -x "$python" ] || python=python3
profiles=../../crates/desk-desktop/profiles
"$python" check_sizing.py broker.yaml "$profiles"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
breakages=(
  's/--max-sessions=4/--max-sessions=5/'
  's/limits: {memory: 8704Mi}/limits: {memory: 4Gi}/'
  's|httpGet: {path: /readyz, port: health}|tcpSocket: {port: https}|'
  's/--wait-secs=300/--wait-secs=400/'
  's/^kind: PodDisruptionBudget/kind: ConfigMap/'
)
for breakage in "${breakages[@]}"; do
  sed "$breakage" broker.yaml >"$scratch/broker.yaml"
  if cmp -s broker.yaml "$scratch/broker.yaml"; then
    echo "validate: the breakage $breakage changed nothing" >&2
    exit 1
  fi
  if "$python" check_sizing.py "$scratch/broker.yaml" "$profiles" >/dev/null 2>&1; then
    echo "validate: check_sizing passed broker.yaml broken by $breakage" >&2
    exit 1
  fi
done
echo "validate: ${#manifests[@]} manifests valid for Kubernetes $version; broken ones refused"
