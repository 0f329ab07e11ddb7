package api

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html"
	"net/http"
	"strings"
	"sync"
)

// dashboardHTML is the operator dashboard: one self-contained page (inline
// style and script, charts drawn as inline SVG) that reads the JSON
// endpoints and calls the authenticated control endpoints with a token the
// operator pastes once (kept in the tab's sessionStorage).
//
//go:embed dashboard.html
var dashboardHTML string

// dashboardPage is the page as served (the limiter keys filled in) and its
// Content-Security-Policy: only the page's own inline script and style (by
// hash) run, and it may fetch only from this origin, so nothing external is
// ever loaded. Built on the first view, not at start-up: hashing the page
// at init would be the slowest package initialiser of the Worker's cold
// start.
var dashboardPage = sync.OnceValues(func() (string, string) { return buildDashboard(dashboardHTML) })

func buildDashboard(page string) (string, string) {
	page = strings.Replace(page, `data-limiter-keys=""`, `data-limiter-keys="`+html.EscapeString(strings.Join(internalLimits(), " "))+`"`, 1)
	csp := "default-src 'none'; script-src " + inlineHash(page, "script") + "; style-src " + inlineHash(page, "style") +
		"; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	return page, csp
}

// inlineHash is the CSP source for the page's one inline <tag> element.
func inlineHash(page, tag string) string {
	_, rest, ok := strings.Cut(page, "<"+tag+">")
	body, _, ok2 := strings.Cut(rest, "</"+tag+">")
	if !ok || !ok2 {
		panic("dashboard.html has no inline <" + tag + ">")
	}
	sum := sha256.Sum256([]byte(body))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	page, csp := dashboardPage()
	h.Set("Content-Security-Policy", csp)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write([]byte(page))
	}
}
