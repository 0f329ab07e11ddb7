package markets

import (
	"math"
	"sort"

	"storecrawl/worker/events"
)

// A market cluster is the set of apps that rank for one keyword: apps a
// user searching that term chooses between. Clustering reads keyword
// rankings in primary-key batches (a cursor over keywords, never a scan),
// so each run costs what the batch reads.

// Clustering bounds.
const (
	// MinClusterApps: fewer apps than this is not a market.
	MinClusterApps = 3
	// ClusterBatchKeywords is how many searched keywords one run of the
	// 6-hourly clustering checks against their stored markets: 100,000
	// keywords at 1.1M apps (docs/scale.md) over its 4 runs a day, so
	// every keyword is checked daily.
	ClusterBatchKeywords = 25_000
	// MaxReclusterKeywords bounds the keywords one re-clustering reads and
	// writes: a rankings-updated message's keywords. Its reads and writes
	// are one statement each whatever the count (8 queries for a whole
	// event's chain: TestRowsPerRankingsUpdated).
	MaxReclusterKeywords = events.MaxKeys
	// QualityBar is the rating under which users are underserved.
	QualityBar = 4.5
)

// RankedApp is one app ranking for a keyword, with what scoring needs.
type RankedApp struct {
	Keyword     string
	TrackID     int64
	Rank        int
	RatingCount int64
	Rating      float64
}

// Cluster is one keyword market and its opportunity score.
type Cluster struct {
	ID               string  `json:"cluster_id"`
	Apps             int     `json:"app_count"`
	TotalRatings     int64   `json:"total_ratings"`
	AvgRating        float64 `json:"avg_rating"`    // weighted by rating count
	TopShare         float64 `json:"top_share"`     // the leader's share of ratings: high = concentrated
	HHI              float64 `json:"hhi"`           // Herfindahl index of the members' rating shares
	Fragmentation    float64 `json:"fragmentation"` // 1 − HHI: high = demand spread over many apps
	Demand           float64 `json:"demand"`
	Quality          float64 `json:"quality_gap"`
	OpportunityScore float64 `json:"opportunity_score"` // 0–100
	Members          []int64 `json:"members"`           // in rank order
	// Ranks are the members' search ranks (their position).
	Ranks []int `json:"-"`
	// MemberSum is the sum of the members' track ids: stored with the
	// cluster's stats, it tells the clustering cron which apps they were
	// measured over (the members themselves are the keyword's rankings).
	MemberSum int64 `json:"-"`
}

