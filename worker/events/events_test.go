package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

type queue struct {
	sent   []Event
	failAt int
}

func (q *queue) Send(_ context.Context, body string) error {
	if q.failAt > 0 && len(q.sent)+1 == q.failAt {
		return errors.New("queue down")
	}
	var ev Event
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		return err
	}
	q.sent = append(q.sent, ev)
	return nil
}

func TestEventsSplitIntoBoundedMessages(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := make([]int64, 2*MaxTrackIDs+1)
	evs := NewAppEnriched(ids, at)
	if len(evs) != 3 || len(evs[2].TrackIDs) != 1 || evs[0].Type != AppEnriched || evs[0].At != "2026-01-01T00:00:00Z" {
		t.Fatalf("app-enriched: %+v", evs)
	}
	kws := make([]string, MaxKeys+5)
	for i := range kws {
		kws[i] = fmt.Sprint(i)
	}
	if evs := NewKeyed(RankingsUpdated, kws, at); len(evs) != 2 || len(evs[0].Keywords) != MaxKeys || evs[1].Clusters != nil {
		t.Fatalf("rankings-updated: %+v", evs)
	}
	if evs := NewKeyed(ClustersReady, kws[:3], at); len(evs) != 1 || len(evs[0].Clusters) != 3 || evs[0].Keywords != nil {
		t.Fatalf("clusters-ready: %+v", evs)
	}
	q := &queue{failAt: 2}
	if err := Send(context.Background(), q, NewKeyed(ClustersReady, kws, at)...); err == nil || len(q.sent) != 1 {
		t.Fatalf("send must stop at the failure: %v %d", err, len(q.sent))
	}
}
