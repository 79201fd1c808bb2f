/**
 * `uhlp runs show|trace <runId> [--url <core URL>] [--json]`: a workflow run
 * (GET /_uhlp/runs/<id>) or its trace (GET /_uhlp/runs/<id>/trace), as the
 * core serves it. `uhlp runs cancel <runId> [--by NAME]` cancels it (POST
 * /_uhlp/runs/<id>/cancel, with the run id as the credential) and prints the
 * run once it has ended. `trace` prints one line per SimulationStep (index, node,
 * type, status, duration, thought, action) after the run's provenance, or the
 * trace's JSON with --json, to replay the run step by step.
 *
 * `uhlp runs replay <runId> --from-step N [--current-revision]` and `uhlp runs
 * fork <runId> --from-step N (--set <merge patch> | --blackboard <json>)` make
 * a new run from the state before step N (docs/workflows.md "Replay and fork").
 * They are operators' actions: they call the console's routes on the operator
 * listener (`--url` then names it, else UHLP_OPERATOR_URL or the recorded one)
 * as the loopback operator, and print the new run.
 */
import { userInfo } from 'node:os';
import { loadClientConfig, loadOperatorClientConfig } from '../config.js';
import { CONSOLE_HEADER } from '../console/console-access.js';
import { UhlpError } from '../shared/errors.js';
import { isRunId } from '../workflow-runs/run-record.js';
import { RUNS_PATH } from '../workflow-runs/run-links.js';
import type { CommandGroup, CommandSpec } from './command-spec.js';
import { parseCommandLine, printHelp, subcommandOf } from './command-line.js';
import { DATA_DIR_FLAG, JSON_FLAG, URL_FLAG } from './client-flags.js';
import { coreRefusal, coreTarget, fetchCore } from './core-target.js';
import { EXIT_OK } from './exit-codes.js';

const FLAGS = {
  url: URL_FLAG,
  'data-dir': DATA_DIR_FLAG,
  json: JSON_FLAG,
  by: { type: 'string', value: 'NAME', help: 'runs cancel: who cancels, recorded on the run and in the ledger (default: cli:<your user name>)' },
  'from-step': { type: 'string', value: 'N', help: 'runs replay|fork: the index of the first step run again (uhlp runs trace shows them)' },
  'current-revision': { type: 'boolean', help: "runs replay|fork: run on the app's current revision, not the one the run was pinned to" },
  set: { type: 'string', value: 'JSON', help: 'runs fork: a JSON merge patch (RFC 7396) of the blackboard, e.g. \'{"draft": null, "tone": "formal"}\'' },
  blackboard: { type: 'string', value: 'JSON', help: 'runs fork: the whole blackboard the new run starts with, instead of --set' },
} as const;
type RunsSpec = CommandSpec<typeof FLAGS>;

export const RUNS_COMMANDS: readonly RunsSpec[] = [
  {
    name: 'runs show',
    summary: "A workflow run as the core keeps it: status, blackboard, result (JSON)",
    usage: ['<runId> [flags]'],
    positionals: { min: 1, max: 1 },
    flags: FLAGS,
    examples: ['uhlp runs show RUN-20250101T120000000Z-0123456789ABCDEFGHJK'],
  },
  {
    name: 'runs trace',
    summary: "A run's trace: its provenance, then one line per step (node, type, status, duration, thought, action)",
    usage: ['<runId> [flags]'],
    positionals: { min: 1, max: 1 },
    flags: FLAGS,
    examples: ['uhlp runs trace RUN-20250101T120000000Z-0123456789ABCDEFGHJK', 'uhlp runs trace RUN-20250101T120000000Z-0123456789ABCDEFGHJK --json'],
  },
  {
    name: 'runs cancel',
    summary: "Cancels a run: the step in flight is cut, the workflow's on_cancel node runs if it has one, the run ends cancelled (JSON)",
    usage: ['<runId> [--by NAME] [flags]'],
    positionals: { min: 1, max: 1 },
    flags: FLAGS,
    examples: ['uhlp runs cancel RUN-20250101T120000000Z-0123456789ABCDEFGHJK --by ada'],
  },
  {
    name: 'runs replay',
    summary: 'Makes a new run from the state before step N: the steps before it are taken from the run, N onwards run again (JSON; operator listener)',
    usage: ['<runId> --from-step N [--current-revision] [flags]'],
    positionals: { min: 1, max: 1 },
    flags: FLAGS,
    examples: ['uhlp runs replay RUN-20250101T120000000Z-0123456789ABCDEFGHJK --from-step 2'],
  },
  {
    name: 'runs fork',
    summary: "A replay whose blackboard is edited first, checked against the workflow's state.schema (JSON; operator listener)",
    usage: ['<runId> --from-step N (--set JSON | --blackboard JSON) [--current-revision] [flags]'],
    positionals: { min: 1, max: 1 },
    flags: FLAGS,
    examples: ['uhlp runs fork RUN-20250101T120000000Z-0123456789ABCDEFGHJK --from-step 2 --set \'{"input": {"text": "again, politely"}}\''],
  },
];

export const RUNS_GROUP: CommandGroup = {
  name: 'runs',
  summary: 'Workflow runs of a running core: a run, its trace step by step, cancelling, replaying and forking it (docs/workflows.md)',
  commands: RUNS_COMMANDS,
  notes: ["A run's id is in the x-uhlp-run-id header of its answer, and in the console's runs page."],
};

