//go:build js && wasm

package worker

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/syumai/workers/cloudflare"

	"storecrawl/worker/appstore"
)

// dueTierSQL is one existence check: served by idx_category_scans_due, it
// reads at most one row.
const dueTierSQL = `SELECT 1 FROM category_scans WHERE tier = ? AND (last_scanned_at IS NULL OR last_scanned_at < ?) LIMIT 1`

// nextCategorySQL is the most overdue category of a tier (NULLs, never
// scanned, sort first), also from idx_category_scans_due.
const nextCategorySQL = `SELECT genre_id, name FROM category_scans
WHERE tier = ? AND (last_scanned_at IS NULL OR last_scanned_at < ?)
ORDER BY last_scanned_at LIMIT 1`

func cutoff(now time.Time, age time.Duration) string {
	return now.Add(-age).UTC().Format("2006-01-02T15:04:05.000Z")
}

func (p Platform) DueTiers(ctx context.Context, now time.Time) (map[string]bool, error) {
	db, err := p.db()
	if err != nil {
		return nil, err
	}
	due := map[string]bool{}
	for _, t := range Tiers {
		rows, err := db.QueryContext(ctx, dueTierSQL, t.Name, cutoff(now, t.Rescan))
		if err != nil {
			return nil, err
		}
		due[t.Name] = rows.Next()
		rows.Close()
	}
	return due, nil
}

func (p Platform) NextCategory(ctx context.Context, tier string, now time.Time) (int, string, error) {
	db, err := p.db()
	if err != nil {
		return 0, "", err
	}
	rescan := Tiers[0].Rescan
	for _, t := range Tiers {
		if t.Name == tier {
			rescan = t.Rescan
		}
	}
	var id float64
	var name string
	err = db.QueryRowContext(ctx, nextCategorySQL, tier, cutoff(now, rescan)).Scan(&id, &name)
	return int(id), name, err
}

func (p Platform) SaveScan(_ context.Context, genreID int, country string, charts map[string][]appstore.ChartEntry, now time.Time) (int, error) {
	stmts := ScanStatements(genreID, country, charts, now)
	apps := 0
	for _, s := range stmts {
		if strings.HasPrefix(s.SQL, "INSERT INTO app_registry") {
			apps++
		}
	}
	return apps, p.exec(stmts)
}

func (p Platform) Crawl(ctx context.Context) CrawlResult {
	country := cloudflare.Getenv("UPSTREAM_COUNTRY")
	if country == "" {
		country = "us"
	}
	return CrawlCycle(ctx, p, p.Fetch, strings.TrimRight(cloudflare.Getenv("UPSTREAM_API_BASE"), "/"), country, rand.Float64(), time.Now())
}
