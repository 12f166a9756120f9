package evaluate

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

var (
	at       = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	november = period.Window{
		Start: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	}
)

func ptr[T any](v T) *T { return &v }

func amount(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

func TestVerdict(t *testing.T) {
	cases := map[string]struct {
		in   Input
		want verdict
	}{
		"an invalid spec wins over any spend": {
			Input{Invalid: errors.New("spec.limitUSD: bad"), Spend: spend.Reading{Reason: api.ReasonCostKeyMissing}},
			verdict{api.ReasonInvalidSpec, "spec.limitUSD: bad"},
		},
		"unknown spend carries its reason": {
			Input{Spend: spend.Reading{Reason: api.ReasonCostKeyMissing, Message: "no key"}},
			verdict{api.ReasonCostKeyMissing, "no key"},
		},
		"read spend is evaluated": {Input{Spend: spend.Reading{Message: "read"}}, verdict{api.ReasonEvaluated, "read"}},
		"stale spend is evaluated under failurePolicy Open": {
			staleInput(api.FailOpen), verdict{api.ReasonEvaluated, "read"},
		},
		"stale spend is unknown under failurePolicy Closed": {
			staleInput(api.FailClosed), verdict{api.ReasonSpendStale, "ConfigMap team-ml/llm-spend holds spend as of " +
				"2026-11-20T11:00:00Z, which reached maxAge 15m at 2026-11-20T11:15:00Z"},
		},
		"unreadable spend keeps its reason, however old": {
			func() Input { in := staleInput(api.FailClosed); in.Spend.Reason = api.ReasonInvalidCostData; return in }(),
			verdict{api.ReasonInvalidCostData, "read"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, verdictOf(tc.in, freshnessOf(tc.in))) })
	}
}

// staleInput has spend stamped an hour before at, under a maxAge of 15 minutes.
func staleInput(policy api.FailurePolicy) Input {
	in := Input{Now: at, Spend: spend.Reading{Message: "read", Stamp: spend.Stamp{
		Source: "ConfigMap team-ml/llm-spend", AsOf: at.Add(-time.Hour),
	}}}
	in.Budget.Spec.CostSource.MaxAge = "15m"
	in.Budget.Spec.Enforcement.FailurePolicy = policy
	return in
}

