/**
 * Debian's Prometheus, started on loopback for a test (and stopped by its pid): it scrapes
 * the given targets every second and evaluates the given rule files every second, so
 * panels and alerts are checked against the real query engine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './free-port.js';
import { waitFor } from './wait-for.js';

export interface PrometheusResult {
  metric: Record<string, string>;
  value: [number, string];
}

export interface PrometheusAlert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}

export interface PrometheusServer {
  readonly url: string;
  /** An instant query; throws with Prometheus's error when it fails. */
  query(expr: string): Promise<PrometheusResult[]>;
  /** The alerts pending or firing now. */
  alerts(): Promise<PrometheusAlert[]>;
  /** Prometheus's own log, for failure messages. */
  log(): string;
  stop(): Promise<void>;
}

export interface PrometheusTarget {
  readonly job: string;
  /** `host:port` */
  readonly address: string;
  /** Labels a ServiceMonitor would add (`namespace`). */
  readonly labels?: Record<string, string>;
}

/** Starts Prometheus and resolves once every target is up. */
export async function startPrometheus(options: { targets: readonly PrometheusTarget[]; ruleFiles?: readonly string[] }): Promise<PrometheusServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-prom-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    JSON.stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: options.ruleFiles ?? [],
      scrape_configs: options.targets.map((target) => ({ job_name: target.job, static_configs: [{ targets: [target.address], labels: target.labels ?? {} }] })),
    }),
  );
  let log = '';
  const child: ChildProcess = spawn('prometheus', [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-20_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const query = async (expr: string): Promise<PrometheusResult[]> => {
    const response = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await response.json()) as { status: string; error?: string; data?: { result: PrometheusResult[] } };
    if (body.status !== 'success') throw new Error(`query failed: ${body.error ?? response.status}: ${expr}`);
    return body.data!.result;
  };
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(async () => (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok === true, { timeoutMs: 60_000, intervalMs: 200, what: `Prometheus ready; log:\n${log}` });
    await waitFor(async () => (await query('up == 1')).length === options.targets.length, { timeoutMs: 30_000, intervalMs: 200, what: 'every target up' });
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    query,
    alerts: async () => ((await (await fetch(`${url}/api/v1/alerts`)).json()) as { data: { alerts: PrometheusAlert[] } }).data.alerts,
    log: () => log,
    stop,
  };
}
