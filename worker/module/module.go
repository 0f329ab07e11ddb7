// Package module is how a feature declares what it owns, in one place: its
// D1 tables (and the one package whose statements write each), the
// triggers that write on its behalf, and what they are for. The Worker's
// wiring lists every feature's Module (worker.Modules); the schema test and
// internal/archtest check the declarations against migrations/schema.sql
// and the source, so a table or trigger nobody declares, or declared
// twice, or written from another package, fails a test.
//
// A leaf package: plain values, no imports of the project.
package module

// Module is one feature's declaration.
type Module struct {
	// Name is the feature's name ("crawl", "catalogue", ...).
	Name string
	// Doc says what the feature does, in a line.
	Doc string
	// Tables are the D1 tables the feature owns.
	Tables []Table
	// Triggers are the D1 triggers that write on the feature's behalf.
	Triggers []Trigger
}

// Table is one owned D1 table.
type Table struct {
	Name string
	// Writer is the one package (a slash path from the module root, such
	// as "worker/registry") whose source may INSERT, UPDATE or DELETE the
	// table; every other package puts the writer's statements in its own
	// batches. Empty: only triggers write it.
	Writer string
	// Doc says what a row is.
	Doc string
}

// Trigger is one D1 trigger: a write D1 makes on the feature's behalf
// when another statement writes On. It costs rows written like any
// statement (each row it writes, and each index entry).
type Trigger struct {
	Name string
	// On is the table whose writes fire it.
	On string
	// Writes are the tables it writes.
	Writes []string
	// Doc says why it is a trigger: what it keeps true.
	Doc string
}
