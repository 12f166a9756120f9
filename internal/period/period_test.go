package period_test

import (
	"archive/zip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/period"
)

func mustLoad(t testing.TB, zone string) *time.Location {
	t.Helper()
	loc, err := period.LoadLocation(zone)
	require.NoError(t, err)
	return loc
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v
}

func TestContaining(t *testing.T) {
	tests := map[string]struct {
		kind     period.Kind
		startDay int
		zone     string
		now      string
		start    string
		end      string
		hours    float64
		dates    int
	}{
		"a daily period in UTC is the calendar day": {
			kind: period.Daily, zone: "UTC", now: "2026-05-14T13:45:00Z",
			start: "2026-05-14T00:00:00Z", end: "2026-05-15T00:00:00Z", hours: 24, dates: 1,
		},
		"a daily period ignores startDay": {
			kind: period.Daily, startDay: 99, zone: "UTC", now: "2026-05-14T13:45:00Z",
			start: "2026-05-14T00:00:00Z", end: "2026-05-15T00:00:00Z", hours: 24, dates: 1,
		},
		"the last instant of January 31 is still in January": {
			kind: period.Monthly, startDay: 1, zone: "UTC", now: "2026-01-31T23:59:59.999999999Z",
			start: "2026-01-01T00:00:00Z", end: "2026-02-01T00:00:00Z", hours: 31 * 24, dates: 31,
		},
		"midnight of February 1 starts the February period": {
			kind: period.Monthly, startDay: 1, zone: "UTC", now: "2026-02-01T00:00:00Z",
			start: "2026-02-01T00:00:00Z", end: "2026-03-01T00:00:00Z", hours: 28 * 24, dates: 28,
		},
		"startDay 28 before the 28th belongs to the period from last month's 28th": {
			kind: period.Monthly, startDay: 28, zone: "UTC", now: "2026-02-27T12:00:00Z",
			start: "2026-01-28T00:00:00Z", end: "2026-02-28T00:00:00Z", hours: 31 * 24, dates: 31,
		},
		"startDay 28 on the 28th of February starts a period to March 28": {
			kind: period.Monthly, startDay: 28, zone: "UTC", now: "2026-02-28T00:00:00Z",
			start: "2026-02-28T00:00:00Z", end: "2026-03-28T00:00:00Z", hours: 28 * 24, dates: 28,
		},
		"startDay 28 on New Year's Eve runs into next year": {
			kind: period.Monthly, startDay: 28, zone: "UTC", now: "2026-12-31T23:00:00Z",
			start: "2026-12-28T00:00:00Z", end: "2027-01-28T00:00:00Z", hours: 31 * 24, dates: 31,
		},
		"startDay 28 in early January started last year": {
			kind: period.Monthly, startDay: 28, zone: "UTC", now: "2027-01-10T00:00:00Z",
			start: "2026-12-28T00:00:00Z", end: "2027-01-28T00:00:00Z", hours: 31 * 24, dates: 31,
		},
		"startDay 15 mid-month": {
			kind: period.Monthly, startDay: 15, zone: "UTC", now: "2026-04-20T08:00:00Z",
			start: "2026-04-15T00:00:00Z", end: "2026-05-15T00:00:00Z", hours: 30 * 24, dates: 30,
		},
		"a Monday week contains the Wednesday after it": {
			kind: period.Weekly, startDay: 1, zone: "UTC", now: "2026-03-04T10:00:00Z",
			start: "2026-03-02T00:00:00Z", end: "2026-03-09T00:00:00Z", hours: 7 * 24, dates: 7,
		},
		"a Sunday week contains the Wednesday after it": {
			kind: period.Weekly, startDay: 7, zone: "UTC", now: "2026-03-04T10:00:00Z",
			start: "2026-03-01T00:00:00Z", end: "2026-03-08T00:00:00Z", hours: 7 * 24, dates: 7,
		},
		"a Monday week starts on the Monday itself": {
			kind: period.Weekly, startDay: 1, zone: "UTC", now: "2026-03-02T00:00:00Z",
			start: "2026-03-02T00:00:00Z", end: "2026-03-09T00:00:00Z", hours: 7 * 24, dates: 7,
		},
		"a Sunday week's last instant is the Saturday night before": {
			kind: period.Weekly, startDay: 7, zone: "UTC", now: "2026-03-07T23:59:59Z",
			start: "2026-03-01T00:00:00Z", end: "2026-03-08T00:00:00Z", hours: 7 * 24, dates: 7,
		},
		"a Wednesday week contains the Tuesday six days later": {
			kind: period.Weekly, startDay: 3, zone: "UTC", now: "2026-03-10T23:00:00Z",
			start: "2026-03-04T00:00:00Z", end: "2026-03-11T00:00:00Z", hours: 7 * 24, dates: 7,
		},
		"a week can span a month and a year end": {
			kind: period.Weekly, startDay: 1, zone: "UTC", now: "2027-01-01T12:00:00Z",
			start: "2026-12-28T00:00:00Z", end: "2027-01-04T00:00:00Z", hours: 7 * 24, dates: 7,
		},
		"New York's spring-forward day lasts 23 hours": {
			kind: period.Daily, zone: "America/New_York", now: "2026-03-08T12:00:00-04:00",
			start: "2026-03-08T00:00:00-05:00", end: "2026-03-09T00:00:00-04:00", hours: 23, dates: 1,
		},
		"New York's fall-back day lasts 25 hours": {
			kind: period.Daily, zone: "America/New_York", now: "2026-11-01T01:30:00-05:00",
			start: "2026-11-01T00:00:00-04:00", end: "2026-11-02T00:00:00-05:00", hours: 25, dates: 1,
		},
		"New York's day before spring-forward lasts 24 hours": {
			kind: period.Daily, zone: "America/New_York", now: "2026-03-07T23:59:59-05:00",
			start: "2026-03-07T00:00:00-05:00", end: "2026-03-08T00:00:00-05:00", hours: 24, dates: 1,
		},
		"a New York week with spring-forward lasts 167 hours": {
			kind: period.Weekly, startDay: 1, zone: "America/New_York", now: "2026-03-08T03:30:00-04:00",
			start: "2026-03-02T00:00:00-05:00", end: "2026-03-09T00:00:00-04:00", hours: 167, dates: 7,
		},
		"New York's March is one hour short": {
			kind: period.Monthly, startDay: 1, zone: "America/New_York", now: "2026-03-20T00:00:00Z",
			start: "2026-03-01T00:00:00-05:00", end: "2026-04-01T00:00:00-04:00", hours: 31*24 - 1, dates: 31,
		},
		"New York's November is one hour long": {
			kind: period.Monthly, startDay: 1, zone: "America/New_York", now: "2026-11-20T00:00:00Z",
			start: "2026-11-01T00:00:00-04:00", end: "2026-12-01T00:00:00-05:00", hours: 30*24 + 1, dates: 30,
		},
		"Auckland's fall-back day in April lasts 25 hours": {
			kind: period.Daily, zone: "Pacific/Auckland", now: "2026-04-05T02:30:00+12:00",
			start: "2026-04-05T00:00:00+13:00", end: "2026-04-06T00:00:00+12:00", hours: 25, dates: 1,
		},
		"Auckland's spring-forward day in September lasts 23 hours": {
			kind: period.Daily, zone: "Pacific/Auckland", now: "2026-09-27T12:00:00+13:00",
			start: "2026-09-27T00:00:00+12:00", end: "2026-09-28T00:00:00+13:00", hours: 23, dates: 1,
		},
		"an Auckland month starting on the 28th spans the April change": {
			kind: period.Monthly, startDay: 28, zone: "Pacific/Auckland", now: "2026-04-10T00:00:00Z",
			start: "2026-03-28T00:00:00+13:00", end: "2026-04-28T00:00:00+12:00", hours: 31*24 + 1, dates: 31,
		},
		"February 29 2028 is a whole day": {
			kind: period.Daily, zone: "UTC", now: "2028-02-29T18:00:00Z",
			start: "2028-02-29T00:00:00Z", end: "2028-03-01T00:00:00Z", hours: 24, dates: 1,
		},
		"February 2028 has 29 days": {
			kind: period.Monthly, startDay: 1, zone: "Europe/Berlin", now: "2028-02-29T23:30:00+01:00",
			start: "2028-02-01T00:00:00+01:00", end: "2028-03-01T00:00:00+01:00", hours: 29 * 24, dates: 29,
		},
		"startDay 28 across leap February 2028 has 29 days": {
			kind: period.Monthly, startDay: 28, zone: "UTC", now: "2028-03-01T00:00:00Z",
			start: "2028-02-28T00:00:00Z", end: "2028-03-28T00:00:00Z", hours: 29 * 24, dates: 29,
		},
		"a UTC instant already in April in Tokyo is in Tokyo's April": {
			kind: period.Monthly, startDay: 1, zone: "Asia/Tokyo", now: "2026-03-31T20:00:00Z",
			start: "2026-04-01T00:00:00+09:00", end: "2026-05-01T00:00:00+09:00", hours: 30 * 24, dates: 30,
		},
		"a UTC instant in April is still March in Los Angeles": {
			kind: period.Monthly, startDay: 1, zone: "America/Los_Angeles", now: "2026-04-01T03:00:00Z",
			start: "2026-03-01T00:00:00-08:00", end: "2026-04-01T00:00:00-07:00", hours: 31*24 - 1, dates: 31,
		},
		"an instant given in another zone is converted first": {
			kind: period.Daily, zone: "Europe/Berlin", now: "2026-06-30T20:30:00-04:00",
			start: "2026-07-01T00:00:00+02:00", end: "2026-07-02T00:00:00+02:00", hours: 24, dates: 1,
		},
		"a zone with a half-hour offset has midnight at its own offset": {
			kind: period.Daily, zone: "Asia/Kolkata", now: "2026-05-14T18:29:59Z",
			start: "2026-05-14T00:00:00+05:30", end: "2026-05-15T00:00:00+05:30", hours: 24, dates: 1,
		},
		"a Havana day whose midnight is skipped starts at 01:00": {
			kind: period.Daily, zone: "America/Havana", now: "2026-03-08T12:00:00-04:00",
			start: "2026-03-08T01:00:00-04:00", end: "2026-03-09T00:00:00-04:00", hours: 23, dates: 1,
		},
		"a Havana day whose midnight hour repeats starts at the first midnight": {
			kind: period.Daily, zone: "America/Havana", now: "2026-11-01T00:30:00-05:00",
			start: "2026-11-01T00:00:00-04:00", end: "2026-11-02T00:00:00-05:00", hours: 25, dates: 1,
		},
		"the Havana day before a skipped midnight ends at the jump": {
			kind: period.Daily, zone: "America/Havana", now: "2026-03-07T23:59:59-05:00",
			start: "2026-03-07T00:00:00-05:00", end: "2026-03-08T01:00:00-04:00", hours: 24, dates: 1,
		},
		"a Havana month starting on a skipped midnight starts at 01:00": {
			kind: period.Monthly, startDay: 8, zone: "America/Havana", now: "2026-03-20T00:00:00Z",
			start: "2026-03-08T01:00:00-04:00", end: "2026-04-08T00:00:00-04:00", hours: 31*24 - 1, dates: 31,
		},
		"a Santiago day whose midnight is skipped starts at 01:00": {
			kind: period.Daily, zone: "America/Santiago", now: "2026-09-06T08:00:00Z",
			start: "2026-09-06T01:00:00-03:00", end: "2026-09-07T00:00:00-03:00", hours: 23, dates: 1,
		},
		"a Sao Paulo day of 2018 whose midnight is skipped starts at 01:00": {
			kind: period.Daily, zone: "America/Sao_Paulo", now: "2018-11-04T03:00:00Z",
			start: "2018-11-04T01:00:00-02:00", end: "2018-11-05T00:00:00-02:00", hours: 23, dates: 1,
		},
		"a Samoa week from the skipped 30 December 2011 starts when the 31st began": {
			kind: period.Weekly, startDay: 5, zone: "Pacific/Apia", now: "2012-01-02T12:00:00+14:00",
			start: "2011-12-31T00:00:00+14:00", end: "2012-01-06T00:00:00+14:00", hours: 6 * 24, dates: 6,
		},
		"an instant that reads yesterday again after clocks fell back across midnight is in today's period": {
			kind: period.Daily, zone: "Antarctica/Casey", now: "2010-03-04T15:00:00Z",
			start: "2010-03-05T00:00:00+11:00", end: "2010-03-06T00:00:00+08:00", hours: 27, dates: 1,
		},
		"the day before clocks fell back across midnight ends at the first midnight": {
			kind: period.Daily, zone: "Antarctica/Casey", now: "2010-03-04T12:00:00Z",
			start: "2010-03-04T00:00:00+11:00", end: "2010-03-05T00:00:00+11:00", hours: 24, dates: 1,
		},
		"the Samoa day before the skipped day ends at its last instant": {
			kind: period.Daily, zone: "Pacific/Apia", now: "2011-12-29T23:00:00-10:00",
			start: "2011-12-29T00:00:00-10:00", end: "2011-12-31T00:00:00+14:00", hours: 24, dates: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			loc := mustLoad(t, tc.zone)
			s := period.Spec{Kind: tc.kind, StartDay: tc.startDay, Location: loc}

			w := s.Containing(mustTime(t, tc.now))

			assert.Equal(t, tc.start, w.Start.Format(time.RFC3339))
			assert.Equal(t, tc.end, w.End.Format(time.RFC3339))
			assert.Equal(t, loc, w.Start.Location(), "start is in the spec's zone")
			assert.Equal(t, loc, w.End.Location(), "end is in the spec's zone")
			assert.Equal(t, time.Duration(tc.hours*float64(time.Hour)), w.Duration())
			assert.Len(t, w.Dates(), tc.dates)
			now := mustTime(t, tc.now)
			assert.True(t, !now.Before(w.Start) && now.Before(w.End), "the window contains now")
		})
	}
}

