//go:build js && wasm

// (See doc.go.) The syscall/js helpers the clients and the Go exports need
// beyond syumai/workers: awaiting promises, building plain objects, and
// exporting Go functions to the JS shim.
package cf

import (
	"errors"
	"fmt"
	"sync"
	"syscall/js"
	"time"

	"storecrawl/durable/object"
)

// Await blocks the calling goroutine until p settles (the Go scheduler runs
// other goroutines and returns to the JS event loop meanwhile).
func Await(p js.Value) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	var onOK, onErr js.Func
	onOK = js.FuncOf(func(_ js.Value, args []js.Value) any {
		v := js.Undefined()
		if len(args) > 0 {
			v = args[0]
		}
		ch <- result{v: v}
		return nil
	})
	onErr = js.FuncOf(func(_ js.Value, args []js.Value) any {
		msg := "promise rejected"
		if len(args) > 0 {
			msg = ErrorText(args[0])
		}
		ch <- result{err: errors.New(msg)}
		return nil
	})
	p.Call("then", onOK, onErr)
	r := <-ch
	onOK.Release()
	onErr.Release()
	return r.v, r.err
}

// ErrorText renders a thrown JS value.
func ErrorText(v js.Value) string {
	if v.Type() == js.TypeObject {
		if m := v.Get("message"); m.Type() == js.TypeString {
			return m.String()
		}
	}
	return js.Global().Get("String").Invoke(v).String()
}

// Object builds a plain JS object.
func Object(kv map[string]any) js.Value {
	o := js.Global().Get("Object").New()
	for k, v := range kv {
		o.Set(k, v)
	}
	return o
}

// Call invokes obj.method(args...), turning a thrown JS exception into an error.
func Call(obj js.Value, method string, args ...any) (v js.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			if jsErr, ok := r.(js.Error); ok {
				err = errors.New(ErrorText(jsErr.Value))
				return
			}
			err = fmt.Errorf("%v", r)
		}
	}()
	return obj.Call(method, args...), nil
}

// Export exports fn to JS as a plain function answering JSON: {"ok": v}
// with what fn returned, or {"error": "..."} when it returned an error or
// panicked (the panic never reaches the shared Go instance). The shim
// unwraps every answer in one place (shim/go.mjs), throwing the error.
func Export(fn func(args []js.Value) (any, error)) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) any {
		return answer(fn, args)
	})
}

// ExportAsync is Export for work that awaits I/O: fn runs in its own
// goroutine and the returned Promise resolves with the same JSON answer.
// It never rejects: a failure is an {"error"} answer like Export's.
func ExportAsync(fn func(args []js.Value) (any, error)) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) any {
		var executor js.Func
		executor = js.FuncOf(func(_ js.Value, p []js.Value) any {
			executor.Release()
			resolve := p[0]
			go func() { resolve.Invoke(answer(fn, args)) }()
			return nil
		})
		return js.Global().Get("Promise").New(executor)
	})
}

// answer runs fn and renders its result as the protocol's JSON answer.
func answer(fn func(args []js.Value) (any, error), args []js.Value) (out string) {
	defer func() {
		if r := recover(); r != nil {
			out = object.Fail(fmt.Sprintf("go panic: %v", r))
		}
	}()
	v, err := fn(args)
	if err != nil {
		return object.Fail(err.Error())
	}
	return object.Envelope(v)
}

// Sleep pauses the calling goroutine on a JS timer, not a Go one. One Go
// instance serves every request of the isolate, and a Go timer wakes its
// goroutine on whatever call next enters the instance: possibly another
// request, whose context then owns the goroutine's next I/O and cancels it
// when that request ends (a run that never finishes). A JS timer belongs to
// the request running the goroutine now, so the goroutine resumes in it.
func Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	var executor js.Func
	executor = js.FuncOf(func(_ js.Value, args []js.Value) any {
		js.Global().Call("setTimeout", args[0], d.Milliseconds())
		return nil
	})
	p := js.Global().Get("Promise").New(executor)
	executor.Release()
	Await(p)
}

// After is time.NewTimer on a JS timer, for Sleep's reason: the channel
// fires in the request that started the timer (upstream.Client.After).
// stop clears the timer and frees its callback; call it when done.
func After(d time.Duration) (fire <-chan time.Time, stop func()) {
	ch := make(chan time.Time, 1) // the callback must never block the event loop
	var release sync.Once
	var cb js.Func
	cb = js.FuncOf(func(js.Value, []js.Value) any {
		ch <- time.Now()
		release.Do(cb.Release)
		return nil
	})
	id := js.Global().Call("setTimeout", cb, max(0, d.Milliseconds()))
	return ch, func() {
		// Cleared first: a released callback must not be called.
		js.Global().Call("clearTimeout", id)
		release.Do(cb.Release)
	}
}
