/**
 * What the turn journal costs (`npx tsx bench/turn-journal.ts`): the time one
 * turn's record takes on the turn's path (open a draft, the stages' numbers,
 * close it into the ring), the heap a full ring of 1000 records holds (a turn
 * with an error, its stack and 50 calls, the largest a record gets; and a
 * plain one), a record's JSON size (what each core's Redis list holds per
 * turn), and a filtered page of a full ring.
 */
import { AppSnapshot } from '../src/apps/app-snapshot.js';
import { validateAppDefinition } from '../src/apps/validation/validate-app-definition.js';
import type { TurnEvent } from '../src/turns/turn-event.js';
import { addTurnCalls, TurnJournal } from '../src/turns/turn-journal.js';

const result = validateAppDefinition(
  {
    apiVersion: 'uhlp.dev/v1alpha1',
    kind: 'AppDefinition',
    metadata: { name: 'bench' },
    spec: { ingress: {}, pools: [{ name: 'p' }], components: [{ id: 'c', handler: 'JIT', pool: 'p', jit: { script: 'a.js' } }], routes: [{ http: { method: 'GET', path: '/x' }, component: 'c' }] },
  },
  { file: 'apps/bench/app.yaml', appDirName: 'bench', fileExists: () => true },
);
if (!result.ok) throw new Error(JSON.stringify(result.problems));
const app = new AppSnapshot('0123456789abcdef', [{ file: 'apps/bench/app.yaml', document: result.document }], []).apps.get('bench')!;
const component = app.components.get('c')!;
const event = (i: number): TurnEvent => ({ app, component, pool: app.pools.get('p')!, requestId: `r-${i}`, requestDataJson: '{}', session: undefined, declaredOutputs: [], source: 'http', route: 'GET /x' });
const STACK = Array.from({ length: 20 }, (_, i) => `at fn${i} (scripts/some/long/path/module-${i}.mjs:${i + 10}:${i + 3})`).join('\n');
const CALLS = Array.from({ length: 60 }, (_, i) => ({ kind: i % 5 === 0 ? 'llm' : 'mcp', target: 'core.kv.get', model: 'small', status: 'ok', duration_ms: 1.25, tokens: { prompt: 10, completion: 20 } }));
const ANSWER = { status: 200, headers: {}, body: '{}' };
const FAILED = { status: 500, headers: {}, body: '', failure: { code: 'UHLP_SCRIPT_EXCEPTION', message: 'x'.repeat(2048), stack: STACK } };

function perTurn(n: number): number {
  const journal = new TurnJournal({ size: 1000, core: 'bench' });
  const events = Array.from({ length: 1000 }, (_, i) => event(i));
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const draft = journal.open(events[i % 1000]!);
    draft.entry.timing.sessionMs += 0.01;
    draft.entry.timing.executionMs += 1;
    draft.entry.timing.ledgerMs += 0.01;
    journal.answered(draft, ANSWER);
  }
  return Number(process.hrtime.bigint() - started) / n;
}

function heapOfRing(full: boolean): number {
  globalThis.gc?.();
  const before = process.memoryUsage().heapUsed;
  const journal = new TurnJournal({ size: 1000, core: 'bench' });
  for (let i = 0; i < 1000; i++) {
    const draft = journal.open(event(i));
    if (full) addTurnCalls(draft, CALLS);
    journal.answered(draft, full ? FAILED : ANSWER);
  }
  globalThis.gc?.();
  const bytes = process.memoryUsage().heapUsed - before;
  (globalThis as { keep?: unknown }).keep = journal;
  return bytes;
}

perTurn(200_000);
const ns = Math.min(perTurn(1_000_000), perTurn(1_000_000), perTurn(1_000_000));
console.log(`record per turn (open + stage numbers + close into the ring): ${ns.toFixed(0)} ns`);
if (globalThis.gc === undefined) console.log('(run with node --expose-gc for the heap figures: NODE_OPTIONS=--expose-gc)');
else {
  console.log(`heap of a full ring of 1000 plain records: ${(heapOfRing(false) / 1024).toFixed(0)} KiB`);
  console.log(`heap of a full ring of 1000 largest records (2 KiB message, 20-frame stack, 50 calls): ${(heapOfRing(true) / 1024).toFixed(0)} KiB`);
}
const big = new TurnJournal({ size: 1, core: 'bench' });
const draft = big.open(event(0));
addTurnCalls(draft, CALLS);
big.answered(draft, FAILED);
const plain = new TurnJournal({ size: 1, core: 'bench' });
plain.answered(plain.open(event(0)), ANSWER);
console.log(`record JSON: plain ${JSON.stringify((await plain.list({}, 1)).turns[0]).length} bytes, largest ${JSON.stringify((await big.list({}, 1)).turns[0]).length} bytes`);
const full = new TurnJournal({ size: 1000, core: 'bench' });
for (let i = 0; i < 1000; i++) full.answered(full.open(event(i)), i % 10 === 0 ? FAILED : ANSWER);
const pageStarted = process.hrtime.bigint();
for (let i = 0; i < 100; i++) await full.list({ status: '5xx' }, 50);
console.log(`a filtered page (5xx, 50 a page) of a full ring: ${(Number(process.hrtime.bigint() - pageStarted) / 100 / 1e6).toFixed(2)} ms`);
