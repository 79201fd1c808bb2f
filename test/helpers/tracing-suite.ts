/**
 * Tracing through `uhlp dev` on a driver the caller names, into a real Jaeger
 * (scripts/jaeger-env.sh): a request with a W3C `traceparent` to a JIT script
 * that calls a kv tool and a federated tool (an SDK v2 server of the test's
 * own, over HTTP) is one trace, continued from the caller's span, with the
 * turn's stages and each tool call as child spans, and the context passed on to
 * the federated server in `_meta`; a script's exception is an exception event
 * on the turn's span with its stack (path and line); the turn's log lines carry
 * its trace and span ids. A Python script's runner spans are a Node script's; a
 * streamed turn's span lasts as long as its stream, an async invocation's turn
 * is a span of its own under the 202's; each cron firing roots its slot's turn.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFixture, startUhlpDev, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';
import { reply, startOpenAiTestServer, type OpenAiTestServer } from './openai-test-server.js';
import { jaegerEnv, newTraceparent, parentOf, spanNamed, tag, waitForTrace, type JaegerEnv, type JaegerTrace } from './jaeger.js';

export interface TracingSuiteOptions {
  readonly driver: 'process' | 'docker';
  /** Runs first (Docker: the engine answers and the images are built). */
  readonly before?: () => Promise<unknown>;
}

