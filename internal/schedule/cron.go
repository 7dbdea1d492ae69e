package schedule

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/fault"
)

// searchYears bounds how far Next looks ahead: an expression with no firing
// within that many years (say the 30th of February) is treated as never firing.
const searchYears = 5

// Cron is a parsed five-field cron expression: minute, hour, day of month,
// month and day of week.
//
// Day of month and day of week follow the classic (Vixie) cron rule: when both
// are restricted a day matches if either field matches it; when either starts
// with "*" (including steps such as "*/2") a day must match both.
//
// Times are matched against the wall clock of a time zone. A schedule fires at
// most once for each matching wall-clock minute, which is what keeps daylight
// saving changes from firing twice or skipping a day:
//   - a minute the clocks skip (02:30 on a spring-forward night in Europe)
//     fires at the instant the clocks jump to (03:00), once, however many
//     skipped minutes match;
//   - a minute the clocks repeat (02:30 on a fall-back night) fires at its
//     first occurrence only, so "*/15 * * * *" fires at 02:00, 02:15, 02:30
//     and 02:45 summer time and then not again until 03:00 winter time.
type Cron struct {
	expr string
	// Bit v of a set is value v: minute 0-59, hour 0-23, day of month 1-31,
	// month 1-12, day of week 0-6 with 0 for Sunday.
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
}

// ParseCron parses a five-field cron expression, or one of the aliases
// @hourly, @daily, @midnight, @weekly, @monthly, @yearly and @annually.
//
// Each field is a comma-separated list of items; an item is "*", a value, a
// range "a-b", or one of those with a step: "*/n", "a-b/n", or "a/n", which
// means a up to the field's last value in steps of n. Months may be written
// JAN-DEC and days of the week SUN-SAT, in any case; day of week 7 is Sunday,
// as is SUN at the end of a range ("FRI-SUN"). Errors are fault.Invalid and
// name the field and the part at fault.
func ParseCron(expr string) (*Cron, error) {
	spec := expr
	if alias := strings.TrimSpace(expr); strings.HasPrefix(alias, "@") {
		switch strings.ToLower(alias) {
		case "@hourly":
			spec = "0 * * * *"
		case "@daily", "@midnight":
			spec = "0 0 * * *"
		case "@weekly":
			spec = "0 0 * * 0"
		case "@monthly":
			spec = "0 0 1 * *"
		case "@yearly", "@annually":
			spec = "0 0 1 1 *"
		default:
			return nil, fault.New(fault.Invalid, "cron %q: unknown alias %q (want @hourly, @daily, @midnight, @weekly, @monthly, @yearly or @annually)", expr, alias)
		}
	}
	parts := strings.Fields(spec)
	if len(parts) != 5 {
		return nil, fault.New(fault.Invalid, "cron: expected 5 fields (minute hour day-of-month month day-of-week), got %d", len(parts))
	}
	c := &Cron{expr: expr}
	sets := [5]*uint64{&c.minute, &c.hour, &c.dom, &c.month, &c.dow}
	for i, f := range cronFields() {
		set, err := f.parse(parts[i])
		if err != nil {
			return nil, fault.New(fault.Invalid, "cron %q: %s: %s", expr, f.name, err)
		}
		*sets[i] = set
	}
	c.domStar = strings.HasPrefix(parts[2], "*")
	c.dowStar = strings.HasPrefix(parts[4], "*")
	return c, nil
}

// String returns the expression c was parsed from.
func (c *Cron) String() string { return c.expr }

// Next returns the first firing strictly after after, in UTC: the first
// matching wall-clock minute in loc (UTC when nil), placed on the time line as
// described on Cron. It reports false when nothing matches within five years.
func (c *Cron) Next(after time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	local := after.In(loc)
	y, mo, d := local.Date()
	h, mi, _ := local.Clock()
	from := wallMinute{y, int(mo), d, h, mi + 1}
	limit := wallMinute{y + searchYears, int(mo), d, h, mi}
	for {
		w, ok := c.nextWall(from, limit)
		if !ok {
			return time.Time{}, false
		}
		if t := w.instant(loc); t.After(after) {
			return t.UTC(), true
		}
		// after lies in the second pass of a repeated hour, whose wall minutes
		// all first occurred before it: go on from where the repeat ends.
		from = w
		from.minute++
		if end := repeatEnd(after, loc); end.key() > from.key() {
			from = end
		}
	}
}

// repeatEnd returns the wall minute the clocks showed when at's zone period
// began, read with the offset from before: after a fall-back change, the end of
// the repeated wall-clock times. Otherwise it is a wall minute before at's own.
func repeatEnd(at time.Time, loc *time.Location) wallMinute {
	start, _ := at.In(loc).ZoneBounds()
	if start.IsZero() {
		return wallMinute{}
	}
	_, before := start.Add(-time.Second).Zone()
	end := start.Add(time.Duration(before) * time.Second).UTC()
	w := wallMinute{end.Year(), int(end.Month()), end.Day(), end.Hour(), end.Minute()}
	if end.Second() > 0 {
		w.minute++ // only whole minutes fire
	}
	return w
}

