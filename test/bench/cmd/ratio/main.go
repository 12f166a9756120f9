// Command ratio reads `go test -bench BenchmarkHook -benchmem` output and
// prints, for each body, the handler's cost against its encoding/json floor:
//
//	go test -c -o bin/bench.test ./test/bench
//	(cd test/bench && for i in 1 2 3; do ../../bin/bench.test -test.run '^$' \
//	    -test.bench . -test.benchmem; done) > bench.txt
//	go run ./test/bench/cmd/ratio bench.txt
//
// Over several rounds (`make bench` runs seven) it takes the median of each
// figure, and for the ratio the median of the rounds' ratios: within one
// round a body's handler and floor run back to back, so each round's pair
// shares the machine's load of the moment. (go test -count runs all of one
// benchmark's repetitions before the next benchmark, so it pairs worse.)
// Sync and finalize bodies carry a target: handler/floor <= 2 (<= 3 for the
// 366-day ledger, whose every value is a JSON document of its own); ratio
// exits 0 either way: machines are noisy, the table is for reading.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// The handler/floor ratios the sync and finalize hooks must stay within.
const (
	target       = 2.0
	ledgerTarget = 3.0
	ledgerBody   = "synthetic-ledger-366d"
)

// targetOf is the ratio a body must stay within; 0 for a body without one.
func targetOf(name string) float64 {
	switch {
	case !isSync(name):
		return 0
	case strings.Contains(name, ledgerBody):
		return ledgerTarget
	}
	return target
}

// figures are one benchmark's runs: ns/op, B/op, allocs/op and the request's size (req-bytes, handlers only).
type figures struct{ ns, bytes, allocs, request []float64 }

func main() {
	in := io.Reader(os.Stdin)
	if len(os.Args) > 1 {
		f, err := os.Open(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "ratio:", err)
			os.Exit(1)
		}
		defer f.Close()
		in = f
	}
	order, results, err := parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ratio:", err)
		os.Exit(1)
	}
	if len(order) == 0 {
		fmt.Fprintln(os.Stderr, "ratio: no BenchmarkHook results in the input")
		os.Exit(1)
	}
	report(os.Stdout, order, results)
}

// parse collects BenchmarkHook/<body>/{handler,floor}-N lines by body.
func parse(r io.Reader) ([]string, map[string]map[string]*figures, error) {
	var order []string
	results := map[string]map[string]*figures{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "BenchmarkHook/") {
			continue
		}
		name := strings.TrimPrefix(fields[0], "BenchmarkHook/")
		if i := strings.LastIndexByte(name, '-'); i > strings.LastIndexByte(name, '/') {
			name = name[:i] // the -GOMAXPROCS suffix
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			continue
		}
		bodyName, kind := name[:i], name[i+1:]
		if results[bodyName] == nil {
			results[bodyName] = map[string]*figures{}
			order = append(order, bodyName)
		}
		f := results[bodyName][kind]
		if f == nil {
			f = &figures{}
			results[bodyName][kind] = f
		}
		for j := 2; j+1 < len(fields); j += 2 {
			v, err := strconv.ParseFloat(fields[j], 64)
			if err != nil {
				continue
			}
			switch fields[j+1] {
			case "ns/op":
				f.ns = append(f.ns, v)
			case "B/op":
				f.bytes = append(f.bytes, v)
			case "allocs/op":
				f.allocs = append(f.allocs, v)
			case "req-bytes":
				f.request = append(f.request, v)
			}
		}
	}
	return order, results, sc.Err()
}

func report(w io.Writer, order []string, results map[string]map[string]*figures) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "body\trequest B\thandler ns/op\tfloor ns/op\tratio\thandler B/op\tfloor B/op\t"+
		"handler allocs/op\tfloor allocs/op\ttarget\t")
	missed := 0
	for _, name := range order {
		h, f := results[name]["handler"], results[name]["floor"]
		if h == nil || f == nil || len(h.ns) == 0 || len(f.ns) == 0 {
			fmt.Fprintf(tw, "%s\t(incomplete)\t\t\t\t\t\t\t\t\t\n", name)
			continue
		}
		ratio := medianRatio(h.ns, f.ns)
		verdict := "-"
		if t := targetOf(name); t > 0 {
			verdict = fmt.Sprintf("met (<= %.0f)", t)
			if ratio > t {
				verdict = fmt.Sprintf("MISSED (<= %.0f)", t)
				missed++
			}
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t%.0f\t%.0f\t%s\t\n",
			name, median(h.request), median(h.ns), median(f.ns), ratio, median(h.bytes), median(f.bytes),
			median(h.allocs), median(f.allocs), verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "\ntargets: handler/floor <= %.0f for every sync and finalize body, <= %.0f for the 366-day ledger;"+
		" missed on %d\n", target, ledgerTarget, missed)
}

// isSync reports whether a body goes to a sync or finalize hook, the hooks
// Metacontroller calls on every change and resync.
func isSync(name string) bool {
	return strings.Contains(name, "/sync/") || strings.Contains(name, "/finalize/")
}

// medianRatio is the median of h[i]/f[i] over the runs both have.
func medianRatio(h, f []float64) float64 {
	n := min(len(h), len(f))
	rs := make([]float64, 0, n)
	for i := range n {
		if f[i] > 0 {
			rs = append(rs, h[i]/f[i])
		}
	}
	return median(rs)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
