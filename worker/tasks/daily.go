package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"storecrawl/worker/logx"
)

// The daily cron (CronDaily, off-peak) is the data-quality check of design
// seed 004 (cronDataQualityCheck): the share of enriched apps that have
// each of seven fields, each against its threshold. It reads a sample, not
// the table: QualityWindows windows of at most QualityWindowApps enriched
// apps, one in each of QualityWindows equal slices of the enriched track
// ids, each window starting at the same random offset into its slice (a
// systematic sample, drawn afresh each day, so every app is sampled on
// some days). A run reads at most QualityWindows × QualityWindowApps rows
// and 2 more (the ends of the enriched ids), in two queries, whatever the
// catalogue's size, and writes no D1 row. Its result goes to KV under
// QualityKey, which GET /v1/pipeline/counts serves as "quality", and to
// one pipeline.data_quality log line: warn, naming each field below its
// threshold.

// The design's thresholds: the share of sampled enriched apps that must
// have the field.
const (
	MinContentRating = 0.95 // seed 004: content_rating 95 %
	MinDescription   = 0.90 // seed 004: description 90 %
	MinDeveloper     = 0.90 // seed 004: developer 90 %
	MinLanguages     = 0.85 // seed 004: languages 85 %
	MinScreenshots   = 0.80 // seed 004: screenshots 80 %
	MinSimilar       = 0.70 // seed 004: similar 70 %
	MinHistogram     = 0.60 // seed 004: histogram 60 %
	// MinDescriptionLen: a description counts when it is longer than this
	// (seed 004: LENGTH(description) > 10).
	MinDescriptionLen = 10
)

// Sample bounds.
const (
	// QualityWindows is how many windows a run reads (one query).
	QualityWindows = 20
	// QualityWindowApps bounds a window: the first this many enriched apps
	// at or after its start. 20 × 100 = 2,000 apps, a share known to about
	// ±1.3 points (two standard errors at 90 %).
	QualityWindowApps = 100
	// QualityKey is where the latest result lives in KV.
	QualityKey = "quality:latest"
)

// qualityField is one checked field: its name (the JSON key) and threshold.
type qualityField struct {
	name string
	min  float64
}

// qualityFields are the design's seven, in its order.
var qualityFields = []qualityField{
	{"content_rating", MinContentRating}, {"description", MinDescription}, {"developer", MinDeveloper},
	{"languages", MinLanguages}, {"screenshots", MinScreenshots}, {"similar", MinSimilar}, {"histogram", MinHistogram},
}

// QualitySums is what the sample read counted (qualityCounts says what
// fills each field).
type QualitySums struct {
	Apps          int `json:"apps"`
	ContentRating int `json:"content_rating"`
	Description   int `json:"description"`
	Developer     int `json:"developer"`
	Languages     int `json:"languages"`
	Screenshots   int `json:"screenshots"`
	Similar       int `json:"similar"`
	// Rated is the apps with ratings: the histogram's share is of these
	// (an app nobody rated has no histogram to read).
	Rated     int `json:"rated"`
	Histogram int `json:"histogram"`
}

// QualityStore is what the check needs of D1.
type QualityStore interface {
	// QualityBounds returns the lowest and highest enriched track ids (0, 0: none).
	QualityBounds(ctx context.Context) (lo, hi int64, err error)
	// QualitySample sums the windows [bounds[k], bounds[k+1]), at most
	// perWindow enriched apps each.
	QualitySample(ctx context.Context, bounds []int64, perWindow int) (QualitySums, error)
}

// FieldQuality is one field's result.
type FieldQuality struct {
	Name string `json:"-"`
	// Value is the share of the sampled apps with the field, 0–1 (nil:
	// nothing sampled to judge).
	Value     *float64 `json:"value"`
	Threshold float64  `json:"threshold"`
	OK        bool     `json:"ok"` // Value is at or above Threshold, or there was nothing to judge
}

// Quality is one check's result. As JSON it is one object: checked_at,
// apps (sampled), ok (every field ok), and each field by name
// ({"value", "threshold", "ok"}).
type Quality struct {
	CheckedAt string
	Apps      int
	Fields    []FieldQuality
}

// OK reports whether every field is at or above its threshold.
func (q Quality) OK() bool { return len(q.Below()) == 0 }

// Below names the fields under their thresholds, in the design's order.
func (q Quality) Below() []string {
	var out []string
	for _, f := range q.Fields {
		if !f.OK {
			out = append(out, f.Name)
		}
	}
	return out
}

