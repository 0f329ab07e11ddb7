package catalogue

import "time"

// The history tables' compact times (migrations/0035): a row's time is
// INTEGER milliseconds since the Unix epoch, keyword_rank_history's day
// an INTEGER day number since it. Readers render them back as the text
// the API always gave (d1.Layout, 'YYYY-MM-DD').

// Millis is t as the history tables key it.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// Day is the UTC day of t as keyword_rank_history keys it.
func Day(t time.Time) int64 { return t.Unix() / 86400 }

// ratingSourceSQL renders app_snapshots' source code as the
// text it stood for: NULL a sweep's copy. It names the column bare: the
// readers select it from a subquery.
const ratingSourceSQL = `CASE source WHEN 1 THEN 'observed' WHEN 2 THEN 'lookup' WHEN 3 THEN 'search' WHEN 4 THEN 'chart' ELSE COALESCE(source, 'sweep') END`