func TestDates(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	tests := map[string]struct {
		spec period.Spec
		now  string
		want []string
	}{
		"a daily window has its one date": {
			spec: period.Spec{Kind: period.Daily, Location: berlin},
			now:  "2026-03-29T12:00:00+02:00",
			want: []string{"2026-03-29"},
		},
		"a daily window late in the evening UTC is the next local date": {
			spec: period.Spec{Kind: period.Daily, Location: berlin},
			now:  "2026-03-29T23:30:00Z",
			want: []string{"2026-03-30"},
		},
		"a Sunday week lists Sunday to Saturday": {
			spec: period.Spec{Kind: period.Weekly, StartDay: 7, Location: berlin},
			now:  "2026-03-25T12:00:00+01:00",
			want: []string{"2026-03-22", "2026-03-23", "2026-03-24", "2026-03-25", "2026-03-26", "2026-03-27", "2026-03-28"},
		},
		"a week across the year end lists both years in order": {
			spec: period.Spec{Kind: period.Weekly, StartDay: 1, Location: berlin},
			now:  "2026-12-31T12:00:00+01:00",
			want: []string{"2026-12-28", "2026-12-29", "2026-12-30", "2026-12-31", "2027-01-01", "2027-01-02", "2027-01-03"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.spec.Containing(mustTime(t, tc.now)).Dates())
		})
	}
	t.Run("a monthly window lists every day of the month in order", func(t *testing.T) {
		w := period.Spec{Kind: period.Monthly, StartDay: 1, Location: berlin}.Containing(mustTime(t, "2028-02-10T00:00:00Z"))
		dates := w.Dates()
		require.Len(t, dates, 29)
		assert.Equal(t, "2028-02-01", dates[0])
		assert.Equal(t, "2028-02-29", dates[28])
		assert.IsIncreasing(t, dates)
	})
	t.Run("an empty window has no dates", func(t *testing.T) {
		assert.Empty(t, period.Window{}.Dates())
	})
	t.Run("a window ending mid-day includes that day", func(t *testing.T) {
		w := period.Window{Start: mustTime(t, "2026-01-01T00:00:00Z"), End: mustTime(t, "2026-01-02T12:00:00Z")}
		assert.Equal(t, []string{"2026-01-01", "2026-01-02"}, w.Dates())
	})
}

