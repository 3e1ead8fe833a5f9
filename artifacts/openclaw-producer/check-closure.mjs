// Used by the runtime-artifacts tests: in an extracted node bootstrap, every
// production dependency of every package must resolve, with Node's own
// lookup paths, to a package inside the extraction folder.
//
//   node check-closure.mjs EXTRACTED_DIR
import fs from "node:fs";
import path from "node:path";
import Module, { createRequire } from "node:module";

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
  const req = createRequire(path.join(dir, "package.json"));
  for (const [name, spec] of Object.entries(pj.dependencies ?? {})) {
    if (String(spec).startsWith("workspace:")) continue;
    checked++;
    // Core module names (string_decoder, …) get no lookup paths from
    // require.resolve.paths; use the node_modules chain Node would use.
    const found = (req.resolve.paths(name) ?? Module._nodeModulePaths(dir)).map((p) => path.join(p, name)).find((p) => fs.existsSync(path.join(p, "package.json")));
    if (!found || !found.startsWith(root + path.sep)) {
      missing++;
      console.log(`${path.relative(root, dir)} -> ${name}: ${found ? "outside " + found : "not found"}`);
    }
  }
}
console.log(`${pkgs.length} packages, ${checked} dependencies checked, ${missing} unresolved`);
process.exit(missing ? 1 : 0);
