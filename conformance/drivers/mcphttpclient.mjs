// The TypeScript SDK's own Streamable HTTP (or legacy SSE) client against
// an MCP server over HTTP: the steps of docs/conformance.md, "MCP over
// HTTP". Usage: node mcphttpclient.mjs SDKDIR URL [TOKEN] [sse]
// Prints one JSON object: each step's outcome ({ok, detail} or {error}).
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, url, token, mode] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { SSEClientTransport } = await load("client/sse.js");

const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = mode === "sse"
  ? new SSEClientTransport(new URL(url), { requestInit: { headers }, eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...(init?.headers || {}), ...headers } }) } })
  : new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "sdk-conformance", version: "1.0.0" });
const out = {};
const step = async (name, f) => {
  try {
    out[name] = { ok: true, detail: await f() };
  } catch (e) {
    out[name] = { ok: false, error: String(e && e.message || e).slice(0, 300) };
  }
};
const notes = [];
client.fallbackNotificationHandler = async (n) => { notes.push(n.method); };

await step("initialize", async () => {
  await client.connect(transport);
  const v = client.getServerVersion();
  return { server: v && v.name, session: Boolean(transport.sessionId) };
});
await step("tools/list", async () => (await client.listTools()).tools.length > 0);
await step("tools/call", async () => (await client.callTool({ name: "echo", arguments: { message: "conformance" } })).content[0].text);
await step("resources", async () => {
  const l = await client.listResources();
  const r = await client.readResource({ uri: l.resources[0].uri });
  return r.contents.length > 0;
});
await step("prompts", async () => {
  const l = await client.listPrompts();
  const p = await client.getPrompt({ name: "simple-prompt" });
  return l.prompts.length > 0 && p.messages.length > 0;
});
await step("notifications", async () => {
  let progress = 0;
  await client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 1, steps: 2 } }, undefined, { onprogress: () => { progress++; } });
  return progress > 0;
});
await step("cancellation", async () => {
  const ac = new AbortController();
  const p = client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 30, steps: 30 } }, undefined, { signal: ac.signal });
  setTimeout(() => ac.abort("conformance"), 300);
  try { await p; return "not cancelled"; } catch (e) { return "cancelled"; }
});
await step("after-cancel", async () => (await client.callTool({ name: "echo", arguments: { message: "still here" } })).content[0].text);
await step("session-end", async () => {
  if (mode !== "sse") await transport.terminateSession();
  await client.close();
  return true;
});
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
