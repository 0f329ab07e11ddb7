package keywords

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"storecrawl/worker/catalogue"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
)

// GET /v1/keywords/{term} bounds.
const (
	// MaxTermLen caps a term in characters: the longest title keyword is a
	// short title (appstore.DeriveKeywords), far under it.
	MaxTermLen = 100
	// HistoryWindow is the top apps' rank history read: the rank history's
	// whole retention (catalogue.RankHistoryRetention, a test holds them equal).
	HistoryWindow = 90 * 24 * time.Hour
)

// D1Store reads the keyword metrics and stores popularity.
type D1Store struct{ DB *d1.DB }

// keywordSQL reads a keyword's row and its top apps with their rank
// history, in one statement: the keyword by its UNIQUE index (?1), its
// rankings by crawl_rankings' primary key prefix (at most the search's
// results, crawl.KeywordSearchSize; sorted, the first ?3 kept), each app
// by primary key, and each app's rank rows by keyword_rank_history's
// primary key prefix (track_id, day): the window's (day ≥ ?2) and the row
// in effect when it opens (the last before it; the prune keeps only that
// one past the retention), the keyword's picked among the app's.
const keywordSQL = `SELECT k.id, k.keyword, k.searched_at, k.result_count, k.popularity, k.popularity_prefix,
  k.popularity_position, k.popularity_at,
  (SELECT json_group_array(json_object('track_id', t.track_id, 'rank', t.rank, 'seen_at', t.seen_at,
      'name', a.name, 'subtitle', a.subtitle, 'rating_count', a.rating_count, 'average_rating', a.average_rating,
      'current_version_release_date', a.current_version_release_date,
      'history', (SELECT json_group_array(json_array(day, rank)) FROM (
          SELECT day, rank FROM keyword_rank_history WHERE track_id = t.track_id AND day >= ?2 AND keyword_id = k.id
          UNION ALL
          SELECT max(day) AS day, rank FROM keyword_rank_history WHERE track_id = t.track_id AND day < ?2 AND keyword_id = k.id
            GROUP BY keyword_id))))
    FROM (SELECT track_id, rank, seen_at FROM crawl_rankings WHERE keyword = k.keyword ORDER BY rank LIMIT ?3) t
    LEFT JOIN app_registry a ON a.track_id = t.track_id) AS top
FROM crawl_keywords k WHERE k.keyword = ?1`

// RankPoint is a top app's rank for the term from a day on (Rank nil: it
// left the results that day).
type RankPoint struct {
	Day  string `json:"day"`
	Rank *int   `json:"rank"`
}

// TopApp is one of the term's top apps: its rank now, its values, its
// parts of the difficulty and its rank history for the term, newest first.
type TopApp struct {
	TrackID       int64       `json:"track_id"`
	Rank          int         `json:"rank"`
	Name          *string     `json:"name"`
	RatingCount   *int64      `json:"rating_count"`
	AverageRating *float64    `json:"average_rating"`
	VersionDate   *string     `json:"current_version_release_date"`
	Strength      Strength    `json:"strength"`
	History       []RankPoint `json:"rank_history"`
}

// Report is GET /v1/keywords/{term}'s answer.
type Report struct {
	Term      string `json:"term"`
	Country   string `json:"country"`
	KeywordID int64  `json:"keyword_id"`
	// Popularity is nil until the keyword-popularity task computed it.
	Popularity       *int       `json:"popularity"`
	PopularityDetail *Suggested `json:"popularity_detail"`
	PopularityAt     *string    `json:"popularity_at"`
	Difficulty       int        `json:"difficulty"`
	DifficultyDetail Strength   `json:"difficulty_detail"`
	// Results is the result count of the term's latest search (nil: not
	// searched yet); SearchedAt when that was.
	Results     *int     `json:"results"`
	SearchedAt  *string  `json:"searched_at"`
	TopApps     []TopApp `json:"top_apps"`
	HistoryFrom string   `json:"history_from"`
}

