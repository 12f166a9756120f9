package promspend

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/text"
)

// Querier answers PromQL at an instant with a vector and Prometheus' warnings: a Client, or a test's fake.
type Querier interface {
	Query(ctx context.Context, promql string, at time.Time) (model.Vector, []string, error)
}

// QueryError is a query of a plan that Prometheus did not answer.
type QueryError struct {
	Query Query
	Err   error
}

func (e *QueryError) Error() string { return "query " + e.Query.PromQL + ": " + e.Err.Error() }

func (e *QueryError) Unwrap() error { return e.Err }

// BoundedQuerier is a Querier that reads an answer only within what is left of a plan's Allowance (failing with
// ErrOverAllowance past it) and says how many bytes the answer's body held: a Client.
type BoundedQuerier interface {
	Querier
	QueryWithin(ctx context.Context, promql string, at time.Time, left Allowance) (model.Vector, []string, int64, error)
}

// Ask is AskWithin DefaultAllowance.
func (p Plan) Ask(ctx context.Context, q Querier, warn func(query Query, warning string)) ([]model.Vector, error) {
	return p.AskWithin(ctx, q, DefaultAllowance, warn)
}

// AskWithin runs the plan's queries at its instant, in order, for Figures: answers[i] answers
// p.Queries[i]. warn hears each warning Prometheus gives, with the query that drew it; the first query that fails
// stops the run with a QueryError. All the answers together hold at most a's series and, from a BoundedQuerier,
// bytes: past either the run stops with an error wrapping ErrOverAllowance that names a.
func (p Plan) AskWithin(ctx context.Context, q Querier, a Allowance,
	warn func(query Query, warning string)) ([]model.Vector, error) {
	bq, bounded := q.(BoundedQuerier)
	answers := make([]model.Vector, len(p.Queries))
	var used Allowance
	for i, query := range p.Queries {
		var vec model.Vector
		var warnings []string
		var n int64
		var err error
		if bounded {
			left := Allowance{Series: a.Series - used.Series, Body: a.Body - used.Body}
			vec, warnings, n, err = bq.QueryWithin(ctx, query.PromQL, p.now, left)
		} else {
			vec, warnings, err = q.Query(ctx, query.PromQL, p.now)
		}
		for _, w := range warnings {
			warn(query, w)
		}
		used.Series, used.Body = used.Series+len(vec), used.Body+n
		if err == nil && (used.Series > a.Series || used.Body > a.Body) {
			err = ErrOverAllowance
		}
		if errors.Is(err, ErrOverAllowance) {
			why := fmt.Sprintf("%d series and %d bytes so far", used.Series, used.Body)
			if err != ErrOverAllowance {
				why = strings.TrimPrefix(text.Abbreviate(err.Error(), Excerpt), ErrOverAllowance.Error()+": ")
			}
			return nil, fmt.Errorf("%w: %d series and %s in all (promspend.DefaultAllowance); query %d of %d "+
				"passed it (%s)", ErrOverAllowance, a.Series, bytesIn(a.Body), i+1, len(p.Queries), why)
		}
		if err != nil {
			return nil, &QueryError{Query: query, Err: err}
		}
		answers[i] = vec
	}
	return answers, nil
}

// ErrEmpty is wrapped by Figures' error for a query that found no series.
var ErrEmpty = errors.New("no series matched")

// Usage is a window's or a model's figures, in the JSON form package spend/source reads.
type Usage struct {
	CostUSD      string           `json:"costUSD"`
	InputTokens  int64            `json:"inputTokens"`
	OutputTokens int64            `json:"outputTokens"`
	Models       map[string]Usage `json:"models,omitempty"`
}

// Encode is figures as ConfigMap data: each key's Usage in JSON.
func Encode(figures map[string]Usage) map[string]string {
	data := make(map[string]string, len(figures))
	for key, u := range figures {
		js, _ := json.Marshal(u) // strings and integers: it cannot fail
		data[key] = string(js)
	}
	return data
}

