/**
 * `uhlp optimize`: the operator's view of the optimization oracle, through a
 * running core's /_uhlp/oracle endpoints (loopback only).
 *
 *   uhlp optimize status [app[/component]] [--url URL] [--json]
 *   uhlp optimize promote|reject|rollback <app>/<component> [--url URL] [--json]
 *
 * status shows, per optimized component: its stage, the samples (held, seen,
 * repeats, unstable, per minute), the live agreement of the stage, the
 * candidate in force and the tokens saved; and the candidates judged. Asked
 * for one component, it also prints the module of the candidate in force (or
 * of the newest one judged).
 */
import { parseArgs } from 'node:util';
import { UhlpError } from '../shared/errors.js';
import type { ComponentStatus } from '../oracle/oracle-status.js';
import { ORACLE_ROUTE_PREFIX } from '../oracle/oracle-routes.js';

export const OPTIMIZE_USAGE = 'uhlp optimize status [app[/component]] | promote|reject|rollback <app>/<component>  [--url <core URL>] [--json]';

const DEFAULT_CORE_URL = 'http://127.0.0.1:8080';
const COMMANDS = ['promote', 'reject', 'rollback'] as const;

export async function optimizeCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { url: { type: 'string' }, json: { type: 'boolean' } } });
  const [sub, target, ...extra] = positionals;
  if (extra.length > 0 || sub === undefined) usage();
  const base = values.url ?? DEFAULT_CORE_URL;
  const url = (path: string): URL => {
    try {
      return new URL(`${ORACLE_ROUTE_PREFIX}/${path}`, base);
    } catch {
      throw new UhlpError('UHLP_CONFIG_INVALID', `--url must be the core's URL, got "${base}"`, { name: '--url', value: base });
    }
  };
  const parts = target === undefined ? [] : target.split('/');
  if (parts.length > 2 || parts.some((part) => part === '')) usage();
  const [appId, componentId] = parts;

  let answer: { ok: boolean; body: unknown } | undefined;
  if (sub === 'status') {
    const query = new URLSearchParams();
    if (appId) query.set('app', appId);
    if (componentId) query.set('component', componentId);
    answer = await call(url(`status${query.size > 0 ? `?${query}` : ''}`), { method: 'GET' }, base);
  } else if ((COMMANDS as readonly string[]).includes(sub)) {
    if (!appId || !componentId) usage();
    answer = await call(url(sub), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ app: appId, component: componentId }) }, base);
  } else {
    usage();
  }
  if (answer === undefined) return 1;
  if (!answer.ok) {
    const body = answer.body as { code?: unknown; message?: unknown } | undefined;
    process.stderr.write(`uhlp: ${typeof body?.code === 'string' ? `${body.code}: ` : ''}${typeof body?.message === 'string' ? body.message : 'the core refused the request'}\n`);
    return 1;
  }
  const components = sub === 'status' ? (answer.body as { components: ComponentStatus[] }).components : [answer.body as ComponentStatus];
  process.stdout.write(values.json ? `${JSON.stringify(sub === 'status' ? { components } : components[0], null, 2)}\n` : statusText(components));
  return 0;
}

function usage(): never {
  throw new UhlpError('UHLP_CONFIG_INVALID', `usage: ${OPTIMIZE_USAGE}`);
}

async function call(url: URL, init: RequestInit, base: string): Promise<{ ok: boolean; body: unknown } | undefined> {
  let response: Response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    process.stderr.write(`uhlp: no core answers at ${base}: ${error instanceof Error ? error.message : String(error)}\n`);
    return undefined;
  }
  return { ok: response.ok, body: await response.json().catch(() => undefined) };
}

/** The status as people read it: one block per component. */
export function statusText(components: readonly ComponentStatus[]): string {
  if (components.length === 0) return 'no optimized components (set llm.optimize.mode to suggest or auto)\n';
  const lines: string[] = [];
  for (const c of components) {
    lines.push(`${c.app}/${c.component}  ${c.stage}  (mode ${c.mode}, handler ${c.handler})`);
    if (c.reason) lines.push(`  reason:     ${c.reason}`);
    if (c.samples) {
      const s = c.samples;
      lines.push(`  samples:    ${s.stored} held of ${s.seen} distinct inputs, ${s.perMinute}/min on this core; ${s.repeats} repeats, ${s.unstable} unstable: ${s.stable ? 'stable' : 'not stable yet'}`);
    }
    if (c.candidate) {
      lines.push(`  candidate:  ${c.candidate.hash.slice(0, 12)} ${c.candidate.script} agreement ${c.candidate.agreement} coverage ${c.candidate.coverage} on ${c.candidate.heldBack} held-back (${c.candidate.model})`);
    }
    if (c.promotion) lines.push(`  promotion:  ${c.promotion.commit.slice(0, 12)}${c.promotion.branch ? ` on branch ${c.promotion.branch}` : ''} at ${c.promotion.at}`);
    if (c.rollback) lines.push(`  rollback:   ${c.rollback.commit ? `${c.rollback.commit.slice(0, 12)} ` : ''}${c.rollback.reason}`);
    const agreement = c.live.agreement === null ? '-' : c.live.agreement.toFixed(4);
    lines.push(`  live:       ${c.live.compared} compared in this stage, agreement ${agreement}, ${c.live.disagreements} disagreed, ${c.live.declines} declined`);
    lines.push(`  tokens:     ${c.totals.tokensSaved} saved by ${c.totals.hits} answers of the code; code generation spent ${c.codegen.tokens} in ${c.codegen.attempts} attempts`);
    for (const candidate of c.candidates) {
      lines.push(`  - ${candidate.hash.slice(0, 12)} attempt ${candidate.attempt} ${candidate.verdict} agreement ${candidate.agreement} coverage ${candidate.coverage}${candidate.reason ? `: ${candidate.reason}` : ''}`);
    }
    // Asked for one component: the module in force (or the newest judged), to read before it is promoted or applied by hand.
    const shown = c.candidates.find((candidate) => candidate.hash === c.candidate?.hash) ?? c.candidates[0];
    if (shown?.source !== undefined) {
      lines.push(`  module ${shown.script} (${shown.hash.slice(0, 12)}):`);
      for (const line of shown.source.trimEnd().split('\n')) lines.push(`    ${line}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
