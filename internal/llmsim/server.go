// Package llmsim is the LLM simulator behind cmd/llm-sim: a local,
// OpenAI-compatible chat-completions handler whose answers are a pure
// function of the conversation (a valid brief or evaluation step for the
// analyst's prompts), with latency, usage counts and configurable 429s.
// Tests mount it in process (httptest); cmd/llm-sim serves it on loopback.
package llmsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"storecrawl/worker/llm"
)

const DefaultModel = "llm-sim-1"

// Bounds.
const (
	// maxRequestBody caps a completion request: a brief prompt is ~10 KB.
	maxRequestBody = 1 << 20
	// maxConfigBody caps POST /__config.
	maxConfigBody = 64 << 10
	// maxMessages caps a conversation's messages.
	maxMessages = 64
	// defaultMaxTokens is the completion bound when a request sets none
	// (OpenAI's older default for chat models).
	defaultMaxTokens = 4096
	// maxLatency caps configured latency so a test cannot hang the sim.
	maxLatency = 60_000
)

// Config is the simulator's behaviour, patched by POST /__config.
type Config struct {
	// LatencyMS + MSPerToken × completion tokens is a call's latency. The
	// defaults (250 ms + 2 ms a token: ~1.2 s for a 500-token brief) are
	// those of a fast hosted small model.
	LatencyMS  int `json:"latency_ms"`
	MSPerToken int `json:"ms_per_token"`
	// RequestsPerMin / TokensPerMin: calls over either in the current
	// minute answer 429 (0 = no limit), as hosted endpoints do.
	RequestsPerMin int `json:"requests_per_min"`
	TokensPerMin   int `json:"tokens_per_min"`
	// RetryAfterS is the Retry-After sent with 429s (0 = none).
	RetryAfterS int `json:"retry_after_s"`
	// FailNext answers the next N calls 429 (a storm), then counts down.
	FailNext int `json:"fail_next"`
	// Invalid: "" answers valid briefs; "first" breaks the first answer of
	// each conversation (a retry carrying the error gets a valid one);
	// "always" breaks every answer.
	Invalid string `json:"invalid"`
}

// DefaultConfig is the configuration of a plain start.
func DefaultConfig() Config {
	return Config{LatencyMS: 250, MSPerToken: 2, RetryAfterS: 2}
}

// Validate reports the first field out of range.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{
		{"latency_ms", c.LatencyMS, maxLatency}, {"ms_per_token", c.MSPerToken, 1000},
		{"requests_per_min", c.RequestsPerMin, 1 << 30}, {"tokens_per_min", c.TokensPerMin, 1 << 30},
		{"retry_after_s", c.RetryAfterS, 3600}, {"fail_next", c.FailNext, 1 << 20},
	} {
		if f.v < 0 || f.v > f.max {
			return fmt.Errorf("%s: must be between 0 and %d", f.name, f.max)
		}
	}
	switch c.Invalid {
	case "", "first", "always":
	default:
		return fmt.Errorf(`invalid: must be "", "first" or "always"`)
	}
	return nil
}

// Stats is the GET /__stats body.
type Stats struct {
	Requests         int64  `json:"requests"`
	Served           int64  `json:"served"`
	RateLimited      int64  `json:"rate_limited"`
	BadRequests      int64  `json:"bad_requests"`
	Unauthorized     int64  `json:"unauthorized"`
	Briefs           int64  `json:"briefs"`
	EvalSteps        int64  `json:"evaluation_steps"`
	InvalidAnswers   int64  `json:"invalid_answers"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	Config           Config `json:"config"`
}

// Options configures a Server.
type Options struct {
	Config Config
	APIKey string
	Model  string
	Now    func() time.Time                           // nil = time.Now
	Sleep  func(ctx context.Context, d time.Duration) // nil = a real, cancellable sleep
	Logger *slog.Logger
}

// Server is the simulator. Mutable state is guarded by mu.
type Server struct {
	apiKey string
	model  string
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration)
	log    *slog.Logger
	mux    *http.ServeMux

	mu          sync.Mutex
	cfg         Config
	stats       Stats
	windowStart time.Time
	windowReqs  int
	windowToks  int
}

// NewServer builds the handler; opts.Config must be valid.
func NewServer(opts Options) *Server {
	s := &Server{apiKey: opts.APIKey, model: opts.Model, now: opts.Now, sleep: opts.Sleep, log: opts.Logger, cfg: opts.Config}
	if s.model == "" {
		s.model = DefaultModel
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sleep == nil {
		s.sleep = sleepCtx
	}
	if s.log == nil {
		s.log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleCompletion)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]string{{"id": s.model, "object": "model", "owned_by": "llm-sim"}}})
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, map[string]bool{"ok": true}) })
	mux.HandleFunc("GET /__stats", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		st := s.stats
		st.Config = s.cfg
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("POST /__stats/reset", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		s.stats = Stats{}
		st := s.stats
		st.Config = s.cfg
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("POST /__config", s.handleConfig)
	s.mux = mux
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func sleepCtx(ctx context.Context, d time.Duration) {
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

func (s *Server) handleConfig(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxConfigBody))
	if err != nil {
		apiError(w, http.StatusBadRequest, "unreadable or oversized body", "invalid_request_error", "")
		return
	}
	s.mu.Lock()
	cfg := s.cfg
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err = dec.Decode(&cfg)
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil {
		s.cfg = cfg
		s.windowStart, s.windowReqs, s.windowToks = time.Time{}, 0, 0
	}
	s.mu.Unlock()
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", "")
		return
	}
	s.log.Info("config_changed", "config", cfg)
	writeJSON(w, http.StatusOK, cfg)
}

type completionRequest struct {
	Model          string        `json:"model"`
	Messages       []llm.Message `json:"messages"`
	MaxTokens      int           `json:"max_tokens"`
	Temperature    *float64      `json:"temperature"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Stream bool `json:"stream"`
}

