// Package bytebudget bounds how many bytes a group of concurrent readers may
// hold at once: a Budget is a fixed pool of bytes, each reader takes from
// it through its own Lease as it reads and gives it all back at once when
// it is done with what it read. Taking never blocks: a Take that would go
// over the limit takes nothing and reports false, and the caller decides
// what failing means (see upstream.Client).
package bytebudget

import "sync"

// Budget is a pool of bytes shared by concurrent leases. A nil *Budget is
// unlimited: its leases always get what they ask for.
type Budget struct {
	mu    sync.Mutex
	limit int64
	used  int64
}

// New returns a budget of limit bytes.
func New(limit int64) *Budget {
	return &Budget{limit: max(0, limit)}
}

// Limit is the budget's size in bytes (0 for a nil, unlimited budget).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// InUse is how many bytes the budget's leases hold now.
func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// take moves n bytes from the pool to a lease, all or nothing.
func (b *Budget) take(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.limit-b.used {
		return false
	}
	b.used += n
	return true
}

// give returns n bytes to the pool.
func (b *Budget) give(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.used = max(0, b.used-n)
	b.mu.Unlock()
}

// Lease starts an empty lease on the budget.
func (b *Budget) Lease() *Lease {
	return &Lease{b: b}
}

// Lease is what one reader holds of a budget. Its methods are safe for
// concurrent use, and a nil *Lease holds nothing.
type Lease struct {
	mu   sync.Mutex
	b    *Budget
	held int64
	done bool
}

// Take adds n bytes to the lease if the budget has room for all of them,
// and reports whether it did. A released lease takes nothing more.
func (l *Lease) Take(n int64) bool {
	if l == nil || n <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done || !l.b.take(n) {
		return false
	}
	l.held += n
	return true
}

// Give returns n of the lease's bytes to the budget (a read that used less
// than it took).
func (l *Lease) Give(n int64) {
	if l == nil || n <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n = min(n, l.held)
	l.held -= n
	l.b.give(n)
}

// Held is how many bytes the lease holds.
func (l *Lease) Held() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// Release returns everything the lease holds and ends it; releasing twice
// is harmless, so every copy of a result may release it.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.give(l.held)
	l.held, l.done = 0, true
}
