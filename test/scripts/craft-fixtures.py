#!/usr/bin/env python3
"""Craft hook request fixtures from the real Metacontroller captures.

Each crafted request starts from a capture in test/metacontroller/wire/
and changes only what its case is about, so every fixture keeps the exact
shape Metacontroller sends. Run from the repository root; it rewrites
test/fixtures/{budget,workload}/*/*.request.json (the captures are copied
as they are). Golden responses are then written with `make fixtures`.
"""
import copy
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WIRE = os.path.join(ROOT, "test", "metacontroller", "wire")
OUT = os.path.join(ROOT, "test", "fixtures")


def load(name):
    with open(os.path.join(WIRE, name + ".request.json")) as f:
        return json.load(f)


def write(controller, hook, name, req, now=None):
    d = os.path.join(OUT, controller, hook)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".request.json"), "w") as f:
        json.dump(req, f, indent=2, sort_keys=True)
        f.write("\n")
    path = os.path.join(d, name + ".now")
    if now:
        with open(path, "w") as f:
            f.write(now + "\n")
    elif os.path.exists(path):
        os.remove(path)


def copy_capture(controller, hook, name, capture):
    """Copies a capture byte for byte."""
    d = os.path.join(OUT, controller, hook)
    os.makedirs(d, exist_ok=True)
    shutil.copyfile(os.path.join(WIRE, capture + ".request.json"), os.path.join(d, name + ".request.json"))


def spend(req, data):
    cm = req["related"]["ConfigMap.v1"]["team-ml/llm-spend"]
    cm["data"] = data
    return req


def with_spec(req, **changes):
    spec = req["parent"]["spec"]
    for k, v in changes.items():
        if v is None:
            spec.pop(k, None)
        else:
            spec[k] = v
    return req


