// Package promspend turns Prometheus counters of LLM usage (LiteLLM, vLLM, OTel GenAI, custom) into spend
// ConfigMap data, in four steps, a file each: the exporters' presets (presets.go), the current period's PromQL
// (plan.go, and checkpoint.go to go on from an earlier run), asking Prometheus and turning its answers into
// figures (answers.go), and the price tables that price tokens (prices.go). The Client (client.go) asks a
// Prometheus within bounds; everything else is pure.
//
// Guarantees:
//   - The period is the one the hooks evaluate: same period code, same zone.
//   - A query measures a counter's true growth in (start, end], not increase()'s extrapolation: it sums the
//     change between evaluation steps, counting a reset or new series as growth from zero. With a step at most
//     the scrape interval every sample is seen: the sum is exact up to float64 rounding, and a series silent up
//     to an hour (failed scrapes) is not recounted.
//   - A finished ledger day is evaluated at its end with the @ modifier: its value never changes between runs.
//   - A Total plan resumed from a Checkpoint (checkpoint.go) asks only for the growth after it, in two parts around
//     a mark settle back, and its figures are those of the one query over the period, up to float64 rounding:
//     the parts end on whole steps, so each step's change is counted in exactly one. A checkpoint of another
//     period, source or step is never used, nor one whose growth no counter makes (negative, not finite, or a
//     fractional token count: Checkpoint.Validate).
//   - Only Figures rounds float64 to decimal: cost to 1e-6 USD, tokens to integers, priced cost half up to 1e-9 USD.
//   - Nothing is silently free: a model without a price is an error, as is a current-period query finding no
//     series. Only a finished ledger day with no series (past retention) is left out, keeping its earlier value.
//
// The Client asks Prometheus (or Thanos, Mimir: the same query API) for instant vectors, bounding what a
// broken or hostile server can make the spend writer hold, follow or print.
//
// Its guarantees:
//   - An answer is read up to Limits.Body bytes after decompression, so a gzip bomb is bounded too; past it the
//     query fails with an error naming the limit, without the rest being read.
//   - An answer of more than Limits.Series series, or with a label value longer than Limits.LabelValue bytes,
//     fails: the writer's queries sum by model, so a model name is the only label value an answer carries. Its
//     series are decoded one at a time, and none past the limit is.
//   - All the answers to one plan's queries (one budget's) together hold at most Allowance's series and bytes
//     (DefaultAllowance: 20,000 series, 16 MiB), so a long ledger over many queries is bounded too; past it Ask
//     fails with ErrOverAllowance, naming the cap.
//   - The answers of the plans asked at once, each within a Share of one Memory (memory.go), hold at most its bytes
//     together: a share grows only while the Memory has bytes free, and an answer past it fails with
//     ErrOverMemory rather than wait while holding memory. An answer's data is decoded where it lies in the body,
//     never copied.
//   - A spend ConfigMap of more than MaxConfigMapBytes (1 MiB, what the API server stores) is refused, by
//     CheckConfigMapSize, before it is printed or applied.
//   - A redirect is followed only to the same scheme and host (at most 10 times, as net/http does): a Prometheus
//     URL never sends the query, or credentials in it, elsewhere.
//   - An error, and a warning, quotes at most Excerpt bytes of what the server said.
package promspend
