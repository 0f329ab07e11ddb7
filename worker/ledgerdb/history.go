package ledgerdb

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"storecrawl/internal/objects"
)

// History window bounds.
const (
	DefaultHistoryWindow = 6 * time.Hour
	// MaxHistoryAge: a wider window reads more D1 rows than a dashboard
	// view should (and the rollups are kept only this far back, plus
	// RollupMargin).
	MaxHistoryAge = 7 * 24 * time.Hour
	// Grain is the rollups' (fact_minutes; migration 0014 rounds at down to
	// it): history reads one row per writer per minute, so a bucket is a
	// whole number of minutes and the minutes holding a window's ends count
	// whole.
	Grain            = time.Minute
	DefaultBucket    = time.Minute
	MinBucket        = Grain
	MaxBucket        = time.Hour
	maxTargetNameLen = 64
)

// HistoryQuery is a validated /v1/history request.
type HistoryQuery struct {
	Target string
	Since  time.Time
	Until  time.Time
	Bucket time.Duration
}

// Source is the ledger writer the query reads.
func (q HistoryQuery) Source() string { return objects.SourceControllerPrefix + q.Target }

// ParseHistoryQuery validates target, since (RFC 3339 or unix ms) and
// bucket_s. It returns the offending field on error.
func ParseHistoryQuery(get func(string) string, now time.Time) (HistoryQuery, string, string) {
	q := HistoryQuery{Target: objects.DefaultTarget, Until: now, Since: now.Add(-DefaultHistoryWindow), Bucket: DefaultBucket}
	if t := get("target"); t != "" {
		if t != objects.DefaultTarget || len(t) > maxTargetNameLen {
			return q, "target", fmt.Sprintf("unknown crawl target %q (have: %s)", t, objects.DefaultTarget)
		}
		q.Target = t
	}
	if s := get("since"); s != "" {
		var since time.Time
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			since = time.UnixMilli(ms)
		} else if t, err := time.Parse(time.RFC3339, s); err == nil {
			since = t
		} else {
			return q, "since", "since must be RFC 3339 or unix milliseconds"
		}
		if since.After(now) {
			return q, "since", "since is in the future"
		}
		if now.Sub(since) > MaxHistoryAge {
			return q, "since", fmt.Sprintf("since must be within the last %s", MaxHistoryAge)
		}
		q.Since = since
	}
	if b := get("bucket_s"); b != "" {
		// Bounded as an integer before it becomes a Duration: a huge value
		// would overflow the multiplication and wrap into range.
		n, err := strconv.ParseInt(b, 10, 64)
		lo, hi, grain := int64(MinBucket/time.Second), int64(MaxBucket/time.Second), int64(Grain/time.Second)
		if err != nil || n < lo || n > hi || n%grain != 0 {
			return q, "bucket_s", fmt.Sprintf("bucket_s must be a multiple of %d in [%d, %d]", grain, lo, hi)
		}
		q.Bucket = time.Duration(n) * time.Second
	}
	return q, "", ""
}

// Minutes are the first and the last minute of the window (unix ms of
// their starts): the rollup rows history reads.
func (q HistoryQuery) Minutes() (first, last int64) {
	return minuteOf(q.Since.UnixMilli()), minuteOf(q.Until.UnixMilli())
}

// minuteOf is the start of the rollup minute holding ms, as fact_minutes
// computes it (at - at % 60000; facts' times are positive).
func minuteOf(ms int64) int64 { return ms - ms%Grain.Milliseconds() }

// TickMinute is one minute of a crawl target's controller.tick facts, as
// fact_minutes holds it.
type TickMinute struct {
	Minute      int64 // unix ms of the minute's start
	Ticks       int64
	Dispatched  int64
	Completed   int64
	Failed      int64
	RateLimited int64
	ItemErrors  int64
	// Capacity is the capacity_after of the minute's latest tick that has one.
	Capacity *float64
	// CooldownAts are the times of the ticks that entered a cooldown.
	CooldownAts []int64
	// What reached the upstream, by host: lookups (API host) and pages
	// (store host), with the 403/429 answers among them.
	LookupRequests, PageRequests, LookupRefusals, PageRefusals int64
}

