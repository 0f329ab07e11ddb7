//go:build integration

package e2e

import (
	"database/sql"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// TestLimiterExactUnderConcurrency fires concurrent acquires at one key
// through the real Worker and OmniLimiter object, and checks that exactly
// `limit` are admitted, that bad requests change nothing, that a waiting
// caller is held instead of refused, and that admissions survive a restart.
// It also checks the public limiter cannot be abused: an
// acquire needs the client token, a client naming the crawler's key
// reaches its own namespace and leaves the crawler's key untouched, and an
// idle client key is retired (its storage deleted, its D1 totals taken
// back) once its window and its tally period (LIMITER_TALLY_S) have passed.
func TestLimiterExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	// A key's tally closes every testTallyS seconds instead of every minute:
	// its facts, and an idle key's retirement, come in seconds.
	w := &worker{persist: persist, simBase: s.base, dir: dir, owner: t, vars: []string{"LIMITER_TALLY_S:" + itoa(testTallyS), "LEDGER_CONFIRM_AFTER_S:" + itoa(testConfirmS)}}
	w.start(t, "wrangler-1.log")
	acquire := w.base + "/v1/limiter/acquire"
	status := func(key string, out any) int {
		return doJSON(t, "GET", w.base+"/v1/limiter/status?key="+key, clientToken, nil, out)
	}

	const limit, callers = 10, 48
	var mu sync.Mutex
	allowed, refused := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out map[string]any
			body := fmt.Sprintf(`{"key":"e2e-hot","limit":%d,"windowInSeconds":600}`, limit)
			code := doJSON(t, "POST", acquire, clientToken, body, &out)
			mu.Lock()
			defer mu.Unlock()
			if code != 200 {
				t.Errorf("acquire: %d %v", code, out)
			} else if out["allowed"] == true {
				allowed++
			} else {
				refused++
			}
		}()
	}
	wg.Wait()
	if allowed != limit || refused != callers-limit {
		t.Fatalf("allowed %d, refused %d; want exactly %d allowed", allowed, refused, limit)
	}

	// Headers on a refusal.
	req, _ := http.NewRequest("POST", acquire, strings.NewReader(fmt.Sprintf(`{"key":"e2e-hot","limit":%d,"windowInSeconds":600}`, limit)))
	req.Header.Set("Authorization", "Bearer "+clientToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(resp.Header.Get("RateLimit"), "r=0") || !strings.Contains(resp.Header.Get("RateLimit-Policy"), "q=10") {
		t.Fatalf("refusal headers: %v", resp.Header)
	}

	// Bad requests are 400s naming the field, anonymous ones (or with the
	// admin token) 401s naming authorization, and none changes anything.
	var before, after map[string]any
	status("e2e-hot", &before)
	for _, c := range []struct{ token, body, field string }{
		{clientToken, `{"key":"e2e-hot","limit":0,"windowInSeconds":600}`, "limit"},
		{clientToken, `{"key":"e2e-hot","limit":10,"windowInSeconds":100000}`, "windowInSeconds"},
		{clientToken, `{"key":"e2e-hot","limit":10,"windowInSeconds":3601}`, "windowInSeconds"}, // a client key's longest window
		{clientToken, `{"key":"e2e-hot","limit":1001,"windowInSeconds":600}`, "limit"},          // a client sliding window's most rows
		{clientToken, `{"limit":10,"windowInSeconds":600}`, "key"},
		{clientToken, `{"key":"e2e-hot","limit":10,"windowInSeconds":600,"algorithm":"leaky"}`, "algorithm"},
		{"", `{"key":"e2e-hot","limit":10,"windowInSeconds":600}`, "authorization"},
		{adminToken, `{"key":"e2e-hot","limit":10,"windowInSeconds":600}`, "authorization"},
	} {
		var out map[string]any
		want := 400
		if c.field == "authorization" {
			want = 401
		}
		if code := doJSON(t, "POST", acquire, c.token, c.body, &out); code != want || out["field"] != c.field {
			t.Errorf("%q %s: %d %v", c.token, c.body, code, out)
		}
	}
	status("e2e-hot", &after)
	// The clock moves, and the key's own tally alarm (LIMITER_TALLY_S,
	// short here) may store its counts meanwhile: storage operations are
	// the object's, not the requests'. Everything else must not move.
	// The object's billed requests count the status read itself, and
	// nothing else: the refused requests never reached it.
	callsOf := func(m map[string]any) float64 {
		r, _ := m["requests"].(map[string]any)
		c, _ := r["calls"].(float64)
		return c
	}
	if callsOf(after) != callsOf(before)+1 {
		t.Fatalf("the limiter object served %v calls between two status reads; want 1 (the read): %v → %v", callsOf(after)-callsOf(before), before, after)
	}
	for _, m := range []map[string]any{before, after} {
		delete(m, "resetMs")
		delete(m, "storage")
		delete(m, "requests")
	}
	if jsonString(before) != jsonString(after) {
		t.Fatalf("a refused request changed the limiter: %v → %v", before, after)
	}
	counters := after["counters"].(map[string]any)
	if counters["allowed"] != float64(limit) {
		t.Fatalf("status counters: %v", after)
	}
	var out map[string]any
	if code := doJSON(t, "GET", w.base+"/v1/limiter/status?key=e2e-hot", "", nil, &out); code != 401 {
		t.Fatalf("anonymous status of a client key: %d %v", code, out)
	}
	// An unknown key's status is a 404 that leaves no storage behind.
	if code := status("e2e-never-used", &out); code != 404 {
		t.Fatalf("unknown key: %d %v", code, out)
	}
	if tables := objectTables(t, persist, "OmniLimiter", "limiter_client:e2e-never-used"); len(tables) != 0 {
		t.Fatalf("a status call of an unknown key made storage: %v", tables)
	}

	// A client naming the crawler's key spends its own key, in the client
	// namespace, even at the crawler's whole budget: the crawler's key is
	// left as it was (never used in this test: no acquire in its object).
	internal := w.base + "/v1/limiter/status?namespace=internal&key=upstream-catalogue"
	if code := doJSON(t, "GET", internal, "", nil, &out); code != 404 {
		t.Fatalf("the crawler's key before: %d %v", code, out)
	}
	if code := doJSON(t, "POST", acquire, clientToken, `{"key":"upstream-catalogue","limit":1200,"windowInSeconds":60,"algorithm":"gcra","cost":1200}`, &out); code != 200 || out["allowed"] != true {
		t.Fatalf("client acquire named upstream-catalogue: %d %v", code, out)
	}
	if code := status("upstream-catalogue", &out); code != 200 || out["counters"].(map[string]any)["allowed"] != 1.0 {
		t.Fatalf("the client's upstream-catalogue: %d %v", code, out)
	}
	if code := doJSON(t, "GET", internal, "", nil, &out); code != 404 {
		t.Fatalf("the crawler's key after a client's acquire: %d %v", code, out)
	}
	if tables := objectTables(t, persist, "OmniLimiter", "limiter_upstream-catalogue"); len(tables) != 0 {
		t.Fatalf("the crawler's key has storage after a client's acquire: %v", tables)
	}

	// waitMs holds the caller until a slot frees instead of refusing.
	doJSON(t, "POST", acquire, clientToken, `{"key":"e2e-wait","limit":1,"windowInSeconds":1}`, &out)
	start := time.Now()
	doJSON(t, "POST", acquire, clientToken, `{"key":"e2e-wait","limit":1,"windowInSeconds":1,"waitMs":3000}`, &out)
	if out["allowed"] != true || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("waiting acquire: %v after %s", out, time.Since(start))
	}

	// A key used once before the restart: its tally closes into a fact in
	// this instance (testTallyS), and it is idle once its window has passed
	// (idleWindowS, longer than the fact's way to D1 and the restart's
	// stop): its alarm fires in the next instance, which restores it from
	// storage to retire it (checked last).
	const idleWindowS = 30
	var idle map[string]any
	if code := doJSON(t, "POST", acquire, clientToken, fmt.Sprintf(`{"key":"e2e-idle","limit":1,"windowInSeconds":%d}`, idleWindowS), &idle); code != 200 || idle["allowed"] != true {
		t.Fatalf("idle key's acquire: %d %v", code, idle)
	}
	idleUsed := time.Now()
	eventually(t, idleWindowS*time.Second, "e2e-idle's tally in D1", func() (bool, string) {
		rows := d1Rows(t, persist, `SELECT COUNT(*) AS n FROM facts WHERE source = 'limiter:client:e2e-idle' AND kind = 'limiter.minute'`)
		return rows[0]["n"] == 1.0, jsonString(rows)
	})

	// Admissions are persisted: after a restart the key is still full.
	stopGroup(w.cmd)
	if d := time.Since(idleUsed); d >= idleWindowS*time.Second {
		t.Fatalf("%s from e2e-idle's use to the stop: it may have retired before the restart", d.Round(time.Second))
	}
	w.start(t, "wrangler-2.log")
	acquire = w.base + "/v1/limiter/acquire" // a new port
	doJSON(t, "POST", acquire, clientToken, fmt.Sprintf(`{"key":"e2e-hot","limit":%d,"windowInSeconds":600}`, limit), &out)
	if out["allowed"] != false {
		t.Fatalf("admissions lost across restart: %v", out)
	}

	// Another idle key, used after the restart: its tally closes in this
	// instance, so its retirement has a fact to take back.
	if code := doJSON(t, "POST", acquire, clientToken, `{"key":"e2e-idle-2","limit":3,"windowInSeconds":1}`, &out); code != 200 || out["allowed"] != true {
		t.Fatalf("second idle key: %d %v", code, out)
	}

	// The idle keys are retired by their alarms (the first after the
	// restart: the fresh instance restores it from storage first): their
	// status is a 404 again, their storage is gone, their retirement fact
	// reached D1 and took their totals back to zero (their minutes stay for
	// the history), and reconciliation reports them retired.
	for _, key := range []string{"e2e-idle", "e2e-idle-2"} {
		eventually(t, 150*time.Second, key+" retired", func() (bool, string) {
			code := status(key, &out)
			return code == 404, fmt.Sprint(code, " ", jsonString(out))
		})
		if tables := objectTables(t, persist, "OmniLimiter", "limiter_client:"+key); len(tables) != 0 {
			t.Fatalf("%s retired, its storage left: %v", key, tables)
		}
		source := "limiter:client:" + key
		eventually(t, 30*time.Second, key+"'s retirement in D1", func() (bool, string) {
			rows := d1Rows(t, persist, fmt.Sprintf(`SELECT kind FROM facts WHERE source = '%s' AND kind = 'ledger.retired'`, source))
			return len(rows) == 1, jsonString(rows)
		})
		totals := d1Rows(t, persist, fmt.Sprintf(`SELECT counter, total FROM fact_totals WHERE source = '%s'`, source))
		for _, r := range totals {
			if r["total"] != 0.0 {
				t.Fatalf("%s: a retired key's totals must net to zero: %v", key, totals)
			}
		}
		if len(totals) == 0 {
			t.Fatalf("no totals for %s", source)
		}
	}
	if rows := d1Rows(t, persist, `SELECT SUM(allowed) AS allowed FROM fact_minutes WHERE source = 'limiter:client:e2e-idle-2'`); rows[0]["allowed"] != 1.0 {
		t.Fatalf("the retired key's minute stays for the history: %v", rows)
	}
	var page ledgerView
	if code := doJSON(t, "GET", w.base+"/v1/ledger?after=limiter:client:e2e-hot&limit=2", "", nil, &page); code != 200 || len(page.Writers) != 2 ||
		page.Writers[0].Source != "limiter:client:e2e-idle" || page.Writers[0].Status != "retired" ||
		page.Writers[1].Source != "limiter:client:e2e-idle-2" || page.Writers[1].Status != "retired" {
		t.Fatalf("ledger page of the retired keys: %d %s", code, jsonString(page))
	}
	if !strings.Contains(w.log.String(), `"limiter.retired"`) {
		t.Errorf("log: want a limiter.retired event")
	}
	// Used again, a key starts afresh.
	if code := doJSON(t, "POST", acquire, clientToken, `{"key":"e2e-idle","limit":1,"windowInSeconds":1}`, &out); code != 200 || out["allowed"] != true {
		t.Fatalf("the retired key used again: %d %v", code, out)
	}
	if code := status("e2e-idle", &out); code != 200 || out["counters"].(map[string]any)["allowed"] != 1.0 {
		t.Fatalf("the retired key's new counters: %d %v", code, out)
	}
}

// objectTables lists the tables a Durable Object's local storage holds (the
// object by name, as idFromName got it), besides the one wrangler dev's
// local runtime (miniflare) adds to name the object: none when the object
// never wrote, or was deleted, or was never made.
func objectTables(t *testing.T, persist, class, name string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(persist, "v3", "do", "storecrawl-"+class, "*.sqlite"))
	for _, f := range files {
		if filepath.Base(f) == "metadata.sqlite" {
			continue
		}
		db, err := sql.Open("sqlite", "file:"+f+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		var tables []string
		named := false
		rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
		if err != nil {
			db.Close()
			t.Fatalf("%s: %v", f, err)
		}
		for rows.Next() {
			var n string
			rows.Scan(&n)
			tables = append(tables, n)
		}
		rows.Close()
		var got string
		if slices.Contains(tables, "__miniflare_do_name") && db.QueryRow(`SELECT name FROM __miniflare_do_name`).Scan(&got) == nil && got == name {
			named = true
		}
		db.Close()
		if named {
			return slices.DeleteFunc(tables, func(n string) bool { return n == "__miniflare_do_name" })
		}
	}
	return nil // never made, or deleted with its name table
}
