/**
 * App secrets through `uhlp dev`, on a driver the caller names: a script calls
 * an API on loopback that needs a bearer token, which the core adds at egress
 * from the app's section of the secrets file. The script tries to see the token
 * (its context, environment, files, the tool's answer from an API that echoes
 * it, a redirect to another host it controls) and fails each time; another app
 * naming the secret does not load; a canary value is searched for in every log
 * line, ledger file, trace (the run is traced into the test Jaeger), console API
 * answer and error body of the run; a rotated
 * value is in use within the stated bound, in the same warm sandbox, and the
 * value it replaced is still scrubbed from a turn that read it before; a
 * streamed answer holding a value split across two chunks comes out scrubbed;
 * an app refused for a missing secret loads once the secret is there.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET_FILE_INTERVAL_MS } from '../../src/secrets/watched-secret-file.js';
import { jaegerEnv, newTraceparent, waitForTrace, type JaegerEnv } from './jaeger.js';
import { reply, startOpenAiTestServer, type OpenAiTestServer } from './openai-test-server.js';
import { copyFixture, startUhlpDev, waitUntilReady, type UhlpProcess } from './uhlp-process.js';

export interface SecretsSuiteOptions {
  readonly driver: 'process' | 'docker';
  /** Runs first (Docker: the engine answers and the images are built); answers extra core arguments and environment. */
  readonly before?: () => Promise<{ args?: string[]; env?: Record<string, string> } | unknown>;
}

/** The bound docs/security.md states for a rotated value to be in use: the file is checked every 2 s. */
const ROTATION_BOUND_MS = 10_000;

