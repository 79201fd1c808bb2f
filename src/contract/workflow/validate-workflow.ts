/**
 * Reads and validates a workflow file: YAML, then the schema of
 * workflow-schema.ts (defaults filled in), then every node against the schema
 * of its type, then what a schema cannot say: every node a node names exists,
 * sequential workflows do not branch, agents name an LLM component of the app
 * or a prompt (not both), JIT nodes a JIT component, tools exist, lazy skills
 * have a trigger_intent, regular expressions compile. Every problem is a JSON
 * pointer into the file and a reason; the core reports them with the file's
 * path when the app loads, and the llm-orchestrator refuses a run on them.
 *
 * It knows the app only through `WorkflowAppView`: the core gives it the app's
 * components, tools and files; the orchestrator what the run's load told it.
 */
import { Value } from '@sinclair/typebox/value';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import type { TSchema } from '@sinclair/typebox';
import { parseDocument } from 'yaml';
import { compileOutputSchema } from '../output-schema.js';
import { schemaErrorReason } from '../../shared/schema-error-reason.js';
import {
  INTERCEPTOR_BUILT_INS,
  NODE_SCHEMAS,
  WorkflowDocument,
  nextOf,
  type Constraint,
  type NodeType,
  type WorkflowDefinition,
  type WorkflowNode,
} from './workflow-schema.js';

export interface WorkflowProblem {
  /** JSON pointer into the workflow file; `/` for the whole file. */
  readonly path: string;
  readonly reason: string;
}

/** What the validator may ask about the app the workflow belongs to. */
export interface WorkflowAppView {
  /** The handler of a component of the app; undefined when there is none. */
  componentHandler(id: string): 'JIT' | 'LLM' | 'WORKFLOW' | undefined;
  /** Whether the core has a tool of this name (and the app's capabilities allow it). @defaultValue every name */
  toolProblem?(name: string): string | undefined;
  /** Whether an app file exists. @defaultValue every file */
  fileExists?(appRelativePath: string): boolean;
}

/** Tools that drive the engine itself: no node or model may call them. */
export const ENGINE_TOOL = /^core\.(workflow\.|component\.invoke$)/;

/** Problems reported at most per file: the first ones are enough to fix it. */
const MAX_PROBLEMS = 50;

const checkDocument = TypeCompiler.Compile(WorkflowDocument);
const nodeCheckers = new Map<TSchema, TypeCheck<TSchema>>();

function checker(schema: TSchema): TypeCheck<TSchema> {
  let check = nodeCheckers.get(schema);
  if (check === undefined) {
    check = TypeCompiler.Compile(schema);
    nodeCheckers.set(schema, check);
  }
  return check;
}

export type WorkflowRead = { readonly ok: true; readonly workflow: WorkflowDefinition } | { readonly ok: false; readonly problems: readonly WorkflowProblem[] };

/** Parses YAML text and validates it (see the module comment). */
export function readWorkflow(text: string, app: WorkflowAppView): WorkflowRead {
  const parsed = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (parsed.errors.length > 0) {
    const error = parsed.errors[0]!;
    const at = error.linePos?.[0];
    const reason = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    return { ok: false, problems: [{ path: '/', reason: at ? `YAML line ${at.line} column ${at.col}: ${reason}` : `YAML: ${reason}` }] };
  }
  return validateWorkflow(parsed.toJS({ maxAliasCount: 100 }) as unknown, app);
}

/** Validates a parsed workflow document. */
export function validateWorkflow(raw: unknown, app: WorkflowAppView): WorkflowRead {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { ok: false, problems: [{ path: '/', reason: 'a workflow file is a YAML mapping' }] };
  const document = Value.Default(WorkflowDocument, structuredClone(raw)) as Record<string, unknown>;
  const problems: WorkflowProblem[] = [];
  if (!checkDocument.Check(document)) {
    for (const error of checkDocument.Errors(document)) {
      problems.push({ path: error.path || '/', reason: schemaErrorReason(error) });
      if (problems.length >= 20) break;
    }
    return { ok: false, problems: dedupe(problems) };
  }
  const nodes: Record<string, WorkflowNode> = {};
  for (const [id, rawNode] of Object.entries(document['nodes'] as Record<string, { type: NodeType }>)) {
    const schema = NODE_SCHEMAS[rawNode.type];
    const node = Value.Default(schema, rawNode) as WorkflowNode;
    const check = checker(schema);
    if (!check.Check(node)) {
      for (const error of check.Errors(node)) {
        problems.push({ path: `/nodes/${id}${error.path}`, reason: schemaErrorReason(error) });
        if (problems.length >= 20) break;
      }
      continue;
    }
    nodes[id] = node;
  }
  if (problems.length > 0) return { ok: false, problems: dedupe(problems) };
  const workflow = { ...document, nodes } as unknown as WorkflowDefinition;
  semanticProblems(workflow, app, problems);
  return problems.length > 0 ? { ok: false, problems: problems.slice(0, MAX_PROBLEMS) } : { ok: true, workflow };
}

