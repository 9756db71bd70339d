// Drives an mcpfleet server with the TypeScript SDK v1 client
// (@modelcontextprotocol/sdk) and prints one JSON line per scenario (see
// scenarios.mjs). SDK v1 speaks 2025-11-25 only and always initializes, so
// the only era is legacy. Exit status 0 only if all passed.
//
//   node tools/clients/ts-v1.mjs <url> legacy
import { pkgVersion, run, usage } from './lib.mjs';
import { answerElicitation, answerRoots, answerSampling, newEvents, recordingFetch, steps } from './scenarios.mjs';

const PKG = '@modelcontextprotocol/sdk';
const { url, era } = usage('ts-v1.mjs', ['legacy']);
const version = pkgVersion(PKG);
const { Client } = await import(`${PKG}/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${PKG}/client/streamableHttp.js`);
const T = await import(`${PKG}/types.js`);

const h = {
  era,
  url,
  wire: [],
  ev: newEvents(),
  async connect() {
    const client = new Client(
      { name: 'mcpfleet-clienttest-ts-v1', version },
      { capabilities: { sampling: {}, elicitation: { form: {} }, roots: {} } },
    );
    client.setRequestHandler(T.CreateMessageRequestSchema, (req) => answerSampling(req.params));
    client.setRequestHandler(T.ElicitRequestSchema, (req) => answerElicitation(req.params));
    client.setRequestHandler(T.ListRootsRequestSchema, () => answerRoots());
    client.setNotificationHandler(T.LoggingMessageNotificationSchema, (n) => this.ev.log.push(n.params));
    client.setNotificationHandler(T.ResourceUpdatedNotificationSchema, (n) => this.ev.resourceUpdated.push(n.params));
    client.setNotificationHandler(T.ToolListChangedNotificationSchema, (n) => this.ev.toolsChanged.push(n.params || {}));
    this.client = client;
    this.transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch(this.wire) });
    await client.connect(this.transport);
  },
  negotiated() {
    return this.transport.protocolVersion;
  },
  call(params, opts) {
    return this.client.callTool(params, undefined, opts);
  },
};

await run({
  client: 'ts-sdk-v1',
  version,
  era,
  steps: steps(h),
  cleanup: () => h.client && h.client.close(),
});
