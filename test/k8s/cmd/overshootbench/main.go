// Command overshootbench measures how far a budget's true spend goes past its limit before llmbudget refuses its
// callers, against real parts: the real kube-apiserver of test/k8s (llmbudget's CRDs and admission policies
// installed), a real Prometheus scraping every 15 s, the spend writer as deployed (`llmbudget spend --all --loop`,
// two replicas with its ServiceAccount's token, RBAC and Lease, the Deployment's flags), `llmbudget serve` synced
// as Metacontroller syncs a budget (a stand-in here: on every change to the budget or its spend ConfigMap, and at
// the resyncAfterSeconds it answers; the status written back), and `llmbudget authz` behind a real Caddy
// (forward_auth, examples/gateways/Caddyfile) in front of a fake OpenAI-compatible upstream that counts each served
// request's cost into LiteLLM's spend and token counters, which Prometheus scrapes.
//
// Each burn is a budget in a namespace of its own whose client calls through Caddy at a steady rate that spends
// the whole limit in the burn's length, until refused (429), and on for a hold after. All burns run at once. For
// each it reports the overshoot (spend the upstream counted beyond the limit, USD and percent), the time from the
// true crossing (the upstream's count reaching the limit) to the first 429, the time from the projected crossing
// the status states to the first 429, and false refusals (429s while the true spend was below 95 % of the limit);
// and Prometheus' CPU seconds per writer cycle. It exits 1 naming each target missed:
//
//   - blockOn Projected: overshoot at most 0.5 % (1 hour or longer), 1 % (10 minutes), 5 % (2 minutes or shorter);
//     the first 429 at most 2 s after the projected crossing;
//   - blockOn Measured (or unset): the first 429 at most the scrape interval plus the writer's interval plus 2 s
//     after the true crossing;
//   - every burn: no false refusal, and a 429 at all.
//
// Run it from test/k8s (make bench does, with the 2- and 10-minute burns; -burns 1h for the hour):
//
//	go run ./cmd/overshootbench -bin ../../bin/llmbudget
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type options struct {
	bin, prometheus, caddy string
	burns, blockOn         string
	limitUSD               int64
	rate                   float64
	scrape, hold           time.Duration
	keep                   bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "../../bin/llmbudget", "the llmbudget binary (make build)")
	flag.StringVar(&o.prometheus, "prometheus-bin", "", "Prometheus binary (default: build-prometheus.sh's cache)")
	flag.StringVar(&o.caddy, "caddy-bin", "", "Caddy binary (default: build-caddy.sh's cache)")
	flag.StringVar(&o.burns, "burns", "2m,10m", "comma-separated burn lengths: the limit spent in each, all at once")
	flag.StringVar(&o.blockOn, "block-on", "Projected,Measured",
		"comma-separated spec.enforcement.blockOn of each burn's budgets; - leaves the field unset")
	flag.Int64Var(&o.limitUSD, "limit", 360, "each budget's limitUSD, whole dollars")
	flag.Float64Var(&o.rate, "rate", 10, "requests per second of each burn's client")
	flag.DurationVar(&o.scrape, "scrape-interval", 15*time.Second, "Prometheus' scrape interval")
	flag.DurationVar(&o.hold, "hold", 10*time.Second, "how long a client calls on after its first 429")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (logs of every component)")
	flag.Parse()
	missed, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "overshootbench:", err)
		os.Exit(1)
	}
	if len(missed) > 0 {
		fmt.Println("\ntargets missed:")
		for _, m := range missed {
			fmt.Println("  " + m)
		}
		os.Exit(1)
	}
	fmt.Println("\nevery target met")
}

// plan is the burns of o: one per length and blockOn, each in a namespace of its own.
func plan(o options) ([]*burn, error) {
	var out []*burn
	for _, l := range strings.Split(o.burns, ",") {
		length, err := time.ParseDuration(strings.TrimSpace(l))
		if err != nil || length < 10*time.Second {
			return nil, fmt.Errorf("-burns: %q is not a duration of 10s or more", l)
		}
		for _, m := range strings.Split(o.blockOn, ",") {
			m = strings.TrimSpace(m)
			mode := m
			if m == "-" {
				mode = ""
				m = "unset"
			}
			i := len(out)
			requests := int64(o.rate * length.Seconds())
			b := &burn{
				name: short(length) + " " + m, length: length, blockOn: mode,
				ns:       "burn-" + short(length) + "-" + strings.ToLower(m),
				ip:       fmt.Sprintf("127.0.1.%d", i+1),
				limitMu:  o.limitUSD * 1e6,
				costMu:   o.limitUSD * 1e6 / requests,
				interval: time.Duration(float64(time.Second) / o.rate),
			}
			b.key = "sk-" + b.ns
			out = append(out, b)
		}
	}
	return out, nil
}

// work is the directory of every component's configuration and log.
func workDir(keep bool) (string, func(), error) {
	dir, err := os.MkdirTemp("", "overshootbench-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() {
		if keep {
			fmt.Println("kept", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}, nil
}

// cacheBin is bin, or name under ~/.cache/llmbudget/<sub> where the build scripts put it.
func cacheBin(bin, sub, name string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "llmbudget", sub, name), nil
}

// since is d from start in seconds, or "-" for a zero time.
func since(start, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%.1f", t.Sub(start).Seconds())
}

// short is d as a person writes it: 2m, 1h, 90s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
