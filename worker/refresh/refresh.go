// Package refresh is the living catalogue's policy, pure and
// with the clock passed in: how often an enriched app is looked at again
// (its Tier's Interval, served by tier sweeps: sweep.go), how a tick's slots are shared between never-enriched apps
// and due refreshes (Split), when a refresh needs no store page
// (Unchanged), and how fast an app's ratings move (Velocity). The D1 side
// lives in worker/catalogue; the enrichment pick calls these.
package refresh

import (
	"math"
	"time"
)

// Refresh intervals: how long an enriched app rests before it is looked at
// again, by how much it matters. An app in a top chart, in a market worth
// entering or gaining ratings fast changes what the catalogue says every
// day; a long-tail app changes rarely and is cheap to leave for a month.
//
// A refresh is cheap: an unchanged app costs a hundredth of a batched
// lookup and no page, so looking at every warm app (≥ WarmRatingCount
// ratings) twice a day stays far under the pace. Longer intervals miss
// the 95% value-weighted freshness goal; docs/catalogue.md ("Freshness,
// measured") has each policy's figures and the command that prints them
// (go run ./cmd/bench -only-freshness).
var (
	// HotInterval: fast movers, top-chart apps and members of markets
	// worth entering, twice as often as warm apps.
	HotInterval = 6 * time.Hour
	// WarmInterval: apps with a real audience but no sign of movement;
	// they carry most of the catalogue's value.
	WarmInterval = 12 * time.Hour
	// ColdInterval: the long tail, about monthly.
	ColdInterval = 30 * 24 * time.Hour
	// RetryInterval: an app whose last refresh failed (not found, no
	// answer) is looked at again after this, not at its tier's pace, so a
	// passing failure does not cost a month of freshness.
	RetryInterval = 6 * time.Hour
)

// Tier thresholds: what makes an app hot or warm.
const (
	// HotClusterScore: an opportunity score (0–100) at or above this makes
	// a cluster's members hot; a market worth entering is watched daily.
	HotClusterScore = 60.0
	// WarmClusterScore: a middling market keeps its members warm.
	WarmClusterScore = 30.0
	// HotVelocity7d: ratings per day over the last week at or above which
	// an app is hot. 50 a day moves a 10k-rating app's count by 0.5% a day,
	// so a week's rest would leave it well off the 1% freshness bound.
	HotVelocity7d = 50.0
	// HotRelativeVelocity: ratings a day as a share of the count at or
	// above which an app is hot whatever its size: 0.5% a day exceeds the
	// 1% freshness bound within two days.
	HotRelativeVelocity = 0.005
	// WarmVelocity7d: any real movement (a rating a day) keeps an app warm.
	WarmVelocity7d = 1.0
	// WarmRatingCount: apps this popular are worth a weekly look even when
	// quiet (they anchor their markets' scores).
	WarmRatingCount = 1000
)

// Tier names, as the API and the logs show them.
const (
	TierHot  = "hot"
	TierWarm = "warm"
	TierCold = "cold"
)

// Facts are what the policy knows of one enriched app.
type Facts struct {
	TrackID int64
	// InTopCharts: the app holds a current chart position.
	InTopCharts bool
	// ClusterScore is the best opportunity score (0–100) among the
	// clusters the app is a member of; 0 when none.
	ClusterScore float64
	// Velocity7d is ratings per day over the last week; NaN when unknown.
	Velocity7d  float64
	RatingCount int64
	// LastEnriched is when the app's record was stored.
	LastEnriched time.Time
	// TopSegment: the app is one of the top market segments' apps the
	// crawl favours (worker/segments' focus).
	TopSegment bool
}

// Tier classifies an app.
func Tier(f Facts) string {
	v := f.Velocity7d
	known := !math.IsNaN(v) && !math.IsInf(v, 0)
	switch {
	case f.InTopCharts, f.TopSegment, f.ClusterScore >= HotClusterScore,
		known && v >= HotVelocity7d,
		known && f.RatingCount > 0 && v/float64(f.RatingCount) >= HotRelativeVelocity:
		return TierHot
	case f.ClusterScore >= WarmClusterScore, f.RatingCount >= WarmRatingCount,
		known && v >= WarmVelocity7d:
		return TierWarm
	}
	return TierCold
}