export async function runsCommand(argv: string[], write: (text: string) => void = (text) => process.stdout.write(text)): Promise<number> {
  const chosen = subcommandOf(RUNS_GROUP, argv);
  if ('help' in chosen) return printHelp(chosen.help);
  const line = parseCommandLine(chosen.spec as RunsSpec, chosen.rest);
  if (line.help !== undefined) return printHelp(line.help);
  const { values, positionals } = line;
  const sub = chosen.spec.name.slice('runs '.length);
  const runId = positionals[0]!;
  if (!isRunId(runId)) throw new UhlpError('UHLP_USAGE', `uhlp ${chosen.spec.name}: "${runId.slice(0, 80)}" is no run id (RUN-<time>-<random>)`, { name: 'runId' });
  if (sub === 'replay' || sub === 'fork') return replayOrFork(sub, runId, values, write);
  const target = coreTarget(loadClientConfig(values));
  if (sub === 'cancel') {
    const by = typeof values.by === 'string' ? values.by : `cli:${userInfo().username}`;
    const { response, body } = await fetchCore(target, `${RUNS_PATH}/${runId}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ by: by.slice(0, 256) }),
    });
    if (!response.ok || body === undefined) throw coreRefusal(response, body as Record<string, unknown> | undefined);
    write(`${JSON.stringify(body, null, 2)}\n`);
    return EXIT_OK;
  }
  const { response, body: answer } = await fetchCore(target, `${RUNS_PATH}/${runId}${sub === 'trace' ? '/trace' : ''}`);
  const body = answer as Record<string, unknown> | undefined;
  if (!response.ok || body === undefined) throw coreRefusal(response, body);
  if (values.json === true || sub === 'show') {
    write(`${JSON.stringify(body, null, 2)}\n`);
    return EXIT_OK;
  }
  write(formatTrace(body));
  return EXIT_OK;
}

/** `runs replay` and `runs fork`: the console's route on the operator listener, as the loopback operator. */
async function replayOrFork(sub: 'replay' | 'fork', runId: string, values: Record<string, unknown>, write: (text: string) => void): Promise<number> {
  const usage = (flag: string, reason: string): never => {
    throw new UhlpError('UHLP_USAGE', `uhlp runs ${sub}: --${flag} ${reason}`, { name: flag });
  };
  const step = typeof values['from-step'] === 'string' ? values['from-step'] : usage('from-step', 'is required: the index of the first step run again');
  if (!/^\d{1,9}$/.test(step)) usage('from-step', 'must be a step index (0, 1, 2, ...)');
  const body: Record<string, unknown> = { fromStep: Number(step), ...(values['current-revision'] === true ? { currentRevision: true } : {}) };
  const json = (flag: 'set' | 'blackboard'): unknown => {
    try {
      return JSON.parse(String(values[flag]));
    } catch {
      return usage(flag, 'must be JSON');
    }
  };
  if (sub === 'fork') {
    if ((values['set'] === undefined) === (values['blackboard'] === undefined)) usage('set', 'or --blackboard (exactly one) is required: the edit of the blackboard');
    if (values['set'] !== undefined) body['set'] = json('set');
    else body['blackboard'] = json('blackboard');
  } else if (values['set'] !== undefined || values['blackboard'] !== undefined) usage(values['set'] !== undefined ? 'set' : 'blackboard', 'is for runs fork');
  const target = coreTarget(loadOperatorClientConfig(values as { url?: string; 'data-dir'?: string }));
  const { response, body: answer } = await fetchCore(target, `/_uhlp/console/api/runs/${runId}/${sub}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [CONSOLE_HEADER]: '1' },
    body: JSON.stringify(body),
  });
  if (!response.ok || answer === undefined) throw coreRefusal(response, answer as Record<string, unknown> | undefined);
  write(`${JSON.stringify((answer as { run?: unknown }).run ?? answer, null, 2)}\n`);
  return EXIT_OK;
}

/** A trace as text: the provenance, then one line per step. */
export function formatTrace(trace: Record<string, unknown>): string {
  const lines = [`run ${String(trace['runId'])}  workflow ${String(trace['workflowId'])}  status ${String(trace['status'])}  revision ${String(trace['revision']).slice(0, 12)}`];
  const metadata = trace['metadata'] as Record<string, unknown> | null;
  if (metadata !== null && metadata !== undefined) {
    lines.push(`generated_by ${String(metadata['generated_by'] ?? '-')}  confidence_score ${String(metadata['confidence_score'] ?? '-')}`);
    if (metadata['generation_rationale'] !== undefined) lines.push(`rationale: ${String(metadata['generation_rationale'])}`);
  }
  const parent = trace['parent'] as { runId?: string; step?: number; kind?: string } | undefined;
  if (parent !== undefined && parent !== null) lines.push(`${String(parent.kind)} of ${String(parent.runId)} from step ${String(parent.step)}`);
  if (Number(trace['droppedSteps']) > 0) lines.push(`(${String(trace['droppedSteps'])} earlier steps dropped)`);
  for (const step of (trace['steps'] as Array<Record<string, unknown>>) ?? []) {
    const taken = step['takenFrom'] as { runId?: string } | undefined;
    lines.push(
      `#${String(step['index'])}${taken !== undefined ? ` (taken from ${String(taken.runId)})` : ''} ${String(step['node'])} (${String(step['type'])}) ${String(step['status'])} ${String(step['durationMs'])}ms  ${String(step['thought'])}  action=${JSON.stringify(step['action'])}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
