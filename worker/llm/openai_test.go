package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func TestOpenAIRoundTrip(t *testing.T) {
	var got struct {
		auth string
		path string
		body oaRequest
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.auth, got.path = r.Header.Get("Authorization"), r.URL.Path
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got.body); err != nil {
			t.Errorf("request body: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","model":"sim-1","choices":[{"index":0,"message":{"role":"assistant","content":"{\"ok\":true}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}`)
	}))
	defer srv.Close()
	c := OpenAI{BaseURL: srv.URL + "/v1/", APIKey: "k-123", Model: "default-model", Doer: srv.Client()}
	resp, err := c.Complete(context.Background(), Request{
		Messages: []Message{{Role: RoleSystem, Content: "s"}, {Role: RoleUser, Content: "u"}}, MaxTokens: 100, JSON: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.auth != "Bearer k-123" || got.path != "/v1/chat/completions" {
		t.Errorf("auth %q path %q", got.auth, got.path)
	}
	if got.body.Model != "default-model" || got.body.MaxTokens != 100 || got.body.ResponseFormat == nil ||
		got.body.ResponseFormat.Type != "json_object" || len(got.body.Messages) != 2 || got.body.Stream {
		t.Errorf("request %+v", got.body)
	}
	want := Response{Text: `{"ok":true}`, Model: "sim-1", FinishReason: "stop", Usage: Usage{PromptTokens: 42, CompletionTokens: 7, TotalTokens: 49}}
	if resp != want {
		t.Errorf("got %+v, want %+v", resp, want)
	}
}

func TestOpenAIErrors(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		is         error
		retryAfter time.Duration
		msg        string
	}{
		{"rate limited", 429, map[string]string{"Retry-After": "7"}, `{"error":{"message":"Rate limit reached","type":"requests"}}`, ErrRateLimited, 7 * time.Second, "Rate limit reached"},
		{"huge retry-after capped", 429, map[string]string{"Retry-After": "86400"}, ``, ErrRateLimited, maxRetryAfter, "Too Many Requests"},
		{"bad key", 401, nil, `{"error":{"message":"Incorrect API key"}}`, ErrPermanent, 0, "Incorrect API key"},
		{"server error", 503, nil, `upstream overloaded`, ErrUpstream, 0, "upstream overloaded"},
		{"no choices", 200, nil, `{"choices":[]}`, ErrUpstream, 0, ""},
		{"not json", 200, nil, `<html>`, ErrUpstream, 0, ""},
		{"null content", 200, nil, `{"choices":[{"message":{"content":null}}]}`, ErrUpstream, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			_, err := OpenAI{BaseURL: srv.URL, Doer: srv.Client()}.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
			if !errors.Is(err, tc.is) {
				t.Fatalf("err %v, want %v", err, tc.is)
			}
			if RetryAfterOf(err) != tc.retryAfter {
				t.Errorf("retry after %v, want %v", RetryAfterOf(err), tc.retryAfter)
			}
			if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q lacks %q", err, tc.msg)
			}
		})
	}
}

func TestOpenAIBoundsAndEstimates(t *testing.T) {
	big := strings.Repeat("x", MaxResponseBytes+10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("big") != "" || strings.Contains(r.Header.Get("X-Test"), "big") {
			io.WriteString(w, big)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"content":"twelve chars"}}]}`) // no usage block
	}))
	defer srv.Close()
	msgs := []Message{{Role: RoleUser, Content: strings.Repeat("word ", 40)}}
	resp, err := OpenAI{BaseURL: srv.URL, Doer: srv.Client()}.Complete(context.Background(), Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Usage.Estimated || resp.Usage.PromptTokens != EstimatePrompt(msgs) || resp.Usage.CompletionTokens != EstimateTokens("twelve chars") {
		t.Errorf("usage without a usage block: %+v", resp.Usage)
	}
	doer := headerDoer{srv.Client(), "big"}
	if _, err := (OpenAI{BaseURL: srv.URL, Doer: doer}).Complete(context.Background(), Request{Messages: msgs}); !errors.Is(err, ErrUpstream) || !strings.Contains(err.Error(), "over") {
		t.Errorf("oversized body: %v", err)
	}
	if _, err := (OpenAI{}).Complete(context.Background(), Request{Messages: msgs}); !errors.Is(err, ErrPermanent) {
		t.Errorf("unconfigured client: %v", err)
	}
}

type headerDoer struct {
	c *http.Client
	v string
}

func (d headerDoer) Do(r *http.Request) (*http.Response, error) {
	r.Header.Set("X-Test", d.v)
	return d.c.Do(r)
}

// TestOpenAIReadsARealCompletion: a real chat-completions answer
// (testdata/README.md) gives its text, model, finish reason and the
// usage it reports (not an estimate).
func TestOpenAIReadsARealCompletion(t *testing.T) {
	real, err := os.ReadFile("testdata/chat_completion_gpt4omini_2024.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(real)
	}))
	defer srv.Close()
	c := OpenAI{BaseURL: srv.URL + "/v1", Model: "gpt-4o-mini", Doer: srv.Client()}
	resp, err := c.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "weather on Tuesday?"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Text, "On Tuesday, we can expect a chilly day") || !strings.HasSuffix(resp.Text, "is in store!") ||
		resp.Model != "gpt-4o-mini-2024-07-18" || resp.FinishReason != "stop" ||
		resp.Usage != (Usage{PromptTokens: 54, CompletionTokens: 79, TotalTokens: 133}) {
		t.Fatalf("got %+v", resp)
	}
}
