/**
 * What the core traces and where it sends the spans: the OpenTelemetry SDK's
 * standard `OTEL_*` variables, read by src/config.ts (the only reader of the
 * environment) and parsed here, so that the parsing is one pure function.
 * Tracing is off unless an OTLP endpoint is named or `OTEL_TRACES_EXPORTER=otlp`.
 */

/** The samplers of the SDK specification's `OTEL_TRACES_SAMPLER`. */
export const TRACE_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

export interface TracingConfig {
  /** Spans are made and exported; false: the API's no-op tracer, nothing per request. */
  readonly enabled: boolean;
  /** The OTLP/HTTP (protobuf) traces URL, `.../v1/traces`. */
  readonly endpoint: string;
  /** Headers of every export request (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TRACES_HEADERS`). */
  readonly headers: Readonly<Record<string, string>>;
  /** `service.name` of the resource. @defaultValue `uhlp-core` (`OTEL_SERVICE_NAME`) */
  readonly serviceName: string;
  /** More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`, `k=v,k=v`). */
  readonly resourceAttributes: Readonly<Record<string, string>>;
  /** @defaultValue `parentbased_always_on` (`OTEL_TRACES_SAMPLER`) */
  readonly sampler: TraceSampler;
  /** The ratio of the `*traceidratio` samplers, 0 - 1. @defaultValue 1 (`OTEL_TRACES_SAMPLER_ARG`) */
  readonly samplerRatio: number;
  /** Model spans carry the prompt and completion text. @defaultValue false (`UHLP_TRACE_CAPTURE_PROMPTS=true`) */
  readonly capturePrompts: boolean;
}

export type TracingEnvironment = Readonly<Record<string, string | undefined>>;

/** The default of the specification when `OTEL_TRACES_EXPORTER=otlp` names no endpoint. */
const DEFAULT_ENDPOINT = 'http://localhost:4318';

/**
 * The tracing settings of an environment; `fail(name, expected, got)` throws
 * the caller's configuration error for a bad value.
 */
export function parseTracingConfig(env: TracingEnvironment, fail: (name: string, expected: string, got: string) => never): TracingConfig {
  const get = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const disabled = get('OTEL_SDK_DISABLED');
  if (disabled !== undefined && !/^(true|false)$/i.test(disabled)) fail('OTEL_SDK_DISABLED', 'true or false', disabled);
  const exporter = get('OTEL_TRACES_EXPORTER');
  if (exporter !== undefined && exporter !== 'otlp' && exporter !== 'none') fail('OTEL_TRACES_EXPORTER', 'otlp or none (the core exports OTLP only)', exporter);
  const protocol = get('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? get('OTEL_EXPORTER_OTLP_PROTOCOL');
  if (protocol !== undefined && protocol !== 'http/protobuf') fail('OTEL_EXPORTER_OTLP_PROTOCOL', 'http/protobuf (the core exports OTLP over HTTP)', protocol);

  const tracesEndpoint = get('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const baseEndpoint = get('OTEL_EXPORTER_OTLP_ENDPOINT');
  for (const [name, value] of [['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', tracesEndpoint], ['OTEL_EXPORTER_OTLP_ENDPOINT', baseEndpoint]] as const) {
    if (value !== undefined && !/^https?:\/\/[^\s/]+(\/\S*)?$/.test(value)) fail(name, 'an http(s) URL', value);
  }
  // As the specification says: the signal's own variable is the URL itself, the base one gets /v1/traces.
  const endpoint = tracesEndpoint ?? `${(baseEndpoint ?? DEFAULT_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;
  const configured = tracesEndpoint !== undefined || baseEndpoint !== undefined || exporter === 'otlp';

  const samplerRaw = get('OTEL_TRACES_SAMPLER');
  if (samplerRaw !== undefined && !(TRACE_SAMPLERS as readonly string[]).includes(samplerRaw)) fail('OTEL_TRACES_SAMPLER', TRACE_SAMPLERS.join(', '), samplerRaw);
  const ratioRaw = get('OTEL_TRACES_SAMPLER_ARG');
  const samplerRatio = ratioRaw === undefined ? 1 : Number(ratioRaw);
  if (!Number.isFinite(samplerRatio) || samplerRatio < 0 || samplerRatio > 1) fail('OTEL_TRACES_SAMPLER_ARG', 'a number from 0 to 1', ratioRaw ?? '');
  const capture = get('UHLP_TRACE_CAPTURE_PROMPTS');
  if (capture !== undefined && capture !== 'true' && capture !== 'false') fail('UHLP_TRACE_CAPTURE_PROMPTS', 'true or false', capture);

  return Object.freeze({
    enabled: configured && exporter !== 'none' && disabled?.toLowerCase() !== 'true',
    endpoint,
    headers: Object.freeze({
      ...keyValues(get('OTEL_EXPORTER_OTLP_HEADERS'), 'OTEL_EXPORTER_OTLP_HEADERS', fail),
      ...keyValues(get('OTEL_EXPORTER_OTLP_TRACES_HEADERS'), 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', fail),
    }),
    serviceName: get('OTEL_SERVICE_NAME') ?? 'uhlp-core',
    resourceAttributes: Object.freeze(keyValues(get('OTEL_RESOURCE_ATTRIBUTES'), 'OTEL_RESOURCE_ATTRIBUTES', fail)),
    sampler: (samplerRaw as TraceSampler | undefined) ?? 'parentbased_always_on',
    samplerRatio,
    capturePrompts: capture === 'true',
  });
}

/** Tracing off: what a core without OTEL_* settings runs with. */
export const TRACING_OFF: TracingConfig = Object.freeze({
  enabled: false,
  endpoint: `${DEFAULT_ENDPOINT}/v1/traces`,
  headers: Object.freeze({}),
  serviceName: 'uhlp-core',
  resourceAttributes: Object.freeze({}),
  sampler: 'parentbased_always_on',
  samplerRatio: 1,
  capturePrompts: false,
});

/** `k=v,k=v` with percent-encoded values (the W3C Baggage form the specification uses for these variables). */
function keyValues(raw: string | undefined, name: string, fail: (name: string, expected: string, got: string) => never): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === undefined) return out;
  for (const part of raw.split(',')) {
    if (part.trim() === '') continue;
    const at = part.indexOf('=');
    const key = at > 0 ? part.slice(0, at).trim() : '';
    if (key === '' || !/^[\x21-\x7e]+$/.test(key)) fail(name, 'comma-separated key=value pairs', raw.slice(0, 200));
    let value: string;
    try {
      value = decodeURIComponent(part.slice(at + 1).trim());
    } catch {
      fail(name, 'percent-encoded values', raw.slice(0, 200));
    }
    out[key] = value;
  }
  return out;
}
