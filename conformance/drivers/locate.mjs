// Finds a reference function in an installed OpenClaw release by content:
// the compiled chunks under dist/ carry content hashes in their names, so
// the chunk is the one whose text defines the function; the function is
// then the export whose name is the one asked for (chunks export it under
// a one-letter alias, but a function keeps its own name).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

export async function locate(releaseDir, name) {
  const dist = path.join(releaseDir, "dist");
  const pkg = JSON.parse(fs.readFileSync(path.join(releaseDir, "package.json"), "utf8"));
  const needle = `function ${name}(`;
  const candidates = [];
  for (const f of fs.readdirSync(dist).sort()) {
    if (!/\.(mjs|js)$/.test(f)) continue;
    const p = path.join(dist, f);
    if (!fs.statSync(p).isFile()) continue;
    if (fs.readFileSync(p, "utf8").includes(needle)) candidates.push(p);
  }
  for (const p of candidates) {
    const mod = await import(pathToFileURL(p).href);
    for (const v of Object.values(mod)) {
      if (typeof v === "function" && v.name === name) {
        return { fn: v, chunk: path.relative(releaseDir, p), version: pkg.version };
      }
    }
  }
  return { fn: null, chunk: null, version: pkg.version, candidates: candidates.map((p) => path.relative(releaseDir, p)) };
}

// readAll reads stdin to the end.
export async function readAll() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks);
}

// missing reports a reference the release does not ship and exits 3, so
// the Go side can tell "not shipped" from a crash.
export function missing(ref) {
  process.stdout.write(JSON.stringify({ version: ref.version, found: false, candidates: ref.candidates }) + "\n");
  process.exit(3);
}
