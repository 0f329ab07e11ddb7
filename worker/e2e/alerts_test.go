//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/internal/devstack"
	"storecrawl/worker/alerts"
)

// simOrder is the simulator's search result for term, in rank order.
func simOrder(t *testing.T, s *sim, term string) []int64 {
	t.Helper()
	var out struct {
		Results []struct {
			TrackID int64 `json:"trackId"`
		} `json:"results"`
	}
	if code := doJSON(t, "GET", s.base+"/search?"+url.Values{"term": {term}, "limit": {"50"}, "country": {"us"}, "entity": {"software"}}.Encode(), "", nil, &out); code != 200 {
		t.Fatalf("sim search: %d", code)
	}
	ids := make([]int64, len(out.Results))
	for i, r := range out.Results {
		ids[i] = r.TrackID
	}
	return ids
}

// received is what a webhook receiver got.
type received struct {
	body []byte
	sig  string
}

// watchBrowserTimeout bounds watch.mjs; its steps time out after 30 s each.
const watchBrowserTimeout = 2 * time.Minute

// watchedAppID is the app the person watches besides the keyword: an
// enriched app of the catalogue, outside the simulator's ids.
const watchedAppID = 990000001

// A person watches a keyword in the explorer (headless Chromium runs
// worker/e2e/browser/watch.mjs: search, the keyword's page, Watch with the
// admin token typed once; screenshots in .test-output/<test>/) and sets a
// rank_change rule on the watch in its "Alert me" form, which shows the
// rule's signing secret once, and watches an app on its page with a
// rating_drop rule from the app's rule types; then the keyword's app moves in the store:
// the crawl searches the keyword again, alerts-evaluate makes a
// rank_change alert, the queue delivers it to a webhook receiver on
// loopback, signed with that secret, and the explorer's Alerts page shows
// it delivered and lists the watches with their rules, which the person
// then deletes there.
func TestAlertReachesSignedWebhook(t *testing.T) {
	t.Parallel()
	node := browserNode(t)
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "3000", "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	// No category due: the crawl cycle maps keywords, 'budget' the one pending.
	seedSQL(t, persist, `UPDATE category_scans SET last_scanned_at = strftime('%Y-%m-%dT%H:%M:%fZ','now');
INSERT INTO crawl_keywords (keyword, source, created_at, value) VALUES ('budget','title','2026-01-01T00:00:00.000Z',1000);
INSERT INTO app_registry (track_id, name, rating_count, average_rating, enrichment_source, enriched_at)
VALUES (`+fmt.Sprint(watchedAppID)+`, 'Ledger Lite', 120, 4.4, 'page', '2026-01-01T00:00:00.000Z');`)

	var mu sync.Mutex
	var got []received
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{body: b, sig: r.Header.Get(alerts.SignatureHeader)})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	w := startWorker(t, dir, persist, s.base)
	// The controller stays stopped: no enrichment queues other keywords.
	doJSON(t, "POST", w.base+"/v1/enrichment/stop", adminToken, nil, nil)

	// A person watches the keyword in the explorer (watch.mjs: search,
	// the keyword's page, Watch, the admin token typed once) and sets the
	// rule in the watch's form.
	started := time.Now()
	out, err := devstack.RunBounded(node, []string{filepath.Join(root, "worker", "e2e", "browser", "watch.mjs"),
		"--base", w.base, "--token", adminToken, "--keyword", "budget", "--hook", receiver.URL + "/hook", "--app", fmt.Sprint(watchedAppID), "--out", dir, "--chromium", chromiumPath}, root, toolEnv(), watchBrowserTimeout)
	os.WriteFile(filepath.Join(dir, "browser.log"), out, 0o644)
	if err != nil {
		t.Fatalf("browser test failed (%v) after %s; screenshots and log in %s:\n%s", err, time.Since(started).Round(time.Second), dir, out)
	}
	t.Logf("the keyword watched in the browser in %s:\n%s", time.Since(started).Round(time.Second), strings.TrimSpace(string(out)))
	for _, p := range []string{"watch-search", "watch-keyword", "watch-rule", "watch-app"} {
		if fi, err := os.Stat(filepath.Join(dir, p+".png")); err != nil || fi.Size() < 10_000 {
			t.Fatalf("screenshot %s missing or empty: %v", p, err)
		}
	}
	var watches struct {
		Items []struct {
			ID     int64  `json:"id"`
			Kind   string `json:"kind"`
			Target string `json:"target"`
		} `json:"items"`
	}
	doJSON(t, "GET", w.base+"/v1/watches", "", nil, &watches)
	if len(watches.Items) != 2 || watches.Items[0].Kind != "keyword" || watches.Items[0].Target != "budget" ||
		!strings.Contains(string(out), fmt.Sprintf("watch_id=%d\n", watches.Items[0].ID)) ||
		watches.Items[1].Kind != "app" || watches.Items[1].Target != fmt.Sprint(watchedAppID) ||
		!strings.Contains(string(out), fmt.Sprintf("app_watch_id=%d\n", watches.Items[1].ID)) {
		t.Fatalf("watches after the browser: %s", jsonString(watches))
	}
	// The rules the forms made: the keyword's, with the secret the page
	// showed (the API's answer to the page, which watch.mjs compared with
	// the page), and the app's.
	rule := browserRule(t, out)
	var rules struct {
		Items []struct {
			ID      int64   `json:"id"`
			Type    string  `json:"type"`
			WatchID *int64  `json:"watch_id"`
			Places  int     `json:"places"`
			Drop    float64 `json:"drop"`
			Channel string  `json:"channel"`
			URL     string  `json:"url"`
		} `json:"items"`
	}
	doJSON(t, "GET", w.base+"/v1/alert-rules", "", nil, &rules)
	if len(rules.Items) != 2 || rules.Items[0].ID != rule.ID || rules.Items[0].Type != "rank_change" || rules.Items[0].Places != 1 ||
		rules.Items[0].WatchID == nil || *rules.Items[0].WatchID != watches.Items[0].ID || rules.Items[0].Channel != "webhook" ||
		rules.Items[0].URL != alerts.MaskURL(receiver.URL+"/hook") ||
		rules.Items[1].Type != "rating_drop" || rules.Items[1].Drop != 0.5 || rules.Items[1].WatchID == nil || *rules.Items[1].WatchID != watches.Items[1].ID ||
		!strings.Contains(string(out), fmt.Sprintf("app_rule_id=%d\n", rules.Items[1].ID)) {
		t.Fatalf("rules after the browser: %s", jsonString(rules))
	}
	evaluate := func() string {
		t.Helper()
		var out map[string]any
		if code := doJSON(t, "POST", w.base+"/v1/scheduler/run", adminToken, map[string]any{"task": "alerts-evaluate", "wait": true}, &out); code != 200 || out["ok"] != true {
			t.Fatalf("alerts-evaluate: %d %v", code, out)
		}
		return fmt.Sprint(out["summary"])
	}
	search := func() {
		t.Helper()
		// The cycle searches budget, among whatever other keywords the
		// search hints have queued by then.
		run := fireCron(t, w, "*/5 * * * *")
		searched := d1Rows(t, persist, `SELECT searched_at FROM crawl_keywords WHERE keyword = 'budget'`)
		if run.Crawl == nil || run.Crawl.Action != "keyword_mapping" || run.Crawl.Found < 1 || len(searched) != 1 || searched[0]["searched_at"] == nil {
			t.Fatalf("the crawl did not search budget: %s, budget %v", jsonString(run), searched)
		}
	}

	// The first search is the watch's baseline.
	search()
	t.Logf("baseline: %s", evaluate())
	before := simOrder(t, s, "budget")
	if len(before) < 3 {
		t.Fatalf("budget matches %d apps", len(before))
	}

	// The store moves: simulated hours of rating changes until the
	// keyword's order changes.
	for hour := 0; slices.Equal(before, simOrder(t, s, "budget")); hour++ {
		if hour == 20 {
			t.Fatal("20 simulated hours moved no rank")
		}
		s.setConfig(t, map[string]any{"catalogue_changes_per_hour": 3000, "catalogue_hour_s": 1, "catalogue_seed": 11 + hour})
		time.Sleep(1100 * time.Millisecond)
		s.setConfig(t, map[string]any{"catalogue_changes_per_hour": 0})
	}
	t.Logf("budget: %v → %v", before, simOrder(t, s, "budget"))

	// The keyword comes due again, first of the pick (an operator seed's
	// value); the crawl searches it; the evaluation alerts.
	wrangler(t, persist, "d1", "execute", "DB", "--local", "--command", `UPDATE crawl_keywords SET searched_at = NULL, value = 1000 WHERE keyword = 'budget'`)
	search()
	t.Logf("after the move: %s", evaluate())

	var first received
	eventually(t, time.Minute, "a signed alert at the receiver", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 {
			return false, "nothing received"
		}
		first = got[0]
		return true, ""
	})
	if err := alerts.Verify(rule.Secret, first.sig, first.body, time.Now(), alerts.SignatureTolerance); err != nil {
		t.Fatalf("signature %q: %v", first.sig, err)
	}
	var p alerts.Payload
	if err := json.Unmarshal(first.body, &p); err != nil || p.Type != alerts.RankChange || p.RuleID != rule.ID || p.Data["keyword"] != "budget" || p.Text == "" {
		t.Fatalf("payload %s", first.body)
	}
	t.Logf("received: %s", first.body)

	var page struct {
		Items []alerts.Alert `json:"items"`
	}
	eventually(t, 30*time.Second, "the alert marked delivered", func() (bool, string) {
		doJSON(t, "GET", w.base+"/v1/alerts", "", nil, &page)
		for _, a := range page.Items {
			if a.ID == p.ID {
				return a.State == "delivered" && a.Attempts == 1, jsonString(a)
			}
		}
		return false, jsonString(page)
	})

	// The person sees it on the explorer's Alerts page, with the watch and
	// its rule, and deletes the watch there.
	out, err = devstack.RunBounded(node, []string{filepath.Join(root, "worker", "e2e", "browser", "watch.mjs"),
		"--base", w.base, "--alert", fmt.Sprint(p.ID), "--token", adminToken, "--out", dir, "--chromium", chromiumPath}, root, toolEnv(), watchBrowserTimeout)
	os.WriteFile(filepath.Join(dir, "browser-alerts.log"), out, 0o644)
	if err != nil {
		t.Fatalf("the alerts page in the browser failed (%v); screenshots and log in %s:\n%s", err, dir, out)
	}
	t.Logf("the alert on the Alerts page:\n%s", strings.TrimSpace(string(out)))
	if fi, err := os.Stat(filepath.Join(dir, "watch-alerts.png")); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot watch-alerts missing or empty: %v", err)
	}
	doJSON(t, "GET", w.base+"/v1/watches", "", nil, &watches)
	doJSON(t, "GET", w.base+"/v1/alert-rules", "", nil, &rules)
	if len(watches.Items) != 0 || len(rules.Items) != 0 {
		t.Fatalf("after Delete on the Alerts page: watches %s, rules %s", jsonString(watches), jsonString(rules))
	}
}

// browserRule is the rule watch.mjs made in the form, from its
// "rule_id=N" and "secret=..." lines.
func browserRule(t *testing.T, out []byte) (rule struct {
	ID     int64
	Secret string
}) {
	t.Helper()
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "rule_id="); ok {
			fmt.Sscan(v, &rule.ID)
		}
		if v, ok := strings.CutPrefix(line, "secret="); ok {
			rule.Secret = strings.TrimSpace(v)
		}
	}
	if rule.ID <= 0 || !strings.HasPrefix(rule.Secret, "whsec_") {
		t.Fatalf("the browser printed no rule_id and secret:\n%s", out)
	}
	return rule
}
