package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestRunAnnouncesAndServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-apps", "50", "-latency-ms", "0", "-latency-jitter-ms", "0"}, pw, io.Discard)
		pw.Close()
	}()

	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ann map[string]string
	if err := json.Unmarshal([]byte(line), &ann); err != nil {
		t.Fatalf("announcement %q: %v", line, err)
	}
	if len(ann) != 2 || ann["event"] != "listening" || !strings.HasPrefix(ann["addr"], "127.0.0.1:") || ann["addr"] == "127.0.0.1:0" {
		t.Fatalf("announcement %q", line)
	}
	go io.Copy(io.Discard, pr) // nothing else should come, but never block run

	if r := get(t, "http://"+ann["addr"]+"/health"); r.status != 200 || strings.TrimSpace(string(r.body)) != `{"ok":true}` {
		t.Fatalf("/health: %d %s", r.status, r.body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(shutdownTimeout + time.Second):
		t.Fatal("run did not stop")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-on-exceed", "500"}, "-on-exceed"},
		{[]string{"-burst", "0"}, "-burst"},
		{[]string{"-block-s", "-1"}, "-block-s"},
		{[]string{"-apps", "0"}, "-apps"},
		{[]string{"extra"}, "unexpected"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			err := run(context.Background(), tt.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want mention of %q", err, tt.want)
			}
		})
	}
	var usage strings.Builder
	if err := run(context.Background(), []string{"-h"}, io.Discard, &usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, s := range []string{"100000097", "/rss/<c>/limit=", "-rate-per-min", "-retry-after-s"} {
		if !strings.Contains(usage.String(), s) {
			t.Errorf("usage lacks %q", s)
		}
	}
}
