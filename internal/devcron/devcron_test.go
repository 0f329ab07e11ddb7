package devcron

import (
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStripJSONC(t *testing.T) {
	src := `// head
{
  "a": "http://x/y", // a URL keeps its //
  /* block
     comment */ "b": ["*/5 * * * *", "x,]"],
  "c": "quote \" // still a string",
  "d": [1, 2,],
  "e": {"f": true,},
}
`
	out, err := StripJSONC([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if v["a"] != "http://x/y" || v["c"] != `quote " // still a string` {
		t.Fatalf("strings changed: %v", v)
	}
	if b := v["b"].([]any); len(b) != 2 || b[0] != "*/5 * * * *" || b[1] != "x,]" {
		t.Fatalf("b: %v", v["b"])
	}
	if d := v["d"].([]any); len(d) != 2 {
		t.Fatalf("d: %v", v["d"])
	}
	for _, bad := range []string{`{"a": "open`, `{"a": 1 /* open`} {
		if _, err := StripJSONC([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The project's own wrangler.jsonc reads, with its three crons in order.
func TestCronsOfTheProjectsWranglerJSONC(t *testing.T) {
	raw, err := os.ReadFile("../../wrangler.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := Crons(raw)
	if err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, c := range cs {
		exprs = append(exprs, c.Expr)
	}
	if !slices.Equal(exprs, []string{"*/5 * * * *", "0 */6 * * *", "0 3 * * *"}) {
		t.Fatalf("crons %v", exprs)
	}
}

func TestCronsRefusesBadConfig(t *testing.T) {
	for name, src := range map[string]string{
		"no crons":   `{"triggers": {"crons": []}}`,
		"no trigger": `{"name": "x"}`,
		"bad expr":   `{"triggers": {"crons": ["*/5 * * *"]}}`,
		"not json":   `{"triggers": `,
	} {
		if _, err := Crons([]byte(src)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseSpeedup(t *testing.T) {
	for raw, want := range map[string]float64{"": 1, "1": 1, "10": 10, "2.5": 2.5, "100": 100} {
		if k, err := ParseSpeedup(raw); err != nil || k != want {
			t.Errorf("%q: %v %v, want %v", raw, k, err, want)
		}
	}
	for _, raw := range []string{"0", "-1", "abc", "NaN", "Inf", "101", "1e9"} {
		if _, err := ParseSpeedup(raw); err == nil || !strings.Contains(err.Error(), SpeedupVar) {
			t.Errorf("%q: %v, want an error naming %s", raw, err, SpeedupVar)
		}
	}
}

func mustCron(t *testing.T, expr string) Cron {
	t.Helper()
	cs, err := Crons([]byte(`{"triggers": {"crons": ["` + expr + `"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

func TestClockNext(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 2, 0, 0, time.UTC)
	five, sixH, daily := mustCron(t, "*/5 * * * *"), mustCron(t, "0 */6 * * *"), mustCron(t, "0 3 * * *")
	real := Clock{Start: start, Speedup: 1}
	for _, c := range []struct {
		cron  Cron
		after time.Time
		want  time.Time
	}{
		// The real schedule, in UTC, strictly after.
		{five, start, time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC)},
		{five, time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC), time.Date(2026, 3, 1, 12, 10, 0, 0, time.UTC)},
		{sixH, start, time.Date(2026, 3, 1, 18, 0, 0, 0, time.UTC)},
		{daily, start, time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)},
	} {
		if got := real.Next(c.cron, c.after); !got.Equal(c.want) {
			t.Errorf("%s after %s: %s, want %s", c.cron.Expr, c.after, got, c.want)
		}
	}
	// Ten times as fast: the first */5 comes at the sped-up clock's 12:05
	// (3 virtual minutes, 18 s), then every 30 s; the six-hourly one at
	// 18:00 virtual (598 virtual minutes, 35.8 real), then every 36 minutes.
	fast := Clock{Start: start, Speedup: 10}
	at := fast.Next(five, start)
	if want := start.Add(18 * time.Second); !at.Equal(want) {
		t.Fatalf("first */5 at %s, want %s", at, want)
	}
	for range 5 {
		next := fast.Next(five, at)
		if next.Sub(at) != 30*time.Second {
			t.Fatalf("*/5 at 10x: %s after %s, want every 30 s", next, at)
		}
		at = next
	}
	if got := fast.Next(sixH, start); !got.Equal(start.Add(358 * time.Minute / 10)) {
		t.Fatalf("0 */6 at 10x: %s", got)
	}
	at = fast.Next(sixH, start)
	if next := fast.Next(sixH, at); next.Sub(at) != 36*time.Minute {
		t.Fatalf("0 */6 at 10x: every %s, want 36m", next.Sub(at))
	}
	// A fire that ran past its next slots: the next is the first slot
	// after it ended, never one in the past.
	late := start.Add(95 * time.Second)
	if got := fast.Next(five, late); !got.Equal(start.Add(108 * time.Second)) {
		t.Fatalf("after a long fire: %s", got)
	}
}

func TestFireURLIsLoopbackAndEncoded(t *testing.T) {
	u, err := url.Parse(FireURL(8787, "*/5 * * * *"))
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() != "8787" || u.Path != "/__scheduled" || u.Query().Get("cron") != "*/5 * * * *" {
		t.Fatalf("%s", u)
	}
	if ValidPort(0) || ValidPort(65536) || !ValidPort(8787) {
		t.Fatal("port bounds")
	}
}
