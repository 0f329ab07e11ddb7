package sim

import "slices"

// queue is the work: items 0..total-1, fresh ones in order, with items to
// retry (failed or not started) in front, as a pending-first table would
// hand them out.
type queue struct {
	total, completed int
	fresh            int   // next never-attempted item
	retry            []int // items to hand out first, in order
}

func newQueue(total int) *queue { return &queue{total: total} }

// remaining is how many items are not completed.
func (q *queue) remaining() int { return q.total - q.completed }

// take hands out the next n items (n <= remaining).
func (q *queue) take(n int) []int {
	ids := make([]int, 0, n)
	k := min(n, len(q.retry))
	ids = append(ids, q.retry[:k]...)
	q.retry = q.retry[k:]
	for len(ids) < n {
		ids = append(ids, q.fresh)
		q.fresh++
	}
	return ids
}

// putBack returns items to the front of the queue, in the given order.
func (q *queue) putBack(ids []int) {
	if len(ids) > 0 {
		q.retry = append(slices.Clone(ids), q.retry...)
	}
}
