package crawl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/registry"
	"storecrawl/worker/upstream"
)

// Sitemap discovery: the store's sitemaps list every app's page
// (appstore.ParseSitemapIndex, ParseSitemapApps), including the apps no
// similar shelf, chart, search or developer names. The sitemap-scan task
// reads one of the two indexes a run and the next SitemapFilesPerRun of
// its files, and queues the ids the catalogue does not hold
// (registry.Discovered: a known app writes nothing), so the discovery
// lookups give them their lookup fields and the enrichment queue takes
// them. A pass over an index's files resumes from its cursor in
// sweep_cursors (sitemap-scan for the full index, sitemap-scan-new for
// the new apps'); a finished pass starts again after SitemapFullEvery
// (full) or SitemapNewEvery (new apps). The new apps' index is read
// first when both are due.
//
// Cost: a request for the index and one for each file, on the store
// host, through its limit; a file's ids are queued SitemapIDsPerStmt a
// statement (one JSON parameter), each id one primary-key probe, each new
// app its row and its counter row.

// Sitemap scan bounds.
const (
	// SitemapRunEvery is the sitemap-scan task's period.
	SitemapRunEvery = 10 * time.Minute
	// SitemapFilesPerRun bounds the files a run reads: each is up to
	// appstore.MaxSitemapURLs ids, SitemapIDsPerStmt a statement, saved
	// in one batch with the cursor (51 statements, under d1.MaxBatch),
	// so a run is at most 2 + 2 × 51 queries, far under a Worker
	// invocation's 1,000.
	SitemapFilesPerRun = 2
	// SitemapFullEvery: a pass over every app's index starts at most this
	// often (the catalogue's other sources and the new apps' index keep
	// it current between passes).
	SitemapFullEvery = 7 * 24 * time.Hour
	// SitemapNewEvery: the new apps' index is read this often.
	SitemapNewEvery = time.Hour
	// SitemapIDsPerStmt is the ids one insert carries, as one JSON
	// parameter (the statement binds 2 of D1's 100).
	SitemapIDsPerStmt = 1000

	sitemapFullCursor = "sitemap-scan"
	sitemapNewCursor  = "sitemap-scan-new"
)

// SitemapPass is where a pass over an index is: when it started and the
// next file (its place in the index). Done: the index's files are read.
type SitemapPass struct {
	Started time.Time
	Next    int
	Done    bool
}

// String is the pass as its cursor holds it: "<started unix>:<next>", or
// "<started unix>:done".
func (p SitemapPass) String() string {
	if p.Started.IsZero() {
		return ""
	}
	next := strconv.Itoa(p.Next)
	if p.Done {
		next = "done"
	}
	return strconv.FormatInt(p.Started.Unix(), 10) + ":" + next
}

// ParseSitemapPass reads a cursor; anything else is no pass (one starts).
func ParseSitemapPass(s string) SitemapPass {
	at, next, ok := strings.Cut(s, ":")
	sec, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || sec <= 0 {
		return SitemapPass{}
	}
	p := SitemapPass{Started: time.Unix(sec, 0).UTC()}
	if next == "done" {
		p.Done = true
		return p
	}
	n, err := strconv.Atoi(next)
	if err != nil || n < 0 {
		return SitemapPass{}
	}
	p.Next = n
	return p
}

// Due is the pass to run at now for an index read every every: this one
// while it is under way, a new one from the start once it is done and
// every has passed since it started (or there was none); ok is false
// while the index rests.
func (p SitemapPass) Due(now time.Time, every time.Duration) (SitemapPass, bool) {
	switch {
	case p.Started.IsZero():
		return SitemapPass{Started: now}, true
	case !p.Done:
		return p, true
	case !now.Before(p.Started.Add(every)):
		return SitemapPass{Started: now}, true
	}
	return p, false
}

