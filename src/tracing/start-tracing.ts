/**
 * Starts OpenTelemetry tracing for the core when its settings ask for it: the
 * official Node SDK's tracer provider with the W3C trace-context propagator, an
 * AsyncLocalStorage context manager, the configured sampler, and a batching
 * OTLP/HTTP (protobuf) export run by a worker thread (worker-span-processor.ts).
 * Off (the default), nothing is registered: the API's no-op tracer stays, and
 * tracingActive() keeps every span site from even asking it for a span.
 */
import { AlwaysOffSampler, AlwaysOnSampler, NodeTracerProvider, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-node';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { LineScrubber, Logger } from '../logger.js';
import { LeanTracer, setLeanTracer } from './lean-span.js';
import { ScrubbingSpanProcessor } from './scrubbing-span-processor.js';
import { setTracingActive } from './tracing-active.js';
import type { TracingConfig } from './tracing-config.js';
import { WorkerSpanProcessor } from './worker-span-processor.js';

export interface RunningTracing {
  /** Exports the spans still buffered and stops the provider; never rejects. */
  shutdown(): Promise<void>;
  /** Where dropped spans are counted from now on (the ones dropped before are counted there at once). */
  countDropsIn(count: (spans: number) => void): void;
}

const NOTHING_TO_STOP: RunningTracing = { shutdown: () => Promise.resolve(), countDropsIn: () => undefined };

/** An export failure is logged at most this often (a backend that is down fails every batch). */
const EXPORT_ERROR_LOG_MS = 60_000;

/** @param scrubber what every exported span's strings pass through (the app secrets' values: docs/security.md) */
export function startTracing(config: TracingConfig, logger: Pick<Logger, 'info' | 'warn'>, version: string, scrubber?: LineScrubber): RunningTracing {
  if (!config.enabled) return NOTHING_TO_STOP;
  const resource = defaultResource().merge(resourceFromAttributes({ ...config.resourceAttributes, [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: version }));
  let dropped = 0;
  let countDrops: ((spans: number) => void) | undefined;
  let failures = 0;
  let loggedAt = -Infinity;
  const batch = new WorkerSpanProcessor({
    endpoint: config.endpoint,
    headers: config.headers,
    resourceAttributes: resource.attributes,
    // A plain turn makes two spans: a queue of 8192 holds thousands of turns between exports.
    maxQueueSize: 8192,
    maxExportBatchSize: 1024,
    scheduledDelayMillis: 1000,
    onDropped: (spans) => (countDrops !== undefined ? countDrops(spans) : (dropped += spans)),
    onExportError: (message) => {
      failures++;
      if (performance.now() - loggedAt < EXPORT_ERROR_LOG_MS) return;
      loggedAt = performance.now();
      // The endpoint only: its headers may carry a credential.
      logger.warn({ endpoint: config.endpoint, failures, reason: message }, 'tracing: spans could not be exported');
      failures = 0;
    },
  });
  const sampler = samplerOf(config);
  const processor = scrubber !== undefined ? new ScrubbingSpanProcessor(batch, scrubber) : batch;
  const provider = new NodeTracerProvider({ resource, sampler, spanProcessors: [processor] });
  // The turn's own spans (the ingress's, a delivery's, its stages') skip the SDK's span object; the rest use the SDK's tracer.
  setLeanTracer(new LeanTracer({ sampler, processor, resource, scope: { name: 'uhlp' } }));
  // The W3C trace-context propagator and the AsyncLocalStorage context manager (the SDK's defaults).
  provider.register();
  setTracingActive(true, { capturePrompts: config.capturePrompts });
  // The endpoint only: its headers may carry a credential.
  logger.info({ endpoint: config.endpoint, sampler: config.sampler, service: config.serviceName }, 'tracing on');
  return {
    async shutdown() {
      setTracingActive(false);
      setLeanTracer(undefined);
      try {
        await provider.shutdown();
      } catch (error) {
        logger.warn({ err: error }, 'tracing: the last spans could not be exported');
      }
    },
    countDropsIn(count) {
      countDrops = count;
      if (dropped > 0) count(dropped);
      dropped = 0;
    },
  };
}

function samplerOf(config: TracingConfig): Sampler {
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(config.samplerRatio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.samplerRatio) });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}
