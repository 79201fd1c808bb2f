import { describe, expect, it } from 'vitest';
import { FAKE_REVISION, FakeTools } from '../../../../test/helpers/fake-tools.js';
import { FakeClock, freshState, workflowRequest } from '../../../../test/helpers/workflow-fakes.js';
import type { Approval, EngineState, RunView } from '../../../contract/workflow/run-view.js';
import type { ScriptResult } from '../../kit/script-result.js';
import { ToolCallError, type ExecutionTools } from '../../kit/tools-client.js';
import { GENERATE_TOOL } from '../generate-client.js';
import { CHECKPOINT_TOOL, INVOKE_TOOL, LOAD_TOOL } from './engine-tools.js';
import type { ComponentView } from './nodes/node-context.js';
import { createWorkflowExecutor } from './workflow-executor.js';

const WORKFLOW_FILE = 'workflows/flow.yaml';

interface EngineOptions {
  readonly yaml: string;
  readonly state?: EngineState;
  readonly blackboard?: Record<string, unknown>;
  readonly fresh?: boolean;
  readonly approvals?: Record<string, Approval>;
  readonly remainingMs?: number;
  readonly components?: Record<string, ComponentView>;
  readonly files?: Record<string, string>;
  readonly tools?: Record<string, (args: Record<string, unknown>) => Record<string, unknown> | Promise<Record<string, unknown>>>;
  /** core.llm.generate's texts, in turn. */
  readonly answers?: string[];
  /**
   * What the context carries as `workflowInfo.loaded`: the core's load answer
   * itself ('answer'), or a value made from it (what another sender might put
   * there). @defaultValue nothing: the run is loaded through MCP
   */
  readonly loaded?: 'answer' | ((answer: Record<string, unknown>) => unknown);
}

/** One execution of the engine against a fake core that holds the run. */
async function execute(options: EngineOptions): Promise<{ result: ScriptResult; tools: FakeTools; checkpoints: Array<Record<string, unknown>>; waits: number[] }> {
  const start = options.yaml.match(/^start: (\S+)$/m)![1]!;
  const run: RunView = {
    id: 'RUN-1-abc',
    workflowId: 'flow',
    revision: FAKE_REVISION,
    status: 'running',
    state: options.state ?? freshState([start], options.blackboard ?? { input: { text: 'hi' } }),
    approvals: options.approvals ?? {},
    remainingMs: options.remainingMs ?? 60_000,
    nextStep: 0,
    fresh: options.fresh ?? true,
  };
  const answers = [...(options.answers ?? [])];
  const tools = new FakeTools({
    files: { [WORKFLOW_FILE]: options.yaml, ...options.files },
    tools: {
      [LOAD_TOOL]: () => ({ run, components: options.components ?? {}, workflowFile: WORKFLOW_FILE }),
      [CHECKPOINT_TOOL]: () => ({ ok: true }),
      [GENERATE_TOOL]: () => ({ text: answers.length > 1 ? answers.shift()! : answers[0], toolCalls: [], finishReason: 'stop', model: 'small', usage: { prompt: 1, completion: 1 }, cached: false }),
      ...options.tools,
    },
  });
  const waits: number[] = [];
  const executor = createWorkflowExecutor({ sleep: async (ms) => void waits.push(ms), clock: new FakeClock() });
  const request = workflowRequest();
  if (options.loaded !== undefined) {
    // As it arrives: JSON, not the objects the fake core answers with.
    const answer = JSON.parse(JSON.stringify({ run, components: options.components ?? {}, workflowFile: WORKFLOW_FILE })) as Record<string, unknown>;
    (request.context.workflowInfo as Record<string, unknown>)['loaded'] = options.loaded === 'answer' ? answer : options.loaded(answer);
  }
  const result = await executor(request, tools as unknown as ExecutionTools);
  return { result, tools, checkpoints: tools.callsOf(CHECKPOINT_TOOL), waits };
}

const stepsOf = (calls: Array<Record<string, unknown>>): Array<{ node: string; status: string; index: number }> =>
  calls.flatMap((call) => (call['steps'] as Array<{ node: string; status: string; index: number }>).map(({ node, status, index }) => ({ node, status, index })));


