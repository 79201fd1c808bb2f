import { describe, expect, it } from 'vitest';
import { readWorkflow, type WorkflowAppView } from './validate-workflow.js';

const app: WorkflowAppView = {
  componentHandler: (id) => ({ triage: 'LLM', critic: 'LLM', ticket: 'JIT' }) [id] as 'LLM' | 'JIT' | undefined,
  toolProblem: (name) => (name.startsWith('core.') ? undefined : `no tool named "${name}"`),
};

const valid = `
start: classify
nodes:
  classify: { type: agent, component: triage, inputs_map: { text: input.text }, output: triage, next: route }
  route: { type: router, input_key: triage.category, routes: { bug: ticket }, default_route: done }
  ticket: { type: jit, component: ticket, output: ticket, next: done }
  done: { type: end }
`;

describe('workflow validation', () => {
  it('accepts a valid workflow and fills in the defaults', () => {
    const read = readWorkflow(valid, app);
    expect(read.ok).toBe(true);
    if (!read.ok) return;
    expect(read.workflow.policy).toMatchObject({ max_retries: 0, execution_mode: 'sequential' });
    expect(read.workflow.state.persistence).toBe('memory');
  });

  it('names the field at fault with a JSON pointer', () => {
    const problems = (text: string): Array<{ path: string; reason: string }> => {
      const read = readWorkflow(text, app);
      return read.ok ? [] : [...read.problems];
    };
    expect(problems(valid.replace('default_route: done', 'default_route: nowhere'))).toContainEqual({ path: '/nodes/route/default_route', reason: 'no node "nowhere" in nodes' });
    expect(problems(valid.replace('component: ticket,', 'component: triage,'))[0]!.path).toBe('/nodes/ticket/component');
    expect(problems(valid.replace('type: end', 'type: finish'))[0]!.path).toMatch(/^\/nodes\/done\/type/);
    expect(problems(`${valid}skills: [{ id: refunds, load_strategy: lazy, content: skills/r.md }]\n`)).toContainEqual({
      path: '/skills/0/trigger_intent',
      reason: 'required for a lazy skill: it is what the skill is found by',
    });
    expect(problems(valid.replace('next: route', 'next: [route, done]'))[0]).toMatchObject({ path: '/nodes/classify/next' });
    expect(problems(`${valid}requirements: [{ variable: input.x, operator: matches, value: "(", error_message: bad }]\n`)[0]!.path).toBe('/requirements/0/value');
    expect(problems(valid.replace('input_key: triage.category', 'input_key: a.__proto__.b'))[0]!.path).toBe('/nodes/route/input_key');
    expect(problems(`${valid}on_cancel: undo\n`)).toContainEqual({ path: '/on_cancel', reason: 'no node "undo" in nodes' });
    expect(problems(`${valid}on_cancel: "../x"\n`)[0]!.path).toBe('/on_cancel');
    expect(problems(`${valid}on_cancel: ticket\n`)).toEqual([]);
  });

  it('refuses engine tools as steps and YAML that is not a mapping', () => {
    const read = readWorkflow(valid.replace('ticket: { type: jit, component: ticket, output: ticket, next: done }', 'ticket: { type: tool, tool: core.workflow.checkpoint, next: done }'), app);
    expect(read.ok ? [] : read.problems).toContainEqual({ path: '/nodes/ticket/tool', reason: 'core.workflow.checkpoint drives the workflow engine; no step may call it' });
    expect(readWorkflow('- a\n- b\n', app)).toMatchObject({ ok: false, problems: [{ path: '/' }] });
    expect(readWorkflow('start: [', app)).toMatchObject({ ok: false });
  });
});
