package api

import (
	"strings"
	"testing"
)

func TestAcquireFrontValidatesBeforeAnyObjectIsCalled(t *testing.T) {
	f := AcquireFront([]byte(`{"key":"claude","limit":5,"windowInSeconds":10}`))
	if f.Status != 0 || f.Key != "claude" || f.Object != "limiter_claude" || f.Binding != "OMNI_LIMITER" || f.Limit != 5 || f.Window != 10 {
		t.Fatalf("front: %+v", f)
	}
	for body, field := range map[string]string{
		`{"key":"claude","limit":0,"windowInSeconds":10}`: "limit",
		`not json`: "body",
		`{"key":"","limit":1,"windowInSeconds":1}`:              "key",
		`{"key":"k","limit":1,"windowInSeconds":1,"x":1}`:       "x",
		`{"key":"` + strings.Repeat("k", MaxControlBody) + `"}`: "body",
	} {
		if f := AcquireFront([]byte(body)); f.Status != 400 || f.Body == nil || f.Body.Field != field || f.Object != "" {
			t.Errorf("%.40s: want 400 naming %s, got %+v", body, field, f)
		}
	}
}

func TestAcquireHeaders(t *testing.T) {
	f := Front{Key: "claude", Limit: 5, Window: 10}
	h := AcquireHeaders(f, []byte(`{"allowed":false,"retryAfterMs":1500,"remaining":0,"resetMs":1500}`))
	if h["Ratelimit-Policy"] != `"claude";q=5;w=10` || h["Ratelimit"] != `"claude";r=0;t=2` || h["Retry-After"] != "2" {
		t.Fatalf("refusal headers: %v", h)
	}
	h = AcquireHeaders(f, []byte(`{"allowed":true,"retryAfterMs":0,"remaining":4,"resetMs":10000}`))
	if h["Ratelimit"] != `"claude";r=4;t=10` || h["Retry-After"] != "" {
		t.Fatalf("admission headers: %v", h)
	}
	if AcquireHeaders(f, []byte(`{`)) != nil {
		t.Fatal("an unreadable answer gets no headers")
	}
}
