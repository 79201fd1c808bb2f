import { describe, expect, it } from 'vitest';
import { replayRequestOf } from './replay-request.js';

const refusal = (body: unknown, kind: 'replay' | 'fork'): unknown => {
  try {
    replayRequestOf(body, kind, 'ada');
  } catch (error) {
    return { code: (error as { code: string }).code, field: (error as { details: { field: string } }).details.field };
  }
  return undefined;
};

describe('replay and fork bodies', () => {
  it('reads a replay and a fork, with who asks', () => {
    expect(replayRequestOf(Buffer.from('{"fromStep": 2}'), 'replay', 'ada')).toEqual({ kind: 'replay', fromStep: 2, by: 'ada' });
    expect(replayRequestOf({ fromStep: 0, currentRevision: true, set: { a: null } }, 'fork', 'ada')).toEqual({ kind: 'fork', fromStep: 0, by: 'ada', currentRevision: true, edit: { set: { a: null } } });
    expect(replayRequestOf({ fromStep: 1, blackboard: { a: 1 } }, 'fork', 'ada')).toMatchObject({ edit: { blackboard: { a: 1 } } });
  });

  it('refuses what is not one, naming the field', () => {
    expect(refusal(Buffer.from('nope'), 'replay')).toEqual({ code: 'UHLP_WORKFLOW_REPLAY_INVALID', field: 'body' });
    expect(refusal([], 'replay')).toEqual({ code: 'UHLP_WORKFLOW_REPLAY_INVALID', field: 'body' });
    expect(refusal({ fromStep: -1 }, 'replay')).toMatchObject({ field: 'fromStep' });
    expect(refusal({ fromStep: 2 ** 40 }, 'replay')).toMatchObject({ field: 'fromStep' });
    expect(refusal({ fromStep: 1, by: 'mallory' }, 'replay')).toMatchObject({ field: 'by' });
    expect(refusal({ fromStep: 1, set: {} }, 'replay')).toMatchObject({ field: 'set' });
    expect(refusal({ fromStep: 1 }, 'fork')).toMatchObject({ field: 'set' });
    expect(refusal({ fromStep: 1, set: {}, blackboard: {} }, 'fork')).toMatchObject({ field: 'blackboard' });
    expect(refusal({ fromStep: 1, blackboard: 'x' }, 'fork')).toMatchObject({ field: 'blackboard' });
    expect(refusal(Buffer.alloc(300 * 1024, 32), 'fork')).toMatchObject({ field: 'body' });
  });
});
