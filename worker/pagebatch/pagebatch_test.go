package pagebatch

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var tick = time.Date(2026, 11, 25, 17, 30, 0, 123e6, time.UTC)

func page(id int64, n int) []byte {
	return []byte(fmt.Sprintf("<html><body id=%d>%s</body></html>", id, strings.Repeat("product-header ", n)))
}

// A tick's pages go into one object; each reference reads its own page
// back (and its header) from the object's bytes at its offset.
func TestBatchRoundTrip(t *testing.T) {
	key := ObjectKey("us", tick, 42)
	if key != "store-pages/batches/2026-11-25/us-1795627800123-42.gz" {
		t.Fatalf("key %q", key)
	}
	b := NewBatch(key)
	refs := map[int64]string{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for id := int64(1); id <= 30; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			meta := map[string]string{"status": "200", "outcome": "parsed", "format": "current", "parser_version": "3"}
			ref, spill, err := b.Add(Header{TrackID: id, FetchedAt: tick, Meta: meta}, page(id, int(id)*50))
			if err != nil || spill != nil {
				t.Errorf("add %d: %v (spill %d bytes)", id, err, len(spill))
			}
			mu.Lock()
			refs[id] = ref.String()
			mu.Unlock()
		}()
	}
	wg.Wait()
	obj := b.Bytes()
	if b.Pages() != 30 || len(b.TrackIDs()) != 30 {
		t.Fatalf("pages %d ids %v", b.Pages(), b.TrackIDs())
	}
	var raw int
	for id, s := range refs {
		ref, err := ParseRef(s)
		if err != nil || ref.Key != key || ref.Whole || ref.String() != s {
			t.Fatalf("ref %q: %+v %v", s, ref, err)
		}
		got, err := Read(ref, obj[ref.Offset:ref.Offset+ref.Length])
		if err != nil || !bytes.Equal(got, page(id, int(id)*50)) {
			t.Fatalf("page %d: %v (%d bytes)", id, err, len(got))
		}
		raw += len(got)
		_, h, _ := Unpack(obj[ref.Offset : ref.Offset+ref.Length])
		if h.TrackID != id || !h.FetchedAt.Equal(tick.Truncate(time.Second)) || h.Meta["outcome"] != "parsed" || h.Meta["parser_version"] != "3" {
			t.Fatalf("header of %d: %+v", id, h)
		}
	}
	if len(obj)*4 > raw {
		t.Fatalf("the object is %d bytes for %d of pages: not compressed", len(obj), raw)
	}
}

// An old single-page key is a whole object, read as stored.
func TestOldKeyIsWholeObject(t *testing.T) {
	ref, err := ParseRef("store-pages/us/123.html")
	if err != nil || !ref.Whole || ref.Key != "store-pages/us/123.html" || ref.String() != "store-pages/us/123.html" {
		t.Fatalf("%+v %v", ref, err)
	}
	got, err := Read(ref, []byte("<html>plain</html>"))
	if err != nil || string(got) != "<html>plain</html>" {
		t.Fatalf("%q %v", got, err)
	}
}

// A reference or bytes that cannot be a page are ErrCorrupt, never a
// panic or a page of garbage.
func TestCorruptIsClearError(t *testing.T) {
	for _, s := range []string{"", "#0+10", "k#", "k#10", "k#a+1", "k#1+b", "k#-1+10", "k#0+0", "k#0+99999999999", "k#1+2+3"} {
		if _, err := ParseRef(s); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseRef(%q): %v, want ErrCorrupt", s, err)
		}
	}
	b := NewBatch("k")
	ref, _, _ := b.Add(Header{TrackID: 1}, page(1, 100))
	obj := b.Bytes()
	member := obj[ref.Offset : ref.Offset+ref.Length]
	flipped := bytes.Clone(member)
	flipped[len(flipped)-6] ^= 0xff // the CRC trailer
	for name, data := range map[string][]byte{
		"short":   member[:len(member)-1],
		"garbage": bytes.Repeat([]byte{7}, len(member)),
		"crc":     flipped,
	} {
		if _, err := Read(ref, data); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	// A member that inflates past MaxPageBytes is refused.
	huge, _ := Member(Header{TrackID: 2}, make([]byte, MaxPageBytes+1))
	if _, _, err := Unpack(huge); !errors.Is(err, ErrCorrupt) {
		t.Errorf("huge: %v", err)
	}
}

