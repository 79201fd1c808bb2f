/**
 * `npm run bench:oracle`: an example LLM component run to promotion by the
 * optimization oracle, and what it changes. A core (`uhlp dev`, process driver)
 * serves a ticket-triage component (order number, e-mail, intent out of a
 * ticket's text) against the OpenAI-compatible test server, which answers the
 * component after a fixed latency of its own (BENCH_LLM_LATENCY_MS) and the code
 * generation with a module that applies the same rule.
 *
 * Phases, all at BENCH_CONNECTIONS concurrent clients:
 * 1. llm: the component as an LLM component (samples are taken), BENCH_SECONDS;
 * 2. promotion: the oracle generates, verifies on held-back samples and commits;
 * 3. shadow and canary: driven until the component serves code to all; every
 *    answer served is checked against the rule (wrong answers are counted);
 * 4. code: the promoted component, BENCH_SECONDS.
 *
 * Printed: JSON (also under bench/results/) and a short table: tokens per 1,000
 * requests before and after, held-back agreement, p50/p99 of both paths.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { reply, startOpenAiTestServer } from '../test/helpers/openai-test-server.js';
import { startUhlpDev, type UhlpProcess } from '../test/helpers/uhlp-process.js';
import { writeBenchApp } from './lib/bench-app.js';
import { table } from './lib/load.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 8);
const latencyMs = Number(process.env.BENCH_LLM_LATENCY_MS ?? 50);

const INTENTS: ReadonlyArray<[string, RegExp]> = [
  ['refund', /\b(refund|money back|charged twice)\b/i],
  ['cancel', /\b(cancel|stop my)\b/i],
  ['delivery', /\b(where is|not arrived|late|tracking)\b/i],
];

/** The rule the model follows; the generated module below is the same rule in code. */
function triage(text: string): { orderId: string | null; email: string | null; intent: string } {
  const order = /#(\d{4,8})\b/.exec(text);
  const email = /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/.exec(text);
  return { orderId: order ? order[1]! : null, email: email ? email[0].toLowerCase() : null, intent: INTENTS.find(([, re]) => re.test(text))?.[0] ?? 'other' };
}

const MODULE = `const INTENTS = [
  ['refund', /\\b(refund|money back|charged twice)\\b/i],
  ['cancel', /\\b(cancel|stop my)\\b/i],
  ['delivery', /\\b(where is|not arrived|late|tracking)\\b/i],
];
export default async function (event, ctx) {
  const text = event.body?.text;
  if (typeof text !== 'string') return ctx.fallback('no text');
  const order = /#(\\d{4,8})\\b/.exec(text);
  const email = /[\\w.+-]+@[\\w-]+(?:\\.[\\w-]+)+/.exec(text);
  const intent = INTENTS.find(([, re]) => re.test(text));
  return { orderId: order ? order[1] : null, email: email ? email[0].toLowerCase() : null, intent: intent ? intent[0] : 'other' };
}`;

const SCHEMA = {
  type: 'object',
  properties: {
    orderId: { type: ['string', 'null'] },
    email: { type: ['string', 'null'] },
    intent: { enum: ['refund', 'cancel', 'delivery', 'other'] },
  },
  required: ['orderId', 'email', 'intent'],
  additionalProperties: false,
};

const PHRASES = ['I want a refund', 'please cancel it', 'where is my parcel', 'thanks for the help', 'I was charged twice', 'it has not arrived', 'stop my subscription', 'great service'];
const NAMES = ['ada', 'grace', 'alan', 'edsger', 'barbara', 'ken', 'linus', 'margaret'];

/** The ticket of request `i`: varied enough that inputs rarely repeat, with a few that do (stability). */
function ticket(i: number): string {
  const n = i % 17 === 0 ? 7 : i; // Every 17th request repeats one input.
  return `${PHRASES[n % PHRASES.length]} for order #${10_000 + n}, mail ${NAMES[n % NAMES.length]}.${n}@example.com`;
}

function appYaml(): string {
  return `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools:
    - { name: brain, runner: llm, minWarm: 2, maxSize: 2, concurrency: 8, maxUses: 100000000, limits: { timeoutMs: 10000 } }
    - { name: code, runner: jit, minWarm: 2, maxSize: 2, concurrency: 8, maxUses: 100000000, limits: { timeoutMs: 5000 } }
  components:
    - id: triage
      handler: LLM
      pool: brain
      llm:
        prompt: prompts/triage.njk
        outputSchema: schemas/triage.json
        temperature: 0
        optimize: { mode: auto, minRequestsPerMinute: 1 }
  routes:
    - { http: { method: POST, path: /triage }, component: triage }
  capabilities:
    llm: { models: [small], maxTokens: 256 }
`;
}

const TEMPLATE = `Read the support ticket below and answer JSON: orderId (the digits after "#", or null),
email (lower case, or null), intent (refund, cancel, delivery or other).

Ticket: {{ body.text }}
`;

interface Phase {
  readonly requests: number;
  readonly wrong: number;
  readonly failed: number;
  readonly p50: number;
  readonly p99: number;
  readonly componentTokens: number;
}

