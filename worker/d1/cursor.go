package d1

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// A sweep keeps its position in sweep_cursors (one row by name, so any
// writer can see and reset it). Cursor is the one way every sweep reads
// and moves it: one primary-key read, and a write of the one row only when
// the position moved, so a pass that ends where it began (a small
// catalogue wrapping from 0 to 0, a run with nothing to do) writes nothing.
// The write is one row: the upsert changes cursor and updated_at, which no
// index holds (the name's key entry is written once, when the row is first
// inserted).

// CursorReadSQL reads a named cursor as text (an integer cursor reads
// "123"; the column has INTEGER affinity, so text that looks like an
// integer is stored as one and comes back the same).
const CursorReadSQL = `SELECT CAST(cursor AS TEXT) AS cursor FROM sweep_cursors WHERE name = ?`

// cursorWriteSQL upserts a named cursor (name, position, now); a stored
// row already at the position is not written, for a writer that moves a
// cursor it did not read (Cursor{Name: name}: its From is unknown).
const cursorWriteSQL = `INSERT INTO sweep_cursors (name, cursor, updated_at) VALUES (?,?,?)
ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at
WHERE sweep_cursors.cursor IS NOT excluded.cursor`

// Cursor is a sweep's position as read: Name and the stored position
// (From, "" when there is none).
type Cursor struct {
	Name string
	From string
}

// ReadCursor reads the named cursor (one row read at most).
func ReadCursor(ctx context.Context, db *DB, name string) (Cursor, error) {
	var rows []struct {
		Cursor *string `json:"cursor"`
	}
	if err := db.Query(ctx, &rows, CursorReadSQL, name); err != nil {
		return Cursor{Name: name}, err
	}
	c := Cursor{Name: name}
	if len(rows) > 0 && rows[0].Cursor != nil {
		c.From = *rows[0].Cursor
	}
	return c, nil
}

// Int is an integer position (a track id): 0 when there is none or it is
// not an integer.
func (c Cursor) Int() int64 {
	n, _ := strconv.ParseInt(c.From, 10, 64)
	return n
}

// Text is a text position: "" when there is none. A stored "0" (an
// integer sweep's wrap, or a text sweep's "start over") is none as well.
func (c Cursor) Text() string {
	if c.From == "0" {
		return ""
	}
	return c.From
}

// cursorText is a position as Cursor.From holds it.
func cursorText(to any) string {
	switch v := to.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	}
	return fmt.Sprint(to)
}

// Moves says whether writing to would change the stored position. An
// empty text position and 0 are the same "start over" (Text reads both
// as ""), so moving from one to the other is no move.
func (c Cursor) Moves(to any) bool {
	t := cursorText(to)
	if (t == "" || t == "0") && (c.From == "" || c.From == "0") {
		return false
	}
	return t != c.From
}

// Write is the statement that moves the cursor to to, for a caller's own
// batch (so the position moves in the same transaction as the work it
// marks); none when the position would not move. After the batch commits,
// the caller's Cursor is Moved(to).
func (c Cursor) Write(to any, at time.Time) []Stmt {
	if !c.Moves(to) {
		return nil
	}
	return []Stmt{{SQL: cursorWriteSQL, Args: []any{c.Name, to, Time(at)}}}
}

// Moved is the cursor once to is stored.
func (c Cursor) Moved(to any) Cursor {
	c.From = cursorText(to)
	return c
}

// Save writes to on its own (one row) when the position moved and returns
// the moved cursor; a failed write leaves the cursor as it was.
func (c Cursor) Save(ctx context.Context, db *DB, to any, at time.Time) (Cursor, error) {
	stmts := c.Write(to, at)
	if len(stmts) == 0 {
		return c, nil
	}
	if _, err := db.Exec(ctx, stmts...); err != nil {
		return c, err
	}
	return c.Moved(to), nil
}

// CursorHotQuery is the cursor read for a feature's HotQueries.
func CursorHotQuery(name string) NamedQuery {
	return NamedQuery{Name: "sweep cursor " + name, SQL: CursorReadSQL, Args: []any{name}}
}
