package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/crawl"
)

type recordingSeeds struct {
	keywords [][]string
	ids      [][]int64
}

func (r *recordingSeeds) Seed(_ context.Context, kws []string, ids []int64, _ time.Time) (crawl.SeedResult, error) {
	r.keywords, r.ids = append(r.keywords, kws), append(r.ids, ids)
	return crawl.SeedResult{Keywords: len(kws), Apps: len(ids), NewApps: len(ids)}, nil
}

// TestCrawlSeedsRoute: a bad body is a 400 naming its field and seeds
// nothing; a good one is queued, keywords normalized, each once.
func TestCrawlSeedsRoute(t *testing.T) {
	rec := &recordingSeeds{}
	s := NewServer(&Server{Seeds: rec, AdminToken: func() string { return "secret" }})
	many := func(n int, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return strings.Join(parts, ",")
	}
	for _, bad := range []struct{ token, body, field string }{
		{"", `{"keywords":["a"]}`, "authorization"},
		{"secret", ``, "body"},
		{"secret", `[1]`, "body"},
		{"secret", `{}`, "body"},
		{"secret", `{"keywords":[],"app_ids":[]}`, "body"},
		{"secret", `{"keyword":["a"]}`, "keyword"},
		{"secret", `{"keywords":"budget"}`, "keywords"},
		{"secret", `{"keywords":["budget",""]}`, "keywords"},
		{"secret", `{"keywords":["   "]}`, "keywords"},
		{"secret", `{"keywords":[1]}`, "keywords"},
		{"secret", `{"keywords":["` + strings.Repeat("a", crawl.MaxSeedKeywordLen+1) + `"]}`, "keywords"},
		{"secret", `{"keywords":[` + many(crawl.MaxSeedKeywords+1, func(i int) string { return fmt.Sprintf(`"k%d"`, i) }) + `]}`, "keywords"},
		{"secret", `{"app_ids":123}`, "app_ids"},
		{"secret", `{"app_ids":[0]}`, "app_ids"},
		{"secret", `{"app_ids":[-5]}`, "app_ids"},
		{"secret", `{"app_ids":[1.5]}`, "app_ids"},
		{"secret", `{"app_ids":["123"]}`, "app_ids"},
		{"secret", `{"keywords":["ok"],"app_ids":[1,"x"]}`, "app_ids"},
		{"secret", `{"app_ids":[` + many(crawl.MaxSeedApps+1, func(i int) string { return fmt.Sprint(i + 1) }) + `]}`, "app_ids"},
	} {
		status, body := call(t, s, "POST", "/v1/crawl/seeds", bad.token, bad.body)
		if status/100 != 4 || body["field"] != bad.field {
			t.Errorf("%.80s: %d %v, want 4xx naming %s", bad.body, status, body, bad.field)
		}
	}
	if len(rec.keywords) != 0 {
		t.Fatalf("a refused request seeded something: %v %v", rec.keywords, rec.ids)
	}
	status, body := call(t, s, "POST", "/v1/crawl/seeds", "secret", `{"keywords":["Budget  Planner","budget planner","chess"],"app_ids":[284882215,284882215,389801252]}`)
	if status != 200 || body["keywords"] != 2.0 || body["apps"] != 2.0 || body["new_apps"] != 2.0 {
		t.Fatalf("%d %v", status, body)
	}
	if fmt.Sprint(rec.keywords[0]) != "[budget planner chess]" || fmt.Sprint(rec.ids[0]) != "[284882215 389801252]" {
		t.Fatalf("seeded %v %v", rec.keywords, rec.ids)
	}
	if status, _ := call(t, s, "POST", "/v1/crawl/seeds", "secret", `{"app_ids":[7]}`); status != 200 || len(rec.ids) != 2 {
		t.Fatalf("ids alone: %d", status)
	}
}
