// Package api is the Worker's HTTP API: routing, auth, validation (a bad
// request gets a 400 naming the field and changes nothing) and the operator
// dashboard. What it reads and calls sits behind small interfaces the
// feature packages and the wasm wiring satisfy (deps.go), so every route
// runs natively under go test.
//
// router.go is the route table; handlers sit with their concern
// (enrichment.go, limiter.go, markets.go, apps.go, keywords.go, ledger.go,
// system.go, analyst.go, alerts.go, dashboard.go, seeds.go, testroutes.go), the checks and helpers they
// share in auth.go, control.go (calls to the Durable Objects), body.go
// and paging.go.
package api

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"storecrawl/durable/scheduler"
	"storecrawl/worker/logx"
)

// Server routes the Worker's HTTP API.
type Server struct {
	Controller ControllerCaller
	// CostGuard is the cost guard's decision, shown as cost_guard in GET
	// /v1/enrichment/status (nil: not shown).
	CostGuard CostGuard
	// Settings are the settings in force as the one loader read them
	// (secrets as set or unset), shown as settings in GET
	// /v1/enrichment/status (nil: not shown).
	Settings  func() map[string]string
	Limiter   LimiterCaller
	Scheduler SchedulerCaller
	// SchedulerTasks is the scheduler's registry, checked before a control
	// call goes out (nil: the scheduler alone checks task names).
	SchedulerTasks []scheduler.Task
	Charts         ChartReader
	Markets        MarketReader
	Segments       SegmentReader
	Datasets       DatasetReader
	Apps           AppReader
	Reviews        ReviewReader
	AppHistory     AppHistoryReader
	Cron           CronReader
	Ledger         LedgerReader
	// Quality is the daily data-quality check's latest result (nil: none
	// bound; /v1/pipeline/counts then says quality null).
	Quality QualityReader
	Dead    DeadLetterReader
	Reparse Reparser
	Failed  FailedRequeuer
	// Seeds queues operator seeds (POST /v1/crawl/seeds); nil answers 503.
	Seeds Seeder
	// TestEvents, when set, mounts the test-only POST /__test/events, which
	// puts a raw message on the EVENTS queue (e.g. one no handler accepts, to
	// watch it reach the dead-letter queue). The wiring sets it only under
	// the TEST_ROUTES var (never set in wrangler.jsonc): without it the route
	// does not exist.
	TestEvents EventSender
	// Replay and Requeue replay dead letters: Requeue is where their
	// bodies go back to (the EVENTS queue).
	Replay  DeadReplayer
	Requeue EventSender
	// TestFaults, when set (TEST_ROUTES), mounts POST /__test/faults.
	TestFaults FactFaults
	// Analyst is the LLM analyst (GET /v1/opportunities/{id}/brief,
	// /v1/analyst/status, POST /v1/analyst/run); nil answers 503.
	Analyst AnalystService
	// Keywords reads a term's metrics (GET /v1/keywords/{term}); nil
	// answers 503. Country is the storefront the deployment crawls (the
	// route's default ?country=).
	Keywords KeywordReader
	Country  string
	// MarketDetail reads one market (GET /v1/clusters/{id}); Search finds
	// apps and keywords (GET /v1/search). nil answers 503.
	MarketDetail MarketDetailReader
	Search       SearchReader
	// ReadToken returns READ_TOKEN: when not empty, the explorer's pages
	// and the read routes they call need it (readGate).
	ReadToken func() string
	// Alerts keeps watches and alert rules and lists alerts (nil: the
	// routes answer 503).
	Alerts AlertService
	// MCP serves POST /mcp, the Model Context Protocol endpoint for
	// agents (worker/mcp, over these same readers); nil answers 503.
	MCP http.Handler
	// RetryFailedBatch is what one Failed.RetryFailed call requeues at most.
	RetryFailedBatch int
	// AdminToken returns the configured token; empty means mutating calls are refused.
	AdminToken func() string
	// ClientToken returns the limiter client token (LIMITER_CLIENT_TOKEN):
	// POST /v1/limiter/acquire and the status of client keys need it; empty
	// refuses them all.
	ClientToken func() string

	// instanceID names this Go instance (drawn on the first /health, not
	// in the cold start).
	instanceID func() string
	started    time.Time
	served     atomic.Int64
	// mux is the router, built on the first request rather than in the
	// Worker's cold start (registering the routes is init work a Go
	// instance started for a Durable Object call never needs; the cold
	// start's initialisers are in docs/measurements.md, printed by go run
	// ./cmd/bench -only-coldstart).
	mux func() *routeMux
}

// routeMux is the router, keeping the patterns it was given in order, so
// the route table can be held against docs/api.md.
type routeMux struct {
	*http.ServeMux
	patterns []string
}

// HandleFunc registers a route ("METHOD /path").
func (m *routeMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.HandleFunc(pattern, h)
}

// Routes lists the registered routes as "METHOD /path" patterns, in the
// order they were registered (the test-only ones only where mounted).
func (s *Server) Routes() []string {
	return append([]string(nil), s.mux().patterns...)
}

// NewServer makes the server. One Server lives as long as its Go instance,
// so /health can show whether instances are being reused.
func NewServer(s *Server) *Server {
	s.instanceID = sync.OnceValue(uuid.NewString)
	s.started = time.Now()
	s.mux = sync.OnceValue(s.routes)
	return s
}

