//go:build js && wasm

package worker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/syumai/workers/cloudflare"

	"storecrawl/worker/appstore"
)

func cutoff(now time.Time, age time.Duration) string {
	return now.Add(-age).UTC().Format("2006-01-02T15:04:05.000Z")
}

// Gaps runs the existence checks (one row read each at most) in one
// parallel round.
func (p Platform) Gaps(ctx context.Context, now time.Time) (Gaps, error) {
	type check struct {
		name string // a tier, "keywords" or "fill"
		ok   bool
		err  error
	}
	// The tier checks, the pending-keyword check and the ranking-fill check.
	checks := len(Tiers) + 2
	ch := make(chan check, checks)
	for _, t := range Tiers {
		go func(t Tier) {
			rows, err := queryAll(ctx, dueTierSQL, t.Name, cutoff(now, t.Rescan))
			ch <- check{t.Name, len(rows) > 0, err}
		}(t)
	}
	go func() {
		rows, err := queryAll(ctx, pendingKeywordSQL, 1)
		ch <- check{"keywords", len(rows) > 0, err}
	}()
	go func() {
		rows, err := queryAll(ctx, fillDueSQL, cutoff(now, RankingRefreshAge))
		ch <- check{"fill", len(rows) > 0, err}
	}()
	g := Gaps{Tiers: map[string]bool{}}
	var firstErr error
	for range checks {
		c := <-ch
		if c.err != nil && firstErr == nil {
			firstErr = c.err
		}
		switch c.name {
		case "keywords":
			g.PendingKeywords = c.ok
		case "fill":
			g.RankingFill = c.ok
		default:
			g.Tiers[c.name] = c.ok
		}
	}
	return g, firstErr
}

func (p Platform) PendingKeywords(ctx context.Context, n int) ([]string, error) {
	rows, err := queryAll(ctx, pendingKeywordSQL, n)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Get("keyword").String()
	}
	return out, nil
}

func (p Platform) SaveRankings(ctx context.Context, keyword string, apps []appstore.App, now time.Time) error {
	return p.execCtx(ctx, RankingStatements(keyword, apps, now))
}

func (p Platform) NextCategory(ctx context.Context, tier string, now time.Time) (int, string, error) {
	rescan := Tiers[0].Rescan
	for _, t := range Tiers {
		if t.Name == tier {
			rescan = t.Rescan
		}
	}
	rows, err := queryAll(ctx, nextCategorySQL, tier, cutoff(now, rescan))
	if err != nil {
		return 0, "", err
	}
	if len(rows) == 0 {
		return 0, "", fmt.Errorf("no %s category due", tier)
	}
	return rows[0].Get("genre_id").Int(), rows[0].Get("name").String(), nil
}

func (p Platform) SaveScan(ctx context.Context, genreID int, country string, charts map[string][]appstore.ChartEntry, now time.Time) (int, error) {
	stmts := ScanStatements(genreID, country, charts, now)
	apps := 0
	for _, s := range stmts {
		if strings.HasPrefix(s.SQL, "INSERT INTO app_registry") {
			apps++
		}
	}
	return apps, p.execCtx(ctx, stmts)
}

func (p Platform) Crawl(ctx context.Context) CrawlResult {
	country := cloudflare.Getenv("UPSTREAM_COUNTRY")
	if country == "" {
		country = "us"
	}
	now := time.Now()
	res := CrawlCycle(ctx, p, catalogue().Get, strings.TrimRight(cloudflare.Getenv("UPSTREAM_API_BASE"), "/"), country, rand.Float64(), now)
	// Rankings changed: the consumer re-clusters those keywords.
	for i := 0; i < len(res.Keywords); i += MaxEventKeys {
		ev := QueueEvent{Type: EventRankingsUpdated, Keywords: res.Keywords[i:min(i+MaxEventKeys, len(res.Keywords))], At: now.UTC().Format(time.RFC3339)}
		if err := p.Emit(ctx, ev); err != nil {
			res.Error = strings.TrimPrefix(res.Error+"; emit rankings-updated: "+err.Error(), "; ")
		}
	}
	return res
}

func (p Platform) SaveDevelopers(ctx context.Context, developers map[int64]string, now time.Time) error {
	return p.execCtx(ctx, DeveloperStatements(developers, now))
}

func (p Platform) FillCandidates(ctx context.Context, n int, now time.Time) ([]FillApp, error) {
	rows, err := queryAll(ctx, fillCandidatesSQL, cutoff(now, RankingRefreshAge), n)
	if err != nil {
		return nil, err
	}
	out := make([]FillApp, len(rows))
	for i, r := range rows {
		out[i] = FillApp{TrackID: int64(r.Get("track_id").Float()), Name: r.Get("name").String(), Subtitle: r.Get("subtitle").String()}
	}
	return out, nil
}

// KeywordsSearchedAt reads the keywords by primary key, in chunks of
// MaxEventKeys bound parameters.
func (p Platform) KeywordsSearchedAt(ctx context.Context, kws []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for i := 0; i < len(kws); i += MaxEventKeys {
		chunk := kws[i:min(i+MaxEventKeys, len(kws))]
		args := make([]any, len(chunk))
		for j, k := range chunk {
			args[j] = k
		}
		rows, err := queryAll(ctx, keywordsSearchedSQL(len(chunk)), args...)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			var t time.Time
			if s := r.Get("searched_at").String(); s != "" {
				if t, err = time.Parse("2006-01-02T15:04:05.000Z", s); err != nil {
					// Unreadable: treat as stale, so it is searched again and rewritten.
					t = time.Unix(0, 0)
				}
			}
			out[r.Get("keyword").String()] = t
		}
	}
	return out, nil
}

func (p Platform) SaveFillRankings(ctx context.Context, keyword string, apps []appstore.App, now time.Time) error {
	return p.execCtx(ctx, FillRankingStatements(keyword, apps, now))
}

func (p Platform) MarkFilled(ctx context.Context, ids []int64, now time.Time) error {
	return p.execCtx(ctx, MarkFilledStatements(ids, now))
}
