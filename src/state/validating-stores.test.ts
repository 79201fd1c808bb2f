import { describe, expect, it } from 'vitest';
import { isUhlpError } from '../shared/errors.js';
import type { RuntimeStores } from './runtime-store.js';
import { withInputChecks } from './validating-stores.js';

/** Stores that only record what reaches them: the checks must stop bad input before. */
function recordingStores(): { stores: RuntimeStores; reached: string[] } {
  const reached: string[] = [];
  const recording = (concern: string): never =>
    new Proxy(
      {},
      {
        get: (_, method) => async () => {
          reached.push(`${concern}.${String(method)}`);
          return undefined;
        },
      },
    ) as never;
  const stores: RuntimeStores = {
    sessions: recording('sessions'),
    kv: recording('kv'),
    leases: recording('leases'),
    idempotency: recording('idempotency'),
    rateLimits: recording('rateLimits'),
    oracle: recording('oracle'),
    llm: recording('llm'),
    runs: recording('runs'),
    flows: recording('flows'),
    functions: recording('functions'),
  };
  return { stores, reached };
}

const HASH = 'a'.repeat(16);
const SCOPE = { appId: 'shop', componentId: 'triage', revision: 'r1' };
const SAMPLE = { inputHash: HASH, outputHash: HASH, json: '{}', fresh: true };
const SAMPLE_OPTIONS = { limit: 3, ttlMs: 1000, pick: 0 };
const RESPONSE = { statusCode: 200, headers: {}, body: '' };

type Call = (stores: RuntimeStores) => Promise<unknown>;

