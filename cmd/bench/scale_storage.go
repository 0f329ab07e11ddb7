//go:build unix

package main

import (
	"math"
	"sort"
)

// D1 storage after a year, table by table, pure: each table's bytes now
// (pages in use, its indexes' included, from SQLite's dbstat) and what it
// grows a day, held at a cap where a pruner bounds it.

// storageDays is the projection's horizon.
const storageDays = 365

// The catalogue's own change rate. The simulator's catalogue holds still at
// scale (drift needs the eager catalogue), so the history tables' growth is
// projected from a stated rate, not measured:
const (
	// appChangesPerAppDay is the share of apps whose values change a day:
	// the freshness bench's drift (freshChangesPerHour app changes an hour
	// on freshApps apps: 9.6% a day), itself an assumption, not a
	// measurement of the App Store. Each change adds ratings (a rating
	// observation when a refresh sees it).
	appChangesPerAppDay = freshChangesPerHour * 24.0 / freshApps
	// versionShareOfChanges: one change in three is a new version
	// (cmd/upstream-sim's driftVersionEvery).
	versionShareOfChanges = 1.0 / 3
	// priceChangesPerAppDay: the drift moves no price; assumed an app's
	// price moves about once in three years.
	priceChangesPerAppDay = 0.001
	// newReviewsPerFetch: each daily fetch of a top cluster's app finds a
	// full feed page of reviews it has not stored (50: an upper bound; a
	// top app gets more than that a day, most apps far fewer).
	newReviewsPerFetch = 50
)

// TierApps is one refresh (or re-search) tier: how many it holds and its
// interval in days.
type TierApps struct {
	N, IntervalDays float64
}

// seenChange is the chance that something changing at ratePerDay changed
// in intervalDays (a Poisson process): what one refresh, or one re-search,
// of it finds changed.
func seenChange(ratePerDay, intervalDays float64) float64 {
	return 1 - math.Exp(-ratePerDay*intervalDays)
}

// ChangeRowsPerDay is the history rows a day refreshes write for a value
// that changes at ratePerDay an app: a tier's apps each refreshed every
// IntervalDays, one row when the refresh finds the value changed (several
// changes between two refreshes are one row).
func ChangeRowsPerDay(tiers []TierApps, ratePerDay float64) float64 {
	var rows float64
	for _, t := range tiers {
		if t.IntervalDays > 0 {
			rows += t.N * seenChange(ratePerDay, t.IntervalDays) / t.IntervalDays
		}
	}
	return rows
}

// FirstChangeRows is the rows the apps' first changes add in days on top
// of ChangeRowsPerDay: an app's first values are its row's (no history
// row) until its first change writes them before the new one
// (migrations/0028).
func FirstChangeRows(apps, ratePerDay, days float64) float64 {
	return apps * seenChange(ratePerDay, days)
}

// ResultRankRowsPerDay is keyword_rank_history's rows a day: a re-search
// tier's keywords each re-searched every IntervalDays with resultsPerSearch
// results, a row for each result whose rank moved, which it does when its
// own ratings moved since the last search (the search sorts by rating
// count) at ratePerDay.
func ResultRankRowsPerDay(keywordTiers []TierApps, resultsPerSearch, ratePerDay float64) float64 {
	var rows float64
	for _, t := range keywordTiers {
		if t.IntervalDays > 0 {
			rows += t.N / t.IntervalDays * resultsPerSearch * seenChange(ratePerDay, t.IntervalDays)
		}
	}
	return rows
}

// TableYear is one table's projection: its bytes now, what it grows a day
// (the year's mean) and, when a pruner deletes its rows past a retention,
// CapDays: the table then holds at most CapDays of growth.
type TableYear struct {
	Table       string  `json:"table"`
	BytesNow    float64 `json:"bytes_now"`
	RowsNow     float64 `json:"rows_now"`
	BytesPerDay float64 `json:"bytes_per_day"`
	// RowsPerDay is the rows it grows a day (0 where only bytes are known:
	// the catalogue's tables, the bounded ones).
	RowsPerDay float64 `json:"rows_per_day,omitempty"`
	CapDays    float64 `json:"cap_days,omitempty"`
	Basis      string  `json:"basis"`
	// TextBytesNow is what the real text sizes add to the table now
	// (included in BytesNow; TextSizing).
	TextBytesNow float64 `json:"text_bytes_now,omitempty"`
}

