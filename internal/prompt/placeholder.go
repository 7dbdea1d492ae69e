package prompt

import (
	"strconv"
	"strings"
	"time"
)

// The placeholders of docs/prompt.md "Placeholders in agent instructions",
// lower case.
const (
	phDate     = "current_date"
	phDatetime = "current_datetime"
	phISO      = "iso_datetime"
	phUser     = "current_user"
)

// Placeholder is one placeholder that ReplacePlaceholders fills, as written
// in instructions, and what it becomes.
type Placeholder struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Placeholders lists the placeholders ReplacePlaceholders fills, for those
// who write instructions (the web UI's editor, GET /api/config).
func Placeholders() []Placeholder {
	return []Placeholder{
		{"{{" + phDate + "}}", "Today's date in the user's time zone (a schedule's: its own), as YYYY-MM-DD and the weekday number, 0 for Sunday: 2026-03-30 (1)."},
		{"{{" + phDatetime + "}}", "The date and time in the user's time zone, as YYYY-MM-DD HH:mm:ss and the weekday number: 2026-03-30 07:00:00 (1)."},
		{"{{" + phISO + "}}", "The date and time in UTC, ISO 8601 with milliseconds: 2026-03-30T05:00:00.000Z."},
		{"{{" + phUser + "}}", "The user's display name; left as it is when the user has none."},
	}
}

// ReplacePlaceholders replaces, case-insensitively, {{current_date}},
// {{current_datetime}}, {{iso_datetime}} and {{current_user}} in text
// (docs/prompt.md "Placeholders in agent instructions"). Dates are those of
// now in loc (nil: now's own location); {{iso_datetime}} is always UTC with
// milliseconds. {{current_user}} stays as it is when userName is empty, and
// so does any other {{…}}. Replaced values are not searched again.
func ReplacePlaceholders(text string, now time.Time, loc *time.Location, userName string) string {
	i := strings.Index(text, "{{")
	if i < 0 {
		return text
	}
	if loc != nil {
		now = now.In(loc)
	}
	var b strings.Builder
	b.Grow(len(text) + 32)
	var buf [32]byte
	for i >= 0 {
		b.WriteString(text[:i])
		text = text[i:]
		name, n := placeholderAt(text)
		switch {
		case name == phDate:
			b.Write(appendDate(buf[:0], now, false))
		case name == phDatetime:
			b.Write(appendDate(buf[:0], now, true))
		case name == phISO:
			b.Write(now.UTC().AppendFormat(buf[:0], "2006-01-02T15:04:05.000Z"))
		case name == phUser && userName != "":
			b.WriteString(userName)
		case name == phUser:
			b.WriteString(text[:n])
		default:
			// Not one of ours: keep the first brace and look again from the
			// next one, so that "{{{current_date}}" still finds the date.
			n = 1
			b.WriteByte('{')
		}
		text = text[n:]
		i = strings.Index(text, "{{")
	}
	b.WriteString(text)
	return b.String()
}

// placeholderAt returns which placeholder text starts with and its length.
func placeholderAt(text string) (name string, n int) {
	for _, name := range [...]string{phDate, phDatetime, phISO, phUser} {
		n := 2 + len(name) + 2
		if len(text) >= n && asciiEqualFold(text[2:2+len(name)], name) && text[n-2:n] == "}}" {
			return name, n
		}
	}
	return "", 0
}

// asciiEqualFold compares s with the lower-case ASCII string lower, ignoring
// the case of ASCII letters only.
func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// appendDate appends "YYYY-MM-DD (d)" or "YYYY-MM-DD HH:mm:ss (d)", d being
// the weekday number with 0 for Sunday.
func appendDate(dst []byte, t time.Time, withTime bool) []byte {
	if withTime {
		dst = appendDateTime(dst, t)
	} else {
		dst = appendDay(dst, t)
	}
	dst = append(dst, " ("...)
	dst = strconv.AppendInt(dst, int64(t.Weekday()), 10)
	return append(dst, ')')
}

// appendDay appends t as YYYY-MM-DD, as time.DateOnly formats it.
func appendDay(dst []byte, t time.Time) []byte {
	y, m, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(dst, time.DateOnly)
	}
	return append(dst,
		byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+m/10), byte('0'+m%10), '-', byte('0'+d/10), byte('0'+d%10))
}

// appendDateTime appends t as YYYY-MM-DD HH:mm:ss, as time.DateTime formats it.
func appendDateTime(dst []byte, t time.Time) []byte {
	dst = appendDay(dst, t)
	h, m, s := t.Clock()
	return append(dst, ' ',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+m/10), byte('0'+m%10), ':', byte('0'+s/10), byte('0'+s%10))
}
