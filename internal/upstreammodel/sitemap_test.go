package upstreammodel

import (
	"testing"
	"time"
)

// TestSitemapsListEveryAppInTheStore: at any time, every app in the store
// is in the full index or (appeared since its last regeneration) in the
// new-app index; no removed or future app is in either; files cover
// consecutive offsets at most SitemapAppsPerFile each.
func TestSitemapsListEveryAppInTheStore(t *testing.T) {
	rates := DefaultRates().Scaled(50) // many new and removed apps
	w := NewWorld(7, 120_000, epoch, rates)
	for _, at := range []time.Duration{0, 30 * time.Hour, 9 * day} {
		now := epoch.Add(at)
		listed := map[int64]int{}
		for _, idx := range [][]SitemapFile{w.FullSitemap(now), w.NewSitemap(now)} {
			for i, f := range idx {
				if f.To-f.From+1 > SitemapAppsPerFile || f.From > f.To || (i > 0 && f.N != idx[i-1].N+1) {
					t.Fatalf("%v: file %+v", at, f)
				}
				for _, off := range w.SitemapApps(f, now) {
					listed[off]++
				}
			}
		}
		live := 0
		for off := int64(1); off <= w.Total(now); off++ {
			s := w.Static(off)
			in := w.Exists(&s, now)
			if in {
				live++
			}
			if in != (listed[off] > 0) {
				t.Fatalf("%v: app %d in the store %v, listed %d times", at, off, in, listed[off])
			}
		}
		if len(listed) != live {
			t.Fatalf("%v: %d listed, %d live", at, len(listed), live)
		}
		if at == 0 && (len(w.FullSitemap(now)) != 3 || len(w.NewSitemap(now)) != 0) {
			t.Fatalf("at the epoch: %+v, %+v", w.FullSitemap(now), w.NewSitemap(now))
		}
	}
	// The full index is made once a day: an app that appeared since waits
	// for the next day in it, and is in the new-app index meanwhile.
	now := epoch.Add(30 * time.Hour)
	full := w.FullSitemap(now)
	if last := full[len(full)-1].To; last != w.Total(epoch.Add(day)) {
		t.Fatalf("full index ends at %d, want the total at day 1 %d", last, w.Total(epoch.Add(day)))
	}
	// Files keep their numbers as apps leave the new-app window.
	late := w.NewSitemap(epoch.Add(60 * day))
	if late[0].N <= 1 || late[0].From != int64(w.Base)+w.newBy(epoch.Add(53*day))+1 {
		t.Fatalf("new-app window at day 60: %+v", late[0])
	}
}
