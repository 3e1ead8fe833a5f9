// framer.mjs RELEASE_DIR < streams.json: runs the release's own
// createBoundedLineFramer on every stream ([{max, chunks:[base64]}]) in one
// process. Each chunk is pushed and its yielded lines collected; a push
// that throws is recorded and the stream goes on, so the output shows what
// happens after an overflow too. Prints {version, chunk, found, results:
// [[{lines:[base64], threw, message, pending}] per chunk] per stream}.
import { locate, readAll, missing } from "./locate.mjs";

const ref = await locate(process.argv[2], "createBoundedLineFramer");
if (!ref.fn) missing(ref);
const streams = JSON.parse((await readAll()).toString("utf8"));
const results = streams.map((s) => {
  const framer = ref.fn(s.max, "overflow");
  return s.chunks.map((c) => {
    const lines = [];
    let threw = false;
    let message = "";
    try {
      for (const line of framer.push(Buffer.from(c, "base64"))) lines.push(Buffer.from(line).toString("base64"));
    } catch (e) {
      threw = true;
      message = String(e && e.message);
    }
    return { lines, threw, message, pending: framer.pendingByteLength };
  });
});
process.stdout.write(JSON.stringify({ version: ref.version, chunk: ref.chunk, found: true, results }) + "\n");
