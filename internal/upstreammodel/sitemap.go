package upstreammodel

import "time"

// The world's sitemaps, as the store publishes them: a full index of
// every app, made again at each virtual day's start (apps that appear
// during the day wait for the next), and a new-app index of the apps
// that appeared within NewAppWindow, up to the minute. Each index's files
// hold consecutive offsets, SitemapAppsPerFile a file (the full index's
// from offset 1, the new-app index's from the first new app), so a file
// keeps its name and apps as the world grows; a removed app is left out
// of its file once removed.

const (
	// SitemapAppsPerFile is the offsets a file covers: the protocol's
	// 50,000 URLs a file at most.
	SitemapAppsPerFile = 50_000
	// NewAppWindow is how long a new app stays in the new-app index.
	NewAppWindow = 7 * day
	// SitemapRegenEvery is how often the full index is made again.
	SitemapRegenEvery = day
)

// SitemapFile is one file of an index: its number (from 1) and the
// offsets it covers, From..To inclusive. The apps it lists are those of
// them in the store at the time it is read.
type SitemapFile struct {
	N        int
	From, To int64
}

// FullSitemap is the full index's files at t: offsets 1 to the world's
// total at the last regeneration (Epoch plus whole SitemapRegenEvery).
func (w *World) FullSitemap(t time.Time) []SitemapFile {
	regen := w.Epoch
	if t.After(w.Epoch) {
		regen = w.Epoch.Add(t.Sub(w.Epoch).Truncate(SitemapRegenEvery))
	}
	return SitemapFiles(1, 1, w.Total(regen))
}

// NewSitemap is the new-app index's files at t: the new apps that
// appeared within NewAppWindow before t, in files numbered by their
// block of new-app ordinals (so a file's number stays as apps leave the
// window).
func (w *World) NewSitemap(t time.Time) []SitemapFile {
	first := int64(w.Base) + w.newBy(t.Add(-NewAppWindow)) + 1
	last := w.Total(t)
	if last < first {
		return nil
	}
	return SitemapFiles(int64(w.Base)+1, first, last)
}

// SitemapFiles are the blocks of SitemapAppsPerFile offsets counted from
// origin that hold first..last, each cut to that range.
func SitemapFiles(origin, first, last int64) []SitemapFile {
	var out []SitemapFile
	for b := (first - origin) / SitemapAppsPerFile; origin+b*SitemapAppsPerFile <= last; b++ {
		from, to := origin+b*SitemapAppsPerFile, origin+(b+1)*SitemapAppsPerFile-1
		out = append(out, SitemapFile{N: int(b) + 1, From: max(from, first), To: min(to, last)})
	}
	return out
}

// SitemapApps are the offsets of f in the store at t, in order.
func (w *World) SitemapApps(f SitemapFile, t time.Time) []int64 {
	var out []int64
	for off := f.From; off <= f.To; off++ {
		s := w.Static(off)
		if w.Exists(&s, t) {
			out = append(out, off)
		}
	}
	return out
}
