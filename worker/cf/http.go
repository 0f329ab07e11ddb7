//go:build js && wasm

package cf

import (
	"bytes"
	"net/http"
	"syscall/js"
	"unicode/utf8"
)

// rawBodyWriter is implemented by syumai/workers' ResponseWriter: a body
// handed over as a JS value becomes the Response body directly, instead of
// being streamed chunk by chunk through an io.Pipe and a ReadableStream.
type rawBodyWriter interface {
	WriteRawJSBody(body js.Value)
}

// BufferedResponses buffers each response and hands it to the runtime in
// one piece: several JS↔Go round trips fewer per request. Text goes as a
// JS string, any other body as its bytes.
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
		body := bw.buf.Bytes()
		if utf8.Valid(body) {
			raw.WriteRawJSBody(js.ValueOf(bw.buf.String()))
			return
		}
		// Binary (a gzipped dataset part): a JS string would re-encode it
		// as UTF-8, so the bytes go as they are.
		u8 := js.Global().Get("Uint8Array").New(len(body))
		js.CopyBytesToJS(u8, body)
		raw.WriteRawJSBody(u8)
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
