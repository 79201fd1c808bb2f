import { describe, expect, it } from 'vitest';
import { ToolNames, functionName } from './tool-names.js';

describe('tool names', () => {
  it.each([
    ['core.kv.get', 'core_kv_get'],
    ['tool.web.fetch', 'tool_web_fetch'],
    ['already_fine-1', 'already_fine-1'],
    ['with space/and:colon', 'with_space_and_colon'],
    ['é', '_'],
    ['', '_'],
    ['x'.repeat(80), 'x'.repeat(64)],
  ])('maps %s to %s', (tool, fn) => {
    expect(functionName(tool)).toBe(fn);
    expect(functionName(tool)).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it('maps both ways, one to one, even for names that would collide', () => {
    const names = new ToolNames(['core.kv.get', 'core_kv.get', 'core.kv_get', 'core.kv.get', `${'y'.repeat(70)}.a`, `${'y'.repeat(70)}.b`]);
    expect(names.functionOf('core.kv.get')).toBe('core_kv_get');
    expect(names.functionOf('core_kv.get')).toBe('core_kv_get_2');
    expect(names.functionOf('core.kv_get')).toBe('core_kv_get_3');
    expect(names.functionOf(`${'y'.repeat(70)}.b`)).toBe(`${'y'.repeat(62)}_2`);
    for (const tool of ['core.kv.get', 'core_kv.get', 'core.kv_get', `${'y'.repeat(70)}.a`, `${'y'.repeat(70)}.b`]) {
      const fn = names.functionOf(tool)!;
      expect(fn).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      expect(names.toolOf(fn)).toBe(tool);
    }
    expect(names.toolOf('core.kv.get')).toBeUndefined();
    expect(names.toolOf('nothing')).toBeUndefined();
  });
});
