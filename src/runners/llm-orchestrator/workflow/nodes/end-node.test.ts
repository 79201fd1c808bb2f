import { describe, expect, it } from 'vitest';
import { nodeContext, workflowOf } from '../../../../../test/helpers/workflow-fakes.js';
import type { EndNode } from '../../../../contract/workflow/workflow-schema.js';
import { runEndNode } from './end-node.js';

const board = { input: { text: 'hi' }, answer: { text: 'hello' }, n: 0 };

describe('an end node', () => {
  it.each<[string, string, unknown]>([
    ['the whole blackboard without output', '{ type: end }', board],
    ['one blackboard value', '{ type: end, output: answer.text }', 'hello'],
    ['a falsy value as it is', '{ type: end, output: n }', 0],
    ['null for a missing value', '{ type: end, output: nowhere.at.all }', null],
    ['an object of names to values', '{ type: end, output: { said: input.text, reply: answer.text, gone: nope } }', { said: 'hi', reply: 'hello', gone: null }],
  ])('ends the run with %s', (_name, yaml, result) => {
    const workflow = workflowOf(`start: done\nnodes:\n  done: ${yaml}\n`);
    const outcome = runEndNode(workflow.nodes['done'] as EndNode, nodeContext({ workflow, blackboard: structuredClone(board) }));
    expect(outcome).toEqual({ next: [], thought: 'the run ends', action: { type: 'end' }, observation: null, output: result, end: { result } });
  });
});
