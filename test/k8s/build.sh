#!/usr/bin/env bash
# build.sh builds the real kube-apiserver, kube-controller-manager, etcd and a matching
# kubectl that the integration tests run, into a cache folder outside the repository, once.
#
#   LLMBUDGET_K8S_BIN  where the binaries go (default ~/.cache/llmbudget/k8s/v1.37.2)
#   FORCE=1            rebuild even when the cache looks right
#
# The cache is reused when its stamp matches (Kubernetes and etcd versions, every module
# version, the Go toolchain, this script) and every binary reports the expected version;
# otherwise all four are rebuilt one after another. See README.md for measured times.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
k8s_version=v1.37.2
bin=${LLMBUDGET_K8S_BIN:-$HOME/.cache/llmbudget/k8s/$k8s_version}
stamp=$bin/.stamp

cd "$here"
export GOWORK=off CGO_ENABLED=0
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
# Not a hash of go.mod: adding a test dependency must not force a rebuild.
inputs=$( (go version; go list -m all; cat "$here/build.sh") | sha256sum | cut -c1-16)
want_stamp="kubernetes=$k8s_version etcd=$etcd_version inputs=$inputs"

# reports_version BINARY TEXT: BINARY exists and its version output contains TEXT.
reports_version() {
	local cmd=("$bin/$1" --version)
	[ "$1" = kubectl ] && cmd=("$bin/$1" version --client)
	[ -x "$bin/$1" ] && "${cmd[@]}" 2>/dev/null | grep -qF -- "$2"
}

# check_versions [QUIET]: every binary reports its expected version (names the first that
# does not, unless QUIET).
check_versions() {
	local name want
	for name in kube-apiserver kube-controller-manager kubectl etcd; do
		case $name in
		kubectl) want="Client Version: $k8s_version" ;;
		etcd) want="etcd Version: ${etcd_version#v}" ;;
		*) want="Kubernetes $k8s_version" ;;
		esac
		if ! reports_version "$name" "$want"; then
			[ -n "${1:-}" ] || echo "$bin/$name does not report \"$want\"" >&2
			return 1
		fi
	done
}

if [ "${FORCE:-0}" != 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ] && check_versions quiet; then
	echo "k8s binaries up to date in $bin ($want_stamp)"
	exit 0
fi

mkdir -p "$bin"
rm -f "$stamp"
minor=${k8s_version#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
	ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

build() { # output name, package
	local start=$SECONDS
	echo "building $1 ($2) ..."
	go build -trimpath -ldflags "$ldflags" -o "$bin/.$1.tmp" "$2"
	mv -f "$bin/.$1.tmp" "$bin/$1"
	echo "built $1 in $((SECONDS - start))s"
}

# One after another: each link alone needs several GiB and both cores.
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build kubectl k8s.io/kubernetes/cmd/kubectl
build etcd ./cmd/etcd

check_versions
echo "$want_stamp" >"$stamp"
echo "k8s binaries ready in $bin ($want_stamp)"