// After is the table's bytes after days: now plus its growth, up to its cap.
func (t TableYear) After(days float64) float64 {
	if t.CapDays > 0 {
		days = min(days, t.CapDays)
	}
	return t.BytesNow + max(0, t.BytesPerDay)*days
}

// StorageAfter is every table's bytes after days, and the biggest first.
func StorageAfter(tables []TableYear, days float64) (total float64, byAfter []TableYear) {
	byAfter = append([]TableYear(nil), tables...)
	for _, t := range tables {
		total += t.After(days)
	}
	sort.SliceStable(byAfter, func(i, j int) bool { return byAfter[i].After(days) > byAfter[j].After(days) })
	return total, byAfter
}

// PerRow is bytes a row from a measured growth (0 when no row was added).
func PerRow(bytes, rows float64) float64 {
	if rows <= 0 {
		return 0
	}
	return bytes / rows
}

// growsWithApps are the tables whose rows come with apps: a new app adds
// what the catalogue holds an app (its record, a quarter of a developer,
// and its share of the design's keywords, rankings and markets).
var growsWithApps = map[string]bool{
	"app_registry": true, "developers": true, "crawl_keywords": true, "crawl_rankings": true,
	"market_clusters": true, "opportunity_scores": true,
	// A keyword's partition row, and the segments its keywords form.
	"segment_keywords": true, "segments": true,
	// An app's search terms (its name, developer and subtitle: up to three
	// rows, written when the app is; a refresh that keeps them writes none).
	"app_search_terms": true,
}

// dailyPassTables grow only in the daily segments full pass (a live
// segment's day, a split or merge): the bench's runs of it fall in one
// day, so their growth over the run is a day's growth.
var dailyPassTables = map[string]bool{"segment_snapshots": true, "segment_lineage": true}

// boundedTables hold a row per fixed thing (a top cluster's app, a task, a
// category, a counter): their size now is their size.
var boundedTables = map[string]bool{
	"review_fetches": true, "sweep_cursors": true, "pipeline_counters": true, "category_scans": true,
	"chart_positions": true, "analyst_status": true, "fact_totals": true, "sqlite_sequence": true,
	// The top segments' sets (their own bounds) and the marks the next run clears.
	"segment_focus_apps": true, "segment_focus_keywords": true, "segment_dirty": true,
}

// StorageInputs is what the projection reads: the tables as built, what
// the bench measured, and the paces.
type StorageInputs struct {
	Apps, Enriched float64
	Now            Sizes // after the catalogue was built
	// Run is each table's growth over the bench's run of MeasuredDays
	// (wall time): the ledger's facts, dead letters, the analyst's rows.
	Run          Sizes
	MeasuredDays float64
	// Sample is historyRowBytes' growth of the history tables.
	Sample Sizes
	// Reviews is app_reviews' growth over the reviews-refresh runs.
	Reviews       TableSize
	NewAppsPerDay float64
	// RefreshTiers: the enriched apps by refresh tier; KeywordTiers: the
	// keywords by re-search interval.
	RefreshTiers, KeywordTiers []TierApps
	ResultsPerSearch           float64
	ReviewFetchesPerDay        float64
	ChartRowsPerDay            float64
	// Retention in days of each pruned table (history-prune, facts-prune;
	// ReviewsKeptDays: the days of full pages an app's kept reviews hold).
	RatingDays, ChangeDays, RankDays, FactsDays, MinutesDays, ReviewsKeptDays float64
	// SnapshotDays is how long the full pass keeps a segment's snapshots
	// (segments.SnapshotRetention).
	SnapshotDays float64
	// Rates are the change rates and reviews a fetch the history tables
	// grow at (DefaultRates, or scaled for the sensitivity table).
	Rates Rates
	// Text bills app_registry's and app_version_history's rows at real
	// text sizes (the zero value: as simulated).
	Text TextSizing
}

