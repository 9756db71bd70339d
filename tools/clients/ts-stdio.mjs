// Drives `mcpfleet stdio` with the TypeScript SDK v1 client's
// StdioClientTransport (the server runs as the client's subprocess) and
// prints one JSON line per scenario (see lib.mjs). Exit status 0 only if
// all passed.
//
//   node tools/clients/ts-stdio.mjs <path to the mcpfleet binary> legacy
import { eq, assert, pkgVersion, run, textOf, usage } from './lib.mjs';
import { answerSampling } from './scenarios.mjs';

const PKG = '@modelcontextprotocol/sdk';
const { url: bin, era } = usage('ts-stdio.mjs', ['legacy']);
const version = pkgVersion(PKG);
const { Client } = await import(`${PKG}/client/index.js`);
const { StdioClientTransport } = await import(`${PKG}/client/stdio.js`);
const T = await import(`${PKG}/types.js`);

let client;
let transport;
let stderr = '';

await run({
  client: 'ts-sdk-v1-stdio',
  version,
  era,
  steps: [
    {
      name: 'connect',
      required: true,
      fn: async () => {
        client = new Client({ name: 'mcpfleet-clienttest-stdio', version }, { capabilities: { sampling: {} } });
        client.setRequestHandler(T.CreateMessageRequestSchema, (req) => answerSampling(req.params));
        transport = new StdioClientTransport({ command: bin, args: ['stdio', '--fixture', 'conformance'], stderr: 'pipe' });
        transport.stderr.on('data', (d) => { stderr += d; });
        await client.connect(transport);
        const info = client.getServerVersion();
        assert(info && info.name, 'no serverInfo');
        return `server ${info.name} ${info.version}`;
      },
    },
    {
      name: 'tools-list',
      fn: async () => {
        const { tools } = await client.listTools();
        const names = tools.map((t) => t.name);
        for (const want of ['echo', 'sleep', 'test_sampling']) {
          assert(names.includes(want), `tools/list lacks ${want}: ${names.join(', ')}`);
        }
        return `${tools.length} tools`;
      },
    },
    {
      name: 'echo',
      fn: async () => {
        const res = await client.callTool({ name: 'echo', arguments: { text: 'hello over stdio' } });
        eq(textOf(res.content), 'hello over stdio', 'echo');
      },
    },
    {
      name: 'sleep-progress',
      fn: async () => {
        const seen = [];
        const res = await client.callTool({ name: 'sleep', arguments: { ms: 450 } }, undefined, {
          onprogress: (p) => seen.push(p.progress),
        });
        eq(textOf(res.content), 'slept', 'sleep');
        assert(seen.length >= 2, `got ${seen.length} progress notifications, want >= 2`);
        return `${seen.length} progress notifications`;
      },
    },
    {
      name: 'sampling',
      fn: async () => {
        const res = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'What is 2+2?' } });
        eq(textOf(res.content), 'LLM response: sampled: What is 2+2?', 'test_sampling');
      },
    },
    {
      name: 'close',
      fn: async () => {
        await client.close();
        assert(!/panic|goroutine \d+ \[/.test(stderr), `server stderr: ${stderr}`);
      },
    },
  ],
  cleanup: () => client && client.close(),
});
