// mcpclient.mjs RELEASE_DIR < cases.json: runs the release's own
// createMcpStdioClient on every case ({command, cases:[{id, args, env,
// method, params, startupTimeoutMs, requestTimeoutMs, maxFrameBytes,
// maxPendingRequests, protocolVersion}]}), all at once in one process: one
// request per case, then stop(). The client takes an error taxonomy from
// its caller; this one tags each error with its class. A case that does
// not settle within boundMs is reported as a hang. Prints {version, chunk,
// found, results:[{id, outcome, message, stop, cleanupResult, ms}]}.
import { locate, readAll, missing } from "./locate.mjs";

const ref = await locate(process.argv[2], "createMcpStdioClient");
if (!ref.fn) missing(ref);
const input = JSON.parse((await readAll()).toString("utf8"));
const boundMs = input.boundMs ?? 30000;

const tagged = (cls) => (message, cause) => Object.assign(new Error(message, { cause }), { cls });
const errors = { unavailable: tagged("unavailable"), protocol: tagged("protocol") };
const within = (p, ms) => Promise.race([p.then((v) => ({ v }), (e) => ({ e })), new Promise((r) => setTimeout(() => r({ hang: true }), ms).unref())]);

async function runCase(c) {
  const t0 = Date.now();
  let client;
  try {
    client = ref.fn({
      command: input.command, args: c.args, env: c.env, errors,
      startupTimeoutMs: c.startupTimeoutMs, maxFrameBytes: c.maxFrameBytes, maxPendingRequests: c.maxPendingRequests,
      protocolVersion: c.protocolVersion, clientInfo: { name: "clawkit-conformance", version: "1" },
    });
  } catch (e) {
    return { id: c.id, outcome: e?.cls ?? "other", message: String(e?.message), stop: "none", ms: Date.now() - t0 };
  }
  const r = await within(client.request(c.method, c.params, { timeoutMs: c.requestTimeoutMs }), boundMs);
  let outcome, message = "";
  if (r.hang) outcome = "hang";
  else if (r.e) { outcome = r.e.cls ?? "other"; message = String(r.e.message); }
  else outcome = "ok";
  const s = await within(client.stop(), boundMs);
  const stop = s.hang ? "hang" : s.e ? `error: ${s.e.message}` : "ok";
  return { id: c.id, outcome, message, stop, cleanupResult: client.cleanupResult ?? null, ms: Date.now() - t0 };
}

// At most `concurrency` cases at a time: enough to keep the run short,
// few enough that a loaded machine does not turn startups into timeouts.
const results = new Array(input.cases.length);
let next = 0;
async function worker() {
  while (next < input.cases.length) {
    const i = next++;
    results[i] = await runCase(input.cases[i]);
  }
}
await Promise.all(Array.from({ length: input.concurrency ?? 4 }, worker));
process.stdout.write(JSON.stringify({ version: ref.version, chunk: ref.chunk, found: true, results }) + "\n");
process.exit(0);