function semanticProblems(workflow: WorkflowDefinition, app: WorkflowAppView, problems: WorkflowProblem[]): void {
  const add = (path: string, reason: string): void => void problems.push({ path, reason });
  const ids = new Set(Object.keys(workflow.nodes));
  const parallel = workflow.policy.execution_mode === 'parallel';
  const fileExists = app.fileExists ?? (() => true);
  const toolProblem = (name: string): string | undefined => (ENGINE_TOOL.test(name) ? `${name} drives the workflow engine; no step may call it` : app.toolProblem?.(name));
  const nodeRef = (at: string, id: string): void => {
    if (!ids.has(id)) add(at, `no node "${id}" in nodes`);
  };

  if (!ids.has(workflow.start)) add('/start', `no node "${workflow.start}" in nodes`);
  if (workflow.on_cancel !== undefined && !ids.has(workflow.on_cancel)) add('/on_cancel', `no node "${workflow.on_cancel}" in nodes`);
  if (ids.size === 0) add('/nodes', 'a workflow has at least one node');
  if (!Object.values(workflow.nodes).some((node) => node.type === 'end')) add('/nodes', 'a workflow has at least one end node');
  if (workflow.state.schema !== undefined) {
    const problem = compileOutputSchema(workflow.state.schema).problem;
    if (problem !== undefined) add('/state/schema', `not a JSON Schema: ${problem}`);
  }
  workflow.policy.allow_critical_tools.forEach((name, i) => {
    const problem = toolProblem(name);
    if (problem !== undefined) add(`/policy/allow_critical_tools/${i}`, problem);
  });
  constraintProblems(workflow.requirements, '/requirements', add);

  for (const side of ['request', 'response'] as const) {
    workflow.interceptors[side].forEach((name, i) => {
      if ((INTERCEPTOR_BUILT_INS as readonly string[]).includes(name)) return;
      const handler = app.componentHandler(name);
      if (handler !== 'JIT') add(`/interceptors/${side}/${i}`, `"${name}" is neither a built-in interceptor (${INTERCEPTOR_BUILT_INS.join(', ')}) nor a JIT component of the app`);
    });
  }

  const skillIds = new Set<string>();
  workflow.skills.forEach((skill, i) => {
    if (skillIds.has(skill.id)) add(`/skills/${i}/id`, `duplicate skill id "${skill.id}"`);
    skillIds.add(skill.id);
    if (skill.load_strategy === 'lazy' && skill.trigger_intent === undefined) add(`/skills/${i}/trigger_intent`, 'required for a lazy skill: it is what the skill is found by');
    if (!fileExists(skill.content)) add(`/skills/${i}/content`, `"${skill.content}" does not exist in the app directory`);
  });

  for (const [id, node] of Object.entries(workflow.nodes)) {
    const at = `/nodes/${id}`;
    const next = 'next' in node ? node.next : undefined;
    if (Array.isArray(next)) {
      if (!parallel && next.length > 1) add(`${at}/next`, 'a sequential workflow names one next node; set policy.execution_mode: parallel to branch');
      next.forEach((target, i) => nodeRef(`${at}/next/${i}`, target));
    } else if (typeof next === 'string') nodeRef(`${at}/next`, next);
    if (node.join !== undefined) {
      if (!parallel) add(`${at}/join`, 'join needs policy.execution_mode: parallel');
      node.join.forEach((target, i) => nodeRef(`${at}/join/${i}`, target));
    }
    if (node.requirements !== undefined) constraintProblems(node.requirements, `${at}/requirements`, add);
    if ((node.type === 'agent' || node.type === 'jit' || node.type === 'tool') && nextOf(node).length === 0) {
      add(`${at}/next`, `a ${node.type} node needs next (the run ends at an end node)`);
    }
    switch (node.type) {
      case 'agent': {
        if ((node.component === undefined) === (node.prompt === undefined)) add(at, 'an agent names exactly one of component (an LLM component) and prompt (a template)');
        if (node.component !== undefined) {
          const handler = app.componentHandler(node.component);
          if (handler !== 'LLM') add(`${at}/component`, handler === undefined ? `no component "${node.component}" in the app` : `"${node.component}" is a ${handler} component; an agent runs an LLM component`);
          for (const key of ['system', 'output_schema', 'tools', 'max_tool_calls', 'model', 'temperature', 'max_tokens'] as const) {
            if (node[key] !== undefined) add(`${at}/${key}`, `${key} belongs to inline agents (prompt); the component "${node.component}" has its own`);
          }
        }
        for (const key of ['prompt', 'system'] as const) {
          const file = node[key];
          if (file !== undefined && !fileExists(file)) add(`${at}/${key}`, `"${file}" does not exist in the app directory`);
        }
        if (typeof node.output_schema === 'string') {
          if (!fileExists(node.output_schema)) add(`${at}/output_schema`, `"${node.output_schema}" does not exist in the app directory`);
        } else if (node.output_schema !== undefined) {
          const problem = compileOutputSchema(node.output_schema).problem;
          if (problem !== undefined) add(`${at}/output_schema`, `not a JSON Schema: ${problem}`);
        }
        node.tools?.forEach((name, i) => {
          const problem = toolProblem(name);
          if (problem !== undefined) add(`${at}/tools/${i}`, problem);
        });
        if (node.content_type !== undefined && node.stream === undefined) add(`${at}/content_type`, 'content_type names the type of the node stream: set stream too');
        break;
      }
      case 'jit': {
        const handler = app.componentHandler(node.component);
        if (handler !== 'JIT') add(`${at}/component`, handler === undefined ? `no component "${node.component}" in the app` : `"${node.component}" is a ${handler} component; a jit node runs a JIT component`);
        break;
      }
      case 'tool': {
        const problem = toolProblem(node.tool);
        if (problem !== undefined) add(`${at}/tool`, problem);
        break;
      }
      case 'router':
        for (const [value, target] of Object.entries(node.routes)) nodeRef(`${at}/routes/${escapePointer(value)}`, target);
        nodeRef(`${at}/default_route`, node.default_route);
        break;
      case 'evaluator': {
        const handler = app.componentHandler(node.evaluator_agent_ref);
        if (handler !== 'LLM') {
          add(`${at}/evaluator_agent_ref`, handler === undefined ? `no component "${node.evaluator_agent_ref}" in the app` : `"${node.evaluator_agent_ref}" is a ${handler} component; the judge is an LLM component`);
        }
        nodeRef(`${at}/pass_route`, node.pass_route);
        nodeRef(`${at}/fail_route`, node.fail_route);
        if (node.score_range !== undefined && !(node.score_range[0] < node.score_range[1])) add(`${at}/score_range`, 'the first number is the lowest score, below the second');
        break;
      }
      case 'approval':
        if (node.reject_route !== undefined) nodeRef(`${at}/reject_route`, node.reject_route);
        node.grants.forEach((name, i) => {
          const problem = toolProblem(name);
          if (problem !== undefined) add(`${at}/grants/${i}`, problem);
        });
        break;
      case 'end':
        break;
    }
  }
}

function constraintProblems(constraints: readonly Constraint[], at: string, add: (path: string, reason: string) => void): void {
  constraints.forEach((constraint, i) => {
    const where = `${at}/${i}`;
    if (constraint.operator === 'exists') return;
    if (!('value' in constraint) || constraint.value === undefined) {
      add(`${where}/value`, `operator ${constraint.operator} compares with a value`);
      return;
    }
    if (constraint.operator === 'matches') {
      if (typeof constraint.value !== 'string') add(`${where}/value`, 'matches takes a regular expression (a string)');
      else {
        try {
          new RegExp(constraint.value, 'u');
        } catch (error) {
          add(`${where}/value`, `not a regular expression: ${(error as Error).message}`);
        }
      }
    }
    if (constraint.field === 'length' && !['eq', 'ne', 'gt', 'gte', 'lt', 'lte'].includes(constraint.operator)) {
      add(`${where}/field`, `field: length compares a number; operator ${constraint.operator} does not`);
    }
  });
}

function escapePointer(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

function dedupe(problems: WorkflowProblem[]): WorkflowProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => (seen.has(p.path) ? false : (seen.add(p.path), true)));
}