export function describeAppSecrets(options: SecretsSuiteOptions): void {
  describe(`app secrets on the ${options.driver} driver`, () => {
    let core: UhlpProcess;
    let api: http.Server;
    let other: http.Server;
    let llm: OpenAiTestServer;
    let apiUrl = '';
    let secretsFile = '';
    /** Every value the run ever used: none may appear anywhere the platform writes or answers. */
    const canaries = [`canary-${randomUUID()}`];
    let accepted = canaries[0]!;
    const reachedOther: Array<string | undefined> = [];
    /** Every answer body the test got, errors included, searched at the end. */
    const bodies: string[] = [];
    /** The run's traces go to the test Jaeger under a service name of their own, searched at the end. */
    let jaeger: JaegerEnv;
    const service = `uhlp-secrets-${options.driver}-${randomUUID().slice(0, 8)}`;
    const crash = newTraceparent();

    /** `thiefToken`: the other app's own secret of the same name, in its own section. */
    const writeSecrets = (token: string, thiefToken?: string): void => {
      // Written beside and renamed into place, as an editor or a mounted Secret does.
      const thief = thiefToken !== undefined ? `  thief:\n    weather-key:\n      token: ${thiefToken}\n` : '';
      writeFileSync(`${secretsFile}.new`, `apps:\n  weather:\n    weather-key:\n      token: ${token}\n${thief}`);
      renameSync(`${secretsFile}.new`, secretsFile);
    };

    const post = async (route: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> => {
      const response = await fetch(`${core.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ api: apiUrl, ...extra }) });
      const text = await response.text();
      bodies.push(text);
      return { status: response.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), headers: response.headers };
    };

    beforeAll(async () => {
      const extra = ((await options.before?.()) ?? {}) as { args?: string[]; env?: Record<string, string> };
      jaeger = jaegerEnv();
      llm = await startOpenAiTestServer();
      other = http.createServer((req, res) => {
        reachedOther.push(req.headers.authorization);
        res.end('the other host');
      });
      await new Promise<void>((resolve) => other.listen(0, '127.0.0.2', resolve));
      const otherPort = (other.address() as AddressInfo).port;
      api = http.createServer((req, res) => {
        const json = (status: number, body: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        if (req.url === '/v1/echo') return json(200, { youSent: req.headers.authorization ?? null });
        if (req.url === '/v1/away') return void res.writeHead(302, { location: `http://127.0.0.2:${otherPort}/catch` }).end();
        if (req.headers.authorization !== `Bearer ${accepted}`) return json(401, { error: 'unauthorized' });
        json(200, { forecast: 'sunny' });
      });
      await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
      const apiPort = (api.address() as AddressInfo).port;
      apiUrl = `http://127.0.0.1:${apiPort}`;
      const dir = copyFixture('secrets');
      for (const app of ['weather', 'thief']) {
        const file = path.join(dir, 'apps', app, 'app.yaml');
        writeFileSync(file, readFileSync(file, 'utf8').replaceAll('API_PORT', String(apiPort)).replaceAll('OTHER_PORT', String(otherPort)));
      }
      // Outside the definitions repository: never in Git.
      secretsFile = path.join(dir, '..', `secrets-${path.basename(dir)}.yaml`);
      writeSecrets(canaries[0]!);
      core = await startUhlpDev(dir, ['--driver', options.driver, ...(extra.args ?? [])], 240_000, undefined, {
        ...extra.env,
        UHLP_SECRETS_FILE: secretsFile,
        OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
        OTEL_SERVICE_NAME: service,
        UHLP_LLM_BASE_URL: llm.baseUrl,
        UHLP_LLM_STREAM: 'true',
        UHLP_LLM_MAX_RETRIES: '0',
      });
      await waitUntilReady(core);
    }, 300_000);

    afterAll(async () => {
      await core?.stop();
      await new Promise((resolve) => api?.close(resolve));
      await new Promise((resolve) => other?.close(resolve));
      await llm?.close();
    });

    it('gets a script through to an API that needs the header, and records the secret by name and version only', async () => {
      const answer = await post('/weather/forecast', { 'X-UHLP-Session': 'new' });
      expect(answer).toMatchObject({ status: 200, json: { status: 200, body: JSON.stringify({ forecast: 'sunny' }) } });
      const sid = answer.headers.get('x-uhlp-session-id')!;
      const ledger = path.join(core.dataDir, 'planes', 'development', 'sessions', sid, 'ledger', 'evidence.jsonl');
      const deadline = Date.now() + 10_000;
      while (!existsSync(ledger) || readFileSync(ledger, 'utf8').trim() === '') {
        if (Date.now() > deadline) throw new Error(`no evidence in ${ledger}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const entry = JSON.parse(readFileSync(ledger, 'utf8').trim().split('\n').at(-1)!) as { external_calls: unknown[] };
      expect(entry.external_calls).toEqual([
        { kind: 'mcp', target: 'tool.web.fetch', status: 'ok', duration_ms: expect.any(Number), secrets: [{ name: 'weather-key', key: 'token', version: '1' }] },
      ]);
    });

    it('never lets the script see the token: not in its context, environment, files, the answer of an API echoing it, nor through a redirect', async () => {
      const answer = await post('/weather/probe');
      expect(answer.status).toBe(200);
      const json = answer.json as { seen: Record<string, boolean>; echoed: string; forgedEchoed: string; away: { status: number; url: string; body: string } };
      // Each was computed inside the sandbox, before anything left it.
      expect(json.seen).toEqual({ context: false, environment: false, files: false, answer: false, redirect: false, forged: false, read: false });
      // A component that capabilities.secrets.read does not name cannot read it.
      expect((answer.json as { read: unknown }).read).toEqual({ code: 'UHLP_CAPABILITY_DENIED' });
      // The API got the token (it echoed it); the script got the secret's name in its place.
      expect(JSON.parse(json.echoed)).toEqual({ youSent: 'Bearer [secret:weather-key]' });
      // The script's own Authorization header gave way to the credential.
      expect(JSON.parse(json.forgedEchoed)).toEqual({ youSent: 'Bearer [secret:weather-key]' });
      expect(json.away).toMatchObject({ status: 200, body: 'the other host' });
      expect(reachedOther).toEqual([undefined]);
    });

    it('hands the value to the one component granted secrets.read, at call time, in the same warm sandbox; its answer is scrubbed', async () => {
      const forecast = await post('/weather/forecast');
      const answer = await post('/weather/sign');
      expect(answer.status).toBe(200);
      const json = answer.json as { signature: string; version: string; leaked: string; pid: number };
      expect(json.signature).toBe(createHmac('sha256', accepted).update('payload').digest('hex'));
      // The script held the value; what it answered with it was scrubbed on the way out.
      expect(json.leaked).toBe('[secret:weather-key]');
      expect(json.pid).toBe((forecast.json as { pid: number }).pid);
      // Its errors too: the app's own error and an exception, scrubbed in the body and in the log line of each.
      const failed = await post('/weather/sign', {}, { fail: true });
      expect(failed).toMatchObject({ status: 400, json: { code: 'SIGN_FAILED', message: 'cannot sign with [secret:weather-key]' } });
      const crashed = await post('/weather/sign', { traceparent: crash.traceparent }, { crash: true });
      expect(crashed).toMatchObject({ status: 500, json: { code: 'UHLP_SCRIPT_EXCEPTION' } });
      expect(JSON.stringify(crashed.json)).toContain('crashed holding [secret:weather-key]');
      // The log line it wrote is there, with the name where the value was (the search for the value is below).
      expect(core.stderr()).toContain('signing with [secret:weather-key]');
    });

    it("refuses to load another app that names the secret, naming the field", async () => {
      expect(core.stderr()).toMatch(/"path":"\/spec\/secrets\/0\/name".*the app has no secret \\"weather-key\\"|the app has no secret \\"weather-key\\".*"path":"\/spec\/secrets\/0\/name"/);
      expect(core.stderr()).toContain('thief');
      const answer = await post('/thief/forecast');
      expect(answer.status).toBe(404);
    });

    it(`uses a rotated value within ${ROTATION_BOUND_MS / 1000} s, in the same warm sandbox, with no restart`, async () => {
      const before = await post('/weather/forecast');
      expect(before.json).toMatchObject({ status: 200 });
      const next = `canary-${randomUUID()}`;
      canaries.push(next);
      // The API takes only the new value from now on; the core learns it from the file.
      accepted = next;
      const rotated = Date.now();
      writeSecrets(next);
      let after = await post('/weather/forecast');
      while ((after.json as { status?: number }).status !== 200) {
        if (Date.now() - rotated > ROTATION_BOUND_MS) throw new Error(`the rotated value was not in use within ${ROTATION_BOUND_MS} ms`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        after = await post('/weather/forecast');
      }
      const tookMs = Date.now() - rotated;
      console.log(`rotation in use after ${tookMs} ms (file checked every ${SECRET_FILE_INTERVAL_MS} ms)`);
      expect(tookMs).toBeLessThan(ROTATION_BOUND_MS);
      // One sandbox (maxSize: 1) served both: its module state counted on, its process is the same.
      const served = (before.json as { served: number }).served;
      expect((after.json as { served: number }).served).toBeGreaterThan(served);
      expect((after.json as { pid: number }).pid).toBe((before.json as { pid: number }).pid);
      expect(core.stderr()).not.toMatch(/sandbox (exited|crashed|restarted)/i);
    });

    it('still scrubs a value rotated away from a turn that read it before the rotation and answers after', async () => {
      const before = core.stderr().length;
      const held = post('/weather/hold');
      // The turn has read the value it will answer with.
      const deadline = Date.now() + 20_000;
      while (!core.stderr().slice(before).includes('holding version')) {
        if (Date.now() > deadline) throw new Error(`the turn never read the value:\n${core.stderr().slice(before)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const next = `canary-${randomUUID()}`;
      canaries.push(next);
      accepted = next;
      writeSecrets(next);
      const answer = await held;
      expect(answer.status).toBe(200);
      const json = answer.json as { old: string; oldVersion: string; newVersion: string };
      // The turn saw the rotation, then answered with the value it read before it.
      expect(json.newVersion).not.toBe(json.oldVersion);
      expect(json.old).toBe('[secret:weather-key]');
    });

    it('scrubs a streamed answer, a value split across two chunks included', async () => {
      const value = accepted;
      // Seven characters a chunk: "the key is " is eleven, so the value starts in one chunk and ends in another.
      llm.enqueue(reply.text(`the key is ${value}, told`, { chunkChars: 7 }));
      const response = await fetch(`${core.url}/weather/say`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ api: apiUrl }),
      });
      const text = await response.text();
      bodies.push(text);
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      const chunks = [...text.matchAll(/^event: NODE_STREAM\ndata: (.*)$/gm)].map((match) => (JSON.parse(match[1]!) as { chunk: string }).chunk);
      expect(chunks.length).toBeGreaterThan(2);
      expect(chunks.join('')).toBe('the key is [secret:weather-key], told');
      expect(text).not.toContain(value);
      expect(text).toMatch(/event: RESULT\ndata: .*the key is \[secret:weather-key\], told/);
    });

    it(`loads an app refused for a missing secret within ${ROTATION_BOUND_MS / 1000} s of the secret's arrival, and holds it back, serving, when it is removed`, async () => {
      expect((await post('/thief/forecast')).status).toBe(404);
      // Its own secret of that name, in its own section: another app's never counts.
      const own = `canary-${randomUUID()}`;
      canaries.push(own);
      const added = Date.now();
      writeSecrets(accepted, own);
      let answer = await post('/thief/forecast');
      while (answer.status === 404) {
        if (Date.now() - added > ROTATION_BOUND_MS) throw new Error(`the app did not load within ${ROTATION_BOUND_MS} ms of its secret:\n${core.stderr().slice(-4000)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = await post('/thief/forecast');
      }
      console.log(`the refused app loaded ${Date.now() - added} ms after its secret arrived`);
      // Its fetch went out with its own token, which the API does not take.
      expect(answer).toMatchObject({ status: 200, json: { status: 401 } });
      // Removed: the app is held back, still serving, and its fetch is refused rather than sent bare.
      const removed = Date.now();
      writeSecrets(accepted);
      const heldBack = async (): Promise<Array<{ app: string; problems: Array<{ path: string }> }>> =>
        ((await (await fetch(`${core.url}/readyz`)).json()) as { heldBack: Array<{ app: string; problems: Array<{ path: string }> }> }).heldBack;
      let held = await heldBack();
      while (!held.some((app) => app.app === 'thief')) {
        if (Date.now() - removed > ROTATION_BOUND_MS) throw new Error(`the app was not held back within ${ROTATION_BOUND_MS} ms of its secret's removal`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        held = await heldBack();
      }
      expect(held.find((app) => app.app === 'thief')!.problems).toEqual([expect.objectContaining({ path: '/spec/secrets/0/name' })]);
      const refused = await post('/thief/forecast');
      expect(refused.status).not.toBe(404);
      expect(JSON.stringify(refused.json)).toContain('UHLP_SECRET_UNAVAILABLE');
    });

    it('leaves no value anywhere: log lines, ledger and data files, traces, console API answers, error bodies', async () => {
      // Error bodies: a route that does not exist, a body that is not JSON.
      for (const route of ['/nowhere', '/weather/forecast']) {
        const response = await fetch(`${core.url}${route}`, { method: 'POST', body: route === '/nowhere' ? '{}' : 'not json' });
        bodies.push(await response.text());
      }
      for (const route of ['apps', 'runs', 'pools', 'ledger/sessions', 'queues', 'views', 'session']) {
        const response = await fetch(`${core.operatorUrl}/_uhlp/console/api/${route}`, { headers: { 'x-uhlp-console': '1' } });
        bodies.push(await response.text());
      }
      // The exception of the script that crashed holding the value is on its trace, scrubbed.
      const crashTrace = await waitForTrace(jaeger, crash.traceId, ['uhlp.execution']);
      expect(JSON.stringify(crashTrace)).toContain('crashed holding [secret:weather-key]');
      const traces = await fetch(`${jaeger.queryUrl}/api/traces?service=${service}&limit=1000&lookback=1h`);
      expect(traces.status).toBe(200);
      const tracesText = await traces.text();
      expect((JSON.parse(tracesText) as { data: unknown[] }).data.length).toBeGreaterThan(5);
      const places: Array<[string, string]> = [
        ['the traces', tracesText],
        ['the core log', core.stderr()],
        ['the core output', core.stdout()],
        ...bodies.map((body, i): [string, string] => [`answer ${i}`, body]),
        ...filesUnder(core.dataDir).map((file): [string, string] => [file, readFileSync(file).toString('latin1')]),
      ];
      for (const canary of canaries) {
        const found = places.filter(([, text]) => text.includes(canary)).map(([where]) => where);
        expect(found, `where ${canary} was found`).toEqual([]);
      }
      // The run did write where it was searched.
      expect(places.some(([where]) => where.endsWith('evidence.jsonl'))).toBe(true);
    });
  });
}

function filesUnder(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name);
      let stats;
      try {
        stats = statSync(file);
      } catch {
        continue;
      }
      if (stats.isDirectory()) walk(file);
      else if (stats.isFile()) out.push(file);
    }
  };
  walk(root);
  return out;
}