func TestFreshness(t *testing.T) {
	stamped := func(asOf time.Time) spend.Reading {
		return spend.Reading{Message: "read", Stamp: spend.Stamp{Source: "ConfigMap team-ml/llm-spend", AsOf: asOf}}
	}
	cases := map[string]struct {
		maxAge  string
		invalid error
		spend   spend.Reading
		want    freshness
	}{
		"no maxAge, no check": {spend: stamped(at.Add(-time.Hour)), want: freshness{}},
		"an invalid spec has no maxAge to check": {
			maxAge: "15m", invalid: errors.New("bad"), spend: stamped(at), want: freshness{},
		},
		"unread spend has no age": {
			maxAge: "15m", spend: spend.Reading{Reason: api.ReasonCostSourceMissing}, want: freshness{applies: true},
		},
		"spend a second short of maxAge is fresh until it reaches it": {
			maxAge: "15m", spend: stamped(at.Add(-15*time.Minute + time.Second)), want: freshness{
				applies: true, known: true, until: at.Add(time.Second),
				message: "ConfigMap team-ml/llm-spend holds spend as of 2026-11-20T11:45:01Z, within maxAge 15m " +
					"until 2026-11-20T12:00:01Z",
			},
		},
		"spend stamped within the skew ahead of the clock is fresh until it is maxAge old": {
			maxAge: "1h", spend: stamped(at.Add(4 * time.Minute)), want: freshness{
				applies: true, known: true, until: at.Add(64 * time.Minute),
				message: "ConfigMap team-ml/llm-spend holds spend as of 2026-11-20T12:04:00Z, within maxAge 1h " +
					"until 2026-11-20T13:04:00Z",
			},
		},
		"spend stamped past the skew ahead of the clock is stale, with no instant it turned": {
			maxAge: "1h", spend: stamped(at.Add(10 * time.Minute)), want: freshness{
				applies: true, known: true, stale: true,
				message: "ConfigMap team-ml/llm-spend holds spend as of 2026-11-20T12:10:00Z, more than 5m ahead of " +
					"the clock: stale under maxAge 1h",
				event: "ConfigMap team-ml/llm-spend holds spend as of 2026-11-20T12:10:00Z, more than 5m ahead of " +
					"the clock: stale under maxAge 1h; with failurePolicy Open the budget is still evaluated on these figures",
			},
		},
		"spend exactly maxAge old is stale": {
			maxAge: "15m", spend: stamped(at.Add(-15 * time.Minute)), want: freshness{
				applies: true, known: true, stale: true, turned: at,
				message: "ConfigMap team-ml/llm-spend holds spend as of 2026-11-20T11:45:00Z, which reached maxAge 15m " +
					"at 2026-11-20T12:00:00Z",
				event: "ConfigMap team-ml/llm-spend holds spend as of 2026-11-20T11:45:00Z, which reached maxAge 15m " +
					"at 2026-11-20T12:00:00Z; with failurePolicy Open the budget is still evaluated on these figures",
			},
		},
		"spend without a stamp is stale": {
			maxAge: "15m", spend: spend.Reading{Message: "read", Stamp: source.StampOf("ConfigMap team-ml/llm-spend", nil)},
			want: freshness{
				applies: true, known: true, stale: true,
				message: "ConfigMap team-ml/llm-spend has no llmbudget.dev/spend-as-of annotation, so the age of its " +
					"spend is unknown: stale under maxAge 15m",
				event: "ConfigMap team-ml/llm-spend has no llmbudget.dev/spend-as-of annotation, so the age of its " +
					"spend is unknown: stale under maxAge 15m; with failurePolicy Open the budget is still evaluated " +
					"on these figures",
			},
		},
		"no source at all is not stale": {
			maxAge: "15m", spend: spend.Reading{Message: "read"},
			want: freshness{applies: true, known: true, message: "no spend source was read, so none is stale"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := Input{Now: at, Invalid: tc.invalid, Spend: tc.spend}
			in.Budget.Spec.CostSource.MaxAge = tc.maxAge
			in.Budget.Spec.Enforcement.FailurePolicy = api.FailOpen
			assert.Equal(t, tc.want, freshnessOf(in))
		})
	}
}

func TestPeriodOf(t *testing.T) {
	oct := &api.PeriodStatus{Start: "2026-10-01T00:00:00Z", End: "2026-11-01T00:00:00Z"}
	nov := &api.PeriodStatus{Start: "2026-11-01T00:00:00Z", End: "2026-12-01T00:00:00Z"}
	crossed := []api.ThresholdStatus{{Percent: 80, Basis: api.Actual, CrossedAt: ptr(metav1.NewTime(at))}}
	cases := map[string]struct {
		in      Input
		prev    api.Status
		history []api.HistoryEntry
		same    bool
		carried []api.ThresholdStatus
	}{
		"a first sync starts afresh": {in: Input{Window: november}},
		"the same period carries its crossings": {
			in: Input{Window: november}, prev: api.Status{Period: nov, Thresholds: crossed}, same: true, carried: crossed,
		},
		"a finished period goes to history": {
			in: Input{Window: november}, prev: api.Status{Period: oct, ObservedSpendUSD: "9.00", State: api.Warning},
			history: []api.HistoryEntry{{Start: oct.Start, End: oct.End, SpentUSD: "9.00", State: api.Warning}},
		},
		"a redefined period is not history": {
			in: Input{Window: november}, prev: api.Status{Period: &api.PeriodStatus{Start: oct.Start, End: nov.End}},
		},
		"a foreign period is ignored": {
			in: Input{Window: november}, prev: api.Status{Period: &api.PeriodStatus{Start: "garbage"}},
		},
		"an invalid spec keeps what the previous status had": {
			in:   Input{Invalid: errors.New("bad")},
			prev: api.Status{Period: oct, Thresholds: crossed}, carried: crossed,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := periodOf(tc.in, tc.prev)
			assert.Equal(t, tc.history, p.history)
			assert.Equal(t, tc.same, p.same)
			assert.Equal(t, tc.carried, p.carried)
			if tc.in.Invalid != nil {
				assert.Equal(t, tc.prev.Period, p.status)
			} else {
				assert.Equal(t, nov, p.status)
			}
		})
	}
}

