package appstore

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// TestParseSitemapIndexFixtures: both built indexes read to their files
// in order.
func TestParseSitemapIndexFixtures(t *testing.T) {
	refs, err := ParseSitemapIndex(bytes.NewReader(readFixture(t, "sitemap_index_app_BUILT.xml")))
	if err != nil || len(refs) != 3 || refs[2].Loc != "https://apps.apple.com/sitemaps_apps_app_61_5.xml.gz" {
		t.Fatalf("full index: %+v (%v)", refs, err)
	}
	refs, err = ParseSitemapIndex(bytes.NewReader(readFixture(t, "sitemap_index_new-app_BUILT.xml")))
	if err != nil || len(refs) != 1 || refs[0].Loc != "https://apps.apple.com/sitemaps_apps_new-app_1_1.xml.gz" {
		t.Fatalf("new-app index: %+v (%v)", refs, err)
	}
	// The same index gzipped, with a lastmod, a duplicate and an entry
	// with no loc.
	body := gz(t, `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc> https://apps.apple.com/sitemaps_apps_app_1_1.xml.gz </loc><lastmod>2026-11-01</lastmod></sitemap>
<sitemap><loc>https://apps.apple.com/sitemaps_apps_app_1_1.xml.gz</loc></sitemap>
<sitemap><lastmod>2026-11-01</lastmod></sitemap></sitemapindex>`)
	refs, err = ParseSitemapIndex(bytes.NewReader(body))
	if err != nil || len(refs) != 1 || refs[0] != (SitemapRef{"https://apps.apple.com/sitemaps_apps_app_1_1.xml.gz", "2026-11-01"}) {
		t.Fatalf("gzip index: %+v (%v)", refs, err)
	}
}

