//go:build unix

package main

import (
	"fmt"
	"math"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/crawl"
)

// sitemap-scan's day on the product's schedule (worker/crawl/sitemaps.go),
// pure: most of its runs find both indexes resting and read only the two
// cursors; the new apps' index is read every crawl.SitemapNewEvery and the
// full index's files once every crawl.SitemapFullEvery, crawl.
// SitemapFilesPerRun a run. A run that reads a file reads a row for each
// id it lists (its primary-key probe), measured on the bench's runs of the
// full index; the simulator serves no new apps' index at scale, so that
// index's ids are the store's new apps of sitemapNewIndexDays.

const (
	// sitemapCursorRows is what every run reads: the two indexes' cursors
	// (TestScanSitemapsOnD1).
	sitemapCursorRows = 2
	// sitemapNewIndexDays: the new apps' index lists the store's new apps
	// of about a week (an assumption: docs/crawl.md's table, "the week's
	// ~7,700 new apps"; the simulator at scale lists none).
	sitemapNewIndexDays = 7
)

// SitemapRun is one measured sitemap-scan run: the index it read (its
// summary, crawl.SitemapResult.Summary), its files and ids, its rows.
type SitemapRun struct {
	Index         string
	Files, IDs    int
	Read, Written float64
}

// ParseSitemapSummary reads a run's index, files and ids from its summary
// in the scheduler's status; ok is false for a run that read no index.
func ParseSitemapSummary(s string) (index string, files, ids int, ok bool) {
	n, err := fmt.Sscanf(s, "sitemaps (%s index): %d files, %d ids", &index, &files, &ids)
	return index, files, ids, err == nil && n == 3
}

// SitemapDay is sitemap-scan's rows read and written a day at apps in the
// catalogue and newAppsPerDay in the store, from the measured runs of the
// full index (rows a listed id, the cursor's writes a file); ok is false
// when no run read a file of it (the caller keeps the runs' mean).
func SitemapDay(runs []SitemapRun, runsPerDay, apps, newAppsPerDay float64) (read, written float64, ok bool) {
	var probes, ids, files, fileWrites float64
	for _, r := range runs {
		if r.Index == "app" && r.IDs > 0 && r.Files > 0 {
			probes += max(0, r.Read-sitemapCursorRows)
			ids += float64(r.IDs)
			files += float64(r.Files)
			fileWrites += r.Written
		}
	}
	if ids == 0 {
		return 0, 0, false
	}
	perID, perFile := probes/ids, fileWrites/files
	day := 24 * time.Hour
	newReads := float64(day / crawl.SitemapNewEvery)
	fullEvery := float64(crawl.SitemapFullEvery) / float64(day)
	fullFiles := math.Ceil(apps / appstore.MaxSitemapURLs)
	read = runsPerDay*sitemapCursorRows + (newReads*newAppsPerDay*sitemapNewIndexDays+apps/fullEvery)*perID
	// Each read of the new apps' index writes its cursor (its file's ids
	// with it); the full index's files write theirs a file. The apps they
	// find first are billed as new apps (their rows whichever source finds
	// them).
	written = newReads + fullFiles/fullEvery*perFile
	return read, written, true
}

// CycleAtDue is what a crawl cycle costs (rows, subrequests or wall time)
// when it searches duePerCycle keywords, the steering's steady rate, from
// n measured cycles' total and their searches: the idle cycles' mean
// (idleMean, 0 when none idled) and each search's share of the rest. The
// measured cycles search what came due since the catalogue's clock (its
// build's start), more than a steady cycle's when the build was slow.
func CycleAtDue(total, idleMean float64, n, searches int, duePerCycle float64) float64 {
	if searches <= 0 || n <= 0 {
		return total / float64(max(1, n))
	}
	perSearch := max(0, total-idleMean*float64(n)) / float64(searches)
	return idleMean + perSearch*duePerCycle
}
