package api

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// explorerFiles are the explorer's pages: one shell (index.html) that
// app.js fills from the API by the path, its stylesheet, and uPlot
// (lib/, copied from node_modules at build time; absent, charts are tables).
//
//go:embed explorer
var explorerFiles embed.FS

// explorerCSP lets the pages load only their own files and call only this
// origin: nothing comes from another one.
const explorerCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// mountExplorer adds the explorer: GET /app/ (the markets), /app/markets,
// /app/markets/{id}, /app/apps/{id}, /app/keywords/{term}, /app/search,
// /app/alerts,
// and its files under /app/static/.
func (s *Server) mountExplorer(mux *routeMux) {
	mux.HandleFunc("GET /app/", s.explorer)
}

func (s *Server) explorer(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", explorerCSP)
	if name, ok := strings.CutPrefix(r.URL.Path, "/app/static/"); ok {
		b, err := fs.ReadFile(explorerFiles, "explorer/"+path.Clean("/" + name)[1:])
		if err != nil || strings.HasSuffix(name, ".md") {
			writeError(w, http.StatusNotFound, "path", "no such file")
			return
		}
		h.Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
		h.Set("Cache-Control", "public, max-age=300")
		w.Write(b)
		return
	}
	if !pagePath(r.URL.Path) {
		writeError(w, http.StatusNotFound, "path", "no explorer page at "+r.URL.Path)
		return
	}
	b, _ := fs.ReadFile(explorerFiles, "explorer/index.html")
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	status := http.StatusOK
	if !s.readAllowed(r) {
		// The shell holds no data: it asks for the token and sets the cookie.
		status = http.StatusUnauthorized
	}
	w.WriteHeader(status)
	w.Write(b)
}
