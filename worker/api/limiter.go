package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"storecrawl/durable/limiter"
	"storecrawl/durable/object"
	"storecrawl/worker/config"
)

// POST /v1/limiter/acquire is the hottest route: every caller of a shared
// upstream limit asks it. Its Go decisions are two pure functions, used by
// the router (Server.limiterAcquire) and by the shim's fast path
// (shim/index.mjs hands the body to AcquireFront, calls the key's object
// itself, and asks AcquireHeaders for the answer's headers), which spares the
// route the HTTP request's conversion into Go and back.

// Front is the Worker's decision on an acquire body before any object is
// called: the key's object, or the 400 naming the bad field. A bad request
// never reaches, or changes, the key's limiter.
type Front struct {
	Key     string  `json:"key,omitempty"`
	Binding string  `json:"binding,omitempty"` // the OmniLimiter namespace
	Object  string  `json:"object,omitempty"`  // idFromName of the key's OmniLimiter
	Limit   int     `json:"limit,omitempty"`
	Window  float64 `json:"window,omitempty"`
	// Status and Body are the refusal (400), when the body is bad.
	Status int                `json:"status,omitempty"`
	Body   *object.FieldError `json:"body,omitempty"`
}

// AcquireFront validates an acquire body (at most MaxControlBody bytes).
func AcquireFront(body []byte) Front {
	if len(body) > MaxControlBody {
		return Front{Status: http.StatusBadRequest, Body: &object.FieldError{Error: "body too large", Field: "body"}}
	}
	a, fe := limiter.ParseAcquire(body)
	if fe != nil {
		return Front{Status: http.StatusBadRequest, Body: fe}
	}
	return Front{Key: a.Key, Binding: config.BindingLimiter, Object: config.LimiterPrefix + a.Key, Limit: a.Policy.Limit, Window: a.Policy.Window}
}

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
