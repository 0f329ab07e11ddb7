// Package api is the Worker's HTTP API: routing, auth, validation (a bad
// request gets a 400 naming the field and changes nothing) and the operator
// dashboard. What it reads and calls sits behind small interfaces the
// feature packages and the wasm wiring satisfy, so every route runs natively
// under go test.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"storecrawl/worker/appstore"
	"storecrawl/worker/tasks"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"storecrawl/durable/enrichment"
	"storecrawl/durable/ledger"
	"storecrawl/durable/limiter"
	"storecrawl/durable/scheduler"
	pages "storecrawl/worker/enrichment"
	"storecrawl/worker/history"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/reviews"
)

// ControllerCaller forwards one control-plane call to the EnrichmentController.
type ControllerCaller interface {
	CallController(ctx context.Context, method, path string, body []byte) (status int, respBody []byte, err error)
}

// LimiterCaller forwards one call to the OmniLimiter object of a key.
type LimiterCaller interface {
	CallLimiter(ctx context.Context, key, method, path string, body []byte) (status int, respBody []byte, err error)
}

// SchedulerCaller forwards one call to the SchedulerDO.
type SchedulerCaller interface {
	CallScheduler(ctx context.Context, method, path string, body []byte) (status int, respBody []byte, err error)
}

// ChartReader reads a chart kept in KV by its key ("" when not fetched yet).
type ChartReader interface {
	Get(ctx context.Context, key string) (string, error)
}

// MarketReader lists market clusters as JSON objects, by score or by size.
type MarketReader interface {
	List(ctx context.Context, byScore bool, limit, offset int) ([]json.RawMessage, error)
}

// AppReader reads enriched records.
type AppReader interface {
	// App returns the record as JSON (false when there is none).
	App(ctx context.Context, trackID int64) (json.RawMessage, bool, error)
}

// ReviewReader reads stored customer reviews and computes a cluster's
// complaint themes (worker/reviews.D1Store).
type ReviewReader interface {
	AppReviews(ctx context.Context, appID int64, limit, offset int) ([]json.RawMessage, error)
	ClusterThemes(ctx context.Context, clusterID string) (themes []reviews.Theme, reviewCount int, found bool, err error)
}

// CronReader reads what the cron handler last did.
type CronReader interface {
	LastCronRuns(ctx context.Context) (json.RawMessage, error)
}

// LedgerReader serves the run history and the dashboard's counts.
type LedgerReader interface {
	History(ctx context.Context, q history.HistoryQuery) (history.History, error)
	PipelineCounts(ctx context.Context) (map[string]int64, error)
	// LedgerPage compares a page of ledger writers with D1 now: the
	// configured ones on the first page (after ""), then up to n that D1
	// knows after `after` (history.ReconcilePage).
	LedgerPage(ctx context.Context, after string, n int) (history.Page, error)
	ConsumerStats() map[string]int64
}

// DeadLetterReader lists recorded dead letters as JSON objects, newest first.
type DeadLetterReader interface {
	DeadLetters(ctx context.Context, limit, offset int) ([]json.RawMessage, error)
}

// Reparser starts and reports page reparses (worker/enrichment.Reparser).
type Reparser interface {
	StartReparse(ctx context.Context, scope string) (json.RawMessage, error)
	ReparseStatus(ctx context.Context) (json.RawMessage, error)
}

// FailedRequeuer puts given-up enrichment items back in the queue
// (worker/enrichment.D1Store).
type FailedRequeuer interface {
	RetryFailed(ctx context.Context, class string, olderThan, now time.Time) (int, error)
}

// DeadReplayer sends dead letters back to their queue in full
// (worker/history.Service with the EVENTS queue).
type DeadReplayer interface {
	ReplayDeadLetters(ctx context.Context, messageID string, send func(ctx context.Context, body string) error) (history.ReplayResult, error)
}