// MinInterval returns the shortest gap between consecutive firings among the
// next n firings of c after from in loc, so that a schedule firing more often
// than a configured minimum can be refused. The gaps are measured on the time
// line, so they include the effect of daylight saving changes that fall within
// those firings ("0,59 1,3 * * *" fires 01:59 and 03:00 one real minute apart
// on a spring-forward night in Europe). With fewer than two firings there is no
// gap and it returns the largest Duration, which passes any minimum.
//
// Firings are distinct whole minutes, so every expression passes a minimum of
// one minute; the check matters for larger minimums.
func MinInterval(c *Cron, from time.Time, loc *time.Location, n int) time.Duration {
	return shortestGap(c, from, loc, n, time.Time{})
}

// shortestGap is MinInterval over the next n firings after from, or fewer:
// those up to until, when until is not zero.
func shortestGap(c *Cron, from time.Time, loc *time.Location, n int, until time.Time) time.Duration {
	shortest := time.Duration(math.MaxInt64)
	prev, ok := c.Next(from, loc)
	for i := 1; ok && i < n; i++ {
		next, more := c.Next(prev, loc)
		if !more || !until.IsZero() && next.After(until) {
			break
		}
		shortest = min(shortest, next.Sub(prev))
		prev = next
	}
	return shortest
}

// wallMinute is a minute on a wall clock, not yet placed in a time zone. The
// search lets fields run past their end (minute 60, month 13) and carries over.
type wallMinute struct {
	year, month, day, hour, minute int
}

// key orders wall minutes.
func (w wallMinute) key() int64 {
	return (((int64(w.year)*13+int64(w.month))*32+int64(w.day))*24+int64(w.hour))*60 + int64(w.minute)
}

// nextWall returns the first wall minute at or after from that matches c and
// is not after limit. It moves a field at a time: a month that does not match
// is skipped whole, and so are days and hours.
func (c *Cron) nextWall(from, limit wallMinute) (wallMinute, bool) {
	y, mo, d, h, mi := from.year, from.month, from.day, from.hour, from.minute
	daysYear, daysMonth, days := 0, 0, uint64(0)
	for y <= limit.year {
		m, ok := nextBit(c.month, mo)
		if !ok {
			y, mo, d, h, mi = y+1, 1, 1, 0, 0
			continue
		}
		if m != mo {
			mo, d, h, mi = m, 1, 0, 0
		}
		if y != daysYear || mo != daysMonth {
			daysYear, daysMonth, days = y, mo, c.days(y, mo)
		}
		dd, ok := nextBit(days, d)
		if !ok {
			mo, d, h, mi = mo+1, 1, 0, 0
			continue
		}
		if dd != d {
			d, h, mi = dd, 0, 0
		}
		hh, ok := nextBit(c.hour, h)
		if !ok {
			d, h, mi = d+1, 0, 0
			continue
		}
		if hh != h {
			h, mi = hh, 0
		}
		mm, ok := nextBit(c.minute, mi)
		if !ok {
			h, mi = h+1, 0
			continue
		}
		w := wallMinute{y, mo, d, h, mm}
		if w.key() > limit.key() {
			return wallMinute{}, false
		}
		return w, true
	}
	return wallMinute{}, false
}

