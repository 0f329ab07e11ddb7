package api

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"storecrawl/durable/limiter"
	"storecrawl/durable/object"
	"storecrawl/worker/config"
	"storecrawl/worker/logx"
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
// (LIMITER_CLIENT_TOKEN; empty refuses every call), body at most
// MaxControlBody bytes. The caller's key goes to the clients' namespace
// (limiter.ClientPrefix), so it can never name an internal key such as the
// crawler's "upstream-catalogue".
func AcquireFront(authorization string, body []byte, token string) Front {
	if !bearerOK(authorization, token) {
		logx.Event("http.unauthorized", map[string]any{"level": logx.Warn, "path": "/v1/limiter/acquire"})
		return Front{Status: http.StatusUnauthorized, Body: &object.FieldError{Error: "missing or wrong bearer token (the limiter client token)", Field: "authorization"},
			Headers: map[string]string{"WWW-Authenticate": bearerRealm}}
	}
	if len(body) > MaxControlBody {
		return Front{Status: http.StatusBadRequest, Body: &object.FieldError{Error: "body too large", Field: "body"}}
	}
	a, fe := limiter.ParseClientAcquire(body)
	if fe != nil {
		return Front{Status: http.StatusBadRequest, Body: fe}
	}
	return Front{Key: strings.TrimPrefix(a.Key, limiter.ClientPrefix), Binding: config.BindingLimiter, Object: config.LimiterPrefix + a.Key,
		Send: string(a.Body()), Limit: a.Policy.Limit, Window: a.Policy.Window}
}

// bearerOK checks an Authorization header against a configured token in
// constant time; an empty token admits nobody.
func bearerOK(authorization, want string) bool {
	got, ok := strings.CutPrefix(authorization, "Bearer ")
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
