// One Go instance per isolate, shared by the Worker handlers and every Durable
// Object in this isolate. syumai/workers' own entry starts a fresh Go runtime
// for every call, paying the instance's init each time (docs/measurements.md,
// "init", printed by go run ./cmd/bench -only-coldstart); reusing one instance
// pays it once per isolate.
//
// Contract with syumai/workers: the Go side reads the JS global `context`
// ({env, ctx, connect, binding}) once at start-up and keeps the object; it
// reads `env`/`ctx` from it at call time and registers its entry points on
// `binding`. We keep that object and refresh env/ctx before every call.
// `ctx` (the ExecutionContext) differs per call, so Go code must not rely on
// it across an await; ours never uses it.
import "../build/wasm_exec.js";
import wasmModule from "../build/app.wasm";
import { connect } from "cloudflare:sockets";

const runtimeContext = { env: undefined, ctx: undefined, connect, binding: {} };
globalThis.context = runtimeContext;
globalThis.tryCatch = (fn) => {
  try {
    return { result: fn() };
  } catch (e) {
    return { error: e };
  }
};

let starting = null; // Promise of the running instance, or null before start / after exit

// stats lets the benchmark and /health-style checks see reuse.
export const instanceStats = { starts: 0, calls: 0 };

function start() {
  const go = new Go();
  let markReady;
  const ready = new Promise((resolve) => (markReady = resolve));
  const instance = new WebAssembly.Instance(wasmModule, {
    ...go.importObject,
    workers: { ready: () => markReady() },
  });
  instanceStats.starts++;
  // go.run resolves only when the Go program exits (a panic outside a
  // recovered goroutine). Then the next call starts a fresh instance.
  go.run(instance).finally(() => {
    starting = null;
    console.log(JSON.stringify({ event: "go.exited", level: "error", starts: instanceStats.starts }));
  });
  return ready;
}

// goBinding returns the Go entry points, starting the instance on first use.
export async function goBinding(env, ctx) {
  runtimeContext.env = env;
  runtimeContext.ctx = ctx;
  instanceStats.calls++;
  if (starting === null) {
    starting = start();
  }
  await starting;
  return runtimeContext.binding;
}

// callGo calls a Go export and unwraps its JSON answer: every export answers
// {"ok": value} or {"error": "..."} (worker/cf.Export). This is the one
// place a Go failure becomes a thrown Error, with Go's own message.
export function callGo(go, name, ...args) {
  return unwrap(name, go[name](...args));
}

// callGoAsync is callGo for the exports that return a Promise of the answer.
export async function callGoAsync(go, name, ...args) {
  return unwrap(name, await go[name](...args));
}

function unwrap(name, out) {
  let answer;
  try {
    answer = JSON.parse(out);
  } catch {
    throw new Error(`go ${name}: unreadable answer: ${String(out).slice(0, 200)}`);
  }
  if (answer.error !== undefined) throw new Error(`go ${name}: ${answer.error}`);
  return answer.ok;
}