// A page that would take the object past MaxObjectBytes is not added: its
// member comes back for an object of its own, readable at offset 0.
func TestSpill(t *testing.T) {
	b := NewBatch(ObjectKey("us", tick, 1))
	noise := make([]byte, 3<<20) // incompressible: the member is ~3 MB
	rand.NewChaCha8([32]byte{}).Read(noise)
	for i := int64(1); i <= 2; i++ {
		if _, spill, err := b.Add(Header{TrackID: i}, noise); err != nil || spill != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	before := len(b.Bytes())
	_, spill, err := b.Add(Header{TrackID: 3}, noise)
	if err != nil || spill == nil || len(b.Bytes()) != before || b.Pages() != 2 {
		t.Fatalf("third page: spill %d bytes, %v, object %d→%d bytes", len(spill), err, before, len(b.Bytes()))
	}
	ref := Ref{Key: SpillKey(b.Key(), 3), Length: int64(len(spill))}
	if ref.Key != "store-pages/batches/2026-11-25/us-1795627800123-1-3.gz" {
		t.Fatalf("spill key %q", ref.Key)
	}
	got, err := Read(ref, spill)
	if err != nil || !bytes.Equal(got, noise) {
		t.Fatalf("spilled page: %v", err)
	}
	// The batch goes on after a spill: a small page still fits.
	if _, spill, err := b.Add(Header{TrackID: 4}, page(4, 10)); err != nil || spill != nil {
		t.Fatalf("after a spill: %v", err)
	}
}

// A batch's reference, and a spilled page's, name their tick; an old
// whole object or a key of another shape names none.
func TestRefTickTime(t *testing.T) {
	key := ObjectKey("us", tick, 42)
	for _, ref := range []Ref{{Key: key, Offset: 10, Length: 20}, {Key: SpillKey(key, 7), Length: 20}} {
		if at, ok := ref.TickTime(); !ok || !at.Equal(tick) {
			t.Errorf("%s: %v %v, want %v", ref, at, ok, tick)
		}
	}
	for _, ref := range []Ref{
		{Key: "store-pages/us/123.html", Whole: true},
		{Key: Prefix + "2026-11-25/us-x-42.gz", Length: 1},
		{Key: Prefix + "2026-11-25/us-1795627800123.gz", Length: 1},
		{Key: "elsewhere/us-1795627800123-42.gz", Length: 1},
	} {
		if at, ok := ref.TickTime(); ok {
			t.Errorf("%s: %v, want no time", ref, at)
		}
	}
}

// The real captured store pages (worker/appstore/testdata) as members at
// Level, against the fastest level: what R2 keeps a page (docs/scale.md
// bills R2 storage at these bytes). Each reads back as it was.
func TestMemberBytesOfRealPages(t *testing.T) {
	files, _ := filepath.Glob("../appstore/testdata/legacy_*.html")
	if len(files) < 2 {
		t.Fatalf("real pages: %v", files)
	}
	var raw, at, fastest int
	for _, f := range files {
		p, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h := Header{TrackID: 1, FetchedAt: tick, Meta: map[string]string{"status": "200", "format": "legacy"}}
		m, err := Member(h, p)
		if err != nil {
			t.Fatal(err)
		}
		back, _, err := Unpack(m)
		if err != nil || !bytes.Equal(back, p) {
			t.Fatalf("%s: read back %d bytes, %v", f, len(back), err)
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		if err := writeMember(zw, &buf, h, p); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes, a member of %d at Level (%d at the fastest)", filepath.Base(f), len(p), len(m), buf.Len())
		raw, at, fastest = raw+len(p), at+len(m), fastest+buf.Len()
	}
	n := len(files)
	t.Logf("mean of %d real pages: %d bytes, %d a member at Level, %d at the fastest", n, raw/n, at/n, fastest/n)
	if at >= fastest {
		t.Fatalf("Level's members (%d bytes) not smaller than the fastest level's (%d)", at, fastest)
	}
}
