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
//   compile  WebAssembly.compile(bytes) resolved (workerd compiles the module
//            when it loads the Worker)
//   init     new WebAssembly.Instance + go.run until `ready`: the Go runtime,
//            every package initialiser and main up to the moment it calls the
//            `workers.ready` import (worker.Register, after it has installed
//            every entry point the shim calls).
// Wall-clock time and the process's CPU time (every thread: V8 compiles on
// background threads too) of each phase; CPU time moves less on a machine
// busy with other work. Prints one JSON line: {"compileMs", "initMs",
// "readyMs", "compileCpuMs", "initCpuMs", "readyCpuMs", "bindings"}, and
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

const cpu = () => {
  const u = process.cpuUsage(); // µs, every thread of the process
  return (u.user + u.system) / 1000;
};
const c0 = cpu();
const t0 = performance.now();
const mod = await WebAssembly.compile(bytes);
const t1 = performance.now();
const c1 = cpu();
const go = new Go();
if (godebug) go.env = { GODEBUG: godebug };
let markReady;
const ready = new Promise((resolve) => (markReady = resolve));
const instance = new WebAssembly.Instance(mod, { ...go.importObject, workers: { ready: () => markReady() } });
go.run(instance);
await ready;
const t2 = performance.now();
const c2 = cpu();

if (godebug) for (const line of out) process.stderr.write(line + "\n");
process.stdout.write(
  JSON.stringify({
    compileMs: t1 - t0,
    initMs: t2 - t1,
    readyMs: t2 - t0,
    compileCpuMs: c1 - c0,
    initCpuMs: c2 - c1,
    readyCpuMs: c2 - c0,
    bindings: Object.keys(globalThis.context.binding).length,
  }) + "\n",
);
process.exit(0); // the Go program parks in select{}; nothing else to wait for