// HistoryPoint is one bucket of a crawl target's history.
type HistoryPoint struct {
	T           int64    `json:"t"`
	Ticks       int64    `json:"ticks"`
	Dispatched  int64    `json:"dispatched"`
	Completed   int64    `json:"completed"`
	Failed      int64    `json:"failed"`
	RateLimited int64    `json:"rate_limited"`
	ItemErrors  int64    `json:"item_errors"`
	SuccessRate *float64 `json:"success_rate"`     // null when nothing was dispatched
	PacePerMin  float64  `json:"pace_per_min"`     // completed items per minute
	CapacityMin *float64 `json:"capacity_per_min"` // the last estimate in the bucket
	Cooldown    bool     `json:"cooldown"`
	// The upstream's cost in the bucket: requests that reached each host
	// and its refusals, and requests per app completed (null when none was).
	LookupRequests         int64    `json:"lookup_requests"`
	PageRequests           int64    `json:"page_requests"`
	LookupRefusals         int64    `json:"lookup_refusals"`
	PageRefusals           int64    `json:"page_refusals"`
	RequestsPerEnrichedApp *float64 `json:"requests_per_enriched_app"`
}

// LimiterSummary is one limiter key over the window.
type LimiterSummary struct {
	Key     string `json:"key"`
	Allowed int64  `json:"allowed"`
	Refused int64  `json:"refused"`
	Waited  int64  `json:"waited"`
}

// History is the /v1/history answer.
type History struct {
	Target           string           `json:"target"`
	Since            int64            `json:"since"`
	Until            int64            `json:"until"`
	BucketS          int64            `json:"bucket_s"`
	Points           []HistoryPoint   `json:"points"`
	Cooldowns        []int64          `json:"cooldowns"`
	ThroughputPerMin float64          `json:"throughput_per_min"`
	ProjectedPerDay  float64          `json:"projected_per_day"`
	Limiters         []LimiterSummary `json:"limiters"`
}

// ThroughputWindow is the recent span the throughput (and its projection
// per day) is measured over.
const ThroughputWindow = 15 * time.Minute

// BuildHistory buckets a target's tick minutes (ascending by minute) and
// lists the limiters' sums over the window by key.
func BuildHistory(q HistoryQuery, ticks []TickMinute, limiters []LimiterSummary) History {
	h := History{Target: q.Target, Since: q.Since.UnixMilli(), Until: q.Until.UnixMilli(), BucketS: int64(q.Bucket / time.Second),
		Points: []HistoryPoint{}, Cooldowns: []int64{}, Limiters: []LimiterSummary{}}
	bucket := q.Bucket.Milliseconds()
	// A minute counts in the throughput when any of it lies in the last
	// ThroughputWindow (the minute holding the window's start counts whole).
	recentFrom := minuteOf(q.Until.Add(-ThroughputWindow).UnixMilli())
	var recent int64
	for _, m := range ticks {
		t := m.Minute / bucket * bucket // a bucket is whole minutes: each minute falls in one
		if n := len(h.Points); n == 0 || h.Points[n-1].T != t {
			h.Points = append(h.Points, HistoryPoint{T: t})
		}
		p := &h.Points[len(h.Points)-1]
		p.Ticks += m.Ticks
		p.Dispatched += m.Dispatched
		p.Completed += m.Completed
		p.Failed += m.Failed
		p.RateLimited += m.RateLimited
		p.ItemErrors += m.ItemErrors
		p.LookupRequests += m.LookupRequests
		p.PageRequests += m.PageRequests
		p.LookupRefusals += m.LookupRefusals
		p.PageRefusals += m.PageRefusals
		if m.Capacity != nil {
			v := *m.Capacity
			p.CapacityMin = &v
		}
		if len(m.CooldownAts) > 0 {
			p.Cooldown = true
			ats := slices.Clone(m.CooldownAts)
			slices.Sort(ats) // a minute's cooldowns are kept in arrival order
			h.Cooldowns = append(h.Cooldowns, ats...)
		}
		if m.Minute >= recentFrom {
			recent += m.Completed
		}
	}
	for i := range h.Points {
		p := &h.Points[i]
		if served := p.Dispatched; served > 0 {
			r := round3(float64(served-p.Failed) / float64(served))
			p.SuccessRate = &r
		}
		p.PacePerMin = round3(float64(p.Completed) / (float64(bucket) / 60000))
		if p.Completed > 0 {
			r := round3(float64(p.LookupRequests+p.PageRequests) / float64(p.Completed))
			p.RequestsPerEnrichedApp = &r
		}
	}
	span := min(ThroughputWindow, q.Until.Sub(q.Since))
	if span > 0 {
		h.ThroughputPerMin = round3(float64(recent) / span.Minutes())
		h.ProjectedPerDay = float64(int64(h.ThroughputPerMin * 60 * 24))
	}
	h.Limiters = append(h.Limiters, limiters...)
	sort.Slice(h.Limiters, func(i, j int) bool { return h.Limiters[i].Key < h.Limiters[j].Key })
	return h
}

// round3 rounds to three decimals (rates in JSON).
func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
