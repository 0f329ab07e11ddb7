package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestRunLoopbackOnly(t *testing.T) {
	if err := run(context.Background(), []string{"-addr", "0.0.0.0:0"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("non-loopback address: %v", err)
	}
	if err := run(context.Background(), []string{"-addr", "192.168.1.2:8791"}, io.Discard, io.Discard); err == nil {
		t.Error("a LAN address was accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-latency-ms", "0"}, pw, io.Discard) }()
	line, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ev struct{ Event, Addr string }
	if err := json.Unmarshal(bytes.TrimSpace(line), &ev); err != nil || ev.Event != "listening" || !strings.HasPrefix(ev.Addr, "127.0.0.1:") {
		t.Fatalf("announcement %q", line)
	}
	resp, err := http.Get("http://" + ev.Addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v", err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
