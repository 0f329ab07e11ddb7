package reviews

import (
	"context"
	"errors"
	"fmt"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/upstream"
)

// The reviews-refresh task's bounds: which apps, how many a run, how often.
const (
	// RefreshClusters is how many of the top opportunity clusters have
	// their members' reviews kept: the analyst briefs the top clusters.
	RefreshClusters = 10
	// RefreshAppsPerRun bounds one run: one feed request an app, under
	// the reviews' own global limit, so a run stays a few seconds.
	RefreshAppsPerRun = 5
	// RefreshAge is when an app's reviews are due again: the feed is most
	// recent first, and a day of new reviews is what a brief can use.
	RefreshAge = 24 * time.Hour
)

// RefreshStore is what the refresh reads and writes.
type RefreshStore interface {
	// DueApps lists up to n members of the top clusters whose reviews in
	// country were never fetched or fetched before staleBefore, the
	// clusters' leaders first.
	DueApps(ctx context.Context, country string, clusters, n int, staleBefore time.Time) ([]int64, error)
	// SaveFetch stores a fetched page's reviews (scored) and the fetch, in
	// one batch.
	SaveFetch(ctx context.Context, appID int64, country string, rs []Review, at time.Time) error
}

// RefreshResult is one run of the refresh.
type RefreshResult struct {
	Apps, Reviews, Failed int
	// RateLimited: the feed refused (429/403); the run stopped there.
	RateLimited bool
	RetryAfterS int
	Err         string
}

// Summary is the task's one-line result.
func (r RefreshResult) Summary() string {
	s := fmt.Sprintf("%d apps, %d reviews", r.Apps, r.Reviews)
	if r.Failed > 0 {
		s += fmt.Sprintf(", %d failed", r.Failed)
	}
	if r.RateLimited {
		s += " (rate limited)"
	}
	return s
}

// Refresh fetches page 1 of the feed (the most recent reviews) of the
// apps due, through fetch (the reviews' global limit), and stores them.
// A refusal stops the run and says so (the scheduler honours it); another
// failure skips the app, which stays due.
func Refresh(ctx context.Context, st RefreshStore, fetch func(ctx context.Context, url string) upstream.Response, base, country string, now time.Time) RefreshResult {
	var res RefreshResult
	apps, err := st.DueApps(ctx, country, RefreshClusters, RefreshAppsPerRun, now.Add(-RefreshAge))
	if err != nil {
		res.Err = "due apps: " + err.Error()
		return res
	}
	// The run's feeds in one acquire when ctx carries a reserver: one
	// Durable Object request, not one a feed.
	ctx = ratelimit.Reserved(ctx, len(apps))
	for _, id := range apps {
		r := fetch(ctx, FeedURL(base, country, 1, id))
		if r.Class == objects.ClassRateLimit {
			res.RateLimited, res.RetryAfterS = true, r.RetryAfterS
			return res
		}
		var page Page
		if r.Class == objects.ClassOK {
			page, err = Parse(r.Body, id, country)
		} else {
			err = fmt.Errorf("HTTP %d (%s): %v", r.Status, r.Class, r.Err)
		}
		r.Release()
		if err != nil && !errors.Is(err, ErrPageDepth) {
			res.Failed++
			res.Err = fmt.Sprintf("app %d: %v", id, err)
			continue
		}
		if err := st.SaveFetch(ctx, id, country, page.Reviews, now); err != nil {
			res.Failed++
			res.Err = fmt.Sprintf("app %d: save: %v", id, err)
			continue
		}
		res.Apps++
		res.Reviews += len(page.Reviews)
	}
	if res.Failed == 0 {
		res.Err = ""
	}
	return res
}
