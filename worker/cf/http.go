//go:build js && wasm

package cf

import (
	"bytes"
	"net/http"
	"syscall/js"
)

// rawBodyWriter is implemented by syumai/workers' ResponseWriter: a body
// handed over as a JS value becomes the Response body directly, instead of
// being streamed chunk by chunk through an io.Pipe and a ReadableStream.
type rawBodyWriter interface {
	WriteRawJSBody(body js.Value)
}

// BufferedResponses buffers each (small, JSON) response and hands it to the
// runtime in one piece: several JS↔Go round trips fewer per request.
func BufferedResponses(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, ok := w.(rawBodyWriter)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		bw := &bufferWriter{header: w.Header(), status: http.StatusOK}
		h.ServeHTTP(bw, r)
		w.WriteHeader(bw.status)
		raw.WriteRawJSBody(js.ValueOf(bw.buf.String()))
	})
}

type bufferWriter struct {
	header http.Header
	status int
	wrote  bool
	buf    bytes.Buffer
}

func (b *bufferWriter) Header() http.Header { return b.header }

func (b *bufferWriter) WriteHeader(status int) {
	if !b.wrote {
		b.status, b.wrote = status, true
	}
}

func (b *bufferWriter) Write(p []byte) (int, error) {
	b.wrote = true
	return b.buf.Write(p)
}
