package api

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

type storedQuality struct {
	raw string
	err error
}

func (q storedQuality) LatestQuality(context.Context) (json.RawMessage, error) {
	if q.raw == "" {
		return nil, q.err
	}
	return json.RawMessage(q.raw), q.err
}

// /v1/pipeline/counts carries the latest daily data-quality check under
// quality as stored (null before one ran, or when it cannot be read: the
// counts are served all the same).
func TestPipelineCountsCarryTheQualityCheck(t *testing.T) {
	stored := `{"checked_at":"2026-11-23T03:00:00Z","apps":2000,"ok":false,"languages":{"value":0.7,"threshold":0.85,"ok":false}}`
	s := NewServer(&Server{Ledger: &fakeLedger{}, Quality: storedQuality{raw: stored}})
	code, body := call(t, s, "GET", "/v1/pipeline/counts", "", "")
	q, _ := body["quality"].(map[string]any)
	l, _ := q["languages"].(map[string]any)
	if code != 200 || body["apps_known"] != float64(7) || q["checked_at"] != "2026-11-23T03:00:00Z" || q["ok"] != false ||
		l["value"] != 0.7 || l["threshold"] != 0.85 || l["ok"] != false {
		t.Fatalf("counts: %d %v", code, body)
	}
	for _, quality := range []QualityReader{nil, storedQuality{}, storedQuality{err: errors.New("kv down")}} {
		s := NewServer(&Server{Ledger: &fakeLedger{}, Quality: quality})
		code, body := call(t, s, "GET", "/v1/pipeline/counts", "", "")
		if v, ok := body["quality"]; code != 200 || !ok || v != nil || body["apps_known"] != float64(7) {
			t.Fatalf("%v: %d %v", quality, code, body)
		}
	}
}
