package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/durable/scheduler"
	"storecrawl/worker/logx"
)

// doCall sends one request to a Durable Object.
type doCall func(ctx context.Context, method, path string, body []byte) (int, []byte, error)

// validated is a control-plane handler: a POST body is read and validated
// here, so a bad request never reaches (or changes) the object; validate
// returns the body to send, or the 400 body naming the bad field. Then the
// call goes to the object and its answer is relayed.
func validated(call doCall, path, failEvent string, validate func(b []byte) (send []byte, bad any)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPost {
			b, ok := readBody(w, r, MaxControlBody)
			if !ok {
				return
			}
			send, bad := validate(b)
			if bad != nil {
				writeJSON(w, http.StatusBadRequest, bad)
				return
			}
			body = send
		}
		status, resp, err := call(r.Context(), r.Method, path, body)
		relay(w, status, resp, err, failEvent, path)
	}
}

// forward is a control call to the EnrichmentController.
func (s *Server) forward(doPath string) http.HandlerFunc {
	call := func(ctx context.Context, m, p string, b []byte) (int, []byte, error) {
		return s.Controller.CallController(ctx, m, p, b)
	}
	return validated(call, doPath, "enrichment.controller_call_failed", func(b []byte) ([]byte, any) {
		if doPath == "/tune" {
			if _, ferr := controller.ParseTune(b); ferr != nil {
				return nil, ferr
			}
			return b, nil
		}
		// start/stop/reset take no parameters; reject anything but an empty body or {}.
		if t := strings.TrimSpace(string(b)); t != "" && t != "{}" {
			return nil, map[string]string{"error": doPath[1:] + " takes no body", "field": "body"}
		}
		return nil, nil
	})
}

// relay answers with what a Durable Object answered, or a logged 502.
func relay(w http.ResponseWriter, status int, resp []byte, err error, failEvent, path string) {
	if err != nil {
		logx.Err(failEvent, err, map[string]any{"path": path})
		writeError(w, http.StatusBadGateway, "", "durable object unavailable")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(resp)
}

// schedulerCall is a call to the SchedulerDO.
func (s *Server) schedulerCall(path string) http.HandlerFunc {
	// Resolved per call: a server without a scheduler still builds its routes.
	call := func(ctx context.Context, m, p string, b []byte) (int, []byte, error) {
		return s.Scheduler.CallScheduler(ctx, m, p, b)
	}
	return validated(call, path, "scheduler.call_failed", func(b []byte) ([]byte, any) {
		if _, _, fe := scheduler.ParseControl(s.SchedulerTasks, path, string(b), time.Now()); fe != nil {
			return nil, fe
		}
		return b, nil
	})
}
