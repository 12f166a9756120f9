#!/usr/bin/env bash
# build.sh builds the real kube-apiserver, kube-controller-manager, etcd and a matching
# kubectl that the integration tests run, into a cache folder outside the repository, once.
#
#   LLMBUDGET_K8S_BIN  where the binaries go (default ~/.cache/llmbudget/k8s/v1.37.2)
#   FORCE=1            rebuild even when the cache looks right
#
# Each binary has its own stamp: the Go toolchain, the build command, the link flags and the
# module versions that binary is built from. A binary is reused when its stamp matches and
# it reports the expected version; otherwise only that binary is rebuilt. See README.md for
# measured times.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
k8s_version=v1.37.2
bin=${LLMBUDGET_K8S_BIN:-$HOME/.cache/llmbudget/k8s/$k8s_version}

cd "$here"
export GOWORK=off CGO_ENABLED=0
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
minor=${k8s_version#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
	ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

# want_stamp PACKAGE: what the binary built from PACKAGE depends on. Only the modules that
# PACKAGE imports count, so a new test dependency of this module rebuilds nothing.
want_stamp() {
	{
		go version
		echo "CGO_ENABLED=$CGO_ENABLED go build -trimpath -ldflags $ldflags"
		go list -deps -f '{{with .Module}}{{.Path}} {{.Version}}{{end}}' "$1" | sort -u
	} | sha256sum | cut -c1-16
}

# reports_version NAME TEXT: the binary exists and its version output contains TEXT. The
# output is read whole before it is searched: grep -q exiting early would kill the binary
# with SIGPIPE and fail the check under pipefail.
reports_version() {
	local cmd=("$bin/$1" --version) out
	[ "$1" = kubectl ] && cmd=("$bin/$1" version --client)
	[ -x "$bin/$1" ] || return 1
	out=$("${cmd[@]}" 2>/dev/null) || return 1
	grep -qF -- "$2" <<<"$out"
}

expected_version() {
	case $1 in
	kubectl) echo "Client Version: $k8s_version" ;;
	etcd) echo "etcd Version: ${etcd_version#v}" ;;
	*) echo "Kubernetes $k8s_version" ;;
	esac
}

# ensure NAME PACKAGE: reuse the cached binary when its stamp and version match, else build it.
ensure() {
	local name=$1 pkg=$2 stamp="$bin/.stamp-$1" want start=$SECONDS
	want=$(want_stamp "$pkg")
	if [ "${FORCE:-0}" != 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
		reports_version "$name" "$(expected_version "$name")"; then
		echo "$name up to date ($want)"
		return
	fi
	rm -f "$stamp"
	echo "building $name ($pkg) ..."
	go build -trimpath -ldflags "$ldflags" -o "$bin/.$name.tmp" "$pkg"
	mv -f "$bin/.$name.tmp" "$bin/$name"
	if ! reports_version "$name" "$(expected_version "$name")"; then
		echo "$bin/$name does not report \"$(expected_version "$name")\"" >&2
		return 1
	fi
	echo "$want" >"$stamp"
	echo "built $name in $((SECONDS - start))s"
}

mkdir -p "$bin"
rm -f "$bin/.stamp" # the single stamp of earlier versions of this script
# One after another: each link alone needs several GiB and both cores.
ensure kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
ensure kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
ensure kubectl k8s.io/kubernetes/cmd/kubectl
ensure etcd ./cmd/etcd
echo "k8s binaries ready in $bin (kubernetes=$k8s_version etcd=$etcd_version)"
