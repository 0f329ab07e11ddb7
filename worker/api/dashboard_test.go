package api

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestDashboardIsSelfContained(t *testing.T) {
	s := newTestServer(&recordingController{})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/dashboard", nil))
	body, _ := io.ReadAll(rec.Body)
	page := string(body)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET /v1/dashboard: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	// The CSP admits exactly the page's inline script and style, and fetches to this origin only.
	csp := rec.Header().Get("Content-Security-Policy")
	for _, tag := range []string{"script", "style"} {
		m := regexp.MustCompile(`(?s)<`+tag+`>(.*?)</`+tag+`>`).FindAllStringSubmatch(page, -1)
		if len(m) != 1 {
			t.Fatalf("want one inline <%s>, have %d", tag, len(m))
		}
		sum := sha256.Sum256([]byte(m[0][1]))
		if want := tag + "-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("CSP: %q", csp)
	}
	// Nothing external: no src/href attributes, no CSS imports or urls, no
	// absolute URL but the SVG namespace.
	if m := regexp.MustCompile(`(?i)\s(src|href)\s*=|@import|url\(`).FindString(page); m != "" {
		t.Errorf("page references an asset: %q", m)
	}
	for _, u := range regexp.MustCompile(`https?://[^\s"'<>]+`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" {
			t.Errorf("external URL in the page: %s", u)
		}
	}
	// The token lives in sessionStorage only.
	if strings.Contains(page, "localStorage") || !strings.Contains(page, "sessionStorage.setItem") {
		t.Error("the admin token must be kept in sessionStorage, never localStorage")
	}
	// What the browser test and operators rely on.
	for _, want := range []string{
		`data-limiter-keys="llm-tokens upstream-catalogue upstream-hints upstream-reviews upstream-store-pages"`, `data-targets="main"`, `data-chart="pace"`, `data-chart="success"`,
		`id="ctl-running"`, `id="ctl-stop"`, `id="ctl-start"`, `id="token"`, `type="password"`, `id="scheduler"`, `id="limiters"`,
		`id="count-apps-known"`, `id="count-opportunities"`, `"/v1/history?target="`, `"/v1/pipeline/counts"`, `"/v1/analyst/status"`, `id="analyst-state"`, `id="analyst-spend"`, `id="analyst-top"`, `id="quality"`, `drawQuality(counts)`,
		`"/v1/enrichment/pulse?target="`, `data-testid="stall-alert"`, `data-testid="controller-completions-per-min"`, `data-field="projected-basis"`,
		`data-testid="drift-help"`, `POST /v1/enrichment/resume-pages`, `control("/v1/enrichment/resume-pages"`, `#limiters .key {`, `text-overflow: ellipsis`, `th.title = key`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// One projection per day on the page: the controller status's, with
	// its basis, as GET /v1/enrichment/status shows it (the pulse carries
	// the same figure).
	if strings.Count(page, "projected_per_day") != 1 || !strings.Contains(page, "fmtNum(st.projected_per_day)") ||
		!strings.Contains(page, "st.projection_basis") || strings.Count(page, "Projected per day") != 1 {
		t.Error("the page shows a projection other than the status's")
	}
}
