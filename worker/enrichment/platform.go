package enrichment

import (
	"context"
	"errors"
	"fmt"
	"storecrawl/worker/subreq"
	"time"

	"storecrawl/worker/events"
	"storecrawl/worker/pagebatch"
	"storecrawl/worker/ratelimit"
)

// Bucket stores objects (R2 under workerd).
type Bucket interface {
	Put(ctx context.Context, key string, body []byte, contentType string, meta map[string]string) error
	Get(ctx context.Context, key string) (body []byte, found bool, err error)
	// GetRange reads length bytes at offset (a ranged GET: one Class B
	// read, like a whole one).
	GetRange(ctx context.Context, key string, offset, length int64) (body []byte, found bool, err error)
}

// R2HTML keeps raw store pages in a bucket, in the layout of
// worker/pagebatch.
type R2HTML struct{ Bucket Bucket }

// PutPages implements HTMLCache: an object of gzip members, one a page,
// each member's header saying what its page is.
func (h R2HTML) PutPages(ctx context.Context, key string, body []byte, pages int) error {
	if err := subreq.Spend(ctx, 1); err != nil {
		return err
	}
	return h.Bucket.Put(ctx, key, body, pagebatch.ContentType, pagebatch.ObjectMeta(pages))
}

// GetHTML implements PageSource: ref is a stored html_r2_key, a page's
// bytes in a batch (one ranged read) or a whole single-page object (the
// layout before batches). A reference or bytes that cannot be a page are
// pagebatch.ErrCorrupt.
func (h R2HTML) GetHTML(ctx context.Context, ref string) ([]byte, bool, error) {
	r, err := pagebatch.ParseRef(ref)
	if err != nil {
		return nil, false, err
	}
	var body []byte
	var found bool
	if r.Whole {
		body, found, err = h.Bucket.Get(ctx, r.Key)
	} else {
		body, found, err = h.Bucket.GetRange(ctx, r.Key, r.Offset, r.Length)
	}
	if err != nil || !found {
		return nil, found, err
	}
	page, err := pagebatch.Read(r, body)
	return page, err == nil, err
}

// GetPage implements StoredPages: a page's bytes in a batch (one ranged
// read, a subrequest of the run) and what its member's header says; a
// whole single-page object (the layout before batches) has no header.
func (h R2HTML) GetPage(ctx context.Context, ref string) ([]byte, pagebatch.Header, bool, error) {
	r, err := pagebatch.ParseRef(ref)
	if err != nil {
		return nil, pagebatch.Header{}, false, err
	}
	if err := subreq.Spend(ctx, 1); err != nil {
		return nil, pagebatch.Header{}, false, err
	}
	if r.Whole {
		body, found, err := h.Bucket.Get(ctx, r.Key)
		return body, pagebatch.Header{}, found && err == nil, err
	}
	body, found, err := h.Bucket.GetRange(ctx, r.Key, r.Offset, r.Length)
	if err != nil || !found {
		return nil, pagebatch.Header{}, found, err
	}
	if int64(len(body)) != r.Length {
		return nil, pagebatch.Header{}, false, fmt.Errorf("%w: %s returned %d bytes", pagebatch.ErrCorrupt, r, len(body))
	}
	page, hdr, err := pagebatch.Unpack(body)
	return page, hdr, err == nil, err
}

// QueueEvents announces enriched apps on the EVENTS queue.
type QueueEvents struct {
	Queue events.Sender
	Now   func() time.Time
}

// AppsEnriched implements Events.
func (q QueueEvents) AppsEnriched(ctx context.Context, ids []int64) error {
	return events.Send(ctx, q.Queue, events.NewAppEnriched(ids, q.Now())...)
}

// GlobalLimit is Runner.Limit through the OmniLimiter key: no slot within
// the client's wait budget is ErrLimited (a rate signal for the pacing
// algorithm); any other error is the limiter's own failure.
func GlobalLimit(limits *ratelimit.Client, key string) func(ctx context.Context, cost int, fn func(context.Context) error) error {
	return func(ctx context.Context, cost int, fn func(context.Context) error) error {
		err := limits.Schedule(ctx, key, cost, fn)
		if errors.Is(err, ratelimit.ErrRateLimited) {
			return ErrLimited
		}
		return err
	}
}

// GlobalLease is Runner.ReservePages (or ReserveLookups) through a lease
// of the OmniLimiter key (ratelimit.Lease): a run takes its n slots from
// the lease, which buys several runs' worth in one acquire. A refusal
// refuses the n sends it was for (ErrLimited each: their items keep what
// they have and wait, like refused requests); a limiter that cannot be
// reached leaves each send to acquire for itself.
func GlobalLease(lease *ratelimit.Lease, now func() time.Time) func(ctx context.Context, n int) context.Context {
	return func(ctx context.Context, n int) context.Context { return lease.Take(ctx, n, now()) }
}
