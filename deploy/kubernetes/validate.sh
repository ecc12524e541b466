#!/usr/bin/env bash
# Validates the manifests here offline against the Kubernetes OpenAPI schemas that the PyPI
# package kubernetes-validate ships (strict: unknown fields fail too), for the oldest Kubernetes
# version they need (1.33: pod user namespaces, procMount, appArmorProfile). Then checks that
# each deliberately broken manifest in testdata/ is refused, so a validator that passes
# everything fails this script. Usage: validate.sh [kubernetes-validate executable]
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
echo "validate: ${#manifests[@]} manifests valid for Kubernetes $version; broken ones refused"
