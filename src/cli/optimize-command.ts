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
import { loadOperatorClientConfig } from '../config.js';
import type { ComponentStatus } from '../oracle/oracle-status.js';
import { ORACLE_ROUTE_PREFIX } from '../oracle/oracle-routes.js';
import type { CommandGroup, CommandSpec } from './command-spec.js';
import { parseCommandLine, printHelp, subcommandOf, usageError } from './command-line.js';
import { DATA_DIR_FLAG, JSON_FLAG, OPERATOR_URL_FLAG } from './client-flags.js';
import { coreRefusal, coreTarget, fetchCore } from './core-target.js';
import { EXIT_OK } from './exit-codes.js';

const FLAGS = { url: OPERATOR_URL_FLAG, 'data-dir': DATA_DIR_FLAG, json: JSON_FLAG } as const;
type OptimizeSpec = CommandSpec<typeof FLAGS>;

const ACTIONS = {
  promote: 'Commits a suggested candidate to the served branch, or moves shadow to canary and canary to full',
  reject: "Reverts a promotion, or stops optimizing the component at its llm revision",
  rollback: 'Reverts a promotion by a commit: the LLM answers again',
} as const;

export const OPTIMIZE_COMMANDS: readonly OptimizeSpec[] = [
  {
    name: 'optimize status',
    summary: "Stage, samples, agreement, tokens saved and candidates of each optimized LLM component (one component: its module's code too)",
    usage: ['[app[/component]] [flags]'],
    positionals: { min: 0, max: 1 },
    flags: FLAGS,
    examples: ['uhlp optimize status', 'uhlp optimize status support/triage --json'],
  },
  ...Object.entries(ACTIONS).map(([action, summary]): OptimizeSpec => ({
    name: `optimize ${action}`,
    summary,
    usage: ['<app>/<component> [flags]'],
    positionals: { min: 1, max: 1 },
    flags: FLAGS,
    examples: [`uhlp optimize ${action} support/triage`],
  })),
];

export const OPTIMIZE_GROUP: CommandGroup = {
  name: 'optimize',
  summary: 'The optimization oracle of a running core (loopback only): status, promote, reject, roll back (docs/oracle.md)',
  commands: OPTIMIZE_COMMANDS,
};

export async function optimizeCommand(argv: string[]): Promise<number> {
  const chosen = subcommandOf(OPTIMIZE_GROUP, argv);
  if ('help' in chosen) return printHelp(chosen.help);
  const spec = chosen.spec as OptimizeSpec;
  const line = parseCommandLine(spec, chosen.rest);
  if (line.help !== undefined) return printHelp(line.help);
  const { values, positionals } = line;
  const sub = spec.name.slice('optimize '.length);
  const target = coreTarget(loadOperatorClientConfig(values));
  const parts = positionals[0] === undefined ? [] : positionals[0].split('/');
  if (parts.length > 2 || parts.some((part) => part === '')) throw usageError(spec, `"${positionals[0]}" is not app or app/component`);
  const [appId, componentId] = parts;

  let answer: { response: Response; body: unknown };
  if (sub === 'status') {
    const query = new URLSearchParams();
    if (appId) query.set('app', appId);
    if (componentId) query.set('component', componentId);
    answer = await fetchCore(target, `${ORACLE_ROUTE_PREFIX}/status${query.size > 0 ? `?${query}` : ''}`, { method: 'GET' });
  } else {
    if (!appId || !componentId) throw usageError(spec, `name the component as <app>/<component>, got "${positionals[0]}"`);
    answer = await fetchCore(target, `${ORACLE_ROUTE_PREFIX}/${sub}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ app: appId, component: componentId }) });
  }
  if (!answer.response.ok) throw coreRefusal(answer.response, answer.body);
  const components = sub === 'status' ? (answer.body as { components: ComponentStatus[] }).components : [answer.body as ComponentStatus];
  process.stdout.write(values.json ? `${JSON.stringify(sub === 'status' ? { components } : components[0], null, 2)}\n` : statusText(components));
  return EXIT_OK;
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
