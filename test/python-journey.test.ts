/**
 * The python runner through `uhlp dev` (process driver, bubblewrap), over real HTTP:
 * every result type as the client sees it, the core's tools from Python within the
 * app's capabilities, the other sources delivering to a Python component, and
 * sandboxes that hang, exit or fill their memory replaced as Node's are.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from './helpers/wait-for.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from './helpers/uhlp-process.js';

let core: UhlpProcess;

beforeAll(async () => {
  const dir = copyFixture('python');
  // The core reads this from its environment; uhlp dev inherits the test's.
  process.env.UHLP_LLM_SCRIPT_FILE = path.join(dir, 'llm-answers.yaml');
  try {
    core = await startUhlpDev(dir);
  } finally {
    delete process.env.UHLP_LLM_SCRIPT_FILE;
  }
});

afterAll(async () => {
  await core?.stop();
});

async function call(route: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  const response = await fetch(`${core.url}/py${route}`, init);
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

describe('a Python app through uhlp dev', () => {
  it('answers an HTTP response exactly, and passes the event and the context', async () => {
    const greet = await call('/greet/ada');
    expect(greet.status).toBe(201);
    expect(greet.headers.get('x-greeting')).toBe('Hello');
    expect(greet.text).toBe('Hello ada');
    const echo = await call('/echo/x%20y?q=1&q=2', { method: 'POST', headers: { 'content-type': 'application/json', 'x-user': 'ada' }, body: '{"a":1}' });
    expect(echo.status).toBe(200);
    expect(echo.json).toMatchObject({
      appId: 'pyshop',
      componentId: 'echo',
      event: { source: 'http', httpDetails: { method: 'POST', pathParameters: { p: 'x y' }, queryParameters: { q: ['1', '2'] }, body: '{"a":1}', bodyEncoding: 'utf8' } },
    });
    expect(echo.json.event.httpDetails.headers['x-user']).toBe('ada');
    expect((await call('/default')).json).toEqual({ handler: true });
  });

  it('maps an exception to 500 without a traceback, an app error to its status, and a result that is no JSON to 500', async () => {
    const failed = await call('/fail');
    expect(failed.status).toBe(500);
    expect(failed.json).toMatchObject({ code: 'UHLP_SCRIPT_EXCEPTION', message: 'TypeError: the script broke' });
    expect(failed.text).not.toMatch(/Traceback|File "/);
    const refused = await call('/refuse');
    expect(refused.status).toBe(409);
    expect(refused.json).toMatchObject({ code: 'CONFLICT', message: 'already exists', details: { id: 7 } });
    const bad = await call('/bad');
    expect(bad.status).toBe(500);
    expect(bad.json).toMatchObject({ code: 'UHLP_SCRIPT_BAD_RESULT' });
  });

  it("calls the core's tools from Python: kv, configuration, definition files, the LLM, queues, triggers and callbacks", async () => {
    const first = await call('/tools', { method: 'POST', body: '{"word":"ada"}' });
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({
      visits: 1,
      greeting: 'Hello',
      note: 'notes of the python shop',
      llm: 'Hello from the scripted model.',
      queued: true,
      callback: expect.stringMatching(/^\/_uhlp\/callbacks\//),
    });
    expect((await call('/tools', { method: 'POST', body: '{"word":"bob"}' })).json.visits).toBe(2);
    // What the script published reached the Python component of each source.
    await waitFor(async () => (await call('/log/orders')).json?.length === 2, { what: 'two queue deliveries' });
    expect((await call('/log/orders')).json).toEqual(
      expect.arrayContaining([expect.objectContaining({ source: 'queue', payload: { word: 'ada' } }), expect.objectContaining({ source: 'queue', payload: { word: 'bob' } })]),
    );
    await waitFor(async () => (await call('/log/order.created')).json?.length === 2, { what: 'two trigger deliveries' });
    expect((await call('/log/order.created')).json[0]).toMatchObject({ source: 'trigger', payload: { word: expect.any(String) } });
    // The callback URL it made runs the component once.
    const paid = await fetch(`${core.url}${first.json.callback}`, { method: 'POST', body: '{"ok":true}' });
    expect(paid.status).toBeLessThan(300);
    await waitFor(async () => (await call('/log/paid')).json?.length === 1, { what: 'the callback delivery' });
    expect((await call('/log/paid')).json[0]).toMatchObject({ source: 'callback', correlation: 'ada' });
  });

  it("refuses what the app's capabilities do not grant, with the core's code and status", async () => {
    const denied = await call('/denied');
    expect(denied.status).toBe(200);
    expect(denied.json).toEqual({
      'core.kv.get': { code: 'UHLP_CAPABILITY_DENIED', status: 403, capability: 'kv', rule: 'prefixes' },
      'core.linux.executeCommand': { code: 'UHLP_CAPABILITY_DENIED', status: 403, capability: 'shell', rule: 'absent' },
      'core.trigger.emit': { code: 'UHLP_CAPABILITY_DENIED', status: 403, capability: 'trigger', rule: expect.any(String) },
    });
    // A refusal the script does not catch is its answer.
    const granted = await call('/grant');
    expect(granted.status).toBe(403);
    expect(granted.json).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', details: { rule: 'protected' } });
  });

  it('answers 504 for a script that never returns, 502 for one that exits or fills its memory, and replaces the sandbox', async () => {
    const started = Date.now();
    const hang = await call('/hang');
    expect(hang.status).toBe(504);
    expect(hang.json.code).toBe('UHLP_SANDBOX_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(4000);
    await waitFor(async () => (await call('/pid')).status === 200, { what: 'fragile pool serving after the timeout' });
    const before = (await call('/pid')).json.pid;
    const exit = await call('/exit');
    expect(exit.status).toBe(502);
    expect(exit.json.code).toBe('UHLP_SANDBOX_DIED');
    await waitFor(async () => (await call('/pid')).status === 200, { what: 'fragile pool serving after the exit' });
    const hog = await call('/hog');
    expect(hog.status).toBe(502);
    expect(hog.json.code).toBe('UHLP_SANDBOX_DIED');
    await waitFor(async () => (await call('/pid')).status === 200, { what: 'fragile pool serving after the memory exhaustion' });
    // Every one of them took its sandbox down: as PID 1 of its namespace each new runner is 1 again, so
    // the sandboxes are counted from the core's metrics instead. A dropped connection is the pool's `crash`
    // unless the runner's exit says more: the memory exhaustion is a heap limit, as for Node's runners.
    expect(before).toBe(1);
    const destroyed = async (cause: string): Promise<number> => {
      const metrics = await (await fetch(`${core.url}/metrics`)).text();
      return Number(new RegExp(`uhlp_sandbox_destroyed_total\\{app="pyshop",pool="fragile",cause="${cause}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0);
    };
    // Counted once each is gone, which may be a moment after its successor serves.
    await waitFor(async () => (await destroyed('heap-limit')) === 1, { what: 'the memory exhaustion counted as a heap limit' });
    expect(await destroyed('timeout')).toBe(1);
    expect(await destroyed('crash')).toBe(1);
  });
});
