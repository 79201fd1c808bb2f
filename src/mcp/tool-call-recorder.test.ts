import { describe, expect, it } from 'vitest';
import { MAX_EVIDENCE_ENTRIES, ToolCallRecorder } from './tool-call-recorder.js';

describe('ToolCallRecorder', () => {
  it('sums calls per tool, with LLM tokens only where there were some', () => {
    const recorder = new ToolCallRecorder();
    recorder.record('core.kv.get', 1.5);
    recorder.record('core.llm.generate', 10, { prompt: 3, completion: 4 });
    recorder.record('core.kv.get', 2.25, undefined, 'UHLP_CAPABILITY_DENIED');
    recorder.record('core.llm.generate', 5, { prompt: 1, completion: 1 });
    expect(recorder.summary()).toEqual([
      { tool: 'core.kv.get', count: 2, total_duration_ms: 3.75 },
      { tool: 'core.llm.generate', count: 2, total_duration_ms: 15, token_usage: { prompt: 4, completion: 5 } },
    ]);
    expect(recorder.snapshot().externalCalls.map((call) => call.status)).toEqual(['ok', 'ok', 'UHLP_CAPABILITY_DENIED', 'ok']);
  });

  it('keeps at most MAX_EVIDENCE_ENTRIES evidence entries and counts the rest, while the sums stay exact', () => {
    const recorder = new ToolCallRecorder();
    for (let i = 0; i < MAX_EVIDENCE_ENTRIES + 5; i++) recorder.record('core.log', 1);
    recorder.recordViolation('core.kv.get x', 'capabilities.kv.prefixes', 'no');
    const snapshot = recorder.snapshot();
    expect(snapshot.externalCalls).toHaveLength(MAX_EVIDENCE_ENTRIES);
    expect(snapshot.capabilityViolations).toHaveLength(0);
    expect(snapshot.droppedEvidence).toBe(6);
    expect(snapshot.calls).toEqual([{ tool: 'core.log', count: MAX_EVIDENCE_ENTRIES + 5, total_duration_ms: MAX_EVIDENCE_ENTRIES + 5 }]);
  });

  it('keeps the LLM calls a tool made in order with the tool calls, under the same cap', () => {
    const recorder = new ToolCallRecorder();
    const llm = { kind: 'llm', target: 'scripted', status: 'ok', model: 'small', prompt_hash: 'sha256:p', answer_hash: 'sha256:a', tokens: { prompt: 3, completion: 4 }, cached: false };
    recorder.recordExternal(llm);
    // A call whose tool never finished still leaves its LLM call in the evidence.
    expect(recorder.snapshot().externalCalls).toEqual([llm]);
    recorder.record('core.llm.generate', 10, { prompt: 3, completion: 4 });
    expect(recorder.snapshot().externalCalls.map((call) => call.kind)).toEqual(['llm', 'mcp']);
    for (let i = 0; i < MAX_EVIDENCE_ENTRIES; i++) recorder.recordExternal(llm);
    expect(recorder.snapshot().externalCalls).toHaveLength(MAX_EVIDENCE_ENTRIES);
    expect(recorder.snapshot().droppedEvidence).toBe(2);
  });
});
