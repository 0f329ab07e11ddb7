package alerts

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries a delivery's signature: "t=<unix seconds>,v1=<hex
// HMAC-SHA256 of "<t>.<body>" under the rule's secret>", as Stripe signs
// its webhooks. The timestamp is signed with the body, so a receiver that
// rejects one older than a tolerance (SignatureTolerance) rejects replays.
const SignatureHeader = "X-Storecrawl-Signature"

// SignatureTolerance is how old a signature Verify accepts.
const SignatureTolerance = 5 * time.Minute

// secretBytes is a rule's secret's size before hex encoding.
const secretBytes = 32

// SecretPrefix marks a rule's secret, so one pasted in the wrong place is
// recognised.
const SecretPrefix = "whsec_"

// NewSecret draws a rule's signing secret.
func NewSecret() string {
	b := make([]byte, secretBytes)
	rand.Read(b)
	return SecretPrefix + hex.EncodeToString(b)
}

// Sign is the SignatureHeader value of body sent at t.
func Sign(secret string, body []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify is the receiver's check: the header's signature matches body
// under secret, and its timestamp is within tolerance of now.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errors.New("signature header: want t=<unix>,v1=<hex>")
	}
	if age := now.Sub(time.Unix(sec, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("signature timestamp %s off by %s (tolerance %s)", ts, age, tolerance)
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return errors.New("signature does not match")
}
