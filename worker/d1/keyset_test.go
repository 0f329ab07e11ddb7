package d1

import (
	"errors"
	"testing"
)

func TestKeysetCursorRoundTripsAndRefusesWhatItDidNotMake(t *testing.T) {
	c := EncodeCursor(61.25, int64(42))
	var k float64
	var id int64
	if err := DecodeCursor(c, &k, &id); err != nil || k != 61.25 || id != 42 {
		t.Fatalf("%q: %v %v %v", c, k, id, err)
	}
	var at *string
	var rid string
	if err := DecodeCursor(EncodeCursor(nil, "r1"), &at, &rid); err != nil || at != nil || rid != "r1" {
		t.Fatalf("null key: %v %q %v", at, rid, err)
	}
	for _, bad := range []string{"", "!!", "5000", EncodeCursor(1.5), EncodeCursor("x", 2), EncodeCursor(1.5, 2, 3)} {
		if err := DecodeCursor(bad, &k, &id); !errors.Is(err, ErrBadCursor) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
