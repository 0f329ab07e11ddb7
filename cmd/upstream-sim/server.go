package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"storecrawl/internal/upstreammodel"
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
// passed the limiter and was answered (NotFound is the subset answered "no
// such app": for a lookup of several ids, one that left any id out);
// Refused counts limiter refusals; ServerErrors and TimedOut the admitted
// requests that failed (error_pct, timeout_pct).
type RouteStats struct {
	Served       int64 `json:"served"`
	Refused      int64 `json:"refused"`
	NotFound     int64 `json:"not_found"`
	ServerErrors int64 `json:"server_errors"`
	TimedOut     int64 `json:"timed_out"`
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
	if route == routePage || route == routeSitemap {
		return hostStore
	}
	return hostAPI
}

// Options configures a Server; zero values pick production defaults.
type Options struct {
	Config Config
	Seed   uint64           // seeds the upstream model's draws (latency, outage, errors)
	Now    func() time.Time // injectable clock; nil = time.Now
	Logger *slog.Logger     // notable events; nil = discard
	// ClockOffset starts the virtual clock this far from Now (living.go).
	ClockOffset time.Duration
}

// Server is the simulated App Store upstream. All mutable state is guarded
// by mu; the catalogue is immutable.
type Server struct {
	cat   *Catalogue
	clock *simClock // the virtual clock (living.go); now reads it
	now   func() time.Time
	log   *slog.Logger
	mux   *http.ServeMux
	// sitemaps serves the sitemap files (sitemap.go).
	sitemaps http.HandlerFunc

	mu     sync.Mutex
	bucket bucket // the API host's limit, and the store host's unless it has its own
	// storeBucket is the store host's own limit (Config.StoreRatePerMin).
	storeBucket bucket
	// chartBucket is the chart feeds' own limit (Config.ChartRatePerMin).
	chartBucket bucket
	draws       *upstreammodel.Draws
	byRoute     map[string]*RouteStats
	hints       hintIndex // the catalogue's search terms (hints.go)
	throttling  bool      // last limiter decision was a refusal (for sparse logs)
}

// NewServer builds the handler; opts.Config must be valid.
func NewServer(cat *Catalogue, opts Options) *Server {
	s := &Server{
		cat:     cat,
		now:     opts.Now,
		log:     opts.Logger,
		draws:   upstreammodel.NewDraws(opts.Seed),
		byRoute: make(map[string]*RouteStats),
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.clock = &simClock{base: s.now, off: opts.ClockOffset}
	s.now = s.clock.Now
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
	mux.HandleFunc("GET "+hintsPath, s.hintsRoute())
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
	mux.HandleFunc("GET /__sim/clock", s.handleClock)
	mux.HandleFunc("POST /__sim/clock", s.handleClock)
	s.mux = mux
	s.sitemaps = s.sitemapRoute()
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The sitemaps are root files of the store host (sitemap.go); a
	// pattern can match no part of a segment, so they are routed here.
	if r.Method == http.MethodGet && isSitemapName(strings.TrimPrefix(r.URL.Path, "/")) {
		s.sitemaps(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// handlerFunc serves an upstream route and reports whether the answer was
// "no such app", for the not_found counters.
type handlerFunc func(w http.ResponseWriter, r *http.Request) (notFound bool)

// limited charges one token per request, sleeps the simulated latency and
// either refuses, fails (a 503, a timeout) or serves.
func (s *Server) limited(route string, h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.down(route) {
			drop(w) // no HTTP answer at all: the client sees a connection error
			return
		}
		a := s.admit(route)
		sleep(r.Context(), a.latency)
		if a.headers {
			w.Header().Set("RateLimit-Remaining", strconv.Itoa(a.remaining))
			w.Header().Set("RateLimit-Reset", strconv.Itoa(a.resetS))
		}
		switch a.kind {
		case upstreammodel.Refused:
			if a.retryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int(a.retryAfter/time.Second)))
			}
			http.Error(w, http.StatusText(a.status), a.status)
			return
		case upstreammodel.ServerError:
			http.Error(w, http.StatusText(a.status), a.status)
			return
		case upstreammodel.Timeout:
			drop(w) // held for the client's timeout, then no answer
			return
		}
		if h(w, r) {
			s.mu.Lock()
			s.byRoute[route].NotFound++
			s.mu.Unlock()
		}
	}
}

// drop closes the request's connection without an answer.
func drop(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
		return
	}
	panic(http.ErrAbortHandler) // HTTP/2: abort the stream instead
}

// down reports whether this request falls in the configured outage.
func (s *Server) down(route string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	pct := s.bucket.cfg.OutagePct
	if pct <= 0 || !s.draws.Chance(float64(pct)/100) {
		return false
	}
	if s.byRoute[route] == nil {
		s.byRoute[route] = &RouteStats{}
	}
	s.byRoute[route].Dropped++
	return true
}

// admission is the model's answer to one limited request.
type admission struct {
	kind       upstreammodel.Kind // OK: serve it (the handler decides not-found)
	status     int                // the refusal's or the error's
	latency    time.Duration
	retryAfter time.Duration
	headers    bool // with RateLimit-Remaining and RateLimit-Reset
	remaining  int
	resetS     int
}

// admit runs a request through the upstream model in the order
// durable/pacing/sim does: the latency is drawn, the host's bucket
// decides, an admitted request's fate is drawn.
func (s *Server) admit(route string) admission {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	b := &s.bucket
	if _, own := s.bucket.cfg.storeConfig(); own && hostOf(route) == hostStore {
		b = &s.storeBucket
	}
	if _, own := s.bucket.cfg.chartConfig(); own && route == routeCharts {
		b = &s.chartBucket
	}
	cfg := b.cfg
	a := admission{latency: s.draws.Latency(cfg.LatencyMS, cfg.LatencyJitterMS), kind: upstreammodel.Refused}
	v := b.take(now)
	if v.Admitted {
		a.kind = s.draws.Fate(float64(cfg.TimeoutPct)/100, float64(cfg.ErrorPct)/100)
	}
	a.status, a.retryAfter = upstreammodel.Status(a.kind, cfg.OnExceed), v.RetryAfter
	if a.kind == upstreammodel.Timeout {
		a.latency = upstreammodel.RequestTimeout
	}
	if cfg.RatelimitHeaders == 1 {
		a.headers = true
		a.remaining, a.resetS = b.headers(now)
	}
	rs := s.byRoute[route]
	switch a.kind {
	case upstreammodel.Refused:
		rs.Refused++
	case upstreammodel.ServerError:
		rs.ServerErrors++
	case upstreammodel.Timeout:
		rs.TimedOut++
	default:
		rs.Served++
	}
	ok := v.Admitted
	// Log transitions only, so a hostile phase is a handful of lines.
	switch {
	case v.BlockStarted:
		s.log.Info("block_started", "route", route, "status", cfg.OnExceed,
			"block_s", cfg.BlockS, "blocked_until_ms", b.blockedUntilMS(now))
	case !ok && !s.throttling:
		s.log.Info("throttling_started", "route", route, "status", cfg.OnExceed)
	case ok && s.throttling:
		s.log.Info("throttling_ended", "route", route)
	}
	s.throttling = !ok
	return a
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
	if ferr == nil && (s.cat.lazy != nil || s.cat.living != nil) && drift.ChangesPerHour > 0 {
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
	charts, _ := cfg.chartConfig()
	s.chartBucket.reset(charts, s.now())
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
		h.ServerErrors, h.TimedOut = h.ServerErrors+rs.ServerErrors, h.TimedOut+rs.TimedOut
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
