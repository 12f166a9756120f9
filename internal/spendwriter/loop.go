package spendwriter

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Loop is the long-running writer (`llmbudget spend --all --loop`): while its process leads, it runs the Writer
// every Interval, each run going on from what the last one kept (Kept), so that a run asks Prometheus only for
// what came after the last checkpoint and writes only the budgets whose figures changed.
type Loop struct {
	Writer    Writer
	Namespace string        // of the budgets; "" for all
	Interval  time.Duration // from one run's start to the next; a run that takes longer is followed at once
	Deadline  time.Duration // of each run; 0 is none
	Clock     clock.Clock   // nil is the real one
	Metrics   *Metrics      // nil records none
	// AfterRun, when set, is called with each run's result.
	AfterRun func(Result, error)
}

// Run runs the writer every Interval until ctx ends (the term ends), starting from nothing kept: a term never
// trusts memory of an earlier one, whose checkpoints another leader may have stored over since. It returns nil
// when ctx ends.
func (l Loop) Run(ctx context.Context) error {
	clk := l.clock()
	kept := NewKept()
	for {
		start := clk.Now()
		res, err := l.Cycle(ctx, kept)
		if l.AfterRun != nil {
			l.AfterRun(res, err)
		}
		if err != nil && ctx.Err() == nil {
			l.Writer.Log.Error("spend writer run failed", "reason", err.Error())
		}
		wait := l.Interval - clk.Since(start)
		if wait <= 0 {
			wait = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-clk.After(wait):
		}
	}
}

// Cycle is one run of the loop, going on from kept and recording into it.
func (l Loop) Cycle(ctx context.Context, kept *Kept) (Result, error) {
	clk := l.clock()
	start := clk.Now()
	run := ctx
	if l.Deadline > 0 {
		var cancel context.CancelFunc
		run, cancel = context.WithTimeout(ctx, l.Deadline)
		defer cancel()
	}
	w := l.Writer
	w.Kept = kept
	res, err := w.Run(run, l.Namespace, start)
	end := clk.Now()
	l.Metrics.observe(res, err, kept, start, end)
	if err == nil {
		l.Writer.Log.Info("spend writer run done", "written", len(res.Written), "unchanged", len(res.Unchanged),
			"failed", len(res.Failed), "seconds", end.Sub(start).Seconds())
	}
	return res, err
}

func (l Loop) clock() clock.Clock {
	if l.Clock == nil {
		return clock.RealClock{}
	}
	return l.Clock
}
