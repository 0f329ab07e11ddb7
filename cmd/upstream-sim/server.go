package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Route names used in stats.
const (
	routeLookup = "lookup"
	routeSearch = "search"
	routePage   = "page"
	routeCharts = "charts"
)

var routeNames = []string{routeLookup, routeSearch, routePage, routeCharts}

// maxConfigBody bounds POST /__config bodies; a config object is tiny.
const maxConfigBody = 64 << 10

// RouteStats counts one route's outcomes. Served counts every request that
// passed the limiter (NotFound is the subset answered "no such app": for a
// lookup of several ids, one that left any id out);
// Refused counts limiter refusals.
type RouteStats struct {
	Served   int64 `json:"served"`
	Refused  int64 `json:"refused"`
	NotFound int64 `json:"not_found"`
	// Dropped counts requests whose connection was dropped (outage_pct).
	Dropped int64 `json:"dropped"`
}

// Stats is the GET /__stats body.
type Stats struct {
	Served   int64                 `json:"served"`
	Refused  int64                 `json:"refused"`
	NotFound int64                 `json:"not_found"`
	ByRoute  map[string]RouteStats `json:"by_route"`
	// ByHost sums the routes by the host that serves them on the real
	// site: "api" (lookup, search, charts) and "store" (page).
	ByHost         map[string]RouteStats `json:"by_host"`
	Config         Config                `json:"config"`
	BlockedUntilMS int64                 `json:"blocked_until_ms"`
	// StoreBlockedUntilMS is the store host's own block, when it has its
	// own limit (store_rate_per_min).
	StoreBlockedUntilMS int64 `json:"store_blocked_until_ms"`
}

// The real site's two hosts, and which routes each serves.
const (
	hostAPI   = "api"
	hostStore = "store"
)

func hostOf(route string) string {
	if route == routePage {
		return hostStore
	}
	return hostAPI
}

// Options configures a Server; zero values pick production defaults.
type Options struct {
	Config Config
	Seed   uint64           // seeds the latency jitter
	Now    func() time.Time // injectable clock; nil = time.Now
	Logger *slog.Logger     // notable events; nil = discard
}

// Server is the simulated App Store upstream. All mutable state is guarded
// by mu; the catalogue is immutable.
type Server struct {
	cat *Catalogue
	now func() time.Time
	log *slog.Logger
	mux *http.ServeMux

	mu     sync.Mutex
	bucket bucket // the API host's limit, and the store host's unless it has its own
	// storeBucket is the store host's own limit (Config.StoreRatePerMin).
	storeBucket bucket
	rng         *rand.Rand
	byRoute     map[string]*RouteStats
	throttling  bool // last limiter decision was a refusal (for sparse logs)
}

// NewServer builds the handler; opts.Config must be valid.
func NewServer(cat *Catalogue, opts Options) *Server {
	s := &Server{
		cat:     cat,
		now:     opts.Now,
		log:     opts.Logger,
		rng:     rand.New(rand.NewPCG(opts.Seed, opts.Seed)),
		byRoute: make(map[string]*RouteStats),
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.cat = cat.withDrift(s.now) // catalogue changes over time (drift.go)
	if s.log == nil {
		s.log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	s.resetBucketsLocked(opts.Config)
	s.resetStatsLocked()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /lookup", s.limited(routeLookup, s.handleLookup))
	mux.HandleFunc("GET /search", s.limited(routeSearch, s.handleSearch))
	mux.HandleFunc("GET /{country}/rss/{collection}/{params...}", s.limited(routeCharts, s.handleRSSChart))
	mux.HandleFunc("GET /{country}/rss/customerreviews/{params...}", s.reviewsRoute())
	// The id segment is "id<digits>"; ServeMux wildcards must be whole
	// segments, so the "id" prefix is stripped in the handler.
	mux.HandleFunc("GET /{country}/app/{slug}/{idseg}", s.limited(routePage, s.handlePage))
	// The slug is optional, as on the real store: /us/app/id123.
	mux.HandleFunc("GET /{country}/app/{idseg}", s.limited(routePage, s.handlePage))
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	mux.HandleFunc("GET /__stats", s.handleStats)
	mux.HandleFunc("POST /__stats/reset", s.handleStatsReset)
	mux.HandleFunc("POST /__config", s.handleConfig)
	mux.HandleFunc("GET /__catalogue", s.handleCatalogue)
	s.mux = mux
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// handlerFunc serves an upstream route and reports whether the answer was
// "no such app", for the not_found counters.
type handlerFunc func(w http.ResponseWriter, r *http.Request) (notFound bool)

// limited charges one token per request, sleeps the simulated latency and
// either refuses or serves.
func (s *Server) limited(route string, h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.down(route) {
			// No HTTP answer at all: the client sees a connection error.
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
				return
			}
			panic(http.ErrAbortHandler) // HTTP/2: abort the stream instead
		}
		ok, cfg, delay := s.admit(route)
		sleep(r.Context(), delay)
		if !ok {
			if cfg.RetryAfterS > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(cfg.RetryAfterS))
			}
			http.Error(w, http.StatusText(cfg.OnExceed), cfg.OnExceed)
			return
		}
		if h(w, r) {
			s.mu.Lock()
			s.byRoute[route].NotFound++
			s.mu.Unlock()
		}
	}
}

