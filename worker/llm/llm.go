// Package llm is model access and its cost control: one small
// chat-completion interface with two implementations (any OpenAI-compatible
// endpoint over an injected HTTP doer, and the Workers AI binding through a
// Runner), token estimation and the budget (a per-minute token budget and a
// daily spend cap that is never overspent). It knows nothing of what is
// asked: the analyst's prompt and its validation live in worker/analyst.
//
// Everything but workersai_js.go is plain Go, natively tested; decisions
// take the clock as an argument.
package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// Chat roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Request is one chat completion.
type Request struct {
	Model    string
	Messages []Message
	// MaxTokens bounds the completion; the budget reserves it in full.
	MaxTokens int
	// Temperature 0 asks for the most deterministic answer.
	Temperature float64
	// JSON asks for a JSON object answer (response_format json_object where
	// the endpoint supports it).
	JSON bool
}

// Usage is what the endpoint reports having counted.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	// Estimated is true when the endpoint reported no usage and these are
	// EstimateTokens counts.
	Estimated bool `json:"estimated,omitempty"`
}

// Response is a completion's text and usage.
type Response struct {
	Text         string
	Usage        Usage
	Model        string
	FinishReason string
}

// Client is the one interface the analyst calls.
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Errors a Client returns, for the caller's pacing: a rate limit is paced
// like any upstream refusal; a bad request or auth failure is permanent.
var (
	ErrRateLimited = errors.New("llm: rate limited")
	ErrPermanent   = errors.New("llm: request refused")
	ErrUpstream    = errors.New("llm: upstream error")
)

// StatusError is a non-2xx answer. It wraps ErrRateLimited (429),
// ErrPermanent (400, 401, 403, 404, 413, 422) or ErrUpstream (anything else).
type StatusError struct {
	Status int
	// RetryAfter is the endpoint's Retry-After (0 when absent).
	RetryAfter time.Duration
	// Message is the endpoint's error message, bounded.
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("llm: HTTP %d: %s", e.Status, e.Message)
}

func (e *StatusError) Unwrap() error {
	switch {
	case e.Status == 429:
		return ErrRateLimited
	case e.Status == 400 || e.Status == 401 || e.Status == 403 || e.Status == 404 || e.Status == 413 || e.Status == 422:
		return ErrPermanent
	default:
		return ErrUpstream
	}
}

// PromptHash identifies a prompt exactly (sha256 of the messages).
func PromptHash(msgs []Message) string {
	h := sha256.New()
	for _, m := range msgs {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", m.Role, len(m.Content), m.Content)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cut shortens s to at most n runes (valid UTF-8), marking a cut with "…".
func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