def budget_cases():
    first = load("budget-sync-first")
    over = load("budget-sync-over-budget-with-children")
    gone = load("budget-sync-configmap-deleted")
    fin = load("budget-finalize")
    cust = load("budget-customize")

    copy_capture("budget", "customize", "capture-first-customize", "budget-customize")
    c = copy.deepcopy(cust)
    del c["parent"]["spec"]["costSource"]
    write("budget", "customize", "spec-without-cost-source", c)

    copy_capture("budget", "sync", "capture-first-sync-under-budget", "budget-sync-first")
    copy_capture("budget", "sync", "capture-over-budget-with-children", "budget-sync-over-budget-with-children")
    copy_capture("budget", "sync", "capture-configmap-deleted-open", "budget-sync-configmap-deleted")
    copy_capture("budget", "finalize", "capture-finalize-quota-gone", "budget-finalize")

    r = copy.deepcopy(fin)
    r["children"]["ResourceQuota.v1"] = copy.deepcopy(over["children"]["ResourceQuota.v1"])
    write("budget", "finalize", "finalize-quota-still-observed", r)

    r = copy.deepcopy(fin)
    r["parent"]["spec"] = {"limitUSD": "zero"}
    write("budget", "finalize", "finalize-with-invalid-spec", r)

    write("budget", "sync", "under-to-over-budget-quota-appears", spend(copy.deepcopy(first), {"total-usd": "612.00"}))
    write("budget", "sync", "warning-threshold-crossed", spend(copy.deepcopy(first), {"total-usd": "410.00"}))

    r = copy.deepcopy(gone)
    r["parent"]["spec"]["enforcement"]["failurePolicy"] = "Closed"
    write("budget", "sync", "configmap-deleted-closed-blocks", r)

    write("budget", "sync", "cost-key-missing", spend(copy.deepcopy(first), {"spend": "1"}))
    write("budget", "sync", "invalid-cost-data-comma", spend(copy.deepcopy(first), {"total-usd": "12,50"}))
    write("budget", "sync", "invalid-cost-data-exponent", spend(copy.deepcopy(first), {"total-usd": "1e3"}))
    write("budget", "sync", "invalid-spec-zero-limit", with_spec(copy.deepcopy(first), limitUSD="0"))
    write("budget", "sync", "invalid-spec-start-day-not-a-number",
          with_spec(copy.deepcopy(first), period={"type": "Monthly", "startDay": "first"}))
    write("budget", "sync", "invalid-spec-unknown-time-zone",
          with_spec(copy.deepcopy(first), period={"type": "Monthly", "timeZone": "Mars/Olympus"}))
    write("budget", "sync", "invalid-spec-block-without-resources",
          with_spec(copy.deepcopy(first), enforcement={"action": "BlockNewWorkloads"}))

    r = with_spec(copy.deepcopy(first),
                  limitUSD="25",
                  period={"type": "Daily", "timeZone": "America/New_York"},
                  tokenLimits={"total": 2000000, "output": 400000},
                  costSource={"configMapName": "llm-spend", "format": "DailyLedger", "keyPrefix": "spend-"},
                  enforcement=None)
    spend(r, {
        "spend-2026-11-28": '{"costUSD": "30.10", "inputTokens": 2500000, "outputTokens": 500000}',
        "spend-2026-11-29": '{"costUSD": "12.40", "inputTokens": 900000, "outputTokens": 120000}',
        "other-key": "ignored",
    })
    # 07:30 UTC is 02:30 in New York: still 2026-11-29 there.
    write("budget", "sync", "daily-ledger-new-york-with-tokens", r, "2026-11-29T07:30:00Z")

    r2 = copy.deepcopy(r)
    spend(r2, {"spend-2026-11-29": '{"costUSD": "3", "inputTokens": 1700000, "outputTokens": 410000}'})
    write("budget", "sync", "output-tokens-past-limit", r2, "2026-11-29T07:30:00Z")

    r3 = copy.deepcopy(r)
    spend(r3, {"spend-2026-11-29": "1", "spend-2026-13-01": "2"})
    write("budget", "sync", "ledger-key-with-bad-date", r3, "2026-11-29T07:30:00Z")

    # The fall-back day in New York is 25 hours long.
    r4 = copy.deepcopy(r)
    spend(r4, {"spend-2026-11-01": "5"})
    write("budget", "sync", "dst-fall-back-day-new-york", r4, "2026-11-01T12:00:00Z")

    r = with_spec(copy.deepcopy(first), thresholds=[{"percent": 90, "basis": "Actual"}, {"percent": 100, "basis": "Forecasted"}])
    spend(r, {"total-usd": "300"})
    # 15 of 30 days of November gone in Berlin: 300 spent forecasts 600.
    write("budget", "sync", "forecast-over-budget", r, "2026-11-15T23:00:00Z")

    r = with_spec(copy.deepcopy(first), period={"type": "Weekly", "startDay": 7, "timeZone": "Pacific/Auckland"})
    write("budget", "sync", "weekly-from-sunday-auckland", r)

    r = with_spec(copy.deepcopy(over), suspend=True)
    write("budget", "sync", "suspended-over-budget", r)

    # The budget was over in October and blocked; November has begun.
    r = copy.deepcopy(over)
    r["parent"]["status"] = {
        "observedGeneration": 1,
        "state": "OverBudget",
        "limitUSD": "500.00",
        "observedSpendUSD": "612.00",
        "percentUsed": 122,
        "period": {"start": "2026-10-01T00:00:00+02:00", "end": "2026-11-01T00:00:00+01:00"},
        "thresholds": [
            {"percent": 80, "basis": "Actual", "crossedAt": "2026-10-20T09:00:00Z"},
            {"percent": 100, "basis": "Actual", "crossedAt": "2026-10-28T09:00:00Z"},
        ],
        "enforcement": {"blocking": True, "quotaName": "llmbudget-chatbot"},
        "conditions": [
            {"type": "Blocking", "status": "True", "reason": "BlockingNewWorkloads", "message": "blocking",
             "lastTransitionTime": "2026-10-28T09:00:00Z", "observedGeneration": 1},
        ],
    }
    r["parent"]["metadata"]["creationTimestamp"] = "2026-09-15T10:00:00Z"
    spend(r, {"total-usd": "3.20"})
    write("budget", "sync", "rollover-lifts-the-block", r, "2026-11-01T00:20:00+01:00")

    # Crossed two hours ago: recorded, no longer announced.
    r = copy.deepcopy(first)
    r["parent"]["status"] = {
        "period": {"start": "2026-11-01T00:00:00+01:00", "end": "2026-12-01T00:00:00+01:00"},
        "thresholds": [{"percent": 80, "basis": "Actual", "crossedAt": "2026-11-29T05:30:00Z"}],
    }
    spend(r, {"total-usd": "450"})
    write("budget", "sync", "warning-already-announced", r)


