/**
 * A script that throws, through `uhlp dev` (process driver) over real HTTP, in
 * JavaScript and in Python: the client's answer keeps its shape with no stack,
 * and the core's log has one warn line with the request id, app, component,
 * code, message and where the script threw (its own files, relative to the app
 * directory, no host path). With UHLP_DEV_ERROR_STACKS=true the body carries
 * the stack as `details.stack`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFixture, startUhlpDev, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** The core's JSON log lines (stderr) so far. */
function logLines(core: UhlpProcess): LogLine[] {
  return core
    .stderr()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

async function get(core: UhlpProcess, route: string): Promise<{ status: number; json: any }> {
  const response = await fetch(`${core.url}/errs${route}`);
  return { status: response.status, json: await response.json() };
}

/** The warn line (pino level 40) of one request. */
async function warnOf(core: UhlpProcess, requestId: string): Promise<LogLine> {
  let found: LogLine | undefined;
  await waitFor(() => (found = logLines(core).find((line) => line.requestId === requestId && line.level === 40)) !== undefined, {
    timeoutMs: 5000,
    what: `the warn line of ${requestId}`,
  });
  return found!;
}

describe('a script that throws, through uhlp dev', () => {
  let dir: string;
  let core: UhlpProcess;

  beforeAll(async () => {
    dir = copyFixture('script-errors');
    core = await startUhlpDev(dir, [], 60_000, undefined, { UHLP_LOG_LEVEL: 'warn' });
  }, 90_000);
  afterAll(async () => {
    await core?.stop();
  });

  it('answers a JavaScript exception without a stack, and logs it at warn with the script path and line', async () => {
    const { status, json } = await get(core, '/click');
    expect(status).toBe(500);
    expect(json).toEqual({ code: 'UHLP_SCRIPT_EXCEPTION', message: 'clickz is not defined', requestId: expect.any(String) });
    const line = await warnOf(core, json.requestId);
    expect(line).toMatchObject({ app: 'errs', component: 'click', code: 'UHLP_SCRIPT_EXCEPTION', status: 500, msg: 'UHLP_SCRIPT_EXCEPTION: clickz is not defined' });
    expect(line['stack']).toBe('at track (lib/track.mjs:2:3)\nat click (scripts/click.mjs:5:10)');
    expect(JSON.stringify(line)).not.toContain(dir);
  });

  it('answers a Python exception without a traceback, and logs it at warn with the script path and line', async () => {
    const { status, json } = await get(core, '/lookup');
    expect(status).toBe(500);
    expect(json).toEqual({ code: 'UHLP_SCRIPT_EXCEPTION', message: "KeyError: 'URL'", requestId: expect.any(String) });
    const line = await warnOf(core, json.requestId);
    expect(line).toMatchObject({ app: 'errs', component: 'lookup', code: 'UHLP_SCRIPT_EXCEPTION', status: 500, msg: "UHLP_SCRIPT_EXCEPTION: KeyError: 'URL'" });
    expect(line['stack']).toMatch(/^at url_of \(scripts\/lookup\.py:2:\d+\)\nat lookup \(scripts\/lookup\.py:6:\d+\)$/);
    expect(JSON.stringify(line)).not.toContain(dir);
  });

  it("does not log an app's own 4xx error", async () => {
    const { status, json } = await get(core, '/gone');
    expect(status).toBe(410);
    expect(json).toEqual({ code: 'LINK_GONE', message: 'no such link', requestId: expect.any(String) });
    // The exception's line of a later request is there: the 410 had its chance to be logged before it.
    const after = (await get(core, '/click')).json.requestId as string;
    await warnOf(core, after);
    expect(logLines(core).some((line) => line.requestId === json.requestId)).toBe(false);
  });
});

describe('a script that throws, through uhlp dev with UHLP_DEV_ERROR_STACKS=true', () => {
  let core: UhlpProcess;

  beforeAll(async () => {
    core = await startUhlpDev(copyFixture('script-errors'), [], 60_000, undefined, { UHLP_LOG_LEVEL: 'warn', UHLP_DEV_ERROR_STACKS: 'true' });
  }, 90_000);
  afterAll(async () => {
    await core?.stop();
  });

  it("shows the client the stack in the error body's details.stack", async () => {
    const js = await get(core, '/click');
    expect(js.json).toEqual({
      code: 'UHLP_SCRIPT_EXCEPTION',
      message: 'clickz is not defined',
      requestId: expect.any(String),
      details: { stack: 'at track (lib/track.mjs:2:3)\nat click (scripts/click.mjs:5:10)' },
    });
    const py = await get(core, '/lookup');
    expect(py.json.details.stack).toMatch(/^at url_of \(scripts\/lookup\.py:2:\d+\)/);
  });
});
