//go:build js && wasm

package worker

import (
	"encoding/json"
	"fmt"
	"syscall/js"
	"time"

	"storecrawl/durable/limiter"
)

// limiterObjects is every OmniLimiter object's in-memory state in this Go
// instance (durable/limiter.Objects decides; the shim persists).
var limiterObjects limiter.Objects

// limiterCall(objectID, method, path, body, startedMs, waited, nowMs,
// storageWrites, storageReads, calls, alarms) → limiter.Answer. Positional, not one JSON
// argument: the acquire body is not encoded twice on the hot path.
func limiterCall(args []js.Value) (any, error) {
	if len(args) != 11 {
		return nil, fmt.Errorf("limiterCall: want 11 args, got %d", len(args))
	}
	c := limiter.Call{
		Method: args[1].String(), Path: args[2].String(), Body: args[3].String(),
		StartedMs: int64(args[4].Float()), Waited: args[5].Truthy(),
		Storage:  limiter.StorageOps{Writes: int64(args[7].Float()), Reads: int64(args[8].Float())},
		Requests: limiter.Requests{Calls: int64(args[9].Float()), Alarms: int64(args[10].Float())},
	}
	return limiterObjects.Handle(args[0].String(), c, time.UnixMilli(int64(args[6].Float()))), nil
}

// limiterRoll(objectID, nowMs) → limiter.Answer: the alarm closes the
// minute of a key that went quiet.
func limiterRoll(args []js.Value) (any, error) {
	return limiterObjects.Roll(args[0].String(), time.UnixMilli(int64(args[1].Float()))), nil
}

// limiterRestore(objectID, storedJSON, nowMs) rebuilds an object's state.
func limiterRestore(args []js.Value) (any, error) {
	var in limiter.Stored
	if err := json.Unmarshal([]byte(args[1].String()), &in); err != nil {
		return nil, fmt.Errorf("limiterRestore: bad storage: %w", err)
	}
	limiterObjects.Restore(args[0].String(), in, time.UnixMilli(int64(args[2].Float())))
	return true, nil
}

// limiterRetire(objectID, appended, nowMs) → the retirement fact of an idle
// client key (durable/limiter.Objects.Retire), or null when it is not
// retirable (any more); Go forgets the object, the shim sends the fact and
// deletes the object's storage.
func limiterRetire(args []js.Value) (any, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("limiterRetire: want 3 args, got %d", len(args))
	}
	return limiterObjects.Retire(args[0].String(), int64(args[1].Float()), time.UnixMilli(int64(args[2].Float()))), nil
}