// days returns the set of days of the given month that match c.
func (c *Cron) days(year, month int) uint64 {
	n := daysIn(year, month)
	inMonth := uint64(1)<<(n+1) - 2 // days 1..n
	// The weekdays repeat every seven days: find which of days 1-7 match and
	// copy that week over the rest of the month.
	first := int(time.Date(year, time.Month(month), 1, 0, 0, 0, 0, time.UTC).Weekday())
	var week uint64
	for i := range 7 {
		if c.dow&(1<<((first+i)%7)) != 0 {
			week |= 1 << (i + 1)
		}
	}
	byWeekday := week | week<<7 | week<<14 | week<<21 | week<<28
	if c.domStar || c.dowStar {
		return c.dom & byWeekday & inMonth
	}
	return (c.dom | byWeekday) & inMonth
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// nextBit returns the lowest value at or above from in set.
func nextBit(set uint64, from int) (int, bool) {
	if from >= 64 {
		return 0, false
	}
	rest := set >> from
	if rest == 0 {
		return 0, false
	}
	return from + bits.TrailingZeros64(rest), true
}

// instant places w in loc: the instant it first occurs, or, when the clocks
// skip it, the instant they jump to.
//
// time.Date leaves the choice open for skipped and repeated times, so instant
// works it out from the offsets of the zone periods around time.Date's answer.
func (w wallMinute) instant(loc *time.Location) time.Time {
	t := time.Date(w.year, time.Month(w.month), w.day, w.hour, w.minute, 0, 0, loc)
	want := time.Date(w.year, time.Month(w.month), w.day, w.hour, w.minute, 0, 0, time.UTC).Unix()
	start, end := t.ZoneBounds()
	// w occurs where one of the offsets of the zone periods around t, applied
	// to it, gives an instant that has that offset; take the earliest.
	var around [3]time.Time
	if !start.IsZero() {
		around[0] = start.Add(-time.Second)
	}
	around[1] = t
	around[2] = end
	var first time.Time
	for _, at := range around {
		if at.IsZero() {
			continue
		}
		_, off := at.Zone()
		candidate := time.Unix(want-int64(off), 0).In(loc)
		if _, got := candidate.Zone(); got == off && (first.IsZero() || candidate.Before(first)) {
			first = candidate
		}
	}
	if !first.IsZero() {
		return first
	}
	// w was skipped. time.Date read it with an offset from one side of the gap:
	// if it landed past the gap the jump is where t's period began, else where
	// it ends.
	_, off := t.Zone()
	if t.Unix()+int64(off) > want && !start.IsZero() {
		return start
	}
	if !end.IsZero() {
		return end
	}
	return t
}

// cronField describes one field of an expression.
type cronField struct {
	name     string
	min, max int // the values accepted
	last     int // where "*" and "a/n" stop: 6 for day of week, whose 7 is a second Sunday
	// names holds three-letter names for the values from nameBase on, and
	// nameHint describes them in errors.
	names, nameHint string
	nameBase        int
	sundayIs7       bool
}

func cronFields() [5]cronField {
	return [5]cronField{
		{name: "minute", min: 0, max: 59, last: 59},
		{name: "hour", min: 0, max: 23, last: 23},
		{name: "day-of-month", min: 1, max: 31, last: 31},
		{name: "month", min: 1, max: 12, last: 12,
			names: "JANFEBMARAPRMAYJUNJULAUGSEPOCTNOVDEC", nameHint: "month name (JAN-DEC)", nameBase: 1},
		{name: "day-of-week", min: 0, max: 7, last: 6,
			names: "SUNMONTUEWEDTHUFRISAT", nameHint: "day name (SUN-SAT)", nameBase: 0, sundayIs7: true},
	}
}

// parse returns the set of values a field's text selects.
func (f cronField) parse(text string) (uint64, error) {
	var set uint64
	for item := range strings.SplitSeq(text, ",") {
		if item == "" {
			return 0, fmt.Errorf("empty item in list %q", text)
		}
		lo, hi, step, err := f.parseItem(item)
		if err != nil {
			return 0, err
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	if f.sundayIs7 && set&(1<<7) != 0 {
		set = set&^(1<<7) | 1
	}
	return set, nil
}

// parseItem reads one item of a list into the values lo to hi in steps of step.
func (f cronField) parseItem(item string) (lo, hi, step int, err error) {
	rng, stepText, hasStep := strings.Cut(item, "/")
	step = 1
	if hasStep {
		if step, err = f.parseStep(stepText); err != nil {
			return 0, 0, 0, err
		}
	}
	switch {
	case rng == "*":
		return f.min, f.last, step, nil
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		if a == "" || b == "" || strings.Contains(b, "-") {
			return 0, 0, 0, fmt.Errorf("%q is not a valid range", rng)
		}
		if lo, err = f.value(a); err != nil {
			return 0, 0, 0, err
		}
		if hi, err = f.value(b); err != nil {
			return 0, 0, 0, err
		}
		if f.sundayIs7 && hi == 0 && lo > 0 && !isNumber(b) {
			hi = 7 // "FRI-SUN"
		}
		if lo > hi {
			return 0, 0, 0, fmt.Errorf("range %q runs backwards", rng)
		}
		return lo, hi, step, nil
	default:
		if lo, err = f.value(rng); err != nil {
			return 0, 0, 0, err
		}
		hi = lo
		if hasStep {
			hi = max(f.last, lo)
		}
		return lo, hi, step, nil
	}
}

// parseStep reads the n of "/n": at least 1 and at most the number of values
// the field has, so that a typo such as "*/600" is caught.
func (f cronField) parseStep(s string) (int, error) {
	if !isNumber(s) {
		return 0, fmt.Errorf("step %q is not a number", s)
	}
	limit := f.last - f.min + 1
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > limit {
		return 0, fmt.Errorf("step %s is out of range 1-%d", s, limit)
	}
	return n, nil
}

// value reads a number or, where the field has them, a name.
func (f cronField) value(s string) (int, error) {
	if len(s) == 3 {
		for i := 0; i+3 <= len(f.names); i += 3 {
			if strings.EqualFold(s, f.names[i:i+3]) {
				return f.nameBase + i/3, nil
			}
		}
	}
	if !isNumber(s) {
		if f.names != "" {
			return 0, fmt.Errorf("%q is not a number or a %s", s, f.nameHint)
		}
		return 0, fmt.Errorf("%q is not a number", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < f.min || n > f.max {
		return 0, fmt.Errorf("%s is out of range %d-%d", s, f.min, f.max)
	}
	return n, nil
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
