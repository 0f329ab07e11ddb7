// One cold start of the Worker's Go program, in a fresh Node process (V8
// caches a compiled module per process, so each run needs its own):
// `go run ./cmd/bench` runs it once per sample and takes the median.
//
//   node cmd/bench/coldstart.mjs build/app.wasm build/wasm_exec.js [GODEBUG]
//
// It mirrors shim/go.mjs: the globals syumai/workers reads (`context` with
// env/ctx/connect/binding, `tryCatch`), the `workers.ready` import, one
// WebAssembly.Instance started with go.run. Timed from the module's bytes in
// memory:
//   compile  WebAssembly.compile(bytes) resolved (what workerd does on upload)
//   init     new WebAssembly.Instance + go.run until `ready`: the Go runtime,
//            every package initialiser and main up to the moment it calls the
//            `workers.ready` import (worker.Register, after it has installed
//            every entry point the shim calls).
// Prints one JSON line: {"compileMs", "initMs", "readyMs", "bindings"}, and
// with a GODEBUG argument (e.g. inittrace=1) the Go program's output first.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [wasmPath, execPath, godebug] = process.argv.slice(2);
const out = [];
// wasm_exec.js writes the Go program's stdout/stderr with console.log.
console.log = (...a) => out.push(a.join(" "));
globalThis.context = {
  env: {},
  ctx: {},
  connect: () => {
    throw new Error("connect is not available in the cold-start bench");
  },
  binding: {},
};
globalThis.tryCatch = (fn) => {
  try {
    return { result: fn() };
  } catch (e) {
    return { error: e };
  }
};
// Node defines the fetch classes as lazy getters that load its fetch library
// on first access (~30 ms, seen inside syumai's internal/jsutil initialiser);
// workerd has them built in. Touch them before timing, as workerd would.
for (const name of ["Request", "Response", "Headers", "ReadableStream", "FormData", "fetch"]) globalThis[name];
await import(pathToFileURL(execPath).href);
const bytes = readFileSync(wasmPath);

const t0 = performance.now();
const mod = await WebAssembly.compile(bytes);
const t1 = performance.now();
const go = new Go();
if (godebug) go.env = { GODEBUG: godebug };
let markReady;
const ready = new Promise((resolve) => (markReady = resolve));
const instance = new WebAssembly.Instance(mod, { ...go.importObject, workers: { ready: () => markReady() } });
go.run(instance);
await ready;
const t2 = performance.now();

if (godebug) for (const line of out) process.stderr.write(line + "\n");
process.stdout.write(
  JSON.stringify({
    compileMs: t1 - t0,
    initMs: t2 - t1,
    readyMs: t2 - t0,
    bindings: Object.keys(globalThis.context.binding).length,
  }) + "\n",
);
process.exit(0); // the Go program parks in select{}; nothing else to wait for
