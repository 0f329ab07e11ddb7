package ledgerdb

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Bounds of the history cache.
const (
	// HistoryCacheTTL bounds how stale a chart may be: a dashboard
	// refreshing every few seconds reads D1 once per TTL.
	HistoryCacheTTL = 20 * time.Second
	// maxCachedHistories bounds the cache (a bound, not an LRU: the
	// dashboard asks few distinct queries).
	maxCachedHistories = 64
)

// Service serves the reads of the ledger's D1 side: /v1/history (cached
// briefly per instance), /v1/pipeline/counts, /v1/ledger (a page of
// writers reconciled now, and this instance's consumer counts), the
// ledger-reconcile task's runs and
// /v1/system/dead-letters.
type Service struct {
	Store   Store
	Reports LedgerWriters
	// Consumer is this instance's facts consumer (HandleFacts' stats).
	Consumer *ConsumerStats
	// Now is the clock of reconciliation and of the history cache.
	Now func() time.Time
	// Bodies keeps dead letters' whole bodies (R2), for replays.
	Bodies BodyBucket

	mu    sync.Mutex
	cache map[HistoryQuery]cachedHistory
}

type cachedHistory struct {
	at time.Time
	h  History
}

// History answers q from the target's and the limiters' minutes, or from the
// cache when the same window (since truncated to the bucket) was read less
// than HistoryCacheTTL ago.
func (s *Service) History(ctx context.Context, q HistoryQuery) (History, error) {
	key := q
	key.Until = time.Time{}
	key.Since = q.Since.Truncate(q.Bucket)
	s.mu.Lock()
	if c, ok := s.cache[key]; ok && s.Now().Sub(c.at) < HistoryCacheTTL {
		s.mu.Unlock()
		return c.h, nil
	}
	s.mu.Unlock()
	first, last := q.Minutes()
	ticks, err := s.Store.TickMinutes(ctx, q.Source(), first, last)
	if err != nil {
		return History{}, err
	}
	lims, err := s.Store.LimiterTotals(ctx, first, last)
	if err != nil {
		return History{}, err
	}
	h := BuildHistory(q, ticks, lims)
	s.mu.Lock()
	if s.cache == nil || len(s.cache) > maxCachedHistories {
		s.cache = map[HistoryQuery]cachedHistory{}
	}
	s.cache[key] = cachedHistory{at: s.Now(), h: h}
	s.mu.Unlock()
	return h, nil
}

// PipelineCounts reads the dashboard's trigger-kept counts.
func (s *Service) PipelineCounts(ctx context.Context) (map[string]int64, error) {
	return s.Store.PipelineCounts(ctx)
}

// LedgerPage compares a page of ledger writers with D1 now (GET
// /v1/ledger): the configured writers on the first page (after ""), then
// up to n that D1 knows after `after`.
func (s *Service) LedgerPage(ctx context.Context, after string, n int) (Page, error) {
	return ReconcilePage(ctx, storeAndReports{s.Store, s.Reports}, after, n, after == "", s.Now)
}

// Mismatches reads the mismatch record GET /v1/ledger shows (up to
// MismatchListCap open, and as many repaired or cleared, newest first).
func (s *Service) Mismatches(ctx context.Context) (Mismatches, error) {
	return s.Store.ListMismatches(ctx, MismatchListCap)
}

// ReconcileRun is one ledger-reconcile run (ReconcileRun).
func (s *Service) ReconcileRun(ctx context.Context) RunResult {
	return ReconcileRun(ctx, storeAndReports{s.Store, s.Reports}, s.Now)
}

// storeAndReports reads D1 from the store and the writers' side from their objects.
type storeAndReports struct {
	Store
	LedgerWriters
}

// ConsumerStats snapshots this instance's facts consumer.
func (s *Service) ConsumerStats() map[string]int64 { return s.Consumer.View() }

// DeadLetters lists recorded dead letters, newest first.
func (s *Service) DeadLetters(ctx context.Context, limit int, cursor string) ([]json.RawMessage, string, error) {
	return s.Store.DeadLetters(ctx, limit, cursor)
}
