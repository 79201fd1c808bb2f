/**
 * An app's own model endpoint through `uhlp dev` on the process driver: app
 * alpha's LLM component reaches its own OpenAI-compatible server with its key
 * in the Authorization header, added by the core; app beta uses the operator's
 * server and never sees alpha's key; endpoints aimed at a metadata address or
 * unlisted loopback, carrying credentials or using file: are refused at load
 * with the field, and
 * one whose name resolves to loopback is refused at connect time; the key is
 * in no answer, log line or ledger file; a removed secret fails alpha's calls
 * UHLP_SECRET_UNAVAILABLE.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reply, startOpenAiTestServer, type OpenAiTestServer } from './helpers/openai-test-server.js';
import { copyFixture, startUhlpDev, waitUntilReady, type UhlpProcess } from './helpers/uhlp-process.js';

describe("an app's own model endpoint on the process driver", () => {
  let core: UhlpProcess;
  let own: OpenAiTestServer;
  let operator: OpenAiTestServer;
  let dir = '';
  let secretsFile = '';
  const key = `model-key-${randomUUID()}`;
  const bodies: string[] = [];

  const writeSecrets = (withAlpha: boolean): void => {
    const section = (app: string): string => `  ${app}:\n    model-key:\n      token: ${key}\n`;
    const apps = ['sneaky', 'selfloop', 'metadata', 'withcreds', 'fileurl', ...(withAlpha ? ['alpha'] : [])];
    writeFileSync(`${secretsFile}.new`, `apps:\n${apps.map(section).join('')}`);
    renameSync(`${secretsFile}.new`, secretsFile);
  };
  const say = async (app: string): Promise<{ status: number; text: string }> => {
    const response = await fetch(`${core.url}/${app}/say`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ topic: 'rain' }) });
    const text = await response.text();
    bodies.push(text);
    return { status: response.status, text };
  };

  beforeAll(async () => {
    own = await startOpenAiTestServer();
    operator = await startOpenAiTestServer();
    const ownPort = new URL(own.baseUrl).port;
    dir = copyFixture('app-llm');
    for (const app of readdirSync(path.join(dir, 'apps'))) {
      const file = path.join(dir, 'apps', app, 'app.yaml');
      writeFileSync(file, readFileSync(file, 'utf8').replaceAll('OWN_PORT', ownPort));
    }
    // Outside the definitions repository: never in Git.
    secretsFile = path.join(dir, '..', `secrets-${path.basename(dir)}.yaml`);
    writeSecrets(true);
    core = await startUhlpDev(dir, ['--driver', 'process'], 240_000, undefined, {
      UHLP_SECRETS_FILE: secretsFile,
      UHLP_LLM_BASE_URL: operator.baseUrl,
      UHLP_LLM_MAX_RETRIES: '0',
      // The operator lets apps reach the test server on loopback, and nothing else there.
      UHLP_LLM_ALLOW_PRIVATE: `127.0.0.1:${ownPort}`,
    });
    await waitUntilReady(core);
  }, 300_000);

  afterAll(async () => {
    await core?.stop();
    await own?.close();
    await operator?.close();
  });

  it("sends alpha's calls to its own server with its key, and beta's to the operator's without it", async () => {
    own.enqueue(reply.text('alpha says rain'));
    operator.enqueue(reply.text('beta says rain'));
    const alpha = await say('alpha');
    expect(alpha.status, alpha.text).toBe(200);
    expect(alpha.text).toContain('alpha says rain');
    const beta = await say('beta');
    expect(beta.status, beta.text).toBe(200);
    expect(beta.text).toContain('beta says rain');
    expect(own.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${key}`]);
    expect(operator.requests).toHaveLength(1);
    expect(JSON.stringify(operator.requests.map((request) => request.headers))).not.toContain(key);
  });

  it('scrubs the key from an answer of a server that echoes it', async () => {
    own.enqueue(reply.text(`you sent ${key}, thanks`));
    const alpha = await say('alpha');
    expect(alpha.status, alpha.text).toBe(200);
    expect(alpha.text).toContain('you sent [secret:model-key], thanks');
  });

  it('refuses hostile endpoints at load, naming the field and a stable code', async () => {
    const ready = (await (await fetch(`${core.url}/readyz`)).json()) as { apps: string[]; definitionProblems: Array<{ file: string; path: string; reason: string }> };
    expect(ready.apps.sort()).toEqual(['alpha', 'beta', 'sneaky']);
    const problem = (app: string) => ready.definitionProblems.find((entry) => entry.file.includes(`apps/${app}/`) && entry.path.startsWith('/spec/llm/endpoint/url'));
    expect(problem('metadata')?.reason).toMatch(/UHLP_LLM_ENDPOINT_NOT_ALLOWED/);
    // Loopback on a port the operator did not list (the core's own listeners are there).
    expect(problem('selfloop')?.reason).toMatch(/UHLP_LLM_ENDPOINT_NOT_ALLOWED/);
    // The schema's pattern refuses these before any rule reads them: no credentials, no other scheme.
    expect(problem('withcreds')).toBeDefined();
    expect(problem('fileurl')).toBeDefined();
  });

  it('refuses at connect time a name that resolves to loopback the operator did not allow, sending nothing', async () => {
    const before = own.requests.length + operator.requests.length;
    const sneaky = await say('sneaky');
    expect(sneaky.status).not.toBe(200);
    expect(sneaky.text).toContain('UHLP_LLM_ENDPOINT_NOT_ALLOWED');
    expect(own.requests.length + operator.requests.length).toBe(before);
  });

  it("fails alpha's calls UHLP_SECRET_UNAVAILABLE once its secret is gone, sending nothing", async () => {
    writeSecrets(false);
    const sent = own.requests.length;
    const deadline = Date.now() + 15_000;
    let last = { status: 0, text: '' };
    while (Date.now() < deadline) {
      last = await say('alpha');
      if (last.text.includes('UHLP_SECRET_UNAVAILABLE')) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(last.text).toContain('UHLP_SECRET_UNAVAILABLE');
    // Calls made before the removal was seen may have gone out; none after.
    const after = own.requests.length;
    await say('alpha');
    expect(own.requests.length).toBe(after);
    expect(after).toBeGreaterThanOrEqual(sent);
  });

  it('keeps the key out of every answer, log line and ledger file of the run', () => {
    expect(bodies.join('\n')).not.toContain(key);
    expect(core.stdout() + core.stderr()).not.toContain(key);
    const files = (root: string): string[] =>
      existsSync(root) ? readdirSync(root).flatMap((name) => (statSync(path.join(root, name)).isDirectory() ? files(path.join(root, name)) : [path.join(root, name)])) : [];
    const written = files(core.dataDir).filter((file) => statSync(file).isFile() && statSync(file).size < 8 * 1024 * 1024);
    // The turns' ledger is among them: evidence of the calls, by name and version of the secret only.
    expect(written.some((file) => file.endsWith('evidence.jsonl'))).toBe(true);
    for (const file of written) expect(readFileSync(file).includes(key), file).toBe(false);
  });
});
