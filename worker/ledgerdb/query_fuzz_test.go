package ledgerdb

import (
	"testing"
	"time"
)

// FuzzParseHistoryQuery: whatever since and bucket_s say, the query is
// either refused naming the field or within every bound.
func FuzzParseHistoryQuery(f *testing.F) {
	for _, seed := range [][2]string{{"", ""}, {"", "18446744134"}, {"-9223372036854775808", "60"},
		{"9223372036854775807", "3600"}, {"2026-11-23T10:00:00Z", "59"}, {"1e3", "0x10"}, {"", "-60"}} {
		f.Add(seed[0], seed[1])
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, since, bucket string) {
		q, field, msg := ParseHistoryQuery(func(k string) string {
			switch k {
			case "since":
				return since
			case "bucket_s":
				return bucket
			}
			return ""
		}, now)
		if field != "" {
			if (field != "since" && field != "bucket_s") || msg == "" {
				t.Fatalf("bad refusal %q %q", field, msg)
			}
			return
		}
		if q.Bucket < MinBucket || q.Bucket > MaxBucket || q.Bucket%Grain != 0 || q.Since.After(now) || now.Sub(q.Since) > MaxHistoryAge || q.Until != now {
			t.Fatalf("since=%q bucket_s=%q accepted out of bounds: %+v", since, bucket, q)
		}
	})
}

func TestBucketOverflowIsRefused(t *testing.T) {
	get := func(k string) string {
		if k == "bucket_s" {
			return "18446744134"
		}
		return ""
	}
	if _, field, _ := ParseHistoryQuery(get, time.Now()); field != "bucket_s" {
		t.Fatalf("bucket_s=18446744134 accepted (field %q)", field)
	}
}
