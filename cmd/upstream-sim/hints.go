package main

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"storecrawl/internal/upstreammodel"
)

// routeHints names the search-hints route in stats (the real site serves
// it from its own host, search.itunes.apple.com).
const routeHints = "hints"

// hintsPath is the real endpoint's path.
const hintsPath = "/WebObjects/MZSearchHints.woa/wa/hints"

// hintIndex is the catalogue's terms and their popularity (the model:
// the ratings of the apps naming them), built on first use from the
// generated catalogue (a living one's apps as they are then: Each passes
// none of them, its routes reading the world's own indexes).
type hintIndex struct {
	once sync.Once
	ix   *upstreammodel.HintIndex
}

func (h *hintIndex) get(cat *Catalogue) *upstreammodel.HintIndex {
	h.once.Do(func() {
		var apps []upstreammodel.HintApp
		if l := cat.living; l != nil {
			apps = l.hintApps()
		}
		cat.Each(func(a *App) { apps = append(apps, upstreammodel.HintApp{Name: a.Name, Ratings: a.RatingCount}) })
		h.ix = upstreammodel.NewHintIndex(apps)
	})
	return h.ix
}

// hintsRoute is the limited hints handler; its stats entry is made on
// first use, like the reviews route's.
func (s *Server) hintsRoute() http.HandlerFunc {
	h := s.limited(routeHints, s.handleHints)
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.byRoute[routeHints] == nil {
			s.byRoute[routeHints] = &RouteStats{}
		}
		s.mu.Unlock()
		h(w, r)
	}
}

// GET /WebObjects/MZSearchHints.woa/wa/hints?clientApplication=Software&q=P
// with X-Apple-Store-Front: the completions of P, most typed first, at
// most upstreammodel.MaxHintsSoftware, as an XML plist. Like the real
// endpoint it answers 200 with an empty hints array when nothing matches,
// when the storefront header is missing, and for another client
// application (the simulator models only apps).
func (s *Server) handleHints(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	var terms []string
	if r.Header.Get("X-Apple-Store-Front") != "" && q.Get("clientApplication") == "Software" {
		terms = s.hints.get(s.cat).Complete(q.Get("q"), upstreammodel.MaxHintsSoftware)
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString("<plist version=\"1.0\">\n<dict>\n    <key>title</key>\n    <string>Suggestions</string>\n    <key>hints</key>\n")
	if len(terms) == 0 {
		b.WriteString("    <array/>\n")
	} else {
		b.WriteString("    <array>\n")
		for _, t := range terms {
			u := "http://" + r.Host + "/WebObjects/MZStore.woa/wa/search?" +
				url.Values{"clientApplication": {"Software"}, "media": {"software"}, "submit": {"edit"}, "term": {t}}.Encode()
			b.WriteString("        <dict>\n            <key>term</key>\n            <string>" + escapeXML(t) +
				"</string>\n            <key>url</key>\n            <string>" + escapeXML(u) + "</string>\n        </dict>\n")
		}
		b.WriteString("    </array>\n")
	}
	b.WriteString("</dict>\n</plist>\n")
	w.Header().Set("Content-Type", "text/xml; charset=UTF-8")
	_, _ = w.Write([]byte(b.String()))
	return false
}

func escapeXML(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// hintApps are the living world's apps in the store at its clock's now:
// their titles and rating counts.
func (l *living) hintApps() []upstreammodel.HintApp {
	w, now := l.w, l.now()
	var out []upstreammodel.HintApp
	for off := int64(1); off <= w.Total(now); off++ {
		s := w.Static(off)
		if !w.Exists(&s, now) {
			continue
		}
		out = append(out, upstreammodel.HintApp{Name: w.TextOf(&s).Title, Ratings: w.At(&s, now).Ratings})
	}
	return out
}
