// scanner.mjs RELEASE_DIR < inputs.json: runs the release's own
// scanSkillContent on every input ([{id, file, contentB64}]) in one
// process and prints {version, chunk, found, results:[{id, findings:[{ruleId,
// severity, line}]}]}.
import { locate, readAll, missing } from "./locate.mjs";

const ref = await locate(process.argv[2], "scanSkillContent");
if (!ref.fn) missing(ref);
const inputs = JSON.parse((await readAll()).toString("utf8"));
const results = inputs.map((it) => {
  const content = Buffer.from(it.contentB64, "base64").toString("utf8");
  const findings = ref.fn(content, it.file).map((f) => ({ ruleId: f.ruleId, severity: f.severity, line: f.line }));
  return { id: it.id, findings };
});
process.stdout.write(JSON.stringify({ version: ref.version, chunk: ref.chunk, found: true, results }) + "\n");