// [what, a call with one bad argument, the code, the field it names]
const refused: Array<[string, Call, string, string]> = [
  ['a session of no app', (s) => s.sessions.createSession({ appId: '', ttlMs: 1000 }), 'UHLP_STATE_INPUT_INVALID', 'appId'],
  ['a session id that is no session id', (s) => s.sessions.createSession({ appId: 'shop', ttlMs: 1000, id: '../etc' }), 'UHLP_SESSION_ID_INVALID', 'id'],
  ['a fractional session TTL', (s) => s.sessions.touchSession('SES-x', 1.5), 'UHLP_STATE_INPUT_INVALID', 'ttlMs'],
  ['an empty session id', (s) => s.sessions.nextTurn(''), 'UHLP_STATE_INPUT_INVALID', 'id'],
  ['a kv key past the limit', (s) => s.kv.kvGet('k'.repeat(1025)), 'UHLP_STATE_INPUT_INVALID', 'key'],
  ['a kv value that is no string', (s) => s.kv.kvSet('k', 7 as unknown as string), 'UHLP_STATE_INPUT_INVALID', 'value'],
  ['a kv TTL of 0', (s) => s.kv.kvSet('k', 'v', { ttlMs: 0 }), 'UHLP_STATE_INPUT_INVALID', 'ttlMs'],
  ['a kv scan limit of 0', (s) => s.kv.kvScan('', { limit: 0 }), 'UHLP_STATE_INPUT_INVALID', 'limit'],
  ['a lease of no owner', (s) => s.leases.acquireLease('sb', '', 1000), 'UHLP_STATE_INPUT_INVALID', 'owner'],
  ['a negative lease TTL', (s) => s.leases.renewLease('sb', 'core', -1), 'UHLP_STATE_INPUT_INVALID', 'ttlMs'],
  ['an in-flight TTL of 0', (s) => s.idempotency.beginIdempotent('shop', 'k', { inFlightTtlMs: 0 }), 'UHLP_STATE_INPUT_INVALID', 'inFlightTtlMs'],
  ['a stored status of 99', (s) => s.idempotency.completeIdempotent('shop', 'k', { ...RESPONSE, statusCode: 99 }, 1000), 'UHLP_STATE_INPUT_INVALID', 'response.statusCode'],
  ['a flow gate of no app', (s) => s.flows.leaveGate({ app: '', scope: 'r', kind: 'concurrency', key: '' }, 'h'), 'UHLP_STATE_INPUT_INVALID', 'gate.app'],
  ['a flow gate of an unknown kind', (s) => s.flows.latest({ app: 'shop', scope: 'r', kind: 'bogus' as never, key: '' }), 'UHLP_STATE_INPUT_INVALID', 'gate.kind'],
  ['a fractional flow priority', (s) => s.flows.enterGate({ app: 'shop', scope: 'r', kind: 'concurrency', key: 'k' }, 'h', { limit: 1, holdMs: 1000, priority: 0.5, waitTtlMs: 1000 }), 'UHLP_STATE_INPUT_INVALID', 'priority'],
  ['a flow limit of 0', (s) => s.flows.enterGate({ app: 'shop', scope: 'r', kind: 'concurrency', key: 'k' }, 'h', { limit: 0, holdMs: 1000, priority: 0, waitTtlMs: 1000 }), 'UHLP_STATE_INPUT_INVALID', 'limit'],
  ['a rate limit past the largest', (s) => s.rateLimits.hitRateLimit('shop', 1_000_001), 'UHLP_STATE_INPUT_INVALID', 'limitPerSecond'],
  ['an unknown oracle counter', (s) => s.oracle.incrOracleCounters('shop', 'c', { bogus: 1 } as never), 'UHLP_STATE_INPUT_INVALID', 'deltas.bogus'],
  ['a fractional counter delta', (s) => s.oracle.incrOracleCounters('shop', 'c', { hits: 0.5 }), 'UHLP_STATE_INPUT_INVALID', 'deltas.hits'],
  ['a sample hash that is no hash', (s) => s.oracle.addOracleSample(SCOPE, { ...SAMPLE, inputHash: 'nope' }, SAMPLE_OPTIONS), 'UHLP_STATE_INPUT_INVALID', 'inputHash'],
  ['a scope of no revision', (s) => s.oracle.getOracleSamples({ ...SCOPE, revision: '' }), 'UHLP_STATE_INPUT_INVALID', 'revision'],
  ['a negative record version', (s) => s.oracle.putOracleRecord('shop', 'c', '{}', -1), 'UHLP_STATE_INPUT_INVALID', 'expectedVersion'],
  ['too many kept candidates', (s) => s.oracle.addOracleCandidate('shop', 'c', '{}', 101), 'UHLP_STATE_INPUT_INVALID', 'keep'],
  ['a day that is not YYYY-MM-DD', (s) => s.llm.getLlmTokens('shop', 'today'), 'UHLP_STATE_INPUT_INVALID', 'day'],
  ['negative tokens', (s) => s.llm.addLlmTokens('shop', '2026-03-01', -1, 1000), 'UHLP_STATE_INPUT_INVALID', 'tokens'],
  ['a cached answer that is no string', (s) => s.llm.setLlmCached('shop', 'h', null as unknown as string, 1000), 'UHLP_STATE_INPUT_INVALID', 'value'],
  ['a run record that is no JSON object', (s) => s.runs.createRun('RUN-1', 'not json', 1000, true), 'UHLP_STATE_INPUT_INVALID', 'json'],
  ['a run version of 0', (s) => s.runs.updateRun('RUN-1', 0, '{}', 1000, true), 'UHLP_STATE_INPUT_INVALID', 'expectedVersion'],
  ['an active-run limit of 0', (s) => s.runs.listActiveRuns(0), 'UHLP_STATE_INPUT_INVALID', 'limit'],
  ['a function of no namespace', (s) => s.functions.publishVersion('shop', '', 'fn', HASH), 'UHLP_STATE_INPUT_INVALID', 'namespace'],
  ['an alias that is empty', (s) => s.functions.setAlias('shop', 'ns', 'fn', '', 1), 'UHLP_STATE_INPUT_INVALID', 'alias'],
  ['log chunks of no activation', (s) => s.functions.appendLogs('', '{}', 1000), 'UHLP_STATE_INPUT_INVALID', 'activationId'],
];

describe('withInputChecks', () => {
  it.each(refused)('refuses %s before it reaches the store', async (_, call, code, field) => {
    const { stores, reached } = recordingStores();
    const error = await call(withInputChecks(stores)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isUhlpError(error) ? { code: error.code, details: error.details } : error).toEqual({ code, details: { field } });
    expect(reached).toEqual([]);
  });

  it('hands good input on unchanged, a kv scan with its default limit', async () => {
    const { stores, reached } = recordingStores();
    const checked = withInputChecks(stores);
    await checked.sessions.createSession({ appId: 'shop', ttlMs: 1000 });
    await checked.kv.kvScan('');
    await checked.oracle.addOracleSample(SCOPE, SAMPLE, SAMPLE_OPTIONS);
    await checked.runs.listActiveRuns();
    await checked.functions.readLogs('act-1');
    expect(reached).toEqual(['sessions.createSession', 'kv.kvScan', 'oracle.addOracleSample', 'runs.listActiveRuns', 'functions.readLogs']);
  });
});
