package enrichment

import (
	"context"
	"errors"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/appstore"
	"storecrawl/worker/logx"
	"storecrawl/worker/pagebatch"
)

// A retried item whose store page is already in R2, and young enough
// (ENRICHMENT_PAGE_REUSE_H), is enriched from that page with no page
// request upstream: an attempt that stored its page and then failed (its
// D1 save, a lookup of a later attempt, an outage) does not pay for the
// page again. The decision is two pure steps, the clock passed in:
// ReuseCandidate before the R2 read (the reference alone), ReuseStored
// after it (what the page's gzip header says). A page that fails either
// step, cannot be read, or does not parse with today's parsers is fetched
// as before.

// PageClockSkew is how far in the future a stored time may lie and still
// count as young (the writer's clock against the reader's); a page dated
// further ahead is not trusted and is fetched again.
const PageClockSkew = time.Minute

// pageYoung reports whether a page stored at storedAt is at most window
// old at now (0 window: reuse is off).
func pageYoung(storedAt, now time.Time, window time.Duration) bool {
	if window <= 0 || storedAt.IsZero() {
		return false
	}
	age := now.Sub(storedAt)
	return age >= -PageClockSkew && age <= window
}

// ReuseCandidate decides, before any read, whether an item's stored page
// (its html_r2_key ref and page_status) is worth reading back from R2 at
// now: a reference of a batch object whose tick is within window. A page
// that did not parse (page_status unparsed, or an item whose last attempt
// ended in a parse error: a lookup since may have set its status back to
// pending, the page in R2 is still the one that failed) is the
// re-parse's (POST /v1/enrichment/reparse), and a live page is the parser
// drift's evidence: it is fetched, with no read first. A reference of the
// layout before batches carries no time: fetched.
func ReuseCandidate(ref, pageStatus string, priorParseError bool, now time.Time, window time.Duration) bool {
	if ref == "" || pageStatus == PageUnparsedStatus || priorParseError {
		return false
	}
	r, err := pagebatch.ParseRef(ref)
	if err != nil {
		return false
	}
	tick, ok := r.TickTime()
	return ok && pageYoung(tick, now, window)
}

// ReuseStored decides, the page read back, whether it stands in for a
// fetch at now: fetched within window (its header's time) and parsed when
// it was stored. A challenge page or one that did not parse is never
// content to reuse.
func ReuseStored(h pagebatch.Header, now time.Time, window time.Duration) bool {
	return pageYoung(h.FetchedAt, now, window) && h.Meta["outcome"] == controller.PageParsed
}

// StoredPages reads a stored page back with its member's header (R2).
type StoredPages interface {
	GetPage(ctx context.Context, ref string) (page []byte, h pagebatch.Header, found bool, err error)
}

// storedPage reads back an item's stored page (ref, already a
// ReuseCandidate) and parses it: ok when it is reused. Any failure to
// read, an old or unparsed page, or one today's parsers cannot read
// leaves the item to fetch its page.
func (r *Runner) storedPage(ctx context.Context, id int64, ref string) (appstore.StorePage, bool) {
	body, h, found, err := r.Stored.GetPage(ctx, ref)
	if err != nil && !errors.Is(err, pagebatch.ErrCorrupt) {
		logx.Event("controller.stored_page_unread", map[string]any{"level": logx.Warn, "track_id": id, "error": err.Error(),
			"action": "page fetched upstream"})
	}
	if err != nil || !found || !ReuseStored(h, r.Now(), r.PageReuse) {
		return appstore.StorePage{}, false
	}
	sp, err := appstore.ParseStorePage(body)
	if err != nil {
		return appstore.StorePage{}, false
	}
	return sp, true
}
