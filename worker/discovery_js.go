//go:build js && wasm

package worker

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/syumai/workers/cloudflare"

	"storecrawl/worker/appstore"
)

func cutoff(now time.Time, age time.Duration) string {
	return now.Add(-age).UTC().Format("2006-01-02T15:04:05.000Z")
}

// exists runs one LIMIT 1 check.
func exists(ctx context.Context, db *sql.DB, q string, args ...any) (bool, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	return rows.Next(), rows.Err()
}

// Gaps runs the existence checks (one row read each at most) in one
// parallel round.
func (p Platform) Gaps(ctx context.Context, now time.Time) (Gaps, error) {
	db, err := p.db()
	if err != nil {
		return Gaps{}, err
	}
	type check struct {
		tier string
		ok   bool
		err  error
	}
	ch := make(chan check, len(Tiers)+1)
	for _, t := range Tiers {
		go func(t Tier) {
			ok, err := exists(ctx, db, dueTierSQL, t.Name, cutoff(now, t.Rescan))
			ch <- check{t.Name, ok, err}
		}(t)
	}
	go func() {
		ok, err := exists(ctx, db, pendingKeywordSQL, 1)
		ch <- check{"", ok, err}
	}()
	g := Gaps{Tiers: map[string]bool{}}
	for range len(Tiers) + 1 {
		c := <-ch
		if c.err != nil {
			return Gaps{}, c.err
		}
		if c.tier == "" {
			g.PendingKeywords = c.ok
		} else {
			g.Tiers[c.tier] = c.ok
		}
	}
	return g, nil
}

func (p Platform) PendingKeywords(ctx context.Context, n int) ([]string, error) {
	db, err := p.db()
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, pendingKeywordSQL, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

func (p Platform) SaveRankings(_ context.Context, keyword string, apps []appstore.App, now time.Time) error {
	return p.exec(RankingStatements(keyword, apps, now))
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
