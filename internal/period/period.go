// Package period computes calendar budget periods [start, end) in an IANA time zone, correct across DST changes.
//
// Guarantees:
//   - A period starts at its start day's first instant in the zone (normally local midnight) and ends where the
//     next starts; a boundary instant belongs to the period starting there. Both bounds are in Spec.Location.
//   - Durations are real elapsed time: a daily period lasts 23 or 25 hours on the days the clocks change.
//   - time/tzdata is embedded, so zones load in a scratch or distroless image with no /usr/share/zoneinfo.
//
// Days without a midnight: where the clocks jump over midnight (Brazil until 2019, Chile, Cuba: 00:00 becomes
// 01:00), the day starts at the jump, its first instant; time.Date would answer one on the day before. Where
// they fall back into the midnight hour (Cuba: 01:00 becomes 00:00), it starts at the first of the two
// midnights. A day a zone skipped (Samoa, 30 December 2011) starts where the next existing day does. Where the
// clocks fell back across midnight (Goose Bay, 1987: 00:01 became 23:01 the day before), minutes reading the old
// date again belong to the new day's period: periods partition time, cut at each start date's first instant.
package period

import (
	"errors"
	"fmt"
	"sync"
	"time"
	_ "time/tzdata" // zones must load in images without a zoneinfo directory
)

// Kind is the length of a budget period.
type Kind string

// The kinds of period, spelled as in the LLMCostBudget spec.
const (
	Daily   Kind = "Daily"
	Weekly  Kind = "Weekly"
	Monthly Kind = "Monthly"
)

// Spec describes a budget's recurring period. StartDay is the day a period starts on: Monthly, the day of the
// month (1-28); Weekly, 1 = Monday ... 7 = Sunday (ISO 8601); Daily, ignored.
type Spec struct {
	Kind     Kind
	StartDay int
	Location *time.Location // the zone whose calendar defines the periods
}

// Window is one period: the instants t with Start <= t < End.
type Window struct{ Start, End time.Time }

// LoadLocation loads an IANA time zone such as "Europe/Berlin" or "UTC". Unlike time.LoadLocation it refuses ""
// (which time would read as UTC) and "Local" (the machine's zone), so a budget always says which zone it means.
func LoadLocation(name string) (*time.Location, error) {
	switch name {
	case "":
		return nil, errors.New(`time zone is empty; use an IANA name such as "UTC" or "Europe/Berlin"`)
	case "Local":
		return nil, errors.New(`time zone "Local" depends on the machine; use an IANA name such as "UTC" or "Europe/Berlin"`)
	}
	if loc, ok := locations.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", name) // time's own message adds nothing the user can act on
	}
	locations.Store(name, loc)
	return loc, nil
}

// locations caches loaded zones: time.LoadLocation parses the zone's data on every call, and every sync needs
// its zone twice. A Location is immutable, so goroutines share it; only zones that exist are kept, bounding it.
var locations sync.Map // zone name → *time.Location

// StartDayRange is the StartDay k accepts, 1 to last, and that range in words; Daily has none (last 0).
func StartDayRange(k Kind) (last int, want string) {
	switch k {
	case Weekly:
		return 7, "1 (Monday) to 7 (Sunday)"
	case Monthly:
		return 28, "1 to 28" // every month has a 28th
	}
	return 0, ""
}

// Containing returns the period that contains now, given in any zone. s must be valid, as the API's validation
// makes it: a known Kind, a StartDay in StartDayRange and a Location.
func (s Spec) Containing(now time.Time) Window {
	w := s.byLocalDate(now)
	// Where the clocks fell back across midnight, now may read a date whose period has already ended; it belongs
	// to the later period (see the package doc). Each step moves to a later start date, so this ends.
	for !now.Before(w.End) {
		w = s.byLocalDate(w.End)
	}
	return w
}

// byLocalDate returns the period whose start date is the latest one on or before now's local date.
func (s Spec) byLocalDate(now time.Time) Window {
	local := now.In(s.Location)
	y, m, d := local.Date()
	// The dates may be denormalised (day 0, month 13), as in time.Date.
	between := func(m1 time.Month, d1 int, m2 time.Month, d2 int) Window {
		return Window{Start: startOfDay(y, m1, d1, s.Location), End: startOfDay(y, m2, d2, s.Location)}
	}
	switch s.Kind {
	case Daily:
		return between(m, d, m, d+1)
	case Weekly:
		isoWeekday := (int(local.Weekday())+6)%7 + 1 // Go counts from Sunday = 0
		d -= (isoWeekday - s.StartDay + 7) % 7
		return between(m, d, m, d+7)
	default: // Monthly
		if d < s.StartDay {
			m--
		}
		return between(m, s.StartDay, m+1, s.StartDay)
	}
}

// Duration is the real time the window lasts, DST changes included.
func (w Window) Duration() time.Duration { return w.End.Sub(w.Start) }

// Dates returns the local dates ("2006-01-02") in w, in order, in w.Start's zone: 1 for a Daily period, 7 for a
// Weekly one, 28 to 31 for a Monthly one (fewer only around a day the zone skipped), none if w is empty.
func (w Window) Dates() []string {
	if !w.Start.Before(w.End) {
		return nil
	}
	y, m, d := w.Start.Date()
	ly, lm, ld := w.End.Add(-time.Nanosecond).In(w.Start.Location()).Date()
	last := time.Date(ly, lm, ld, 0, 0, 0, 0, time.UTC)
	var dates []string
	for day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC); !day.After(last); day = day.AddDate(0, 0, 1) {
		dates = append(dates, day.Format(time.DateOnly))
	}
	return dates
}

// startOfDay returns the first instant whose local date in loc is y-m-d or later. time.Date may answer a
// nonexistent midnight with an instant on an earlier day, and a doubled one with the second. So walk the zone's
// offset periods around the day: within one, local time only moves forward, so the day begins there only at its
// local midnight (if inside) or at its start (if the clocks jumped to or past that day); the earliest wins.
func startOfDay(y int, m time.Month, d int, loc *time.Location) time.Time {
	midnightUTC := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	want := dateKey(midnightUTC.Date()) // normalised, like time.Date
	// UTC offsets stay within ±26 hours even in historical data, so the first instant lies within this range.
	from, to := midnightUTC.Add(-27*time.Hour), midnightUTC.Add(27*time.Hour)
	first := to.In(loc)
	for z := from.In(loc); z.Before(to); {
		start, end := z.ZoneBounds()
		_, offset := z.Zone()
		midnight := midnightUTC.Add(-time.Duration(offset) * time.Second)
		if (start.IsZero() || !midnight.Before(start)) && (end.IsZero() || midnight.Before(end)) && midnight.Before(first) {
			first = midnight.In(loc)
		}
		if !start.IsZero() && start.Before(first) && dateKey(start.In(loc).Date()) >= want {
			first = start.In(loc)
		}
		if end.IsZero() {
			break
		}
		z = end.In(loc)
	}
	return first
}

func dateKey(y int, m time.Month, d int) int { return (y*13+int(m))*32 + d }
