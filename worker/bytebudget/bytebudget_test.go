package bytebudget

import (
	"sync"
	"testing"
)

func TestTakeIsAllOrNothing(t *testing.T) {
	b := New(100)
	a, c := b.Lease(), b.Lease()
	if !a.Take(60) || b.InUse() != 60 {
		t.Fatalf("first take: in use %d", b.InUse())
	}
	if c.Take(41) {
		t.Fatal("a take over the limit must fail")
	}
	if c.Held() != 0 || b.InUse() != 60 {
		t.Fatalf("a failed take must take nothing: held %d, in use %d", c.Held(), b.InUse())
	}
	if !c.Take(40) || b.InUse() != b.Limit() {
		t.Fatalf("a take that fits exactly: in use %d", b.InUse())
	}
}

func TestGiveAndReleaseReturnBytes(t *testing.T) {
	b := New(100)
	l := b.Lease()
	l.Take(70)
	l.Give(30)
	if l.Held() != 40 || b.InUse() != 40 {
		t.Fatalf("give: held %d, in use %d", l.Held(), b.InUse())
	}
	l.Give(1000) // never more than the lease holds
	if l.Held() != 0 || b.InUse() != 0 {
		t.Fatalf("over-give: held %d, in use %d", l.Held(), b.InUse())
	}
	l.Take(50)
	other := b.Lease()
	other.Take(20)
	l.Release()
	l.Release() // twice is harmless: it must not return other's bytes
	if b.InUse() != 20 {
		t.Fatalf("after release: in use %d, want other's 20", b.InUse())
	}
	if l.Take(1) {
		t.Fatal("a released lease must take nothing more")
	}
}

func TestNilIsUnlimited(t *testing.T) {
	var b *Budget
	l := b.Lease()
	if !l.Take(1<<40) || b.InUse() != 0 {
		t.Fatal("a nil budget must admit anything and count nothing")
	}
	l.Release()
	var none *Lease
	if !none.Take(5) || none.Held() != 0 {
		t.Fatal("a nil lease holds nothing")
	}
	none.Give(5)
	none.Release()
}

func TestConcurrentLeasesNeverExceedTheLimit(t *testing.T) {
	const limit, step, readers = 1000, 7, 16
	b := New(limit)
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				l := b.Lease()
				for l.Take(step) {
					mu.Lock()
					peak = max(peak, b.InUse())
					mu.Unlock()
					if l.Held() > 200 {
						break
					}
				}
				l.Release()
			}
		}()
	}
	wg.Wait()
	if peak > limit || b.InUse() != 0 {
		t.Fatalf("peak %d over limit %d, or %d left in use", peak, limit, b.InUse())
	}
}
