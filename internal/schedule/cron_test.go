package schedule

import (
	"fmt"
	"math"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, even on a machine without a zone database

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
)

// fieldSets is a parsed expression spelled out as lists of values.
type fieldSets struct {
	Minute, Hour, Dom, Month, Dow []int
	DomStar, DowStar              bool
}

func setsOf(c *Cron) fieldSets {
	list := func(set uint64) []int {
		var vs []int
		for v := range 64 {
			if set&(1<<v) != 0 {
				vs = append(vs, v)
			}
		}
		return vs
	}
	return fieldSets{
		Minute: list(c.minute), Hour: list(c.hour), Dom: list(c.dom), Month: list(c.month), Dow: list(c.dow),
		DomStar: c.domStar, DowStar: c.dowStar,
	}
}

// span lists lo to hi in steps of step.
func span(lo, hi, step int) []int {
	var vs []int
	for v := lo; v <= hi; v += step {
		vs = append(vs, v)
	}
	return vs
}

func join(lists ...[]int) []int {
	var vs []int
	for _, l := range lists {
		vs = append(vs, l...)
	}
	return vs
}

func TestParseCron(t *testing.T) {
	every := fieldSets{
		Minute: span(0, 59, 1), Hour: span(0, 23, 1), Dom: span(1, 31, 1), Month: span(1, 12, 1), Dow: span(0, 6, 1),
		DomStar: true, DowStar: true,
	}
	with := func(change func(*fieldSets)) fieldSets {
		s := every
		change(&s)
		return s
	}
	tests := []struct {
		name string
		expr string
		want fieldSets
	}{
		{"stars", "* * * * *", every},
		{"numbers", "5 4 3 2 1", fieldSets{
			Minute: []int{5}, Hour: []int{4}, Dom: []int{3}, Month: []int{2}, Dow: []int{1},
		}},
		{"leading zeros", "05 09 01 02 00", fieldSets{
			Minute: []int{5}, Hour: []int{9}, Dom: []int{1}, Month: []int{2}, Dow: []int{0},
		}},
		{"extra white space", "  0\t9  * *   *  ", with(func(s *fieldSets) {
			s.Minute, s.Hour = []int{0}, []int{9}
		})},
		{"ranges", "0-10 9-17 1-15 3-6 1-5", fieldSets{
			Minute: span(0, 10, 1), Hour: span(9, 17, 1), Dom: span(1, 15, 1), Month: span(3, 6, 1), Dow: span(1, 5, 1),
		}},
		{"star steps", "*/15 */6 */10 */3 */2", fieldSets{
			Minute: []int{0, 15, 30, 45}, Hour: []int{0, 6, 12, 18}, Dom: []int{1, 11, 21, 31}, Month: []int{1, 4, 7, 10},
			Dow: []int{0, 2, 4, 6}, DomStar: true, DowStar: true,
		}},
		{"range steps", "10-30/5 1-23/4 1-31/15 1-12/5 0-6/3", fieldSets{
			Minute: span(10, 30, 5), Hour: []int{1, 5, 9, 13, 17, 21}, Dom: []int{1, 16, 31}, Month: []int{1, 6, 11},
			Dow: []int{0, 3, 6},
		}},
		{"start steps run to the field's last value", "10/20 1/4 5/10 2/5 1/2", fieldSets{
			Minute: []int{10, 30, 50}, Hour: []int{1, 5, 9, 13, 17, 21}, Dom: []int{5, 15, 25}, Month: []int{2, 7, 12},
			Dow: []int{1, 3, 5},
		}},
		{"step as large as the field", "*/60 */24 */31 */12 */7", fieldSets{
			Minute: []int{0}, Hour: []int{0}, Dom: []int{1}, Month: []int{1}, Dow: []int{0}, DomStar: true, DowStar: true,
		}},
		{"lists", "0,15,30-35 8,12-14 1,15,28-31 1,6-7,12 0,3,5-6", fieldSets{
			Minute: join([]int{0, 15}, span(30, 35, 1)), Hour: []int{8, 12, 13, 14}, Dom: []int{1, 15, 28, 29, 30, 31},
			Month: []int{1, 6, 7, 12}, Dow: []int{0, 3, 5, 6},
		}},
		{"overlapping list items", "0-30/10,5,10 * * * *", with(func(s *fieldSets) {
			s.Minute = []int{0, 5, 10, 20, 30}
		})},
		{"names in any case", "0 12 * JAN,jun,Dec mon-FRI", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Month, s.Dow, s.DowStar = []int{0}, []int{12}, []int{1, 6, 12}, span(1, 5, 1), false
		})},
		{"names with steps and lists", "0 0 * FEB-NOV/3 SUN,wed-fri", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Month, s.Dow, s.DowStar = []int{0}, []int{0}, []int{2, 5, 8, 11}, []int{0, 3, 4, 5}, false
		})},
		{"name with a step", "0 0 * APR/4 MON/2", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Month, s.Dow, s.DowStar = []int{0}, []int{0}, []int{4, 8, 12}, []int{1, 3, 5}, false
		})},
		{"names and numbers mixed", "0 0 * 1,MAR-5 0,TUE-4", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Month, s.Dow, s.DowStar = []int{0}, []int{0}, []int{1, 3, 4, 5}, []int{0, 2, 3, 4}, false
		})},
		{"day of week 7 is Sunday", "0 0 * * 7", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Dow, s.DowStar = []int{0}, []int{0}, []int{0}, false
		})},
		{"range to 7", "0 0 * * 5-7", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Dow, s.DowStar = []int{0}, []int{0}, []int{0, 5, 6}, false
		})},
		{"range 0-7", "0 0 * * 0-7", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.DowStar = []int{0}, []int{0}, false
		})},
		{"range ending on SUN", "0 0 * * FRI-SUN", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Dow, s.DowStar = []int{0}, []int{0}, []int{0, 5, 6}, false
		})},
		{"both days restricted", "0 0 1 * MON", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Dom, s.Dow, s.DomStar, s.DowStar = []int{0}, []int{0}, []int{1}, []int{1}, false, false
		})},
		{"a stepped star is still a star", "0 0 */10 * MON", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Dom, s.Dow, s.DowStar = []int{0}, []int{0}, []int{1, 11, 21, 31}, []int{1}, false
		})},
		{"@hourly", "@hourly", with(func(s *fieldSets) { s.Minute = []int{0} })},
		{"@daily", "@daily", with(func(s *fieldSets) { s.Minute, s.Hour = []int{0}, []int{0} })},
		{"@midnight", "@midnight", with(func(s *fieldSets) { s.Minute, s.Hour = []int{0}, []int{0} })},
		{"@weekly", "@weekly", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Dow, s.DowStar = []int{0}, []int{0}, []int{0}, false
		})},
		{"@monthly", "@monthly", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Dom, s.DomStar = []int{0}, []int{0}, []int{1}, false
		})},
		{"@yearly", "@yearly", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Dom, s.Month, s.DomStar = []int{0}, []int{0}, []int{1}, []int{1}, false
		})},
		{"@annually", "@annually", with(func(s *fieldSets) {
			s.Minute, s.Hour, s.Dom, s.Month, s.DomStar = []int{0}, []int{0}, []int{1}, []int{1}, false
		})},
		{"alias in upper case with spaces", " @DAILY ", with(func(s *fieldSets) { s.Minute, s.Hour = []int{0}, []int{0} })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseCron(tt.expr)
			if err != nil {
				t.Fatalf("ParseCron(%q): %v", tt.expr, err)
			}
			if diff := cmp.Diff(tt.want, setsOf(c)); diff != "" {
				t.Errorf("ParseCron(%q) mismatch (-want +got):\n%s", tt.expr, diff)
			}
			if got := c.String(); got != tt.expr {
				t.Errorf("String() = %q, want %q", got, tt.expr)
			}
		})
	}
}