// FactFaults is the test-only switch that makes the facts consumer fail
// before it writes (a D1 outage as the consumer sees it).
type FactFaults interface {
	SetFailBeforeWrite(on bool)
}

// EventSender puts one raw message on the EVENTS queue.
type EventSender interface {
	Send(ctx context.Context, body string) error
}

// Server routes the Worker's HTTP API.
type Server struct {
	Controller ControllerCaller
	Limiter    LimiterCaller
	Scheduler  SchedulerCaller
	Charts     ChartReader
	Markets    MarketReader
	Apps       AppReader
	Reviews    ReviewReader
	AppHistory AppHistoryReader
	Cron       CronReader
	Ledger     LedgerReader
	Dead       DeadLetterReader
	Reparse    Reparser
	Failed     FailedRequeuer
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
	// Worker's cold start (registering the routes took ~5 ms there, and a Go
	// instance started for a Durable Object call never routes a request).
	mux func() *http.ServeMux
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
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /v1/dashboard", s.dashboard)
	mux.HandleFunc("GET /v1/enrichment/status", s.forward("/status"))
	for _, action := range []string{"start", "stop", "reset", "tune"} {
		mux.HandleFunc("POST /v1/enrichment/"+action, s.requireAdmin(s.forward("/"+action)))
	}
	mux.HandleFunc("POST /v1/enrichment/reparse", s.requireAdmin(s.startReparse))
	mux.HandleFunc("GET /v1/enrichment/reparse", s.reparseStatus)
	mux.HandleFunc("POST /v1/enrichment/retry-failed", s.requireAdmin(s.retryFailed))
	mux.HandleFunc("POST /v1/limiter/acquire", s.limiterAcquire)
	mux.HandleFunc("GET /v1/limiter/status", s.limiterStatus)
	mux.HandleFunc("GET /v1/scheduler/status", s.schedulerCall("/status"))
	// run-now is the older name of run.
	for _, action := range []string{"pause", "resume", "run", "run-now"} {
		mux.HandleFunc("POST /v1/scheduler/"+action, s.requireAdmin(s.schedulerCall("/"+action)))
	}
	mux.HandleFunc("GET /v1/charts", s.chart)
	mux.HandleFunc("GET /v1/clusters", s.markets(false))
	mux.HandleFunc("GET /v1/opportunities", s.markets(true))
	mux.HandleFunc("GET /v1/apps/{id}", s.app)
	mux.HandleFunc("GET /v1/apps/{id}/reviews", s.appReviews)
	mux.HandleFunc("GET /v1/clusters/{id}/themes", s.clusterThemes)
	mux.HandleFunc("GET /v1/apps/{id}/history", s.appHistory)
	s.mountAnalyst(mux)
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
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "path", "no route for "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// ServeHTTP answers a request; a panic becomes a logged 500, never a dead instance.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.served.Add(1)
	defer func() {
		if p := recover(); p != nil {
			logx.Event("http.panic", map[string]any{"level": logx.Error, "path": r.URL.Path, "panic": strings.TrimSpace(toString(p))})
			writeError(w, http.StatusInternalServerError, "", "internal error")
		}
	}()
	s.mux().ServeHTTP(w, r)
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

// requireAdmin guards mutating calls with `Authorization: Bearer <ADMIN_TOKEN>`.
func (s *Server) requireAdmin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !authorized(w, r, s.AdminToken, "missing or wrong bearer token") {
			return
		}
		next(w, r)
	}
}

// authorized checks the request's bearer token against token's value (nil
// or empty: nobody), answering the 401 itself when it does not match.
func authorized(w http.ResponseWriter, r *http.Request, token func() string, msg string) bool {
	want := ""
	if token != nil {
		want = token()
	}
	if bearerOK(r.Header.Get("Authorization"), want) {
		return true
	}
	logx.Event("http.unauthorized", map[string]any{"level": logx.Warn, "path": r.URL.Path})
	w.Header().Set("WWW-Authenticate", bearerRealm)
	writeError(w, http.StatusUnauthorized, "authorization", msg)
	return false
}

