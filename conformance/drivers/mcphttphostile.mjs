// The TypeScript SDK's Streamable HTTP client against one hostile server:
// connect, then one tools/call (5 s timeout). Prints "ok" or "error: …".
// Usage: node mcphttphostile.mjs SDKDIR URL
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, url] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const client = new Client({ name: "sdk-hostile", version: "1.0.0" });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  await client.callTool({ name: "echo", arguments: { message: "x" } }, undefined, { timeout: 5000 });
  process.stdout.write("ok\n");
} catch (e) {
  process.stdout.write("error: " + String((e && e.message) || e).slice(0, 200).replace(/\n/g, " ") + "\n");
}
process.exit(0);
