package datasets

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"storecrawl/worker/d1"
)

// Bounds of one run: every run reads at most MaxQueriesPerRun pages (D1
// allows 1,000 queries an invocation; the other tasks of the invocation
// keep the rest), PageRows rows each, and writes a part of at most
// PartRows rows at a time, so it holds one part in memory.
const (
	PageRows         = 2_000
	PartRows         = 10_000
	MaxQueriesPerRun = 30
	// MaxListed is how many snapshots' manifests GET /v1/datasets lists
	// (the index keeps the newest).
	MaxListed = 7
)

// R2 layout: a snapshot's files under Prefix/<date>/, the run's progress
// and the index of finished snapshots beside them.
const (
	Prefix       = "datasets"
	progressKey  = Prefix + "/progress.json"
	indexKey     = Prefix + "/index.json"
	manifestName = "manifest.json"
)

// Bucket is where the snapshot goes (an R2 bucket: cf.R2).
type Bucket interface {
	Put(ctx context.Context, key string, body []byte, contentType string, meta map[string]string) error
	Get(ctx context.Context, key string) ([]byte, bool, error)
}

// File is one part of a table.
type File struct {
	Name  string `json:"name"` // apps-0001.ndjson.gz
	Path  string `json:"path"` // its R2 key
	URL   string `json:"url"`  // where GET /v1/datasets serves it
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// TableManifest is one table of a snapshot.
type TableManifest struct {
	Name   string   `json:"name"`
	Source string   `json:"source"`
	Doc    string   `json:"doc"`
	Key    []string `json:"key"`
	Schema []Column `json:"schema"`
	Files  []File   `json:"files"`
	Rows   int64    `json:"rows"`
}

// Manifest is a snapshot's table of contents (manifest.json).
type Manifest struct {
	Date        string          `json:"date"`
	CreatedAt   string          `json:"created_at"`
	CompletedAt string          `json:"completed_at,omitempty"`
	Format      string          `json:"format"`
	Tables      []TableManifest `json:"tables"`
}

// FileFormat is the manifest's format note.
const FileFormat = "ndjson.gz: one JSON object a line, gzip; a table's parts in key order"

// progress is a snapshot under way: its manifest so far, the table being
// read and the last key read of it (raw JSON values).
type progress struct {
	Manifest Manifest          `json:"manifest"`
	Table    int               `json:"table"`
	Cursor   []json.RawMessage `json:"cursor"`
	Done     bool              `json:"done"`
}

// Snapshotter writes the snapshot from D1 into a bucket.
type Snapshotter struct {
	DB     *d1.DB
	Bucket Bucket
}

// RunResult is what one run did.
type RunResult struct {
	Date     string
	Queries  int
	Rows     int64
	Parts    int
	Finished bool // this run wrote the manifest
	Idle     bool // today's snapshot was already done
}

// Run writes the next parts of the snapshot under way, or starts today's
// (now's UTC date) when the last one is done and older; it ends after
// MaxQueriesPerRun page reads, keeping its progress for the next run.
func (s Snapshotter) Run(ctx context.Context, now time.Time) (RunResult, error) {
	today := now.UTC().Format(time.DateOnly)
	p, err := s.progress(ctx)
	if err != nil {
		return RunResult{}, err
	}
	if p == nil || p.Done {
		if p != nil && p.Manifest.Date >= today {
			return RunResult{Date: p.Manifest.Date, Idle: true}, nil
		}
		p = &progress{Manifest: Manifest{Date: today, CreatedAt: now.UTC().Format(time.RFC3339), Format: FileFormat}}
	}
	res := RunResult{Date: p.Manifest.Date}
	for res.Queries < MaxQueriesPerRun && p.Table < len(Tables) {
		t := Tables[p.Table]
		if len(p.Manifest.Tables) <= p.Table {
			p.Manifest.Tables = append(p.Manifest.Tables, TableManifest{Name: t.Name, Source: t.Source, Doc: t.Doc, Key: t.Key, Schema: t.Columns, Files: []File{}})
		}
		tm := &p.Manifest.Tables[p.Table]
		var part bytes.Buffer
		zw := gzip.NewWriter(&part)
		var rows int64
		end := false
		for rows < PartRows && res.Queries < MaxQueriesPerRun {
			want := min(PageRows, int(PartRows-rows))
			lines, last, err := s.page(ctx, t, p.Cursor, want)
			res.Queries++
			if err != nil {
				return res, fmt.Errorf("datasets: read %s: %w", t.Name, err)
			}
			for _, l := range lines {
				zw.Write([]byte(l))
				zw.Write([]byte{'\n'})
			}
			rows += int64(len(lines))
			if len(lines) < want {
				// A short page: the table's end.
				end = true
				break
			}
			p.Cursor = last
		}
		if err := zw.Close(); err != nil {
			return res, err
		}
		if rows > 0 {
			f := partFile(p.Manifest.Date, t.Name, len(tm.Files)+1)
			f.Rows, f.Bytes = rows, int64(part.Len())
			if err := s.Bucket.Put(ctx, f.Path, part.Bytes(), "application/gzip", nil); err != nil {
				return res, fmt.Errorf("datasets: put %s: %w", f.Path, err)
			}
			tm.Files = append(tm.Files, f)
			tm.Rows += rows
			res.Rows += rows
			res.Parts++
		}
		if end {
			p.Table++
			p.Cursor = nil
		}
		if p.Table == len(Tables) {
			if err := s.finish(ctx, p, now); err != nil {
				return res, err
			}
			res.Finished = true
		}
		if err := s.save(ctx, p); err != nil {
			return res, err
		}
	}
	return res, nil
}

// page reads up to n rows of t after cursor (nil: from the first): their
// lines and the last row's key.
func (s Snapshotter) page(ctx context.Context, t Table, cursor []json.RawMessage, n int) ([]string, []json.RawMessage, error) {
	args := t.firstKey()
	if cursor != nil {
		if len(cursor) != len(t.Key) {
			return nil, nil, fmt.Errorf("cursor %s for a key of %d columns", cursor, len(t.Key))
		}
		for i, raw := range cursor {
			v, err := keyValue(raw)
			if err != nil {
				return nil, nil, err
			}
			args[i] = v
		}
	}
	args = append(args, n)
	var rows []struct {
		J  string          `json:"j"`
		C0 json.RawMessage `json:"c0"`
		C1 json.RawMessage `json:"c1"`
	}
	if err := s.DB.Query(ctx, &rows, t.pageSQL(), args...); err != nil {
		return nil, nil, err
	}
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = r.J
	}
	var last []json.RawMessage
	if len(rows) > 0 {
		r := rows[len(rows)-1]
		last = []json.RawMessage{r.C0}
		if len(t.Key) == 2 {
			last = append(last, r.C1)
		}
	}
	return lines, last, nil
}