// MarshalJSON writes the flat object, fields in the design's order.
func (q Quality) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	head, _ := json.Marshal(struct {
		CheckedAt string `json:"checked_at"`
		Apps      int    `json:"apps"`
		OK        bool   `json:"ok"`
	}{q.CheckedAt, q.Apps, q.OK()})
	b.Write(head[:len(head)-1])
	for _, f := range q.Fields {
		v, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, ",%q:%s", f.Name, v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the flat object: every key holding an object is a field.
func (q *Quality) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*q = Quality{}
	json.Unmarshal(raw["checked_at"], &q.CheckedAt)
	json.Unmarshal(raw["apps"], &q.Apps)
	for _, f := range qualityFields {
		v, ok := raw[f.name]
		if !ok {
			continue
		}
		fq := FieldQuality{Name: f.name}
		if err := json.Unmarshal(v, &fq); err != nil {
			return fmt.Errorf("quality %s: %w", f.name, err)
		}
		q.Fields = append(q.Fields, fq)
	}
	return nil
}

// SampleBounds splits the enriched ids [lo, hi] into windows slices of
// equal width and returns windows+1 bounds: window k is [b[k], b[k+1]),
// from u (0 ≤ u < 1) of a slice's width into slice k. Each window reads
// only its first QualityWindowApps apps, so the bounds keep windows apart
// (no app counted twice) and bound nothing else.
func SampleBounds(lo, hi int64, u float64, windows int) []int64 {
	u = math.Max(0, math.Min(u, math.Nextafter(1, 0)))
	width := float64(hi-lo+1) / float64(windows)
	b := make([]int64, windows+1)
	for k := range b {
		b[k] = lo + int64(math.Floor((float64(k)+u)*width))
	}
	return b
}

// Judge turns a sample's sums into each field's share against its
// threshold, at the time at.
func Judge(s QualitySums, at time.Time) Quality {
	q := Quality{CheckedAt: at.UTC().Format(time.RFC3339), Apps: s.Apps}
	filled := map[string]int{"content_rating": s.ContentRating, "description": s.Description, "developer": s.Developer,
		"languages": s.Languages, "screenshots": s.Screenshots, "similar": s.Similar, "histogram": s.Histogram}
	for _, f := range qualityFields {
		of := s.Apps
		if f.name == "histogram" {
			of = s.Rated
		}
		fq := FieldQuality{Name: f.name, Threshold: f.min, OK: true}
		if of > 0 {
			v := math.Round(float64(filled[f.name])/float64(of)*1e4) / 1e4
			fq.Value, fq.OK = &v, v >= f.min
		}
		q.Fields = append(q.Fields, fq)
	}
	return q
}

// DailyResult is what one daily run did (GET /v1/system/cron).
type DailyResult struct {
	Quality Quality `json:"quality"`
	Windows int     `json:"windows"`
	Error   string  `json:"error,omitempty"`
}

// RunDaily runs the data-quality check: the sample's shares (u places its
// windows), one pipeline.data_quality event, and the result in KV under
// QualityKey. A failed read keeps the previous result in KV.
func RunDaily(ctx context.Context, st QualityStore, kv KV, u float64, now func() time.Time) DailyResult {
	res := DailyResult{Windows: QualityWindows}
	lo, hi, err := st.QualityBounds(ctx)
	var sums QualitySums
	if err == nil && hi > 0 {
		sums, err = st.QualitySample(ctx, SampleBounds(lo, hi, u, QualityWindows), QualityWindowApps)
	}
	if err != nil {
		res.Error = "read: " + err.Error()
		return res
	}
	q := Judge(sums, now())
	res.Quality = q
	fields := map[string]any{"quality": q, "apps": q.Apps}
	if below := q.Below(); len(below) > 0 {
		fields["level"], fields["below"] = logx.Warn, below
	}
	logx.Event("pipeline.data_quality", fields)
	b, _ := json.Marshal(q) // plain values always encode
	if err := kv.Put(ctx, QualityKey, string(b)); err != nil {
		res.Error = "kv put: " + err.Error()
	}
	return res
}

// Summary is the one-line result of the run for /v1/system/cron.
func (r DailyResult) Summary() string {
	below := "none"
	if b := r.Quality.Below(); len(b) > 0 {
		below = strings.Join(b, ",")
	}
	return fmt.Sprintf("%d apps sampled in %d windows, below threshold: %s", r.Quality.Apps, r.Windows, below)
}

// KVReader reads KV (cf.KV under workerd).
type KVReader interface {
	Get(ctx context.Context, key string) (string, error)
}

// QualityLog reads the latest check's result from KV.
type QualityLog struct{ KV KVReader }

// LatestQuality returns the latest result as stored (nil before any run).
func (l QualityLog) LatestQuality(ctx context.Context) (json.RawMessage, error) {
	v, err := l.KV.Get(ctx, QualityKey)
	if err != nil || v == "" {
		return nil, err
	}
	return json.RawMessage(v), nil
}