type keywordRow struct {
	ID         int64   `json:"id"`
	Keyword    string  `json:"keyword"`
	SearchedAt *string `json:"searched_at"`
	Results    *int    `json:"result_count"`
	Popularity *int    `json:"popularity"`
	Prefix     *int    `json:"popularity_prefix"`
	Position   *int    `json:"popularity_position"`
	At         *string `json:"popularity_at"`
	Top        string  `json:"top"`
}

type topRow struct {
	TrackID       int64       `json:"track_id"`
	Rank          int         `json:"rank"`
	SeenAt        string      `json:"seen_at"`
	Name          *string     `json:"name"`
	Subtitle      *string     `json:"subtitle"`
	RatingCount   *int64      `json:"rating_count"`
	AverageRating *float64    `json:"average_rating"`
	VersionDate   *string     `json:"current_version_release_date"`
	History       [][2]*int64 `json:"history"`
}

// Keyword reads a term's metrics in country (false: no such keyword). The
// term is compared normalized (Normalize), as the crawl stores keywords.
func (s D1Store) Keyword(ctx context.Context, term, country string, now time.Time) (Report, bool, error) {
	term = Normalize(term)
	since := now.Add(-HistoryWindow)
	var rows []keywordRow
	if err := s.DB.Query(ctx, &rows, keywordSQL, term, day(since), DifficultyTopApps); err != nil || len(rows) == 0 {
		return Report{}, false, err
	}
	k := rows[0]
	var top []topRow
	if err := json.Unmarshal([]byte(k.Top), &top); err != nil {
		return Report{}, false, fmt.Errorf("keyword %q: top apps: %w", term, err)
	}
	slices.SortFunc(top, func(a, b topRow) int { return a.Rank - b.Rank })
	rep := Report{Term: k.Keyword, Country: country, KeywordID: k.ID, Popularity: k.Popularity, PopularityAt: k.At,
		Results: k.Results, SearchedAt: k.SearchedAt, TopApps: []TopApp{}, HistoryFrom: dayText(day(since))}
	if k.Popularity != nil {
		d := Suggested{}
		if k.Prefix != nil && k.Position != nil {
			d = Suggested{Prefix: *k.Prefix, Position: *k.Position}
		}
		rep.PopularityDetail = &d
	}
	ranked := make([]RankedApp, len(top))
	for i, t := range top {
		ranked[i] = RankedApp{TrackID: t.TrackID, Rank: t.Rank, Name: deref(t.Name), Subtitle: deref(t.Subtitle),
			RatingCount: deref(t.RatingCount), AverageRating: deref(t.AverageRating), CurrentVersionReleaseDate: deref(t.VersionDate)}
		rep.TopApps = append(rep.TopApps, TopApp{TrackID: t.TrackID, Rank: t.Rank, Name: t.Name, RatingCount: t.RatingCount,
			AverageRating: t.AverageRating, VersionDate: t.VersionDate, Strength: round3(AppStrength(term, ranked[i], now)),
			History: rankHistory(t, day(since))})
	}
	d := Difficulty(term, ranked, now)
	rep.Difficulty, rep.DifficultyDetail = d.Score, d.Parts
	return rep, true, nil
}

// rankHistory is an app's rank points for the term, newest first: its
// rows (changes: a rank holds until the next row) and its ranking when no
// row holds it since it was taken (migrations/0034: an app entering the
// results writes no row; its ranking row holds the rank and when, the
// first change writes it). An in-effect row saying it left is dropped.
func rankHistory(t topRow, since int64) []RankPoint {
	type pt struct {
		day  int64
		rank *int64
	}
	var pts []pt
	for _, h := range t.History {
		if h[0] != nil {
			pts = append(pts, pt{*h[0], h[1]})
		}
	}
	slices.SortFunc(pts, func(a, b pt) int { return int(b.day - a.day) })
	seen := int64(-1)
	if at, err := d1.ParseTime(t.SeenAt); err == nil {
		seen = day(at)
	} else if at, err := time.Parse(time.RFC3339, t.SeenAt); err == nil {
		seen = day(at)
	}
	if seen >= 0 && (len(pts) == 0 || pts[0].day < seen && (pts[0].rank == nil || *pts[0].rank != int64(t.Rank))) {
		r := int64(t.Rank)
		pts = append([]pt{{seen, &r}}, pts...)
	}
	if n := len(pts); n > 0 && pts[n-1].rank == nil && pts[n-1].day < since {
		pts = pts[:n-1]
	}
	out := make([]RankPoint, 0, len(pts))
	for _, p := range pts {
		rp := RankPoint{Day: dayText(p.day)}
		if p.rank != nil {
			r := int(*p.rank)
			rp.Rank = &r
		}
		out = append(out, rp)
	}
	return out
}

