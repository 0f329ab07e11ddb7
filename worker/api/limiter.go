package api

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"storecrawl/durable/limiter"
	"storecrawl/durable/object"
	"storecrawl/worker/config"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
)

// POST /v1/limiter/acquire is the hottest route: every client of a shared
// limit asks it, with the limiter client token. Its Go decisions are two
// functions, used by the router (Server.limiterAcquire) and by the shim's
// fast path (shim/index.mjs hands the Authorization header and the body to
// AcquireFront, sends the key's object the body it answers, and asks
// AcquireHeaders for the answer's headers), which spares the route the HTTP
// request's conversion into Go and back.

// Front is the Worker's decision on an acquire before any object is
// called: the key's object and the body to send it, or the refusal (401
// without the client token, 400 naming the bad field). A refused request
// never reaches, or changes, any limiter.
type Front struct {
	Key     string  `json:"key,omitempty"`     // the key as the caller named it (the headers')
	Binding string  `json:"binding,omitempty"` // the OmniLimiter namespace
	Object  string  `json:"object,omitempty"`  // idFromName of the key's OmniLimiter
	Send    string  `json:"send,omitempty"`    // the body the object gets (the key in the clients' namespace)
	Limit   int     `json:"limit,omitempty"`
	Window  float64 `json:"window,omitempty"`
	// Status, Body and Headers are the refusal.
	Status  int                `json:"status,omitempty"`
	Body    *object.FieldError `json:"body,omitempty"`
	Headers map[string]string  `json:"headers,omitempty"`
}

// AcquireFront decides an acquire: authorization is the request's
// Authorization header, token the configured client token
// (LIMITER_CLIENT_TOKEN; empty refuses every call), body what was read of
// the request's body (at most MaxControlBody+1 bytes: the caller stops
// there) and size its length as declared (Content-Length) or read, -1
// when unknown; past MaxControlBody it is a 413, whatever was read. The caller's key goes to the clients' namespace
// (limiter.ClientPrefix), so it can never name an internal key such as the
// crawler's "upstream-catalogue".
func AcquireFront(authorization string, body []byte, size int64, token string) Front {
	if !bearerOK(authorization, token) {
		logx.Event("http.unauthorized", map[string]any{"level": logx.Warn, "path": "/v1/limiter/acquire"})
		return Front{Status: http.StatusUnauthorized, Body: &object.FieldError{Error: "missing or wrong bearer token (the limiter client token)", Field: "authorization"},
			Headers: map[string]string{"WWW-Authenticate": bearerRealm}}
	}
	if size > MaxControlBody || len(body) > MaxControlBody {
		return Front{Status: http.StatusRequestEntityTooLarge, Body: &object.FieldError{Error: fmt.Sprintf("body is at most %d bytes", MaxControlBody), Field: "body"}}
	}
	a, fe := limiter.ParseClientAcquire(body)
	if fe != nil {
		return Front{Status: http.StatusBadRequest, Body: fe}
	}
	return Front{Key: strings.TrimPrefix(a.Key, limiter.ClientPrefix), Binding: config.BindingLimiter, Object: config.LimiterPrefix + a.Key,
		Send: string(a.Body()), Limit: a.Policy.Limit, Window: a.Policy.Window}
}

// bearerOK checks an Authorization header against a configured token in
// constant time; an empty token admits nobody. The scheme is matched
// case-insensitively (RFC 7235 §2.1: "bearer", "BEARER").
func bearerOK(authorization, want string) bool {
	scheme, got, ok := strings.Cut(authorization, " ")
	ok = ok && strings.EqualFold(scheme, "Bearer")
	return want != "" && ok && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// bearerRealm is the WWW-Authenticate challenge of a refused call.
const bearerRealm = `Bearer realm="storecrawl"`

// AcquireHeaders are the rate-limit headers of an object's 200 answer to an
// acquire: the IETF RateLimit-Policy / RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers) and, on a refusal, Retry-After.
func AcquireHeaders(f Front, answer []byte) map[string]string {
	var d limiter.AcquireAnswer
	if json.Unmarshal(answer, &d) != nil {
		return nil
	}
	h := http.Header{}
	SetRateLimitHeaders(h, f.Key, f.Limit, f.Window, d.Remaining, d.ResetMs, d.Allowed, d.RetryAfterMs)
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = h.Get(k)
	}
	return out
}

// SetRateLimitHeaders writes the IETF RateLimit-Policy / RateLimit fields
// and, on a refusal, Retry-After.
func SetRateLimitHeaders(h http.Header, key string, limit int, windowS float64, remaining int, resetMs int64, allowed bool, retryAfterMs int64) {
	name := strconv.Quote(key)
	h.Set("RateLimit-Policy", fmt.Sprintf("%s;q=%d;w=%d", name, limit, int64(math.Ceil(windowS))))
	h.Set("RateLimit", fmt.Sprintf("%s;r=%d;t=%d", name, max(0, remaining), (resetMs+999)/1000))
	if !allowed {
		h.Set("Retry-After", strconv.FormatInt(max(1, (retryAfterMs+999)/1000), 10))
	}
}

// MaxControlBody bounds control-plane request bodies.
const MaxControlBody = 4 << 10

// limiterAcquire checks the client token, validates the request (a refused
// one never reaches, or changes, any limiter) and forwards it to the key's
// OmniLimiter object, the key in the clients' namespace (AcquireFront).
func (s *Server) limiterAcquire(w http.ResponseWriter, r *http.Request) {
	// A body past the bound is not read (declared) or cut here (chunked),
	// and refused by AcquireFront after the token is checked; the rest is
	// finishBody's.
	var body []byte
	if r.Body != nil && r.ContentLength <= MaxControlBody {
		body, _ = io.ReadAll(io.LimitReader(r.Body, MaxControlBody+1))
	}
	token := ""
	if s.ClientToken != nil {
		token = s.ClientToken()
	}
	f := AcquireFront(r.Header.Get("Authorization"), body, r.ContentLength, token)
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
