/**
 * The test Jaeger (scripts/jaeger-env.sh up, run by scripts/test-env.sh): where
 * its OTLP receiver and query API listen, and the traces it holds, read back
 * through its query API (`/api/traces/<traceId>`). A test that needs it fails
 * when it is not running: it never skips.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

export interface JaegerEnv {
  /** OTLP/HTTP base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly otlpEndpoint: string;
  readonly queryUrl: string;
}

export function jaegerEnv(): JaegerEnv {
  const file = path.join(process.env.UHLP_TEST_ENV_STATE ?? '/var/tmp/uhlp-test-env', 'jaeger.env');
  if (!existsSync(file)) throw new Error(`no ${file}: start the test Jaeger with scripts/test-env.sh (or scripts/jaeger-env.sh up)`);
  const values = Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  return { otlpEndpoint: values['JAEGER_OTLP_ENDPOINT']!, queryUrl: values['JAEGER_QUERY_URL']! };
}

export interface JaegerSpan {
  readonly traceID: string;
  readonly spanID: string;
  readonly operationName: string;
  readonly references: Array<{ refType: 'CHILD_OF' | 'FOLLOWS_FROM'; traceID: string; spanID: string }>;
  readonly tags: Array<{ key: string; type: string; value: unknown }>;
  readonly logs: Array<{ timestamp: number; fields: Array<{ key: string; value: unknown }> }>;
  readonly startTime: number;
  readonly duration: number;
  readonly processID: string;
}

export interface JaegerTrace {
  readonly traceID: string;
  readonly spans: JaegerSpan[];
  readonly processes: Record<string, { serviceName: string; tags: Array<{ key: string; value: unknown }> }>;
}

/** A span's attribute (a Jaeger tag). */
export function tag(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value;
}

/** The span's parent span id (its CHILD_OF reference), if any. */
export function parentOf(span: JaegerSpan): string | undefined {
  return span.references.find((ref) => ref.refType === 'CHILD_OF')?.spanID;
}

/** The one span named `name`; fails when there is none or more than one. */
export function spanNamed(trace: JaegerTrace, name: string): JaegerSpan {
  const found = trace.spans.filter((span) => span.operationName === name);
  if (found.length !== 1) throw new Error(`expected one span "${name}", found ${found.length}: ${trace.spans.map((s) => s.operationName).join(', ')}`);
  return found[0]!;
}

/** A W3C traceparent of a fresh trace, sampled, and its ids. */
export function newTraceparent(): { traceparent: string; traceId: string; spanId: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceparent: `00-${traceId}-${spanId}-01`, traceId, spanId };
}

/**
 * Polls the query API until the trace holds every span `names` lists (the
 * exporter batches for a second), and answers it.
 */
export async function waitForTrace(jaeger: JaegerEnv, traceId: string, names: readonly string[], timeoutMs = 20_000): Promise<JaegerTrace> {
  const deadline = Date.now() + timeoutMs;
  let last: JaegerTrace | undefined;
  for (;;) {
    const response = await fetch(`${jaeger.queryUrl}/api/traces/${traceId}`);
    if (response.status === 200) {
      const body = (await response.json()) as { data?: JaegerTrace[] };
      last = body.data?.[0];
      const have = new Set(last?.spans.map((span) => span.operationName));
      if (last !== undefined && names.every((name) => have.has(name))) return last;
    } else if (response.status !== 404) {
      throw new Error(`Jaeger answered HTTP ${response.status} for trace ${traceId}: ${await response.text()}`);
    }
    if (Date.now() > deadline) {
      throw new Error(`trace ${traceId} lacks spans after ${timeoutMs} ms: want ${names.join(', ')}; have ${last?.spans.map((s) => s.operationName).join(', ') ?? 'no trace'}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
