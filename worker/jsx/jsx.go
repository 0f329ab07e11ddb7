//go:build js && wasm

// Package jsx holds the few syscall/js helpers the Worker code needs beyond
// syumai/workers: awaiting promises, building plain objects, and exporting Go
// functions to the JS shim.
package jsx

import (
	"errors"
	"fmt"
	"syscall/js"
	"time"
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

// AsyncFunc exports fn to JS as a function returning a Promise: fn runs in
// its own goroutine; a returned error or a panic rejects the promise instead
// of killing the shared Go instance.
func AsyncFunc(fn func(args []js.Value) (any, error)) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) any {
		var executor js.Func
		executor = js.FuncOf(func(_ js.Value, p []js.Value) any {
			executor.Release()
			resolve, reject := p[0], p[1]
			go func() {
				defer func() {
					if r := recover(); r != nil {
						reject.Invoke(js.Global().Get("Error").New(fmt.Sprintf("go panic: %v", r)))
					}
				}()
				v, err := fn(args)
				if err != nil {
					reject.Invoke(js.Global().Get("Error").New(err.Error()))
					return
				}
				resolve.Invoke(v)
			}()
			return nil
		})
		return js.Global().Get("Promise").New(executor)
	})
}

// SyncFunc exports fn to JS as a plain function; a panic becomes a thrown Error.
func SyncFunc(fn func(args []js.Value) any) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) (out any) {
		defer func() {
			if r := recover(); r != nil {
				out = js.Global().Get("Error").New(fmt.Sprintf("go panic: %v", r))
			}
		}()
		return fn(args)
	})
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