def model_cases():
    first = load("budget-sync-first")
    breakdown = ('{"costUSD": "150.00", "inputTokens": 12000, "outputTokens": 2000, "models": {'
                 '"gpt-4o": {"costUSD": "120.00", "inputTokens": 9000, "outputTokens": 1000}, '
                 '"claude-3-5-haiku": {"costUSD": "30.00", "inputTokens": 3000, "outputTokens": 1000}}}')
    r = with_spec(copy.deepcopy(first), modelLimits=[
        {"model": "gpt-4o", "limitUSD": "100"},
        {"model": "claude-3-5-haiku", "limitUSD": "50", "tokenLimits": {"output": 5000}},
    ])
    write("budget", "sync", "model-over-while-total-under", spend(r, {"total-usd": breakdown}))

    r = with_spec(copy.deepcopy(first), modelLimits=[{"model": "o1-preview", "limitUSD": "10"}])
    write("budget", "sync", "model-absent-from-data", spend(r, {"total-usd": breakdown}))

    r = with_spec(copy.deepcopy(first), modelLimits=[{"model": "gpt-4o", "limitUSD": "100"}])
    write("budget", "sync", "model-name-not-a-valid-key-in-data",
          spend(r, {"total-usd": '{"costUSD": "1", "models": {"gpt 4o": {"costUSD": "1"}}}'}))

    r = with_spec(copy.deepcopy(first), modelLimits=[{"model": "gpt 4o", "limitUSD": "100"}])
    write("budget", "sync", "model-name-not-a-valid-key-in-spec", spend(r, {"total-usd": "1"}))


def workload_cases():
    cust = load("workload-customize")
    removed = load("workload-customize-label-removed")
    sync = load("workload-sync")
    fin = load("workload-finalize")
    copy_capture("workload", "customize", "capture-labelled", "workload-customize")
    copy_capture("workload", "customize", "capture-label-removed", "workload-customize-label-removed")
    copy_capture("workload", "sync", "capture-budget-over-with-foreign-status", "workload-sync")
    copy_capture("workload", "finalize", "capture-label-removed-decorations-left", "workload-finalize")

    r = copy.deepcopy(fin)
    r["object"]["metadata"]["labels"].pop("llmbudget.dev/state", None)
    r["object"]["metadata"].get("annotations", {}).pop("llmbudget.dev/percent-used", None)
    for k in list(r["object"]["metadata"].get("annotations", {})):
        if k.startswith("llmbudget.dev/"):
            del r["object"]["metadata"]["annotations"][k]
    write("workload", "finalize", "decorations-gone", r)

    r = copy.deepcopy(sync)
    r["related"]["LLMCostBudget.llmbudget.dev/v1alpha1"] = {}
    write("workload", "sync", "budget-not-found", r)

    r = copy.deepcopy(sync)
    del r["related"]["LLMCostBudget.llmbudget.dev/v1alpha1"]["team-ml/chatbot"]["status"]
    write("workload", "sync", "budget-not-evaluated", r)

    budget = r["related"]["LLMCostBudget.llmbudget.dev/v1alpha1"]["team-ml/chatbot"]
    r = copy.deepcopy(sync)
    b = r["related"]["LLMCostBudget.llmbudget.dev/v1alpha1"]["team-ml/chatbot"]
    b["status"] = {
        "observedGeneration": 1, "state": "OverBudget", "limitUSD": "500.00", "observedSpendUSD": "612.00",
        "remainingUSD": "0.00", "percentUsed": 122,
        "period": {"start": "2026-11-01T00:00:00+01:00", "end": "2026-12-01T00:00:00+01:00"},
        "thresholds": [{"percent": 80, "basis": "Actual", "crossedAt": "2026-11-29T07:00:00Z"},
                       {"percent": 100, "basis": "Actual", "crossedAt": "2026-11-29T07:20:00Z"}],
        "enforcement": {"blocking": True, "quotaName": "llmbudget-chatbot", "reason": "over"},
    }
    write("workload", "sync", "budget-over-announces-exceeded", r)

    r2 = copy.deepcopy(r)
    r2["related"]["LLMCostBudget.llmbudget.dev/v1alpha1"]["team-ml/chatbot"]["status"].update(
        {"state": "UnderBudget", "observedSpendUSD": "120.50", "remainingUSD": "379.50", "percentUsed": 24, "thresholds": [], "enforcement": {"blocking": False}})
    write("workload", "sync", "budget-under", r2)

    r3 = copy.deepcopy(r)
    r3["related"]["LLMCostBudget.llmbudget.dev/v1alpha1"]["team-ml/chatbot"]["status"].update(
        {"state": "Unknown", "observedSpendUSD": None, "percentUsed": None})
    write("workload", "sync", "budget-unknown", r3)