// day is t's UTC day as keyword_rank_history keys it (catalogue.Day).
func day(t time.Time) int64 { return catalogue.Day(t) }

func dayText(d int64) string { return time.Unix(d*86400, 0).UTC().Format(time.DateOnly) }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// The keyword-popularity task's bounds.
const (
	// PopularityClusters: the keywords worth hint requests are those of
	// the top opportunity clusters (the markets the product points users
	// at); the pick reads this many scores, by idx_opportunity_scores_score.
	PopularityClusters = 200
	// PopularityRequestsPerRun bounds one run's hint requests (a term takes
	// one a prefix length until suggested, PopularityMaxPrefix at most).
	// At a run every 5 minutes (the crawl cycle's cadence) that is at most
	// 17,280 a day, 1 % of the upstream-catalogue limit's 1,200 a minute.
	PopularityRequestsPerRun = 60
	// PopularityTermsPerRun bounds the terms one run picks (and so the
	// rows its pick returns and its batch writes).
	PopularityTermsPerRun = 20
	// PopularityMaxAge is when a keyword's popularity is computed again:
	// search interest in a term moves over weeks, not days.
	PopularityMaxAge = 30 * 24 * time.Hour
)

// dueSQL picks the keywords whose popularity is due: those of the ?1 top
// opportunity clusters (a cluster is its keyword) never computed or
// computed before ?2, the best first, ?3 at most.
const dueSQL = `SELECT k.keyword FROM (SELECT cluster_id, score FROM opportunity_scores ORDER BY score DESC LIMIT ?1) o
JOIN crawl_keywords k ON k.keyword = o.cluster_id
WHERE k.popularity_at IS NULL OR k.popularity_at < ?2
ORDER BY o.score DESC, k.keyword LIMIT ?3`

// DuePopularity lists up to n keywords whose popularity is due.
func (s D1Store) DuePopularity(ctx context.Context, clusters, n int, staleBefore time.Time) ([]string, error) {
	var rows []struct {
		Keyword string `json:"keyword"`
	}
	if err := s.DB.Query(ctx, &rows, dueSQL, clusters, d1.Time(staleBefore), n); err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Keyword
	}
	return out, nil
}

// Measured is one keyword's measured popularity.
type Measured struct {
	Keyword string
	Where   Suggested
}

// SavePopularity stores measured popularities in one batch.
func (s D1Store) SavePopularity(ctx context.Context, ms []Measured, at time.Time) error {
	if len(ms) == 0 {
		return nil
	}
	stmts := make([]d1.Stmt, len(ms))
	for i, m := range ms {
		stmts[i] = crawl.SavePopularity(m.Keyword, m.Where.Score(), m.Where.Prefix, m.Where.Position, at)
	}
	_, err := s.DB.Exec(ctx, stmts...)
	return err
}

// HotQueries are the keyword metrics' reads.
func HotQueries() []d1.NamedQuery {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return []d1.NamedQuery{
		{Name: "keyword metrics", SQL: keywordSQL, Args: []any{"kw1", day(t0.Add(-HistoryWindow)), DifficultyTopApps}},
		{Name: "keyword popularity due", SQL: dueSQL, Args: []any{PopularityClusters, d1.Time(t0.Add(-PopularityMaxAge)), PopularityTermsPerRun},
			Bounded: "the head of idx_opportunity_scores_score, stopped by its LIMIT (PopularityClusters), each keyword by its UNIQUE index"},
	}
}
