package worker

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"storecrawl/durable/ledger"
)

// The shim keeps the writer's replication state from each plan Go
// returns: every field of ledger.Writer must be carried, or a rule that
// reads it (SendEvery reads SentAt) never sees it.
func TestShimKeepsEveryWriterField(t *testing.T) {
	src, err := os.ReadFile("../shim/ledger.mjs")
	if err != nil {
		t.Fatal(err)
	}
	shim := string(src)
	wt := reflect.TypeOf(ledger.Writer{})
	for i := range wt.NumField() {
		name, _, _ := strings.Cut(wt.Field(i).Tag.Get("json"), ",")
		if !strings.Contains(shim, name+": p."+name) {
			t.Errorf("shim/ledger.mjs does not keep the writer's %q from Go's plan", name)
		}
	}
}
