#!/usr/bin/env bash
# build-prometheus.sh builds the real Prometheus server that the spend integration test
# scrapes and queries, from the Go module proxy, into a cache folder outside the repository,
# once. Module version v0.316.0 is Prometheus v3.16.0 (Prometheus tags v3.x.y as v0.3xx.y).
#
#   LLMBUDGET_PROMETHEUS_BIN  where the binary goes (default ~/.cache/llmbudget/prometheus/v0.316.0)
#   FORCE=1                   rebuild even when the cache looks right
#
# The stamp holds the Go toolchain and the build command; the binary is reused when the stamp
# matches and it starts and reports its version. See README.md for measured times.
set -euo pipefail

version=v0.316.0
bin=${LLMBUDGET_PROMETHEUS_BIN:-$HOME/.cache/llmbudget/prometheus/$version}
pkg=github.com/prometheus/prometheus/cmd/prometheus@$version
export GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod

# remove_all_sd leaves out every service discovery but static and file (Prometheus's own build
# tag): the tests scrape static targets, and the cloud SDKs were most of a cold build.
build=(go install -trimpath -tags remove_all_sd -ldflags "-s -w")
want=$({ go version; echo "${build[*]} $pkg"; } | sha256sum | cut -c1-16)

# reports_version: the binary runs and says it is Prometheus. Its output is read whole
# before it is searched (grep -q exiting early would kill it with SIGPIPE under pipefail).
reports_version() {
	local out
	[ -x "$bin/prometheus" ] || return 1
	out=$("$bin/prometheus" --version 2>&1) || return 1
	grep -qF "prometheus, version" <<<"$out"
}

if [ "${FORCE:-0}" != 1 ] && [ -f "$bin/.stamp" ] && [ "$(cat "$bin/.stamp")" = "$want" ] && reports_version; then
	echo "prometheus up to date ($want)"
	exit 0
fi
mkdir -p "$bin"
rm -f "$bin/.stamp"
start=$SECONDS
echo "building prometheus ($pkg) ..."
GOBIN=$bin "${build[@]}" "$pkg"
reports_version || { echo "$bin/prometheus does not report its version" >&2; exit 1; }
echo "$want" >"$bin/.stamp"
echo "built prometheus in $((SECONDS - start))s"
