//go:build unix

package main

import (
	"net/url"
	"sort"

	"storecrawl/worker/ratelimit"
)

// Durable Object requests: Cloudflare bills every call into an object
// and every alarm it runs. The scale bench counts the OmniLimiter's from
// the objects themselves (each key's /status counts its calls and alarms
// since it started: durable/limiter.Requests) and derives the rest from
// the code's own cadences (the comments at each figure in scale.go).

// busyLimiterKeys is the limiter keys busy every minute of the fill month
// (the store host's pages and the API host's lookups), each closing its
// minute with one alarm.
const busyLimiterKeys = 2

// LimiterRequests is what one limiter key's object counted, or a sum.
type LimiterRequests struct{ Calls, Alarms float64 }

// readLimiters reads the request counts of every internal limiter key (a
// key with no object yet reads as zero).
func readLimiters(base string) map[string]LimiterRequests {
	out := map[string]LimiterRequests{}
	for key := range ratelimit.Limits {
		var st struct {
			Requests struct {
				Calls  float64 `json:"calls"`
				Alarms float64 `json:"alarms"`
			} `json:"requests"`
		}
		getJSON(base+"/v1/limiter/status?namespace=internal&key="+url.QueryEscape(key), &st)
		out[key] = LimiterRequests{Calls: st.Requests.Calls, Alarms: st.Requests.Alarms}
	}
	return out
}

// LimiterDelta is the requests the limiter's objects served between two
// reads, summed over keys. Each status read is a call the object counts
// before it answers, so a key's second read is in its delta and is taken
// out. A key whose object restarted in between (its counts fell) counts
// from zero.
func LimiterDelta(before, after map[string]LimiterRequests) LimiterRequests {
	var d LimiterRequests
	for key, a := range after {
		b := before[key]
		if a.Calls < b.Calls || a.Alarms < b.Alarms {
			b = LimiterRequests{}
		}
		if a.Calls == 0 && a.Alarms == 0 {
			continue // no object: nothing served, nothing read
		}
		d.Calls += max(0, a.Calls-b.Calls-1)
		d.Alarms += a.Alarms - b.Alarms
	}
	return d
}

// DOShare is one operation's Durable Object requests in a month.
type DOShare struct {
	Name  string  `json:"name"`
	Month float64 `json:"month"`
}

// DOBreakdown is each operation's Durable Object requests a month, the
// largest first (the operations with none left out).
func DOBreakdown(ops []ScaleOp) []DOShare {
	var out []DOShare
	for _, o := range ops {
		if m := o.PerDay(o.DORequests) * daysPerMonth; m > 0 {
			out = append(out, DOShare{o.Name, m})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Month > out[j].Month })
	return out
}
