#!/usr/bin/env bash
# build-kueue.sh builds the real Kueue controller that the Kueue integration test runs, from the
# Go module proxy, into a cache folder outside the repository, once, and copies Kueue's CRDs and
# the conversion-webhook patches of its own kustomization from the same module beside it.
#
#   LLMBUDGET_KUEUE_BIN  where it all goes (default ~/.cache/llmbudget/kueue/v0.17.0):
#                        kueue, crds/*.yaml, conversion/*.yaml
#   FORCE=1              rebuild even when the cache looks right
#
# The stamp holds the Go toolchain and the build command; the cache is reused when the stamp
# matches, the binary says (go version -m) it is built from sigs.k8s.io/kueue at this version,
# and the CRDs are there. See README.md for measured times.
set -euo pipefail

version=v0.17.0
bin=${LLMBUDGET_KUEUE_BIN:-$HOME/.cache/llmbudget/kueue/$version}
module=sigs.k8s.io/kueue
pkg=$module/cmd/kueue@$version
export GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod

build=(go install -trimpath -ldflags "-s -w -X $module/pkg/version.GitVersion=$version")
want=$({ go version; echo "${build[*]} $pkg"; echo "crds conversion"; } | sha256sum | cut -c1-16)

# built_from_module: the binary's build information names the module at this version. Its
# output is read whole before it is searched (grep -q exiting early would kill it with SIGPIPE
# under pipefail).
built_from_module() {
	local out
	[ -x "$bin/kueue" ] || return 1
	out=$(go version -m "$bin/kueue" 2>&1) || return 1
	grep -qE "^[[:space:]]+mod[[:space:]]+$module[[:space:]]+$version[[:space:]]" <<<"$out"
}

has_crds() {
	[ -f "$bin/crds/kueue.x-k8s.io_workloads.yaml" ] && [ -f "$bin/conversion/webhook_in_workloads.yaml" ]
}

if [ "${FORCE:-0}" != 1 ] && [ -f "$bin/.stamp" ] && [ "$(cat "$bin/.stamp")" = "$want" ] &&
	built_from_module && has_crds; then
	echo "kueue up to date ($want)"
	exit 0
fi
mkdir -p "$bin"
rm -f "$bin/.stamp"
start=$SECONDS
echo "building kueue ($pkg) ..."
GOBIN=$bin "${build[@]}" "$pkg"
built_from_module || { echo "$bin/kueue does not say it is built from $module $version" >&2; exit 1; }

# The CRDs and patches come from the module source go install has just downloaded (its
# directory in the module cache is read-only, so copies are made writable).
src=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src/config/components/crd/bases" ] || { echo "no CRDs under $src/config/components/crd/bases" >&2; exit 1; }
rm -rf "$bin/crds" "$bin/conversion"
mkdir -p "$bin/crds" "$bin/conversion"
cp "$src"/config/components/crd/bases/*.yaml "$bin/crds/"
# Only the patches that Kueue's kustomization enables (uncommented "- path: patches/webhook_in_...").
sed -n 's/^- path: \(patches\/webhook_in_[a-z]*\.yaml\)$/\1/p' "$src/config/components/crd/kustomization.yaml" |
	while read -r patch; do cp "$src/config/components/crd/$patch" "$bin/conversion/"; done
chmod -R u+w "$bin/crds" "$bin/conversion"
has_crds || { echo "no CRDs or conversion patches copied to $bin" >&2; exit 1; }
echo "$want" >"$bin/.stamp"
echo "built kueue in $((SECONDS - start))s"
