package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/ledgerdb"
	"storecrawl/worker/logx"
)

// history serves /v1/history?target=&since=&bucket_s=.
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	q, field, msg := ledgerdb.ParseHistoryQuery(r.URL.Query().Get, time.Now())
	if field != "" {
		writeError(w, http.StatusBadRequest, field, msg)
		return
	}
	h, err := s.Ledger.History(r.Context(), q)
	if err != nil {
		logx.Err("history.read_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// pipelineCounts serves /v1/pipeline/counts from trigger-kept counters,
// with the latest daily data-quality check (quality; null before one ran).
func (s *Server) pipelineCounts(w http.ResponseWriter, r *http.Request) {
	c, err := s.Ledger.PipelineCounts(r.Context())
	if err != nil {
		logx.Err("pipeline_counts.read_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
		return
	}
	out := map[string]any{"as_of": time.Now().UTC().Format(time.RFC3339)}
	for _, k := range []string{"apps_known", "apps_enriched", "apps_pending", "clusters", "opportunities"} {
		out[k] = c[k]
	}
	out["quality"] = s.latestQuality(r)
	writeJSON(w, http.StatusOK, out)
}

// latestQuality is the daily data-quality check's latest result, or nil
// (none yet, or its read failed: the counts are served without it).
func (s *Server) latestQuality(r *http.Request) json.RawMessage {
	if s.Quality == nil {
		return nil
	}
	q, err := s.Quality.LatestQuality(r.Context())
	if err != nil {
		logx.Event("pipeline_counts.quality_read_failed", map[string]any{"level": logx.Warn, "error": err.Error()})
		return nil
	}
	return q
}

// ledgerStatus serves /v1/ledger?after=&limit=: a page of writers
// reconciled with D1 now (the configured ones first, on the first page;
// at most history.ReconcileBatch others, so one request makes a bounded
// number of Durable Object calls), next_after to ask for the next page
// (null at the end), the mismatch record (open, and repaired or cleared,
// newest first; history.MismatchListCap each) and this isolate's
// consumer counts.
func (s *Server) ledgerStatus(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, limit := q.Get("after"), ledgerdb.ReconcileBatch
	if len(after) > ledger.MaxNameLen {
		writeError(w, http.StatusBadRequest, "after", fmt.Sprintf("after must be a writer's source (at most %d bytes)", ledger.MaxNameLen))
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > ledgerdb.ReconcileBatch {
			writeError(w, http.StatusBadRequest, "limit", fmt.Sprintf("limit must be an integer from 1 to %d", ledgerdb.ReconcileBatch))
			return
		}
		limit = n
	}
	p, err := s.Ledger.LedgerPage(r.Context(), after, limit)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "ledger writers unavailable")
		return
	}
	if p.Writers == nil {
		p.Writers = []ledger.Result{}
	}
	m, err := s.Ledger.Mismatches(r.Context())
	if err != nil {
		logx.Err("ledger.mismatches_read_failed", err, nil)
		writeError(w, http.StatusServiceUnavailable, "", "ledger mismatches unavailable")
		return
	}
	if m.Open == nil {
		m.Open = []ledger.Mismatch{}
	}
	if m.Repaired == nil {
		m.Repaired = []ledger.Mismatch{}
	}
	next := any(nil)
	if p.Next != "" {
		next = p.Next
	}
	writeJSON(w, http.StatusOK, map[string]any{"writers": p.Writers, "next_after": next, "limit": limit, "mismatches": m, "consumer": s.Ledger.ConsumerStats()})
}