func TestGauge(t *testing.T) {
	usd := func(s string) *money.Amount { a := amount(s); return &a }
	cases := map[string]struct {
		usd     *money.Amount
		tokens  *api.TokenLimits
		u       spend.Usage
		state   api.State
		percent int64
		what    string
	}{
		"spend under its limit": {
			usd: usd("100"), u: spend.Usage{CostUSD: amount("10")}, state: api.UnderBudget, percent: 10,
			what: "spend",
		},
		"spend at the warning threshold": {
			usd: usd("100"), u: spend.Usage{CostUSD: amount("80")}, state: api.Warning, percent: 80,
			what: "spend",
		},
		"tokens drive the state when they are used most": {
			usd: usd("100"), tokens: &api.TokenLimits{Output: ptr[int64](100)},
			u:     spend.Usage{CostUSD: amount("10"), OutputTokens: 150},
			state: api.OverBudget, percent: 150, what: "output tokens",
		},
		"a zero token limit is exhausted by nothing at all": {
			tokens: &api.TokenLimits{Total: ptr[int64](0)}, state: api.OverBudget, percent: 1<<63 - 1,
			what: "total tokens",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gauge(80, tc.usd, tc.tokens, tc.u)
			assert.Equal(t, tc.state, g.State)
			assert.Equal(t, tc.what, g.worst.what)
			assert.Equal(t, tc.percent, g.worst.percent)
		})
	}
}

func TestCrossings(t *testing.T) {
	earlier := ptr(metav1.NewTime(at.Add(-time.Hour)))
	thresholds := []api.Threshold{{Percent: 80, Basis: api.Actual}, {Percent: 100, Basis: api.Actual}}
	cases := map[string]struct {
		carried []api.ThresholdStatus
		percent int32 // reached up to
		want    []*metav1.Time
	}{
		"nothing reached, nothing crossed": {want: []*metav1.Time{nil, nil}},
		"a threshold reached now is crossed now": {
			percent: 80, want: []*metav1.Time{metaTime(at), nil},
		},
		"a crossing recorded earlier keeps its time": {
			carried: []api.ThresholdStatus{{Percent: 80, Basis: api.Actual, CrossedAt: earlier}},
			percent: 100, want: []*metav1.Time{earlier, metaTime(at)},
		},
		"a recorded crossing stays when spend falls back": {
			carried: []api.ThresholdStatus{{Percent: 80, Basis: api.Actual, CrossedAt: earlier}},
			want:    []*metav1.Time{earlier, nil},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := crossings(thresholds, tc.carried, func(th api.Threshold) bool { return th.Percent <= tc.percent },
				func(api.Threshold) time.Time { return at })
			require.Len(t, got, len(tc.want))
			for i, w := range tc.want {
				assert.Equal(t, w, got[i].CrossedAt, "threshold %d", got[i].Percent)
			}
		})
	}
}

