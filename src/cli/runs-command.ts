/**
 * `uhlp runs show|trace <runId> [--url <core URL>] [--json]`: a workflow run
 * (GET /_uhlp/runs/<id>) or its trace (GET /_uhlp/runs/<id>/trace), as the
 * core serves it. `trace` prints one line per SimulationStep (index, node,
 * type, status, duration, thought, action) after the run's provenance, or the
 * trace's JSON with --json, to replay the run step by step.
 */
import { parseArgs } from 'node:util';
import { UhlpError } from '../shared/errors.js';
import { isRunId } from '../workflow-runs/run-record.js';
import { RUNS_PATH } from '../workflow-runs/run-links.js';

export const RUNS_USAGE = 'uhlp runs show|trace <runId> [--url <core URL>] [--json]';

/** Where `uhlp dev` listens when given no flags. */
const DEFAULT_CORE_URL = 'http://127.0.0.1:8080';

export async function runsCommand(argv: string[], write: (text: string) => void = (text) => process.stdout.write(text)): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { url: { type: 'string' }, json: { type: 'boolean' } } });
  const [sub, runId] = positionals;
  if ((sub !== 'show' && sub !== 'trace') || runId === undefined || positionals.length !== 2) throw new UhlpError('UHLP_CONFIG_INVALID', `usage: ${RUNS_USAGE}`);
  if (!isRunId(runId)) throw new UhlpError('UHLP_CONFIG_INVALID', `"${runId.slice(0, 80)}" is no run id (RUN-<time>-<random>)`, { name: 'runId' });
  const base = values.url ?? DEFAULT_CORE_URL;
  let url: URL;
  try {
    url = new URL(`${RUNS_PATH}/${runId}${sub === 'trace' ? '/trace' : ''}`, base);
  } catch {
    throw new UhlpError('UHLP_CONFIG_INVALID', `--url must be the core's URL, got "${base}"`, { name: '--url', value: base });
  }
  let response: Response;
  try {
    response = await fetch(url);
  } catch (error) {
    process.stderr.write(`uhlp: no core answers at ${base}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!response.ok || body === undefined) {
    process.stderr.write(`uhlp: ${typeof body?.['code'] === 'string' ? `${body['code']}: ` : ''}${typeof body?.['message'] === 'string' ? body['message'] : `HTTP ${response.status}`}\n`);
    return 1;
  }
  if (values.json === true || sub === 'show') {
    write(`${JSON.stringify(body, null, 2)}\n`);
    return 0;
  }
  write(formatTrace(body));
  return 0;
}

/** A trace as text: the provenance, then one line per step. */
export function formatTrace(trace: Record<string, unknown>): string {
  const lines = [`run ${String(trace['runId'])}  workflow ${String(trace['workflowId'])}  status ${String(trace['status'])}  revision ${String(trace['revision']).slice(0, 12)}`];
  const metadata = trace['metadata'] as Record<string, unknown> | null;
  if (metadata !== null && metadata !== undefined) {
    lines.push(`generated_by ${String(metadata['generated_by'] ?? '-')}  confidence_score ${String(metadata['confidence_score'] ?? '-')}`);
    if (metadata['generation_rationale'] !== undefined) lines.push(`rationale: ${String(metadata['generation_rationale'])}`);
  }
  if (Number(trace['droppedSteps']) > 0) lines.push(`(${String(trace['droppedSteps'])} earlier steps dropped)`);
  for (const step of (trace['steps'] as Array<Record<string, unknown>>) ?? []) {
    lines.push(
      `#${String(step['index'])} ${String(step['node'])} (${String(step['type'])}) ${String(step['status'])} ${String(step['durationMs'])}ms  ${String(step['thought'])}  action=${JSON.stringify(step['action'])}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
