// produce.mjs OPENCLAW_DIR PACKAGE_ROOT CACHE_DIR: runs OpenClaw's own
// worker bundle producer (createWorkerBundleProducer, in the release's
// dist/bootstrap-* chunk) on a package root and prints its result as JSON:
// bundleHash, tarballSha256, tarballBytes, tarballPath, plus the driver
// fields every driver prints (version, found, chunk). A release without the
// producer exits 3 (see locate.mjs).
import { locate, missing } from "./locate.mjs";

const [openclawDir, packageRoot, cacheDir] = process.argv.slice(2);
if (!cacheDir) {
  console.error("usage: produce.mjs OPENCLAW_DIR PACKAGE_ROOT CACHE_DIR");
  process.exit(2);
}
const ref = await locate(openclawDir, "createWorkerBundleProducer");
if (!ref.fn) missing(ref);
const artifact = await ref.fn({ packageRoot, cacheDir }).prepare();
console.log(JSON.stringify({ version: ref.version, found: true, chunk: ref.chunk, ...artifact }));
