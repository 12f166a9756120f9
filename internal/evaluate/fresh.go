package evaluate

import (
	"fmt"
	"strings"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/text"
)

// freshness is how old the spend is against spec.costSource.maxAge: the SpendStale condition, and what stale
// spend announces.
type freshness struct {
	applies bool // a maxAge applies to a valid spec
	known   bool // the spend was read, so that it has an age
	stale   bool
	message string    // the condition's, and BudgetEvaluated's when stale spend counts as unknown
	until   time.Time // when fresh spend turns stale
	turned  time.Time // when stale spend turned stale: its stamp plus maxAge; zero when it has no stamp
	event   string    // the Event announcing stale spend
}

// ClockSkew is how far ahead of the clock a spend stamp may be and still be read: the writer's clock and the
// hook's may differ by a little, but a stamp further ahead was not written by a writer that read the spend then
// (a team that squats its spend ConfigMap with a stamp in 2099 must not hold its budget fresh for ever).
const ClockSkew = 5 * time.Minute

// freshnessOf compares the spend's stamp with the clock. Spend turns stale the instant it is maxAge old, so that
// a resync at that instant finds it stale. A stamp up to ClockSkew ahead of the clock is fresh until it is maxAge
// old; one further ahead is stale, dated by the other inputs (its own time has not come).
//
// The condition's and the Event's messages name the stamp, maxAge and the instant they meet, never the age
// itself: a status that changed with every sync would make Metacontroller sync forever, and an Event that did
// would be rewritten by a sync a second later.
func freshnessOf(in Input) freshness {
	cs := in.Budget.Spec.CostSource
	maxAge := cs.MaxAgeDuration()
	f := freshness{applies: in.Invalid == nil && maxAge > 0}
	if !f.applies || in.Spend.Reason != "" {
		return f
	}
	f.known = true
	st := in.Spend.Stamp
	asOf := st.AsOf.UTC().Format(time.RFC3339)
	turns := st.AsOf.Add(maxAge)
	switch {
	case st.Source == "":
		f.message = "no spend source was read, so none is stale"
		return f
	case st.AsOf.IsZero():
		f.stale = true
		f.message = fmt.Sprintf("%s %s, so the age of its spend is unknown: stale under maxAge %s",
			st.Source, st.Problem, cs.MaxAge)
		f.event = f.message
	case st.AsOf.After(in.Now.Add(ClockSkew)):
		f.stale = true
		f.message = fmt.Sprintf("%s holds spend as of %s, more than %s ahead of the clock: stale under maxAge %s",
			st.Source, asOf, strings.TrimSuffix(ClockSkew.String(), "0s"), cs.MaxAge)
		f.event = f.message
	case !in.Now.Before(turns):
		f.stale, f.turned = true, turns
		f.message = fmt.Sprintf("%s holds spend as of %s, which reached maxAge %s at %s",
			st.Source, asOf, cs.MaxAge, turns.UTC().Format(time.RFC3339))
		f.event = f.message
	default:
		f.until = turns
		f.message = fmt.Sprintf("%s holds spend as of %s, within maxAge %s until %s",
			st.Source, asOf, cs.MaxAge, turns.UTC().Format(time.RFC3339))
	}
	if f.stale {
		f.message = text.Abbreviate(f.message, maxMessage)
		if in.Budget.Spec.Enforcement.FailurePolicy == api.FailClosed {
			f.event += "; with failurePolicy Closed the spend counts as unknown"
		} else {
			f.event += "; with failurePolicy Open the budget is still evaluated on these figures"
		}
		f.event = text.Abbreviate(f.event, maxMessage)
	}
	return f
}

// unknown reports whether stale spend counts as unknown: under failurePolicy Closed it does, as unreadable spend.
func (f freshness) unknown(in Input) bool {
	return f.stale && in.Budget.Spec.Enforcement.FailurePolicy == api.FailClosed
}
