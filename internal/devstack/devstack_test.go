//go:build unix

package devstack

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A server that cannot come up is given up on as soon as its process
// says so, not after the whole timeout; a healthy one is waited for.
func TestWaitHealthyUnless(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer down.Close()
	taken := errors.New("address already in use")
	calls := 0
	start := time.Now()
	err := WaitHealthyUnless(down.URL, time.Minute, func() error {
		if calls++; calls > 2 {
			return taken
		}
		return nil
	})
	if !errors.Is(err, taken) || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %s: want the process's error, early", err, time.Since(start))
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer up.Close()
	if err := WaitHealthy(up.URL, time.Minute); err != nil {
		t.Fatal(err)
	}
}
