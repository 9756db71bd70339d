// Drives an mcpfleet server with the TypeScript SDK v2 client
// (@modelcontextprotocol/client) in one era and prints one JSON line per
// scenario (see scenarios.mjs). Exit status 0 only if all passed.
//
//   node tools/clients/ts-v2.mjs <url> legacy   versionNegotiation 'legacy' (initialize, 2025-11-25)
//   node tools/clients/ts-v2.mjs <url> modern   versionNegotiation pinned to 2026-07-28
//   node tools/clients/ts-v2.mjs <url> auto     versionNegotiation 'auto' (server/discover probe)
import { pkgVersion, run, usage } from './lib.mjs';
import { MODERN_VERSION, answerElicitation, answerRoots, answerSampling, newEvents, recordingFetch, steps } from './scenarios.mjs';

const PKG = '@modelcontextprotocol/client';
const { url, era } = usage('ts-v2.mjs', ['legacy', 'modern', 'auto']);
const version = pkgVersion(PKG);
const { Client, SdkError, SdkErrorCode, StreamableHTTPClientTransport } = await import(PKG);

const modes = { legacy: 'legacy', modern: { pin: MODERN_VERSION }, auto: 'auto' };
const info = { name: 'mcpfleet-clienttest-ts-v2', version };
const capabilities = { sampling: {}, elicitation: { form: {} }, roots: {} };

function newClient(mode, ev) {
  const client = new Client(info, { capabilities, versionNegotiation: { mode } });
  client.setRequestHandler('sampling/createMessage', (req) => answerSampling(req.params));
  client.setRequestHandler('elicitation/create', (req) => answerElicitation(req.params));
  client.setRequestHandler('roots/list', () => answerRoots());
  if (ev) {
    client.setNotificationHandler('notifications/message', (n) => ev.log.push(n.params));
    client.setNotificationHandler('notifications/resources/updated', (n) => ev.resourceUpdated.push(n.params));
    client.setNotificationHandler('notifications/tools/list_changed', (n) => ev.toolsChanged.push(n.params || {}));
  }
  return client;
}

const h = {
  era,
  url,
  wire: [],
  ev: newEvents(),
  async connect() {
    this.client = newClient(modes[era], this.ev);
    this.transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch(this.wire) });
    await this.client.connect(this.transport);
  },
  negotiated() {
    return this.client.getNegotiatedProtocolVersion();
  },
  call(params, opts) {
    return this.client.callTool(params, opts);
  },
  refusedLocally(e) {
    return e instanceof SdkError && e.code === SdkErrorCode.MethodNotSupportedByProtocolVersion;
  },
  listen(filter) {
    return this.client.listen(filter);
  },
  async autoProbe() {
    const wire = [];
    const client = newClient('auto');
    const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch(wire) });
    await client.connect(transport);
    try {
      const probe = wire.find((w) => w.rpc === 'server/discover');
      return {
        version: client.getNegotiatedProtocolVersion(),
        era: client.getProtocolEra(),
        probe: probe && probe.status,
        initialized: wire.some((w) => w.rpc === 'initialize'),
      };
    } finally {
      await client.close();
    }
  },
};

await run({
  client: 'ts-sdk-v2',
  version,
  era,
  steps: steps(h),
  cleanup: () => h.client && h.client.close(),
});