// TopSegmentTier is the tier of an app of a top segment: the design's
// feedback loop, where the markets worth entering are watched closest.
// The top segments' apps are bounded (segments.MaxFocusApps), so their
// share of the hot rounds is too (docs/markets.md).
const TopSegmentTier = TierHot

// Below is the tiers under tier, in pick order: the ones a raise to tier
// moves an app from.
func Below(tier string) []string {
	for i, t := range Tiers {
		if t == tier {
			return append([]string(nil), Tiers[i+1:]...)
		}
	}
	return nil
}

// Raise is the decision for an enriched app that joins a top segment,
// tiered current ("" untiered) and in slot: its tier now, when it is next
// looked at (NextLook, a sweep on time) and whether its row changes. A
// lower tier is raised to TopSegmentTier at once, so the app's next look
// comes within that tier's interval rather than its own; an untiered app
// is left to the catalogue sweep (which tiers it from Facts.TopSegment),
// and a tier is never lowered here: the sweep lowers it once the app
// leaves the top segments.
func Raise(current string, slot int64, now time.Time) (tier string, next time.Time, raised bool) {
	if current == "" {
		return "", time.Time{}, false
	}
	for _, b := range Below(TopSegmentTier) {
		if b == current {
			return TopSegmentTier, NextLook(TopSegmentTier, slot, now), true
		}
	}
	return current, NextLook(current, slot, now), false
}

// Interval is the length of a tier's round: each of its apps is looked at
// once per interval.
func Interval(tier string) time.Duration {
	switch tier {
	case TierHot:
		return HotInterval
	case TierWarm:
		return WarmInterval
	}
	return ColdInterval
}

// RefreshPageShareWhileBacklog is the share of a tick's page slots due
// refreshes get while never-enriched apps wait for their first page (the
// default REFRESH_SHARE_PCT): the store host is the fill's bound, and
// every page a changed refresh takes then is a new app enriched later.
// The fill's goal is 1.1× the host's floor: of the 10% over it, the new
// apps' own retries and refusals take about 3.5% and the pages refreshes
// take when the queue runs short about 2%, so the refreshes' share while
// apps wait is 3% (docs/scale.md, "Discovery"). A changed refresh past it
// records its lookup and keeps its page due (DeferPage) until the backlog
// clears. Once no new app waits, refreshes get every slot.
const RefreshPageShareWhileBacklog = 0.03

// Share bounds: DefaultRefreshShare is the share of a tick's page slots
// due refreshes get when never-enriched apps wait too (and no more).
const (
	DefaultRefreshShare = RefreshPageShareWhileBacklog
	MinRefreshShare     = 0.0
	MaxRefreshShare     = 1.0
)

// PageDeferral is how long a changed refresh whose page was deferred
// waits on the retry list before it is looked at again: its tier's round
// may take it sooner, and either fetches its page once no new app waits.
// A quarter of a day: the deferred apps' repeated lookups stay a small
// share of the API host's pace while the backlog lasts.
const PageDeferral = 6 * time.Hour

// RepeatPageDeferral is the wait of a deferred page deferred again (the
// app came back from the retry list and new apps still wait): a day, a hot
// app's refresh interval, so its page is no later than its daily refresh
// would bring it. Each deferral is a row written; while a fill's backlog
// lasts days, a quarter day's retries would write each owed app four times
// a day for a page that cannot be fetched before the backlog ends.
const RepeatPageDeferral = 24 * time.Hour

// PageDeferralFor is how long a changed refresh whose page is deferred
// waits on the retry list: PageDeferral the first time (picked by its
// tier's round), RepeatPageDeferral when it was picked from the retry list.
func PageDeferralFor(fromRetryList bool) time.Duration {
	if fromRetryList {
		return RepeatPageDeferral
	}
	return PageDeferral
}

// DeferPage reports whether a changed refresh denied a page slot has its
// page deferred (its lookup recorded, the app due again on the retry list
// after PageDeferral, its tier's round going on past it) rather than left
// in its tier's window: only while never-enriched apps wait (backlog). With
// no backlog a refresh past the pace is left where it is, its tier's
// cursor stopping before it, and the next tick takes it.
func DeferPage(backlog bool) bool { return backlog }

