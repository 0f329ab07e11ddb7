package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"storecrawl/internal/upstreammodel"
)

// The store's sitemaps (worker/appstore's sitemap.go has the format): two
// indexes on the store host, of gzip files listing app pages. A living
// catalogue's come from its world (upstreammodel.FullSitemap and
// NewSitemap: the full index made again each virtual day, the new apps
// of the last week up to the minute, removed apps left out); a static
// one lists its apps in the full index and none in the new-app index.
// Every request is limited as a store page (the store host's bucket).

// routeSitemap names the sitemaps' route in stats; it is on the store host.
const routeSitemap = "sitemap"

// The indexes' names and their files' (the real store's, with the file
// number for N).
const (
	sitemapIndexFull = "sitemaps_apps_index_app_1.xml"
	sitemapIndexNew  = "sitemaps_apps_index_new-app_1.xml"
	sitemapFileFull  = "sitemaps_apps_app_1_%d.xml.gz"
	sitemapFileNew   = "sitemaps_apps_new-app_1_%d.xml.gz"
)

var sitemapFileRE = regexp.MustCompile(`^sitemaps_apps_(app|new-app)_1_([0-9]{1,6})\.xml\.gz$`)

// isSitemapName is whether a root path segment is one of the sitemaps.
func isSitemapName(name string) bool {
	return name == sitemapIndexFull || name == sitemapIndexNew || sitemapFileRE.MatchString(name)
}

// sitemapRoute serves GET /<sitemap name>: limited as a store page.
func (s *Server) sitemapRoute() http.HandlerFunc {
	h := s.limited(routeSitemap, s.handleSitemap)
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.byRoute[routeSitemap] == nil {
			s.byRoute[routeSitemap] = &RouteStats{}
		}
		s.mu.Unlock()
		h(w, r)
	}
}

// sitemapIndexes are the catalogue's files now: the full index's and the
// new-app index's.
func (s *Server) sitemapIndexes() (full, newApps []upstreammodel.SitemapFile) {
	if l := s.cat.living; l != nil {
		now := s.now()
		return l.w.FullSitemap(now), l.w.NewSitemap(now)
	}
	return upstreammodel.SitemapFiles(1, 1, int64(s.cat.Len())), nil
}

// sitemapApps are a file's apps in the store now: their ids and slugs.
func (s *Server) sitemapApps(f upstreammodel.SitemapFile, yield func(id int64, slug string)) {
	if l := s.cat.living; l != nil {
		w := l.w
		for _, off := range w.SitemapApps(f, s.now()) {
			st := w.Static(off)
			yield(baseTrackID+off, slugify(w.TextOf(&st).Title))
		}
		return
	}
	for off := f.From; off <= f.To; off++ {
		if a, ok := s.cat.Get(baseTrackID + off); ok {
			yield(a.ID, a.Slug)
		}
	}
}

func (s *Server) handleSitemap(w http.ResponseWriter, r *http.Request) bool {
	name := strings.TrimPrefix(r.URL.Path, "/")
	full, newApps := s.sitemapIndexes()
	if name == sitemapIndexFull || name == sitemapIndexNew {
		files, format := full, sitemapFileFull
		if name == sitemapIndexNew {
			files, format = newApps, sitemapFileNew
		}
		w.Header().Set("Content-Type", "text/xml; charset=UTF-8")
		bw := bufio.NewWriter(w)
		bw.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
		for _, f := range files {
			fmt.Fprintf(bw, "<sitemap><loc>http://%s/"+format+"</loc></sitemap>\n", r.Host, f.N)
		}
		bw.WriteString("</sitemapindex>\n")
		bw.Flush()
		return false
	}
	m := sitemapFileRE.FindStringSubmatch(name)
	files := full
	if m[1] == "new-app" {
		files = newApps
	}
	n, _ := strconv.Atoi(m[2])
	var file *upstreammodel.SitemapFile
	for i := range files {
		if files[i].N == n {
			file = &files[i]
		}
	}
	if file == nil {
		http.NotFound(w, r)
		return true
	}
	w.Header().Set("Content-Type", "application/gzip")
	zw := gzip.NewWriter(w)
	bw := bufio.NewWriter(zw)
	bw.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">` + "\n")
	s.sitemapApps(*file, func(id int64, slug string) {
		u := fmt.Sprintf("http://%s/us/app/%s/id%d", r.Host, slug, id)
		fmt.Fprintf(bw, "<url><loc>%s</loc><xhtml:link rel=\"alternate\" hreflang=\"en-us\" href=\"%s\"/></url>\n", u, u)
	})
	bw.WriteString("</urlset>\n")
	bw.Flush()
	zw.Close()
	return false
}