// SitemapResult is what one scan run did.
type SitemapResult struct {
	Index string `json:"index,omitempty"` // "new-app" or "app"; "" when both rest
	Files int    `json:"files"`           // files read
	IDs   int    `json:"ids"`             // ids they listed
	// NewApps: the ids the catalogue did not hold, queued.
	NewApps     int    `json:"new_apps"`
	Requests    int    `json:"requests"`
	Pass        string `json:"pass,omitempty"` // the cursor after the run
	RateLimited bool   `json:"rate_limited,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Summary is the run's line in the scheduler's status.
func (r SitemapResult) Summary() string {
	if r.Index == "" {
		return "sitemaps: both indexes rest"
	}
	return fmt.Sprintf("sitemaps (%s index): %d files, %d ids, %d new apps; pass %s", r.Index, r.Files, r.IDs, r.NewApps, r.Pass)
}

// SitemapStatements queue ids met in a sitemap (registry.Discovered),
// SitemapIDsPerStmt a statement.
func SitemapStatements(ids []int64, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	var out []d1.Stmt
	for i := 0; i < len(ids); i += SitemapIDsPerStmt {
		b, _ := json.Marshal(ids[i:min(i+SitemapIDsPerStmt, len(ids))])
		out = append(out, registry.Discovered(string(b), ts))
	}
	return out
}

// ScanSitemaps runs one scan: the new apps' index when due, else the
// full one when due, and the pass's next files (get, on the store host
// storeBase). A file's ids and the cursor are saved in one batch, so a
// run stopped between files resumes at the first unsaved one. A refusal
// stops the run; a file that fails otherwise (gone since the index was
// read, cut, not a sitemap) is passed, its apps left to the next pass.
func ScanSitemaps(ctx context.Context, db *d1.DB, get func(ctx context.Context, url string) upstream.Response, storeBase string, now time.Time) SitemapResult {
	var res SitemapResult
	newCur, err := d1.ReadCursor(ctx, db, sitemapNewCursor)
	if err != nil {
		return SitemapResult{Error: "cursor: " + err.Error()}
	}
	fullCur, err := d1.ReadCursor(ctx, db, sitemapFullCursor)
	if err != nil {
		return SitemapResult{Error: "cursor: " + err.Error()}
	}
	cur, newApps := newCur, true
	pass, due := ParseSitemapPass(newCur.From).Due(now, SitemapNewEvery)
	if !due {
		cur, newApps = fullCur, false
		if pass, due = ParseSitemapPass(fullCur.From).Due(now, SitemapFullEvery); !due {
			return res
		}
	}
	res.Index = "app"
	if newApps {
		res.Index = "new-app"
	}
	ctx = ratelimit.Reserved(ctx, 1+SitemapFilesPerRun)
	resp := get(ctx, appstore.SitemapIndexURL(storeBase, newApps))
	res.Requests++
	if resp.Class == objects.ClassRateLimit {
		res.RateLimited = true
		return res
	}
	if resp.Class != objects.ClassOK {
		res.Error = fmt.Sprintf("index: %v", resp.Err)
		return res
	}
	refs, err := appstore.ParseSitemapIndex(bytes.NewReader(resp.Body))
	resp.Release()
	if err != nil {
		res.Error = "index: " + err.Error()
		return res
	}
	var files []string
	for _, r := range refs {
		if u, ok := appstore.SitemapFileURL(storeBase, r.Loc); ok {
			files = append(files, u)
		}
	}
	save := func(stmts []d1.Stmt) error {
		n, err := db.ExecAtomic(ctx, append(stmts, cur.Write(pass.String(), now)...)...)
		if err == nil {
			res.NewApps += int(n)
			cur.From = pass.String()
		}
		return err
	}
	for read := 0; read < SitemapFilesPerRun && pass.Next < len(files); read++ {
		u := files[pass.Next]
		resp := get(ctx, u)
		res.Requests++
		if resp.Class == objects.ClassRateLimit {
			res.RateLimited = true
			logx.Event("crawl.sitemap_refused", map[string]any{"level": logx.Warn, "file": u})
			break
		}
		var ids []int64
		if resp.Class == objects.ClassOK {
			ids, err = appstore.ParseSitemapApps(bytes.NewReader(resp.Body))
		} else {
			err = resp.Err
			if err == nil {
				err = errors.New(string(resp.Class))
			}
		}
		resp.Release()
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("%s: %v", u, err))
			logx.Event("crawl.sitemap_failed", map[string]any{"level": logx.Warn, "file": u, "error": err.Error()})
		}
		res.Files++
		res.IDs += len(ids)
		pass.Next++
		pass.Done = pass.Next >= len(files) // the last file's batch ends the pass
		if err := save(SitemapStatements(ids, now)); err != nil {
			res.Error = joinErr(res.Error, "save: "+err.Error())
			return res
		}
	}
	if pass.Next >= len(files) && !res.RateLimited {
		pass.Done = true // an index of no files, or fewer than the cursor's
	}
	if cur.From != pass.String() {
		if err := save(nil); err != nil {
			res.Error = joinErr(res.Error, "save: "+err.Error())
		}
	}
	res.Pass = pass.String()
	return res
}