func TestParseCronErrors(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string
	}{
		{"hour out of range", "0 25 * * *", `cron "0 25 * * *": hour: 25 is out of range 0-23`},
		{"six fields", "0 0 * * * *", "cron: expected 5 fields (minute hour day-of-month month day-of-week), got 6"},
		{"three fields", "0 0 *", "cron: expected 5 fields (minute hour day-of-month month day-of-week), got 3"},
		{"empty", "", "cron: expected 5 fields (minute hour day-of-month month day-of-week), got 0"},
		{"minute out of range", "60 * * * *", `cron "60 * * * *": minute: 60 is out of range 0-59`},
		{"day of month zero", "* * 0 * *", `cron "* * 0 * *": day-of-month: 0 is out of range 1-31`},
		{"day of month 32", "* * 32 * *", `cron "* * 32 * *": day-of-month: 32 is out of range 1-31`},
		{"month 13", "* * * 13 *", `cron "* * * 13 *": month: 13 is out of range 1-12`},
		{"month zero", "* * * 0 *", `cron "* * * 0 *": month: 0 is out of range 1-12`},
		{"day of week 8", "* * * * 8", `cron "* * * * 8": day-of-week: 8 is out of range 0-7`},
		{"huge number", "99999999999999999999 * * * *", `cron "99999999999999999999 * * * *": minute: 99999999999999999999 is out of range 0-59`},
		{"out of range in a range", "* 20-24 * * *", `cron "* 20-24 * * *": hour: 24 is out of range 0-23`},
		{"out of range in a list", "* * * 1,2,13 *", `cron "* * * 1,2,13 *": month: 13 is out of range 1-12`},
		{"word", "x * * * *", `cron "x * * * *": minute: "x" is not a number`},
		{"negative", "* -1 * * *", `cron "* -1 * * *": hour: "-1" is not a valid range`},
		{"name where none are allowed", "* MON * * *", `cron "* MON * * *": hour: "MON" is not a number`},
		{"unknown month", "* * * FOO *", `cron "* * * FOO *": month: "FOO" is not a number or a month name (JAN-DEC)`},
		{"full month name", "* * * January *", `cron "* * * January *": month: "January" is not a number or a month name (JAN-DEC)`},
		{"unknown day", "* * * * FUNDAY", `cron "* * * * FUNDAY": day-of-week: "FUNDAY" is not a number or a day name (SUN-SAT)`},
		{"month name as a day", "* * * * JAN", `cron "* * * * JAN": day-of-week: "JAN" is not a number or a day name (SUN-SAT)`},
		{"question mark", "* * ? * *", `cron "* * ? * *": day-of-month: "?" is not a number`},
		{"last day", "* * L * *", `cron "* * L * *": day-of-month: "L" is not a number`},
		{"backwards range", "5-3 * * * *", `cron "5-3 * * * *": minute: range "5-3" runs backwards`},
		{"backwards day range", "* * * * FRI-MON", `cron "* * * * FRI-MON": day-of-week: range "FRI-MON" runs backwards`},
		{"backwards numeric day range to 0", "* * * * 5-0", `cron "* * * * 5-0": day-of-week: range "5-0" runs backwards`},
		{"open range", "1- * * * *", `cron "1- * * * *": minute: "1-" is not a valid range`},
		{"range of three", "1-2-3 * * * *", `cron "1-2-3 * * * *": minute: "1-2-3" is not a valid range`},
		{"star in a range", "*-5 * * * *", `cron "*-5 * * * *": minute: "*" is not a number`},
		{"zero step", "*/0 * * * *", `cron "*/0 * * * *": minute: step 0 is out of range 1-60`},
		{"step too large", "*/61 * * * *", `cron "*/61 * * * *": minute: step 61 is out of range 1-60`},
		{"day of week step too large", "* * * * */8", `cron "* * * * */8": day-of-week: step 8 is out of range 1-7`},
		{"word step", "*/x * * * *", `cron "*/x * * * *": minute: step "x" is not a number`},
		{"empty step", "* */ * * *", `cron "* */ * * *": hour: step "" is not a number`},
		{"two steps", "*/5/2 * * * *", `cron "*/5/2 * * * *": minute: step "5/2" is not a number`},
		{"name as step", "* * * */MAR *", `cron "* * * */MAR *": month: step "MAR" is not a number`},
		{"empty list item", "1,,2 * * * *", `cron "1,,2 * * * *": minute: empty item in list "1,,2"`},
		{"trailing comma", "* * * * MON,", `cron "* * * * MON,": day-of-week: empty item in list "MON,"`},
		{"first bad field wins", "61 25 * * *", `cron "61 25 * * *": minute: 61 is out of range 0-59`},
		{"unknown alias", "@every 5m", `cron "@every 5m": unknown alias "@every 5m" (want @hourly, @daily, @midnight, @weekly, @monthly, @yearly or @annually)`},
		{"alias with fields", "@daily 0", `cron "@daily 0": unknown alias "@daily 0" (want @hourly, @daily, @midnight, @weekly, @monthly, @yearly or @annually)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseCron(tt.expr)
			if err == nil {
				t.Fatalf("ParseCron(%q) = %v, want error %q", tt.expr, setsOf(c), tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("ParseCron(%q) error\n got %s\nwant %s", tt.expr, got, tt.want)
			}
			if !fault.Is(err, fault.Invalid) {
				t.Errorf("ParseCron(%q) error kind = %q, want %q", tt.expr, fault.KindOf(err), fault.Invalid)
			}
		})
	}
}

func mustLocation(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return at
}

func TestCronNext(t *testing.T) {
	tests := []struct {
		name  string
		expr  string
		zone  string // "" for UTC
		after string
		// want lists the firings in UTC, each the Next of the one before;
		// empty means Next finds none.
		want []string
	}{
		{"every minute", "* * * * *", "", "2026-01-01T00:00:30Z",
			[]string{"2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z"}},
		{"strictly after a firing", "0 9 * * *", "", "2026-01-01T09:00:00Z",
			[]string{"2026-01-02T09:00:00Z"}},
		{"just before a firing", "0 9 * * *", "", "2026-01-01T08:59:59.999999999Z",
			[]string{"2026-01-01T09:00:00Z", "2026-01-02T09:00:00Z"}},
		{"seconds into a firing minute", "0 9 * * *", "", "2026-01-01T09:00:30Z",
			[]string{"2026-01-02T09:00:00Z"}},
		{"every 15 minutes", "*/15 * * * *", "", "2026-01-01T23:31:00Z",
			[]string{"2026-01-01T23:45:00Z", "2026-01-02T00:00:00Z", "2026-01-02T00:15:00Z"}},
		{"range with step across hours", "50-59/5 8-9 * * *", "", "2026-01-01T08:52:00Z",
			[]string{"2026-01-01T08:55:00Z", "2026-01-01T09:50:00Z", "2026-01-01T09:55:00Z", "2026-01-02T08:50:00Z"}},
		{"31st skips short months", "0 9 31 * *", "", "2026-01-31T09:00:00Z",
			[]string{"2026-03-31T09:00:00Z", "2026-05-31T09:00:00Z", "2026-07-31T09:00:00Z", "2026-08-31T09:00:00Z", "2026-10-31T09:00:00Z"}},
		{"leap day", "0 0 29 2 *", "", "2026-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"leap day after 2096 is past the horizon", "0 0 29 2 *", "", "2097-03-01T00:00:00Z", nil},
		{"year wrap on the last minute", "59 23 31 12 *", "", "2026-12-31T23:59:00Z",
			[]string{"2027-12-31T23:59:00Z"}},
		{"new year", "0 0 1 1 *", "", "2026-12-31T23:59:59Z",
			[]string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
		{"month list wraps the year", "0 0 1 NOV,FEB *", "", "2026-11-01T00:00:00Z",
			[]string{"2027-02-01T00:00:00Z", "2027-11-01T00:00:00Z"}},
		{"30 February never", "0 0 30 2 *", "", "2026-01-01T00:00:00Z", nil},
		{"31 April never", "0 0 31 4 *", "", "2026-01-01T00:00:00Z", nil},
		// 2026-03-01 is a Sunday and 2026-04-01 a Wednesday.
		{"day of month or day of week", "0 12 1 * MON", "", "2026-03-01T12:00:00Z",
			[]string{"2026-03-02T12:00:00Z", "2026-03-09T12:00:00Z", "2026-03-16T12:00:00Z", "2026-03-23T12:00:00Z",
				"2026-03-30T12:00:00Z", "2026-04-01T12:00:00Z", "2026-04-06T12:00:00Z"}},
		{"day of week with any day of month", "0 12 * * MON", "", "2026-03-01T12:00:00Z",
			[]string{"2026-03-02T12:00:00Z", "2026-03-09T12:00:00Z"}},
		{"day of month with any day of week", "0 12 1 * *", "", "2026-03-01T12:00:00Z",
			[]string{"2026-04-01T12:00:00Z", "2026-05-01T12:00:00Z"}},
		// */10 begins with a star, so the days must be both the 1st, 11th,
		// 21st or 31st and a Monday: 2026-05-11 and 2026-06-01.
		{"stepped star day of month and day of week", "0 12 */10 * MON", "", "2026-03-01T00:00:00Z",
			[]string{"2026-05-11T12:00:00Z", "2026-06-01T12:00:00Z"}},
		{"weekdays", "30 8 * * MON-FRI", "", "2026-03-06T09:00:00Z",
			[]string{"2026-03-09T08:30:00Z", "2026-03-10T08:30:00Z"}},
		{"Sunday as 7", "0 0 * * 7", "", "2026-03-02T00:00:00Z",
			[]string{"2026-03-08T00:00:00Z", "2026-03-15T00:00:00Z"}},
		{"@hourly", "@hourly", "", "2026-01-01T00:30:00Z",
			[]string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"}},
		{"@weekly", "@weekly", "", "2026-03-01T00:00:00Z",
			[]string{"2026-03-08T00:00:00Z"}},
		{"@monthly", "@monthly", "", "2026-01-15T00:00:00Z",
			[]string{"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{"@yearly", "@yearly", "", "2026-01-01T00:00:00Z",
			[]string{"2027-01-01T00:00:00Z"}},
		{"no DST: Asia/Kolkata at +05:30", "0 7 * * *", "Asia/Kolkata", "2026-01-01T00:00:00Z",
			[]string{"2026-01-01T01:30:00Z", "2026-01-02T01:30:00Z", "2026-01-03T01:30:00Z"}},
		{"day boundary in the zone, not in UTC", "0 0 * * MON", "Asia/Kolkata", "2026-03-01T00:00:00Z",
			[]string{"2026-03-01T18:30:00Z", "2026-03-08T18:30:00Z"}},

		// Europe/Amsterdam: on 2026-03-29 the clocks go from 02:00 CET to
		// 03:00 CEST (01:00 UTC); on 2026-10-25 from 03:00 CEST back to 02:00
		// CET (01:00 UTC).
		{"Amsterdam spring: skipped 02:30 fires once at 03:00", "30 2 * * *", "Europe/Amsterdam", "2026-03-28T01:30:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"Amsterdam spring: skipped 02:00 and existing 03:00 fire once", "0 2,3 * * *", "Europe/Amsterdam", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T01:00:00Z"}},
		{"Amsterdam fall: repeated 02:30 fires once, first", "30 2 * * *", "Europe/Amsterdam", "2026-10-24T00:30:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"Amsterdam fall: not again from the second 02:15", "30 2 * * *", "Europe/Amsterdam", "2026-10-25T01:15:00Z",
			[]string{"2026-10-26T01:30:00Z"}},
		{"Amsterdam spring hourly", "0 * * * *", "Europe/Amsterdam", "2026-03-28T22:30:00Z",
			[]string{"2026-03-28T23:00:00Z", "2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z", "2026-03-29T03:00:00Z"}},
		{"Amsterdam fall hourly", "0 * * * *", "Europe/Amsterdam", "2026-10-24T21:30:00Z",
			[]string{"2026-10-24T22:00:00Z", "2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"}},
		{"Amsterdam spring every 15 minutes", "*/15 * * * *", "Europe/Amsterdam", "2026-03-29T00:40:00Z",
			[]string{"2026-03-29T00:45:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:15:00Z"}},
		{"Amsterdam fall every 15 minutes", "*/15 * * * *", "Europe/Amsterdam", "2026-10-25T00:40:00Z",
			[]string{"2026-10-25T00:45:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:15:00Z"}},
		{"Amsterdam fall every minute from inside the repeat", "* * * * *", "Europe/Amsterdam", "2026-10-25T01:10:00Z",
			[]string{"2026-10-25T02:00:00Z", "2026-10-25T02:01:00Z"}},

		// America/New_York: on 2026-03-08 02:00 EST becomes 03:00 EDT (07:00
		// UTC); on 2026-11-01 02:00 EDT becomes 01:00 EST (06:00 UTC).
		{"New York spring: skipped 02:30", "30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"New York fall: repeated 01:30", "30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"New York spring hourly", "0 * * * *", "America/New_York", "2026-03-08T05:30:00Z",
			[]string{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{"New York fall hourly", "0 * * * *", "America/New_York", "2026-11-01T03:30:00Z",
			[]string{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"}},

		// Australia/Lord_Howe moves by half an hour: on 2026-10-04 02:00
		// becomes 02:30 (+10:30 to +11); on 2026-04-05 02:00 becomes 01:30.
		{"Lord Howe spring: skipped 02:15 fires at 02:30", "15 2 * * *", "Australia/Lord_Howe", "2026-10-02T12:00:00Z",
			[]string{"2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"}},
		{"Lord Howe fall: repeated 01:45", "45 1 * * *", "Australia/Lord_Howe", "2026-04-03T12:00:00Z",
			[]string{"2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}},

		// America/Havana changes at midnight: on 2026-03-08 00:00 CST becomes
		// 01:00 CDT; on 2026-11-01 01:00 CDT becomes 00:00 CST.
		{"Havana: skipped midnight fires at 01:00", "0 0 * * *", "America/Havana", "2026-03-07T00:00:00Z",
			[]string{"2026-03-07T05:00:00Z", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"}},
		{"Havana: repeated midnight fires once", "0 0 * * *", "America/Havana", "2026-10-31T00:00:00Z",
			[]string{"2026-10-31T04:00:00Z", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseCron(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			var loc *time.Location
			if tt.zone != "" {
				loc = mustLocation(t, tt.zone)
			}
			at := mustTime(t, tt.after)
			var got []string
			for range max(len(tt.want), 1) {
				next, ok := c.Next(at, loc)
				if !ok {
					break
				}
				if next.Location() != time.UTC {
					t.Errorf("Next(%s) = %v, want a UTC time", at, next)
				}
				got = append(got, next.Format(time.RFC3339))
				at = next
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%q in %q from %s (-want +got):\n%s", tt.expr, tt.zone, tt.after, diff)
			}
		})
	}
}

// TestCronNextDSTDays walks whole days across the changes of 2026 and checks
// every firing against the rule: each matching wall-clock minute fires once,
// at its first occurrence or, if skipped, when the clocks jump past it.
func TestCronNextDSTDays(t *testing.T) {
	tests := []struct {
		name  string
		zone  string
		day   string // a day with a change, in the zone
		fires int    // firings of "*/15 * * * *" that day
		// back is how far the clocks go back that day: the one gap between
		// firings longer than 15 minutes is 15 minutes plus that.
		back time.Duration
	}{
		{"Amsterdam spring", "Europe/Amsterdam", "2026-03-29", 96 - 4, 0},
		{"Amsterdam fall", "Europe/Amsterdam", "2026-10-25", 96, time.Hour},
		{"New York spring", "America/New_York", "2026-03-08", 96 - 4, 0},
		{"New York fall", "America/New_York", "2026-11-01", 96, time.Hour},
		{"Lord Howe spring", "Australia/Lord_Howe", "2026-10-04", 96 - 2, 0},
		{"Lord Howe fall", "Australia/Lord_Howe", "2026-04-05", 96, 30 * time.Minute},
		{"Kolkata", "Asia/Kolkata", "2026-03-29", 96, 0},
	}
	c, err := ParseCron("*/15 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc := mustLocation(t, tt.zone)
			day, err := time.ParseInLocation(time.DateOnly, tt.day, loc)
			if err != nil {
				t.Fatal(err)
			}
			start := day.Add(-time.Minute)
			end := day.AddDate(0, 0, 1)
			seen := map[string]bool{}
			fires := 0
			for at := start; ; {
				next, ok := c.Next(at, loc)
				if !ok {
					t.Fatalf("Next(%s) found nothing", at)
				}
				if !next.After(at) {
					t.Fatalf("Next(%s) = %s, not after", at, next)
				}
				if !next.Before(end) {
					break
				}
				wall := next.In(loc).Format("15:04")
				if seen[wall] {
					t.Errorf("wall clock %s fired twice (again at %s)", wall, next)
				}
				seen[wall] = true
				if gap := next.Sub(at); at != start && gap != 15*time.Minute && (tt.back == 0 || gap != 15*time.Minute+tt.back) {
					t.Errorf("gap of %s before %s", gap, next)
				}
				fires++
				at = next
			}
			if fires != tt.fires {
				t.Errorf("fired %d times on %s, want %d", fires, tt.day, tt.fires)
			}
		})
	}
}

// TestCronNextAgainstClock checks Next against a plain reading of the rule,
// minute by minute around daylight saving changes: a matching wall-clock
// minute fires the first time the zone's clock shows it or jumps past it.
func TestCronNextAgainstClock(t *testing.T) {
	exprs := []string{
		"* * * * *", "*/15 * * * *", "7,37 * * * *", "0 * * * *", "30 2 * * *", "59 1,2,3 * * *",
		"0 0 * * *", "0,30 0-3 * * SUN", "45 1 * * 0-5", "0 2 25-31 * *", "*/20 1-3 1 * MON",
	}
	windows := []struct{ zone, from string }{
		{"Europe/Amsterdam", "2026-03-28T12:00:00Z"},
		{"Europe/Amsterdam", "2026-10-24T12:00:00Z"},
		{"America/New_York", "2026-03-07T12:00:00Z"},
		{"America/New_York", "2026-10-31T12:00:00Z"},
		{"Australia/Lord_Howe", "2026-04-04T00:00:00Z"},
		{"Australia/Lord_Howe", "2026-10-03T00:00:00Z"},
		{"America/Havana", "2026-03-07T12:00:00Z"},
		{"America/Havana", "2026-10-31T12:00:00Z"},
	}
	for _, w := range windows {
		loc := mustLocation(t, w.zone)
		from := mustTime(t, w.from)
		to := from.Add(48 * time.Hour)
		for _, expr := range exprs {
			t.Run(w.zone+" "+w.from+" "+expr, func(t *testing.T) {
				c, err := ParseCron(expr)
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				shown := wallOf(from.In(loc)) // the latest wall minute the clock has shown
				for at := from.Add(time.Minute); !at.After(to); at = at.Add(time.Minute) {
					now := wallOf(at.In(loc))
					fires := false
					for m := shown.Add(time.Minute); !m.After(now); m = m.Add(time.Minute) {
						fires = fires || matchesWall(c, m)
					}
					if fires {
						want = append(want, at.Format(time.RFC3339))
					}
					if now.After(shown) {
						shown = now
					}
				}
				var got []string
				for at := from; ; {
					next, ok := c.Next(at, loc)
					if !ok || next.After(to) {
						break
					}
					got = append(got, next.Format(time.RFC3339))
					at = next
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("firings (-clock +Next):\n%s", diff)
				}
			})
		}
	}
}

// wallOf returns t's wall clock, to the minute, as a time in UTC.
func wallOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
}

// matchesWall reports whether the wall minute w (a time in UTC) matches c,
// field by field.
func matchesWall(c *Cron, w time.Time) bool {
	has := func(set uint64, v int) bool { return set&(1<<v) != 0 }
	if !has(c.minute, w.Minute()) || !has(c.hour, w.Hour()) || !has(c.month, int(w.Month())) {
		return false
	}
	dom, dow := has(c.dom, w.Day()), has(c.dow, int(w.Weekday()))
	if c.domStar || c.dowStar {
		return dom && dow
	}
	return dom || dow
}

func TestCronNextInputZone(t *testing.T) {
	c, err := ParseCron("0 9 * * *")
	if err != nil {
		t.Fatal(err)
	}
	tokyo := mustLocation(t, "Asia/Tokyo")
	// 08:00 in Tokyo is 23:00 UTC the day before: the next 09:00 UTC is that
	// same UTC day, whatever zone after is expressed in.
	after := time.Date(2026, 5, 2, 8, 0, 0, 0, tokyo)
	got, ok := c.Next(after, time.UTC)
	if want := mustTime(t, "2026-05-02T09:00:00Z"); !ok || !got.Equal(want) {
		t.Errorf("Next(%s, UTC) = %s, %v; want %s", after, got, ok, want)
	}
	got, ok = c.Next(after, tokyo)
	if want := mustTime(t, "2026-05-02T00:00:00Z"); !ok || !got.Equal(want) {
		t.Errorf("Next(%s, Tokyo) = %s, %v; want %s", after, got, ok, want)
	}
}

func TestMinInterval(t *testing.T) {
	tests := []struct {
		name string
		expr string
		zone string
		from string
		n    int
		want time.Duration
	}{
		{"every minute", "* * * * *", "", "2026-01-01T00:00:00Z", 10, time.Minute},
		{"every 15 minutes", "*/15 * * * *", "", "2026-01-01T00:00:00Z", 10, 15 * time.Minute},
		{"twice a day", "0 9,17 * * *", "", "2026-01-01T00:00:00Z", 10, 8 * time.Hour},
		{"uneven list", "0,50 * * * *", "", "2026-01-01T00:00:00Z", 10, 10 * time.Minute},
		{"hourly across spring forward", "0 * * * *", "Europe/Amsterdam", "2026-03-28T22:30:00Z", 6, time.Hour},
		{"hourly across fall back", "0 * * * *", "Europe/Amsterdam", "2026-10-24T22:30:00Z", 6, time.Hour},
		{"on an ordinary night", "0,59 1,3 * * *", "Europe/Amsterdam", "2026-03-26T23:30:00Z", 4, 59 * time.Minute},
		{"spring forward brings 01:59 and 03:00 together", "0,59 1,3 * * *", "Europe/Amsterdam", "2026-03-28T23:30:00Z", 4, time.Minute},
		{"leap days", "0 0 29 2 *", "", "2026-01-01T00:00:00Z", 3, (4*365 + 1) * 24 * time.Hour},
		{"never fires", "0 0 30 2 *", "", "2026-01-01T00:00:00Z", 10, math.MaxInt64},
		{"one firing", "* * * * *", "", "2026-01-01T00:00:00Z", 1, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseCron(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			var loc *time.Location
			if tt.zone != "" {
				loc = mustLocation(t, tt.zone)
			}
			if got := MinInterval(c, mustTime(t, tt.from), loc, tt.n); got != tt.want {
				t.Errorf("MinInterval(%q, %s, %d) = %s, want %s", tt.expr, tt.from, tt.n, got, tt.want)
			}
		})
	}
}

// benchExprs are typical schedules.
var benchExprs = []string{
	"*/15 * * * *",
	"0 9 * * MON-FRI",
	"30 2 * * *",
	"0 0 1 * *",
	"0 8,12,18 * * *",
	"15 10 1-7 * MON",
	"0 0 29 2 *",
}

func BenchmarkCronNext(b *testing.B) {
	loc := mustLocation(b, "Europe/Amsterdam")
	after := mustTime(b, "2026-10-24T21:07:00Z")
	for _, expr := range benchExprs {
		c, err := ParseCron(expr)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(expr, func(b *testing.B) {
			for b.Loop() {
				if _, ok := c.Next(after, loc); !ok {
					b.Fatal("no next")
				}
			}
		})
	}
}

// BenchmarkCronNextHard covers the slow paths: the search reaching its
// five-year horizon, and a start inside a repeated hour.
func BenchmarkCronNextHard(b *testing.B) {
	loc := mustLocation(b, "Europe/Amsterdam")
	tests := []struct {
		name, expr, after string
		ok                bool
	}{
		{"never", "0 0 30 2 *", "2026-01-01T00:00:00Z", false},
		{"inside the repeated hour", "* * * * *", "2026-10-25T01:00:00Z", true},
	}
	for _, tt := range tests {
		c, err := ParseCron(tt.expr)
		if err != nil {
			b.Fatal(err)
		}
		after := mustTime(b, tt.after)
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := c.Next(after, loc); ok != tt.ok {
					b.Fatalf("Next ok = %v, want %v", ok, tt.ok)
				}
			}
		})
	}
}

// BenchmarkCronNext10000 computes the next firing of 10,000 schedules across
// a few zones; ns/schedule is the cost of one Next.
func BenchmarkCronNext10000(b *testing.B) {
	zones := []*time.Location{
		time.UTC,
		mustLocation(b, "Europe/Amsterdam"),
		mustLocation(b, "America/New_York"),
		mustLocation(b, "Asia/Kolkata"),
	}
	type sched struct {
		cron *Cron
		loc  *time.Location
	}
	scheds := make([]sched, 10000)
	for i := range scheds {
		expr := benchExprs[i%len(benchExprs)]
		if i%3 == 0 {
			expr = fmt.Sprintf("%d %d * * *", i%60, i%24)
		}
		c, err := ParseCron(expr)
		if err != nil {
			b.Fatal(err)
		}
		scheds[i] = sched{c, zones[i%len(zones)]}
	}
	after := mustTime(b, "2026-03-29T00:30:00Z")
	for b.Loop() {
		for _, s := range scheds {
			if _, ok := s.cron.Next(after, s.loc); !ok {
				b.Fatal("no next")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(scheds)), "ns/schedule")
}

func BenchmarkParseCron(b *testing.B) {
	for b.Loop() {
		for _, expr := range benchExprs {
			if _, err := ParseCron(expr); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// The examples docs/agents.md "Schedules" gives of the cron syntax.
func TestCronDocumentedExamples(t *testing.T) {
	from := mustTime(t, "2026-06-01T00:00:00Z") // a Monday
	firings := func(expr string, n int) []string {
		t.Helper()
		c, err := ParseCron(expr)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for at := from; len(out) < n; {
			next, ok := c.Next(at, time.UTC)
			if !ok {
				break
			}
			out = append(out, next.Format("Mon 02 15:04"))
			at = next
		}
		return out
	}
	tests := []struct {
		expr string
		n    int
		want []string
	}{
		{"0 7 1-7 * MON", 9, []string{"Mon 01 07:00", "Tue 02 07:00", "Wed 03 07:00", "Thu 04 07:00", "Fri 05 07:00",
			"Sat 06 07:00", "Sun 07 07:00", "Mon 08 07:00", "Mon 15 07:00"}},
		{"0 7 */1 * MON", 2, []string{"Mon 01 07:00", "Mon 08 07:00"}},
		{"10/20 1 * * *", 3, []string{"Mon 01 01:10", "Mon 01 01:30", "Mon 01 01:50"}},
		{"@weekly", 2, []string{"Sun 07 00:00", "Sun 14 00:00"}},
		{"0 0 * * 7", 1, []string{"Sun 07 00:00"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, firings(tt.expr, tt.n)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.expr, diff)
		}
	}
	if _, ok := mustCron(t, "0 7 30 2 *").Next(from, time.UTC); ok {
		t.Error("0 7 30 2 * fires")
	}
}

func mustCron(t *testing.T, expr string) *Cron {
	t.Helper()
	c, err := ParseCron(expr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
