// The scenarios every TypeScript client runs, shared by ts-v1.mjs and
// ts-v2.mjs. A script builds a harness h around its SDK and calls
// steps(h); the steps only use SDK calls that both SDKs spell the same way,
// plus the harness for what differs (tool calls, handler registration,
// listen, the auto-mode probe).
//
// Known client behaviours the scenarios rely on: TS SDK v2 rejects any
// 2026-07-28 result that lacks resultType, so every modern step also checks
// that the server sends it; TS SDK v2 refuses logging/setLevel on a modern
// connection itself (see logging_setlevel_rejected); SDK abort signals send
// notifications/cancelled in the legacy era and close the response stream
// in the modern one.
//
// The harness h:
//   era                'legacy' | 'modern' | 'auto'
//   url                the server URL
//   connect()          builds the client (with the handlers below) and connects
//   client             the SDK client, after connect
//   transport          the SDK transport, after connect
//   negotiated()       the negotiated protocol version
//   call(params, opts) client.callTool
//   wire               array of {http, rpc, status, type} for every HTTP exchange
//   ev                 Waiters fed by the client's notification handlers:
//                      log, resourceUpdated, toolsChanged
//   listen(filter)     modern only: client.listen
//   autoProbe()        modern only: a fresh auto-mode client's {version, era}
//   refusedLocally(e)  modern only: e is the SDK's own refusal of a legacy-only method
import { Waiter, assert, eq, errCode, sleep, textOf, withTimeout } from './lib.mjs';

export const EXPECTED_SERVER = 'mcp-conformance-test-server';
export const LEGACY_VERSION = '2025-11-25';
export const MODERN_VERSION = '2026-07-28';
export const LOG_LEVEL_KEY = 'io.modelcontextprotocol/logLevel';
export const ROOT_URI = 'file:///tmp/mcpfleet-client-root';
const WATCHED = 'test://watched-resource';

/** newEvents returns the Waiters the notification handlers feed. */
export function newEvents() {
  return { log: new Waiter(), resourceUpdated: new Waiter(), toolsChanged: new Waiter() };
}

/** seen counts how often each client-side handler answered the server. */
export const seen = { sampling: 0, elicitation: 0, roots: 0 };

/** answerSampling is the client's sampling handler (legacy request or MRTR input). */
export function answerSampling(params) {
  seen.sampling++;
  const prompt = (params.messages || [])
    .map((m) => (Array.isArray(m.content) ? textOf(m.content) : m.content && m.content.text) || '')
    .join(' ');
  const text = /capital of France/.test(prompt) ? 'Paris' : `sampled: ${prompt}`;
  return { role: 'assistant', content: { type: 'text', text }, model: 'mcpfleet-test-model', stopReason: 'endTurn' };
}

const elicitValues = { name: 'Ada', color: 'teal', username: 'ada', email: 'ada@example.com', context: 'ctx-from-client', ok: true };

/** answerElicitation is the client's form-elicitation handler: it accepts, filling each property it knows. */
export function answerElicitation(params) {
  seen.elicitation++;
  const props = (params.requestedSchema && params.requestedSchema.properties) || {};
  const content = {};
  for (const k of Object.keys(props)) {
    if (k in elicitValues) content[k] = elicitValues[k];
  }
  return { action: 'accept', content };
}

/** answerRoots is the client's roots handler. */
export function answerRoots() {
  seen.roots++;
  return { roots: [{ uri: ROOT_URI, name: 'client-root' }] };
}

/** recordingFetch wraps fetch and records each exchange in wire. */
export function recordingFetch(wire) {
  return async (url, init = {}) => {
    let rpc = '';
    if (typeof init.body === 'string') {
      try {
        const m = JSON.parse(init.body);
        rpc = m.method || (m.result !== undefined || m.error !== undefined ? 'response' : '');
      } catch {
        rpc = '?';
      }
    }
    const entry = { http: (init.method || 'GET').toUpperCase(), rpc, status: 0, type: '' };
    wire.push(entry);
    const res = await fetch(url, init);
    entry.status = res.status;
    entry.type = (res.headers.get('content-type') || '').split(';')[0];
    return res;
  };
}