// doCall sends one request to a Durable Object.
type doCall func(ctx context.Context, method, path string, body []byte) (int, []byte, error)

// validated is a control-plane handler: a POST body is read and validated
// here, so a bad request never reaches (or changes) the object; validate
// returns the body to send, or the 400 body naming the bad field. Then the
// call goes to the object and its answer is relayed.
func validated(call doCall, path, failEvent string, validate func(b []byte) (send []byte, bad any)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPost {
			b, err := readBody(r, MaxControlBody)
			if err != nil {
				writeError(w, http.StatusBadRequest, "body", err.Error())
				return
			}
			send, bad := validate(b)
			if bad != nil {
				writeJSON(w, http.StatusBadRequest, bad)
				return
			}
			body = send
		}
		status, resp, err := call(r.Context(), r.Method, path, body)
		relay(w, status, resp, err, failEvent, path)
	}
}

// forward is a control call to the EnrichmentController.
func (s *Server) forward(doPath string) http.HandlerFunc {
	call := func(ctx context.Context, m, p string, b []byte) (int, []byte, error) {
		return s.Controller.CallController(ctx, m, p, b)
	}
	return validated(call, doPath, "enrichment.controller_call_failed", func(b []byte) ([]byte, any) {
		if doPath == "/tune" {
			if _, ferr := enrichment.ParseTune(b); ferr != nil {
				return nil, ferr
			}
			return b, nil
		}
		// start/stop/reset take no parameters; reject anything but an empty body or {}.
		if t := strings.TrimSpace(string(b)); t != "" && t != "{}" {
			return nil, map[string]string{"error": doPath[1:] + " takes no body", "field": "body"}
		}
		return nil, nil
	})
}

// relay answers with what a Durable Object answered, or a logged 502.
func relay(w http.ResponseWriter, status int, resp []byte, err error, failEvent, path string) {
	if err != nil {
		logx.Err(failEvent, err, map[string]any{"path": path})
		writeError(w, http.StatusBadGateway, "", "durable object unavailable")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(resp)
}

func (s *Server) app(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "id", "id must be a positive integer track id")
		return
	}
	rec, found, err := s.Apps.App(r.Context(), id)
	switch {
	case err != nil:
		logx.Err("apps.read_failed", err, map[string]any{"track_id": id})
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case !found:
		writeError(w, http.StatusNotFound, "id", "no app with that id")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Write(rec)
	}
}

// appReviews serves one page of an app's stored reviews, most recent first.
func (s *Server) appReviews(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "id", "id must be a positive integer track id")
		return
	}
	pagedList("reviews", func(ctx context.Context, limit, offset int) ([]json.RawMessage, error) {
		return s.Reviews.AppReviews(ctx, id, limit, offset)
	})(w, r)
}

// clusterThemes serves a cluster's complaint themes from its members'
// stored reviews.
func (s *Server) clusterThemes(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > MaxClusterIDLen {
		writeError(w, http.StatusBadRequest, "id", fmt.Sprintf("id must be a cluster id (its keyword) of 1–%d characters", MaxClusterIDLen))
		return
	}
	themes, n, found, err := s.Reviews.ClusterThemes(r.Context(), id)
	switch {
	case err != nil:
		logx.Err("themes.read_failed", err, map[string]any{"cluster_id": id})
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case !found:
		writeError(w, http.StatusNotFound, "id", "no cluster with that id")
	default:
		if themes == nil {
			themes = []reviews.Theme{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"cluster_id": id, "reviews": n, "themes": themes})
	}
}

// MaxClusterIDLen bounds a cluster id in a path: a cluster is a keyword.
const MaxClusterIDLen = 200

