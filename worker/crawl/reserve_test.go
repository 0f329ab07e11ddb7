package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/ratelimit/ratelimittest"
	"storecrawl/worker/upstream"
)

// noEvents takes the cycle's events and drops them.
type noEvents struct{}

func (noEvents) Send(context.Context, string) error { return nil }

func reservingCrawler(t *testing.T, f *fakeDiscovery, lim *ratelimittest.Limiter) (*Crawler, *atomic.Int64) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		if r.URL.Path == "/search" {
			fmt.Fprint(w, `{"resultCount":1,"results":[{"trackId":5,"trackName":"x","artistId":77,"artistName":"Dev"}]}`)
			return
		}
		fmt.Fprint(w, `{"feed":{"results":[{"id":"1","name":"a"}]}}`)
	}))
	t.Cleanup(srv.Close)
	up := upstream.Limited{Client: &upstream.Client{HTTP: srv.Client(), Timeout: 5 * time.Second},
		Limits: &ratelimit.Client{Caller: lim, MaxWait: time.Millisecond, Sleep: noSleep}, Key: upstream.CatalogueLimit}
	return &Crawler{Store: f, Fetch: up.Get, Reserve: up.Reserve, Events: noEvents{}, APIBase: srv.URL, Country: "us", Sleep: noSleep}, &sent
}

// A cycle's scan and its keyword mapping each ask the API host's limit
// once, for all they send: two limiter calls for 3 charts and 40
// searches, where there were 43.
func TestACycleReservesItsSendsInOneAcquireATask(t *testing.T) {
	var kws []string
	for k := range 40 {
		kws = append(kws, fmt.Sprintf("kw%d", k))
	}
	f := &fakeDiscovery{due: map[string]bool{"high": true}, pending: kws}
	lim := ratelimittest.New(time.Now())
	c, sent := reservingCrawler(t, f, lim)
	r := c.Run(context.Background(), 0.5, time.Now())
	if r.Action != "category_scan" || r.Side == nil || r.Side.Found != 40 || len(f.rankings) != 40 || len(f.saved) != len(appstore.ChartCollections) {
		t.Fatalf("cycle %+v side %+v rankings %d charts %d", r, r.Side, len(f.rankings), len(f.saved))
	}
	costs := lim.Costs()[upstream.CatalogueLimit]
	if sent.Load() != 43 || len(costs) != 2 || costs[0]+costs[1] != 43 {
		t.Fatalf("%d sent, limiter calls %v: want two, of 3 and 40", sent.Load(), costs)
	}
}

// A refused reservation refuses the searches it was for: nothing is sent,
// nothing saved, the keywords stay due, and the limiter was asked once.
func TestARefusedReservationKeepsTheKeywordsDue(t *testing.T) {
	f := &fakeDiscovery{due: map[string]bool{}, pending: []string{"a", "b", "c", "d", "e", "f", "g"}}
	lim := ratelimittest.New(time.Now())
	lim.Take(upstream.CatalogueLimit, ratelimit.Limits[upstream.CatalogueLimit], 1198) // 2 of 1,200 left
	c, sent := reservingCrawler(t, f, lim)
	r := c.Run(context.Background(), 0.5, time.Now())
	if r.Action != "keyword_mapping" || !r.RateLimited || r.Found != 0 || r.Refused == 0 || len(f.rankings) != 0 || sent.Load() != 0 {
		t.Fatalf("cycle %+v, rankings %v, %d sent", r, f.rankings, sent.Load())
	}
	costs := lim.Costs()[upstream.CatalogueLimit]
	if len(costs) != 1 || costs[0] != 7 || strings.Contains(r.Error, "limiter") {
		t.Fatalf("limiter calls %v, error %q", costs, r.Error)
	}
}
