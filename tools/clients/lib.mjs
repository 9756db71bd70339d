// Shared plumbing for the real-client scripts in tools/clients: package
// resolution from the installed client tree, the scenario runner (one JSON
// line per scenario, each step bounded by a timeout), and small helpers.
//
// The packages are installed by `make deps` (npm ci of tools/clients'
// lockfile) into .cache/clients/node_modules. ES module imports do not
// honour NODE_PATH, so this module registers a resolve hook that resolves
// the clients' bare specifiers from that tree; scripts then load the
// packages with dynamic import() after importing this file.
// MCPFLEET_CLIENTS_DIR overrides the tree's location (the directory that
// holds node_modules).
import module from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const clientsDir = resolve(process.env.MCPFLEET_CLIENTS_DIR || join(here, '..', '..', '.cache', 'clients'));
const nodeModules = join(clientsDir, 'node_modules');
const parentURL = pathToFileURL(join(clientsDir, 'package.json')).href;

const wanted = ['@modelcontextprotocol/'];
module.registerHooks({
  resolve(specifier, context, nextResolve) {
    if (wanted.some((p) => specifier.startsWith(p))) {
      return nextResolve(specifier, { ...context, parentURL });
    }
    return nextResolve(specifier, context);
  },
});

/** pkgVersion returns the installed version of a package, failing loudly when it is missing. */
export function pkgVersion(name) {
  const p = join(nodeModules, name, 'package.json');
  if (!existsSync(p)) {
    throw new Error(`${name} is not installed under ${nodeModules}: run make deps`);
  }
  return JSON.parse(readFileSync(p, 'utf8')).version;
}

/** usage parses `<url> <era>` from argv, checking era against allowed. */
export function usage(script, allowed) {
  const [url, era] = process.argv.slice(2);
  if (!url || !allowed.includes(era)) {
    console.error(`usage: node ${script} <server-url> <${allowed.join('|')}>`);
    process.exit(2);
  }
  return { url, era };
}

export class StepTimeout extends Error {}

/** withTimeout rejects with StepTimeout when p has not settled after ms. */
export function withTimeout(p, ms, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new StepTimeout(`${what}: no outcome within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** assert throws with msg when cond is false. */
export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

/** eq throws unless got === want. */
export function eq(got, want, what) {
  if (got !== want) throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

/** textOf joins the text blocks of a tool result or prompt message list. */
export function textOf(content) {
  return (content || []).filter((c) => c && c.type === 'text').map((c) => c.text).join('');
}

/** sleep waits ms milliseconds. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Waiter collects events and lets a step wait for the first one that
 * matches, including events that arrived before the wait started (after the
 * last reset).
 */
export class Waiter {
  constructor() {
    this.events = [];
    this.waiting = [];
  }
  push(ev) {
    this.events.push(ev);
    for (const w of [...this.waiting]) {
      if (w.match(ev)) {
        this.waiting.splice(this.waiting.indexOf(w), 1);
        w.resolve(ev);
      }
    }
  }
  reset() {
    this.events = [];
  }
  wait(match, ms, what) {
    const got = this.events.find(match);
    if (got) return Promise.resolve(got);
    return withTimeout(new Promise((resolve) => this.waiting.push({ match, resolve })), ms, what);
  }
}

/** errCode returns the JSON-RPC error code carried by an SDK error, if any. */
export function errCode(e) {
  if (!e || typeof e !== 'object') return undefined;
  if (typeof e.code === 'number') return e.code;
  if (e.data && typeof e.data.code === 'number') return e.data.code;
  return undefined;
}

/** describe renders an error for a detail string. */
export function describe(e) {
  if (e instanceof Error) {
    const code = errCode(e);
    return `${e.name}${code !== undefined ? `(${code})` : ''}: ${e.message}`;
  }
  return String(e);
}

/**
 * run executes the steps in order and prints one JSON line per step:
 * {"client","version","era","scenario","ok","detail"}. A step is
 * {name, fn, timeoutMs?}; fn returns a detail string or throws. A step
 * marked required (connect) that fails makes the rest fail without
 * running. The process exits 0 only if every step passed.
 */
export async function run({ client, version, era, steps, defaultTimeoutMs = 10000, cleanup }) {
  let failed = 0;
  let blocked = '';
  for (const step of steps) {
    let ok = false;
    let detail = '';
    const started = Date.now();
    if (blocked) {
      detail = `not run: ${blocked}`;
    } else {
      try {
        const out = await withTimeout(Promise.resolve().then(step.fn), step.timeoutMs || defaultTimeoutMs, step.name);
        ok = true;
        detail = out === undefined ? '' : String(out);
      } catch (e) {
        detail = describe(e);
        if (step.required) blocked = `${step.name} failed`;
      }
    }
    if (!ok) failed++;
    const line = { client, version, era, scenario: step.name, ok, detail, ms: Date.now() - started };
    process.stdout.write(JSON.stringify(line) + '\n');
  }
  if (cleanup) {
    try {
      await withTimeout(Promise.resolve().then(cleanup), 5000, 'cleanup');
    } catch (e) {
      process.stderr.write(`cleanup: ${describe(e)}\n`);
    }
  }
  process.exit(failed === 0 ? 0 : 1);
}

// A client error that nobody awaited must not kill the run silently.
process.on('unhandledRejection', (e) => {
  process.stderr.write(`unhandled rejection: ${describe(e)}\n`);
});