func (s *Server) cronRuns(w http.ResponseWriter, r *http.Request) {
	rec, err := s.Cron.LastCronRuns(r.Context())
	if err != nil {
		logx.Err("cron.read_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(rec)
}

// history serves /v1/history?target=&since=&bucket_s=.
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	q, field, msg := history.ParseHistoryQuery(r.URL.Query().Get, time.Now())
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

// pipelineCounts serves /v1/pipeline/counts from trigger-kept counters.
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
	writeJSON(w, http.StatusOK, out)
}

// ledgerStatus serves /v1/ledger?after=&limit=: a page of writers
// reconciled with D1 now (the configured ones first, on the first page;
// at most history.ReconcileBatch others, so one request makes a bounded
// number of Durable Object calls), next_after to ask for the next page
// (null at the end), and this isolate's consumer counts.
func (s *Server) ledgerStatus(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, limit := q.Get("after"), history.ReconcileBatch
	if len(after) > ledger.MaxNameLen {
		writeError(w, http.StatusBadRequest, "after", fmt.Sprintf("after must be a writer's source (at most %d bytes)", ledger.MaxNameLen))
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > history.ReconcileBatch {
			writeError(w, http.StatusBadRequest, "limit", fmt.Sprintf("limit must be an integer from 1 to %d", history.ReconcileBatch))
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
	next := any(nil)
	if p.Next != "" {
		next = p.Next
	}
	writeJSON(w, http.StatusOK, map[string]any{"writers": p.Writers, "next_after": next, "limit": limit, "consumer": s.Ledger.ConsumerStats()})
}

func readBody(r *http.Request, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return nil, errors.New("unreadable body")
	}
	if int64(len(b)) > max {
		return nil, errors.New("body too large")
	}
	return b, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, field, msg string) {
	body := map[string]string{"error": msg}
	if field != "" {
		body["field"] = field
	}
	writeJSON(w, status, body)
}

func toString(v any) string {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// limiterAcquire checks the client token, validates the request (a refused
// one never reaches, or changes, any limiter) and forwards it to the key's
// OmniLimiter object, the key in the clients' namespace (AcquireFront).
func (s *Server) limiterAcquire(w http.ResponseWriter, r *http.Request) {
	// A body past the bound is cut here and refused by AcquireFront, after
	// the token is checked.
	body, _ := io.ReadAll(io.LimitReader(r.Body, MaxControlBody+1))
	token := ""
	if s.ClientToken != nil {
		token = s.ClientToken()
	}
	f := AcquireFront(r.Header.Get("Authorization"), body, token)
	if f.Status != 0 {
		for k, v := range f.Headers {
			w.Header().Set(k, v)
		}
		writeJSON(w, f.Status, f.Body)
		return
	}
	status, resp, err := s.Limiter.CallLimiter(r.Context(), limiter.ClientPrefix+f.Key, "POST", "/acquire", []byte(f.Send))
	if err != nil {
		logx.Err("limiter.call_failed", err, map[string]any{"key": limiter.ClientPrefix + f.Key})
		writeError(w, http.StatusBadGateway, "", "limiter unavailable")
		return
	}
	if status == http.StatusOK {
		for k, v := range AcquireHeaders(f, resp) {
			w.Header().Set(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(resp)
}

// Namespaces of GET /v1/limiter/status.
const (
	// NamespaceClient (the default): a client's key, as it names it in its
	// acquires; needs the client token.
	NamespaceClient = "client"
	// NamespaceInternal: one of the crawler's named limits
	// (ratelimit.Limits), public like the dashboard's other reads. Read
	// only: no HTTP route acquires in it.
	NamespaceInternal = "internal"
)

// limiterStatus serves GET /v1/limiter/status?key=&namespace=. An unknown
// key is a 404 and gets no storage (its object only reads).
func (s *Server) limiterStatus(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key, stored := q.Get("key"), ""
	switch ns := q.Get("namespace"); ns {
	case "", NamespaceClient:
		if !authorized(w, r, s.ClientToken, "missing or wrong bearer token (the limiter client token)") {
			return
		}
		if !limiter.ValidKey(key) {
			writeError(w, http.StatusBadRequest, "key", fmt.Sprintf("key must be 1–%d printable characters", limiter.MaxKeyLen))
			return
		}
		stored = limiter.ClientPrefix + key
	case NamespaceInternal:
		if _, ok := ratelimit.Limits[key]; !ok {
			writeError(w, http.StatusBadRequest, "key", "key must be one of the internal limits: "+strings.Join(internalLimits(), ", "))
			return
		}
		stored = key
	default:
		writeError(w, http.StatusBadRequest, "namespace", "namespace must be client or internal")
		return
	}
	status, resp, err := s.Limiter.CallLimiter(r.Context(), stored, "GET", "/status", nil)
	if err != nil {
		logx.Err("limiter.call_failed", err, map[string]any{"key": stored})
		writeError(w, http.StatusBadGateway, "", "limiter unavailable")
		return
	}
	if status == http.StatusNotFound {
		writeError(w, http.StatusNotFound, "key", "no acquire has been made for this key")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(resp)
}

// internalLimits names the crawler's limits, sorted.
func internalLimits() []string {
	keys := make([]string, 0, len(ratelimit.Limits))
	for k := range ratelimit.Limits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// schedulerCall is a call to the SchedulerDO.
func (s *Server) schedulerCall(path string) http.HandlerFunc {
	// Resolved per call: a server without a scheduler still builds its routes.
	call := func(ctx context.Context, m, p string, b []byte) (int, []byte, error) {
		return s.Scheduler.CallScheduler(ctx, m, p, b)
	}
	return validated(call, path, "scheduler.call_failed", func(b []byte) ([]byte, any) {
		if _, _, fe := scheduler.ParseControl(path, string(b), time.Now()); fe != nil {
			return nil, fe
		}
		return b, nil
	})
}

// startReparse starts a re-parse of stored pages, {"scope": "all" |
// "failed" | "incomplete"} (default "failed"), and has the scheduler run
// its first batches at once. No upstream request is made.
func (s *Server) startReparse(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Scope string `json:"scope"`
	}
	if !decodeOptionalBody(w, r, &body, "scope", "body must be {\"scope\": \"all\"|\"failed\"|\"incomplete\"}") {
		return
	}
	if body.Scope == "" {
		body.Scope = pages.ReparseFailed
	}
	if !contains(pages.ReparseScopes, body.Scope) {
		writeError(w, http.StatusBadRequest, "scope", "scope must be one of "+strings.Join(pages.ReparseScopes, ", "))
		return
	}
	job, err := s.Reparse.StartReparse(r.Context(), body.Scope)
	if err != nil {
		logx.Err("enrichment.reparse_start_failed", err, nil)
		writeError(w, http.StatusServiceUnavailable, "", "could not record the reparse job")
		return
	}
	// The job is recorded: the periodic task would pick it up anyway, so a
	// failed kick is logged, not the request's failure.
	if _, _, err := s.Scheduler.CallScheduler(r.Context(), "POST", "/run-now", []byte(`{"task":"page-reparse"}`)); err != nil {
		logx.Err("enrichment.reparse_kick_failed", err, nil)
	}
	logx.Event("enrichment.reparse_started", map[string]any{"scope": body.Scope})
	writeJSON(w, http.StatusAccepted, job)
}

// RetryableClasses are the give-up classes retry-failed takes as a filter:
// the item-level ones, and those older versions gave up on.
var RetryableClasses = []string{"parse_error", "store_error", "server_error", "timeout"}

// retryFailed puts given-up items back in the enrichment queue: all of
// them, or one class ({"class": "parse_error"}), oldest give-up first, at
// most a batch per call ("more" says when another call is needed).
func (s *Server) retryFailed(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Class string `json:"class"`
	}
	if !decodeOptionalBody(w, r, &body, "class", "body must be {} or {\"class\": \""+strings.Join(RetryableClasses, "\"|\"")+"\"}") {
		return
	}
	if body.Class != "" && !contains(RetryableClasses, body.Class) {
		writeError(w, http.StatusBadRequest, "class", "class must be one of "+strings.Join(RetryableClasses, ", "))
		return
	}
	now := time.Now()
	n, err := s.Failed.RetryFailed(r.Context(), body.Class, now, now)
	if err != nil {
		logx.Err("enrichment.retry_failed_failed", err, map[string]any{"class": body.Class})
		writeError(w, http.StatusServiceUnavailable, "", "could not requeue the failed items")
		return
	}
	logx.Event("enrichment.retry_failed", map[string]any{"class": body.Class, "requeued": n})
	writeJSON(w, http.StatusOK, map[string]any{"requeued": n, "class": body.Class, "more": n >= s.RetryFailedBatch})
}

// reparseStatus serves the newest reparse job (null when none ever ran).
func (s *Server) reparseStatus(w http.ResponseWriter, r *http.Request) {
	job, err := s.Reparse.ReparseStatus(r.Context())
	if err != nil {
		logx.Err("enrichment.reparse_status_failed", err, nil)
		writeError(w, http.StatusServiceUnavailable, "", "reparse status unavailable")
		return
	}
	writeJSON(w, http.StatusOK, job)
}

// chart serves a top chart straight from KV: the upstream is never called
// on a user's request path.
func (s *Server) chart(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	country, collection, category := q.Get("country"), q.Get("collection"), q.Get("category")
	if category == "" {
		category = "all"
	}
	for _, c := range []struct {
		field, value string
		allowed      []string
	}{{"country", country, tasks.ChartCountries}, {"collection", collection, appstore.ChartCollections}, {"category", category, tasks.ChartCategories}} {
		if !contains(c.allowed, c.value) {
			writeError(w, http.StatusBadRequest, c.field, fmt.Sprintf("%s must be one of %v", c.field, c.allowed))
			return
		}
	}
	v, err := s.Charts.Get(r.Context(), tasks.ChartKey(country, collection, category))
	switch {
	case err != nil:
		logx.Err("charts.read_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case v == "":
		writeError(w, http.StatusNotFound, "", "chart not fetched yet; the charts-refresh task fills it every ~5 min")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=60")
		io.WriteString(w, v)
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Pagination bounds of the market listings.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
	MaxOffset       = 10_000
)

// pageParams reads limit/offset, naming the bad one.
func pageParams(r *http.Request) (limit, offset int, field string) {
	limit, offset = DefaultPageSize, 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return 0, 0, "limit"
		}
		limit = n
	}
	if v := r.URL.Query().Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxOffset {
			return 0, 0, "offset"
		}
		offset = n
	}
	return limit, offset, ""
}

// markets serves /v1/clusters (by size) and /v1/opportunities (by score).
func (s *Server) markets(byScore bool) http.HandlerFunc {
	return pagedList("markets", func(ctx context.Context, limit, offset int) ([]json.RawMessage, error) {
		return s.Markets.List(ctx, byScore, limit, offset)
	})
}

// deadLetters serves GET /v1/system/dead-letters: the EVENTS messages that
// failed every retry, newest first.
func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	pagedList("dead_letters", func(ctx context.Context, limit, offset int) ([]json.RawMessage, error) {
		return s.Dead.DeadLetters(ctx, limit, offset)
	})(w, r)
}

// pagedList serves one page of a list read by read: limit/offset validated
// (400 naming the field), {items, limit, offset, next_offset} answered.
func pagedList(what string, read func(ctx context.Context, limit, offset int) ([]json.RawMessage, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		limit, offset, field := pageParams(r)
		if field != "" {
			writeError(w, http.StatusBadRequest, field, fmt.Sprintf("%s must be an integer (limit 1–%d, offset 0–%d)", field, MaxPageSize, MaxOffset))
			return
		}
		items, err := read(r.Context(), limit, offset)
		if err != nil {
			logx.Err(what+".read_failed", err, nil)
			writeError(w, http.StatusInternalServerError, "", "read failed")
			return
		}
		if items == nil {
			items = []json.RawMessage{}
		}
		next := any(nil)
		if len(items) == limit {
			next = offset + limit
		}
		writeJSON(w, http.StatusOK, map[string]any{"items": items, "limit": limit, "offset": offset, "next_offset": next})
	}
}

// maxOptionalBody bounds the small JSON bodies of control calls.
const maxOptionalBody = 1 << 10

// decodeOptionalBody reads a small JSON object into dst, unknown fields
// refused; an empty body leaves dst as it is. On a bad body it answers 400
// naming field with msg and reports false.
func decodeOptionalBody(w http.ResponseWriter, r *http.Request, dst any, field, msg string) bool {
	if r.ContentLength == 0 {
		return true
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxOptionalBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		writeError(w, http.StatusBadRequest, field, msg)
		return false
	}
	return true
}

// MaxMessageIDLen bounds a dead letter's message id in a replay call.
const MaxMessageIDLen = 128

// replayDeadLetters sends dead letters back to the EVENTS queue, whole:
// {"message_id": "..."} for one (again if it was replayed before), {} for
// the oldest not yet replayed, a batch per call ("more" says when to call
// again). A replayed facts batch is stored once.
func (s *Server) replayDeadLetters(w http.ResponseWriter, r *http.Request) {
	var body struct {
		MessageID string `json:"message_id"`
	}
	if !decodeOptionalBody(w, r, &body, "message_id", "body must be {} or {\"message_id\": \"...\"}") {
		return
	}
	if len(body.MessageID) > MaxMessageIDLen {
		writeError(w, http.StatusBadRequest, "message_id", fmt.Sprintf("message_id is at most %d bytes", MaxMessageIDLen))
		return
	}
	res, err := s.Replay.ReplayDeadLetters(r.Context(), body.MessageID, s.Requeue.Send)
	switch {
	case errors.Is(err, history.ErrNoSuchDeadLetter):
		writeError(w, http.StatusNotFound, "message_id", "no dead letter has this message_id")
		return
	case err != nil:
		logx.Err("queue.dead_letter_replay_failed", err, nil)
		writeError(w, http.StatusServiceUnavailable, "", "could not read the dead letters")
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// setFaults is the test-only POST /__test/faults:
// {"facts_fail_before_write": true|false}.
func (s *Server) setFaults(w http.ResponseWriter, r *http.Request) {
	var body struct {
		FailBeforeWrite *bool `json:"facts_fail_before_write"`
	}
	const msg = "body must be {\"facts_fail_before_write\": true|false}"
	if !decodeOptionalBody(w, r, &body, "facts_fail_before_write", msg) {
		return
	}
	if body.FailBeforeWrite == nil {
		writeError(w, http.StatusBadRequest, "facts_fail_before_write", msg)
		return
	}
	s.TestFaults.SetFailBeforeWrite(*body.FailBeforeWrite)
	logx.Event("test.faults", map[string]any{"facts_fail_before_write": *body.FailBeforeWrite})
	writeJSON(w, http.StatusOK, map[string]any{"facts_fail_before_write": *body.FailBeforeWrite})
}

// injectEvent is the test-only POST /__test/events: the body (a JSON
// object, not checked further: the queue consumer judges it) goes to the
// EVENTS queue as it is.
func (s *Server) injectEvent(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, MaxControlBody)
	if err != nil {
		writeError(w, http.StatusBadRequest, "body", err.Error())
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		writeError(w, http.StatusBadRequest, "body", "body must be a JSON object")
		return
	}
	if err := s.TestEvents.Send(r.Context(), string(body)); err != nil {
		logx.Err("test.event_send_failed", err, nil)
		writeError(w, http.StatusBadGateway, "", "queue send failed")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"queued": true})
}
