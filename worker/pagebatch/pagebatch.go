// Package pagebatch decides how raw store pages are laid out in R2: the
// pages one enrichment tick fetched go into ONE object (one Class A put a
// tick instead of one a page), each page a gzip member of it, and an app's
// stored reference (app_registry.html_r2_key) names its page's bytes in
// the object, read back with a ranged GET (Class B). Pure Go: the bucket
// is the caller's.
//
// A reference is "<object key>#<offset>+<length>"; a reference without
// '#' is a whole object holding one uncompressed page, the layout before
// batches ("store-pages/{cc}/{id}.html"), still read as it was. Each
// member is a complete gzip stream whose header names the page (Name
// "<track id>.html", ModTime when it was fetched, Comment its metadata as
// "k=v" pairs), so a batch object is also readable whole with zcat.
//
// Batch keys sit under the same "store-pages/" prefix as single pages, so
// the bucket's lifecycle rule (KeptDays) expires a batch whole, KeptDays
// after its tick: every page in it is at most that old.
package pagebatch

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Prefix is where batch objects live: under the lifecycle rule's
// "store-pages/" prefix.
const Prefix = "store-pages/batches/"

// KeptDays is how long the bucket keeps a page: its lifecycle rule on
// "store-pages/" (README, deploying) expires an object this many days
// after its tick. A week of pages is what a re-parse after a parser fix
// reaches and what a retry's page reuse may take (ENRICHMENT_PAGE_REUSE_H
// is bounded by it); a month of them, at the design's ~100,000 pages a
// day, would keep ~40 GB (docs/scale.md).
const KeptDays = 7

// Level is the members' gzip level: the default, ~15% smaller than the
// fastest on the real captured pages (worker/appstore/testdata), for a
// few milliseconds a page (TestMemberBytesOfRealPages).
const Level = gzip.DefaultCompression

// MaxObjectBytes bounds one batch object's compressed bytes, held in the
// isolate until the tick's put. A gzipped store page is ~10–14 KB (the
// real captures, 53–79 KB), so a tick of the pacing's 50 items (pacing.SeedMaxBatch)
// holds ~1 MB; the bound keeps a tick of unusually large pages well under
// the tick's body budget (enrichment.TickBodyBytes, 24 MB). A page that
// does not fit goes in an object of its own (Batch.Add's spill).
const MaxObjectBytes = 8 << 20

// MaxPageBytes bounds what one member decompresses to when read back: the
// upstream's own body bound (upstream.MaxBodyBytes, 4 MB) with room, so a
// corrupt member can never inflate without end.
const MaxPageBytes = 8 << 20

// ContentType is the batch object's content type. No Content-Encoding is
// set: the bytes are served as stored, so a ranged read returns a member
// exactly as written.
const ContentType = "application/gzip"

// ErrCorrupt is a reference that does not parse, or stored bytes that are
// not the gzip member it names: the page cannot be read, ever (unlike an
// unreachable bucket, which a retry may fix).
var ErrCorrupt = errors.New("pagebatch: corrupt page reference or data")

// Ref is where one page is: a whole object (Whole: the layout before
// batches) or Length bytes at Offset of a batch object.
type Ref struct {
	Key    string
	Offset int64
	Length int64
	Whole  bool
}

// String is the reference as stored in html_r2_key.
func (r Ref) String() string {
	if r.Whole {
		return r.Key
	}
	return r.Key + "#" + strconv.FormatInt(r.Offset, 10) + "+" + strconv.FormatInt(r.Length, 10)
}

// ParseRef reads a stored reference. One without '#' is a whole object
// (an old single-page key); anything else malformed is ErrCorrupt.
func ParseRef(s string) (Ref, error) {
	key, frag, ranged := strings.Cut(s, "#")
	if key == "" {
		return Ref{}, fmt.Errorf("%w: %q has no object key", ErrCorrupt, s)
	}
	if !ranged {
		return Ref{Key: key, Whole: true}, nil
	}
	off, n, ok := strings.Cut(frag, "+")
	offset, err1 := strconv.ParseInt(off, 10, 64)
	length, err2 := strconv.ParseInt(n, 10, 64)
	if !ok || err1 != nil || err2 != nil || offset < 0 || length <= 0 || length > MaxObjectBytes {
		return Ref{}, fmt.Errorf("%w: %q is not <key>#<offset>+<length>", ErrCorrupt, s)
	}
	return Ref{Key: key, Offset: offset, Length: length}, nil
}

// ObjectKey names a tick's batch: the day (UTC) and the tick, then the
// first page's app, so two controllers ticking in the same millisecond
// never share a key.
func ObjectKey(country string, tick time.Time, firstTrackID int64) string {
	t := tick.UTC()
	return Prefix + t.Format("2006-01-02") + "/" + country + "-" + strconv.FormatInt(t.UnixMilli(), 10) +
		"-" + strconv.FormatInt(firstTrackID, 10) + ".gz"
}