func (s *Server) handleCompletion(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.stats.Requests++
	s.mu.Unlock()
	if s.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		s.count(func(st *Stats) { st.Unauthorized++ })
		apiError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	var req completionRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	switch {
	case err != nil:
		s.bad(w, "request body is not valid JSON: "+err.Error())
		return
	case len(req.Messages) == 0 || len(req.Messages) > maxMessages:
		s.bad(w, fmt.Sprintf("messages: want 1 to %d", maxMessages))
		return
	case req.Stream:
		s.bad(w, "stream: not supported by llm-sim")
		return
	case req.MaxTokens < 0:
		s.bad(w, "max_tokens: must be positive")
		return
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = defaultMaxTokens
	}

	ans := answer(req.Messages, req.ResponseFormat != nil && req.ResponseFormat.Type == "json_object", s.invalidMode())
	promptTokens := countPrompt(req.Messages)
	text, completionTokens, finish := fit(ans.text, maxTokens)

	if ok, cfg := s.admit(promptTokens + completionTokens); !ok {
		if cfg.RetryAfterS > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(cfg.RetryAfterS))
		}
		apiError(w, http.StatusTooManyRequests, "Rate limit reached for "+s.model+". Please try again later.", "requests", "rate_limit_exceeded")
		return
	}
	s.mu.Lock()
	cfg := s.cfg
	s.mu.Unlock()
	s.sleep(r.Context(), time.Duration(cfg.LatencyMS+cfg.MSPerToken*int(completionTokens))*time.Millisecond)

	s.count(func(st *Stats) {
		st.Served++
		st.PromptTokens += promptTokens
		st.CompletionTokens += completionTokens
		if ans.evalStep {
			st.EvalSteps++
		}
		if ans.brief {
			st.Briefs++
		}
		if ans.invalid {
			st.InvalidAnswers++
		}
	})
	now := s.now()
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      "chatcmpl-sim-" + ans.hash[:16],
		"object":  "chat.completion",
		"created": now.Unix(),
		"model":   s.model,
		"choices": []map[string]any{{
			"index":         0,
			"message":       map[string]string{"role": "assistant", "content": text},
			"finish_reason": finish,
		}},
		"usage": map[string]int64{"prompt_tokens": promptTokens, "completion_tokens": completionTokens, "total_tokens": promptTokens + completionTokens},
	})
}

func (s *Server) invalidMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Invalid
}

// admit applies the storm and the per-minute limits; a refused call still
// counts in the minute (real endpoints count attempts).
func (s *Server) admit(tokens int64) (bool, Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.windowStart.IsZero() || now.Sub(s.windowStart) >= time.Minute {
		s.windowStart, s.windowReqs, s.windowToks = now, 0, 0
	}
	cfg := s.cfg
	refuse := false
	switch {
	case s.cfg.FailNext > 0:
		s.cfg.FailNext--
		refuse = true
	case cfg.RequestsPerMin > 0 && s.windowReqs+1 > cfg.RequestsPerMin:
		refuse = true
	case cfg.TokensPerMin > 0 && s.windowToks+int(tokens) > cfg.TokensPerMin:
		refuse = true
	}
	s.windowReqs++
	if refuse {
		s.stats.RateLimited++
		if s.stats.RateLimited == 1 || s.stats.RateLimited%100 == 0 {
			s.log.Info("rate_limited", "refused_total", s.stats.RateLimited)
		}
		return false, cfg
	}
	s.windowToks += int(tokens)
	return true, cfg
}

func (s *Server) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

func (s *Server) bad(w http.ResponseWriter, msg string) {
	s.count(func(st *Stats) { st.BadRequests++ })
	apiError(w, http.StatusBadRequest, msg, "invalid_request_error", "")
}

// apiError writes OpenAI's error envelope.
func apiError(w http.ResponseWriter, status int, msg, typ, code string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