// keyValue is a cursor's key value as bound: an integer, or text.
func keyValue(raw json.RawMessage) (any, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("datasets: cursor value %s is neither text nor an integer", raw)
	}
	return n, nil
}

func partFile(date, table string, n int) File {
	name := fmt.Sprintf("%s-%04d.ndjson.gz", table, n)
	return File{Name: name, Path: Prefix + "/" + date + "/" + name, URL: "/v1/datasets/" + date + "/" + name}
}

// finish writes the manifest and puts it first in the index.
func (s Snapshotter) finish(ctx context.Context, p *progress, now time.Time) error {
	p.Done = true
	p.Manifest.CompletedAt = now.UTC().Format(time.RFC3339)
	m, err := json.Marshal(p.Manifest)
	if err != nil {
		return err
	}
	if err := s.Bucket.Put(ctx, Prefix+"/"+p.Manifest.Date+"/"+manifestName, m, "application/json", nil); err != nil {
		return fmt.Errorf("datasets: put manifest: %w", err)
	}
	list, err := s.Manifests(ctx)
	if err != nil {
		return err
	}
	kept := []json.RawMessage{m}
	for _, old := range list {
		var d struct {
			Date string `json:"date"`
		}
		if json.Unmarshal(old, &d) == nil && d.Date != p.Manifest.Date && len(kept) < MaxListed {
			kept = append(kept, old)
		}
	}
	idx, _ := json.Marshal(kept)
	return s.Bucket.Put(ctx, indexKey, idx, "application/json", nil)
}

func (s Snapshotter) progress(ctx context.Context) (*progress, error) {
	b, found, err := s.Bucket.Get(ctx, progressKey)
	if err != nil || !found {
		return nil, err
	}
	var p progress
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("datasets: progress: %w", err)
	}
	return &p, nil
}

func (s Snapshotter) save(ctx context.Context, p *progress) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return s.Bucket.Put(ctx, progressKey, b, "application/json", nil)
}

// Manifests are the finished snapshots' manifests, newest first (at most
// MaxListed).
func (s Snapshotter) Manifests(ctx context.Context) ([]json.RawMessage, error) {
	b, found, err := s.Bucket.Get(ctx, indexKey)
	if err != nil || !found {
		return nil, err
	}
	var out []json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("datasets: index: %w", err)
	}
	return out, nil
}

// Names a snapshot's files go by: its date, and a part or the manifest.
var (
	DatePattern = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	FilePattern = regexp.MustCompile(`^([a-z_]+-[0-9]{4,}\.ndjson\.gz|manifest\.json)$`)
)

// ErrBadName is a date or file name no snapshot writes.
var ErrBadName = errors.New("datasets: not a snapshot file name")

// File reads one file of a snapshot (found false when there is none).
func (s Snapshotter) File(ctx context.Context, date, name string) ([]byte, bool, error) {
	if !DatePattern.MatchString(date) || !FilePattern.MatchString(name) {
		return nil, false, ErrBadName
	}
	return s.Bucket.Get(ctx, Prefix+"/"+date+"/"+name)
}
