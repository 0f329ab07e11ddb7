package d1

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
)

// A keyset cursor names where a list's page ends: the sort key and the
// tie-break of its last row, so the next page is a range of an index from
// there (`k < ?1 OR (k = ?1 AND id > ?2)`, written so the index takes the
// range), reading its own rows whatever the table holds, as deep as it
// goes. On the wire it is opaque: base64url of the JSON array of values.

// ErrBadCursor is a cursor a list did not hand out.
var ErrBadCursor = errors.New("d1: not a cursor this list handed out")

// MaxCursorLen bounds an encoded keyset cursor.
const MaxCursorLen = 400

// Keyset starts: the first page of a descending list starts after these,
// above every value its key holds (numbers well under 1e308; TEXT
// timestamps and keys sort under U+10FFFF).
const (
	TopNumber = 1e308
	TopText   = "\U0010FFFF"
)

// EncodeCursor renders a page's last row's key values as a cursor.
func EncodeCursor(vals ...any) string {
	b, _ := json.Marshal(vals)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a cursor EncodeCursor made of len(dst) values into
// dst (pointers; a JSON null leaves a pointer-to-pointer nil). Anything
// else is ErrBadCursor.
func DecodeCursor(s string, dst ...any) error {
	if s == "" || len(s) > MaxCursorLen {
		return ErrBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return ErrBadCursor
	}
	var vals []json.RawMessage
	if json.Unmarshal(b, &vals) != nil || len(vals) != len(dst) {
		return ErrBadCursor
	}
	for i, v := range vals {
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if dec.Decode(dst[i]) != nil {
			return ErrBadCursor
		}
	}
	return nil
}
