//go:build js && wasm

package cf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"syscall/js"

	"github.com/syumai/workers/cloudflare"
	"github.com/syumai/workers/cloudflare/kv"
	"github.com/syumai/workers/cloudflare/queues"
	"github.com/syumai/workers/cloudflare/r2"
)

// KV is the KV namespace bound under that name.
type KV string

// Get reads a value ("" when absent).
func (b KV) Get(_ context.Context, key string) (string, error) {
	ns, err := kv.NewNamespace(string(b))
	if err != nil {
		return "", err
	}
	v, err := ns.GetString(key, nil)
	if err != nil || v == "<null>" {
		return "", err
	}
	return v, nil
}

// Put writes a value.
func (b KV) Put(_ context.Context, key, value string) error {
	ns, err := kv.NewNamespace(string(b))
	if err != nil {
		return err
	}
	return ns.PutString(key, value, nil)
}

// R2 is the R2 bucket bound under that name.
type R2 string

// Put stores an object with its content type and custom metadata.
func (b R2) Put(_ context.Context, key string, body []byte, contentType string, meta map[string]string) error {
	bucket, err := r2.NewBucket(string(b))
	if err != nil {
		return err
	}
	_, err = bucket.Put(key, io.NopCloser(bytes.NewReader(body)), &r2.PutOptions{
		HTTPMetadata:   r2.HTTPMetadata{ContentType: contentType},
		CustomMetadata: meta,
	})
	return err
}

// Get reads an object's body; found is false when the key does not exist.
func (b R2) Get(_ context.Context, key string) ([]byte, bool, error) {
	bucket, err := r2.NewBucket(string(b))
	if err != nil {
		return nil, false, err
	}
	obj, err := bucket.Get(key)
	if err != nil {
		return nil, false, err
	}
	if obj == nil {
		return nil, false, nil
	}
	body, err := io.ReadAll(obj.Body)
	return body, err == nil, err
}

// GetRange reads length bytes of an object from offset: the binding's
// get(key, {range: {offset, length}}) (syumai/workers' Get takes no
// options); found is false when the key does not exist.
func (b R2) GetRange(_ context.Context, key string, offset, length int64) ([]byte, bool, error) {
	bucket := cloudflare.GetBinding(string(b))
	if bucket.IsUndefined() {
		return nil, false, fmt.Errorf("%s is undefined", string(b))
	}
	p, err := Call(bucket, "get", key, Object(map[string]any{"range": Object(map[string]any{"offset": offset, "length": length})}))
	if err != nil {
		return nil, false, err
	}
	obj, err := Await(p)
	if err != nil {
		return nil, false, err
	}
	if obj.IsNull() || obj.IsUndefined() {
		return nil, false, nil
	}
	buf, err := Call(obj, "arrayBuffer")
	if err != nil {
		return nil, false, err
	}
	ab, err := Await(buf)
	if err != nil {
		return nil, false, err
	}
	u8 := js.Global().Get("Uint8Array").New(ab)
	body := make([]byte, u8.Get("length").Int())
	js.CopyBytesToGo(body, u8)
	return body, true, nil
}

// Queue is the queue producer bound under that name.
type Queue string

// Send puts one text message on the queue.
func (b Queue) Send(_ context.Context, body string) error {
	q, err := queues.NewProducer(string(b))
	if err != nil {
		return err
	}
	return q.SendText(body)
}
