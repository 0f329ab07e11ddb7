package limiter

import (
	"strings"
	"testing"
	"time"

	"storecrawl/durable/ledger"
)

// TestLongestKeyMakesAValidFact: a limiter key of MaxKeyLen bytes gives a
// ledger source that Fact.Validate accepts (issue 14, item 4), so its
// minute facts are replicated, not dead-lettered.
func TestLongestKeyMakesAValidFact(t *testing.T) {
	key := strings.Repeat("k", MaxKeyLen)
	f := ledger.New(ledger.SourceLimiterPrefix+key, "limiter.minute", time.Unix(1700000000, 0), map[string]int64{"allowed": 1}, nil)
	if err := f.Validate(); err != nil {
		t.Fatalf("fact of the longest key: %v", err)
	}
	if len(ledger.SourceLimiterPrefix)+MaxKeyLen > ledger.MaxNameLen {
		t.Fatal("ledger.MaxNameLen must hold limiter:<MaxKeyLen>")
	}
}