func TestEnforceDecides(t *testing.T) {
	block := api.Enforcement{Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"}, Gate: api.GateQuota,
		Scope: api.ScopeNamespace, FailurePolicy: api.FailOpen}
	in := func(mut func(*api.Spec)) Input {
		spec := api.Spec{Enforcement: block, Period: api.Period{Type: api.Monthly}}
		if mut != nil {
			mut(&spec)
		}
		md := api.ObjectMeta{Name: "chatbot", Namespace: "team-ml"}
		return Input{Budget: api.LLMCostBudget{Metadata: md, Spec: spec}, Subject: Subject{Quota: "q"}}
	}
	p := periodView{status: &api.PeriodStatus{Start: "s", End: "e"}}
	cases := map[string]struct {
		in     Input
		v      verdict
		state  api.State
		blocks bool
	}{
		"over budget blocks": {in: in(nil), v: verdict{reason: api.ReasonEvaluated}, state: api.OverBudget, blocks: true},
		"a warning admits":   {in: in(nil), v: verdict{reason: api.ReasonEvaluated}, state: api.Warning},
		"unknown spend with Open admits": {
			in: in(nil), v: verdict{reason: api.ReasonCostSourceMissing}, state: api.Unknown,
		},
		"unknown spend with Closed blocks": {
			in: in(func(s *api.Spec) { s.Enforcement.FailurePolicy = api.FailClosed }),
			v:  verdict{reason: api.ReasonCostSourceMissing}, state: api.Unknown, blocks: true,
		},
		"an invalid spec never blocks": {
			in: in(func(s *api.Spec) { s.Enforcement.FailurePolicy = api.FailClosed }),
			v:  verdict{reason: api.ReasonInvalidSpec}, state: api.Unknown,
		},
		"suspended never blocks": {
			in: in(func(s *api.Spec) { s.Suspend = true }), v: verdict{reason: api.ReasonEvaluated}, state: api.OverBudget,
		},
		"action None never blocks": {
			in: in(func(s *api.Spec) { s.Enforcement.Action = api.ActionNone }), v: verdict{reason: api.ReasonEvaluated},
			state: api.OverBudget,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := measurement{state: tc.state, driver: use{what: "spend"}}
			enf, quota := enforce(tc.in, tc.v, m, projection{}, p, nil, nil)
			assert.Equal(t, tc.blocks, enf.Blocking)
			assert.Equal(t, tc.blocks, quota != nil)
			if quota != nil {
				assert.Equal(t, []string{"team-ml"}, quota.Namespaces, "a team budget closes its own namespace")
			}
		})
	}
}

func TestAClusterBudgetClosesTheNamespacesItSelects(t *testing.T) {
	in := Input{
		Budget: api.LLMCostBudget{Spec: api.Spec{Enforcement: api.Enforcement{
			Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"}, Gate: api.GateBoth,
		}}},
		Spend: spend.Reading{Namespaces: &spend.Namespaces{Selected: []string{"a", "b"}}},
	}
	p := periodView{status: &api.PeriodStatus{Start: "s", End: "e"}}
	over := measurement{state: api.OverBudget}
	enf, quota := enforce(in, verdict{reason: api.ReasonEvaluated}, over, projection{}, p, nil, nil)
	require.NotNil(t, quota)
	assert.Equal(t, []string{"a", "b"}, quota.Namespaces)
	assert.Equal(t, []string{"a", "b"}, enf.Namespaces)
}

func TestAWarnModeBudgetWouldRefuseThroughThePolicyAndKeepsNoQuota(t *testing.T) {
	in := Input{
		Budget: api.LLMCostBudget{Spec: api.Spec{Enforcement: api.Enforcement{
			Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"}, Gate: api.GateBoth, Mode: api.ModeWarn,
		}}},
		Subject: Subject{Named: "LLMCostBudget chatbot", Where: "namespace team-ml", Policy: "llmbudget-budgets"},
	}
	p := periodView{status: &api.PeriodStatus{Start: "s", End: "e"}}
	over := measurement{state: api.OverBudget}
	enf, quota := enforce(in, verdict{reason: api.ReasonEvaluated}, over, projection{}, p, nil, nil)
	assert.Nil(t, quota, "a quota cannot warn")
	assert.True(t, enf.Blocking)
	assert.Equal(t, api.ModeWarn, enf.Mode)
	assert.Equal(t, []api.Gate{api.GatePolicy}, enf.Gates)
	assert.Empty(t, enf.QuotaName)
	assert.Contains(t, enf.Reason, "it would refuse new jobs.batch in namespace team-ml; enforcement.mode is Warn, "+
		"so ValidatingAdmissionPolicy llmbudget-budgets-warn admits them with a warning")
}