// TickTime is when the tick that stored the page ran, as its object's key
// (ObjectKey, or a SpillKey of it) names it: never after the page was
// fetched. A whole object (the layout before batches) or a key of
// another shape says nothing (false).
func (r Ref) TickTime() (time.Time, bool) {
	if r.Whole || !strings.HasPrefix(r.Key, Prefix) || !strings.HasSuffix(r.Key, ".gz") {
		return time.Time{}, false
	}
	name := strings.TrimSuffix(r.Key[strings.LastIndexByte(r.Key, '/')+1:], ".gz")
	parts := strings.Split(name, "-") // country, tick (unix ms), first app[, spilled app]
	if len(parts) != 3 && len(parts) != 4 {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}

// Header is what a member says about its page.
type Header struct {
	TrackID   int64
	FetchedAt time.Time
	// Meta is the page's metadata (status, format, outcome, parser
	// version), the custom metadata a single-page object carried.
	Meta map[string]string
}

// Member compresses one page as a standalone gzip member.
func Member(h Header, page []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, Level)
	if err != nil {
		return nil, err
	}
	if err := writeMember(zw, &buf, h, page); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeMember(zw *gzip.Writer, buf *bytes.Buffer, h Header, page []byte) error {
	zw.Reset(buf)
	zw.Name = strconv.FormatInt(h.TrackID, 10) + ".html"
	zw.ModTime = h.FetchedAt
	zw.Comment = metaComment(h.Meta)
	if _, err := zw.Write(page); err != nil {
		return err
	}
	return zw.Close()
}

// metaComment is the metadata as "k=v" pairs, sorted (gzip comments are
// Latin-1 with no NUL: values are plain words and numbers).
func metaComment(meta map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		parts = append(parts, k+"="+strings.Map(func(r rune) rune {
			if r == ' ' || r == 0 || r > 0x7e {
				return '_'
			}
			return r
		}, meta[k]))
	}
	return strings.Join(parts, " ")
}

// Unpack reads one member back: the page and its header. Bytes that are
// not exactly one gzip member are ErrCorrupt.
func Unpack(member []byte) ([]byte, Header, error) {
	zr, err := gzip.NewReader(bytes.NewReader(member))
	if err != nil {
		return nil, Header{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	zr.Multistream(false)
	page, err := io.ReadAll(io.LimitReader(zr, MaxPageBytes+1))
	if err != nil {
		return nil, Header{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if len(page) > MaxPageBytes {
		return nil, Header{}, fmt.Errorf("%w: a page over %d bytes", ErrCorrupt, MaxPageBytes)
	}
	h := Header{FetchedAt: zr.ModTime, Meta: map[string]string{}}
	h.TrackID, _ = strconv.ParseInt(strings.TrimSuffix(zr.Name, ".html"), 10, 64)
	for _, kv := range strings.Fields(zr.Comment) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			h.Meta[k] = v
		}
	}
	return page, h, nil
}

// Read is a stored reference's page from what the bucket returned for it:
// the whole object for a Whole reference, else the ranged bytes.
func Read(r Ref, data []byte) ([]byte, error) {
	if r.Whole {
		return data, nil
	}
	if int64(len(data)) != r.Length {
		return nil, fmt.Errorf("%w: %s returned %d bytes", ErrCorrupt, r, len(data))
	}
	page, _, err := Unpack(data)
	return page, err
}

// Batch gathers one tick's pages into one object. Safe for concurrent use
// (a tick's items run together).
type Batch struct {
	mu    sync.Mutex
	key   string
	buf   bytes.Buffer
	zw    *gzip.Writer
	pages int
	ids   []int64
}

// NewBatch starts the batch object key (ObjectKey).
func NewBatch(key string) *Batch { return &Batch{key: key} }

// Key is the batch object's key.
func (b *Batch) Key() string { return b.key }

// Add appends a page and returns its reference, valid once the batch is
// put. A page that would take the object past MaxObjectBytes is not
// added: spill is its member, for the caller to put in an object of its
// own (SpillKey, the reference at offset 0).
func (b *Batch) Add(h Header, page []byte) (ref Ref, spill []byte, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.zw == nil {
		if b.zw, err = gzip.NewWriterLevel(nil, Level); err != nil {
			return Ref{}, nil, err
		}
	}
	off := b.buf.Len()
	if err := writeMember(b.zw, &b.buf, h, page); err != nil {
		b.buf.Truncate(off)
		return Ref{}, nil, err
	}
	if b.buf.Len() > MaxObjectBytes {
		spill = bytes.Clone(b.buf.Bytes()[off:])
		b.buf.Truncate(off)
		return Ref{}, spill, nil
	}
	b.pages++
	b.ids = append(b.ids, h.TrackID)
	return Ref{Key: b.key, Offset: int64(off), Length: int64(b.buf.Len() - off)}, nil, nil
}

// SpillKey is the object of a page that did not fit its tick's batch.
func SpillKey(batchKey string, trackID int64) string {
	return strings.TrimSuffix(batchKey, ".gz") + "-" + strconv.FormatInt(trackID, 10) + ".gz"
}

// Pages is how many pages the batch holds.
func (b *Batch) Pages() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pages
}

// TrackIDs are the batch's apps, in the order added.
func (b *Batch) TrackIDs() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.ids)
}

// Bytes is the object's body.
func (b *Batch) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

// ObjectMeta is the batch object's custom metadata.
func ObjectMeta(pages int) map[string]string {
	return map[string]string{"layout": "gzip-members", "pages": strconv.Itoa(pages)}
}
