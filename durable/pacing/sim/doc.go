// Package sim is the engine of cmd/simulate: it runs the EnrichmentController's pacing algorithms
// (durable/pacing) against a simulated rate-limited upstream on a virtual
// clock: a deterministic discrete-event simulation, so an hour of traffic
// takes milliseconds and the same scenario and seed give the same numbers.
//
//	go run ./cmd/simulate -scenario FILE.json -controller NAME [-json] [-trace]
//	go run ./cmd/simulate -scenario all [-controller seed,aimd,...] [-shape file,1] [-json]
//	go run ./cmd/simulate -variants N [-seed S] [-scenario all|NAME,...] [-list] [-json]
//
// -shape reruns every scenario at the given requests per item (a
// comma-separated list of counts and "file", each scenario's own
// subrequests_per_item), one table per entry; nothing else changes. Its
// default is "file,1" for -scenario all (today's table unchanged, then the
// product's shape: about one request per enriched app) and "file"
// otherwise. With several shapes -json prints one array of every run, each
// with its subrequests_per_item.
//
// -variants N draws N variants of every scenario family, deterministic
// from -seed (see the variant* constants for the ranges), runs the default
// and its peers on each (variants in parallel, one per core), and prints
// per family the default's vs-best mean and worst (with the worst
// variant's name; -json includes its scenario, to rerun with -scenario),
// the same over the variants at 1 request per item, ÷oracle where a
// refusal costs a block or a Retry-After hold, the refused share, a goal
// line per family (variantgoals.go) and the wall time. -scenario narrows
// it to the families named; -list adds a row per variant, worst first.
//
// -scenario takes a JSON file, the name of a shipped scenario (e.g.
// "halved"), or "all" (every scenarios/*.json, embedded in the binary, in
// file-name order). -controller is a comma-separated list of the
// product's controllers (pacing.New names, and "default" for the one it
// runs), the peers "aimd" and "aws-adaptive" (this package only), and
// "oracle" (paces at the hidden capacity; the yardstick). One
// scenario × one controller prints every metric; several print one table.
//
// # Scenario files
//
// A scenario is the work queue (items × subrequests_per_item requests; 1
// when the file omits it, the product's shape), the run length, an RNG seed and phases of upstream behaviour; see Phase for
// the fields. Unknown fields are an error. Phases start at at_s (the first
// at 0, strictly increasing) and hold until the next. A phase does NOT
// inherit from the one before: every field it omits is 0/false (so a later
// phase must restate capacity_per_min, burst and latency). The one default
// is on_exceed, "429" when omitted. With ramp_to_per_min > 0 a phase's
// capacity moves linearly from capacity_per_min at at_s to ramp_to_per_min
// at the next phase's start (or the run's end): a slow rise or fall.
//
// # The upstream
//
// The upstream is internal/upstreammodel, the model cmd/upstream-sim
// serves over HTTP too, driven through the scenario's phases. A token bucket of capacity_per_min per minute (or the point on the
// phase's ramp) holding at most burst tokens (full at the start; a capacity change keeps the tokens, capped at
// the new burst). A request takes a token when it arrives (its send time);
// with none left it is refused with on_exceed (429 or 403, both
// KindThrottled). Refusals carry Retry-After when retry_after_s > 0. With
// refusals_consume a refusal takes a token too (down to -burst). With
// block_s > 0 and no lockout rule, a refusal blocks the client for block_s
// (a 403 storm): every request during a block is refused without touching
// the bucket or extending the block. With lockout_after_refusals_per_min N
// > 0, more than N bucket refusals within a sliding 60 s window block the
// client for block_s. Refusals during a block never count towards a
// lockout (they would re-arm it the moment it ended). Accepted requests
// answer not-found if their item does not exist (decided once per item,
// from a per-item stream of the seed, so every controller sees the same
// missing items), else time out with timeout_rate (holding the connection
// 15 s), else 5xx with error_rate, else OK. Every answer, refusals
// included, takes latency_ms ± uniform latency_jitter_ms. With
// ratelimit_headers every answer carries Remaining = floor(tokens left)
// and Reset = time until a token is usable (0 if one is; during a block,
// until the block ends), both as of arrival; otherwise Remaining = -1.
//
// # The platform
//
// The simulator is the Durable Object's alarm loop: Plan at the wake time;
// the tick starts min(Items, items left, Config.ItemsPerTickLimit()) items
// from the queue in chunks of ChunkItems; a chunk's requests go FIFO, in
// item order, through pacing.MaxConnections connections, each request
// holding a connection until its answer; a chunk ends at its last answer,
// the next starts ChunkPause later; nothing is sent before NotBefore; with
// StopOnThrottle a chunk with a refusal ends the tick and the unstarted
// items go back to the queue. Done is called at the tick's last answer (at
// the wake time for an empty tick) with every outcome; a next wake not
// after that is moved 1 ms later. An item is completed when all its
// requests answer OK or not-found; otherwise it goes back to the front of
// the queue and is attempted again in a later tick. The run ends at
// duration_s (answers after it are not counted, and that tick's Done is
// not called) or when every item is completed.
//
// # Metrics
//
//   - requests_sent, requests_refused (KindThrottled), requests_ok (OK and
//     not-found: the upstream served them), server_errors, timeouts.
//   - capacity_allowed: what an ideal client could have been served,
//     the initial burst plus ∫ min(capacity_per_min/60, MaxConnections /
//     mean latency) dt over the run (capacity_per_min following any ramp): the hidden limit, bounded by what six
//     connections carry at the phase's mean latency (latency_ms; timeouts
//     are not included).
//   - goodput_ratio = requests_ok / capacity_allowed.
//   - refused_ratio = requests_refused / requests_sent.
//   - attempts_per_success = item attempts / items_completed (0 if none).
//   - retry_after_violations: requests sent before the latest DoneAt +
//     RetryAfter of the answers received so far, including answers that
//     arrived while the rest of the same chunk was still queued.
//   - lockouts: how many blocks (403 storm or lockout) began.
//   - cooldowns: the controller's Cooldowns() if it has one, else 0.
//   - recovery_s, one per phase change: seconds from the change to the end
//     of the first 60 s window lying wholly in the new phase (so 60 is the
//     best possible) whose OK answers reach 90% of what the ideal client
//     is served in that window (as in capacity_allowed) and whose refused share is below 2%, on a
//     1 s grid; -1 if none before the phase ends.
//   - trace (-trace): per simulated minute, requests sent, OK and refused
//     (by send time), the controller's CapacityPerMin and its last plan, as
//     of the end of the minute.
package sim
