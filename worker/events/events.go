// Package events is the vocabulary of the EVENTS queue between pipeline
// stages: each stage announces what it changed (enrichment: apps enriched;
// the crawl: rankings updated; markets: clusters ready, fragmentation done)
// and the consumer routes each kind (an event's kind is its type) to the
// stage that depends on it.
package events

import (
	"context"
	"encoding/json"
	"storecrawl/worker/subreq"
	"time"
)

// Types are every event type.
var Types = []string{AppEnriched, RankingsUpdated, ClustersReady, FragmentationDone}

// Event types, each also the kind of its messages.
const (
	AppEnriched       = "app-enriched"       // → demand and competitiveness scores of those apps
	RankingsUpdated   = "rankings-updated"   // → clustering of those keywords
	ClustersReady     = "clusters-ready"     // → fragmentation analysis of those clusters
	FragmentationDone = "fragmentation-done" // → opportunity scores of those clusters
)

// Event is a message on the EVENTS queue. Its kind, the field the
// consumer routes on, is its type (Send sets it).
type Event struct {
	Kind     string   `json:"kind,omitempty"`
	Type     string   `json:"type"`
	TrackIDs []int64  `json:"track_ids,omitempty"`
	Keywords []string `json:"keywords,omitempty"`
	Clusters []string `json:"clusters,omitempty"`
	At       string   `json:"at"`
}

// Message bounds.
const (
	// MaxKeys bounds the keywords or clusters of one message.
	MaxKeys = 100
	// MaxTrackIDs bounds one message (and so one consumer statement batch).
	MaxTrackIDs = 50
)

func stamp(at time.Time) string { return at.UTC().Format(time.RFC3339) }

// NewAppEnriched splits ids into messages of at most MaxTrackIDs.
func NewAppEnriched(ids []int64, at time.Time) []Event {
	var out []Event
	for i := 0; i < len(ids); i += MaxTrackIDs {
		out = append(out, Event{Type: AppEnriched, TrackIDs: ids[i:min(i+MaxTrackIDs, len(ids))], At: stamp(at)})
	}
	return out
}

// NewKeyed splits keys (keywords for RankingsUpdated, cluster ids for
// ClustersReady and FragmentationDone) into messages of at most MaxKeys.
func NewKeyed(typ string, keys []string, at time.Time) []Event {
	var out []Event
	for i := 0; i < len(keys); i += MaxKeys {
		ev := Event{Type: typ, At: stamp(at)}
		chunk := keys[i:min(i+MaxKeys, len(keys))]
		if typ == RankingsUpdated {
			ev.Keywords = chunk
		} else {
			ev.Clusters = chunk
		}
		out = append(out, ev)
	}
	return out
}

// Sender puts one message on the queue (cf.Queue under workerd).
type Sender interface {
	Send(ctx context.Context, body string) error
}

// Send puts each event on the queue, stopping at the first failure.
func Send(ctx context.Context, s Sender, evs ...Event) error {
	for _, ev := range evs {
		ev.Kind = ev.Type
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if err := subreq.Spend(ctx, 1); err != nil {
			return err
		}
		if err := s.Send(ctx, string(b)); err != nil {
			return err
		}
	}
	return nil
}
