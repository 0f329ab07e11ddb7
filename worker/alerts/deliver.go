package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/subreq"
)

// DeliveryType is the EVENTS queue message that delivers one alert, and
// its kind: {"kind": "alert-delivery", "type": "alert-delivery",
// "alert_id": N}. It shares the EVENTS queue (and its retries and
// dead-letter queue) with the pipeline's events; the consumer routes it
// here by its kind (a message without one, by IsDeliveryMessage).
const DeliveryType = "alert-delivery"

// MaxDeliveryAttempts is a delivery's attempts: the first and the EVENTS
// consumer's max_retries (wrangler.jsonc) after it. The last failure
// marks the alert failed and its message goes to the dead-letter queue.
const MaxDeliveryAttempts = 4

// DeliveryTimeout bounds one POST to a webhook.
const DeliveryTimeout = 10 * time.Second

// maxErrorText bounds what an attempt keeps of a failure.
const maxErrorText = 200

type deliveryMessage struct {
	Kind    string `json:"kind,omitempty"`
	Type    string `json:"type"`
	AlertID int64  `json:"alert_id"`
}

// DeliveryMessage is the queue message delivering alert id.
func DeliveryMessage(id int64) string {
	b, _ := json.Marshal(deliveryMessage{Kind: DeliveryType, Type: DeliveryType, AlertID: id})
	return string(b)
}

// IsDeliveryMessage reports whether a queue message body delivers an
// alert: the EVENTS consumer's legacy routing of a message without a kind.
func IsDeliveryMessage(body string) bool {
	return strings.Contains(body, `"`+DeliveryType+`"`) && parseDelivery(body) > 0
}

func parseDelivery(body string) int64 {
	var m deliveryMessage
	if json.Unmarshal([]byte(body), &m) != nil || m.Type != DeliveryType {
		return 0
	}
	return m.AlertID
}

// RetryDelay is how long the queue waits before attempt+1: 10 s, 20 s, 40 s.
func RetryDelay(attempt int) time.Duration {
	return 10 * time.Second << min(max(attempt-1, 0), 5)
}

// Doer sends one HTTP request (cf.Fetcher under workerd: redirects come
// back as they are and count as failures, never followed).
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Attempt is one delivery attempt as the alert keeps it.
type Attempt struct {
	At     string `json:"at"`
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Body is what a rule's channel receives of an alert: the payload itself
// for a generic webhook, {"text": ...} for Slack.
func Body(channel string, payload []byte) []byte {
	if channel != ChannelSlack {
		return payload
	}
	var p Payload
	json.Unmarshal(payload, &p)
	b, _ := json.Marshal(map[string]string{"text": p.Text})
	return b
}

// Deliver posts the alert a queue message names, the attempt-th time, and
// records the attempt. An error asks the queue to retry (after
// RetryDelay); the last attempt's failure also marks the alert failed.
// A delivered alert, or one gone, is done.
func (s *Service) Deliver(ctx context.Context, body string, attempt int, now time.Time) error {
	id := parseDelivery(body)
	var rows []struct {
		State   string `json:"state"`
		Payload string `json:"payload"`
		Channel string `json:"channel"`
		URL     string `json:"url"`
		Secret  string `json:"secret"`
	}
	err := s.DB.Query(ctx, &rows, `SELECT a.state, a.payload, r.channel, r.url, r.secret FROM alerts a JOIN alert_rules r ON r.id = a.rule_id WHERE a.id = ?1`, id)
	if err != nil {
		return err
	}
	if len(rows) == 0 || rows[0].State != "pending" {
		return nil
	}
	a := rows[0]
	att := Attempt{At: d1.Time(now)}
	if fe := CheckWebhookURL(a.URL, s.AllowLoopback); fe != nil {
		att.Error = fe.Msg
	} else {
		att.Status, att.Error = s.post(ctx, a.Channel, a.URL, a.Secret, Body(a.Channel, []byte(a.Payload)), now)
	}
	ok := att.Error == ""
	state := "pending"
	var deliveredAt any
	switch {
	case ok:
		state, deliveredAt = "delivered", d1.Time(now)
	case attempt >= MaxDeliveryAttempts:
		state = "failed"
	}
	aj, _ := json.Marshal(att)
	if _, err := s.DB.Exec(ctx, d1.Stmt{SQL: `UPDATE alerts SET attempts = attempts + 1, state = ?2, delivered_at = ?3,
  deliveries = json_insert(deliveries, '$[#]', json(?4)) WHERE id = ?1 AND state = 'pending'`, Args: []any{id, state, deliveredAt, string(aj)}}); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("alert %d attempt %d: %s", id, attempt, att.Error)
	}
	return nil
}

// post sends one signed delivery: the HTTP status, and the failure ("" on
// a 2xx).
func (s *Service) post(ctx context.Context, channel, url, secret string, body []byte, now time.Time) (int, string) {
	if err := subreq.Spend(ctx, 1); err != nil {
		return 0, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, DeliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "storecrawl-alerts")
	req.Header.Set(SignatureHeader, Sign(secret, body, now))
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return 0, cut(err.Error())
	}
	finish(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	return resp.StatusCode, ""
}

// finish reads a little of an answer's body and closes it. An answer
// with no body (204, 205, 304) is left alone: the Workers fetch gives it a
// null stream, which reading would panic on.
func finish(resp *http.Response) {
	switch resp.StatusCode {
	case http.StatusNoContent, http.StatusResetContent, http.StatusNotModified:
		return
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
}

func cut(s string) string {
	if len(s) > maxErrorText {
		return s[:maxErrorText]
	}
	return s
}
