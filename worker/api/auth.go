package api

import (
	"net/http"

	"storecrawl/worker/logx"
)

// requireAdmin guards mutating calls with `Authorization: Bearer <ADMIN_TOKEN>`.
func (s *Server) requireAdmin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !authorized(w, r, s.AdminToken, "missing or wrong bearer token") {
			return
		}
		next(w, r)
	}
}

// authorized checks the request's bearer token against token's value (nil
// or empty: nobody), answering the 401 itself when it does not match.
func authorized(w http.ResponseWriter, r *http.Request, token func() string, msg string) bool {
	want := ""
	if token != nil {
		want = token()
	}
	if bearerOK(r.Header.Get("Authorization"), want) {
		return true
	}
	logx.Event("http.unauthorized", map[string]any{"level": logx.Warn, "path": r.URL.Path})
	w.Header().Set("WWW-Authenticate", bearerRealm)
	writeError(w, http.StatusUnauthorized, "authorization", msg)
	return false
}