async function main(): Promise<void> {
  let componentTokens = 0;
  let codegenTokens = 0;
  const llm = await startOpenAiTestServer({ record: false });
  llm.handle(async (request) => {
    const messages = request.body.messages ?? [];
    if (String(messages[0]?.['content'] ?? '').startsWith('uhlp-oracle-codegen')) {
      const usage = { prompt: Math.ceil(JSON.stringify(messages).length / 4), completion: Math.ceil(MODULE.length / 4) };
      codegenTokens += usage.prompt + usage.completion;
      return reply.text(`\`\`\`js\n${MODULE}\n\`\`\``, { usage });
    }
    await new Promise((resolve) => setTimeout(resolve, latencyMs));
    const prompt = String(messages.at(-1)?.['content'] ?? '');
    const answer = JSON.stringify(triage(/Ticket: (.*)$/m.exec(prompt)![1]!));
    const usage = { prompt: Math.ceil(JSON.stringify(messages).length / 4), completion: Math.ceil(answer.length / 4) };
    componentTokens += usage.prompt + usage.completion;
    return reply.text(answer, { usage });
  });

  const dir = writeBenchApp(appYaml(), { 'prompts/triage.njk': TEMPLATE, 'schemas/triage.json': JSON.stringify(SCHEMA) });
  const core = await startUhlpDev(dir, ['--log-level', 'error'], 60_000, undefined, { UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_ORACLE_INTERVAL_MS: '200' });
  let next = 0;

  async function status(): Promise<any> {
    const answer = (await (await fetch(`${core.operatorUrl}/_uhlp/oracle/status?app=bench&component=triage`)).json()) as { components: any[] };
    return answer.components[0];
  }

  /** Runs `connections` clients until `done()` (checked between requests) or `ms` pass. */
  async function drive(done: () => boolean, ms: number): Promise<Phase> {
    const tokensBefore = componentTokens;
    const latencies: number[] = [];
    let wrong = 0;
    let failed = 0;
    const deadline = Date.now() + ms;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (Date.now() < deadline && !done()) {
          const text = ticket(next++);
          const started = performance.now();
          const response = await fetch(`${core.url}/bench/triage`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
          const body = await response.text();
          latencies.push(performance.now() - started);
          if (response.status !== 200) failed += 1;
          else if (body !== JSON.stringify(triage(text)) && JSON.stringify(JSON.parse(body)) !== JSON.stringify(triage(text))) wrong += 1;
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const at = (q: number): number => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0) * 100) / 100;
    return { requests: latencies.length, wrong, failed, p50: at(0.5), p99: at(0.99), componentTokens: componentTokens - tokensBefore };
  }

  /** Drives traffic until the status says `stage`, polling it on the side. */
  async function driveUntil(stage: string, limitMs: number): Promise<Phase> {
    let reached = false;
    const poll = (async () => {
      const deadline = Date.now() + limitMs;
      while (!reached && Date.now() < deadline) {
        const s = await status();
        if (s.stage === stage && (stage === 'sampling' || s.handler === 'JIT')) reached = true;
        else if (['failed', 'rolled-back', 'refused', 'rejected'].includes(s.stage)) throw new Error(`the oracle stopped at ${s.stage}: ${s.reason ?? ''}`);
        else await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const phase = await drive(() => reached, limitMs);
    await poll;
    if (!reached) throw new Error(`no ${stage} within ${limitMs} ms: ${JSON.stringify(await status())}`);
    return phase;
  }

  try {
    const llmPhase = await drive(() => false, seconds * 1000);
    const toShadow = await driveUntil('shadow', 120_000);
    const promoted = await status();
    const shadow = await driveUntil('canary', 120_000);
    const canary = await driveUntil('full', 300_000);
    const codePhase = await drive(() => false, seconds * 1000);
    const final = await status();

    const per1000 = (phase: Phase): number => Math.round((phase.componentTokens / Math.max(1, phase.requests)) * 1000);
    const before = per1000(llmPhase);
    const after = per1000(codePhase);
    const report = {
      machine: { cpus: os.cpus().length, loadAverage: os.loadavg() },
      seconds,
      connections,
      testServerLatencyMs: latencyMs,
      tokensPer1000: { before, after, saved: before > 0 ? Math.round((1 - after / before) * 10_000) / 100 : null },
      codegenTokens,
      heldBack: { samples: promoted.candidate?.heldBack, agreement: promoted.candidate?.agreement, coverage: promoted.candidate?.coverage },
      samples: promoted.samples,
      llmPath: { requests: llmPhase.requests, p50: llmPhase.p50, p99: llmPhase.p99, failed: llmPhase.failed, wrong: llmPhase.wrong },
      codePath: { requests: codePhase.requests, p50: codePhase.p50, p99: codePhase.p99, failed: codePhase.failed, wrong: codePhase.wrong },
      toPromotion: { requests: toShadow.requests, wrong: toShadow.wrong },
      shadow: { requests: shadow.requests, wrongServed: shadow.wrong, failed: shadow.failed },
      canary: { requests: canary.requests, wrongServed: canary.wrong, failed: canary.failed },
      live: final.totals,
    };
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(`bench/results/bench-oracle-${Date.now()}.json`, JSON.stringify(report, null, 2));
    process.stdout.write(`${JSON.stringify(report)}\n\n`);
    process.stdout.write(
      `${table([
        { path: 'LLM component', 'tokens/1000 req': before, p50_ms: llmPhase.p50, p99_ms: llmPhase.p99, requests: llmPhase.requests, wrong: llmPhase.wrong },
        { path: 'promoted code', 'tokens/1000 req': after, p50_ms: codePhase.p50, p99_ms: codePhase.p99, requests: codePhase.requests, wrong: codePhase.wrong },
      ])}\n\ntokens saved ${report.tokensPer1000.saved}%; held-back agreement ${report.heldBack.agreement} on ${report.heldBack.samples} samples; ` +
        `wrong answers served in shadow ${shadow.wrong}, in canary ${canary.wrong}; code generation ${codegenTokens} tokens; test server latency ${latencyMs} ms\n`,
    );
  } finally {
    await stop(core);
    await llm.close();
  }
}

async function stop(core: UhlpProcess): Promise<void> {
  await core.stop();
}

await main();