// TestParseSitemapAppsFixtures: a built file's ids in order, each once;
// an id only in an alternate is read from it; a developer's page and a
// URL with no id are left out.
func TestParseSitemapAppsFixtures(t *testing.T) {
	ids, err := ParseSitemapApps(bytes.NewReader(readFixture(t, "sitemap_apps_app_61_5_BUILT.xml.gz")))
	if want := []int64{368677368, 363590051, 310633997, 803453959}; err != nil || !slices.Equal(ids, want) {
		t.Fatalf("full file: %v (%v), want %v", ids, err, want)
	}
	ids, err = ParseSitemapApps(bytes.NewReader(readFixture(t, "sitemap_apps_new-app_1_1_BUILT.xml.gz")))
	if want := []int64{1098787155, 6450000001}; err != nil || !slices.Equal(ids, want) {
		t.Fatalf("new-app file: %v (%v), want %v", ids, err, want)
	}
	// Plain XML reads the same.
	ids, err = ParseSitemapApps(strings.NewReader(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://apps.apple.com/us/app/id42</loc></url></urlset>`))
	if err != nil || !slices.Equal(ids, []int64{42}) {
		t.Fatalf("plain: %v (%v)", ids, err)
	}
}

func TestSitemapAppID(t *testing.T) {
	for loc, want := range map[string]int64{
		"https://apps.apple.com/us/app/netflix/id363590051":            363590051,
		"https://apps.apple.com/us/app/id363590051?platform=iphone":    363590051,
		"https://apps.apple.com/us/app/netflix/id363590051/":           363590051,
		"https://apps.apple.com/us/developer/netflix-inc/id363590054":  0,
		"https://apps.apple.com/us/app/netflix/id363590051x":           0,
		"https://apps.apple.com/us/app/netflix":                        0,
		"https://apps.apple.com/us/app/x/id99999999999999999999999999": 0,
	} {
		if got, _ := SitemapAppID(loc); got != want {
			t.Errorf("%s: %d, want %d", loc, got, want)
		}
	}
}

// TestSitemapFileURL: only a sitemap file at the root is read, on the
// configured host.
func TestSitemapFileURL(t *testing.T) {
	if u, ok := SitemapFileURL("http://127.0.0.1:9/", "https://apps.apple.com/sitemaps_apps_app_61_5.xml.gz"); !ok || u != "http://127.0.0.1:9/sitemaps_apps_app_61_5.xml.gz" {
		t.Fatalf("%q %v", u, ok)
	}
	for _, loc := range []string{"https://evil.example/x.xml.gz", "https://apps.apple.com/us/app/id1", "https://apps.apple.com/a/sitemaps_apps_1.xml.gz", "::"} {
		if _, ok := SitemapFileURL("http://s", loc); ok {
			t.Errorf("%s: accepted", loc)
		}
	}
	if SitemapIndexURL("http://s/", true) != "http://s/sitemaps_apps_index_new-app_1.xml" || SitemapIndexURL("http://s", false) != "http://s/sitemaps_apps_index_app_1.xml" {
		t.Fatal("index URLs")
	}
}

// TestParseSitemapMalformed: what is not a whole sitemap gives no ids.
func TestParseSitemapMalformed(t *testing.T) {
	whole := readFixture(t, "sitemap_apps_app_61_5_BUILT.xml.gz")
	for name, body := range map[string][]byte{
		"cut gzip":      whole[:len(whole)/2],
		"bad gzip":      append([]byte{0x1f, 0x8b}, []byte("not really gzip")...),
		"cut xml":       []byte(`<urlset><url><loc>https://apps.apple.com/us/app/id1</loc></url>`),
		"html":          []byte(`<!DOCTYPE html><html><body>Not found</body></html>`),
		"an index":      readFixture(t, "sitemap_index_app_BUILT.xml"),
		"empty":         nil,
		"json":          []byte(`{"results":[]}`),
		"bad xml token": []byte(`<urlset><url><loc>a</url></urlset>`),
	} {
		ids, err := ParseSitemapApps(bytes.NewReader(body))
		if !errors.Is(err, ErrNotSitemap) || ids != nil {
			t.Errorf("%s: %v, %v; want ErrNotSitemap and no ids", name, ids, err)
		}
	}
	if _, err := ParseSitemapIndex(bytes.NewReader(whole)); !errors.Is(err, ErrNotSitemap) {
		t.Errorf("a urlset read as an index: %v", err)
	}
	// A loc past the protocol's length is left out, not kept cut.
	long := `<urlset><url><loc>https://apps.apple.com/us/app/` + strings.Repeat("x", MaxSitemapLocLen) + `/id7</loc></url><url><loc>https://apps.apple.com/us/app/id8</loc></url></urlset>`
	if ids, err := ParseSitemapApps(strings.NewReader(long)); err != nil || !slices.Equal(ids, []int64{8}) {
		t.Errorf("long loc: %v (%v)", ids, err)
	}
}

// urlsetReader streams a urlset of n URLs (each pad bytes of padding in
// its loc's slug) without holding it.
func urlsetReader(n, pad int) io.Reader {
	i := 0
	head := strings.NewReader(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	slug := strings.Repeat("a", pad)
	return io.MultiReader(head, readerFunc(func(p []byte) (int, error) {
		if i >= n {
			return 0, io.EOF
		}
		var b bytes.Buffer
		for b.Len() < len(p)-pad-100 && i < n {
			i++
			fmt.Fprintf(&b, "<url><loc>https://apps.apple.com/us/app/%s/id%d</loc></url>", slug, i)
		}
		if b.Len() == 0 { // p too small for one URL: hand it over in parts
			i++
			fmt.Fprintf(&b, "<url><loc>https://apps.apple.com/us/app/%s/id%d</loc></url>", slug, i)
		}
		return copy(p, b.Bytes()), nil
	}), strings.NewReader(`</urlset>`))
}

type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// TestParseSitemapBounds: the protocol's bounds hold, as a stream: at
// MaxSitemapURLs a file reads whole, one more is refused, and so is a
// file past MaxSitemapBytes, gzipped or not, long before memory holds it.
func TestParseSitemapBounds(t *testing.T) {
	ids, err := ParseSitemapApps(urlsetReader(MaxSitemapURLs, 10))
	if err != nil || len(ids) != MaxSitemapURLs {
		t.Fatalf("at the bound: %d ids (%v)", len(ids), err)
	}
	if _, err := ParseSitemapApps(urlsetReader(MaxSitemapURLs+1, 10)); !errors.Is(err, ErrSitemapTooLarge) {
		t.Fatalf("one URL past the bound: %v", err)
	}
	// 40,000 URLs of ~1,400 bytes: 56 MB, under the URL bound.
	if _, err := ParseSitemapApps(urlsetReader(40_000, 1300)); !errors.Is(err, ErrSitemapTooLarge) {
		t.Fatalf("past %d bytes: %v", MaxSitemapBytes, err)
	}
	// The same gzipped: the bound is the uncompressed size.
	pr, pw := io.Pipe()
	go func() {
		zw := gzip.NewWriter(pw)
		io.Copy(zw, urlsetReader(40_000, 1300))
		zw.Close()
		pw.Close()
	}()
	if _, err := ParseSitemapApps(pr); !errors.Is(err, ErrSitemapTooLarge) {
		t.Fatalf("gzip past %d bytes: %v", MaxSitemapBytes, err)
	}
	pr.Close()
	// An index of too many files.
	var b strings.Builder
	b.WriteString("<sitemapindex>")
	for i := 0; i <= MaxSitemapIndexEntries; i++ {
		fmt.Fprintf(&b, "<sitemap><loc>https://apps.apple.com/sitemaps_apps_app_1_%d.xml.gz</loc></sitemap>", i)
	}
	b.WriteString("</sitemapindex>")
	if _, err := ParseSitemapIndex(strings.NewReader(b.String())); !errors.Is(err, ErrSitemapTooLarge) {
		t.Fatalf("index past the bound: %v", err)
	}
}
