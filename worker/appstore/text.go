package appstore

// MaxTextLen caps free text (descriptions, subtitles) before a DB insert so
// one huge row cannot blow the D1 statement/row limits.
const MaxTextLen = 2000

// Truncate returns s cut to at most max runes (never splitting a UTF-8
// sequence). A non-positive max yields "".
func Truncate(s string, max int) string {
	if max <= 0 {
		return ""
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i]
		}
		n++
	}
	return s
}
