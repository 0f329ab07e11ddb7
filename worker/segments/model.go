package segments

import (
	"math"
	"sort"
	"strings"

	"storecrawl/worker/markets"
)

// Segment bounds.
const (
	// MaxSegmentApps is how many of a segment's apps it keeps (by how many
	// of its keywords they rank for, then ratings): its leaders and their
	// shares.
	MaxSegmentApps = 50
	// LeaderCount is how many leading apps the competitiveness and the
	// leaders' rating velocity are read over.
	LeaderCount = 5
	// NameTerms is how many of its most common terms name a segment.
	NameTerms = 3
	// RelatedK is how many neighbouring segments a segment lists.
	RelatedK = 5
)

// AppStat is what scoring reads of an app.
type AppStat struct {
	Ratings         int64
	Rating          float64
	Competitiveness *float64
	Velocity7d      *float64
	Velocity30d     *float64
}

// SegmentApp is one app of a segment: how many of its keywords it ranks
// in the top of, and its share of the segment's ratings.
type SegmentApp struct {
	TrackID  int64   `json:"track_id"`
	Keywords int     `json:"keywords"`
	Ratings  int64   `json:"ratings"`
	Share    float64 `json:"share"`
}

// Scores are a segment's market scores, by markets' formulas over its apps.
type Scores struct {
	Apps            int      `json:"app_count"`
	TotalRatings    int64    `json:"total_ratings"`
	AvgRating       float64  `json:"avg_rating"`
	Demand          float64  `json:"demand"`
	HHI             float64  `json:"hhi"`
	Fragmentation   float64  `json:"fragmentation"`
	QualityGap      float64  `json:"quality_gap"`
	Competitiveness *float64 `json:"competitiveness"`
	Opportunity     float64  `json:"opportunity"`
	// Velocity7d/30d: the leaders' summed rating velocity (app_registry's
	// rating_velocity_7d/30d, ratings a day); nil when none is measured.
	Velocity7d  *float64 `json:"leaders_velocity_7d"`
	Velocity30d *float64 `json:"leaders_velocity_30d"`
}

// Built is a segment's content: keywords (sorted), apps (leaders first),
// name and scores.
type Built struct {
	Keywords []string
	Apps     []SegmentApp
	Name     string
	Scores   Scores
}

// Build makes a segment from its keywords and their top apps (tops, by
// keyword) with the apps' stats: its apps are those in its keywords' tops,
// ranked by how many of its keywords they top then by ratings, at most
// MaxSegmentApps; each app's share is of those apps' ratings. Demand,
// fragmentation (1 − HHI of the shares), quality gap and opportunity are
// markets.Cluster's formulas over those apps; competitiveness is the
// leaders' mean (markets.MeanCompetitiveness).
func Build(keywords []string, tops map[string][]int64, stats map[int64]AppStat) Built {
	b := Built{Keywords: append([]string(nil), keywords...)}
	sort.Strings(b.Keywords)
	count := map[int64]int{}
	for _, k := range b.Keywords {
		for _, a := range tops[k] {
			count[a]++
		}
	}
	for a, n := range count {
		b.Apps = append(b.Apps, SegmentApp{TrackID: a, Keywords: n, Ratings: max(stats[a].Ratings, 0)})
	}
	b.Apps = rankApps(b.Apps)
	b.Scores = scoreApps(b.Apps, stats)
	b.Name = Name(b.Keywords)
	return b
}

// rankApps orders a segment's apps by how many of its keywords they top,
// then ratings, then id, and keeps MaxSegmentApps.
func rankApps(apps []SegmentApp) []SegmentApp {
	sort.Slice(apps, func(i, j int) bool {
		x, y := apps[i], apps[j]
		if x.Keywords != y.Keywords {
			return x.Keywords > y.Keywords
		}
		if x.Ratings != y.Ratings {
			return x.Ratings > y.Ratings
		}
		return x.TrackID < y.TrackID
	})
	if len(apps) > MaxSegmentApps {
		apps = apps[:MaxSegmentApps]
	}
	return apps
}

