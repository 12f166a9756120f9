#!/usr/bin/env bash
# smoke.sh runs the image built by `make image` in a container runtime and checks that the
# hook service answers /healthz. It installs podman from the distribution's packages when it
# can (root with apt-get). Where no runtime can be had or none can run containers (a sandbox
# that forbids namespaces or setrlimit), it says so and exits 0: the image itself is checked
# by `make test-image` regardless.
#
#   tools/image/smoke.sh [bin/llmbudget-image.tar]
set -euo pipefail

tarball=${1:-bin/llmbudget-image.tar}
image=ghcr.io/llmbudget/llmbudget:$(cat VERSION)
port=${SMOKE_PORT:-18080}

skip() { echo "smoke: skipped: $*"; exit 0; }

if ! command -v podman >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "smoke: installing podman"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman crun >/dev/null 2>&1 \
      || skip "podman could not be installed"
  else
    skip "no podman, and not root with apt-get to install it"
  fi
fi
if ! out=$(podman load -q -i "$tarball" 2>&1); then
  skip "podman cannot load images here: $out"
fi
if ! out=$(podman run --rm "$image" version 2>&1); then
  skip "podman cannot run containers here: $out"
fi
echo "smoke: podman run $image version: $out"

name=llmbudget-smoke-$$
podman run -d --rm --name "$name" -p "127.0.0.1:$port:8080" "$image" >/dev/null
trap 'podman stop -t 2 "$name" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 50); do
  if body=$(curl -fsS "http://127.0.0.1:$port/healthz" 2>/dev/null); then
    echo "smoke: GET /healthz: $body"
    exit 0
  fi
  sleep 0.2
done
podman logs "$name" || true
echo "smoke: /healthz did not answer within 10 s" >&2
exit 1
