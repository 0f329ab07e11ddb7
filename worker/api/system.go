package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"storecrawl/worker/ledgerdb"
	"storecrawl/worker/logx"
)

func (s *Server) cronRuns(w http.ResponseWriter, r *http.Request) {
	rec, err := s.Cron.LastCronRuns(r.Context())
	if err != nil {
		logx.Err("cron.read_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(rec)
}

// deadLetters serves GET /v1/system/dead-letters: the EVENTS messages that
// failed every retry, newest first.
func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	pagedList("dead_letters", func(ctx context.Context, cursor string, limit int) ([]json.RawMessage, string, error) {
		return s.Dead.DeadLetters(ctx, limit, cursor)
	})(w, r)
}

// MaxMessageIDLen bounds a dead letter's message id in a replay call.
const MaxMessageIDLen = 128

// replayDeadLetters sends dead letters back to the EVENTS queue, whole:
// {"message_id": "..."} for one (again if it was replayed before), {} for
// the oldest not yet replayed, a batch per call ("more" says when to call
// again). A replayed facts batch is stored once.
func (s *Server) replayDeadLetters(w http.ResponseWriter, r *http.Request) {
	var body struct {
		MessageID string `json:"message_id"`
	}
	if !decodeOptionalBody(w, r, &body, "message_id", "body must be {} or {\"message_id\": \"...\"}") {
		return
	}
	if len(body.MessageID) > MaxMessageIDLen {
		writeError(w, http.StatusBadRequest, "message_id", fmt.Sprintf("message_id is at most %d bytes", MaxMessageIDLen))
		return
	}
	res, err := s.Replay.ReplayDeadLetters(r.Context(), body.MessageID, s.Requeue.Send)
	switch {
	case errors.Is(err, ledgerdb.ErrNoSuchDeadLetter):
		writeError(w, http.StatusNotFound, "message_id", "no dead letter has this message_id")
		return
	case err != nil:
		logx.Err("queue.dead_letter_replay_failed", err, nil)
		writeError(w, http.StatusServiceUnavailable, "", "could not read the dead letters")
		return
	}
	writeJSON(w, http.StatusOK, res)
}
