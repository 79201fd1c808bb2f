/**
 * The optimization oracle end to end, on each driver and each runtime store:
 * `uhlp dev` with the shop fixture (one optimized LLM component per scenario),
 * the OpenAI-compatible test server answering both the components (a fixed
 * rule: shout the text and count it) and the code generation (a module per
 * component, chosen by the test). What is served, what the definitions
 * repository holds, and what `uhlp optimize status` reports.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/shared/canonical-json.js';
import { hexHash } from '../../src/oracle/oracle-sample.js';
import { isHeldBack } from '../../src/oracle/sample-split.js';
import { git } from './git-repo.js';
import { reply, startOpenAiTestServer, type OpenAiTestServer, type RecordedRequest } from './openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './redis-url.js';
import { copyFixture, startUhlpDev, UHLP_BIN, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';

export interface OracleSuiteOptions {
  readonly driver: 'process' | 'docker';
  readonly state: 'memory' | 'redis';
  readonly before?: () => Promise<void>;
  readonly startTimeoutMs?: number;
}

/** What the components' model answers: the rule the generated code must find. */
function shout(text: string): { shout: string; n: number } {
  return { shout: text.toUpperCase(), n: text.length };
}

/** The modules code generation answers, by component id (the codegen prompt names it). */
const MODULES: Record<string, (prompt: string, attempt: number) => string> = {
  // The rule, and a decline for what it is not sure of (a question).
  good: () => `export default async function (event, ctx) {
  const text = event.body.text;
  if (text.includes('?')) return ctx.fallback('a question');
  return { shout: text.toUpperCase(), n: text.length };
}`,
  // A table of the samples it was shown: it knows nothing else.
  table: (prompt) => {
    const samples = JSON.parse(/Samples \(event -> output\), \d+ of them:\n```json\n([\s\S]*?)\n```/.exec(prompt)![1]!) as Array<{ event: { body: { text: string } }; output: unknown }>;
    const table = Object.fromEntries(samples.map((s) => [s.event.body.text, s.output]));
    return `const TABLE = ${JSON.stringify(table)};
export default async function (event) {
  return TABLE[event.body.text] ?? { shout: '', n: 0 };
}`;
  },
  // First it throws, then it never returns.
  crash: (_prompt, attempt) =>
    attempt === 1
      ? 'export default async function (event) { throw new Error(`no idea about ${event.body.text}`); }'
      : 'export default async function () { for (;;) {} }',
  // Right answers, after a look at kv, which the component may not use.
  sneaky: () => `export default async function (event, ctx) {
  await ctx.tools.call('core.kv.get', { key: 's:secret' });
  return { shout: event.body.text.toUpperCase(), n: event.body.text.length };
}`,
  // Right on every sample, wrong on live inputs it never saw (text starting "zz").
  drift: () => `export default async function (event) {
  const text = event.body.text;
  return { shout: text.startsWith('zz') ? text : text.toUpperCase(), n: text.length };
}`,
  idea: () => `export default async function (event) {
  return { shout: event.body.text.toUpperCase(), n: event.body.text.length };
}`,
  unlucky: () => `export default async function (event) {
  return { shout: event.body.text.toUpperCase(), n: event.body.text.length };
}`,
};

/** Texts whose sample (the template reads body.text) the split holds back at `holdout`, or does not. */
function textsOnSide(count: number, holdout: number, heldBack: boolean, prefix: string): string[] {
  const texts: string[] = [];
  for (let i = 0; texts.length < count; i++) {
    const text = `${prefix}${i}`;
    if (isHeldBack({ inputHash: hexHash(canonicalJson({ body: { text } })) }, holdout) === heldBack) texts.push(text);
  }
  return texts;
}

const WORDS = [
  'alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliett', 'kilo', 'lima',
  'mike', 'november', 'oscar', 'papa', 'quebec', 'romeo', 'sierra', 'tango', 'uniform', 'victor', 'whiskey', 'xray',
];

