#!/usr/bin/env bash
# build-caddy.sh builds the real Caddy that the authz integration test puts in front of a fake
# LLM upstream (forward_auth to llmbudget authz), from the Go module proxy, into a cache folder
# outside the repository, once.
#
#   LLMBUDGET_CADDY_BIN  where the binary goes (default ~/.cache/llmbudget/caddy/v2.11.9)
#   FORCE=1              rebuild even when the cache looks right
#
# The stamp holds the Go toolchain and the build command; the binary is reused when the stamp
# matches and it starts and reports its version. See README.md for measured times.
set -euo pipefail

version=v2.11.9
bin=${LLMBUDGET_CADDY_BIN:-$HOME/.cache/llmbudget/caddy/$version}
pkg=github.com/caddyserver/caddy/v2/cmd/caddy@$version
export GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod

build=(go install -trimpath -ldflags "-s -w")
want=$({ go version; echo "${build[*]} $pkg"; } | sha256sum | cut -c1-16)

# reports_version: the binary runs and says it is this version. `caddy version` says
# "unknown" when Caddy is the main module, so its build info is read instead. Its output is
# read whole before it is searched (grep -q exiting early would kill it with SIGPIPE under
# pipefail).
reports_version() {
	local out
	[ -x "$bin/caddy" ] || return 1
	out=$("$bin/caddy" build-info 2>&1) || return 1
	grep -qE "^mod[[:space:]]+github.com/caddyserver/caddy/v2[[:space:]]+$version[[:space:]]" <<<"$out"
}

if [ "${FORCE:-0}" != 1 ] && [ -f "$bin/.stamp" ] && [ "$(cat "$bin/.stamp")" = "$want" ] && reports_version; then
	echo "caddy up to date ($want)"
	exit 0
fi
mkdir -p "$bin"
rm -f "$bin/.stamp"
start=$SECONDS
echo "building caddy ($pkg) ..."
GOBIN=$bin "${build[@]}" "$pkg"
reports_version || { echo "$bin/caddy does not report version $version" >&2; exit 1; }
echo "$want" >"$bin/.stamp"
echo "built caddy in $((SECONDS - start))s"
