#!/usr/bin/env bash
# The quick start of docs/quickstart.md as one script: a kind cluster with Metacontroller
# v4.17.2 and llmbudget, one budget over its spend, a Job refused while the budget is
# exhausted, the limit raised, the Job admitted.
#
#   hack/quickstart-kind.sh              # needs kind, kubectl, a container runtime, Go and make
#   hack/quickstart-kind.sh --dry-run    # prints every command, and checks every manifest it would
#                                        # apply against the cluster of the current kubeconfig
#
# Both print every command they run as a line starting "+ ", waits included; a real run then
# runs it. --dry-run creates nothing: it runs no command but the applies of steps 4 to 8, which
# it sends to the API server with --dry-run=server, so that the API server's validation, RBAC
# and admission policies judge them as they would for real. Its cluster must already have what
# the earlier steps create and a server-side dry run does not keep: Metacontroller's CRDs, the
# install of step 4 and the namespace team-support (test/k8s does exactly that, then runs
# --dry-run, and checks that it prints what a real run runs).
set -euo pipefail
cd "$(dirname "$0")/.."

CLUSTER=${CLUSTER:-llmbudget}
METACONTROLLER=v4.17.2
# The spend writer's ServiceAccount: the spend-source admission policy admits the
# ServiceAccounts of llmbudget-system, and nobody else but system:masters. kind's admin (like
# most managed clusters' administrators) is in kubeadm:cluster-admins, not system:masters, so
# example spend is applied as the writer, which a cluster-admin may impersonate.
WRITER=system:serviceaccount:llmbudget-system:llmbudget-spend-writer

dry_run=false
case "${1:-}" in
--dry-run) dry_run=true ;;
"") ;;
*)
  echo "usage: $0 [--dry-run]" >&2
  exit 2
  ;;
esac

# What a run calls, checked before it creates anything: a run without kubectl would fail after step 1, with a
# cluster made. A dry run calls kubectl only.
needs=(kubectl)
"$dry_run" || needs+=(kind make go)
missing=()
for c in "${needs[@]}"; do
  command -v "$c" >/dev/null || missing+=("$c")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "$0: ${missing[*]} not found on PATH: a run needs ${needs[*]} (docs/quickstart.md)" >&2
  exit 1
fi

step() { printf '\n== %s\n' "$*"; }

# run prints a command and runs it, unless this is a dry run.
run() {
  printf '+ %s\n' "$*"
  "$dry_run" || "$@"
}

# check prints a command and runs it, even in a dry run, with --dry-run=server there: a kubectl
# apply the API server judges.
check() {
  printf '+ %s\n' "$*"
  if "$dry_run"; then
    "$@" --dry-run=server
  else
    "$@"
  fi
}

# apply prints a kubectl apply of the manifest on stdin and runs it; a dry run sends it to the
# API server with --dry-run=server instead. Extra arguments go to kubectl.
apply() {
  local manifest
  manifest=$(cat)
  printf '+ kubectl apply --server-side %s -f - <<EOF\n%s\nEOF\n' "$*" "$manifest"
  if "$dry_run"; then
    kubectl apply --server-side --dry-run=server "$@" -f - <<<"$manifest"
  else
    kubectl apply --server-side "$@" -f - <<<"$manifest"
  fi
}

# spend is this month's spend of the chatbot, as the spend writer writes it: labelled a spend
# source and stamped with when it was read.
spend() {
  cat <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: chatbot-spend
  namespace: team-support
  labels:
    llmbudget.dev/spend-source: chatbot
  annotations:
    llmbudget.dev/spend-as-of: "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
data:
  total-usd: "231.80"
EOF
}

step "1. A kind cluster"
run kind create cluster --name "$CLUSTER" --wait 120s

step "2. Metacontroller $METACONTROLLER, from its own manifests (needs the network)"
run kubectl apply -k "https://github.com/metacontroller/metacontroller/manifests/production?ref=$METACONTROLLER"
run kubectl -n metacontroller rollout status statefulset/metacontroller --timeout=180s

step "3. The llmbudget image, built without Docker and loaded into the cluster's nodes"
run make image
run kind load image-archive bin/llmbudget-image.tar --name "$CLUSTER"

step "4. llmbudget: deploy/ and the cluster's one spend writer (deploy/overlays/spend-writer)"
# The CRDs first: the same apply cannot create a kind and, before discovery knows it, use it. A
# dry run checks them with the rest of the overlay, which holds them too.
run kubectl apply --server-side -k deploy/crd/
run kubectl wait --for=condition=Established crd/llmcostbudgets.llmbudget.dev crd/clusterllmcostbudgets.llmbudget.dev
check kubectl apply --server-side -k deploy/overlays/spend-writer/
run kubectl -n llmbudget-system rollout status deployment/llmbudget --timeout=180s

step "5. A budget of 200 USD a month that refuses new Jobs and Deployments once spent"
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-support\n' | apply
apply <examples/enforcement/budget.yaml

step "6. This month's spend, 231.80 USD, written as the spend writer would"
spend | apply --as="$WRITER"

step "7. A new Job is refused"
run kubectl -n team-support wait llmb/chatbot --for=jsonpath='{.status.enforcement.blocking}'=true --timeout=120s
run kubectl -n team-support get llmb chatbot
printf '+ kubectl -n team-support create job refused --image=registry.k8s.io/pause:3.10   # refused\n'
if ! "$dry_run"; then
  if kubectl -n team-support create job refused --image=registry.k8s.io/pause:3.10; then
    echo "the Job was admitted: the budget does not block" >&2
    exit 1
  fi
fi

step "8. The limit raised to 500 USD: the block lifts"
sed 's/limitUSD: "200"/limitUSD: "500"/' examples/enforcement/budget.yaml | apply
run kubectl -n team-support wait llmb/chatbot --for=jsonpath='{.status.enforcement.blocking}'=false --timeout=120s
run kubectl -n team-support create job admitted --image=registry.k8s.io/pause:3.10

step "Done"
echo "kind delete cluster --name $CLUSTER removes it all."