CLUSTER_NOW = "2026-12-01T08:46:00Z"  # a minute after the cluster captures


def cluster_spend(req, namespace, data, annotations=None):
    cm = req["related"]["ConfigMap.v1"][namespace + "/llm-spend"]
    cm["data"] = data
    if annotations is not None:
        cm["metadata"].setdefault("annotations", {}).update(annotations)
    return req


def cluster_cases():
    """ClusterLLMCostBudget ml-department over namespaces labelled department=ml."""
    copy_capture("clusterbudget", "customize", "capture", "clusterbudget-customize")
    write("clusterbudget", "sync", "capture-first-sync-under-budget", load("clusterbudget-sync-first"), CLUSTER_NOW)
    write("clusterbudget", "finalize", "capture-quotas-in-three-namespaces", load("clusterbudget-finalize-quotas"), CLUSTER_NOW)
    write("clusterbudget", "finalize", "capture-quotas-gone", load("clusterbudget-finalize-done"), CLUSTER_NOW)

    # Closed (the example's policy) and a namespace without its ConfigMap: Unknown, blocking everywhere.
    missing = load("clusterbudget-sync-configmap-missing")
    write("clusterbudget", "sync", "capture-configmap-missing-closed-blocks", missing, CLUSTER_NOW)
    r = copy.deepcopy(missing)
    r["parent"]["spec"]["enforcement"]["failurePolicy"] = "Open"
    write("clusterbudget", "sync", "configmap-missing-open-skips", r, CLUSTER_NOW)

    # ml-serving left the selector while the department is over budget: quotas stay
    # only in the namespaces still selected (Metacontroller deletes the third).
    left = cluster_spend(load("clusterbudget-sync-namespace-left"), "ml-research", {"2026-12-01": "19999.50"})
    write("clusterbudget", "sync", "capture-namespace-left-while-over-budget", left, CLUSTER_NOW)

    # Total sources must declare the budget's period.
    total = load("clusterbudget-sync-first")
    total["parent"]["spec"]["costSource"] = {"spendSource": "llm-spend", "format": "Total", "key": "spend-usd"}
    cluster_spend(total, "ml-research", {"spend-usd": "7000"}, {"llmbudget.dev/period-start": "2026-12-01T00:00:00Z"})
    cluster_spend(total, "ml-serving", {"spend-usd": "1200.50"}, {"llmbudget.dev/period-start": "2026-12-01T00:00:00+00:00"})
    write("clusterbudget", "sync", "total-sources-of-the-period-are-summed", total, CLUSTER_NOW)
    r = copy.deepcopy(total)
    cluster_spend(r, "ml-serving", {"spend-usd": "1200.50"}, {"llmbudget.dev/period-start": "2026-11-01T00:00:00Z"})
    write("clusterbudget", "sync", "total-source-of-another-period-is-unknown", r, CLUSTER_NOW)


if __name__ == "__main__":
    budget_cases()
    model_cases()
    workload_cases()
    cluster_cases()
    sys.exit(0)
