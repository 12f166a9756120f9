#!/usr/bin/env bash
# build.sh builds the real kube-apiserver, kube-controller-manager and etcd that the
# integration tests run, into a cache folder outside the repository, once.
#
#   LLMBUDGET_K8S_BIN  where the binaries go (default ~/.cache/llmbudget/k8s/v1.37.2)
#   FORCE=1            rebuild even when the cache looks right
#
# The cache is reused when its stamp matches this module's go.mod/go.sum and every binary
# reports the expected version; otherwise all three are rebuilt one after another (a cold
# build takes about 20 minutes on 2 cores, most of it kube-apiserver).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
k8s_version=v1.37.2
bin=${LLMBUDGET_K8S_BIN:-$HOME/.cache/llmbudget/k8s/$k8s_version}
stamp=$bin/.stamp

cd "$here"
export GOWORK=off CGO_ENABLED=0
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
# The stamp changes when a module version, the Go toolchain or this script changes, not
# when go.mod merely gains a test dependency.
inputs=$( (go version; go list -m all; cat "$here/build.sh") | sha256sum | cut -c1-16)
want_stamp="kubernetes=$k8s_version etcd=$etcd_version inputs=$inputs"

reports_version() { # binary, expected substring of its --version output
	[ -x "$bin/$1" ] && "$bin/$1" --version 2>/dev/null | grep -qF -- "$2"
}

if [ "${FORCE:-0}" != 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ] &&
	reports_version kube-apiserver "Kubernetes $k8s_version" &&
	reports_version kube-controller-manager "Kubernetes $k8s_version" &&
	reports_version etcd "etcd Version: ${etcd_version#v}"; then
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
build etcd ./cmd/etcd

reports_version kube-apiserver "Kubernetes $k8s_version" || { echo "kube-apiserver does not report $k8s_version" >&2; exit 1; }
reports_version kube-controller-manager "Kubernetes $k8s_version" || { echo "kube-controller-manager does not report $k8s_version" >&2; exit 1; }
reports_version etcd "etcd Version: ${etcd_version#v}" || { echo "etcd does not report $etcd_version" >&2; exit 1; }
echo "$want_stamp" >"$stamp"
echo "k8s binaries ready in $bin ($want_stamp)"
