package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"storecrawl/worker/datasets"
	"storecrawl/worker/logx"
)

// DatasetReader reads the daily dataset snapshots (worker/datasets'
// Snapshotter): the finished manifests, newest first, and one file.
type DatasetReader interface {
	Manifests(ctx context.Context) ([]json.RawMessage, error)
	File(ctx context.Context, date, name string) ([]byte, bool, error)
}

// datasetList serves GET /v1/datasets: the finished snapshots' manifests.
func (s *Server) datasetList(w http.ResponseWriter, r *http.Request) {
	if s.Datasets == nil {
		writeError(w, http.StatusServiceUnavailable, "", "datasets not configured")
		return
	}
	items, err := s.Datasets.Manifests(r.Context())
	if err != nil {
		logx.Err("datasets.read_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
		return
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

// datasetFile serves GET /v1/datasets/{date}/{file}: a snapshot's part
// (application/gzip, as stored: DuckDB and zcat read it) or its manifest.
func (s *Server) datasetFile(w http.ResponseWriter, r *http.Request) {
	date, name := r.PathValue("date"), r.PathValue("file")
	switch {
	case !datasets.DatePattern.MatchString(date):
		writeError(w, http.StatusBadRequest, "date", "date must be a snapshot's date, YYYY-MM-DD")
		return
	case !datasets.FilePattern.MatchString(name):
		writeError(w, http.StatusBadRequest, "file", "file must be a part (<table>-NNNN.ndjson.gz) or manifest.json")
		return
	case s.Datasets == nil:
		writeError(w, http.StatusServiceUnavailable, "", "datasets not configured")
		return
	}
	body, found, err := s.Datasets.File(r.Context(), date, name)
	switch {
	case err != nil:
		logx.Err("datasets.read_failed", err, map[string]any{"date": date, "file": name})
		writeError(w, http.StatusInternalServerError, "", "read failed")
		return
	case !found:
		writeError(w, http.StatusNotFound, "file", "no such file in that snapshot (GET /v1/datasets lists them)")
		return
	}
	if strings.HasSuffix(name, ".gz") {
		w.Header().Set("Content-Type", "application/gzip")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}
