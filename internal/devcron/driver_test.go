package devcron

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeWorker is wrangler dev's side: /health (failing its first
// unhealthy probes) and /__scheduled, recording each fire's cron.
type fakeWorker struct {
	mu        sync.Mutex
	unhealthy int
	fires     []string
	status    int
}

func (f *fakeWorker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/health":
		if f.unhealthy > 0 {
			f.unhealthy--
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	case "/__scheduled":
		if f.unhealthy > 0 {
			panic("fired before /health answered")
		}
		f.fires = append(f.fires, r.URL.Query().Get("cron"))
		if f.status != 0 {
			w.WriteHeader(f.status)
			w.Write([]byte("boom"))
		}
	}
}

func (f *fakeWorker) count(expr string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.fires {
		if c == expr {
			n++
		}
	}
	return n
}

func startFake(t *testing.T, f *fakeWorker) int {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	return port
}

type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lines) events(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(l.b.String()))
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not one JSON object a line: %q", sc.Text())
		}
		out = append(out, ev)
	}
	return out
}

// The driver waits for /health, fires every cron once in the config's
// order, then each on its (here very much sped-up) schedule, one JSON
// line per fire, and stops with its context.
func TestDriverFiresEachCronOnceAtHealthThenOnSchedule(t *testing.T) {
	t.Parallel()
	f := &fakeWorker{unhealthy: 3}
	port := startFake(t, f)
	every, daily := mustCron(t, "* * * * *"), mustCron(t, "0 3 * * *")
	out := &lines{}
	// 6000 times as fast: the every-minute cron fires every 10 ms; the
	// daily one not again within the test.
	d := &Driver{Port: port, Crons: []Cron{daily, every}, Speedup: 6000, Out: out, HealthPoll: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for f.count(every.Expr) < 5 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the driver did not stop with its context")
	}
	f.mu.Lock()
	fires := append([]string(nil), f.fires...)
	f.mu.Unlock()
	if len(fires) < 5 || fires[0] != daily.Expr || fires[1] != every.Expr {
		t.Fatalf("fires %v: want each cron once in order, then the every-minute one again", fires)
	}
	if n := f.count(daily.Expr); n != 1 {
		t.Fatalf("daily fired %d times", n)
	}
	evs := out.events(t)
	if evs[0]["event"] != "dev_cron.start" {
		t.Fatalf("first event %v", evs[0])
	}
	logged := 0
	for _, ev := range evs[1:] {
		if ev["event"] != "dev_cron.fire" {
			t.Fatalf("event %v", ev)
		}
		logged++
		if ev["status"] != 200.0 || ev["duration_ms"] == nil || ev["next_at"] == nil || ev["level"] != "info" {
			t.Fatalf("fire event %v", ev)
		}
		if first := ev["first"] == true; first != (logged <= 2) {
			t.Fatalf("fire %d: first=%v", logged, ev["first"])
		}
	}
	if logged < len(fires)-1 || logged > len(fires) {
		t.Fatalf("%d fire events for %d fires", logged, len(fires))
	}
}

// A failed fire is a warning with the answer's status and text; the
// driver goes on.
func TestDriverLogsAFailedFireAndGoesOn(t *testing.T) {
	t.Parallel()
	f := &fakeWorker{status: http.StatusInternalServerError}
	port := startFake(t, f)
	every := mustCron(t, "* * * * *")
	out := &lines{}
	d := &Driver{Port: port, Crons: []Cron{every}, Speedup: 6000, Out: out, HealthPoll: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for f.count(every.Expr) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if f.count(every.Expr) < 2 {
		t.Fatal("the driver stopped after a failed fire")
	}
	for _, ev := range out.events(t) {
		if ev["event"] == "dev_cron.fire" {
			if ev["level"] != "warn" || ev["status"] != 500.0 || !strings.Contains(ev["error"].(string), "boom") {
				t.Fatalf("failed fire event %v", ev)
			}
			return
		}
	}
	t.Fatal("no fire event")
}

func TestDriverRefusesABadPort(t *testing.T) {
	if err := (&Driver{Port: 70000}).Run(context.Background()); err == nil {
		t.Fatal("port 70000 accepted")
	}
}