// down reports whether this request falls in the configured outage.
func (s *Server) down(route string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	pct := s.bucket.cfg.OutagePct
	if pct <= 0 || s.rng.IntN(100) >= pct {
		return false
	}
	if s.byRoute[route] == nil {
		s.byRoute[route] = &RouteStats{}
	}
	s.byRoute[route].Dropped++
	return true
}

func (s *Server) admit(route string) (ok bool, cfg Config, delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	b := &s.bucket
	if _, own := s.bucket.cfg.storeConfig(); own && hostOf(route) == hostStore {
		b = &s.storeBucket
	}
	ok, started := b.take(now)
	cfg = b.cfg
	rs := s.byRoute[route]
	if ok {
		rs.Served++
	} else {
		rs.Refused++
	}
	// Log transitions only, so a hostile phase is a handful of lines.
	switch {
	case started:
		s.log.Info("block_started", "route", route, "status", cfg.OnExceed,
			"block_s", cfg.BlockS, "blocked_until_ms", b.blockedUntilMS(now))
	case !ok && !s.throttling:
		s.log.Info("throttling_started", "route", route, "status", cfg.OnExceed)
	case ok && s.throttling:
		s.log.Info("throttling_ended", "route", route)
	}
	s.throttling = !ok
	return ok, cfg, jitter(s.rng, cfg)
}

// jitter draws a latency uniformly from [latency-jitter, latency+jitter],
// clamped at zero.
func jitter(r *rand.Rand, cfg Config) time.Duration {
	ms := cfg.LatencyMS
	if cfg.LatencyJitterMS > 0 {
		ms += r.IntN(2*cfg.LatencyJitterMS+1) - cfg.LatencyJitterMS
	}
	return time.Duration(max(ms, 0)) * time.Millisecond
}

// sleep waits d unless the client goes away first.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	st := s.statsLocked()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleStatsReset(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.resetStatsLocked()
	st := s.statsLocked()
	s.mu.Unlock()
	s.log.Info("stats_reset")
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleConfig(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxConfigBody))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, FieldError{Msg: "unreadable or oversized body"})
		return
	}
	body, drift, driftChanged, ferr := splitDriftPatch(body, s.cat.drift.config())
	if ferr == nil && s.cat.lazy != nil && drift.ChangesPerHour > 0 {
		// Drift rewrites apps in place; a lazy catalogue keeps none to rewrite.
		ferr = &FieldError{Msg: fmt.Sprintf("catalogue drift needs -apps ≤ %d", EagerMaxApps), Field: "catalogue_changes_per_hour"}
	}
	if ferr != nil {
		writeJSON(w, http.StatusBadRequest, ferr)
		return
	}
	s.mu.Lock()
	cfg, ferr := s.bucket.cfg.Patch(body)
	if ferr == nil {
		// A config change is a fresh start: no block, full buckets.
		s.resetBucketsLocked(cfg)
		s.throttling = false
	}
	s.mu.Unlock()
	if ferr != nil {
		writeJSON(w, http.StatusBadRequest, ferr)
		return
	}
	if driftChanged {
		s.cat.drift.set(drift)
		s.log.Info("catalogue_drift_changed", "drift", drift)
	}
	s.log.Info("config_changed", "config", cfg)
	writeJSON(w, http.StatusOK, cfg)
}

// resetBucketsLocked installs cfg's limits, full and unblocked.
func (s *Server) resetBucketsLocked(cfg Config) {
	s.bucket.reset(cfg, s.now())
	store, _ := cfg.storeConfig()
	s.storeBucket.reset(store, s.now())
}

func (s *Server) resetStatsLocked() {
	for _, name := range routeNames {
		s.byRoute[name] = &RouteStats{}
	}
}

func (s *Server) statsLocked() Stats {
	st := Stats{
		ByRoute:        make(map[string]RouteStats, len(s.byRoute)),
		ByHost:         map[string]RouteStats{hostAPI: {}, hostStore: {}},
		Config:         s.bucket.cfg,
		BlockedUntilMS: s.bucket.blockedUntilMS(s.now()),
	}
	if _, own := s.bucket.cfg.storeConfig(); own {
		st.StoreBlockedUntilMS = s.storeBucket.blockedUntilMS(s.now())
	}
	for name, rs := range s.byRoute {
		st.ByRoute[name] = *rs
		h := st.ByHost[hostOf(name)]
		h.Served, h.Refused, h.NotFound, h.Dropped = h.Served+rs.Served, h.Refused+rs.Refused, h.NotFound+rs.NotFound, h.Dropped+rs.Dropped
		st.ByHost[hostOf(name)] = h
		st.Served += rs.Served
		st.Refused += rs.Refused
		st.NotFound += rs.NotFound
	}
	return st
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do
}