function isCodegen(request: RecordedRequest): boolean {
  return String(request.body.messages?.[0]?.['content'] ?? '').startsWith('uhlp-oracle-codegen');
}

export function describeOptimizationOracle(options: OracleSuiteOptions): void {
  describe(`the optimization oracle on the ${options.driver} driver with ${options.state} state`, () => {
    let core: UhlpProcess;
    let llm: OpenAiTestServer;
    let repo: string;
    const attempts = new Map<string, number>();

    beforeAll(async () => {
      await options.before?.();
      llm = await startOpenAiTestServer();
      llm.handle((request) => {
        const messages = request.body.messages ?? [];
        if (isCodegen(request)) {
          const prompt = String(messages[1]?.['content'] ?? '');
          const component = /^Component: shop\/(\S+)/.exec(prompt)![1]!;
          const attempt = (attempts.get(component) ?? 0) + 1;
          attempts.set(component, attempt);
          return reply.text(`Here it is:\n\`\`\`js\n${MODULES[component]!(prompt, attempt)}\n\`\`\``, { usage: { prompt: 900, completion: 120 } });
        }
        const text = /characters: (.*)$/m.exec(String(messages.at(-1)?.['content'] ?? ''))![1]!;
        return reply.text(JSON.stringify(shout(text)), { usage: { prompt: 40, completion: 12 } });
      });
      repo = copyFixture('oracle-e2e');
      const env: Record<string, string> = {
        UHLP_LLM_BASE_URL: llm.baseUrl,
        UHLP_LLM_TIMEOUT_MS: '20000',
        UHLP_ORACLE_INTERVAL_MS: '100',
        UHLP_LOG_LEVEL: 'info',
      };
      if (options.state === 'redis') Object.assign(env, { UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: uniqueKeyPrefix('oracle').replace(/[^A-Za-z0-9:_-]/g, '').slice(0, 60) });
      core = await startUhlpDev(repo, ['--driver', options.driver], options.startTimeoutMs ?? 60_000, undefined, env);
    }, (options.startTimeoutMs ?? 60_000) + 30_000);

    afterAll(async () => {
      await core?.stop();
      await llm?.close();
    });

    async function ask(component: string, text: string): Promise<{ status: number; json: any }> {
      const response = await fetch(`${core.url}/shop/${component}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
      return { status: response.status, json: await response.json() };
    }

    /** Asks every text and checks each answer is the model's rule. */
    async function feed(component: string, texts: readonly string[]): Promise<void> {
      for (const text of texts) expect(await ask(component, text)).toEqual({ status: 200, json: shout(text) });
    }

    async function status(component: string): Promise<any> {
      const response = await fetch(`${core.operatorUrl}/_uhlp/oracle/status?app=shop&component=${component}`);
      expect(response.status).toBe(200);
      return ((await response.json()) as { components: any[] }).components[0];
    }

    async function until(component: string, what: string, condition: (s: any) => boolean, timeoutMs = 60_000): Promise<any> {
      let last: any;
      await waitFor(async () => condition((last = await status(component))), { timeoutMs, intervalMs: 50, what: `${component}: ${what}` }).catch((error: Error) => {
        throw new Error(`${error.message}\nstatus: ${JSON.stringify(last)}\nlog:\n${core.stdout().slice(-4000)}`);
      });
      return last;
    }

    /** Samples enough distinct inputs (and one repeat, for stability) to start code generation. */
    async function sample(component: string, count: number): Promise<void> {
      await feed(component, WORDS.slice(0, count));
      await feed(component, [WORDS[0]!]);
    }

    const componentCalls = (): number => llm.requests.filter((request) => !isCodegen(request)).length;
    const appYaml = (ref = 'HEAD'): string => git(repo, 'show', `${ref}:apps/shop/app.yaml`);

    it('promotes a correct candidate through shadow and canary to full, and the LLM answers what the code declines', async () => {
      await sample('good', 16);
      const shadow = await until('good', 'promoted and served in shadow', (s) => s.stage === 'shadow' && s.handler === 'JIT');
      expect(shadow.candidate).toMatchObject({ agreement: 1, model: expect.any(String) });
      expect(shadow.candidate.heldBack).toBeGreaterThanOrEqual(4);
      // The promotion is a commit with the evidence, of the code and the component switched to it.
      const message = git(repo, 'log', '-1', '--format=%B', shadow.promotion.commit);
      expect(message).toMatch(/^oracle: promote generated code for shop\/good/);
      expect(message).toMatch(new RegExp(`candidate: +${shadow.candidate.hash}`));
      expect(message).toMatch(/held-back samples: +\d+, never shown/);
      expect(git(repo, 'show', `${shadow.promotion.commit}:apps/shop/${shadow.candidate.script}`)).toMatch(/export default async function/);
      expect(appYaml()).toMatch(new RegExp(`script: ${shadow.candidate.script}`));

      // Shadow: the LLM answers (every answer right), the code is compared after.
      const before = componentCalls();
      await feed('good', ['one', 'two', 'three', 'four']);
      expect(componentCalls() - before).toBe(4);
      await until('good', 'canary after the shadow comparisons', (s) => s.stage === 'canary');
      // Canary: half the requests are the code's, each compared; still every answer right.
      let canaryFeeds = 0;
      for (; (await status('good')).stage === 'canary'; canaryFeeds++) {
        expect(canaryFeeds).toBeLessThan(200);
        await feed('good', [`canary ${canaryFeeds}`]);
      }
      const full = await until('good', 'full', (s) => s.stage === 'full');
      expect(full.live.disagreements).toBe(0);
      // A canary request the code answered is compared with the model after the client has its answer, so the last
      // comparisons may still be in flight when the stage turns full (and a request that met the stage already full
      // costs none): count once no call has come for a second.
      let settled = { calls: componentCalls(), at: Date.now() };
      await waitFor(
        () => {
          if (componentCalls() !== settled.calls) settled = { calls: componentCalls(), at: Date.now() };
          return Date.now() - settled.at >= 1000;
        },
        { timeoutMs: 15_000, intervalMs: 50, what: 'the canary comparisons still in flight' },
      );
      const quiet = componentCalls();
      expect(quiet - before - 4).toBeLessThanOrEqual(canaryFeeds);

      // Full: the code answers alone, no tokens spent.
      await feed('good', ['served by code', 'and again']);
      expect(componentCalls()).toBe(quiet);
      await until('good', 'tokens saved counted', (s) => s.totals.hits >= 2 && s.totals.tokensSaved > 0);

      // A question is declined by the code and answered by the LLM fallback.
      await feed('good', ['why?']);
      expect(componentCalls()).toBe(quiet + 1);
      await until('good', 'the decline counted', (s) => s.totals.declines >= 1);
      const metrics = await (await fetch(`${core.url}/metrics`)).text();
      expect(metrics).toMatch(/uhlp_oracle_stage\{app="shop",component="good"\} \d/);
      expect(metrics).toMatch(/uhlp_oracle_candidates_total\{app="shop",component="good",outcome="passed"\} 1/);
      expect(metrics).toMatch(/uhlp_oracle_tokens_total\{app="shop",component="good",kind="prompt"\} 900/);
      expect(metrics).toMatch(/uhlp_oracle_tokens_saved_total\{app="shop",component="good"\} [1-9]/);

      // The decisions are in the app's ledger: the promotion's turn carries the code generation's model call.
      const evidence = (): string =>
        readdirSync(core.dataDir, { recursive: true, encoding: 'utf8' })
          .filter((file) => file.endsWith('evidence.jsonl'))
          .map((file) => readFileSync(path.join(core.dataDir, file), 'utf8'))
          .join('');
      await waitFor(() => /"kind":"llm"[^\n]*"tokens":\{"completion":120,"prompt":900\}/.test(evidence()), { timeoutMs: 10_000, what: 'the promotion in the ledger' });
      expect(execFileSync(process.execPath, [UHLP_BIN, 'ledger', 'verify', '--data-dir', core.dataDir], { encoding: 'utf8' })).toBeDefined();
    }, 180_000);

    it('refuses a candidate that hard-codes its training samples, on the held-back split', async () => {
      const head = git(repo, 'rev-parse', 'HEAD');
      await sample('table', 16);
      const failed = await until('table', 'failed', (s) => s.stage === 'failed');
      expect(failed.candidates).toEqual([expect.objectContaining({ verdict: 'disagreed', agreement: 0 })]);
      expect(failed.handler).toBe('LLM');
      expect(git(repo, 'rev-parse', 'HEAD')).toBe(head);
      await feed('table', ['still the llm']);
    }, 120_000);

    it('refuses a candidate that throws, then one that never returns', async () => {
      const head = git(repo, 'rev-parse', 'HEAD');
      await sample('crash', 24);
      const failed = await until('crash', 'failed after two attempts', (s) => s.stage === 'failed');
      const verdicts = failed.candidates.map((c: { attempt: number; verdict: string }) => [c.attempt, c.verdict]).sort();
      expect(verdicts).toEqual([
        [1, 'error'],
        [2, 'timeout'],
      ]);
      expect(git(repo, 'rev-parse', 'HEAD')).toBe(head);
      // The feedback of the second attempt named what the first got wrong.
      const second = llm.requests.filter(isCodegen).filter((r) => String(r.body.messages?.[1]?.['content']).startsWith('Component: shop/crash')).at(-1)!;
      expect(String(second.body.messages!.at(-1)!['content'])).toMatch(/Your module was refused[\s\S]*no idea about/);
      await feed('crash', ['still answered']);
    }, 120_000);

    it('refuses a candidate that calls a tool outside the capabilities', async () => {
      await sample('sneaky', 16);
      const failed = await until('sneaky', 'failed', (s) => s.stage === 'failed');
      expect(failed.candidates).toEqual([expect.objectContaining({ verdict: 'capability', reason: expect.stringContaining('core.kv.get') })]);
      expect(appYaml()).not.toMatch(/generated\/sneaky-/);
    }, 120_000);

    it('rolls back, by a revert commit, a candidate that agrees on the samples and disagrees live', async () => {
      await sample('drift', 16);
      const shadow = await until('drift', 'promoted and in shadow', (s) => s.stage === 'shadow' && s.handler === 'JIT');
      // Live inputs unlike any sample: the LLM answers them (right), the code is wrong on them.
      await feed('drift', ['zz top', 'zz plant']);
      const rolled = await until('drift', 'rolled back and served by the LLM', (s) => s.stage === 'rolled-back' && s.rollback?.commit !== undefined && s.handler === 'LLM');
      expect(rolled.totals.disagreements).toBeGreaterThanOrEqual(1);
      const message = git(repo, 'log', '-1', '--format=%B', rolled.rollback.commit);
      expect(message).toMatch(/^oracle: revert generated code of shop\/drift/);
      expect(message).toMatch(new RegExp(`candidate: +${shadow.candidate.hash}`));
      expect(message).toMatch(/disagreed in shadow/);
      expect(appYaml()).not.toMatch(/generated\/drift-/);
      expect(() => git(repo, 'cat-file', '-e', `HEAD:apps/shop/${shadow.candidate.script}`)).toThrow();
      const before = componentCalls();
      await feed('drift', ['zz again']);
      expect(componentCalls()).toBe(before + 1);
    }, 120_000);

    it('suggest mode leaves a branch for a human and changes nothing served', async () => {
      const head = git(repo, 'rev-parse', 'HEAD');
      await sample('idea', 16);
      const suggested = await until('idea', 'suggested', (s) => s.stage === 'suggested');
      expect(suggested.promotion.branch).toBe('uhlp/optimize/shop/idea');
      expect(git(repo, 'rev-parse', 'HEAD')).toBe(head);
      expect(git(repo, 'rev-parse', 'uhlp/optimize/shop/idea^')).toBe(head);
      expect(appYaml('uhlp/optimize/shop/idea')).toMatch(new RegExp(`script: ${suggested.candidate.script}`));
      expect(appYaml()).not.toMatch(/generated\/idea-/);
      const before = componentCalls();
      await feed('idea', ['served by the llm']);
      expect(componentCalls()).toBe(before + 1);

      // The CLI shows it, and an operator can promote it.
      const shown = execFileSync(process.execPath, [UHLP_BIN, 'optimize', 'status', 'shop/idea', '--url', core.operatorUrl], { encoding: 'utf8' });
      expect(shown).toMatch(/shop\/idea {2}suggested/);
      expect(shown).toMatch(/on branch uhlp\/optimize\/shop\/idea/);
      expect(shown).toMatch(/module generated\/idea-[0-9a-f]{12}\.js[\s\S]*export default async function \(event\)/);
      execFileSync(process.execPath, [UHLP_BIN, 'optimize', 'promote', 'shop/idea', '--url', core.operatorUrl], { encoding: 'utf8' });
      await until('idea', 'promoted by the operator and in shadow', (s) => s.stage === 'shadow' && s.handler === 'JIT');
      expect(git(repo, 'log', '-1', '--format=%s')).toMatch(/^oracle: promote generated code for shop\/idea/);

      // And roll it back: a revert commit, the LLM again.
      const rollback = await fetch(`${core.operatorUrl}/_uhlp/oracle/rollback`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ app: 'shop', component: 'idea' }) });
      expect(rollback.status).toBe(200);
      expect(await rollback.json()).toMatchObject({ stage: 'rolled-back', rollback: { reason: expect.stringContaining('uhlp optimize rollback') } });
      await until('idea', 'served by the LLM again', (s) => s.handler === 'LLM');
      expect(git(repo, 'log', '-1', '--format=%s')).toMatch(/^oracle: revert generated code of shop\/idea/);
      expect(appYaml()).not.toMatch(/generated\/idea-/);
    }, 120_000);

    it('waits in sampling, with no decision, while fewer than 4 samples are held back, then asks for code', async () => {
      // minSamples inputs (and a repeat), all on the training side of the split: no candidate could be judged.
      const training = textsOnSide(14, 0.3, false, 'train ');
      await feed('unlucky', [...training, training[0]!]);
      await until('unlucky', 'sampled', (s) => s.samples?.stored === 14 && s.samples.stable === true);
      // Twenty scans: the component stays in sampling and gives up on nothing, and no code is asked for.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const waiting = await status('unlucky');
      expect(waiting).toMatchObject({ stage: 'sampling', codegen: { attempts: 0, tokens: 0 } });
      expect(waiting.reason).toBeUndefined();
      expect(llm.requests.filter((request) => isCodegen(request) && String(request.body.messages?.[1]?.['content']).includes('shop/unlucky'))).toHaveLength(0);
      // Held-back inputs arrive: code is asked for.
      await feed('unlucky', textsOnSide(4, 0.3, true, 'held '));
      await until('unlucky', 'a candidate judged on its held-back samples', (s) => s.stage === 'suggested');
    }, 60_000);

    it('answers bad operator requests with stable codes', async () => {
      const unknown = await fetch(`${core.operatorUrl}/_uhlp/oracle/status?app=shop&component=nope`);
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({ code: 'UHLP_ORACLE_NOT_FOUND' });
      const nothing = await fetch(`${core.operatorUrl}/_uhlp/oracle/rollback`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ app: 'shop', component: 'table' }) });
      expect(nothing.status).toBe(409);
      expect(await nothing.json()).toMatchObject({ code: 'UHLP_ORACLE_NOTHING_TO_DO' });
      const bad = await fetch(`${core.operatorUrl}/_uhlp/oracle/promote`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"app": 7}' });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ code: 'UHLP_BAD_REQUEST' });
    });
  });
}
