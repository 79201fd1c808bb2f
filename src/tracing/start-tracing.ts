/**
 * Starts OpenTelemetry tracing for the core when its settings ask for it: the
 * official Node SDK's tracer provider with the W3C trace-context propagator, an
 * AsyncLocalStorage context manager, the configured sampler, and a batching
 * OTLP/HTTP (protobuf) exporter. Off (the default), nothing is registered: the
 * API's no-op tracer stays, and tracingActive() keeps every span site from
 * even asking it for a span.
 */
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, NodeTracerProvider, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { LineScrubber, Logger } from '../logger.js';
import { ScrubbingSpanProcessor } from './scrubbing-span-processor.js';
import { setTracingActive } from './tracing-active.js';
import type { TracingConfig } from './tracing-config.js';

export interface RunningTracing {
  /** Exports the spans still buffered and stops the provider; never rejects. */
  shutdown(): Promise<void>;
}

const NOTHING_TO_STOP: RunningTracing = { shutdown: () => Promise.resolve() };

/** @param scrubber what every exported span's strings pass through (the app secrets' values: docs/security.md) */
export function startTracing(config: TracingConfig, logger: Pick<Logger, 'info' | 'warn'>, version: string, scrubber?: LineScrubber): RunningTracing {
  if (!config.enabled) return NOTHING_TO_STOP;
  const batch = new BatchSpanProcessor(new OTLPTraceExporter({ url: config.endpoint, headers: { ...config.headers } }), {
    // A turn makes about ten spans: a queue of 8192 holds hundreds of turns between exports.
    maxQueueSize: 8192,
    maxExportBatchSize: 1024,
    scheduledDelayMillis: 1000,
  });
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ ...config.resourceAttributes, [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: version })),
    sampler: samplerOf(config),
    spanProcessors: [scrubber !== undefined ? new ScrubbingSpanProcessor(batch, scrubber) : batch],
  });
  // The W3C trace-context propagator and the AsyncLocalStorage context manager (the SDK's defaults).
  provider.register();
  setTracingActive(true, { capturePrompts: config.capturePrompts });
  // The endpoint only: its headers may carry a credential.
  logger.info({ endpoint: config.endpoint, sampler: config.sampler, service: config.serviceName }, 'tracing on');
  return {
    async shutdown() {
      setTracingActive(false);
      try {
        await provider.shutdown();
      } catch (error) {
        logger.warn({ err: error }, 'tracing: the last spans could not be exported');
      }
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
