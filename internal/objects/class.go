package objects

// Class is the outcome of one upstream request or work item, as the Worker
// reports it in a run's outcome and the deciding object counts it. It is
// part of the protocol: worker/upstream classifies, durable/controller counts.
type Class string

const (
	ClassOK Class = "ok"
	// Upstream-level failures: they lower the success rate.
	ClassRateLimit   Class = "rate_limit"   // 403, 429
	ClassServerError Class = "server_error" // 5xx
	ClassTimeout     Class = "timeout"      // no answer in time, or the connection failed
	// Item-level failures: the upstream answered; the item is the problem.
	ClassNotFound   Class = "not_found"   // 404, or a lookup with no result
	ClassParseError Class = "parse_error" // the answer could not be parsed
	// ClassStoreError is our own failure to persist the result (D1/R2): neither
	// the upstream's fault nor the item's, so the item is simply retried.
	ClassStoreError Class = "store_error"
)

// CountsAgainstUpstream reports whether a class lowers the success rate.
func (c Class) CountsAgainstUpstream() bool {
	return c == ClassRateLimit || c == ClassServerError || c == ClassTimeout
}

// ClassifyStatus maps an upstream HTTP status to an outcome class. 2xx is OK;
// 403 is treated like 429 because that is how this upstream says "go away".
func ClassifyStatus(status int) Class {
	switch {
	case status >= 200 && status < 300:
		return ClassOK
	case status == 403 || status == 429:
		return ClassRateLimit
	case status == 404 || status == 410:
		return ClassNotFound
	case status == 408 || status == 504:
		return ClassTimeout
	case status >= 500:
		return ClassServerError
	default:
		// Other 4xx: our request is wrong for this item; retrying will not help.
		return ClassParseError
	}
}