// ProjectTables is each table's projection (see docs/scale.md, "Storage").
func ProjectTables(in StorageInputs) []TableYear {
	perRow := func(table string) float64 { return PerRow(in.Sample[table].Bytes, in.Sample[table].Rows) }
	r := in.Rates
	history := func(table string, ratePerDay, capDays float64, basis string) TableYear {
		rows := ChangeRowsPerDay(in.RefreshTiers, ratePerDay) + FirstChangeRows(in.Enriched, ratePerDay, storageDays)/storageDays
		return TableYear{Table: table, RowsPerDay: rows, BytesPerDay: rows * perRow(table), CapDays: capDays, Basis: basis}
	}
	rankRows := ResultRankRowsPerDay(in.KeywordTiers, in.ResultsPerSearch, r.ChangesPerAppDay)
	reviewRows := in.ReviewFetchesPerDay * r.NewReviewsPerFetch
	model := map[string]TableYear{
		"app_snapshots": history("app_snapshots", r.ChangesPerAppDay, in.RatingDays,
			"rating changes the refreshes see, at the assumed change rate"),
		"app_version_history": history("app_version_history", r.ChangesPerAppDay*r.VersionShare, in.ChangeDays,
			"new versions the refreshes see, at the assumed change rate, their notes at real text sizes"),
		"app_price_history": history("app_price_history", r.PricePerAppDay, in.ChangeDays,
			"price changes the refreshes see, at the assumed rate"),
		"keyword_rank_history": {Table: "keyword_rank_history", CapDays: in.RankDays, Basis: "rank moves the re-searches see",
			RowsPerDay: rankRows, BytesPerDay: rankRows * perRow("keyword_rank_history")},
		"chart_position_history": {Table: "chart_position_history", CapDays: in.RankDays, Basis: "every category scan's chart rows",
			RowsPerDay: in.ChartRowsPerDay, BytesPerDay: in.ChartRowsPerDay * perRow("chart_position_history")},
		"app_reviews": {Table: "app_reviews", Basis: "new reviews of the top clusters' apps, a full page a fetch, up to the reviews an app keeps",
			RowsPerDay: reviewRows, BytesPerDay: reviewRows * PerRow(in.Reviews.Bytes, in.Reviews.Rows), CapDays: in.ReviewsKeptDays},
	}
	if v, ok := model["app_version_history"]; ok {
		v.BytesPerDay = v.RowsPerDay * (perRow("app_version_history") + in.Text.VersionRowDelta())
		model["app_version_history"] = v
	}
	var out []TableYear
	for table, now := range in.Now {
		var text float64
		if table == "app_registry" {
			text = in.Enriched * in.Text.RegistryRowDelta()
		}
		t, ok := model[table]
		switch {
		case ok:
		case growsWithApps[table]:
			t = TableYear{BytesPerDay: (now.Bytes + text) / max(1, in.Apps) * in.NewAppsPerDay, Basis: "a new app: the catalogue's bytes an app"}
			if text != 0 {
				t.Basis += ", its texts at real sizes"
			}
		case boundedTables[table]:
			t = TableYear{Basis: "bounded: a row per fixed thing"}
		case dailyPassTables[table]:
			t = TableYear{BytesPerDay: max(0, in.Run[table].Bytes), RowsPerDay: max(0, in.Run[table].Rows),
				Basis: "the daily segments pass's growth in the bench: a day's"}
			if table == "segment_snapshots" {
				t.CapDays = in.SnapshotDays
			}
		default:
			t = TableYear{BytesPerDay: max(0, in.Run[table].Bytes) / max(1e-9, in.MeasuredDays), Basis: "the bench's growth over its wall time",
				RowsPerDay: max(0, in.Run[table].Rows) / max(1e-9, in.MeasuredDays)}
			switch table {
			case "facts":
				t.CapDays = in.FactsDays
			case "fact_minutes":
				t.CapDays = in.MinutesDays
			}
		}
		t.Table, t.BytesNow, t.RowsNow, t.TextBytesNow = table, now.Bytes+text, now.Rows, text
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out
}