function includesAll(names, want, what) {
  const missing = want.filter((w) => !names.includes(w));
  assert(missing.length === 0, `${what}: missing ${missing.join(', ')} (got ${names.length}: ${names.join(', ')})`);
}

async function untilCount(waiter, match, n, ms, what) {
  const deadline = Date.now() + ms;
  while (waiter.events.filter(match).length < n) {
    if (Date.now() > deadline) {
      throw new Error(`${what}: got ${waiter.events.filter(match).length} within ${ms} ms, want ${n}`);
    }
    await sleep(20);
  }
}

/** getStreamOpen waits until the client's GET stream answered 200 text/event-stream. */
async function getStreamOpen(h) {
  const open = () => h.wire.some((w) => w.http === 'GET' && w.status === 200 && w.type === 'text/event-stream');
  const deadline = Date.now() + 5000;
  while (!open()) {
    if (Date.now() > deadline) {
      throw new Error(`the client's GET stream is not open: ${JSON.stringify(h.wire.filter((w) => w.http === 'GET'))}`);
    }
    await sleep(20);
  }
}

/** rawModern POSTs a 2026-07-28 request with the required _meta and headers; it returns {status, body}. */
export async function rawModern(url, method, params) {
  const body = {
    jsonrpc: '2.0',
    id: 'raw-1',
    method,
    params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_VERSION, 'io.modelcontextprotocol/clientCapabilities': {} } },
  };
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': method },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  let parsed = {};
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = { unparsed: text };
  }
  return { status: r.status, body: parsed };
}