func TestSinceKeepsATransitionWhileTheStatusHolds(t *testing.T) {
	earlier := metav1.NewTime(at.Add(-time.Hour))
	prev := []metav1.Condition{{Type: api.ConditionBlocking, Status: metav1.ConditionTrue, LastTransitionTime: earlier}}
	assert.Equal(t, earlier.Time, since(prev, api.ConditionBlocking, metav1.ConditionTrue, at))
	assert.Equal(t, at, since(prev, api.ConditionBlocking, metav1.ConditionFalse, at))
	assert.Equal(t, at, since(nil, api.ConditionBlocking, metav1.ConditionTrue, at))
}

func TestAnnounce(t *testing.T) {
	recorded := []api.AnnouncementStatus{
		{Slug: "blocking", Message: "first", At: metav1.NewTime(at.Add(-10 * time.Minute))},
		{Slug: "old", At: metav1.NewTime(at.Add(-AnnounceFor))},
	}
	occurring := []Announcement{
		{Slug: "blocking", Message: "second", At: at.Add(-10 * time.Minute)},
		{Slug: "a-new-one", At: at},
	}
	cases := map[string]struct {
		occurring []Announcement
		want      []string
	}{
		"the first record of an occurrence wins; expired ones go; new ones join, sorted": {
			occurring: occurring, want: []string{"a-new-one", "blocking first"},
		},
		// A suspended budget's Evaluate has nothing occurring.
		"with nothing occurring only what was recorded stays": {want: []string{"blocking first"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			anns, _, left := announce(api.Status{Announcements: recorded}, tc.occurring, nil, at)
			assert.Zero(t, left)
			for _, a := range anns {
				got = append(got, a.Slug+map[bool]string{true: " " + a.Message}[a.Message != ""])
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// After an outage of AnnounceFor or more, what a sync finds new is dated before its window: it is announced late,
// once, and its record keeps the Event for AnnounceFor from its creation.
func TestAnnounceLate(t *testing.T) {
	outage := at.Add(-2 * time.Hour) // the last evaluation before the outage, where the inputs place the crossing
	late := Announcement{Slug: "threshold-100-actual", At: outage}
	record := api.AnnouncementStatus{Slug: late.Slug, At: metav1.NewTime(outage)}
	id := Occurrence{late.Slug, outage.Unix()}
	cases := map[string]struct {
		prev      api.Status
		occurring []Announcement
		created   map[Occurrence]time.Time
		until     time.Time // zero: not announced
	}{
		"a crossing first found after the outage is announced, though dated before its window": {
			prev: api.Status{LastEvaluatedTime: metaTime(outage)}, occurring: []Announcement{withFresh(late)},
			until: at.Add(LateGrace),
		},
		"one found before, whose window is over, is not announced again": {
			prev: api.Status{LastEvaluatedTime: metaTime(at.Add(-time.Minute))}, occurring: []Announcement{late},
		},
		"its record keeps it for AnnounceFor from when the API server created its Event": {
			prev:    recorded(at.Add(-30*time.Minute), record),
			created: map[Occurrence]time.Time{id: at.Add(-30 * time.Minute)}, occurring: []Announcement{late},
			until: at.Add(-30 * time.Minute).Add(AnnounceFor),
		},
		"and then lets it go": {
			prev:    recorded(at.Add(-10*time.Minute), record),
			created: map[Occurrence]time.Time{id: at.Add(-AnnounceFor)}, occurring: []Announcement{late},
		},
		"until a child shows it, its record keeps it LateGrace after the evaluation that recorded it": {
			prev:      recorded(at.Add(-time.Minute), record),
			occurring: []Announcement{late}, until: at.Add(-time.Minute).Add(LateGrace),
		},
		"a record announced in its window goes when it ends, however late its Event was created": {
			prev:    recorded(outage.Add(50*time.Minute), record),
			created: map[Occurrence]time.Time{id: outage.Add(10 * time.Minute)}, occurring: []Announcement{late},
		},
		"an Event that expired unseen is not created again": {
			prev:      recorded(at.Add(-LateGrace), record),
			occurring: []Announcement{late},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			anns, until, _ := announce(tc.prev, tc.occurring, tc.created, at)
			if tc.until.IsZero() {
				assert.Empty(t, anns)
				return
			}
			require.Len(t, anns, 1)
			assert.Equal(t, outage, anns[0].At, "dated by the inputs, never the clock")
			assert.Equal(t, []time.Time{tc.until}, until)
		})
	}
}

// recorded is a status evaluated at evaluated that records r.
func recorded(evaluated time.Time, r api.AnnouncementStatus) api.Status {
	return api.Status{LastEvaluatedTime: metaTime(evaluated), Announcements: []api.AnnouncementStatus{r}}
}

func withFresh(a Announcement) Announcement {
	a.fresh = true
	return a
}

func TestStampMovesOnlyWithTheStatusOrOnceItIsRestampOld(t *testing.T) {
	before := metaTime(at.Add(-Restamp + time.Second))
	prev := api.Status{State: api.Warning, LastEvaluatedTime: before}
	assert.Equal(t, before, stamp(api.Status{State: api.Warning}, prev, at), "unchanged")
	assert.Equal(t, metaTime(at), stamp(api.Status{State: api.OverBudget}, prev, at), "changed")
	prev.LastEvaluatedTime = metaTime(at.Add(-Restamp))
	assert.Equal(t, metaTime(at), stamp(api.Status{State: api.Warning}, prev, at), "unchanged, but Restamp old")
	assert.Equal(t, metaTime(at), stamp(api.Status{State: api.Warning}, api.Status{State: api.Warning}, at),
		"never stamped before")
}

func TestForecast(t *testing.T) {
	cases := map[string]struct {
		now  time.Time
		want string // empty: none yet
	}{
		"before a tenth of the period, none":  {now: november.Start.Add(70 * time.Hour)},
		"half way, twice the spend":           {now: november.Start.Add(15 * 24 * time.Hour), want: "200.00"},
		"within an hour, the same as its top": {now: november.Start.Add(15*24*time.Hour + 59*time.Minute), want: "200.00"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, ok := forecast(amount("100"), november, tc.now)
			assert.Equal(t, tc.want != "", ok)
			if ok {
				assert.Equal(t, tc.want, f.String())
			}
		})
	}
}

// A status is the caller's to write: one holding 30,000 announcements, each twice, must not make 30,000 Events.
// The newest MaxAnnouncements stay, and BudgetEvaluated names the cap.
func TestAStatusFullOfAnnouncementsIsCutToTheNewestAndSaysSo(t *testing.T) {
	const recorded = 30000
	var prev []api.AnnouncementStatus
	for i := range recorded {
		prev = append(prev, api.AnnouncementStatus{
			Slug: fmt.Sprintf("crafted-%d", i), At: metav1.NewTime(at.Add(-time.Duration(i) * 100 * time.Millisecond)),
		})
		prev = append(prev, prev[len(prev)-1]) // each twice
	}
	anns, _, left := announce(api.Status{Announcements: prev}, []Announcement{{Slug: "new", At: at}}, nil, at)
	require.Len(t, anns, MaxAnnouncements)
	assert.Equal(t, recorded+1-MaxAnnouncements, left)
	assert.True(t, slices.ContainsFunc(anns, func(a Announcement) bool { return a.Slug == "new" }), "the newest stay")
	assert.False(t, slices.ContainsFunc(anns, func(a Announcement) bool { return a.Slug == "crafted-29999" }))

	b := api.LLMCostBudget{Status: &api.Status{Announcements: prev}}
	r := Evaluate(Input{Budget: b, Invalid: errors.New("spec.limitUSD: Required value"), Now: at})
	assert.Len(t, r.Status.Announcements, MaxAnnouncements)
	c := meta.FindStatusCondition(r.Status.Conditions, api.ConditionBudgetEvaluated)
	require.NotNil(t, c)
	assert.Contains(t, c.Message, fmt.Sprintf("announcements left out: status.announcements keeps at most %d",
		MaxAnnouncements))
}
