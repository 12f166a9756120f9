package promspend

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// Asker asks a plan's queries within its caller's bounds (Plan.AskWithin), returning the answers and a release
// for what holding them costs the caller (a share of memory, say); release is never nil.
type Asker func(ctx context.Context, p Plan) (answers []model.Vector, release func(), err error)

// Spend is one budget's spend at a plan's instant: what its spend ConfigMap holds, and what the next run goes on
// from.
type Spend struct {
	Figures     map[string]Usage  // each key's figures (Encode makes them ConfigMap data)
	Annotations map[string]string // the plan's Annotations, and the burn rate while the spend grows
	Next        *Checkpoint       // the checkpoint of a resumed plan's answers (Plan.Next)
	// RateErr is why the burn rate could not be computed: the figures stand without it, and the budget then
	// blocks on measured spend only.
	RateErr error
}

// Compute is the one computation of a budget's spend, for `llmbudget spend` and the spend writer alike: the
// plan's figures from ask's answers, priced by prices for a token-only source, and, with a rateWindow, the burn
// rate over it (RatePlan), for the models the budget limits in USD. The answers to the figures are released before
// the rate's are asked for, so that no caller holds two shares at once.
func Compute(ctx context.Context, p Plan, ask Asker, prices *Prices, rateWindow time.Duration,
	models []string) (Spend, error) {
	answers, release, err := ask(ctx, p)
	defer release()
	if err != nil {
		return Spend{}, err
	}
	figures, err := p.Figures(answers, prices)
	if err != nil {
		return Spend{}, err
	}
	s := Spend{Figures: figures, Annotations: p.Annotations(), Next: p.Next(answers)}
	release()
	if rp, ok := p.RatePlan(rateWindow); ok {
		s.RateErr = rate(ctx, rp, ask, prices, models, s.Annotations)
	}
	return s, nil
}

// rate adds the burn rate to annotations (api.AnnotationBurnRate) when it is not zero: a budget that burns
// nothing has nothing to project, and its ConfigMap then changes only with its figures. The rate's sample time
// moves with every scrape, so a zero rate written each run would rewrite every ConfigMap each run.
func rate(ctx context.Context, rp Plan, ask Asker, prices *Prices, models []string,
	annotations map[string]string) error {
	answers, release, err := ask(ctx, rp)
	defer release()
	if err != nil {
		return fmt.Errorf("burn rate: %w", err)
	}
	br, err := rp.BurnRate(answers, prices, models)
	if err != nil || br == nil || !br.Burning() {
		return err
	}
	js, err := json.Marshal(br)
	if err != nil {
		return fmt.Errorf("burn rate: %w", err)
	}
	annotations[api.AnnotationBurnRate] = string(js)
	return nil
}

// USDModels are the models spec limits in USD: those whose burn rate a Spend states.
func USDModels(spec api.Spec) []string {
	var models []string
	for _, ml := range spec.ModelLimits {
		if ml.LimitUSD != nil {
			models = append(models, ml.Model)
		}
	}
	return models
}
