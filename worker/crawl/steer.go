package crawl

import (
	"time"

	"storecrawl/durable/limiter"
	"storecrawl/durable/pacing"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/refresh"
	"storecrawl/worker/upstream"
)

// Keyword steering: which keywords the crawl searches next and
// how many a cycle.
//
// Value. A keyword's expected value (KeywordValue) is its market's
// opportunity score (the cluster of the apps ranking for it, 0–100) plus
// KeywordCarrierValue for each enriched app among them, up to
// KeywordCarrierCap. A pending keyword has no market yet: it inherits the
// best score among the clusters of the apps it was derived from, counts
// those of them that are enriched, and adds FirstSearchValue (a first
// search also discovers apps). Values are written by SQL built from these
// constants: on derivation, after each search, and when the markets stage
// re-scores the keyword's cluster (the cycle's revalue step).
//
// Recency. A searched keyword rests for ResearchInterval (shorter for
// high-opportunity markets), then the cycle's promote step makes it due
// (due_value). The pick reads the pending and the due keywords, each set
// from its own partial index in value order, and takes the best n.

// Keyword value and re-search policy.
const (
	// KeywordCarrierValue: each enriched app ranking for a keyword adds
	// this much; KeywordCarrierCap of them (30 points) rival a warm market,
	// since enriched apps are what the API serves and their keywords'
	// ranks are what their history shows.
	KeywordCarrierValue = 3.0
	// KeywordCarrierCap: more carriers than this say nothing more (a
	// search returns KeywordSearchSize apps; ten enriched ones make it a
	// tracked market).
	KeywordCarrierCap = 10
	// FirstSearchValue: what a never-searched keyword is worth on its own.
	// Low: a plain new keyword waits behind any scored market, but beats a
	// searched keyword with no market (score 0) and no carriers.
	FirstSearchValue = 10.0
	// MaxOpportunityScore bounds the score term (the markets' 0–100 scale).
	MaxOpportunityScore = 100.0
	// HotKeywordResearch: a keyword of a market at or above
	// refresh.HotClusterScore is searched again daily, as its members are
	// refreshed; rank history is kept by UTC day, so more often adds nothing.
	HotKeywordResearch = 24 * time.Hour
	// WarmKeywordResearch: at or above refresh.WarmClusterScore, weekly
	// (RankingRefreshAge).
	WarmKeywordResearch = RankingRefreshAge
	// ColdKeywordResearch: the long tail, monthly, as cold apps are refreshed.
	ColdKeywordResearch = 30 * 24 * time.Hour
	// KeywordPromoteBatch bounds the keywords one cycle makes due: five
	// cycles' searches, so the due set never runs dry while keywords wait,
	// and one bounded write.
	KeywordPromoteBatch = 500
	// KeywordRevalueBatch bounds the re-scored clusters one cycle reads:
	// every search re-scores its cluster, so twice a cycle's searches keeps
	// up with them and the 6-hourly re-clustering.
	KeywordRevalueBatch = 200
	// steerCursorName names the revalue step's cursor in sweep_cursors.
	steerCursorName = "keyword-steering"
)

// The top segments (worker/segments' focus: the keywords of the segments
// with the best opportunity, segment_focus_keywords) are searched first
// and again daily: the design's feedback loop. Their searches come out of
// the same per-cycle bound, in a different order, never on top of it.
const (
	// TopSegmentKeywordValue is added to a top segment's keyword's value:
	// more than any other keyword's whole value (MaxOpportunityScore +
	// the carriers' cap + FirstSearchValue is 140), so when it is due it
	// is picked before every keyword that is not, and less than an
	// operator's seed (SeedKeywordValue).
	TopSegmentKeywordValue = 200.0
)

// TopSegmentValue is a searched keyword's value: KeywordValue, plus
// TopSegmentKeywordValue for a top segment's keyword.
func TopSegmentValue(score float64, carriers int, top bool) float64 {
	v := KeywordValue(score, carriers)
	if top {
		v += TopSegmentKeywordValue
	}
	return v
}