func TestThePeriodContainingTheEndFollowsWithoutAGap(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	specs := map[string]period.Spec{
		"daily periods through a New York year":        {Kind: period.Daily, Location: ny},
		"Sunday weeks through a New York year":         {Kind: period.Weekly, StartDay: 7, Location: ny},
		"months from the 28th through a New York year": {Kind: period.Monthly, StartDay: 28, Location: ny},
	}
	for name, s := range specs {
		t.Run(name, func(t *testing.T) {
			w := s.Containing(mustTime(t, "2026-01-01T00:00:00Z"))
			for w.Start.Before(mustTime(t, "2027-01-01T00:00:00Z")) {
				next := s.Containing(w.End)
				require.Equal(t, w.End, next.Start, "period after %v", w)
				require.Equal(t, w, s.Containing(next.Start.Add(-time.Nanosecond)))
				require.Equal(t, next, s.Containing(next.Start))
				w = next
			}
		})
	}
}

func TestLoadLocation(t *testing.T) {
	tests := map[string]struct {
		name    string
		wantErr string
	}{
		"UTC loads":                {name: "UTC"},
		"a region/city zone loads": {name: "Europe/Berlin"},
		"a three-part zone loads":  {name: "America/Argentina/Buenos_Aires"},
		"an empty name is refused": {
			name: "", wantErr: `time zone is empty; use an IANA name such as "UTC" or "Europe/Berlin"`,
		},
		"Local is refused": {
			name:    "Local",
			wantErr: `time zone "Local" depends on the machine; use an IANA name such as "UTC" or "Europe/Berlin"`,
		},
		"an unknown zone is named":              {name: "Mars/Base", wantErr: `unknown time zone "Mars/Base"`},
		"zone names are case-sensitive":         {name: "europe/berlin", wantErr: `unknown time zone "europe/berlin"`},
		"a path outside the database fails":     {name: "../../etc/passwd", wantErr: `unknown time zone "../../etc/passwd"`},
		"surrounding whitespace is not trimmed": {name: " UTC", wantErr: `unknown time zone " UTC"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			loc, err := period.LoadLocation(tc.name)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tc.wantErr, err.Error())
				assert.Nil(t, loc)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.name, loc.String())
		})
	}
}

func TestLoadLocationLoadsAZoneOnceAndAnswersLikeTheFirstLoad(t *testing.T) {
	first := mustLoad(t, "America/New_York")
	again := mustLoad(t, "America/New_York")
	assert.Same(t, first, again, "the zone is parsed once, not on every sync")
	fresh, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	instants := []string{"1883-11-18T17:00:00Z", "2026-03-08T07:00:00Z", "2026-11-01T06:00:00Z", "2099-07-01T00:00:00Z"}
	for _, at := range instants {
		ts := mustTime(t, at)
		assert.Equal(t, ts.In(fresh).Format(time.RFC3339), ts.In(again).Format(time.RFC3339), at)
	}
	_, err = period.LoadLocation("Mars/Base")
	require.Error(t, err)
	_, err = period.LoadLocation("Mars/Base")
	require.Error(t, err, "an unknown zone is refused every time, not cached")
}

// TestPeriodsAroundEveryTransitionOfEveryZone checks the invariants of the
// package around every UTC offset change from 1970 to 2040 in every zone of
// the Go distribution's zone database: a period contains the instant it was
// computed for, starts at the first instant of its start date, and ends
// where the next one starts.
func TestPeriodsAroundEveryTransitionOfEveryZone(t *testing.T) {
	if testing.Short() {
		t.Skip("walks every zone; skipped with -short")
	}
	zones := zoneNames(t)
	from, to := mustTime(t, "1970-01-01T00:00:00Z"), mustTime(t, "2040-01-01T00:00:00Z")
	checked := 0
	for _, zone := range zones {
		loc := mustLoad(t, zone)
		specs := []period.Spec{
			{Kind: period.Daily, Location: loc},
			{Kind: period.Weekly, StartDay: 1, Location: loc},
			{Kind: period.Weekly, StartDay: 7, Location: loc},
			{Kind: period.Monthly, StartDay: 1, Location: loc},
			{Kind: period.Monthly, StartDay: 28, Location: loc},
		}
		for at := from; at.Before(to); {
			_, end := at.In(loc).ZoneBounds()
			if end.IsZero() || !end.Before(to) {
				break
			}
			for _, now := range []time.Time{end.Add(-time.Nanosecond), end, end.Add(time.Hour), end.Add(-time.Hour)} {
				for _, s := range specs {
					checkInvariants(t, zone, s, now)
					checked++
				}
			}
			at = end
		}
	}
	t.Logf("checked %d periods in %d zones", checked, len(zones))
}

func checkInvariants(t *testing.T, zone string, s period.Spec, now time.Time) {
	t.Helper()
	w := s.Containing(now)
	where := zone + " " + string(s.Kind) + " at " + now.UTC().Format(time.RFC3339Nano)
	if now.Before(w.Start) || !now.Before(w.End) {
		t.Fatalf("%s: window [%v, %v) does not contain now", where, w.Start, w.End)
	}
	before := w.Start.Add(-time.Nanosecond).In(s.Location).Format(time.DateOnly)
	if dates := w.Dates(); len(dates) == 0 || before >= dates[0] {
		t.Fatalf("%s: window starting %v is not at the first instant of its day (dates %v)", where, w.Start, dates)
	}
	if next := s.Containing(w.End); !next.Start.Equal(w.End) || next.Duration() <= 0 {
		t.Fatalf("%s: the period after [%v, %v) is [%v, %v)", where, w.Start, w.End, next.Start, next.End)
	}
	n := len(w.Dates())
	ok := map[period.Kind]bool{period.Daily: n == 1, period.Weekly: n == 7, period.Monthly: n >= 28 && n <= 31}[s.Kind]
	if !ok && !skipsADay(s.Location, w) {
		t.Fatalf("%s: window [%v, %v) has %d dates", where, w.Start, w.End, n)
	}
}

// skipsADay reports whether a clock change inside w, or at its start, jumps
// over a whole calendar day.
func skipsADay(loc *time.Location, w period.Window) bool {
	for at := w.Start.Add(-time.Nanosecond); at.Before(w.End); {
		_, end := at.In(loc).ZoneBounds()
		if end.IsZero() || end.After(w.End) {
			return false
		}
		if civil(end.In(loc)).Sub(civil(end.Add(-time.Nanosecond).In(loc))) >= 48*time.Hour {
			return true
		}
		at = end
	}
	return false
}

// civil returns t's local date as midnight UTC, for counting days.
func civil(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// zoneNames lists the zones in the Go distribution's lib/time/zoneinfo.zip,
// the same data time/tzdata embeds.
func zoneNames(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("cannot find GOROOT: %v", err)
	}
	r, err := zip.OpenReader(filepath.Join(strings.TrimSpace(string(out)), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Skipf("no zone database in GOROOT: %v", err)
	}
	defer r.Close()
	var names []string
	for _, f := range r.File {
		if !strings.HasSuffix(f.Name, "/") {
			names = append(names, f.Name)
		}
	}
	require.NotEmpty(t, names)
	return names
}
