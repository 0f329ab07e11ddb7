package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"storecrawl/internal/objects"
)

// noFollow is a native Doer as the Worker's fetch behaves: redirects come back.
func noFollow(srv *httptest.Server) *http.Client {
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

func TestSameHostRedirectsAreFollowed(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/us/app/id1", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/us/app/slug/id1", http.StatusMovedPermanently) // relative
	})
	mux.HandleFunc("/us/app/slug/id1", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+"/us/app/final/id1", http.StatusFound) // absolute, same host
	})
	mux.HandleFunc("/us/app/final/id1", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("page")) })
	c := &Client{HTTP: noFollow(srv), Timeout: 5 * time.Second}
	r := c.Get(context.Background(), srv.URL+"/us/app/id1")
	if r.Class != objects.ClassOK || string(r.Body) != "page" || r.Status != 200 {
		t.Fatalf("same-host redirects: class %s status %d body %q err %v", r.Class, r.Status, r.Body, r.Err)
	}
}

func TestRedirectToAnotherHostIsNotFollowed(t *testing.T) {
	var elsewhereHits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereHits.Add(1)
		w.Write([]byte("someone else's page"))
	}))
	defer elsewhere.Close()
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/landing", http.StatusFound)
	}))
	defer store.Close()

	c := &Client{HTTP: noFollow(store), Timeout: 5 * time.Second}
	r := c.Get(context.Background(), store.URL+"/us/app/id1")
	if r.Class != objects.ClassParseError || r.Status != http.StatusFound || r.Body != nil {
		t.Fatalf("cross-host redirect: class %s status %d body %q", r.Class, r.Status, r.Body)
	}
	if r.Err == nil || !strings.Contains(r.Err.Error(), "another host") {
		t.Fatalf("the error must say why: %v", r.Err)
	}
	if n := elsewhereHits.Load(); n != 0 {
		t.Fatalf("the other host was fetched %d times", n)
	}

	// A Doer that follows redirects itself gets the same answer: nothing
	// from the other host is used.
	c = &Client{HTTP: store.Client(), Timeout: 5 * time.Second}
	r = c.Get(context.Background(), store.URL+"/us/app/id1")
	if r.Class != objects.ClassParseError || r.Body != nil || r.Err == nil || !strings.Contains(r.Err.Error(), "another host") {
		t.Fatalf("following Doer: class %s body %q err %v", r.Class, r.Body, r.Err)
	}
}

func TestRedirectLoopIsBounded(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/again", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := &Client{HTTP: noFollow(srv), Timeout: 5 * time.Second}
	r := c.Get(context.Background(), srv.URL+"/start")
	if r.Class != objects.ClassParseError || r.Err == nil || !strings.Contains(r.Err.Error(), "redirects") {
		t.Fatalf("redirect loop: class %s err %v", r.Class, r.Err)
	}
	if n := hits.Load(); n != MaxRedirects+1 {
		t.Fatalf("%d requests, want the first and %d redirects", n, MaxRedirects)
	}
}

func TestOrigin(t *testing.T) {
	same := [][2]string{
		{"https://apps.apple.com/us/app/id1", "https://APPS.apple.com:443/x"},
		{"http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b?c=d"},
	}
	differ := [][2]string{
		{"https://apps.apple.com/a", "http://apps.apple.com/a"},
		{"https://apps.apple.com/a", "https://www.apple.com/a"},
		{"http://127.0.0.1:8080/a", "http://127.0.0.1:8081/a"},
	}
	for _, p := range same {
		if !sameOrigin(mustURL(t, p[0]), mustURL(t, p[1])) {
			t.Errorf("%s and %s are the same host", p[0], p[1])
		}
	}
	for _, p := range differ {
		if sameOrigin(mustURL(t, p[0]), mustURL(t, p[1])) {
			t.Errorf("%s and %s are different hosts", p[0], p[1])
		}
	}
}

func mustURL(t *testing.T, s string) *neturl.URL {
	u, err := neturl.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