// scoreApps scores a segment's ranked apps (setting each one's share).
func scoreApps(apps []SegmentApp, stats map[int64]AppStat) Scores {
	c := markets.Cluster{Apps: len(apps)}
	counts := make([]int64, len(apps))
	var weighted float64
	for i, a := range apps {
		counts[i] = a.Ratings
		c.TotalRatings += a.Ratings
		weighted += stats[a.TrackID].Rating * float64(a.Ratings)
	}
	for i := range apps {
		if c.TotalRatings > 0 {
			apps[i].Share = round3(float64(apps[i].Ratings) / float64(c.TotalRatings))
		}
	}
	if c.TotalRatings > 0 {
		c.AvgRating = round3(weighted / float64(c.TotalRatings))
	}
	c.HHI = markets.Herfindahl(counts)
	c.Fragmentation = markets.FragmentationOf(c.HHI)
	c.Score()
	s := Scores{Apps: c.Apps, TotalRatings: c.TotalRatings, AvgRating: c.AvgRating, Demand: c.Demand, HHI: c.HHI,
		Fragmentation: c.Fragmentation, QualityGap: c.Quality, Opportunity: c.OpportunityScore}
	// The leaders: the most-rated apps.
	leaders := append([]SegmentApp(nil), apps...)
	sort.SliceStable(leaders, func(i, j int) bool { return leaders[i].Ratings > leaders[j].Ratings })
	leaders = leaders[:min(LeaderCount, len(leaders))]
	var comp []*float64
	for _, l := range leaders {
		st := stats[l.TrackID]
		comp = append(comp, st.Competitiveness)
		s.Velocity7d = addVel(s.Velocity7d, st.Velocity7d)
		s.Velocity30d = addVel(s.Velocity30d, st.Velocity30d)
	}
	s.Competitiveness, _ = markets.MeanCompetitiveness(comp)
	return s
}

func addVel(sum, v *float64) *float64 {
	if v == nil {
		return sum
	}
	x := *v
	if sum != nil {
		x += *sum
	}
	x = round3(x)
	return &x
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// stopTerms name no segment.
var stopTerms = map[string]bool{"app": true, "apps": true, "the": true, "and": true, "for": true, "free": true, "best": true, "a": true, "of": true, "my": true, "to": true, "with": true, "&": true, "-": true}

// Name is a segment's name: its NameTerms most common terms across its
// keywords (by how many keywords hold each, then alphabetically), stop
// terms left out; its first keyword when no term is left.
func Name(keywords []string) string {
	n := map[string]int{}
	for _, k := range keywords {
		seen := map[string]bool{}
		for _, t := range strings.Fields(strings.ToLower(k)) {
			if !stopTerms[t] && !seen[t] {
				seen[t] = true
				n[t]++
			}
		}
	}
	terms := make([]string, 0, len(n))
	for t := range n {
		terms = append(terms, t)
	}
	sort.Slice(terms, func(i, j int) bool {
		if n[terms[i]] != n[terms[j]] {
			return n[terms[i]] > n[terms[j]]
		}
		return terms[i] < terms[j]
	})
	if len(terms) == 0 {
		if len(keywords) == 0 {
			return ""
		}
		return keywords[0]
	}
	return strings.Join(terms[:min(NameTerms, len(terms))], " ")
}

// Relation is a neighbouring segment and the apps the two share.
type Relation struct {
	SegmentID  int64 `json:"segment_id"`
	SharedApps int   `json:"shared_apps"`
}

// Relate lists each segment's RelatedK neighbours: the segments sharing
// the most of its apps (ties by id), none that share none.
func Relate(apps map[int64][]int64) map[int64][]Relation {
	bySeg := map[int64][]int64{}
	for id, as := range apps {
		for _, a := range as {
			bySeg[a] = append(bySeg[a], id)
		}
	}
	out := make(map[int64][]Relation, len(apps))
	for id, as := range apps {
		shared := map[int64]int{}
		for _, a := range as {
			for _, o := range bySeg[a] {
				if o != id {
					shared[o]++
				}
			}
		}
		rs := make([]Relation, 0, len(shared))
		for o, n := range shared {
			rs = append(rs, Relation{SegmentID: o, SharedApps: n})
		}
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].SharedApps != rs[j].SharedApps {
				return rs[i].SharedApps > rs[j].SharedApps
			}
			return rs[i].SegmentID < rs[j].SegmentID
		})
		out[id] = rs[:min(RelatedK, len(rs))]
	}
	return out
}
