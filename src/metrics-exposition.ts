/**
 * /metrics in the format the scraper asks for: OpenMetrics (with exemplars:
 * the trace behind a latency bucket) when its Accept names
 * `application/openmetrics-text`, Prometheus' text format otherwise.
 *
 * prom-client writes a registry in one format, its content type's, and while
 * writing OpenMetrics it renames counters (drops `_total`, which it then adds
 * back to the samples): the registry is switched for one exposition and put
 * back, names included, and expositions run one at a time so that a
 * Prometheus scrape never reads a half-switched registry.
 */
import { Registry } from 'prom-client';

let queue: Promise<unknown> = Promise.resolve();

export function prefersOpenMetrics(accept: string | undefined): boolean {
  return accept !== undefined && /application\/openmetrics-text/i.test(accept);
}

export function exposition(registry: Registry, openMetrics: boolean): Promise<{ body: string; contentType: string }> {
  const run = async (): Promise<{ body: string; contentType: string }> => {
    if (!openMetrics) return { body: await registry.metrics(), contentType: registry.contentType };
    // Loosely typed: prom-client types a registry by the one content type it was made with.
    const switchable = registry as unknown as { contentType: string; setContentType(type: string): void; metrics(): Promise<string>; getMetricsAsArray(): Array<{ type: unknown; name: string }> };
    const counters = switchable.getMetricsAsArray().filter((metric) => String(metric.type) === 'counter');
    const names = counters.map((metric) => metric.name);
    const plain = switchable.contentType;
    switchable.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    try {
      return { body: await switchable.metrics(), contentType: Registry.OPENMETRICS_CONTENT_TYPE };
    } finally {
      switchable.setContentType(plain);
      counters.forEach((metric, i) => (metric.name = names[i]!));
    }
  };
  const result = queue.then(run, run);
  queue = result.catch(() => undefined);
  return result;
}
