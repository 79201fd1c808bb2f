/**
 * Workflows end to end: `uhlp dev` with Redis runtime state, the
 * llm-orchestrator driving runs in its sandbox, JIT steps in their pool, and a
 * real OpenAI-compatible HTTP server answering every model call. What the
 * model is sent (feedback, skills, redacted input), what the client gets (JSON,
 * 202 and resume, SSE), and what the run record and its trace say.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { lastPrompt, reply, startOpenAiTestServer, type OpenAiTestServer } from './helpers/openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './helpers/redis-url.js';
import { copyFixture, descendants, startUhlpDev, UHLP_BIN, type UhlpProcess } from './helpers/uhlp-process.js';

const execFileAsync = promisify(execFile);

/** The user message of a chat request. */
interface SseEvent {
  readonly event: string;
  readonly data: any;
}

function parseSse(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((line) => line.startsWith('event: '))?.slice(7) ?? 'message';
      const data = lines
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n');
      return { event, data: JSON.parse(data) };
    });
}

describe('workflows against an OpenAI-compatible server and Redis', () => {
  let core: UhlpProcess;
  let llm: OpenAiTestServer;

  beforeAll(async () => {
    llm = await startOpenAiTestServer();
    core = await startUhlpDev(copyFixture('workflow-e2e'), ['--driver', 'process'], 60_000, undefined, {
      UHLP_LLM_BASE_URL: llm.baseUrl,
      UHLP_LLM_TIMEOUT_MS: '20000',
      // Step retries are the workflow's: the provider does not retry on its own here.
      UHLP_LLM_MAX_RETRIES: '0',
      UHLP_STATE: TEST_REDIS_URL,
      UHLP_STATE_PREFIX: uniqueKeyPrefix('wf'),
    });
  }, 90_000);

  afterAll(async () => {
    await core?.stop();
    await llm?.close();
  });

  beforeEach(() => llm.reset());

  async function call(pathname: string, init: RequestInit = {}): Promise<{ status: number; json: any; headers: Headers; text: string }> {
    const response = await fetch(`${core.url}${pathname}`, init);
    const text = await response.text();
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // Kept as text.
    }
    return { status: response.status, json, headers: response.headers, text };
  }
  const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

  it('routes a question, loops through the evaluator with its critique in the next prompt, and traces every step', async () => {
    let drafts = 0;
    let judgements = 0;
    llm.handle((request) => {
      const text = lastPrompt(request);
      if (text.startsWith('Classify:')) return reply.text('{"category":"question"}');
      if (text.startsWith('Answer the customer:')) return reply.text(`draft ${++drafts}`);
      if (text.startsWith('Judge this answer:')) return reply.text(++judgements === 1 ? '{"score":0.3,"critique":"too short, add the hours"}' : '{"score":0.9}');
      return reply.error(400, { message: `unexpected prompt ${text}` });
    });
    const answer = await call('/flow/support', post({ text: 'When are you open?' }));
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ answer: 'draft 2', ticket: null, category: 'question' });
    const runId = answer.headers.get('x-uhlp-run-id')!;
    expect(runId).toMatch(/^RUN-/);

    const answers = llm.requests.filter((request) => lastPrompt(request).startsWith('Answer the customer:'));
    expect(answers).toHaveLength(2);
    expect(lastPrompt(answers[0]!)).not.toContain('too short');
    expect(lastPrompt(answers[1]!)).toContain('Feedback on your previous answer');
    expect(lastPrompt(answers[1]!)).toContain('too short, add the hours');

    const run = await call(`/_uhlp/runs/${runId}`);
    expect(run.json).toMatchObject({ status: 'completed', result: { answer: 'draft 2' }, blackboard: { triage: { category: 'question' }, critique: 'too short, add the hours' } });
    const trace = await call(`/_uhlp/runs/${runId}/trace`);
    expect(trace.json.metadata).toMatchObject({ generated_by: 'test-model-1', confidence_score: 0.82 });
    const steps = trace.json.steps as any[];
    expect(steps.map((step) => step.node)).toEqual(['classify', 'route', 'answer', 'judge', 'answer', 'judge', 'done']);
    for (const step of steps) {
      expect(step).toMatchObject({ workflowId: 'support', stepId: step.node, status: 'completed' });
      expect(typeof step.thought).toBe('string');
      expect(step.action).toHaveProperty('type');
      expect(step.snapshot).toHaveProperty('input');
    }
    expect(steps[1].action).toMatchObject({ route: 'question', next: 'answer' });
    expect(steps[3].action).toMatchObject({ score: 0.3, passed: false });
    const one = await call(`/_uhlp/runs/${runId}/trace?step=${steps[2].index}`);
    expect(one.json).toMatchObject({ node: 'answer', output: 'draft 1' });

    const printed = await execFileAsync(process.execPath, [UHLP_BIN, 'runs', 'trace', runId, '--url', core.url]);
    const lines = printed.stdout.trim().split('\n');
    expect(lines[0]).toContain(`run ${runId}  workflow support  status completed`);
    expect(lines[1]).toContain('generated_by test-model-1  confidence_score 0.82');
    expect(lines.filter((line) => line.startsWith('#'))).toHaveLength(7);
  });

  it('gives up after the evaluator fails more than max_retries times', async () => {
    llm.handle((request) => {
      const text = lastPrompt(request);
      if (text.startsWith('Classify:')) return reply.text('{"category":"question"}');
      if (text.startsWith('Answer the customer:')) return reply.text('meh');
      return reply.text('{"score":0.1,"critique":"no"}');
    });
    const answer = await call('/flow/support', post({ text: 'hello' }));
    expect(answer.status).toBe(502);
    expect(answer.json).toMatchObject({ code: 'UHLP_WORKFLOW_EVALUATION_FAILED' });
    expect(llm.requests.filter((request) => lastPrompt(request).startsWith('Judge'))).toHaveLength(3);
  });

  it('pauses a bug at the approval node (202), then resumes it on a decision without running a node twice', async () => {
    llm.handle(() => reply.text('{"category":"bug"}'));
    const paused = await call('/flow/support', post({ text: 'The login page is broken' }));
    expect(paused.status).toBe(202);
    const runId = paused.headers.get('x-uhlp-run-id')!;
    expect(paused.headers.get('location')).toBe(`/_uhlp/runs/${runId}`);
    expect(paused.json).toMatchObject({ status: 'paused', node: 'approve', prompt: 'Open this ticket?' });
    expect((await call(`/_uhlp/runs/${runId}`)).json).toMatchObject({ status: 'paused', blackboard: { ticket: { id: 'T-1' } } });

    const bad = await call(`/_uhlp/runs/${runId}/resume`, post({ approved: 'yes' }));
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe('UHLP_WORKFLOW_DECISION_INVALID');

    const resumed = await call(`/_uhlp/runs/${runId}/resume`, post({ approved: true, by: 'ada' }));
    expect(resumed.status).toBe(200);
    expect(resumed.json).toEqual({ answer: null, ticket: { id: 'T-1', title: 'The login page is broken' }, category: 'bug' });
    expect(llm.requests).toHaveLength(1);
    const steps = (await call(`/_uhlp/runs/${runId}/trace`)).json.steps as any[];
    expect(steps.map((step) => step.node)).toEqual(['classify', 'route', 'ticket', 'approve', 'done']);
    expect(steps[3].action).toMatchObject({ approved: true, by: 'ada' });

    const again = await call(`/_uhlp/runs/${runId}/resume`, post({ approved: true }));
    expect(again.status).toBe(409);
    expect(again.json.code).toBe('UHLP_WORKFLOW_RUN_NOT_PAUSED');
  });

  it('aborts on a failed pre-flight requirement with its error_message (422), before any model call', async () => {
    const answer = await call('/flow/support', post({ other: 1 }));
    expect(answer.status).toBe(422);
    expect(answer.json).toMatchObject({ code: 'UHLP_WORKFLOW_PREFLIGHT_FAILED', message: 'text is required', details: { variable: 'input.text', operator: 'exists' } });
    expect(llm.requests).toHaveLength(0);

    const node = await call('/flow/guarded', post({ items: [] }));
    expect(node.status).toBe(422);
    expect(node.json).toMatchObject({ code: 'UHLP_WORKFLOW_PREFLIGHT_FAILED', message: 'no items', details: { node: 'check', field: 'length' } });
  });

  it("starts a run's first execution from the load answer its context carries, and loads through MCP one whose answer is over the bound, with the same checks either way", async () => {
    const loads = async (): Promise<number> => {
      const metrics = await (await fetch(`${core.url}/metrics`)).text();
      let total = 0;
      for (const match of metrics.matchAll(/^uhlp_mcp_calls_total\{[^}]*tool="core\.workflow\.load"[^}]*\} (\d+)$/gm)) total += Number(match[1]);
      return total;
    };
    const before = await loads();
    // An input whose keys mean something to JavaScript objects: its blackboard is data; the pre-flight still finds no text.
    const hostile = await call('/flow/support', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"__proto__":{"text":"x"},"constructor":{"prototype":{"text":"y"}},"toString":"z"}' });
    expect(hostile.status, hostile.text).toBe(422);
    expect(hostile.json).toMatchObject({ code: 'UHLP_WORKFLOW_PREFLIGHT_FAILED', message: 'text is required' });
    expect(await loads()).toBe(before);
    // A blackboard that makes the load answer larger than the context carries: the orchestrator loads the run.
    const large = await call('/flow/support', post({ other: 'x'.repeat(70 * 1024) }));
    expect(large.status, large.text).toBe(422);
    expect(large.json).toMatchObject({ code: 'UHLP_WORKFLOW_PREFLIGHT_FAILED', message: 'text is required' });
    expect(await loads()).toBe(before + 1);
    expect(llm.requests).toHaveLength(0);
  });

  it('refuses a tool the app marks critical to a run whose policy does not allow it', async () => {
    const answer = await call('/flow/guarded', post({ items: [1] }));
    expect(answer.status).toBe(403);
    expect(answer.json.code).toBe('UHLP_TOOL_APPROVAL_REQUIRED');
  });

  it('lets a run call a critical tool once its approval node granted it', async () => {
    const paused = await call('/flow/granted', post({}));
    expect(paused.status).toBe(202);
    const runId = paused.headers.get('x-uhlp-run-id')!;
    const resumed = await call(`/_uhlp/runs/${runId}/resume`, post({ approved: true }));
    expect(resumed.status).toBe(200);
    expect((await call(`/_uhlp/runs/${runId}`)).json.approvals.approve).toMatchObject({ approved: true });

    const rejected = await call('/flow/granted', post({}));
    const no = await call(`/_uhlp/runs/${rejected.headers.get('x-uhlp-run-id')}/resume`, post({ approved: false, comment: 'not today' }));
    expect(no.status).toBe(409);
    expect(no.json).toMatchObject({ code: 'UHLP_WORKFLOW_REJECTED' });
  });

  it('streams an LLM component over SSE as the provider produces its tokens', async () => {
    llm.enqueue(reply.text('{"category":"bug"}', { chunkChars: 5 }));
    const response = await fetch(`${core.url}/flow/triage`, { ...post({ text: 'crash' }), headers: { 'content-type': 'application/json', accept: 'text/event-stream' } });
    const events = parseSse(await response.text());
    expect(events[0]).toMatchObject({ event: 'STREAM_START', data: { stream_id: 'default', content_type: 'text/plain' } });
    const chunks = events.filter((e) => e.event === 'NODE_STREAM');
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((e) => e.data.chunk).join('')).toBe('{"category":"bug"}');
    expect(chunks[0]!.data.node).toBe('triage');
    expect(events.at(-2)).toMatchObject({ event: 'STREAM_END', data: { stream_id: 'default' } });
    expect(events.at(-1)).toMatchObject({ event: 'RESULT', data: { status: 200, body: { category: 'bug' } } });
    expect(llm.requests[0]!.body.stream).toBe(true);
  });

  it('retries a failed step with backoff and records the retry', async () => {
    let calls = 0;
    llm.handle((request) => {
      const text = lastPrompt(request);
      if (text.startsWith('Classify:')) return ++calls === 1 ? reply.error(500) : reply.text('{"category":"bug"}');
      return reply.error(400);
    });
    const answer = await call('/flow/support', post({ text: 'crash on save' }));
    expect(answer.status).toBe(202);
    expect(calls).toBe(2);
    const run = await call(`/_uhlp/runs/${answer.headers.get('x-uhlp-run-id')}`);
    expect(run.json.blackboard.triage).toEqual({ category: 'bug' });
  });

  it('loads a lazy skill for an input near its trigger_intent only, and redacts PII both ways', async () => {
    llm.handle((request) => {
      const text = lastPrompt(request);
      if (text.startsWith('Classify:')) return reply.text('{"category":"question"}');
      if (text.startsWith('Answer the customer:')) return reply.text('Call us at +44 20 7946 0958 or write to help@acme.example');
      return reply.text('{"score":1}');
    });
    const refund = await call('/flow/support', post({ text: 'I want a refund of my payment, mail me at ada@example.com' }));
    expect(refund.status).toBe(200);
    // Out: the model never saw the address; in: the client never sees the model's contact data.
    for (const request of llm.requests) expect(lastPrompt(request)).not.toContain('ada@example.com');
    expect(lastPrompt(llm.requests[0]!)).toContain('[email]');
    expect(refund.json.answer).toBe('Call us at [phone] or write to [email]');
    const withSkill = llm.requests.find((request) => lastPrompt(request).startsWith('Answer the customer:'))!;
    expect(lastPrompt(withSkill)).toContain('REFUND-SKILL');
    expect(lastPrompt(llm.requests[0]!)).toContain('REFUND-SKILL');
    const trace = (await call(`/_uhlp/runs/${refund.headers.get('x-uhlp-run-id')}/trace`)).json;
    expect(trace.steps[0].observation).toMatchObject({ skills: [{ id: 'refunds' }], embeddingModel: 'uhlp-local-hash-256' });

    llm.reset();
    llm.handle((request) => (lastPrompt(request).startsWith('Classify:') ? reply.text('{"category":"question"}') : lastPrompt(request).startsWith('Judge') ? reply.text('{"score":1}') : reply.text('We open at 9.')));
    const hours = await call('/flow/support', post({ text: 'What are your opening hours?' }));
    expect(hours.status).toBe(200);
    for (const request of llm.requests) expect(lastPrompt(request)).not.toContain('REFUND-SKILL');
  });

  it('runs app JIT components as request and response interceptors, on every packet and on the result', async () => {
    // Chunks of seven characters: "secret!", "DROP!!!", "fine...".
    llm.handle(() => reply.text('secret!DROP!!!fine...', { chunkChars: 7 }));
    const response = await fetch(`${core.url}/flow/masked`, { ...post({ text: 'tell me' }), headers: { 'content-type': 'application/json', accept: 'text/event-stream' } });
    const events = parseSse(await response.text());
    expect(lastPrompt(llm.requests[0]!)).toContain('Answer the customer: TELL ME');
    const chunks = events.filter((e) => e.event === 'NODE_STREAM').map((e) => e.data.chunk as string);
    expect(chunks.join('')).not.toContain('secret');
    expect(chunks.join('')).not.toContain('DROP');
    expect(chunks).toEqual(['******!', 'fine...']);
    expect(events.at(-1)).toMatchObject({ event: 'RESULT', data: { status: 200, body: '******!!!!fine...' } });
    const run = await call(`/_uhlp/runs/${events.at(-1)!.data.headers['x-uhlp-run-id']}`);
    expect(run.json.blackboard.input).toMatchObject({ text: 'TELL ME', seenRequestId: expect.any(String) });
  });

  it('sends the first streamed bytes before the run ends', async () => {
    llm.handle(() => reply.text('streamed early', { chunkChars: 4 }));
    const started = Date.now();
    const response = await fetch(`${core.url}/flow/early`, { ...post({ text: 'hi' }), headers: { 'content-type': 'application/json', accept: 'text/event-stream' } });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let firstChunkAt: number | undefined;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (firstChunkAt === undefined && text.includes('event: NODE_STREAM')) firstChunkAt = Date.now();
    }
    const endedAt = Date.now();
    expect(firstChunkAt).toBeDefined();
    // The JIT step after the agent takes 1.5 s: the agent's text came before it.
    expect(endedAt - firstChunkAt!).toBeGreaterThan(1000);
    expect(firstChunkAt! - started).toBeLessThan(endedAt - started - 1000);
    expect(parseSse(text).at(-1)).toMatchObject({ event: 'RESULT', data: { status: 200, body: 'streamed early' } });
  });

  it('times out a run past timeout_seconds with 504 and marks it timed_out', async () => {
    llm.handle(() => reply.hang());
    const started = Date.now();
    const answer = await call('/flow/slow', post({ text: 'ponder' }));
    expect(answer.status).toBe(504);
    expect(answer.json.code).toBe('UHLP_WORKFLOW_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(10_000);
    const run = await call(`/_uhlp/runs/${answer.headers.get('x-uhlp-run-id')}`);
    expect(run.json.status).toBe('timed_out');
  });

  it('runs parallel branches at once, joins them, and interleaves their two streams over SSE', async () => {
    llm.handle(async (request) => {
      const text = lastPrompt(request);
      // Neither branch is answered before both have asked: run one after the other, they would fail here.
      await llm.waitForRequests(2, 10_000);
      return reply.text(text.startsWith('Think about:') ? 'hmm, let me see' : 'the answer is 42', { chunkChars: 3 });
    });
    const response = await fetch(`${core.url}/flow/fanout`, { ...post({ text: 'life' }), headers: { 'content-type': 'application/json', accept: 'text/event-stream' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const events = parseSse(await response.text());
    expect(llm.requests).toHaveLength(2);
    const starts = events.filter((e) => e.event === 'STREAM_START').map((e) => e.data.stream_id);
    expect(new Set(starts)).toEqual(new Set(['thinking', 'default']));
    const firstEnd = events.findIndex((e) => e.event === 'STREAM_END');
    expect(events.findIndex((e) => e.event === 'STREAM_START' && e.data.stream_id === 'thinking')).toBeLessThan(firstEnd);
    expect(events.findIndex((e) => e.event === 'STREAM_START' && e.data.stream_id === 'default')).toBeLessThan(firstEnd);
    const text = (id: string): string =>
      events
        .filter((e) => e.event === 'NODE_STREAM' && e.data.stream_id === id)
        .map((e) => e.data.chunk)
        .join('');
    expect(text('thinking')).toBe('hmm, let me see');
    expect(text('default')).toBe('the answer is 42');
    expect(events.filter((e) => e.event === 'NODE_STREAM' && e.data.stream_id === 'default').length).toBeGreaterThan(1);
    const result = events.at(-1)!;
    expect(result.event).toBe('RESULT');
    expect(result.data.status).toBe(200);
    expect(result.data.body).toEqual({ thoughts: 'hmm, let me see', answer: 'the answer is 42', company: { value: 'Acme', found: true } });
  });

  it('resumes a run whose sandbox is killed mid-run on another sandbox, without repeating completed nodes', async () => {
    let seconds = 0;
    llm.handle((request) => {
      const text = lastPrompt(request);
      if (text.startsWith('Step one')) return reply.text('first done');
      // The first try of the second step never answers: its sandbox is killed meanwhile.
      return ++seconds === 1 ? reply.hang() : reply.text('second done');
    });
    const pending = call('/flow/durable', post({ text: 'job', one: 'one', two: 'two' }));
    await llm.waitForRequests(2, 20_000);
    const orchestrators = descendants(core.child.pid!).filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('orchestrator/main.js');
      } catch {
        return false;
      }
    });
    expect(orchestrators.length).toBeGreaterThan(0);
    for (const pid of orchestrators) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already: its wrapper (bubblewrap) ends with the runner killed before it.
      }
    }
    const answer = await pending;
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ first: 'first done', copied: { first: 'first done' }, second: 'second done' });
    expect(llm.requests.filter((request) => lastPrompt(request).startsWith('Step one'))).toHaveLength(1);
    const runId = answer.headers.get('x-uhlp-run-id')!;
    const run = (await call(`/_uhlp/runs/${runId}`)).json;
    expect(run.attempts).toBeGreaterThanOrEqual(2);
    const steps = (await call(`/_uhlp/runs/${runId}/trace`)).json.steps as any[];
    expect(steps.map((step) => step.node)).toEqual(['first', 'copy', 'second', 'done']);
  }, 60_000);

  it('answers 404 for an unknown run and 400-class errors for a malformed id', async () => {
    const missing = await call('/_uhlp/runs/RUN-20260101T000000000Z-ABCDEFGHJKMNPQRSTVWX');
    expect(missing.status).toBe(404);
    expect(missing.json.code).toBe('UHLP_WORKFLOW_RUN_NOT_FOUND');
    const hostile = await call('/_uhlp/runs/..%2F..%2Fetc');
    expect(hostile.status).toBeGreaterThanOrEqual(400);
    expect(hostile.status).toBeLessThan(500);
  });
});