export function describeTracing(options: TracingSuiteOptions): void {
  describe(`tracing into Jaeger (${options.driver} driver)`, () => {
    let jaeger: JaegerEnv;
    let core: UhlpProcess;
    let remote: http.Server;
    let llm: OpenAiTestServer;
    /** The `_meta` of each tools/call the federated server received. */
    const metas: Array<Record<string, unknown> | undefined> = [];
    /** The arguments of the tools/call being served (the server declares no input schema). */
    let lastArguments: Record<string, unknown> = {};

    /** An SDK v2 MCP server with one tool, on node:http; it keeps each call's `_meta`. */
    async function startRemote(): Promise<number> {
      const handler = createMcpHandler(() => {
        const server = new McpServer({ name: 'remote', version: '1.0.0' });
        server.registerTool('echo', { description: 'Echoes its text' }, async () => {
          const text = String(lastArguments['text']);
          return { content: [{ type: 'text', text }], structuredContent: { text } };
        });
        return server;
      });
      remote = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          const body = req.method === 'POST' ? Buffer.concat(chunks) : undefined;
          if (body !== undefined) {
            const message = JSON.parse(body.toString('utf8')) as { method?: string; params?: { arguments?: Record<string, unknown>; _meta?: Record<string, unknown> } };
            if (message.method === 'tools/call') {
              metas.push(message.params?._meta);
              lastArguments = message.params?.arguments ?? {};
            }
          }
          const headers = new Headers();
          for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
          void handler.fetch(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, ...(body ? { body } : {}) })).then(async (response) => {
            response.headers.forEach((value, name) => res.setHeader(name, value));
            res.writeHead(response.status);
            res.end(Buffer.from(await response.arrayBuffer()));
          });
        });
      });
      await new Promise<void>((resolve) => remote.listen(0, '127.0.0.1', resolve));
      return (remote.address() as AddressInfo).port;
    }

    beforeAll(async () => {
      // First: without the test Jaeger there is nothing to assert, and the suite fails.
      jaeger = jaegerEnv();
      await options.before?.();
      const remotePort = await startRemote();
      llm = await startOpenAiTestServer();
      const dir = copyFixture('tracing');
      const appFile = path.join(dir, 'apps', 'traced', 'app.yaml');
      writeFileSync(appFile, readFileSync(appFile, 'utf8').replace('REMOTE_PORT', String(remotePort)));
      core = await startUhlpDev(dir, ['--driver', options.driver], 180_000, undefined, {
        UHLP_LOG_LEVEL: 'debug',
        UHLP_MCP_ALLOW_PRIVATE: `127.0.0.1:${remotePort}`,
        OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
        OTEL_SERVICE_NAME: `uhlp-test-${options.driver}`,
        UHLP_LLM_BASE_URL: llm.baseUrl,
        UHLP_LLM_TIMEOUT_MS: '20000',
        // A turn then waits for its ledger entries: the uhlp.ledger span.
        UHLP_LEDGER_DURABILITY: 'sync',
      });
    }, 240_000);

    afterAll(async () => {
      await core?.stop();
      remote?.close();
      await llm?.close();
    });

    it('continues a traceparent through the turn, its stages, a kv tool and a federated tool, and passes the context on in _meta', async () => {
      const { traceparent, traceId, spanId } = newTraceparent();
      const response = await fetch(`${core.url}/traced/kvfed`, {
        method: 'POST',
        headers: { traceparent, tracestate: 'test=1', 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'ada' }),
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ echoed: { text: 'ada' } });
      const requestId = response.headers.get('x-request-id')!;

      const trace = await waitForTrace(jaeger, traceId, ['POST /kvfed', 'uhlp.execution', 'uhlp.ledger', 'tools/call core.kv.set', 'tools/call app.remote.echo', 'uhlp.runner.run', 'uhlp.runner.tool_call app.remote.echo']);
      expect(trace.processes[trace.spans[0]!.processID]!.serviceName).toBe(`uhlp-test-${options.driver}`);
      const turn = spanNamed(trace, 'POST /kvfed');
      // The caller's span is the turn's parent: one trace from the client on.
      expect(parentOf(turn)).toBe(spanId);
      expect(tag(turn, 'span.kind')).toBe('server');
      expect(tag(turn, 'http.request.method')).toBe('POST');
      expect(tag(turn, 'http.route')).toBe('/kvfed');
      expect(tag(turn, 'url.path')).toBe('/traced/kvfed');
      expect(tag(turn, 'http.response.status_code')).toBe(200);
      expect(tag(turn, 'uhlp.app')).toBe('traced');
      expect(tag(turn, 'uhlp.component')).toBe('kvfed');
      expect(tag(turn, 'uhlp.request_id')).toBe(requestId);

      const execution = spanNamed(trace, 'uhlp.execution');
      expect(parentOf(execution)).toBe(turn.spanID);
      // The wait for the ledger (the suite's core runs with sync durability) is a stage of the turn.
      expect(parentOf(spanNamed(trace, 'uhlp.ledger'))).toBe(turn.spanID);
      // Mapping the answer is no span of its own.
      expect(trace.spans.some((s) => s.operationName === 'uhlp.answer')).toBe(false);
      // The claim: a warm sandbox is attributes of the execution, a wait for one is a span under it.
      const claim = trace.spans.find((s) => s.operationName === 'uhlp.claim');
      if (claim !== undefined) expect(parentOf(claim)).toBe(execution.spanID);
      else expect(tag(execution, 'uhlp.sandbox.hit')).toBe(true);
      expect(tag(execution, 'uhlp.pool')).toBe('node');
      // The script's own time, as the runner measured it.
      expect(tag(execution, 'uhlp.runner.run_ms')).toEqual(expect.any(Number));

      const kv = spanNamed(trace, 'tools/call core.kv.set');
      const federated = spanNamed(trace, 'tools/call app.remote.echo');
      for (const call of [kv, federated]) {
        expect(parentOf(call)).toBe(execution.spanID);
        expect(tag(call, 'mcp.method.name')).toBe('tools/call');
        expect(tag(call, 'gen_ai.operation.name')).toBe('execute_tool');
      }
      expect(tag(kv, 'gen_ai.tool.name')).toBe('core.kv.set');

      // What the runner timed, inside the execution: the script's run and its two tool calls as it saw them.
      const run = spanNamed(trace, 'uhlp.runner.run');
      expect(parentOf(run)).toBe(execution.spanID);
      for (const tool of ['core.kv.set', 'app.remote.echo']) {
        const seen = spanNamed(trace, `uhlp.runner.tool_call ${tool}`);
        expect(parentOf(seen)).toBe(execution.spanID);
        expect(tag(seen, 'uhlp.tool.outcome')).toBe('ok');
        expect(seen.startTime).toBeGreaterThanOrEqual(run.startTime - 2000);
      }

      // The federated server got the context of the tool call's span, and the caller's tracestate.
      const meta = metas.at(-1);
      expect(meta?.['traceparent']).toBe(`00-${traceId}-${federated.spanID}-01`);
      expect(meta?.['tracestate']).toBe('test=1');

      // Each log line of the turn that names its request carries the trace, next to the request id.
      const lines = core
        .stderr()
        .split('\n')
        .filter((line) => line.startsWith('{') && line.includes(requestId))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        expect(line['trace_id']).toBe(traceId);
        expect(typeof line['span_id']).toBe('string');
      }
    });

    it("has a Python script's runner spans in its trace as a Node script's: its run and each tool call as it saw them", async () => {
      /** The runner spans under the execution of one call of `path`, by name (the first load's aside: it is not every call's). */
      const runnerSpans = async (path: string): Promise<{ names: string[]; trace: JaegerTrace }> => {
        const { traceparent, traceId } = newTraceparent();
        const response = await fetch(`${core.url}/traced${path}`, { method: 'POST', headers: { traceparent, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'grace' }) });
        expect(response.status).toBe(200);
        expect(await response.json()).toMatchObject({ echoed: { text: 'grace' } });
        const trace = await waitForTrace(jaeger, traceId, [`POST ${path}`, 'uhlp.execution', 'uhlp.runner.run', 'uhlp.runner.tool_call core.kv.set', 'uhlp.runner.tool_call app.remote.echo']);
        const execution = spanNamed(trace, 'uhlp.execution');
        const names = trace.spans
          .filter((span) => span.operationName.startsWith('uhlp.runner.') && span.operationName !== 'uhlp.runner.script_load')
          .map((span) => {
            expect(parentOf(span)).toBe(execution.spanID);
            return span.operationName;
          })
          .sort();
        return { names, trace };
      };
      const node = await runnerSpans('/kvfed');
      const python = await runnerSpans('/pykvfed');
      expect(python.names).toEqual(node.names);
      expect(python.names).toEqual(['uhlp.runner.run', 'uhlp.runner.tool_call app.remote.echo', 'uhlp.runner.tool_call core.kv.set']);
      const run = spanNamed(python.trace, 'uhlp.runner.run');
      for (const tool of ['core.kv.set', 'app.remote.echo']) {
        const seen = spanNamed(python.trace, `uhlp.runner.tool_call ${tool}`);
        expect(tag(seen, 'gen_ai.tool.name')).toBe(tool);
        expect(tag(seen, 'uhlp.tool.outcome')).toBe('ok');
        // Inside the script's run, as the runner timed both (a millisecond of rounding either way).
        expect(seen.startTime).toBeGreaterThanOrEqual(run.startTime - 1000);
        expect(seen.startTime + seen.duration).toBeLessThanOrEqual(run.startTime + run.duration + 1000);
      }
    });

    it("ends a streamed turn's SERVER span with its stream, not with the head", async () => {
      llm.enqueue(reply.text('A streamed answer.'));
      const { traceparent, traceId, spanId } = newTraceparent();
      const response = await fetch(`${core.url}/traced/ask`, { method: 'POST', headers: { traceparent, accept: 'text/event-stream', 'content-type': 'application/json' }, body: JSON.stringify({ question: 'stream it' }) });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      expect(await response.text()).toContain('A streamed answer.');
      let trace: JaegerTrace | undefined;
      await waitFor(
        async () => {
          trace = await waitForTrace(jaeger, traceId, ['POST /ask', 'uhlp.execution']);
          return trace.spans.some((s) => s.operationName.startsWith('chat '));
        },
        { timeoutMs: 20_000, what: 'the model call span' },
      );
      const turn = spanNamed(trace!, 'POST /ask');
      expect(parentOf(turn)).toBe(spanId);
      expect(tag(turn, 'http.response.status_code')).toBe(200);
      const end = (span: { startTime: number; duration: number }): number => span.startTime + span.duration;
      // The turn's span covers everything the turn did: its execution and the model call in it.
      for (const inner of [spanNamed(trace!, 'uhlp.execution'), trace!.spans.find((s) => s.operationName.startsWith('chat '))!]) {
        expect(inner.startTime).toBeGreaterThanOrEqual(turn.startTime);
        expect(end(inner)).toBeLessThanOrEqual(end(turn));
      }
    });

    it("ends an async invocation's SERVER span with its 202, and runs its turn in a CONSUMER span under it", async () => {
      const { traceparent, traceId, spanId } = newTraceparent();
      const accepted = await fetch(`${core.url}/traced/kvfed`, { method: 'POST', headers: { traceparent, prefer: 'respond-async', 'content-type': 'application/json' }, body: JSON.stringify({ name: 'later' }) });
      expect(accepted.status).toBe(202);
      const location = accepted.headers.get('location')!;
      const { invocationId } = (await accepted.json()) as { invocationId: string };
      await waitFor(async () => (await fetch(`${core.url}${location}`)).status === 200, { timeoutMs: 20_000, what: `invocation ${invocationId} to finish` });
      const done = (await (await fetch(`${core.url}${location}`)).json()) as { state: string; response: { status: number; body: string } };
      expect(done).toMatchObject({ state: 'completed', response: { status: 200 } });

      const trace = await waitForTrace(jaeger, traceId, ['POST /kvfed', 'process POST /kvfed', 'uhlp.execution', 'tools/call core.kv.set', 'tools/call app.remote.echo']);
      const request = spanNamed(trace, 'POST /kvfed');
      expect(parentOf(request)).toBe(spanId);
      expect(tag(request, 'http.response.status_code')).toBe(202);
      const turn = spanNamed(trace, 'process POST /kvfed');
      expect(tag(turn, 'span.kind')).toBe('consumer');
      expect(parentOf(turn)).toBe(request.spanID);
      expect(tag(turn, 'messaging.message.id')).toBe(invocationId);
      expect(tag(turn, 'uhlp.component')).toBe('kvfed');
      const execution = spanNamed(trace, 'uhlp.execution');
      expect(parentOf(execution)).toBe(turn.spanID);
      // The request's span is the wait for the 202; the turn's goes on past it, to the end of the execution.
      expect(request.startTime + request.duration).toBeLessThan(turn.startTime + turn.duration);
      expect(execution.startTime + execution.duration).toBeLessThanOrEqual(turn.startTime + turn.duration);
    });

    it('roots each cron firing in a span named for its schedule, the slot\'s turn its child', async () => {
      let firing: JaegerTrace | undefined;
      await waitFor(
        async () => {
          const answer = await fetch(`${jaeger.queryUrl}/api/traces?service=uhlp-test-${options.driver}&operation=${encodeURIComponent('cron tick')}&limit=10&lookback=1h`);
          const traces = ((await answer.json()) as { data?: JaegerTrace[] }).data ?? [];
          firing = traces.find((t) => ['cron tick', 'process tick', 'uhlp.execution', 'tools/call core.kv.set'].every((name) => t.spans.some((s) => s.operationName === name)));
          return firing !== undefined;
        },
        { timeoutMs: 30_000, what: 'a cron firing trace with its turn' },
      );
      const root = spanNamed(firing!, 'cron tick');
      expect(parentOf(root)).toBeUndefined();
      expect(tag(root, 'uhlp.cron.job_id')).toBe('tick');
      expect(tag(root, 'uhlp.cron.schedule')).toBe('*/2 * * * * *');
      expect(String(tag(root, 'uhlp.cron.scheduled_time'))).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/);
      expect(String(tag(root, 'uhlp.cron.lease_holder'))).not.toBe('');
      expect(tag(root, 'uhlp.app')).toBe('traced');
      const turn = spanNamed(firing!, 'process tick');
      expect(parentOf(turn)).toBe(root.spanID);
      expect(tag(turn, 'uhlp.delivery.kind')).toBe('cron');
      expect(tag(turn, 'uhlp.component')).toBe('tick');
      // One firing, one trace: the slot's execution is in it, under the turn.
      const ids = new Set(firing!.spans.map((s) => s.spanID));
      expect(ids.has(parentOf(spanNamed(firing!, 'uhlp.execution'))!)).toBe(true);
      expect(firing!.spans.filter((s) => s.operationName === 'cron tick')).toHaveLength(1);
    });

    it("serves a tool call's trace as the exemplar of its uhlp_mcp_call_duration_seconds bucket (OpenMetrics)", async () => {
      // The cron job's core.kv.set every 2 s takes the bucket's exemplar over: scrape right after the answer, and
      // ask again on the rare try a tick fell in between.
      let traceId = '';
      let found = false;
      for (let attempt = 0; attempt < 3 && !found; attempt++) {
        const sent = newTraceparent();
        traceId = sent.traceId;
        const response = await fetch(`${core.url}/traced/kvfed`, { method: 'POST', headers: { traceparent: sent.traceparent, 'content-type': 'application/json' }, body: '{"name":"exemplar"}' });
        expect(response.status).toBe(200);
        const scrape = await fetch(`${core.url}/metrics`, { headers: { accept: 'application/openmetrics-text; version=1.0.0' } });
        expect(scrape.headers.get('content-type')).toContain('application/openmetrics-text');
        const lines = (await scrape.text()).split('\n').filter((line) => line.startsWith('uhlp_mcp_call_duration_seconds_bucket{') && line.includes('tool="core.kv.set"'));
        const trace = await waitForTrace(jaeger, traceId, ['POST /kvfed', 'tools/call core.kv.set']);
        const toolSpan = spanNamed(trace, 'tools/call core.kv.set').spanID;
        // The latest observation's bucket keeps it: the trace, and the tool call's own span in it.
        found = lines.some((line) => line.includes(`# {trace_id="${traceId}",span_id="${toolSpan}"}`));
      }
      expect(found).toBe(true);
      // Prometheus' text format has no exemplars.
      const plain = await (await fetch(`${core.url}/metrics`)).text();
      expect(plain).toContain('uhlp_mcp_call_duration_seconds_bucket{');
      expect(plain).not.toContain(traceId);
    });

    it('starts a trace of its own for a request without a traceparent, and ignores a malformed one', async () => {
      for (const headers of [{} as Record<string, string>, { traceparent: '00-zzzz-not-a-parent' }, { traceparent: `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01` }]) {
        const response = await fetch(`${core.url}/traced/kvfed`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{"name":"bo"}' });
        expect(response.status).toBe(200);
        const requestId = response.headers.get('x-request-id')!;
        // The execution's timing line (debug) is written once the answer has left.
        let line: Record<string, unknown> | undefined;
        await waitFor(
          () =>
            (line = core
              .stderr()
              .split('\n')
              .filter((l) => l.startsWith('{') && l.includes(requestId))
              .map((l) => JSON.parse(l) as Record<string, unknown>)
              .find((l) => typeof l['trace_id'] === 'string')) !== undefined,
          { timeoutMs: 5000, what: `a log line of ${requestId} with a trace id` },
        );
        expect(line?.['trace_id']).toMatch(/^[0-9a-f]{32}$/);
        expect(line?.['trace_id']).not.toBe('0'.repeat(32));
        const trace = await waitForTrace(jaeger, line!['trace_id'] as string, ['POST /kvfed', 'uhlp.execution']);
        expect(parentOf(spanNamed(trace, 'POST /kvfed'))).toBeUndefined();
      }
    });

    it("carries a queue publish's context with the message: the delivery is a trace of its own, linked to the publish", async () => {
      const { traceparent, traceId } = newTraceparent();
      const response = await fetch(`${core.url}/traced/publish`, { method: 'POST', headers: { traceparent, 'content-type': 'application/json' }, body: '{"mark":"m1"}' });
      expect(response.status).toBe(200);
      const published = await waitForTrace(jaeger, traceId, ['POST /publish', 'tools/call core.queue.publish', 'publish jobs']);
      const publish = spanNamed(published, 'publish jobs');
      expect(parentOf(publish)).toBe(spanNamed(published, 'tools/call core.queue.publish').spanID);
      expect(tag(publish, 'span.kind')).toBe('producer');
      expect(tag(publish, 'messaging.destination.name')).toBe('jobs');

      // The delivery: found by its link to the publish, among the service's recent `process jobs` traces.
      const service = `uhlp-test-${options.driver}`;
      let delivery: JaegerTrace | undefined;
      await waitFor(
        async () => {
          const answer = await fetch(`${jaeger.queryUrl}/api/traces?service=${service}&operation=${encodeURIComponent('process jobs')}&limit=50&lookback=1h`);
          const traces = ((await answer.json()) as { data?: JaegerTrace[] }).data ?? [];
          delivery = traces.find((t) => t.spans.some((s) => s.operationName === 'process jobs' && s.references.some((r) => r.spanID === publish.spanID && r.traceID === traceId)));
          return delivery !== undefined && delivery.spans.some((s) => s.operationName === 'tools/call core.kv.set');
        },
        { timeoutMs: 20_000, what: 'the delivery trace linked to the publish' },
      );
      const consumer = spanNamed(delivery!, 'process jobs');
      expect(consumer.traceID).not.toBe(traceId);
      expect(parentOf(consumer)).toBeUndefined();
      expect(consumer.references).toContainEqual(expect.objectContaining({ refType: 'FOLLOWS_FROM', traceID: traceId, spanID: publish.spanID }));
      expect(tag(consumer, 'span.kind')).toBe('consumer');
      expect(tag(consumer, 'uhlp.component')).toBe('consume');
      expect(tag(consumer, 'uhlp.delivery.attempt')).toBe(1);
      // A delivery runs once per invocation id: its turn is inside the once-only stage.
      const once = spanNamed(delivery!, 'uhlp.once_only');
      expect(parentOf(once)).toBe(consumer.spanID);
      expect(parentOf(spanNamed(delivery!, 'uhlp.execution'))).toBe(once.spanID);
    });

    it("traces an LLM component's tool loop: each model call a CLIENT span with the GenAI attributes and no prompt text, the tool call between them", async () => {
      llm.enqueue(reply.toolCalls([{ name: 'app_remote_echo', arguments: { text: 'from the model' } }]), reply.text('The server said it back.'));
      const { traceparent, traceId, spanId } = newTraceparent();
      const response = await fetch(`${core.url}/traced/ask`, { method: 'POST', headers: { traceparent, 'content-type': 'application/json' }, body: JSON.stringify({ question: 'a secret question' }) });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ text: 'The server said it back.' });
      let trace: JaegerTrace | undefined;
      await waitFor(
        async () => {
          trace = await waitForTrace(jaeger, traceId, ['POST /ask', 'uhlp.execution', 'tools/call app.remote.echo']);
          return trace.spans.filter((s) => s.operationName.startsWith('chat ')).length === 2;
        },
        { timeoutMs: 20_000, what: 'two model call spans' },
      );
      const turn = spanNamed(trace!, 'POST /ask');
      expect(parentOf(turn)).toBe(spanId);
      const execution = spanNamed(trace!, 'uhlp.execution');
      const chats = trace!.spans.filter((s) => s.operationName.startsWith('chat ')).sort((a, b) => a.startTime - b.startTime);
      const ids = new Set(trace!.spans.map((s) => s.spanID));
      for (const chat of chats) {
        expect(tag(chat, 'span.kind')).toBe('client');
        expect(tag(chat, 'gen_ai.operation.name')).toBe('chat');
        expect(tag(chat, 'gen_ai.provider.name')).toBe('openai');
        expect(typeof tag(chat, 'gen_ai.request.model')).toBe('string');
        expect(typeof tag(chat, 'gen_ai.response.model')).toBe('string');
        expect(tag(chat, 'gen_ai.usage.input_tokens')).toEqual(expect.any(Number));
        expect(tag(chat, 'gen_ai.usage.output_tokens')).toEqual(expect.any(Number));
        // In the turn's trace, under the execution (through the model tool call the orchestrator made).
        expect(ids.has(parentOf(chat)!)).toBe(true);
        expect(chat.startTime).toBeGreaterThanOrEqual(execution.startTime);
      }
      expect(String(tag(chats[0]!, 'gen_ai.response.finish_reasons'))).toContain('tool_calls');
      expect(String(tag(chats[1]!, 'gen_ai.response.finish_reasons'))).toContain('stop');
      expect(parentOf(spanNamed(trace!, 'tools/call app.remote.echo'))).toBe(execution.spanID);
      // No prompt text unless UHLP_TRACE_CAPTURE_PROMPTS says so.
      expect(JSON.stringify(trace)).not.toContain('a secret question');
    });

    it('traces a workflow run: its steps under the execution, the pause at an approval as an event, the decision with its wait', async () => {
      const { traceparent, traceId } = newTraceparent();
      const paused = await fetch(`${core.url}/traced/flow`, { method: 'POST', headers: { traceparent, 'content-type': 'application/json' }, body: '{}' });
      expect(paused.status).toBe(202);
      const runId = paused.headers.get('x-uhlp-run-id')!;
      const first = await waitForTrace(jaeger, traceId, ['POST /flow', 'uhlp.workflow.execution', 'uhlp.execution', 'tools/call core.workflow.checkpoint']);
      const execution = spanNamed(first, 'uhlp.execution');
      expect(parentOf(spanNamed(first, 'uhlp.workflow.execution'))).toBe(spanNamed(first, 'POST /flow').spanID);
      const requested = execution.logs.find((log) => log.fields.some((f) => f.key === 'event' && f.value === 'uhlp.workflow.approval_requested'));
      expect(requested?.fields).toContainEqual(expect.objectContaining({ key: 'uhlp.workflow.node', value: 'approve' }));

      const resumed = await fetch(`${core.url}/_uhlp/runs/${runId}/resume`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ approved: true, by: 'ada' }) });
      expect(resumed.status).toBe(200);
      let decision: JaegerTrace | undefined;
      const tags = encodeURIComponent(JSON.stringify({ 'uhlp.workflow.run_id': runId }));
      await waitFor(
        async () => {
          const answer = await fetch(`${jaeger.queryUrl}/api/traces?service=uhlp-test-${options.driver}&operation=uhlp.workflow.resume&tags=${tags}&limit=5&lookback=1h`);
          decision = ((await answer.json()) as { data?: JaegerTrace[] }).data?.[0];
          const names = new Set(decision?.spans.map((s) => s.operationName));
          return names.has('uhlp.workflow.approval approve') && names.has('uhlp.workflow.step write') && names.has('tools/call core.kv.set');
        },
        { timeoutMs: 20_000, what: `the decision's trace of run ${runId}` },
      );
      const root = spanNamed(decision!, 'uhlp.workflow.resume');
      expect(tag(root, 'uhlp.workflow.approved')).toBe(true);
      const wait = spanNamed(decision!, 'uhlp.workflow.approval approve');
      expect(parentOf(wait)).toBe(root.spanID);
      expect(wait.duration).toBeGreaterThan(0);
      const step = spanNamed(decision!, 'uhlp.workflow.step write');
      expect(tag(step, 'uhlp.workflow.node_type')).toBe('tool');
      expect(tag(step, 'uhlp.workflow.step_status')).toBe('completed');
      expect(parentOf(step)).toBe(spanNamed(decision!, 'uhlp.execution').spanID);
    });

    it("records a script's exception on the turn's span, with its stack's path and line", async () => {
      const { traceparent, traceId } = newTraceparent();
      const response = await fetch(`${core.url}/traced/boom`, { headers: { traceparent } });
      expect(response.status).toBe(500);
      expect(await response.json()).toMatchObject({ code: 'UHLP_SCRIPT_EXCEPTION', message: 'the fuse was lit' });
      const trace = await waitForTrace(jaeger, traceId, ['GET /boom', 'uhlp.execution']);
      const turn = spanNamed(trace, 'GET /boom');
      expect(tag(turn, 'otel.status_code')).toBe('ERROR');
      expect(tag(turn, 'error.type')).toBe('UHLP_SCRIPT_EXCEPTION');
      expect(tag(turn, 'http.response.status_code')).toBe(500);
      const exception = turn.logs.find((log) => log.fields.some((field) => field.key === 'event' && field.value === 'exception'));
      expect(exception).toBeDefined();
      const field = (key: string): unknown => exception!.fields.find((f) => f.key === key)?.value;
      expect(field('exception.type')).toBe('UHLP_SCRIPT_EXCEPTION');
      expect(field('exception.message')).toBe('the fuse was lit');
      expect(field('exception.stacktrace')).toBe('at explode (lib/explode.mjs:2:9)\nat boom (scripts/traced.mjs:12:3)');
    });
  });
}