// BuildClusters groups rankings by keyword and scores each market:
// demand (log of total ratings) × fragmentation (1 − Herfindahl index) ×
// quality gap (how far the weighted rating is under QualityBar), scaled to
// 0–100. Big, fragmented, poorly served markets score highest.
func BuildClusters(rows []RankedApp) []Cluster {
	byKw := map[string][]RankedApp{}
	for _, r := range rows {
		byKw[r.Keyword] = append(byKw[r.Keyword], r)
	}
	var out []Cluster
	for kw, apps := range byKw {
		if len(apps) < MinClusterApps {
			continue
		}
		// Ties (never written by a search) by track id: the same rankings
		// always make the same members, so a re-clustering compares equal.
		sort.Slice(apps, func(i, j int) bool {
			if apps[i].Rank != apps[j].Rank {
				return apps[i].Rank < apps[j].Rank
			}
			return apps[i].TrackID < apps[j].TrackID
		})
		c := Cluster{ID: kw, Apps: len(apps)}
		var top int64
		var weighted float64
		counts := make([]int64, 0, len(apps))
		for _, a := range apps {
			c.TotalRatings += a.RatingCount
			top = max(top, a.RatingCount)
			weighted += a.Rating * float64(a.RatingCount)
			c.Members = append(c.Members, a.TrackID)
			c.Ranks = append(c.Ranks, a.Rank)
			c.MemberSum += a.TrackID
			counts = append(counts, a.RatingCount)
		}
		c.HHI = Herfindahl(counts)
		c.Fragmentation = FragmentationOf(c.HHI)
		if c.TotalRatings > 0 {
			c.AvgRating = round3(weighted / float64(c.TotalRatings))
			c.TopShare = round3(float64(top) / float64(c.TotalRatings))
		}
		c.Score()
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Score fills Demand, Quality and the opportunity score from the cluster's
// aggregates and its fragmentation (so it can be recomputed from the stored
// cluster alone).
func (c *Cluster) Score() {
	c.Demand = round3(math.Log10(1 + float64(c.TotalRatings)))
	c.Quality = round3(math.Max(0, QualityBar-c.AvgRating) / QualityBar)
	// Demand saturates near 10^7 ratings; the floor on quality keeps a
	// well-served but huge, fragmented market from scoring zero.
	score := math.Min(c.Demand/7, 1) * c.Fragmentation * (0.2 + 0.8*c.Quality)
	c.OpportunityScore = round3(100 * score)
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// Herfindahl is the Herfindahl–Hirschman index of the apps' shares of a
// market's ratings, Σ sᵢ²: 1 when one app holds them all, 1/n for n equal
// apps. With no ratings at all nothing shows concentration, so the shares
// are taken as equal (1/n). No apps: 1 (no competition to speak of).
func Herfindahl(counts []int64) float64 {
	if len(counts) == 0 {
		return 1
	}
	var total float64
	for _, c := range counts {
		total += float64(max(c, 0))
	}
	if total == 0 {
		return round3(1 / float64(len(counts)))
	}
	var hhi float64
	for _, c := range counts {
		s := float64(max(c, 0)) / total
		hhi += s * s
	}
	return round3(hhi)
}

// FragmentationOf is 1 − HHI: the chance that two ratings picked at random
// belong to different apps. 0 for a monopoly, near 1 for many equal apps.
func FragmentationOf(hhi float64) float64 {
	return round3(math.Max(0, 1-hhi))
}

// ClusterFragmentation is the fragmentation analysis of one cluster.
type ClusterFragmentation struct {
	ClusterID     string
	Apps          int
	HHI           float64
	Fragmentation float64
}

// AnalyzeFragmentation measures how spread each cluster's demand is across
// its member apps, from their current rating counts (by cluster id).
func AnalyzeFragmentation(members map[string][]int64) []ClusterFragmentation {
	out := make([]ClusterFragmentation, 0, len(members))
	for id, counts := range members {
		h := Herfindahl(counts)
		out = append(out, ClusterFragmentation{ClusterID: id, Apps: len(counts), HHI: h, Fragmentation: FragmentationOf(h)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClusterID < out[j].ClusterID })
	return out
}

// StoredCluster is a cluster as D1 holds it: its aggregates (HHI and
// fragmentation nil while not analysed) and the sum of the track ids it
// was measured over (nil before it was stored).
type StoredCluster struct {
	Apps          int
	TotalRatings  int64
	AvgRating     *float64
	TopShare      *float64
	HHI           *float64
	Fragmentation *float64
	MemberSum     *int64
}

// ClusterDiff is what re-clustering changes: the cluster rows to write
// (new, or with an aggregate or its member set changed), which are the
// clusters that changed (Changed, sorted). A market's members are its
// keyword's rankings (migrations/0034): a rank that moved or an app that
// came or went is written by the search, not here.
type ClusterDiff struct {
	Rows    []Cluster
	Changed []string
}

// DiffClusters compares freshly built clusters with the stored ones (by
// id; missing: new), so a re-clustering writes only what changed: a
// keyword whose rankings and ratings did not change writes nothing.
func DiffClusters(fresh []Cluster, stored map[string]StoredCluster) ClusterDiff {
	var d ClusterDiff
	for _, c := range fresh {
		s, ok := stored[c.ID]
		if !ok || s.Apps != c.Apps || s.TotalRatings != c.TotalRatings || !sameFloat(s.AvgRating, c.AvgRating) ||
			!sameFloat(s.TopShare, c.TopShare) || !sameFloat(s.HHI, c.HHI) || !sameFloat(s.Fragmentation, c.Fragmentation) ||
			s.MemberSum == nil || *s.MemberSum != c.MemberSum {
			d.Rows = append(d.Rows, c)
			d.Changed = append(d.Changed, c.ID)
		}
	}
	sort.Strings(d.Changed)
	return d
}

// sameFloat: a stored value (nil: NULL) equal to a computed one. Both are
// rounded to 3 decimals and D1 returns what was stored, so equality is exact.
func sameFloat(stored *float64, v float64) bool {
	return stored != nil && *stored == v
}