// ShareSlots is the slots of a share of a tick's n slots in the seq-th
// of consecutive ticks: floor((seq+1)·x) − floor(seq·x) with x = n ×
// share, floor(x) or ceil(x) in any one tick and x a tick over
// consecutive ticks, so the share is kept where it is under one slot a
// tick (rounding down would give none, rounding up twice as many).
func ShareSlots(n int, share float64, seq int64) int {
	if n <= 0 || share <= 0 {
		return 0
	}
	seq = max(seq, 0)
	x := float64(n) * share
	// 1e-9: 100 × 0.29 is 29 slots, not 28.999….
	return int(math.Floor(float64(seq+1)*x+1e-9) - math.Floor(float64(seq)*x+1e-9))
}

// Split shares a tick's n slots between never-enriched apps (discovery,
// up to pending of them) and due refreshes (up to due), the seq-th of
// consecutive ticks: when both wait, refreshes get ShareSlots(n, share,
// seq) (share clamped to [0, 1]) and discovery the rest; slots one side
// cannot use go to the other. refreshes + discovery ≤ n always.
func Split(n, pending, due int, share float64, seq int64) (refreshes, discovery int) {
	if n <= 0 {
		return 0, 0
	}
	pending, due = max(pending, 0), max(due, 0)
	if math.IsNaN(share) {
		share = DefaultRefreshShare
	}
	share = min(max(share, MinRefreshShare), MaxRefreshShare)
	quota := ShareSlots(n, share, seq)
	refreshes = min(due, quota)
	discovery = min(pending, n-refreshes)
	refreshes = min(due, n-discovery) // discovery left slots over
	return refreshes, discovery
}

// Fingerprint is what a lookup says of an app that decides whether its
// store page must be fetched again.
type Fingerprint struct {
	Version     string
	RatingCount int64
}

// Unchanged reports whether a refresh's lookup shows the app as it was
// when its page was last fetched: the same version (so the same release
// notes, screenshots, description) and the same rating count (so the same
// histogram). Then the refresh needs no page. An unknown stored version
// (never fetched, or from before this was recorded) is a change.
func Unchanged(stored, looked Fingerprint) bool {
	return stored.Version != "" && stored.Version == looked.Version && stored.RatingCount == looked.RatingCount
}

// Observation is an app's rating count as the upstream showed it at a time.
type Observation struct {
	At    time.Time
	Count int64
}

// Velocity windows and their bound.
const (
	Window7d  = 7 * 24 * time.Hour
	Window30d = 30 * 24 * time.Hour
	// MinVelocitySpan: two observations closer than this say too little
	// (one search an hour after another) to give a rate per day.
	MinVelocitySpan = 24 * time.Hour
)

// Velocity is ratings per day over the window ending at current: from the
// latest observation at or before current.At − window (the count then held
// until the next change) or, for an app first seen inside the window, its
// earliest observation, to current. ok is false when there is no baseline
// or the two are less than MinVelocitySpan apart. history need not be
// sorted; observations after current are ignored.
func Velocity(history []Observation, current Observation, window time.Duration) (v float64, ok bool) {
	start := current.At.Add(-window)
	var before, earliest *Observation
	for i := range history {
		o := &history[i]
		if o.At.After(current.At) {
			continue
		}
		if !o.At.After(start) && (before == nil || o.At.After(before.At)) {
			before = o // the latest at or before the window's start
		}
		if earliest == nil || o.At.Before(earliest.At) {
			earliest = o
		}
	}
	base := before
	if base == nil {
		base = earliest // first seen inside the window
	}
	if base == nil {
		return 0, false
	}
	from := base.At
	if from.Before(start) {
		// The count held from base.At to the first change after it; over
		// the window, count from its start.
		from = start
	}
	span := current.At.Sub(from)
	if span < MinVelocitySpan {
		return 0, false
	}
	days := span.Hours() / 24
	return math.Round(float64(current.Count-base.Count)/days*1000) / 1000, true
}
