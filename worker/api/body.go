package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"storecrawl/durable/object"
)

// MaxDrainBody bounds what is read and thrown away of a body a handler left
// unread (one past its limit, or one a route never reads): a remainder up
// to this is drained, so the runtime sees the request read to its end and
// the client its answer; past it the rest is cancelled (Close: the JS
// stream reader's cancel()), which drops the client's connection
// mid-upload. 8 MiB takes the 6 MB uploads of TestLargeBodies whole; the
// shim drains every body whose Content-Length is past MaxBody, with this
// bound, far faster than Go (docs/architecture.md has both times, from
// `go test -count=1 -tags integration -run TestLargeBodies -v ./worker/e2e/`).
const MaxDrainBody = 8 << 20

// MaxBody is the largest body any route takes (MaxControlBody; the
// optional bodies take maxOptionalBody). The shim gives Go a request whose
// Content-Length is past it without its body, and drains the body itself.
const MaxBody = MaxControlBody

// tooLarge answers the 413 of a body past max bytes, naming body and max.
func tooLarge(w http.ResponseWriter, max int64) {
	writeError(w, http.StatusRequestEntityTooLarge, "body", fmt.Sprintf("body is at most %d bytes", max))
}

// readBody reads a request body of at most max bytes. A declared length
// past max is refused before a byte is read; an undeclared one (chunked)
// is cut at max+1. On failure it has answered (413 naming body and max,
// or 400) and reports false; what is left unread is finishBody's.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, bool) {
	if r.ContentLength > max {
		tooLarge(w, max)
		return nil, false
	}
	if r.Body == nil {
		return nil, true
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	switch {
	case int64(len(b)) > max:
		tooLarge(w, max)
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, "body", "body: unreadable")
		return nil, false
	}
	return b, true
}

// finishBody ends a request's body once its handler has answered and
// before the answer is handed to the runtime: the unread rest is drained
// up to MaxDrainBody, then the body is closed (in the Worker, Close cancels
// the stream's reader, which a read above has made). A body left half read
// made wrangler dev's proxy answer 500 "Network connection lost".
func finishBody(body io.ReadCloser) {
	if body == nil || body == http.NoBody {
		return
	}
	io.Copy(io.Discard, io.LimitReader(body, MaxDrainBody))
	body.Close()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, field, msg string) {
	body := map[string]string{"error": msg}
	if field != "" {
		body["field"] = field
	}
	writeJSON(w, status, body)
}

func toString(v any) string {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// maxOptionalBody bounds the small JSON bodies of control calls.
const maxOptionalBody = 1 << 10

// decodeOptionalBody reads a small JSON object into dst, unknown fields
// refused; an empty body leaves dst as it is. On a bad body it answers
// (413 past maxOptionalBody, else 400 naming field with msg, or the field
// a JSON type error names) and reports false.
func decodeOptionalBody(w http.ResponseWriter, r *http.Request, dst any, field, msg string) bool {
	b, ok := readBody(w, r, maxOptionalBody)
	if !ok {
		return false
	}
	if len(b) == 0 {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		// A value of the wrong type names its own field; anything else
		// gets the route's usage.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			writeJSON(w, http.StatusBadRequest, object.DecodeError(err))
			return false
		}
		writeError(w, http.StatusBadRequest, field, msg)
		return false
	}
	return true
}