// TopSegmentInterval is how long a searched keyword rests: a top
// segment's keyword HotKeywordResearch (as a hot market's), any other its
// market's ResearchInterval.
func TopSegmentInterval(score float64, top bool) time.Duration {
	if top {
		return HotKeywordResearch
	}
	return ResearchInterval(score)
}

// KeywordValue is the expected value of searching a keyword whose market
// scores score (0–100) and which carriers enriched apps rank for.
func KeywordValue(score float64, carriers int) float64 {
	return min(max(score, 0), MaxOpportunityScore) + KeywordCarrierValue*float64(min(max(carriers, 0), KeywordCarrierCap))
}

// PendingKeywordValue is a never-searched keyword's value: the best
// cluster score of the apps it was derived from and how many of them are
// enriched, plus FirstSearchValue.
func PendingKeywordValue(inheritedScore float64, enrichedCarriers int) float64 {
	return KeywordValue(inheritedScore, enrichedCarriers) + FirstSearchValue
}

// ResearchInterval is how long a searched keyword of a market scoring
// score rests before it is due again.
func ResearchInterval(score float64) time.Duration {
	switch {
	case score >= refresh.HotClusterScore:
		return HotKeywordResearch
	case score >= refresh.WarmClusterScore:
		return WarmKeywordResearch
	}
	return ColdKeywordResearch
}

// The connection budget of a cycle: the runtime gives an invocation
// ConnectionBudget simultaneous connections; each task in flight holds
// what it sends at once, and keyword mapping, the side task, gets the rest.
const (
	ConnectionBudget = pacing.MaxConnections
	// ScanConnections: a category scan reads its charts one after another.
	// (Ranking fill sends no request: it queues keywords for mapping.)
	ScanConnections = 1
)

// The keyword search rate. Searches go through the API host's global limit
// (upstream.CatalogueLimit, like lookups and charts): each waits for its
// slot, a refusal stops the cycle's searches. The count per cycle is a
// share of that limit's allowance over the cycle.
const (
	// CyclePeriod is the crawl cron's period (config.CronCrawlCycle).
	CyclePeriod = 5 * time.Minute
	// KeywordSearchShare: searches may take 1/60 of the API host's
	// allowance (20 of 1,200 calls a minute: the design's 28.8k a day),
	// leaving the rest to the enrichment controller's lookups, whose pace
	// sets how fast the catalogue is enriched and refreshed.
	KeywordSearchShare = 1.0 / 60
	// SubrequestsPerSearch: the limiter's acquire, the search, and its D1
	// batch: a full answer (KeywordSearchSize apps) is 55 statements
	// (RankingStatements: its rankings in one), one batch of d1.MaxBatch.
	// A limiter wait adds an acquire; the cycle's developers are upserted
	// once, in batches.
	SubrequestsPerSearch = 3
)

// KeywordSearchesPerCycle bounds one cycle's searches (keyword mapping and
// ranking fill together), from the API host's limit at its defaults:
// 1,200 a minute × 5 minutes / 60 = 100, 28,800 a day.
var KeywordSearchesPerCycle = SearchesPerCycle(ratelimit.Limits[upstream.CatalogueLimit])

// SearchesPerCycle is KeywordSearchShare of what policy admits in a
// CyclePeriod (at least 1).
func SearchesPerCycle(p limiter.Policy) int {
	if p.Window <= 0 {
		return 1
	}
	perCycle := float64(p.Limit) * CyclePeriod.Seconds() / p.Window
	return max(1, int(perCycle*KeywordSearchShare))
}

// SearchesPerDay is what n searches a cycle make in a day of cycles.
func SearchesPerDay(n int) int { return n * int(24*time.Hour/CyclePeriod) }

// SteerResult is what one steering step did.
type SteerResult struct {
	Revalued int `json:"revalued,omitempty"` // re-scored clusters whose keyword was rescheduled
	Promoted int `json:"promoted,omitempty"` // searched keywords made due
}
