package appstore

import (
	"bufio"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Sitemaps: the App Store publishes sitemaps (the sitemaps.org protocol)
// that list every app's page. Two indexes on the store host, each a
// sitemapindex of gzip files:
//
//	GET {store}/sitemaps_apps_index_app_1.xml      every app
//	GET {store}/sitemaps_apps_index_new-app_1.xml  the new apps
//
//	<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
//	  <sitemap><loc>https://apps.apple.com/sitemaps_apps_app_61_5.xml.gz</loc></sitemap>
//	  …
//	</sitemapindex>
//
// and each file a urlset, one <url> a page, with its alternates in the
// XHTML namespace:
//
//	<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">
//	  <url><loc>https://apps.apple.com/us/app/some-app/id1234567890</loc>
//	    <xhtml:link rel="alternate" hreflang="en-us" href="https://apps.apple.com/us/app/some-app/id1234567890"/>
//	  </url>
//	  …
//	</urlset>
//
// The app's id is the /id<digits> of its URL. The format is read off
// public sitemap collectors' parsers; the fixtures in testdata are built
// from it (sitemap_*_BUILT.xml*), not captured.

// The indexes' paths on the store host (UPSTREAM_STORE_BASE).
const (
	SitemapIndexPath    = "/sitemaps_apps_index_app_1.xml"
	SitemapNewIndexPath = "/sitemaps_apps_index_new-app_1.xml"
)

// Sitemap bounds: the protocol's, and what one entry may hold.
const (
	// MaxSitemapURLs is the most <url> entries a file may list, and
	// MaxSitemapIndexEntries the most <sitemap> entries an index may
	// (the protocol's 50,000 each): past that the file is refused.
	MaxSitemapURLs         = 50_000
	MaxSitemapIndexEntries = 50_000
	// MaxSitemapBytes bounds a file's uncompressed size (the protocol's
	// 50 MB): it is read as a stream and refused past it.
	MaxSitemapBytes = 50 << 20
	// MaxSitemapLocLen bounds one URL (the protocol's 2,048 characters):
	// a longer one is skipped, not kept.
	MaxSitemapLocLen = 2048
)

// ErrNotSitemap is a body that is not the sitemap asked for (not XML, or
// another root element); ErrSitemapTooLarge one past the bounds.
var (
	ErrNotSitemap      = errors.New("not a sitemap")
	ErrSitemapTooLarge = errors.New("sitemap over the protocol's bounds")
)

// SitemapIndexURL is the index of every app (newApps false) or of the
// new apps on the store host base.
func SitemapIndexURL(base string, newApps bool) string {
	p := SitemapIndexPath
	if newApps {
		p = SitemapNewIndexPath
	}
	return strings.TrimRight(base, "/") + p
}

// sitemapFileRE is what an index may point at: a sitemap file at the
// host's root.
var sitemapFileRE = regexp.MustCompile(`^/sitemaps_[A-Za-z0-9_.-]+\.xml(\.gz)?$`)

// SitemapFileURL is the file an index entry (loc) names, on base: only
// its path is kept, so a crawl reads the configured store host whatever
// host the index names; ok is false for a loc that is no sitemap file.
func SitemapFileURL(base, loc string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(loc))
	if err != nil || !sitemapFileRE.MatchString(u.Path) {
		return "", false
	}
	return strings.TrimRight(base, "/") + u.Path, true
}

// appIDRE is an app page's id: the /id<digits> segment of an /app/ path
// (a slug between them or not). A developer's page (/developer/…/id…)
// names no app.
var appIDRE = regexp.MustCompile(`/app/(?:[^/?#]*/)?id([0-9]{1,19})(?:[/?#]|$)`)

// SitemapAppID is the app id an app page's URL names.
func SitemapAppID(loc string) (int64, bool) {
	m := appIDRE.FindStringSubmatch(loc)
	if m == nil {
		return 0, false
	}
	id, err := strconv.ParseInt(m[1], 10, 64)
	return id, err == nil && id > 0
}

// SitemapRef is one entry of an index: the file and, when the index
// says it, when the file last changed (as written, W3C datetime).
type SitemapRef struct {
	Loc     string
	LastMod string
}

// cappedReader reads at most n bytes and fails with ErrSitemapTooLarge
// at the first byte past them.
type cappedReader struct {
	r io.Reader
	n int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		var one [1]byte
		if k, _ := c.r.Read(one[:]); k > 0 {
			return 0, ErrSitemapTooLarge
		}
		return c.r.Read(p[:0])
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	k, err := c.r.Read(p)
	c.n -= int64(k)
	return k, err
}

// sitemapStream is body uncompressed as it is read (a gzip stream when it
// starts with gzip's magic, else plain XML), capped at MaxSitemapBytes.
func sitemapStream(body io.Reader) (io.Reader, error) {
	br := bufio.NewReader(body)
	magic, _ := br.Peek(2)
	var r io.Reader = br
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotSitemap, err)
		}
		zr.Multistream(false)
		r = zr
	}
	return &cappedReader{r: r, n: MaxSitemapBytes}, nil
}

// sitemapDecoder is a decoder over body positioned after its root
// element, which must be root (in any namespace).
func sitemapDecoder(body io.Reader, root string) (*xml.Decoder, error) {
	r, err := sitemapStream(body)
	if err != nil {
		return nil, err
	}
	dec := xml.NewDecoder(r)
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, wrapSitemapErr(err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != root {
				return nil, fmt.Errorf("%w: root <%s>, want <%s>", ErrNotSitemap, se.Name.Local, root)
			}
			return dec, nil
		}
	}
}

