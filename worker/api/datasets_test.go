//go:build !js

package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// fakeDatasets is a snapshot with one manifest and one part.
type fakeDatasets struct{}

func (fakeDatasets) Manifests(context.Context) ([]json.RawMessage, error) {
	return []json.RawMessage{json.RawMessage(`{"date":"2026-11-29","tables":[]}`)}, nil
}

func (fakeDatasets) File(_ context.Context, date, name string) ([]byte, bool, error) {
	if date == "2026-11-29" && name == "apps-0001.ndjson.gz" {
		return []byte{0x1f, 0x8b, 1, 2}, true, nil
	}
	return nil, false, nil
}

func TestDatasetRoutes(t *testing.T) {
	s := NewServer(&Server{Datasets: fakeDatasets{}, Cron: noCron{}, AdminToken: func() string { return "secret" }})
	code, out := call(t, s, "GET", "/v1/datasets", "", "")
	if items, _ := out["items"].([]any); code != 200 || len(items) != 1 || items[0].(map[string]any)["date"] != "2026-11-29" {
		t.Fatalf("%d %v", code, out)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/datasets/2026-11-29/apps-0001.ndjson.gz", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/gzip" || rec.Body.Len() != 4 {
		t.Fatalf("part: %d %q %d bytes", rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len())
	}
	for path, want := range map[string]struct {
		code  int
		field string
	}{
		"/v1/datasets/2026-11-29/apps-0002.ndjson.gz": {404, "file"},
		"/v1/datasets/latest/apps-0001.ndjson.gz":     {400, "date"},
		"/v1/datasets/2026-11-29/progress.json":       {400, "file"},
		"/v1/datasets/2026-11-29/apps.csv":            {400, "file"},
	} {
		if code, out := call(t, s, "GET", path, "", ""); code != want.code || out["field"] != want.field {
			t.Errorf("%s: %d %v, want %d naming %s", path, code, out, want.code, want.field)
		}
	}
}
