import { describe, expect, it } from 'vitest';
import type { ExecuteResponse } from '../contract/execute-contract.js';
import { compileOutputSchema } from '../contract/output-schema.js';
import { UhlpError } from '../shared/errors.js';
import { DECLINED_CODE } from '../contract/generated-code.js';
import { verifyCandidate, type CandidateRun } from './candidate-verifier.js';
import { makeSample, type OracleSample } from './oracle-sample.js';

const validate = compileOutputSchema({ type: 'object', properties: { label: { enum: ['billing', 'other'] } }, required: ['label'] }).validate;

function sample(text: string, label: string): OracleSample {
  const made = makeSample({ body: { text } }, { label }, 20, new Date(0));
  if ('problem' in made) throw new Error('too large');
  return made;
}

const HELD = [sample('refund please', 'billing'), sample('hello', 'other'), sample('refund now', 'billing'), sample('what?', 'other')];
const ok = (data: unknown): CandidateRun => ({ response: { requestId: 'r', resultType: 'generic', data } as ExecuteResponse, toolCalls: [], violations: 0 });
const declined: CandidateRun = { response: { requestId: 'r', resultType: 'error', data: { code: DECLINED_CODE, message: 'no' } } as ExecuteResponse, toolCalls: [], violations: 0 };
const rule = (inputs: Record<string, unknown>): string => (String((inputs.body as { text: string }).text).includes('refund') ? 'billing' : 'other');

async function verify(run: (inputs: Record<string, unknown>) => CandidateRun, options: Partial<{ agreement: number; minCoverage: number; tools: string[] }> = {}) {
  let runs = 0;
  const verification = await verifyCandidate('export default () => 1', HELD, {
    run: async (_source, inputs) => {
      runs += 1;
      return run(inputs);
    },
    validate,
    tools: options.tools ?? [],
    agreement: options.agreement ?? 0.99,
    minCoverage: options.minCoverage ?? 0.5,
  });
  return { ...verification, runs };
}

describe('verifyCandidate', () => {
  it('passes a candidate that agrees on every held-back sample', async () => {
    expect(await verify((inputs) => ok({ label: rule(inputs) }))).toMatchObject({ verdict: 'passed', agreement: 1, coverage: 1, judged: 4, runs: 4 });
  });

  it('refuses one that answers otherwise, with the samples it got wrong', async () => {
    const verification = await verify(() => ok({ label: 'other' }));
    expect(verification).toMatchObject({ verdict: 'disagreed', agreement: 0.5, outcomes: { agree: 2, disagree: 2 } });
    expect(verification.disagreements.map((d) => d.expected)).toEqual([{ label: 'billing' }, { label: 'billing' }]);
  });

  it('counts declines apart: agreement is over the answered ones, coverage must reach minCoverage', async () => {
    const some = await verify((inputs) => (String((inputs.body as { text: string }).text).includes('?') ? declined : ok({ label: rule(inputs) })));
    expect(some).toMatchObject({ verdict: 'passed', agreement: 1, coverage: 0.75 });
    expect(await verify(() => declined)).toMatchObject({ verdict: 'declined', coverage: 0 });
  });

  it('refuses an answer that fails the output schema, and one that throws', async () => {
    expect(await verify(() => ok({ label: 'spam' }))).toMatchObject({ verdict: 'error', outcomes: { invalid: 4 } });
    const thrown: CandidateRun = { response: { requestId: 'r', resultType: 'error', data: { code: 'UHLP_SCRIPT_EXCEPTION', message: 'boom' } } as ExecuteResponse, toolCalls: [], violations: 0 };
    expect(await verify(() => thrown)).toMatchObject({ verdict: 'error', outcomes: { error: 4 } });
  });

  it('stops at the first timeout, and at the first tool outside the component', async () => {
    const timeout: CandidateRun = { error: new UhlpError('UHLP_SANDBOX_TIMEOUT', 'too slow'), toolCalls: [], violations: 0 };
    expect(await verify(() => timeout)).toMatchObject({ verdict: 'timeout', judged: 1, runs: 1 });
    const outside: CandidateRun = { ...ok({ label: 'other' }), toolCalls: ['core.kv.get', 'core.kv.set'], violations: 1 };
    expect(await verify(() => outside, { tools: ['core.kv.get'] })).toMatchObject({ verdict: 'capability', judged: 1, reason: expect.stringMatching(/core\.kv\.set/) });
    const listed: CandidateRun = { ...ok({ label: 'other' }), toolCalls: ['core.kv.get'] };
    expect((await verify(() => listed, { tools: ['core.kv.get'], agreement: 0.5 })).verdict).toBe('passed');
  });
});
