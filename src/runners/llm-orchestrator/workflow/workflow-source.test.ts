import { describe, expect, it } from 'vitest';
import { FAKE_REVISION, FakeTools } from '../../../../test/helpers/fake-tools.js';
import { DefinitionFileError, DefinitionFiles, READ_TOOL } from '../definition-files.js';
import { WorkflowSource } from './workflow-source.js';

const yaml = `
state: { schema: { type: object } }
start: file
nodes:
  file: { type: jit, component: ticket, next: done }
  done: { type: end }
`;

describe("the run's workflow", () => {
  it('is read and validated once per app, revision and file', async () => {
    const tools = new FakeTools({ files: { 'workflows/a.yaml': yaml } });
    const source = new WorkflowSource(new DefinitionFiles());
    const first = await source.read('flow', FAKE_REVISION, 'workflows/a.yaml', { ticket: { handler: 'JIT' } }, tools);
    const again = await source.read('flow', FAKE_REVISION, 'workflows/a.yaml', { ticket: { handler: 'JIT' } }, tools);
    expect(first.ok).toBe(true);
    expect(again).toBe(first);
    expect(tools.callsOf(READ_TOOL)).toHaveLength(1);
  });

  it("is checked against the app's components", async () => {
    const tools = new FakeTools({ files: { 'workflows/a.yaml': yaml } });
    const read = await new WorkflowSource(new DefinitionFiles()).read('flow', FAKE_REVISION, 'workflows/a.yaml', { ticket: { handler: 'LLM' } }, tools);
    expect(read).toMatchObject({ ok: false, problems: [{ path: '/nodes/file/component' }] });
  });

  it('throws DefinitionFileError for a file that cannot be read', async () => {
    await expect(new WorkflowSource(new DefinitionFiles()).read('flow', FAKE_REVISION, 'workflows/gone.yaml', {}, new FakeTools())).rejects.toThrow(DefinitionFileError);
  });

  it('compiles the state schema once, and none for a workflow without one', async () => {
    const tools = new FakeTools({ files: { 'workflows/a.yaml': yaml, 'workflows/b.yaml': yaml.replace('state: { schema: { type: object } }', '') } });
    const source = new WorkflowSource(new DefinitionFiles());
    const a = await source.read('flow', FAKE_REVISION, 'workflows/a.yaml', { ticket: { handler: 'JIT' } }, tools);
    const b = await source.read('flow', FAKE_REVISION, 'workflows/b.yaml', { ticket: { handler: 'JIT' } }, tools);
    if (!a.ok || !b.ok) throw new Error('invalid');
    const schema = source.stateSchema('flow', FAKE_REVISION, 'a', a.workflow);
    expect(schema?.validate?.({})).toBe(true);
    expect(schema?.validate?.([])).toBe(false);
    expect(source.stateSchema('flow', FAKE_REVISION, 'a', a.workflow)).toBe(schema);
    expect(source.stateSchema('flow', FAKE_REVISION, 'b', b.workflow)).toBeUndefined();
  });
});