// wrapSitemapErr keeps ErrSitemapTooLarge as it is and makes any other
// read or syntax error ErrNotSitemap.
func wrapSitemapErr(err error) error {
	if errors.Is(err, ErrSitemapTooLarge) {
		return err
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: %v", ErrNotSitemap, err)
}

// ParseSitemapIndex reads an index (plain or gzip) as a stream: its
// entries in the index's order, each file once; an entry with no loc is
// left out. More than MaxSitemapIndexEntries entries is
// ErrSitemapTooLarge; a body that is no sitemapindex, or ends before its
// end, is ErrNotSitemap.
func ParseSitemapIndex(body io.Reader) ([]SitemapRef, error) {
	dec, err := sitemapDecoder(body, "sitemapindex")
	if err != nil {
		return nil, err
	}
	var out []SitemapRef
	seen := map[string]bool{}
	entries := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, wrapSitemapErr(err)
		}
		switch t := tok.(type) {
		case xml.EndElement: // the index's own end
			return out, nil
		case xml.StartElement:
			if t.Name.Local != "sitemap" {
				if err := dec.Skip(); err != nil {
					return nil, wrapSitemapErr(err)
				}
				continue
			}
			if entries++; entries > MaxSitemapIndexEntries {
				return nil, fmt.Errorf("%w: more than %d files", ErrSitemapTooLarge, MaxSitemapIndexEntries)
			}
			fields, err := sitemapEntry(dec, "loc", "lastmod")
			if err != nil {
				return nil, err
			}
			ref := SitemapRef{Loc: fields[0], LastMod: fields[1]}
			if ref.Loc == "" || seen[ref.Loc] {
				continue
			}
			seen[ref.Loc] = true
			out = append(out, ref)
		}
	}
}

// ParseSitemapApps reads a urlset (plain or gzip) as a stream: the app
// ids of its URLs in the file's order, each once. A URL without an id
// is read from its alternates (xhtml:link href); one with none is left
// out. More than MaxSitemapURLs URLs, or MaxSitemapBytes uncompressed, is
// ErrSitemapTooLarge; a body that is no urlset, or ends before its end
// (a cut download), is ErrNotSitemap: no ids, the file is read again.
func ParseSitemapApps(body io.Reader) ([]int64, error) {
	dec, err := sitemapDecoder(body, "urlset")
	if err != nil {
		return nil, err
	}
	var out []int64
	seen := map[int64]bool{}
	urls := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, wrapSitemapErr(err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return out, nil
		case xml.StartElement:
			if t.Name.Local != "url" {
				if err := dec.Skip(); err != nil {
					return nil, wrapSitemapErr(err)
				}
				continue
			}
			if urls++; urls > MaxSitemapURLs {
				return nil, fmt.Errorf("%w: more than %d URLs", ErrSitemapTooLarge, MaxSitemapURLs)
			}
			id, err := sitemapURLID(dec)
			if err != nil {
				return nil, err
			}
			if id > 0 && !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
}

// sitemapURLID reads one <url> to its end: the id of its loc, else of
// its first alternate that has one; 0 when none does.
func sitemapURLID(dec *xml.Decoder) (int64, error) {
	var id int64
	for {
		tok, err := dec.Token()
		if err != nil {
			return 0, wrapSitemapErr(err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return id, nil
		case xml.StartElement:
			switch t.Name.Local {
			case "loc":
				loc, err := sitemapText(dec)
				if err != nil {
					return 0, err
				}
				if v, ok := SitemapAppID(loc); ok {
					id = v // the loc wins over any alternate
				}
			case "link":
				if err := dec.Skip(); err != nil {
					return 0, wrapSitemapErr(err)
				}
				if id != 0 {
					continue
				}
				for _, a := range t.Attr {
					if a.Name.Local == "href" && len(a.Value) <= MaxSitemapLocLen {
						if v, ok := SitemapAppID(a.Value); ok {
							id = v
						}
					}
				}
			default:
				if err := dec.Skip(); err != nil {
					return 0, wrapSitemapErr(err)
				}
			}
		}
	}
}

// sitemapEntry reads one entry to its end: the text of each named child
// ("" when absent).
func sitemapEntry(dec *xml.Decoder, names ...string) ([]string, error) {
	out := make([]string, len(names))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, wrapSitemapErr(err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return out, nil
		case xml.StartElement:
			i := -1
			for j, n := range names {
				if t.Name.Local == n {
					i = j
				}
			}
			if i < 0 {
				if err := dec.Skip(); err != nil {
					return nil, wrapSitemapErr(err)
				}
				continue
			}
			s, err := sitemapText(dec)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
	}
}

// sitemapText reads an element's text to its end, trimmed; a text past
// MaxSitemapLocLen is "" (the entry is left out).
func sitemapText(dec *xml.Decoder) (string, error) {
	var b strings.Builder
	long := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", wrapSitemapErr(err)
		}
		switch t := tok.(type) {
		case xml.CharData:
			if !long && b.Len()+len(t) <= MaxSitemapLocLen+64 { // room for whitespace around it
				b.Write(t)
			} else {
				long = true
			}
		case xml.StartElement:
			if err := dec.Skip(); err != nil {
				return "", wrapSitemapErr(err)
			}
		case xml.EndElement:
			s := strings.TrimSpace(b.String())
			if long || len(s) > MaxSitemapLocLen {
				return "", nil
			}
			return s, nil
		}
	}
}
