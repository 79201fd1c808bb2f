/**
 * cs-js components end to end: `uhlp dev` on the Redis store with real
 * sandboxes (the csjs runner in bubblewrap with --allow-addons; JIT scripts in
 * the jit-runner without it). An agent publishes over MCP, the CLI publishes
 * and moves aliases, HTTP routes reach the bundles, kv and logs go through
 * the core, the SSRF guard refuses a private address behind an allowed name,
 * a bundle publishes onto the app's queue whose route runs another bundle,
 * an endless loop is stopped with the runner still serving, `uhlp fn run`
 * answers what the served component answers, and a JIT script cannot load a
 * native addon it wrote.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisRuntimeStore } from '../src/state/redis-runtime-store.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './helpers/redis-url.js';
import { copyFixture, REPO_ROOT, startUhlpDev, UHLP_BIN, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';

const run = promisify(execFile);
const FUNCTIONS = path.join(REPO_ROOT, 'test', 'fixtures', 'csjs', 'functions');
const prefix = uniqueKeyPrefix('csjs');
const cliEnv = { ...process.env, UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: prefix };
let core: UhlpProcess;

async function uhlp(...args: string[]): Promise<{ code: number; json: any; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [UHLP_BIN, ...args], { env: cliEnv });
    return { code: 0, json: JSON.parse(stdout), stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, json: failed.stdout ? JSON.parse(failed.stdout) : undefined, stderr: failed.stderr };
  }
}

async function call(pathname: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  const response = await fetch(`${core.url}/pay${pathname}`, init);
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

const files = (name: string) => ({
  functionJs: readFileSync(path.join(FUNCTIONS, name, 'function.js'), 'utf8'),
  manifestJson: readFileSync(path.join(FUNCTIONS, name, 'manifest.json'), 'utf8'),
});

beforeAll(async () => {
  const defs = copyFixture('csjs-app');
  mkdirSync(path.join(defs, 'apps', 'pay', 'files'));
  // A real addon for the escape attempt: the one the csjs runner itself loads.
  copyFileSync(
    path.join(REPO_ROOT, 'node_modules', 'isolated-vm', 'prebuilds', `${process.platform}-${process.arch}`, `isolated-vm.abi${process.versions.modules}.glibc.node`),
    path.join(defs, 'apps', 'pay', 'files', 'addon.node'),
  );
  core = await startUhlpDev(defs, ['--state', TEST_REDIS_URL], 60_000, undefined, { UHLP_STATE_PREFIX: prefix });
}, 90_000);

afterAll(async () => {
  await core?.stop();
  const store = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: prefix });
  await store.deleteAllKeys();
  await store.close();
});

describe('cs-js components', () => {
  it('answers 404 UHLP_FN_NOT_FOUND for a route whose function has no version yet', async () => {
    const answer = await call('/reconcile');
    expect(answer.status).toBe(404);
    expect(answer.json.code).toBe('UHLP_FN_NOT_FOUND');
  });

  it('runs what an agent published over MCP, with kv through the core and logs per activation', async () => {
    const published = await call('/publish', { method: 'POST', body: JSON.stringify({ function: 'payments/reconcile', alias: 'prod', ...files('reconcile-v1') }) });
    expect(published.status).toBe(200);
    expect(published.json).toMatchObject({ function: 'payments/reconcile', version: 1, created: true, alias: 'prod' });

    const first = await call('/reconcile');
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ n: 1, release: 'v1', ref: { alias: 'prod' } });
    expect(first.headers.get('x-version')).toBe('1');
    expect((await call('/reconcile')).json.n).toBe(2);

    const logs = await uhlp('fn', 'logs', first.headers.get('x-request-id')!);
    expect(logs.code).toBe(0);
    expect(logs.json.lines).toEqual([expect.objectContaining({ level: 'info', msg: '{"reconciled":1,"version":1}' })]);
  });

  it('publishes from the CLI, lists versions, and moves the alias the route follows', async () => {
    const dryRun = await uhlp('fn', 'publish', path.join(FUNCTIONS, 'reconcile-v2'), '--dry-run');
    expect(dryRun.json).toMatchObject({ dryRun: true, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const published = await uhlp('fn', 'publish', path.join(FUNCTIONS, 'reconcile-v2'), '--app', 'pay', '--function', 'payments/reconcile');
    expect(published.json).toMatchObject({ version: 2, sha256: dryRun.json.sha256, created: true });
    expect((await call('/reconcile')).json.release).toBe('v1');

    expect((await uhlp('fn', 'alias', 'set', '--app', 'pay', '--function', 'payments/reconcile', 'prod', '2')).code).toBe(0);
    const moved = await call('/reconcile');
    expect(moved.json.release).toBe('v2');
    expect(moved.headers.get('x-version')).toBe('2');

    const versions = await uhlp('fn', 'versions', '--app', 'pay', '--function', 'payments/reconcile');
    expect(versions.json.versions.map((v: { version: number }) => v.version)).toEqual([1, 2]);
    expect(versions.json.aliases).toEqual({ prod: 2 });
    const got = await uhlp('fn', 'get', dryRun.json.sha256, '--app', 'pay');
    expect(got.json.functionJs).toContain("release: 'v2'");
    expect((await uhlp('fn', 'get', dryRun.json.sha256, '--app', 'other')).stderr).toContain('UHLP_FN_NOT_FOUND');
  });

  it('gives the same answer through `uhlp fn run` as the served component, for the same bundle and event', async () => {
    expect((await uhlp('fn', 'publish', path.join(FUNCTIONS, 'echo'), '--app', 'pay', '--function', 'payments/echo')).code).toBe(0);
    const served = await call('/echo', { method: 'POST', body: JSON.stringify({ a: 2, b: 3 }) });
    expect(served.status).toBe(200);
    expect(served.json.sum).toBe(5);
    const eventFile = path.join(core.dataDir, 'event.json');
    writeFileSync(eventFile, JSON.stringify(served.json.event));
    const local = await uhlp('fn', 'run', path.join(FUNCTIONS, 'echo'), '--event', eventFile, '--app', 'pay');
    expect(local.code).toBe(0);
    expect(local.json.result).toEqual({ resultType: 'httpResponse', data: { statusCode: 200, headers: { 'content-type': 'application/json' }, body: served.text, bodyEncoding: 'utf8' } });
  });

  it('keeps kv in memory for `uhlp fn run` by default, and in Redis with --kv-endpoint', async () => {
    const eventFile = path.join(core.dataDir, 'empty-event.json');
    writeFileSync(eventFile, '{}');
    const counted = async (...extra: string[]): Promise<number> => {
      const local = await uhlp('fn', 'run', path.join(FUNCTIONS, 'reconcile-v1'), '--event', eventFile, '--app', 'kvlocal', ...extra);
      expect(local.code).toBe(0);
      return JSON.parse(local.json.result.data.body).n;
    };
    expect([await counted(), await counted()]).toEqual([1, 1]);
    expect([await counted('--kv-endpoint', TEST_REDIS_URL), await counted('--kv-endpoint', TEST_REDIS_URL)]).toEqual([1, 2]);
    expect((await uhlp('fn', 'run', path.join(FUNCTIONS, 'reconcile-v1'), '--event', eventFile, '--kv-endpoint', 'http://x')).stderr).toContain('UHLP_CONFIG_INVALID');
  });

  it('publishes onto a queue of the app with cs.codeq.publish, whose route reaches a cs component', async () => {
    for (const name of ['enqueue', 'consume', 'consumed']) {
      expect((await uhlp('fn', 'publish', path.join(FUNCTIONS, name), '--app', 'pay', '--function', `payments/${name}`)).code).toBe(0);
    }
    const published = await call('/enqueue', { method: 'POST', body: JSON.stringify({ order: 42 }) });
    expect(published.status).toBe(200);
    expect(published.json.messageId).toEqual(expect.any(String));
    let consumed: any;
    await waitFor(
      async () => {
        consumed = (await call('/consumed')).json;
        return consumed?.value !== null && consumed?.value !== undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, what: 'the queue route to run the consume bundle' },
    );
    expect(consumed.value).toEqual({ payload: { order: 42 }, trigger: 'queue' });
  });

  it('refuses a fetch of an allowed name that resolves to a private address', async () => {
    expect((await uhlp('fn', 'publish', path.join(FUNCTIONS, 'fetcher'), '--app', 'pay', '--function', 'payments/fetcher')).code).toBe(0);
    const refused = await call('/fetcher');
    expect(refused.status).toBe(403);
    expect(refused.json.code).toBe('UHLP_WEB_ADDRESS_NOT_ALLOWED');
  });

  it('stops an endless loop at its deadline and keeps serving', async () => {
    expect((await uhlp('fn', 'publish', path.join(FUNCTIONS, 'spin'), '--app', 'pay', '--function', 'payments/spin')).code).toBe(0);
    const stopped = await call('/spin');
    expect(stopped.status).toBe(504);
    expect(stopped.json.code).toBe('UHLP_CS_TIMEOUT');
    expect((await call('/reconcile')).status).toBe(200);
  });

  it('keeps a JIT script from loading a native addon it wrote', async () => {
    const answer = await call('/escape');
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ dlopen: 'ERR_DLOPEN_DISABLED', require: 'ERR_DLOPEN_DISABLED' });
  });

  it('refuses bad CLI input with a stable code', async () => {
    expect((await uhlp('fn', 'publish', path.join(FUNCTIONS, 'echo'), '--app', 'pay', '--function', 'Payments/Echo')).stderr).toContain('UHLP_FN_REF_INVALID');
    expect((await uhlp('fn', 'logs', 'no-such-activation')).stderr).toContain('UHLP_FN_ACTIVATION_NOT_FOUND');
    expect((await uhlp('fn', 'alias', 'set', '--app', 'pay', '--function', 'payments/echo', 'prod', '9')).stderr).toContain('UHLP_FN_NOT_FOUND');
  });
});