// routes builds the router.
func (s *Server) routes() *routeMux {
	mux := &routeMux{ServeMux: http.NewServeMux()}
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /v1/dashboard", s.dashboard)
	mux.HandleFunc("GET /v1/enrichment/status", s.enrichmentStatus)
	mux.HandleFunc("GET /v1/enrichment/pulse", s.pulse)
	for _, action := range []string{"start", "stop", "reset", "tune", "resume-pages"} {
		mux.HandleFunc("POST /v1/enrichment/"+action, s.requireAdmin(s.forward("/"+action)))
	}
	mux.HandleFunc("POST /v1/enrichment/reparse", s.requireAdmin(s.startReparse))
	mux.HandleFunc("GET /v1/enrichment/reparse", s.reparseStatus)
	mux.HandleFunc("POST /v1/enrichment/retry-failed", s.requireAdmin(s.retryFailed))
	mux.HandleFunc("POST /v1/crawl/seeds", s.requireAdmin(s.crawlSeeds))
	mux.HandleFunc("POST /v1/limiter/acquire", s.limiterAcquire)
	mux.HandleFunc("GET /v1/limiter/status", s.limiterStatus)
	mux.HandleFunc("GET /v1/scheduler/status", s.schedulerCall("/status"))
	// run-now is the older name of run.
	for _, action := range []string{"pause", "resume", "run", "run-now"} {
		mux.HandleFunc("POST /v1/scheduler/"+action, s.requireAdmin(s.schedulerCall("/"+action)))
	}
	read := s.requireRead
	mux.HandleFunc("GET /v1/charts", read(s.chart))
	mux.HandleFunc("GET /v1/clusters", read(s.markets(false)))
	mux.HandleFunc("GET /v1/opportunities", read(s.markets(true)))
	mux.HandleFunc("GET /v1/clusters/{id}", read(s.market))
	mux.HandleFunc("GET /v1/search", read(s.search))
	mux.HandleFunc("GET /v1/apps/{id}", read(s.app))
	mux.HandleFunc("GET /v1/apps/{id}/reviews", read(s.appReviews))
	mux.HandleFunc("GET /v1/clusters/{id}/themes", read(s.clusterThemes))
	mux.HandleFunc("GET /v1/apps/{id}/history", read(s.appHistory))
	mux.HandleFunc("GET /v1/keywords/{term}", read(s.keyword))
	mux.HandleFunc("POST /mcp", read(s.mcp))
	mux.HandleFunc("GET /v1/segments", read(s.segmentList))
	mux.HandleFunc("GET /v1/segments/{id}", read(s.segment))
	mux.HandleFunc("GET /v1/datasets", read(s.datasetList))
	mux.HandleFunc("GET /v1/datasets/{date}/{file}", read(s.datasetFile))
	s.mountAnalyst(mux)
	s.mountExplorer(mux)
	s.mountAlerts(mux)
	mux.HandleFunc("GET /v1/system/cron", s.cronRuns)
	mux.HandleFunc("GET /v1/history", s.history)
	mux.HandleFunc("GET /v1/pipeline/counts", s.pipelineCounts)
	mux.HandleFunc("GET /v1/ledger", s.ledgerStatus)
	mux.HandleFunc("GET /v1/system/dead-letters", s.deadLetters)
	mux.HandleFunc("POST /v1/system/dead-letters/replay", s.requireAdmin(s.replayDeadLetters))
	if s.TestEvents != nil {
		mux.HandleFunc("POST /__test/events", s.requireAdmin(s.injectEvent))
	}
	if s.TestFaults != nil {
		mux.HandleFunc("POST /__test/faults", s.requireAdmin(s.setFaults))
	}
	// No catch-all "/" route: it would shadow ServeMux's 405 for a known
	// path under a wrong method. ServeHTTP answers both in JSON (unrouted).
	return mux
}

// ServeHTTP answers a request; a panic becomes a logged 500, never a dead instance.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.served.Add(1)
	// Deferred first, so it runs last: after a panic's 500 too.
	defer finishBody(r.Body)
	defer func() {
		if p := recover(); p != nil {
			logx.Event("http.panic", map[string]any{"level": logx.Error, "path": r.URL.Path, "panic": strings.TrimSpace(toString(p))})
			writeError(w, http.StatusInternalServerError, "", "internal error")
		}
	}()
	mux := s.mux()
	if h, pattern := mux.Handler(r); pattern == "" {
		unrouted(w, r, h)
		return
	}
	mux.ServeHTTP(w, r)
}

// unrouted answers a request no route takes, in JSON: a known path under
// a method it does not serve is a 405 with the Allow header ServeMux
// computes, naming the method; anything else a 404 naming the path.
func unrouted(w http.ResponseWriter, r *http.Request, muxAnswer http.Handler) {
	probe := &statusProbe{header: http.Header{}}
	muxAnswer.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		allow := probe.header.Get("Allow")
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method", "method "+r.Method+" is not allowed on "+r.URL.Path+" (allowed: "+allow+")")
		return
	}
	writeError(w, http.StatusNotFound, "path", "no route for "+r.Method+" "+r.URL.Path)
}

// statusProbe keeps the status and headers a handler answers, not its body.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header { return p.header }
func (p *statusProbe) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}
func (p *statusProbe) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return len(b), nil
}

// mcp hands POST /mcp to the MCP server: open like the read routes (it
// only reads). A GET is the router's 405: no SSE stream is offered.
func (s *Server) mcp(w http.ResponseWriter, r *http.Request) {
	if s.MCP == nil {
		writeError(w, http.StatusServiceUnavailable, "", "the MCP endpoint is not available")
		return
	}
	s.MCP.ServeHTTP(w, r)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"ok":                  true,
		"service":             "storecrawl",
		"instance_id":         s.instanceID(),
		"instance_started_at": s.started.UTC().Format(time.RFC3339Nano),
		"requests_served":     s.served.Load(),
	})
}