// Figures turns the answers to p.Queries (answers[i] answers p.Queries[i]) into each ConfigMap key's Usage (Encode
// makes them ConfigMap data): a key per window, except finished days without any series. prices cost a token-only
// source's tokens and may otherwise be nil.
func (p Plan) Figures(answers []model.Vector, prices *Prices) (map[string]Usage, error) {
	if len(answers) != len(p.Queries) {
		return nil, fmt.Errorf("%d answers for %d queries", len(answers), len(p.Queries))
	}
	if p.source.TokensOnly() && prices == nil {
		return nil, errors.New("this source counts tokens only: a price table is required")
	}
	byModel := p.growthByModel(answers)
	empty := make([]int, len(p.Windows)) // how many of the window's measures found no series
	for w, vals := range byModel {
		for _, m := range vals {
			if len(m) == 0 {
				empty[w]++
			}
		}
	}
	// Only a finished day may find no series, and then for all its measures.
	for _, q := range p.Queries {
		w := p.Windows[q.Window]
		if len(byModel[q.Window][q.Measure]) == 0 && (w.Open || empty[q.Window] < len(byModel[q.Window])) {
			return nil, fmt.Errorf("key %q, %s: %w: %s", w.Key, q.Measure, ErrEmpty, q.PromQL)
		}
	}
	figures := make(map[string]Usage, len(p.Windows))
	for i, w := range p.Windows {
		if empty[i] > 0 {
			continue
		}
		u, err := p.window(byModel[i], prices)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", w.Key, err)
		}
		figures[w.Key] = u
	}
	return figures, nil
}

// growthByModel is byModel[window][measure][model], the growth the answers and a resumed checkpoint hold; "" is
// series without a model label. A measure a window asks for is there, empty when no series was found.
func (p Plan) growthByModel(answers []model.Vector) []map[Measure]map[string]float64 {
	byModel := make([]map[Measure]map[string]float64, len(p.Windows))
	for i, q := range p.Queries {
		if byModel[q.Window] == nil {
			byModel[q.Window] = map[Measure]map[string]float64{}
		}
		vals := byModel[q.Window][q.Measure]
		if vals == nil {
			vals = map[string]float64{}
			byModel[q.Window][q.Measure] = vals
		}
		p.add(vals, answers[i])
	}
	if p.resumed != nil && len(byModel) == 1 {
		for m, vals := range p.resumed.Growth {
			if byModel[0] == nil || byModel[0][m] == nil {
				continue // a measure the source no longer asks for
			}
			for name, v := range vals {
				byModel[0][m][name] += v
			}
		}
	}
	return byModel
}

// add adds an answer's growth to vals, by model; "" is series without a model label.
func (p Plan) add(vals map[string]float64, answer model.Vector) {
	for _, s := range answer {
		vals[string(s.Metric[model.LabelName(p.source.ModelLabel)])] += float64(s.Value)
	}
}

// window sums one window's models; the total is the exact sum of the rounded per-model figures, so they add up.
func (p Plan) window(vals map[Measure]map[string]float64, prices *Prices) (Usage, error) {
	names := map[string]bool{}
	for _, m := range vals {
		for name := range m {
			names[name] = true
		}
	}
	total := Usage{Models: map[string]Usage{}} // omitempty leaves out an empty breakdown
	var missing []string
	var sum money.Amount
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if name != "" && !api.ValidModelName(name) {
			return Usage{}, fmt.Errorf("model %q is not a valid model name", name)
		}
		in, inErr := tokens("input", vals[Input][name])
		out, outErr := tokens("output", vals[Output][name])
		var cost money.Amount
		var costErr error
		if !p.source.TokensOnly() {
			cost, costErr = dollars(vals[Cost][name])
		} else if c, ok := prices.cost(name, in, out); ok {
			cost = c
		} else {
			missing = append(missing, strconv.Quote(name))
		}
		if err := cmp.Or(inErr, outErr, costErr); err != nil {
			return Usage{}, fmt.Errorf("model %q: %w", name, err)
		}
		sum = sum.Add(cost)
		total.InputTokens += in
		total.OutputTokens += out
		if name != "" {
			total.Models[name] = Usage{CostUSD: cost.String(), InputTokens: in, OutputTokens: out}
		}
	}
	if len(missing) > 0 {
		return Usage{}, fmt.Errorf("no price for model %s and no default price", strings.Join(missing, ", "))
	}
	total.CostUSD = sum.String()
	return total, nil
}

// tokens refuses counts past 2^53, beyond which a float64 skips whole numbers.
func tokens(direction string, v float64) (int64, error) {
	if math.IsNaN(v) || v < 0 || v > 1<<53 {
		return 0, fmt.Errorf("%s tokens: %v is not a token count between 0 and 2^53", direction, v)
	}
	return int64(math.Round(v)), nil
}

func dollars(v float64) (money.Amount, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return money.Amount{}, fmt.Errorf("cost: %v is not a non-negative amount", v)
	}
	// 1e-6 USD: float64 sums of per-request costs carry noise far below it.
	return money.Parse(strconv.FormatFloat(v, 'f', 6, 64))
}
