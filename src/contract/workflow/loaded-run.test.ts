import { describe, expect, it } from 'vitest';
import { loadedRunOf, type LoadedRun } from './loaded-run.js';

const EXPECTED = { runId: 'RUN-1-abc', workflowId: 'flow', revision: 'r1' };

function answer(): LoadedRun {
  return {
    run: {
      id: 'RUN-1-abc',
      workflowId: 'flow',
      revision: 'r1',
      status: 'running',
      state: { position: { frontier: ['look'], arrived: {} }, blackboard: { input: { text: 'hi' } }, retries: {}, loops: {}, feedback: {}, nodesRun: 0 },
      approvals: {},
      remainingMs: 60_000,
      nextStep: 0,
      fresh: true,
    },
    workflowFile: 'workflows/flow.yaml',
    components: { ticket: { handler: 'JIT' }, writer: { handler: 'LLM', llm: { prompt: 'prompts/w.njk' } } },
  };
}

/** `answer()` changed by `change`, which may set anything (a sender's mistake, or a value the engine must not trust). */
function changed(change: (value: any) => void): unknown {
  const value = answer() as any;
  change(value);
  return JSON.parse(JSON.stringify(value));
}

describe('loadedRunOf', () => {
  it('takes a load answer of the run the execution names, as it came', () => {
    const sent = JSON.parse(JSON.stringify(answer()));
    expect(loadedRunOf(sent, EXPECTED)).toBe(sent);
  });

  it('takes one whose blackboard holds keys that mean something to JavaScript objects, as plain data', () => {
    const sent = JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":1},"hasOwnProperty":"x"}');
    const value = changed((v) => (v.run.state.blackboard = sent));
    const taken = loadedRunOf(value, EXPECTED);
    expect(taken?.run.state.blackboard).toEqual(sent);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  const refused: Array<[string, unknown]> = [
    ['absent', undefined],
    ['null', null],
    ['not an object', 'RUN-1-abc'],
    ['an array', [answer()]],
    ["another run's", changed((v) => (v.run.id = 'RUN-2-abc'))],
    ["another workflow's", changed((v) => (v.run.workflowId = 'other'))],
    ['of another revision', changed((v) => (v.run.revision = 'r0'))],
    ['naming another file than its workflow', changed((v) => (v.workflowFile = 'workflows/../app.yaml'))],
    ['of a run that is not running', changed((v) => (v.run.status = 'paused'))],
    ['without its state', changed((v) => delete v.run.state)],
    ['with a frontier that is not a list of node ids', changed((v) => (v.run.state.position.frontier = 'look'))],
    ['with a node id the schema does not allow', changed((v) => (v.run.state.position.frontier = ['../x']))],
    ['with a blackboard that is not an object', changed((v) => (v.run.state.blackboard = 'board'))],
    ['with negative retries', changed((v) => (v.run.state.retries = { look: -1 }))],
    ['with time left below zero', changed((v) => (v.run.remainingMs = -5))],
    ['with a fractional next step', changed((v) => (v.run.nextStep = 0.5))],
    ['with fresh that is not a boolean', changed((v) => (v.run.fresh = 'yes'))],
    ['with an approval of another shape', changed((v) => (v.run.approvals = { gate: { approved: 'yes', at: 'now' } }))],
    ['with a component of an unknown handler', changed((v) => (v.components = { x: { handler: 'SHELL' } }))],
    ['with a field the answer does not have', changed((v) => (v.grants = ['core.linux.executeCommand']))],
    ['with a run field the view does not have', changed((v) => (v.run.allowedTools = ['core.linux.executeCommand']))],
  ];
  it.each(refused)('ignores one that does not hold: %s', (_name, value) => {
    expect(loadedRunOf(value, EXPECTED)).toBeUndefined();
  });
});