/** steps returns the named scenarios for h's era. */
export function steps(h) {
  const legacy = h.era === 'legacy';
  const modern = !legacy;
  const c = () => h.client;
  const s = [];
  const add = (name, fn, opts = {}) => s.push({ name, fn, ...opts });

  add(
    'connect',
    async () => {
      await h.connect();
      const want = legacy ? LEGACY_VERSION : MODERN_VERSION;
      eq(h.negotiated(), want, 'negotiated protocol version');
      const info = c().getServerVersion();
      eq(info && info.name, EXPECTED_SERVER, 'server name');
      const caps = c().getServerCapabilities() || {};
      assert(caps.tools && caps.prompts && caps.resources, `server capabilities lack tools/prompts/resources: ${JSON.stringify(caps)}`);
      if (legacy) assert(h.transport.sessionId, 'no Mcp-Session-Id after initialize');
      if (modern) {
        assert(!h.wire.some((w) => w.rpc === 'initialize'), 'a modern client sent initialize');
        assert(h.wire.some((w) => w.rpc === 'server/discover' && w.status === 200), 'no successful server/discover probe');
      }
      return `${h.negotiated()} ${info.name} ${info.version}${legacy ? ` session ${h.transport.sessionId.slice(0, 8)}` : ''}`;
    },
    { required: true },
  );

  add('list_tools', async () => {
    const { tools } = await c().listTools();
    const names = tools.map((t) => t.name);
    includesAll(
      names,
      ['echo', 'sleep', 'touch_resource', 'test_tool_with_progress', 'test_tool_with_logging', 'test_trigger_tool_change', 'test_sampling', 'test_elicitation', 'test_input_required_result_elicitation', 'test_input_required_result_multi_round'],
      'tools/list',
    );
    const echo = tools.find((t) => t.name === 'echo');
    eq(echo.inputSchema && echo.inputSchema.type, 'object', 'echo inputSchema.type');
    assert(echo.inputSchema.properties && echo.inputSchema.properties.text, 'echo inputSchema lacks the text property');
    return `${names.length} tools`;
  });

  add('list_prompts', async () => {
    const { prompts } = await c().listPrompts();
    const names = prompts.map((p) => p.name);
    includesAll(names, ['test_simple_prompt', 'test_prompt_with_arguments'], 'prompts/list');
    const p = prompts.find((x) => x.name === 'test_prompt_with_arguments');
    const args = (p.arguments || []).map((a) => `${a.name}${a.required ? '*' : ''}`);
    eq(args.join(','), 'arg1*,arg2*', 'test_prompt_with_arguments arguments');
    return `${names.length} prompts`;
  });

  add('list_resources', async () => {
    const { resources } = await c().listResources();
    const uris = resources.map((r) => r.uri);
    includesAll(uris, ['test://static-text', 'test://static-binary', WATCHED], 'resources/list');
    return `${uris.length} resources`;
  });

  add('list_resource_templates', async () => {
    const { resourceTemplates } = await c().listResourceTemplates();
    const t = resourceTemplates.map((r) => r.uriTemplate);
    includesAll(t, ['test://template/{id}/data'], 'resources/templates/list');
    return `${t.length} templates`;
  });

  add('call_echo', async () => {
    const text = `hello from ${h.era} ${Date.now()}`;
    const res = await h.call({ name: 'echo', arguments: { text } });
    assert(!res.isError, `echo returned isError: ${JSON.stringify(res)}`);
    eq(textOf(res.content), text, 'echo text');
    return 'echoed';
  });

  add('progress_sleep', async () => {
    const got = [];
    const res = await h.call({ name: 'sleep', arguments: { ms: 450 } }, { onprogress: (p) => got.push(p) });
    eq(textOf(res.content), 'slept', 'sleep result');
    assert(got.length >= 2, `want >= 2 progress notifications, got ${got.length}`);
    for (let i = 1; i < got.length; i++) {
      assert(got[i].progress > got[i - 1].progress, `progress not increasing: ${JSON.stringify(got)}`);
    }
    eq(got[0].total, 450, 'progress total');
    return `${got.length} progress notifications`;
  });

  add('progress_tool', async () => {
    const got = [];
    const res = await h.call({ name: 'test_tool_with_progress', arguments: {} }, { onprogress: (p) => got.push(p) });
    assert(textOf(res.content).startsWith('Progress tool completed'), `unexpected result ${JSON.stringify(res.content)}`);
    eq(got.map((p) => p.progress).join(','), '0,50,100', 'progress values');
    assert(got.every((p) => p.total === 100), `want total 100: ${JSON.stringify(got)}`);
    return 'progress 0,50,100 of 100';
  });

  const isToolLog = (e) => e.logger === 'conformance' && /^Tool (execution|processing)/.test(String(e.data));
  if (legacy) {
    add('logging', async () => {
      await c().setLoggingLevel('info');
      h.ev.log.reset();
      let res = await h.call({ name: 'test_tool_with_logging', arguments: {} });
      eq(textOf(res.content), 'Tool with logging executed successfully', 'tool result');
      await untilCount(h.ev.log, isToolLog, 3, 2000, 'log messages at level info');
      const lv = h.ev.log.events.filter(isToolLog).map((e) => e.level);
      assert(lv.every((l) => l === 'info'), `levels ${lv}`);
      await c().setLoggingLevel('error');
      h.ev.log.reset();
      res = await h.call({ name: 'test_tool_with_logging', arguments: {} });
      await sleep(300);
      eq(h.ev.log.events.filter(isToolLog).length, 0, 'info messages after logging/setLevel error');
      return 'setLevel info: 3 messages; setLevel error: none';
    });
  } else {
    add('logging', async () => {
      h.ev.log.reset();
      let res = await h.call({ name: 'test_tool_with_logging', arguments: {}, _meta: { [LOG_LEVEL_KEY]: 'info' } });
      eq(textOf(res.content), 'Tool with logging executed successfully', 'tool result');
      await untilCount(h.ev.log, isToolLog, 3, 2000, 'log messages with _meta logLevel info');
      h.ev.log.reset();
      await h.call({ name: 'test_tool_with_logging', arguments: {}, _meta: { [LOG_LEVEL_KEY]: 'error' } });
      await h.call({ name: 'test_tool_with_logging', arguments: {} });
      await sleep(300);
      eq(h.ev.log.events.filter(isToolLog).length, 0, 'info messages with logLevel error or without logLevel');
      return '_meta logLevel info: 3 messages; error or absent: none';
    });
    add('logging_setlevel_rejected', async () => {
      // A modern request may not use logging/setLevel: the server must
      // answer 404 + -32601. An SDK may instead refuse the call itself
      // (TS SDK v2 does); then the scenario checks that nothing was sent
      // and puts the same request on the wire with the client's envelope.
      const before = h.wire.length;
      let err;
      try {
        await c().setLoggingLevel('debug');
      } catch (e) {
        err = e;
      }
      assert(err, 'logging/setLevel succeeded on a 2026-07-28 connection');
      const sent = h.wire.slice(before).find((w) => w.rpc === 'logging/setLevel');
      if (sent) {
        eq(sent.status, 404, 'HTTP status of logging/setLevel');
        eq(errCode(err), -32601, 'JSON-RPC error code');
        return 'sent by the client: 404 -32601';
      }
      assert(h.refusedLocally && h.refusedLocally(err), `the client neither sent logging/setLevel nor refused it with its own error: ${err.message}`);
      const r = await rawModern(h.url, 'logging/setLevel', { level: 'debug' });
      eq(r.status, 404, 'HTTP status of a modern logging/setLevel');
      eq(r.body.error && r.body.error.code, -32601, 'JSON-RPC error code of a modern logging/setLevel');
      return `refused by the client (${err.message}); the same request on the wire: 404 -32601`;
    });
  }

  add('read_static', async () => {
    const res = await c().readResource({ uri: 'test://static-text' });
    eq(res.contents.length, 1, 'contents');
    eq(res.contents[0].uri, 'test://static-text', 'uri');
    eq(res.contents[0].text, 'This is the content of the static text resource.', 'text');
    return 'static text read';
  });

  add('read_template', async () => {
    const uri = 'test://template/4711/data';
    const res = await c().readResource({ uri });
    eq(res.contents[0].uri, uri, 'uri');
    const body = JSON.parse(res.contents[0].text);
    eq(body.id, '4711', 'id');
    eq(body.data, 'Data for ID: 4711', 'data');
    return 'template read with id 4711';
  });

  add('resource_updated', async () => {
    h.ev.resourceUpdated.reset();
    let sub;
    if (legacy) {
      await getStreamOpen(h);
      await c().subscribeResource({ uri: WATCHED });
    } else {
      sub = await h.listen({ resourceSubscriptions: [WATCHED] });
      const honored = (sub.honoredFilter && sub.honoredFilter.resourceSubscriptions) || [];
      assert(honored.includes(WATCHED), `ack does not honour the subscription: ${JSON.stringify(sub.honoredFilter)}`);
    }
    const res = await h.call({ name: 'touch_resource', arguments: { uri: WATCHED } });
    eq(textOf(res.content), 'touched', 'touch_resource result');
    await h.ev.resourceUpdated.wait((e) => e.uri === WATCHED, 5000, 'notifications/resources/updated');
    if (legacy) {
      await c().unsubscribeResource({ uri: WATCHED });
      return 'resources/subscribe + GET stream: updated received';
    }
    await sub.close();
    eq(await withTimeout(sub.closed, 3000, 'subscription close'), 'local', 'subscription end');
    return 'subscriptions/listen: updated received';
  });

  add('tools_list_changed', async () => {
    h.ev.toolsChanged.reset();
    let sub;
    if (legacy) {
      await getStreamOpen(h);
    } else {
      sub = await h.listen({ toolsListChanged: true });
      eq(sub.honoredFilter && sub.honoredFilter.toolsListChanged, true, 'ack toolsListChanged');
    }
    const res = await h.call({ name: 'test_trigger_tool_change', arguments: {} });
    eq(textOf(res.content), 'Tool list changed', 'trigger result');
    await h.ev.toolsChanged.wait(() => true, 5000, 'notifications/tools/list_changed');
    const { tools } = await c().listTools();
    assert(tools.some((t) => t.name === '__transient_tool_for_list_changed'), 'the changed list lacks the new tool');
    if (sub) await sub.close();
    return legacy ? 'list_changed on the GET stream' : 'list_changed on subscriptions/listen';
  });

  add(
    'cancel_sleep',
    async () => {
      const ac = new AbortController();
      let firstProgress;
      const progressed = new Promise((r) => (firstProgress = r));
      const t0 = Date.now();
      const w0 = h.wire.length;
      const p = h.call({ name: 'sleep', arguments: { ms: 5000 } }, { signal: ac.signal, onprogress: () => firstProgress() });
      p.catch(() => {});
      await withTimeout(progressed, 3000, 'first progress of sleep 5000');
      ac.abort(new Error('cancelled by the test'));
      let err;
      try {
        await p;
      } catch (e) {
        err = e;
      }
      const took = Date.now() - t0;
      assert(err, 'the cancelled sleep resolved instead of rejecting');
      assert(took < 4000, `the cancelled call took ${took} ms`);
      const res = await h.call({ name: 'echo', arguments: { text: 'after cancel' } });
      eq(textOf(res.content), 'after cancel', 'follow-up echo');
      // The SDKs send notifications/cancelled without waiting for the
      // answer: give the POST time to be answered.
      const posts = () => h.wire.slice(w0).filter((w) => w.rpc === 'notifications/cancelled');
      const settled = Date.now() + 3000;
      while ((posts().some((w) => w.status === 0) || (legacy && posts().length === 0)) && Date.now() < settled) await sleep(20);
      const cancels = posts().map((w) => w.status);
      // Legacy: a disconnect is no cancellation, the client must POST
      // notifications/cancelled, and the server must accept it (202).
      // Modern: closing the response stream is the cancellation; a
      // notifications/cancelled POST some clients add must get 202 too.
      if (legacy) assert(cancels.length > 0, 'the client sent no notifications/cancelled');
      assert(cancels.every((st) => st === 202), `notifications/cancelled answered ${JSON.stringify(cancels)}, want 202`);
      return `aborted after ${took} ms; follow-up echo ok; notifications/cancelled POSTs: ${JSON.stringify(cancels)}`;
    },
    { timeoutMs: 12000 },
  );

  add('prompt_with_args', async () => {
    const res = await c().getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'alpha', arg2: 'beta' } });
    eq(res.messages.length, 1, 'messages');
    eq(res.messages[0].content.text, "Prompt with arguments: arg1='alpha', arg2='beta'", 'prompt text');
    return 'prompt rendered';
  });

  add('completion', async () => {
    const ref = { type: 'ref/prompt', name: 'test_prompt_with_arguments' };
    const all = await c().complete({ ref, argument: { name: 'arg1', value: 'test' } });
    eq(all.completion.values.join(','), 'testValue1,testValue2,test-default', 'completion of "test"');
    const some = await c().complete({ ref, argument: { name: 'arg1', value: 'testV' } });
    eq(some.completion.values.join(','), 'testValue1,testValue2', 'completion of "testV"');
    return 'values completed';
  });

  if (legacy) {
    add('ping', async () => {
      const res = await c().ping();
      assert(res && typeof res === 'object', `ping result ${JSON.stringify(res)}`);
      return 'pong';
    });

    add('sampling', async () => {
      const n = seen.sampling;
      const res = await h.call({ name: 'test_sampling', arguments: { prompt: 'say hi' } });
      eq(seen.sampling, n + 1, 'sampling handler calls');
      eq(textOf(res.content), 'LLM response: sampled: say hi', 'sampling result');
      return 'sampling/createMessage answered by the client handler';
    });

    add('elicitation', async () => {
      const n = seen.elicitation;
      const res = await h.call({ name: 'test_elicitation', arguments: { message: 'who are you?' } });
      eq(seen.elicitation, n + 1, 'elicitation handler calls');
      const t = textOf(res.content);
      assert(t.startsWith('User response: action=accept'), `elicitation result ${t}`);
      assert(t.includes('"username":"ada"') && t.includes('"email":"ada@example.com"'), `elicitation content missing: ${t}`);
      return 'elicitation/create answered by the client handler';
    });

    add('session_delete', async () => {
      const sid = h.transport.sessionId;
      assert(sid, 'no session id');
      await h.transport.terminateSession();
      const del = h.wire.filter((w) => w.http === 'DELETE').pop();
      assert(del, 'terminateSession sent no DELETE');
      eq(del.status, 204, 'DELETE status');
      const r = await fetch(h.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY_VERSION },
        body: JSON.stringify({ jsonrpc: '2.0', id: 999, method: 'ping' }),
      });
      await r.body?.cancel();
      eq(r.status, 404, 'status of a request on the deleted session');
      return 'DELETE 204, then 404';
    });
  } else {
    add('discover', async () => {
      const d = await c().discover();
      assert((d.supportedVersions || []).includes(MODERN_VERSION), `supportedVersions ${JSON.stringify(d.supportedVersions)}`);
      assert(d.capabilities && d.capabilities.tools, `capabilities ${JSON.stringify(d.capabilities)}`);
      assert(typeof d.ttlMs === 'number' && ['public', 'private'].includes(d.cacheScope), `discover lacks ttlMs/cacheScope: ${JSON.stringify(d)}`);
      return `supportedVersions ${d.supportedVersions.join(',')}`;
    });

    const mrtr = (name, tool, check, want) =>
      add(name, async () => {
        const before = { ...seen };
        const calls = h.wire.filter((w) => w.rpc === 'tools/call').length;
        const res = await h.call({ name: tool, arguments: {} });
        const t = textOf(res.content);
        check(t);
        for (const [k, n] of Object.entries(want)) eq(seen[k] - before[k], n, `${k} handler calls`);
        const rounds = h.wire.filter((w) => w.rpc === 'tools/call').length - calls;
        assert(rounds >= 2, `want >= 2 tools/call POSTs (input_required then retry), got ${rounds}`);
        assert(!h.wire.some((w) => w.rpc === 'response'), 'the client POSTed a JSON-RPC response in 2026-07-28');
        return `${t} (${rounds} rounds)`;
      });
    mrtr('mrtr_elicitation', 'test_input_required_result_elicitation', (t) => eq(t, 'Hello, Ada!', 'result'), { elicitation: 1 });
    mrtr('mrtr_sampling', 'test_input_required_result_sampling', (t) => eq(t, 'The model answered: Paris', 'result'), { sampling: 1 });
    mrtr('mrtr_list_roots', 'test_input_required_result_list_roots', (t) => eq(t, `Client roots: ${ROOT_URI}`, 'result'), { roots: 1 });
    mrtr(
      'mrtr_multi_round',
      'test_input_required_result_multi_round',
      (t) => assert(t.startsWith('Completed both rounds:') && t.includes('Ada') && t.includes('teal'), `result ${t}`),
      { elicitation: 2 },
    );
    mrtr(
      'mrtr_multiple_inputs',
      'test_input_required_result_multiple_inputs',
      (t) => assert(t.startsWith('Got all inputs:') && t.includes('Ada') && t.includes('sampled: Generate a greeting') && t.includes(ROOT_URI), `result ${t}`),
      { elicitation: 1, sampling: 1, roots: 1 },
    );

    add('auto_negotiation', async () => {
      const got = await h.autoProbe();
      eq(got.version, MODERN_VERSION, 'auto-mode negotiated version');
      eq(got.era, 'modern', 'auto-mode era');
      eq(got.probe, 200, 'HTTP status of the server/discover probe');
      assert(!got.initialized, 'the auto-mode client fell back to initialize');
      return `auto chose ${got.version}`;
    });
  }
  return s;
}
