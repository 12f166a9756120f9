package promspend

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
)

// Checkpoint is a Total budget's growth, by measure and model, from its period's start up to At, as one run's
// answers found it: a later run of the same period asks Prometheus only for what came after At. Growth adds up
// across adjacent windows whose ends are whole steps (each step's change belongs to exactly one), so the period's
// figures from a checkpoint are those of one query over the whole period, up to float64 rounding.
//
// At lies Settle behind the run that made it, so that samples a remote-write pipeline delivers late are in
// Prometheus before their stretch is counted for good. A checkpoint is the writer's own record, kept where the
// budgeted cannot write: whoever could lower it could lift a block.
type Checkpoint struct {
	PeriodStart time.Time                      `json:"periodStart"`
	At          time.Time                      `json:"at"`
	Step        string                         `json:"step"`
	Source      string                         `json:"source"` // the Source's Fingerprint
	Growth      map[Measure]map[string]float64 `json:"growth"`
}

// Validate refuses a checkpoint whose growth no counter makes: a measure other than cost, input and output, a cost
// that is negative or not finite, or a token count that is not a whole number from 0 to 2^53. Resume goes on from
// no such checkpoint: a negative growth would lower the figures below those of the answers after it.
func (cp *Checkpoint) Validate() error {
	for _, m := range slices.Sorted(maps.Keys(cp.Growth)) {
		if m != Cost && m != Input && m != Output {
			return fmt.Errorf("growth[%q]: not a measure (cost, input or output)", m)
		}
		for _, name := range slices.Sorted(maps.Keys(cp.Growth[m])) {
			v := cp.Growth[m][name]
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
				return fmt.Errorf("growth[%q][%q]: %v is not a non-negative finite number", m, name, v)
			case m != Cost && (v != math.Trunc(v) || v > 1<<53):
				return fmt.Errorf("growth[%q][%q]: %v is not a whole number of tokens from 0 to 2^53", m, name, v)
			}
		}
	}
	return nil
}

// Fingerprint names what a Source counts: a checkpoint of another source, or of a source since changed, is never
// resumed.
func (s Source) Fingerprint() string {
	js, _ := json.Marshal(s) // maps of strings: it cannot fail, and keys are sorted
	sum := sha256.Sum256(js)
	return hex.EncodeToString(sum[:16])
}

// Resume is p asking Prometheus only for what came after cp, when cp is a checkpoint of p's Total period, source
// and step; else p over its whole period. Either way a Total plan's window is asked in two parts, up to a mark
// settle behind its end (rounded down to a step) and after it, so that Next can checkpoint the first. A DailyLedger
// plan, a settle of 0 or less, and a period younger than settle are returned as they are.
func (p Plan) Resume(cp *Checkpoint, settle time.Duration) Plan {
	if p.total == nil || settle <= 0 || len(p.Windows) != 1 {
		return p
	}
	w, step := p.Windows[0], p.step.Milliseconds()
	markMS := w.End.Add(-settle).UnixMilli()
	mark := time.UnixMilli(markMS - markMS%step).In(w.End.Location())
	if !mark.After(w.Start) {
		return p
	}
	from := w.Start
	p.resumed = nil
	if p.resumable(cp, mark) {
		from, p.resumed = cp.At, cp
	}
	p.mark = mark
	p.Queries = nil
	for _, part := range []struct {
		start, end time.Time
		settled    bool
	}{{from, mark, true}, {mark, w.End, false}} {
		if part.end.After(part.start) {
			pw := Window{Key: w.Key, Start: part.start, End: part.end, Open: true}
			p.Queries = p.asking(p.Queries, 0, pw, part.settled)
		}
	}
	return p
}

// resumable reports whether cp can stand for the growth of p's Total window up to its At, at or before mark.
func (p Plan) resumable(cp *Checkpoint, mark time.Time) bool {
	return cp != nil && cp.Growth != nil && cp.PeriodStart.Equal(p.total.Start) && cp.Step == p.step.String() &&
		cp.Source == p.source.Fingerprint() && !cp.At.Before(p.total.Start) && !cp.At.After(mark) &&
		cp.At.UnixMilli()%p.step.Milliseconds() == 0 && cp.Validate() == nil
}

// Resumed is the checkpoint the plan goes on from, or nil.
func (p Plan) Resumed() *Checkpoint { return p.resumed }

// Next is the checkpoint of a resumed plan's answers (answers[i] answers p.Queries[i]): the growth up to its mark,
// for the next run of the period. It is nil for a plan Resume left as it was, and for answers whose growth Validate
// refuses (a negative or fractional token count, which a broken Prometheus may answer): Resume would not use it.
func (p Plan) Next(answers []model.Vector) *Checkpoint {
	if p.mark.IsZero() || len(answers) != len(p.Queries) {
		return nil
	}
	growth := map[Measure]map[string]float64{}
	if p.resumed != nil {
		for m, vals := range p.resumed.Growth {
			growth[m] = maps.Clone(vals)
		}
	}
	for i, q := range p.Queries {
		if !q.Settled {
			continue
		}
		if growth[q.Measure] == nil {
			growth[q.Measure] = map[string]float64{}
		}
		p.add(growth[q.Measure], answers[i])
	}
	cp := &Checkpoint{PeriodStart: p.total.Start, At: p.mark, Step: p.step.String(),
		Source: p.source.Fingerprint(), Growth: growth}
	if cp.Validate() != nil {
		return nil
	}
	return cp
}
