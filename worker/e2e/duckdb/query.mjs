// Runs docs/explorer.md's DuckDB queries over a dataset snapshot's parts
// downloaded to a folder (DuckDB's own JSON reader; no httpfs, no network),
// and prints each query's rows as one JSON line: {"query", "rows"}.
//
//   node worker/e2e/duckdb/query.mjs DIR
import { DuckDBInstance } from "@duckdb/node-api";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: query.mjs DIR");
  process.exit(2);
}
const q = (s) => "'" + s.replaceAll("'", "''") + "'";

// The same SQL as docs/explorer.md, over the folder's files.
const queries = {
  genres: `SELECT genre, count(*) AS apps, sum(rating_count) AS ratings
FROM read_ndjson_auto(${q(dir + "/apps-*.ndjson.gz")}) GROUP BY genre ORDER BY ratings DESC LIMIT 10`,
  segments: `SELECT s.name, s.opportunity, count(*) AS keywords
FROM read_ndjson_auto(${q(dir + "/segments-*.ndjson.gz")}) s
JOIN read_ndjson_auto(${q(dir + "/segment_keywords-*.ndjson.gz")}) k ON k.segment_id = s.id
WHERE s.retired_at IS NULL GROUP BY ALL ORDER BY s.opportunity DESC LIMIT 20`,
};

const db = await DuckDBInstance.create(":memory:");
const conn = await db.connect();
for (const [name, sql] of Object.entries(queries)) {
  const reader = await conn.runAndReadAll(sql);
  const rows = reader.getRowObjectsJson();
  console.log(JSON.stringify({ query: name, rows }));
}
