package deploytest_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// promQL parses PromQL as Prometheus does.
var promQL = parser.NewParser(parser.Options{})

// exprInfo is what a parsed expression selects and keeps.
type exprInfo struct {
	metrics  []string        // metric names of every vector selector
	grouping map[string]bool // labels named in any `by (...)` clause
}

// parseExpr parses expr and lists the metrics it selects; each selector must name its
// metric (a query over every metric would make "only known series" meaningless).
func parseExpr(expr string) (exprInfo, error) {
	info := exprInfo{grouping: map[string]bool{}}
	node, err := promQL.ParseExpr(expr)
	if err != nil {
		return info, err
	}
	var problems []string
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			name := n.Name
			if name == "" {
				for _, m := range n.LabelMatchers {
					if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
						name = m.Value
					}
				}
			}
			if name == "" {
				problems = append(problems, fmt.Sprintf("selector %s names no metric", n))
			}
			info.metrics = append(info.metrics, name)
		case *parser.AggregateExpr:
			if !n.Without {
				for _, l := range n.Grouping {
					info.grouping[l] = true
				}
			}
		}
		return nil
	})
	if len(problems) > 0 {
		return info, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return info, nil
}

// requireKnownSeries fails for each metric of expr that is not in known.
func requireKnownSeries(t *testing.T, where, expr string, known map[string]bool) exprInfo {
	t.Helper()
	info, err := parseExpr(expr)
	require.NoError(t, err, "%s: %s", where, expr)
	require.NotEmpty(t, info.metrics, "%s selects no series: %s", where, expr)
	for _, m := range info.metrics {
		if !known[m] {
			t.Errorf("%s uses series %q, which neither kube-state-metrics nor the llmbudget server exposes (known: %s)",
				where, m, strings.Join(sortedSet(known), ", "))
		}
	}
	return info
}

func sortedSet(s map[string]bool) []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