/** A workflow that requires input.text and looks a key up: its requirements are checked before the lookup. */
const REQUIRES_TEXT = `
requirements: [{ variable: input.text, operator: exists, error_message: a text is required }]
start: look
nodes:
  look: { type: tool, tool: core.kv.get, next: done }
  done: { type: end }
`;

describe('the workflow engine', () => {
  it('runs a sequential run to its end, checkpointing before every call out and with its result', async () => {
    const { result, tools, checkpoints } = await execute({
      yaml: `
start: look
nodes:
  look: { type: tool, tool: core.kv.get, args: { key: kind }, output: kind, next: route }
  route: { type: router, input_key: kind.value, routes: { bug: file }, default_route: done }
  file: { type: jit, component: ticket, inputs_map: { text: input.text }, output: ticket, next: done }
  done: { type: end, output: { ticket: ticket.id } }
`,
      components: { ticket: { handler: 'JIT' } },
      tools: { 'core.kv.get': () => ({ value: 'bug' }), [INVOKE_TOOL]: () => ({ resultType: 'generic', data: { id: 7 } }) },
    });
    expect(result).toEqual({ resultType: 'generic', data: { ticket: 7 } });
    // The tool and router steps ride with the JIT call; the JIT and end steps with the run's last checkpoint.
    const invoke = tools.callsOf(INVOKE_TOOL)[0]!;
    expect(invoke).toMatchObject({ component: 'ticket', input: { text: 'hi' }, node: 'file' });
    expect(stepsOf([invoke['checkpoint'] as Record<string, unknown>])).toEqual([
      { node: 'look', status: 'completed', index: 0 },
      { node: 'route', status: 'completed', index: 1 },
    ]);
    expect(checkpoints).toHaveLength(1);
    expect(checkpoints[0]).toMatchObject({ status: 'completed', result: { ticket: 7 }, state: { nodesRun: 4, position: { frontier: [] } } });
    expect(stepsOf(checkpoints)).toEqual([
      { node: 'file', status: 'completed', index: 2 },
      { node: 'done', status: 'completed', index: 3 },
    ]);
    expect(tools.calls.map((call) => call.name)).toEqual([LOAD_TOOL, 'core.state.getDefinitionFileContent', 'core.kv.get', INVOKE_TOOL, CHECKPOINT_TOOL]);
  });

  it('runs parallel branches at once and joins them', async () => {
    let bothStarted: () => void = () => {};
    const started = new Promise<void>((resolve) => (bothStarted = resolve));
    let waiting = 2;
    // Each branch answers only once both have started: run one at a time, they would never answer.
    const branch = (value: string) => async (): Promise<Record<string, unknown>> => {
      if (--waiting === 0) bothStarted();
      await started;
      return { value };
    };
    const { result, checkpoints } = await execute({
      remainingMs: 5_000,
      yaml: `
policy: { execution_mode: parallel }
start: fan
nodes:
  fan: { type: tool, tool: core.log, next: [left, right] }
  left: { type: tool, tool: core.kv.get, output: l, next: both }
  right: { type: tool, tool: core.kv.list, output: r, next: both }
  both: { type: end, join: [left, right], output: { l: l.value, r: r.value } }
`,
      tools: { 'core.log': () => ({}), 'core.kv.get': branch('L'), 'core.kv.list': branch('R') },
    });
    expect(result).toEqual({ resultType: 'generic', data: { l: 'L', r: 'R' } });
    // fan's step goes before the branches call out; theirs ride with the run's last checkpoint (the join is an end).
    expect(checkpoints.map((call) => call['status'])).toEqual([undefined, 'completed']);
    expect(checkpoints[0]).toMatchObject({ state: { position: { frontier: ['left', 'right'] } } });
    expect(stepsOf(checkpoints).map((step) => step.node)).toEqual(['fan', 'left', 'right', 'both']);
  });

  it('pauses at an approval node without a decision, and goes on once it has one', async () => {
    const yaml = `
start: ask
nodes:
  ask: { type: approval, prompt: Refund?, next: done }
  done: { type: end, output: input.text }
`;
    const paused = await execute({ yaml });
    expect(paused.result).toEqual({ resultType: 'generic', data: { status: 'paused', node: 'ask' } });
    expect(paused.checkpoints).toEqual([expect.objectContaining({ status: 'paused', paused: { node: 'ask', prompt: 'Refund?' }, steps: [], state: expect.objectContaining({ position: { frontier: ['ask'], arrived: {} }, nodesRun: 0 }) })]);

    const resumed = await execute({ yaml, fresh: false, approvals: { ask: { approved: true, by: 'ada', at: '2026-01-02T00:00:00.000Z' } } });
    expect(resumed.result).toEqual({ resultType: 'generic', data: 'hi' });
    expect(stepsOf(resumed.checkpoints).map((step) => step.node)).toEqual(['ask', 'done']);
  });

  it("fails a fresh run whose requirements fail with 422 and the constraint's message, before any node runs", async () => {
    const yaml = REQUIRES_TEXT;
    const { result, tools, checkpoints } = await execute({ yaml, blackboard: { input: {} } });
    expect(result).toEqual({ resultType: 'error', data: { code: 'UHLP_WORKFLOW_PREFLIGHT_FAILED', message: 'a text is required', status: 422, details: { variable: 'input.text', operator: 'exists' } } });
    expect(checkpoints).toEqual([expect.objectContaining({ status: 'failed', error: expect.objectContaining({ code: 'UHLP_WORKFLOW_PREFLIGHT_FAILED' }) })]);
    expect(tools.callsOf('core.kv.get')).toEqual([]);
    // A run resumed elsewhere checked them when it started.
    const resumed = await execute({ yaml, blackboard: { input: {} }, fresh: false, tools: { 'core.kv.get': () => ({}) } });
    expect(resumed.result).toMatchObject({ resultType: 'generic' });
  });

  it('starts from the load answer the context carries, without asking the core for it, to the same end', async () => {
    const yaml = `
start: look
nodes:
  look: { type: tool, tool: core.kv.get, args: { key: kind }, output: kind, next: file }
  file: { type: jit, component: ticket, inputs_map: { text: input.text }, output: ticket, next: done }
  done: { type: end, output: { ticket: ticket.id, kind: kind.value } }
`;
    const options = { yaml, components: { ticket: { handler: 'JIT' as const } }, tools: { 'core.kv.get': () => ({ value: 'bug' }), [INVOKE_TOOL]: () => ({ resultType: 'generic', data: { id: 7 } }) } };
    const loaded = await execute(options);
    const carried = await execute({ ...options, loaded: 'answer' });
    expect(carried.result).toEqual({ resultType: 'generic', data: { ticket: 7, kind: 'bug' } });
    expect(carried.result).toEqual(loaded.result);
    expect(carried.tools.calls.map((call) => call.name)).toEqual(loaded.tools.calls.map((call) => call.name).filter((name) => name !== LOAD_TOOL));
    expect(carried.tools.callsOf(LOAD_TOOL)).toEqual([]);
    expect(stepsOf(carried.checkpoints)).toEqual(stepsOf(loaded.checkpoints));
  });

  it("checks a fresh run's requirements whether its load answer was carried or loaded", async () => {
    const yaml = REQUIRES_TEXT;
    const { result, tools } = await execute({ yaml, blackboard: { input: {} }, loaded: 'answer' });
    expect(result).toMatchObject({ resultType: 'error', data: { code: 'UHLP_WORKFLOW_PREFLIGHT_FAILED', status: 422 } });
    expect(tools.callsOf('core.kv.get')).toEqual([]);
    expect(tools.callsOf(LOAD_TOOL)).toEqual([]);
  });

  const unheld: Array<[string, (answer: Record<string, any>) => unknown]> = [
    ["another run's", (answer) => ({ ...answer, run: { ...answer['run'], id: 'RUN-9-xyz' } })],
    ['of another revision', (answer) => ({ ...answer, run: { ...answer['run'], revision: 'r-other' } })],
    ['claiming the run is not fresh, with a state of another shape', (answer) => ({ ...answer, run: { ...answer['run'], fresh: false, state: { blackboard: {} } } })],
    ['naming another file', (answer) => ({ ...answer, workflowFile: 'workflows/other.yaml' })],
    ['a string', () => 'RUN-1-abc'],
    ['an empty object', () => ({})],
  ];
  it.each(unheld)('loads the run through MCP when the carried answer does not hold (%s), and its checks stand', async (_name, make) => {
    const yaml = REQUIRES_TEXT;
    const { result, tools } = await execute({ yaml, blackboard: { input: {} }, loaded: make });
    expect(tools.callsOf(LOAD_TOOL)).toEqual([{}]);
    // The core's answer says the run is fresh: its requirements are checked, whatever the carried one said.
    expect(result).toMatchObject({ resultType: 'error', data: { code: 'UHLP_WORKFLOW_PREFLIGHT_FAILED', status: 422 } });
    expect(tools.callsOf('core.kv.get')).toEqual([]);
  });

  it('fails UHLP_WORKFLOW_INVALID (500) for a workflow file that breaks the schema, or cannot be read', async () => {
    const invalid = await execute({ yaml: 'start: nowhere\nnodes:\n  a: { type: end }\n' });
    expect(invalid.result).toMatchObject({ resultType: 'error', data: { code: 'UHLP_WORKFLOW_INVALID', status: 500, message: expect.stringMatching(/^workflows\/flow\.yaml is invalid: \/start: /), details: { problems: expect.any(Array) } } });
    expect(invalid.checkpoints).toEqual([expect.objectContaining({ status: 'failed' })]);

    const tools = new FakeTools({ tools: { [LOAD_TOOL]: () => ({ run: { ...freshRun(), revision: FAKE_REVISION }, components: {}, workflowFile: 'workflows/gone.yaml' }), [CHECKPOINT_TOOL]: () => ({}) } });
    const unread = await createWorkflowExecutor()(workflowRequest(), tools as unknown as ExecutionTools);
    expect(unread).toMatchObject({ resultType: 'error', data: { code: 'UHLP_WORKFLOW_INVALID', status: 500, message: expect.stringMatching(/^workflows\/flow\.yaml cannot be read: /) } });
  });

  it('answers 500 UHLP_EXECUTE_BAD_REQUEST, loading nothing, for an execution that names no run', async () => {
    const tools = new FakeTools();
    const request = workflowRequest();
    const result = await createWorkflowExecutor()({ ...request, context: { ...request.context, workflowInfo: { workflowId: 'flow' } } }, tools as unknown as ExecutionTools);
    expect(result).toEqual({ resultType: 'error', data: { code: 'UHLP_EXECUTE_BAD_REQUEST', message: 'context.workflowInfo.runId and taskDetails.revision are required to run a workflow', status: 500 } });
    expect(tools.calls).toEqual([]);
  });

  it('times a run out past its time: 504 UHLP_WORKFLOW_TIMEOUT, the run timed_out, the step failed', async () => {
    const { result, checkpoints } = await execute({
      remainingMs: 30,
      yaml: `
start: hang
nodes:
  hang: { type: tool, tool: core.kv.get, next: done }
  done: { type: end }
`,
      tools: { 'core.kv.get': () => new Promise<never>(() => {}) },
    });
    expect(result).toMatchObject({ resultType: 'error', data: { code: 'UHLP_WORKFLOW_TIMEOUT', status: 504, details: { runId: 'RUN-1-abc' } } });
    expect(checkpoints).toEqual([expect.objectContaining({ status: 'timed_out' })]);
    expect(stepsOf(checkpoints)).toEqual([{ node: 'hang', status: 'failed', index: 0 }]);
  });

  it('retries a failed step with backoff and keeps the count in the run', async () => {
    let failures = 1;
    const { result, checkpoints, waits } = await execute({
      yaml: `
policy: { max_retries: 1, retry_backoff_ms: 10 }
start: look
nodes:
  look: { type: tool, tool: core.kv.get, output: found, next: done }
  done: { type: end, output: found.value }
`,
      tools: { 'core.kv.get': () => (failures-- > 0 ? Promise.reject(new ToolCallError('UHLP_STATE_UNAVAILABLE', 'down', 503)) : { value: 3 }) },
    });
    expect(result).toEqual({ resultType: 'generic', data: 3 });
    expect(waits).toHaveLength(1);
    expect(checkpoints[0]).toMatchObject({ state: { retries: { look: 1 } } });
  });

  it("fails the run with a node's error and its failed step", async () => {
    const { result, checkpoints } = await execute({
      yaml: `
start: look
nodes:
  look: { type: tool, tool: core.kv.get, next: done }
  done: { type: end }
`,
      tools: { 'core.kv.get': () => Promise.reject(new ToolCallError('UHLP_CAPABILITY_DENIED', 'kv is not granted', 403, { capability: 'kv' })) },
    });
    expect(result).toEqual({ resultType: 'error', data: { code: 'UHLP_CAPABILITY_DENIED', message: 'kv is not granted', status: 403, details: { capability: 'kv' } } });
    expect(checkpoints).toEqual([expect.objectContaining({ status: 'failed', steps: [expect.objectContaining({ node: 'look', status: 'failed', thought: 'tool node failed', error: expect.objectContaining({ code: 'UHLP_CAPABILITY_DENIED' }) })] })]);
  });

  it('leaves the run as its last checkpoint has it when a step is refused by the runtime store: the execution answers the refusal, the core goes on later', async () => {
    const { result, checkpoints } = await execute({
      yaml: `
start: look
nodes:
  look: { type: tool, tool: core.kv.get, next: done }
  done: { type: end }
`,
      tools: { 'core.kv.get': () => Promise.reject(new ToolCallError('UHLP_STATE_UNAVAILABLE', 'the runtime store is failing over', 503)) },
    });
    expect(result).toMatchObject({ resultType: 'error', data: { code: 'UHLP_STATE_UNAVAILABLE', status: 503 } });
    expect(checkpoints).toEqual([]);
  });

  it('fails 500 UHLP_WORKFLOW_STATE_INVALID when a node leaves the blackboard breaking the state schema', async () => {
    const { result } = await execute({
      yaml: `
state: { schema: { type: object, properties: { count: { type: integer } } } }
start: look
nodes:
  look: { type: tool, tool: core.kv.get, output: count, next: done }
  done: { type: end }
`,
      tools: { 'core.kv.get': () => ({ value: 'many' }) },
    });
    expect(result).toEqual({ resultType: 'error', data: { code: 'UHLP_WORKFLOW_STATE_INVALID', message: 'the blackboard breaks the workflow state.schema', status: 500, details: { errors: ['/count must be integer'] } } });
  });

  it('loops an agent through its evaluator with the critique in the next prompt until it passes', async () => {
    const { result, tools } = await execute({
      yaml: `
start: write
nodes:
  write: { type: agent, component: writer, inputs_map: { text: input.text }, output: draft, next: judge }
  judge: { type: evaluator, evaluator_agent_ref: critic, target_variable: draft, pass_threshold: 0.5, pass_route: done, fail_route: write, feedback_variable: critique, max_retries: 2 }
  done: { type: end, output: draft }
`,
      components: { writer: { handler: 'LLM', llm: { prompt: 'prompts/write.njk' } }, critic: { handler: 'LLM', llm: { prompt: 'prompts/judge.njk' } } },
      files: { 'prompts/write.njk': 'Write about {{ body.text }}', 'prompts/judge.njk': 'Judge {{ body.target }}' },
      answers: ['first draft', '{"score": 0.2, "critique": "say more"}', 'second draft', '{"score": 0.9}'],
    });
    expect(result).toEqual({ resultType: 'generic', data: 'second draft' });
    const prompts = tools.callsOf(GENERATE_TOOL).map((call) => (call['messages'] as Array<{ content: string }>).at(-1)!.content);
    expect(prompts).toEqual(['Write about hi', 'Judge first draft', 'Write about hi\n\nFeedback on your previous answer (revise it accordingly):\nsay more', 'Judge second draft']);
  });

  it('fails UHLP_WORKFLOW_INVALID when the run has nowhere left to go (a join waiting for a node no path reaches)', async () => {
    const { result } = await execute({
      yaml: `
policy: { execution_mode: parallel }
start: look
nodes:
  look: { type: tool, tool: core.kv.get, next: done }
  never: { type: tool, tool: core.kv.get, next: done }
  done: { type: end, join: [look, never] }
`,
      tools: { 'core.kv.get': () => ({}) },
    });
    expect(result).toMatchObject({ resultType: 'error', data: { code: 'UHLP_WORKFLOW_INVALID', message: 'the run has no node left to run and reached no end node', status: 500 } });
  });
});

function freshRun(): RunView {
  return { id: 'RUN-1-abc', workflowId: 'flow', revision: FAKE_REVISION, status: 'running', state: freshState(['a']), approvals: {}, remainingMs: 1000, nextStep: 0, fresh: true };
}
