//go:build !js

// Command schema prints the D1 schema after every migration (`make schema`
// writes it to migrations/schema.sql).
package main

import (
	"fmt"
	"os"

	"storecrawl/worker/d1/d1test"
)

func main() {
	s, err := d1test.Schema()
	if err != nil {
		fmt.Fprintln(os.Stderr, "schema:", err)
		os.Exit(1)
	}
	fmt.Print(s)
}
