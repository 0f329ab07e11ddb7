package limiter

import (
	"strings"
	"testing"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/internal/objects"
)

// TestLongestKeyMakesAValidFact: a limiter key of MaxKeyLen bytes, in the
// clients' namespace too, gives a ledger source that Fact.Validate accepts,
// so its minute facts (and its retirement) are
// replicated, not dead-lettered.
func TestLongestKeyMakesAValidFact(t *testing.T) {
	key := strings.Repeat("k", MaxKeyLen)
	a, fe := ParseClientAcquire([]byte(`{"key":"` + key + `","limit":1,"windowInSeconds":1}`))
	if fe != nil || len(a.Key) != MaxStoredKeyLen {
		t.Fatalf("the longest client key: %+v %+v", a, fe)
	}
	for _, k := range []string{key, a.Key} {
		at := time.Unix(1700000000, 0)
		for _, f := range []ledger.Fact{
			ledger.New(objects.SourceLimiterPrefix+k, "limiter.minute", at, map[string]int64{"allowed": 1}, nil),
			ledger.Retired(objects.SourceLimiterPrefix+k, at, map[string]int64{"allowed": 1}, 1),
		} {
			if err := f.Validate(); err != nil {
				t.Fatalf("fact of the longest key %q: %v", k, err)
			}
		}
	}
	if len(objects.SourceLimiterPrefix)+MaxStoredKeyLen > ledger.MaxNameLen {
		t.Fatal("ledger.MaxNameLen must hold limiter:client:<MaxKeyLen>")
	}
}
