import { describe, expect, it } from 'vitest';
import { parseTracingConfig } from './tracing-config.js';

const fail = (name: string, expected: string, got: string): never => {
  throw new Error(`${name}: expected ${expected}, got ${got}`);
};
const parse = (env: Record<string, string>) => parseTracingConfig(env, fail);

describe('the tracing settings', () => {
  it('are off without an endpoint or an otlp exporter', () => {
    expect(parse({}).enabled).toBe(false);
    expect(parse({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }).enabled).toBe(false);
  });

  it('turn on with a base endpoint (plus /v1/traces), a traces endpoint (as is), or OTEL_TRACES_EXPORTER=otlp (the default endpoint)', () => {
    expect(parse({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318/' })).toMatchObject({ enabled: true, endpoint: 'http://jaeger:4318/v1/traces' });
    expect(parse({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otel.example/custom', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:1' })).toMatchObject({ enabled: true, endpoint: 'https://otel.example/custom' });
    expect(parse({ OTEL_TRACES_EXPORTER: 'otlp' })).toMatchObject({ enabled: true, endpoint: 'http://localhost:4318/v1/traces' });
  });

  it('stay off when the SDK is disabled or the exporter is none', () => {
    expect(parse({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://j:4318', OTEL_SDK_DISABLED: 'true' }).enabled).toBe(false);
    expect(parse({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://j:4318', OTEL_TRACES_EXPORTER: 'none' }).enabled).toBe(false);
  });

  it('read the service name, resource attributes, headers, sampler and prompt capture', () => {
    const config = parse({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://j:4318',
      OTEL_SERVICE_NAME: 'edge-core',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=a%20b',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20x',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      UHLP_TRACE_CAPTURE_PROMPTS: 'true',
    });
    expect(config).toMatchObject({
      serviceName: 'edge-core',
      resourceAttributes: { 'deployment.environment': 'prod', team: 'a b' },
      headers: { authorization: 'Bearer x' },
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
      capturePrompts: true,
    });
    expect(parse({})).toMatchObject({ serviceName: 'uhlp-core', sampler: 'parentbased_always_on', samplerRatio: 1, capturePrompts: false });
  });

  it.each([
    ['OTEL_TRACES_SAMPLER', 'sometimes'],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5'],
    ['OTEL_TRACES_SAMPLER_ARG', 'NaN'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'ftp://x'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'http://a b'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
    ['OTEL_TRACES_EXPORTER', 'zipkin'],
    ['OTEL_SDK_DISABLED', 'yes'],
    ['OTEL_RESOURCE_ATTRIBUTES', '=novalue'],
    ['OTEL_RESOURCE_ATTRIBUTES', 'k=%E0%A4%A'],
    ['UHLP_TRACE_CAPTURE_PROMPTS', '1'],
  ])('refuses %s=%s, naming it', (name, value) => {
    expect(() => parse({ [name]: value })).toThrow(new RegExp(`^${name}:`));
  });
});
