// Command seed prints SQL that queues apps for enrichment: N app_registry rows
// with the simulator's track ids (100000001..), so `make dev` has work to do.
// Rows that already exist are left alone (idempotent).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
)

// FirstTrackID matches cmd/upstream-sim's catalogue.
const FirstTrackID = 100000001

// rowsPerStatement keeps each INSERT well under D1's statement size limits.
const rowsPerStatement = 500

func main() {
	apps := flag.Int("apps", 2000, "number of apps to queue")
	first := flag.Int64("first", FirstTrackID, "first track id")
	priorityEvery := flag.Int("priority-every", 10, "every Nth app gets enrich_priority 1 (0 = none)")
	flag.Parse()
	if *apps < 0 {
		fmt.Fprintln(os.Stderr, "seed: -apps must be >= 0")
		os.Exit(2)
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for i := 0; i < *apps; i += rowsPerStatement {
		fmt.Fprint(w, "INSERT OR IGNORE INTO app_registry (track_id, enrich_priority) VALUES ")
		for j := i; j < i+rowsPerStatement && j < *apps; j++ {
			if j > i {
				fmt.Fprint(w, ",")
			}
			prio := 0
			if *priorityEvery > 0 && j%*priorityEvery == 0 {
				prio = 1
			}
			fmt.Fprintf(w, "(%d,%d)", *first+int64(j), prio)
		}
		fmt.Fprintln(w, ";")
	}
}
