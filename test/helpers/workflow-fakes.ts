/**
 * Fakes of what the workflow engine's nodes call, for its unit tests: the MCP
 * tools client (fake-tools.ts: app files, tools answered by handlers, a log of
 * calls), a scripted core.llm.generate, the run's pending checkpoint, and a
 * clock that moves only when told. A node context is built over them with the
 * orchestrator's real templates, schemas, tool listings and skills.
 */
import type { ExecuteRequest } from '../../src/contract/execute-contract.js';
import type { Approval, EngineState } from '../../src/contract/workflow/run-view.js';
import { readWorkflow } from '../../src/contract/workflow/validate-workflow.js';
import type { WorkflowDefinition } from '../../src/contract/workflow/workflow-schema.js';
import { DefinitionFiles } from '../../src/runners/llm-orchestrator/definition-files.js';
import type { Generate, GenerateAnswer, GenerateRequest } from '../../src/runners/llm-orchestrator/generate-client.js';
import { ModelTools } from '../../src/runners/llm-orchestrator/model-tools.js';
import { OutputSchemas } from '../../src/runners/llm-orchestrator/output-schemas.js';
import { PromptTemplates } from '../../src/runners/llm-orchestrator/prompt-templates.js';
import { SkillIndex } from '../../src/runners/llm-orchestrator/skill-index.js';
import type { EngineClock } from '../../src/runners/llm-orchestrator/workflow/engine-clock.js';
import type { CheckpointCarrier, ComponentView, NodeContext } from '../../src/runners/llm-orchestrator/workflow/nodes/node-context.js';
import type { RunState } from '../../src/runners/llm-orchestrator/workflow/run-state.js';
import { FAKE_REVISION, FakeTools } from './fake-tools.js';

export const APP_ID = 'flow';

/** A validated workflow of `yaml`, its defaults filled in; `components` are the app's, by handler. */
export function workflowOf(yaml: string, components: Readonly<Record<string, ComponentView>> = {}): WorkflowDefinition {
  const read = readWorkflow(yaml, { componentHandler: (id) => components[id]?.handler });
  if (!read.ok) throw new Error(`invalid test workflow: ${JSON.stringify(read.problems)}`);
  return read.workflow;
}

/** A run's state at its start: the blackboard holds `input`. */
export function freshState(frontier: readonly string[], blackboard: Record<string, unknown> = {}): EngineState {
  return { position: { frontier: [...frontier], arrived: {} }, blackboard, retries: {}, loops: {}, feedback: {}, nodesRun: 0 };
}

/** The /execute request of a workflow run's execution. */
export function workflowRequest(runId = 'RUN-1-abc'): ExecuteRequest {
  return {
    requestId: 'req-1',
    requestData: {
      source: 'http',
      httpDetails: { method: 'POST', path: '/flow', routePattern: '/flow', pathParameters: {}, queryParameters: {}, headers: { 'content-type': 'application/json' }, body: '{"text":"hi"}', bodyEncoding: 'utf8' },
    },
    context: {
      appId: APP_ID,
      componentId: 'flow',
      workflowInfo: { workflowId: 'flow', runId },
      mcp_endpoint: 'http://core/mcp',
      mcp_token: 't',
      stateConfig: { type: 'mcp_tool' },
      configuration: { tone: 'brief' },
      applicationInfo: { deploymentMode: 'development' },
      taskDetails: { handler: 'WORKFLOW', revision: FAKE_REVISION },
    },
  };
}

/** core.llm.generate answering `answers` in turn (the last one again when they run out); an Error is thrown. */
export class FakeModel {
  readonly asked: GenerateRequest[] = [];
  private readonly answers: Array<string | Error>;

  constructor(...answers: Array<string | Error>) {
    this.answers = answers;
  }

  readonly generate: Generate = async (request) => {
    this.asked.push(structuredClone(request));
    const next = this.answers.length > 1 ? this.answers.shift()! : this.answers[0]!;
    if (next instanceof Error) throw next;
    return { text: next, toolCalls: [], finishReason: 'stop', model: 'small', usage: { prompt: 1, completion: 1 }, cached: false } satisfies GenerateAnswer;
  };

  /** The user message of the `index`th request. */
  userMessage(index = 0): string {
    return this.asked[index]!.messages.find((message) => message.role === 'user')!.content as string;
  }
}

/** The run's pending checkpoint, as a JIT step sees it. */
export class FakeCheckpoints implements CheckpointCarrier {
  readonly sent: Array<{ tool: string; args: Record<string, unknown> }> = [];

  constructor(
    private readonly tools: FakeTools,
    private pending?: Record<string, unknown>,
  ) {}

  take(): Record<string, unknown> | undefined {
    const pending = this.pending;
    this.pending = undefined;
    return pending;
  }

  async send(tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.sent.push({ tool, args: structuredClone(args) });
    return this.tools.call(tool, args);
  }
}

/** A monotonic clock at `now` ms that moves when `advance` says; its wall time starts at `start`. */
export class FakeClock implements EngineClock {
  constructor(
    public at = 1000,
    private readonly start = Date.parse('2026-01-02T03:04:05.000Z'),
  ) {}

  now(): number {
    return this.at;
  }

  date(): Date {
    return new Date(this.start + this.at);
  }

  advance(ms: number): void {
    this.at += ms;
  }
}

export interface NodeContextOptions {
  readonly workflow: WorkflowDefinition;
  readonly tools?: FakeTools;
  readonly model?: FakeModel;
  readonly blackboard?: Record<string, unknown>;
  readonly state?: Partial<RunState>;
  readonly approvals?: Readonly<Record<string, Approval>>;
  readonly components?: Readonly<Record<string, ComponentView>>;
  readonly checkpoints?: CheckpointCarrier;
}

/** A node context over the fakes; the state is returned in it, changed in place by the node. */
export function nodeContext(options: NodeContextOptions): NodeContext {
  const tools = options.tools ?? new FakeTools();
  const files = new DefinitionFiles();
  return {
    request: workflowRequest(),
    workflowId: 'flow',
    workflow: options.workflow,
    components: options.components ?? {},
    state: { ...(structuredClone(freshState([options.workflow.start], options.blackboard ?? {})) as RunState), ...options.state },
    approvals: options.approvals ?? {},
    tools,
    scope: { appId: APP_ID, revision: FAKE_REVISION, tools },
    generate: (options.model ?? new FakeModel('unused')).generate,
    llm: { templates: new PromptTemplates(files), schemas: new OutputSchemas(files), modelTools: new ModelTools(), skills: new SkillIndex(files) },
    checkpoints: options.checkpoints ?? new FakeCheckpoints(tools),
  };
}
