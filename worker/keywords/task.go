package keywords

import (
	"context"
	"fmt"
	"time"

	"storecrawl/worker/module"
	"storecrawl/worker/ratelimit"
)

// PopularityStore is what the keyword-popularity task reads and writes
// (D1Store).
type PopularityStore interface {
	DuePopularity(ctx context.Context, clusters, n int, staleBefore time.Time) ([]string, error)
	SavePopularity(ctx context.Context, ms []Measured, at time.Time) error
}

// RunResult is one run of the popularity refresh.
type RunResult struct {
	Keywords, Requests, Skipped int
	RateLimited                 bool
	RetryAfterS                 int
	Err                         string
}

// Summary is the task's one-line result.
func (r RunResult) Summary() string {
	s := fmt.Sprintf("%d keywords, %d hint requests", r.Keywords, r.Requests)
	if r.Skipped > 0 {
		s += fmt.Sprintf(", %d left for the next run", r.Skipped)
	}
	if r.RateLimited {
		s += " (rate limited)"
	}
	return s
}

// RefreshPopularity measures the popularity of the keywords due (the top
// clusters', never or not lately computed), within
// PopularityRequestsPerRun hint requests, and stores what it measured in
// one batch. A keyword whose prefixes exceed what is left of the budget
// waits for the next run; a refusal stops the run (what was measured is
// stored); another failure skips the keyword, which stays due.
func RefreshPopularity(ctx context.Context, st PopularityStore, f HintsFetcher, now time.Time) RunResult {
	var res RunResult
	due, err := st.DuePopularity(ctx, PopularityClusters, PopularityTermsPerRun, now.Add(-PopularityMaxAge))
	if err != nil {
		res.Err = "due keywords: " + err.Error()
		return res
	}
	budget, worst := PopularityRequestsPerRun, 0
	for _, kw := range due {
		worst += len(Prefixes(kw))
	}
	// The run's requests in one acquire when ctx carries a reserver.
	ctx = ratelimit.Reserved(ctx, min(budget, worst))
	var measured []Measured
	for _, kw := range due {
		s, n, ok, err := Measure(ctx, f, kw, budget)
		budget -= n
		res.Requests += n
		if limited, after := IsRateLimited(err); limited {
			res.RateLimited, res.RetryAfterS = true, after
			break
		}
		switch {
		case err != nil:
			res.Err = fmt.Sprintf("%q: %v", kw, err)
		case !ok:
			res.Skipped++
		default:
			measured = append(measured, Measured{Keyword: kw, Where: s})
		}
	}
	if err := st.SavePopularity(ctx, measured, now); err != nil {
		res.Err = "save: " + err.Error()
		return res
	}
	res.Keywords = len(measured)
	return res
}

// Tasks are the keyword metrics' periodic work: keyword-popularity, at the
// crawl cycle's cadence, measures the due keywords' popularity from the
// hints (fetch; reserve admits a run's requests in one acquire).
func Tasks(st PopularityStore, f HintsFetcher, reserve func(ctx context.Context, n int) context.Context) []module.Task {
	return []module.Task{{
		Name: "keyword-popularity", Every: 5 * time.Minute, Jitter: time.Minute,
		Doc: "popularity from the search hints of the top clusters' keywords, at most 60 hint requests a run, each again after 30 days",
		Run: func(ctx context.Context, now func() time.Time) module.Result {
			if f == nil || st == nil {
				return module.Result{Error: "no hints source bound"}
			}
			out := RefreshPopularity(ratelimit.WithReserver(ctx, reserve), st, f, now())
			return module.Result{OK: out.Err == "" && !out.RateLimited, Summary: out.Summary(), Error: out.Err,
				RateLimited: out.RateLimited, RetryAfterS: out.RetryAfterS,
				Counters: map[string]int64{"keywords": int64(out.Keywords), "hint_requests": int64(out.Requests)}}
		},
	}}
}
