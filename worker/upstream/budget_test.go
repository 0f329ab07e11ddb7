package upstream

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/bytebudget"
)

func bodyServer(t *testing.T, size int) *httptest.Server {
	body := bytes.Repeat([]byte("x"), size)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	t.Cleanup(srv.Close)
	return srv
}

func TestBodyHoldsItsRoomUntilReleased(t *testing.T) {
	srv := bodyServer(t, 300<<10)
	budget := bytebudget.New(1 << 20)
	c := &Client{HTTP: srv.Client(), Timeout: 5 * time.Second}
	r := c.Get(WithBodyBudget(context.Background(), budget), srv.URL)
	if r.Class != objects.ClassOK || len(r.Body) != 300<<10 {
		t.Fatalf("class %s, %d bytes, err %v", r.Class, len(r.Body), r.Err)
	}
	if got := budget.InUse(); got != 300<<10 {
		t.Fatalf("a body read must hold its bytes: %d in use, want %d", got, 300<<10)
	}
	r.Release()
	r.Release()
	if got := budget.InUse(); got != 0 {
		t.Fatalf("released body still holds %d bytes", got)
	}
}

func TestBodyWithoutRoomFailsAtOnce(t *testing.T) {
	srv := bodyServer(t, 300<<10)
	budget := bytebudget.New(1 << 20)
	others := budget.Lease()
	others.Take(900 << 10) // the other items' bodies
	c := &Client{HTTP: srv.Client(), Timeout: 5 * time.Second}
	r := c.Get(WithBodyBudget(context.Background(), budget), srv.URL)
	if r.Class != objects.ClassTimeout || !errors.Is(r.Err, ErrBodyBudget) || r.Body != nil {
		t.Fatalf("over the budget: class %s err %v, %d bytes kept", r.Class, r.Err, len(r.Body))
	}
	if got := budget.InUse(); got != 900<<10 {
		t.Fatalf("a refused body must give back what it read: %d in use, want %d", got, 900<<10)
	}
	others.Release()
	if r = c.Get(WithBodyBudget(context.Background(), budget), srv.URL); r.Class != objects.ClassOK {
		t.Fatalf("with room again: class %s err %v", r.Class, r.Err)
	}
}

func TestNoBudgetIsUnbounded(t *testing.T) {
	srv := bodyServer(t, 300<<10)
	c := &Client{HTTP: srv.Client(), Timeout: 5 * time.Second}
	r := c.Get(context.Background(), srv.URL)
	if r.Class != objects.ClassOK || len(r.Body) != 300<<10 {
		t.Fatalf("class %s, %d bytes, err %v", r.Class, len(r.Body), r.Err)
	}
	r.Release()
}

// manualTimer is a Client.After the test fires.
type manualTimer struct {
	asked   chan time.Duration
	fire    chan time.Time
	stopped chan struct{}
}

func newManualTimer() *manualTimer {
	return &manualTimer{asked: make(chan time.Duration, 1), fire: make(chan time.Time, 1), stopped: make(chan struct{}, 1)}
}

func (m *manualTimer) After(d time.Duration) (<-chan time.Time, func()) {
	m.asked <- d
	return m.fire, func() { m.stopped <- struct{}{} }
}

func TestTimeoutRunsOnTheInjectedTimer(t *testing.T) {
	hang := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	timer := newManualTimer()
	// An hour: only the injected timer can end this call within the test.
	c := &Client{HTTP: srv.Client(), Timeout: time.Hour, After: timer.After}
	done := make(chan Response, 1)
	go func() { done <- c.Get(context.Background(), srv.URL) }()
	<-arrived
	select {
	case d := <-timer.asked:
		if d != time.Hour {
			t.Fatalf("timer asked for %s, want the call's timeout", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call's timeout must run on Client.After")
	}
	select {
	case r := <-done:
		t.Fatalf("answered before its timer fired: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	timer.fire <- time.Now()
	select {
	case r := <-done:
		if r.Class != objects.ClassTimeout {
			t.Fatalf("class %s err %v", r.Class, r.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the injected timer firing did not end the call")
	}
}

func TestAnsweredCallStopsItsTimer(t *testing.T) {
	srv := bodyServer(t, 10)
	timer := newManualTimer()
	c := &Client{HTTP: srv.Client(), Timeout: time.Hour, After: timer.After}
	if r := c.Get(context.Background(), srv.URL); r.Class != objects.ClassOK {
		t.Fatalf("class %s err %v", r.Class, r.Err)
	}
	select {
	case <-timer.stopped:
	default:
		t.Fatal("the timer of an answered call must be stopped (a JS timer holds a callback until cleared)")
	}
}

func TestAbandonedCallGivesBackItsRoom(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 200<<10))
		w.(http.Flusher).Flush()
		select { // the rest of the body never comes
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	budget := bytebudget.New(1 << 20)
	timer := newManualTimer()
	c := &Client{HTTP: srv.Client(), Timeout: time.Hour, After: timer.After}
	done := make(chan Response, 1)
	go func() { done <- c.Get(WithBodyBudget(context.Background(), budget), srv.URL) }()
	waitFor(t, func() bool { return budget.InUse() > 0 }, "the body to be read in part")
	timer.fire <- time.Now()
	if r := <-done; r.Class != objects.ClassTimeout {
		t.Fatalf("class %s err %v", r.Class, r.Err)
	}
	waitFor(t, func() bool { return budget.InUse() == 0 }, "the abandoned call to give its room back")
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
