//go:build integration

package e2e

import (
	"database/sql"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"storecrawl/internal/devstack"
)

// What every test shares, made once per run (TestMain) or once per need:
// the simulators' binaries, the migrated local D1 (wrangler d1 migrations
// apply, ~10 s of CPU) and a seeded copy of it per app count. A test copies
// its snapshot into its own persist dir, so no test runs wrangler or go
// build to set up.
var (
	// shared is the run's scratch dir: binaries and snapshots.
	shared string
	// binaries are cmd/<name> built once, by name.
	binaries = map[string]string{}
	// migrated is the migrated empty state, made at its first use.
	migrated struct {
		once sync.Once
		dir  string
		err  error
	}
	snapshots struct {
		mu   sync.Mutex
		byN  map[int]*snapshot
		seed string // cmd/seed's binary
	}
)

type snapshot struct {
	once sync.Once
	dir  string
	err  error
}

// simulatorCommands are the commands tests run as processes.
var simulatorCommands = []string{"upstream-sim", "llm-sim", "seed", "dev-cron"}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	shared, err = os.MkdirTemp("", "storecrawl-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(shared)
	// One go build of all three: the packages share their dependencies.
	bin := filepath.Join(shared, "bin")
	args := []string{"build", "-o", bin + string(os.PathSeparator)}
	for _, name := range simulatorCommands {
		args = append(args, "./cmd/"+name)
		binaries[name] = filepath.Join(bin, name)
	}
	build := exec.Command("go", args...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go %s: %v\n%s", strings.Join(args, " "), err, out)
		return 1
	}
	snapshots.seed = binaries["seed"]
	return m.Run()
}

// migratedState is the migrated empty local state (made once).
func migratedState() (string, error) {
	migrated.once.Do(func() {
		migrated.dir = filepath.Join(shared, "migrated")
		args := []string{"d1", "migrations", "apply", "DB", "--local", "--persist-to", migrated.dir}
		if out, err := devstack.RunBounded(devstack.Wrangler(root), args, root, toolEnv(), toolTimeout); err != nil {
			migrated.err = fmt.Errorf("wrangler d1 migrations apply: %v\n%s", err, out)
			return
		}
		// Fold the write-ahead log into the database file, so a copy is
		// the whole database.
		migrated.err = checkpoint(migrated.dir)
	})
	return migrated.dir, migrated.err
}

// seededState is the migrated state with the simulator's first n apps
// queued (cmd/seed -apps n), made once per n.
func seededState(n int) (string, error) {
	snapshots.mu.Lock()
	if snapshots.byN == nil {
		snapshots.byN = map[int]*snapshot{}
	}
	s, ok := snapshots.byN[n]
	if !ok {
		s = &snapshot{}
		snapshots.byN[n] = s
	}
	snapshots.mu.Unlock()
	s.once.Do(func() {
		base, err := migratedState()
		if err != nil {
			s.err = err
			return
		}
		if n == 0 {
			s.dir = base
			return
		}
		s.dir = filepath.Join(shared, fmt.Sprintf("apps-%d", n))
		if s.err = copyTree(base, s.dir); s.err != nil {
			return
		}
		out, err := exec.Command(snapshots.seed, "-apps", fmt.Sprint(n)).Output()
		if err != nil {
			s.err = fmt.Errorf("seed -apps %d: %v", n, err)
			return
		}
		s.err = execSQL(s.dir, string(out))
	})
	return s.dir, s.err
}

// copyTree copies the regular files under src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// d1File is the local D1 database's SQLite file under persist (wrangler's
// local layout: v3/d1/miniflare-D1DatabaseObject/<hash>.sqlite, besides
// the runtime's metadata.sqlite).
func d1File(persist string) (string, error) {
	files, _ := filepath.Glob(filepath.Join(persist, "v3", "d1", "miniflare-D1DatabaseObject", "*.sqlite"))
	var dbs []string
	for _, f := range files {
		if filepath.Base(f) != "metadata.sqlite" {
			dbs = append(dbs, f)
		}
	}
	if len(dbs) != 1 {
		return "", fmt.Errorf("want one local D1 database under %s, found %v", persist, dbs)
	}
	return dbs[0], nil
}

// openD1 opens the local D1 database under persist. SQLite's own file
// locking keeps it consistent with a running wrangler dev (workerd keeps
// D1 in a plain SQLite file in WAL mode, as `wrangler d1 execute --local`
// beside a running wrangler dev relies on too).
func openD1(persist string) (*sql.DB, error) {
	f, err := d1File(persist)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+f+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// execSQL runs statements (a script) against the local D1 under persist.
func execSQL(persist, script string) error {
	db, err := openD1(persist)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(script); err != nil {
		return fmt.Errorf("executing %.200q: %w", script, err)
	}
	_, err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

// checkpoint folds the local D1's write-ahead log into its file.
func checkpoint(persist string) error {
	return execSQL(persist, "SELECT 1")
}

// queryRows runs one read against the local D1 under persist, its rows as
// `wrangler d1 execute --json` gives them (numbers as float64).
func queryRows(persist, query string) ([]map[string]any, error) {
	db, err := openD1(persist)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []map[string]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := map[string]any{}
		for i, c := range cols {
			switch v := vals[i].(type) {
			case int64:
				row[c] = float64(v)
			case []byte:
				row[c] = string(v)
			default:
				row[c] = v
			}
		}
		out = append(out, row)
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out, rows.Err()
}
