// Runs OpenClaw's own worker bundle producer (createWorkerBundleProducer in
// its dist/bootstrap-*.mjs chunk) on a package root and prints its result as
// JSON: bundleHash, tarballSha256, tarballBytes, tarballPath.
//
//   node --import ./polyfill.mjs produce.mjs OPENCLAW_DIR PACKAGE_ROOT CACHE_DIR
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [openclawDir, packageRoot, cacheDir] = process.argv.slice(2);
if (!cacheDir) {
  console.error("usage: produce.mjs OPENCLAW_DIR PACKAGE_ROOT CACHE_DIR");
  process.exit(2);
}
// The chunk's file name carries a content hash; find the one that defines
// the producer instead of naming it.
const dist = path.join(openclawDir, "dist");
const chunk = fs.readdirSync(dist).find((f) => /^bootstrap-.*\.m?js$/.test(f) &&
  fs.readFileSync(path.join(dist, f), "utf8").includes("function createWorkerBundleProducer("));
if (!chunk) {
  console.error("no bootstrap chunk with createWorkerBundleProducer in " + dist);
  process.exit(1);
}
const mod = await import(pathToFileURL(path.join(dist, chunk)).href);
const create = Object.values(mod).find((f) => typeof f === "function" && f.name === "createWorkerBundleProducer");
if (!create) {
  console.error("createWorkerBundleProducer is not exported by " + chunk);
  process.exit(1);
}
const artifact = await create({ packageRoot, cacheDir }).prepare();
console.log(JSON.stringify(artifact));
