/**
 * Three cores on one replicated state, through failures: three `uhlp dev`
 * processes (process driver) on a Sentinel or Cluster topology serve the
 * `fleet` app (test/fixtures/fleet) — an `Idempotency-Key` route, a queue and
 * its consumer, a cron job firing every second and a three-step workflow —
 * while the test sends load to all three and the topology's own script fails
 * things (a failover, a killed master, a moved slot, a core killed with
 * SIGKILL mid-turn). Then the counts, exactly:
 *
 * - every acknowledged publish ran; a message ran more than once only when an
 *   earlier run's core was killed or Redis failed over while it ran, and every
 *   later run carried a higher attempt;
 * - no `Idempotency-Key` answered twice with different answers, none executed
 *   twice unless a request for it was cut by the killed core;
 * - no cron slot fired twice (its one delivery may run again, as a queue
 *   message may, with a higher attempt when its first run began in a
 *   disruption); a slot outside every disruption fired once;
 * - every run that was started completed, exactly once, each step at least once;
 * - a request refused along the way was refused with a retryable code only
 *   (503 `UHLP_STATE_UNAVAILABLE`, 409 `UHLP_IDEMPOTENCY_IN_FLIGHT`) or cut by
 *   the killed core; the test prints how many.
 */
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAiTestServer, type OpenAiTestServer } from './openai-test-server.js';
import { retryPassing } from './redis-retry.js';
import { adminJson } from './sources-suite.js';
import { copyFixture, descendants, startUhlpDev, waitUntilReady, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';

/** The runtime-state prefix the cores share. */
export const FLEET_PREFIX = 'fleet:';
/** Where the fleet app's kv keys live (an app's kv is namespaced by its id). */
const KV = `${FLEET_PREFIX}kv:app/fleet/kv/`;

/** What a topology's test hands the suite. */
export interface FleetTopology {
  /** The `--state` URL. */
  readonly url: string;
  /** Extra environment of every core (UHLP_STATE_REPLICA_ACKS). */
  readonly env: Record<string, string>;
  /** A client of the state for the test's own reads (every master of a Cluster is scanned). */
  client(): Redis | Cluster;
  stop(): Promise<void>;
}

/** A span of time in which something was failing; slots and reruns inside one are judged leniently. */
export interface Disruption {
  readonly what: string;
  readonly from: number;
  to: number;
}

/** What the topology's failure script may do while the load runs. */
export interface FleetChaos {
  /** Kills one core (SIGKILL, its sandboxes too) while it has turns in flight. */
  killCore(): Promise<void>;
  /** Records a span of failure: returns a function that closes it. */
  disrupt(what: string): () => void;
  /** Resolves after `ms` of load. */
  sleep(ms: number): Promise<void>;
  /** Resolves once a once-only request (a kept write) is answered 200 again. */
  writable(): Promise<void>;
}

export interface FleetOptions {
  /** Brings the topology up (before the cores start). */
  readonly start: () => Promise<FleetTopology>;
  /** The failures, run while the load runs; the load stops when this resolves, after `settleMs` more. */
  readonly chaos: (chaos: FleetChaos, topology: FleetTopology) => Promise<void>;
  /** Load after the chaos script ends. @defaultValue 3000 */
  readonly settleMs?: number;
}

interface Outcome {
  readonly status: number;
  readonly code?: string;
  readonly json?: any;
  readonly runId?: string | null;
  /** The connection failed (the core was killed). */
  readonly cut?: boolean;
}

/** Answers a request gets that the test accepts as "refused, try again" (docs/runtime-state.md). */
const RETRYABLE = new Set(['503 UHLP_STATE_UNAVAILABLE', '409 UHLP_IDEMPOTENCY_IN_FLIGHT']);

async function post(url: string, body: string, headers: Record<string, string> = {}): Promise<Outcome> {
  try {
    const response = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, signal: AbortSignal.timeout(60_000) });
    const text = await response.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = { text };
    }
    return { status: response.status, code: json?.code, json, runId: response.headers.get('x-uhlp-run-id') };
  } catch {
    return { status: 0, cut: true };
  }
}

/** Every key matching `pattern` on every master (scanned again if a node is being replaced meanwhile). */
async function scanKeys(client: Redis | Cluster, pattern: string): Promise<string[]> {
  return retryPassing(() => scanKeysOnce(client, pattern));
}

async function scanKeysOnce(client: Redis | Cluster, pattern: string): Promise<string[]> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  const keys = new Set<string>();
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of found) keys.add(key);
    } while (cursor !== '0');
  }
  return [...keys];
}

/** What keeps the queue or the runs from settling: the messages pending, retrying or in the stream, the active runs and their records. */
async function leftover(client: Redis | Cluster, survivor: UhlpProcess, started: number): Promise<string> {
  const stream = `${FLEET_PREFIX}queue:fleet:jobs`;
  const parts: string[] = [];
  const safely = async (what: string, read: () => Promise<unknown>): Promise<void> => {
    try {
      parts.push(`${what} ${JSON.stringify(await read())}`);
    } catch (error) {
      parts.push(`${what} failed: ${(error as Error).message}`);
    }
  };
  await safely('queues', () => adminJson(survivor, '/_uhlp/queues'));
  await safely('stream', async () => (await client.xrange(stream, '-', '+', 'COUNT', 10)).map(([id, fields]) => [id, fields.join(' ').slice(0, 200)]));
  await safely('pending', () => client.xpending(stream, 'uhlp', '-', '+', 10));
  await safely('consumers', () => client.xinfo('CONSUMERS', stream, 'uhlp'));
  await safely('retrying', () => client.zrange(`{${stream}}:retry`, '0', '9', 'WITHSCORES'));
  const active = await client.zrange(`${FLEET_PREFIX}runs:active`, '0', '-1', 'WITHSCORES');
  parts.push(`active runs ${active.length / 2}`);
  for (let index = 0; index < active.length && index < 20; index += 2) {
    const id = active[index]!;
    const since = ((Number(active[index + 1]) - started) / 1000).toFixed(1);
    await safely(`run ${id} (active since ${since} s)`, async () => {
      const record = await client.hgetall(`{${FLEET_PREFIX}runs:active}:run:${id}`);
      const json = record.json ? JSON.parse(record.json) : undefined;
      const lease = `${FLEET_PREFIX}lease:run:${id}`;
      return { version: record.version, status: json?.status, input: json?.blackboard?.input?.id, error: json?.error, updatedAt: json?.updatedAt, lease: [await client.get(lease), await client.pttl(lease)], fields: json ? Object.keys(json) : [] };
    });
  }
  await safely('now', async () => (Date.now() - started) / 1000);
  return parts.join('\n  ');
}

/** What the store and the cores' logs say of a run that did not complete: its record, whether the active set lists it, its lease, the log lines naming it. */
async function unsettledRun(client: Redis | Cluster, cores: readonly UhlpProcess[], id: string, started: number): Promise<string> {
  try {
    const record = await retryPassing(() => client.hgetall(`{${FLEET_PREFIX}runs:active}:run:${id}`));
    const json = record.json ? JSON.parse(record.json) : undefined;
    const lease = `${FLEET_PREFIX}lease:run:${id}`;
    const [score, holder, ttl] = await retryPassing(() => Promise.all([client.zscore(`${FLEET_PREFIX}runs:active`, id), client.get(lease), client.pttl(lease)]));
    const logs = cores.flatMap((core, index) => core.stdout().split('\n').filter((line) => line.includes(id)).map((line) => `core ${index}: ${line.slice(0, 300)}`));
    return JSON.stringify({
      id,
      version: record.version,
      status: json?.status,
      input: json?.state?.blackboard?.input?.id,
      owner: json?.owner,
      attempts: json?.attempts,
      nodesRun: json?.state?.nodesRun,
      createdAt: json?.createdAt && (Date.parse(json.createdAt) - started) / 1000,
      updatedAt: json?.updatedAt && (Date.parse(json.updatedAt) - started) / 1000,
      active: score === null ? null : (Number(score) - started) / 1000,
      lease: [holder, ttl],
      logs: logs.slice(0, 20),
    });
  } catch (error) {
    return `${id}: not read (${(error as Error).message})`;
  }
}

function countBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

export function describeFleet(name: string, options: FleetOptions): void {
  describe(`three cores through failures: ${name}`, () => {
    let topology: FleetTopology;
    let llm: OpenAiTestServer;
    let cores: UhlpProcess[] = [];
    let client: Redis | Cluster;

    beforeAll(async () => {
      topology = await options.start();
      llm = await startOpenAiTestServer();
      const env = { UHLP_STATE_PREFIX: FLEET_PREFIX, UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_LOG_LEVEL: 'warn', ...topology.env };
      // One after the other (three starting at once on a loaded machine take longer than three times one),
      // each on its own copy of one Git repository: the first core commits the fixture, the others copy that
      // repository, so all serve the same revision (a run is pinned to its revision; another core resumes it
      // only if it has that revision, as cores serving one repository do).
      const first = copyFixture('fleet');
      for (let index = 0; index < 3; index += 1) {
        let definitions = first;
        if (index > 0) {
          definitions = mkdtempSync(path.join(os.tmpdir(), 'uhlp-fleet-'));
          cpSync(first, definitions, { recursive: true });
        }
        cores.push(await startUhlpDev(definitions, ['--driver', 'process', '--state', topology.url], 300_000, undefined, env));
      }
      await Promise.all(cores.map((core) => waitUntilReady(core)));
      for (const core of cores) expect(core.stdout(), core.stdout()).toMatch(/ready at \S+ \(apps: fleet\)/);
      client = topology.client();
    }, 960_000);

    afterAll(async () => {
      // UHLP_FLEET_LOG_DIR keeps each core's output (stdout and stderr) there, for a run to be read afterwards.
      const logDir = process.env.UHLP_FLEET_LOG_DIR;
      if (logDir) {
        mkdirSync(logDir, { recursive: true });
        cores.forEach((core, index) => writeFileSync(path.join(logDir, `core-${index}.log`), `${core.stdout()}\n--- stderr\n${core.stderr()}`));
      }
      client?.disconnect();
      await Promise.all(cores.map((core) => core.stop('SIGKILL')));
      await llm?.close();
      await topology?.stop();
    });

    it('loses and doubles no acknowledged work: queue messages, once-only answers, cron slots, workflow runs', async () => {
      const started = Date.now();
      const disruptions: Disruption[] = [];
      const alive = new Set([0, 1, 2]);
      let killed: { index: number; at: number } | undefined;
      let stop = false;
      const refusals = new Map<string, number>();
      const unexpected: string[] = [];
      const judge = (what: string, core: number, outcome: Outcome, ok: number): boolean => {
        if (outcome.status === ok) return true;
        const label = outcome.cut ? 'cut' : `${outcome.status} ${outcome.code ?? ''}`.trim();
        refusals.set(`${what} ${label}`, (refusals.get(`${what} ${label}`) ?? 0) + 1);
        // A cut connection is allowed from the killed core only; every other refusal must be retryable.
        if (outcome.cut ? killed?.index !== core : !RETRYABLE.has(label)) unexpected.push(`${what} on core ${core}: ${label} ${JSON.stringify(outcome.json ?? {}).slice(0, 300)}`);
        return false;
      };
      let turn = 0;
      const pick = (): number => {
        const live = [...alive];
        return live[turn++ % live.length]!;
      };

      // Once-only requests: each key sent twice, to two cores.
      const minted = new Map<string, Array<{ id: string; core: number }>>();
      const cutKeys = new Set<string>();
      const mintLoop = async (lane: number): Promise<void> => {
        for (let n = 0; !stop; n += 1) {
          const key = `k-${lane}-${n}`;
          for (let copy = 0; copy < 2; copy += 1) {
            const core = pick();
            const outcome = await post(`${cores[core]!.url}/fleet/mint`, key, { 'idempotency-key': key });
            if (judge('mint', core, outcome, 200)) minted.set(key, [...(minted.get(key) ?? []), { id: outcome.json.id, core }]);
            else if (outcome.cut) cutKeys.add(key);
          }
        }
      };
      // Publishes: acknowledged when the route answers 200 with a message id.
      const acknowledged = new Set<string>();
      const publishedAt = new Map<string, number>();
      const publishLoop = async (lane: number): Promise<void> => {
        for (let n = 0; !stop; n += 1) {
          const id = `m-${lane}-${n}`;
          const core = pick();
          const outcome = await post(`${cores[core]!.url}/fleet/publish`, JSON.stringify({ id }));
          if (judge('publish', core, outcome, 200)) {
            acknowledged.add(id);
            publishedAt.set(id, Date.now());
          }
        }
      };
      // Workflow runs: started by a request; the run id comes back with the answer.
      const flows = new Map<string, { core: number; outcome: Outcome }>();
      const flowLoop = async (lane: number): Promise<void> => {
        for (let n = 0; !stop; n += 1) {
          const id = `w-${lane}-${n}`;
          const core = pick();
          const outcome = await post(`${cores[core]!.url}/fleet/flow`, JSON.stringify({ id, one: 'one', two: 'two', three: 'three' }));
          judge('flow', core, outcome, 200);
          flows.set(id, { core, outcome });
        }
      };

      const chaos: FleetChaos = {
        async killCore() {
          const index = [...alive][0]!;
          const core = cores[index]!;
          // Its sandboxes too: a crash of the machine, not a drain (SIGTERM would finish the turns in flight).
          const left = descendants(core.child.pid!);
          const close = chaos.disrupt(`core ${index} killed`);
          alive.delete(index);
          killed = { index, at: Date.now() };
          process.kill(core.child.pid!, 'SIGKILL');
          for (const pid of left) {
            try {
              process.kill(pid, 'SIGKILL');
            } catch {
              // Gone with its core.
            }
          }
          await core.stop('SIGKILL');
          // Its claims, leases and runs are taken over once their leases lapse (about 15 s for runs).
          setTimeout(close, 20_000).unref();
        },
        disrupt(what) {
          const span: Disruption = { what, from: Date.now(), to: Number.POSITIVE_INFINITY };
          disruptions.push(span);
          return () => {
            span.to = Date.now();
          };
        },
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        async writable() {
          let probe = 0;
          let last: Outcome | undefined;
          await waitFor(
            async () => {
              probe += 1;
              const core = pick();
              const key = `probe-${probe}-${Date.now()}`;
              last = await post(`${cores[core]!.url}/fleet/mint`, key, { 'idempotency-key': key });
              return last.status === 200;
            },
            { timeoutMs: 90_000, intervalMs: 200, what: 'a once-only request answered again' },
          ).then(() => console.info(`writes answered again after ${probe} probes`)).catch((error: Error) => {
            throw new Error(`${error.message}; last answer ${JSON.stringify(last)}; refusals ${JSON.stringify(Object.fromEntries(refusals))}`);
          });
        },
      };

      const loops = [mintLoop(0), publishLoop(0), publishLoop(1), flowLoop(0)];
      await options.chaos(chaos, topology);
      await chaos.sleep(options.settleMs ?? 3_000);
      stop = true;
      await Promise.all(loops);
      const loadEnded = Date.now();
      for (const span of disruptions) if (!Number.isFinite(span.to)) span.to = loadEnded;
      expect(killed, 'the chaos script killed a core').toBeDefined();
      const survivor = cores[[...alive][0]!]!;
      // A client of the topology as it is now: the one made before may still name a killed node.
      client.disconnect();
      client = topology.client();
      if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));

      // Drain: every acknowledged message run, the queue settled, no run active.
      const effectsOf = async (): Promise<Map<string, Array<{ attempt: number; at: number }>>> => retryPassing(async () => {
        const runs = new Map<string, Array<{ attempt: number; at: number }>>();
        for (const key of await scanKeys(client, `${KV}eff:*`)) {
          const [, invocationId, attempt] = key.slice(KV.length).split(':');
          const at = Number(JSON.parse((await client.get(key)) ?? '{}').at);
          runs.set(invocationId!, [...(runs.get(invocationId!) ?? []), { attempt: Number(attempt), at }]);
        }
        return runs;
      });
      // The cron route settled too: after a killed master its deliveries can wait on once-only claims the killed
      // core left in flight (the pool's acquire and execution time-outs, 15 s each in the fixture), and the slots
      // behind them run late; late counts as fired, never run does not.
      await waitFor(
        async () => {
          const queues = (await adminJson(survivor, '/_uhlp/queues')) as { queues: Array<{ app: string; source: string; name: string; depth: number; oldestAgeMs: number }> };
          const jobs = queues.queues.find((queue) => queue.app === 'fleet' && queue.source === 'queue' && queue.name === 'jobs');
          const tick = queues.queues.find((queue) => queue.app === 'fleet' && queue.source === 'cron' && queue.name === 'tick');
          const active = await client.zcard(`${FLEET_PREFIX}runs:active`);
          return jobs?.depth === 0 && tick !== undefined && tick.oldestAgeMs < 2_000 && active === 0;
        },
        { timeoutMs: 120_000, intervalMs: 500, what: 'the queue and the cron route settled and every run ended' },
      ).catch(async (error: Error) => {
        throw new Error(`${error.message}; left: ${await leftover(client, survivor, started)}`);
      });

      console.info(`${name}: disruptions ${JSON.stringify(disruptions.map((span) => [span.what, span.from - started, span.to - started]))}; refusals ${JSON.stringify(Object.fromEntries(refusals))}`);
      const lines: string[] = [];
      const note = (line: string): void => {
        lines.push(line);
        console.info(`${name}: ${line}`);
      };
      const within = (at: number, slackMs = 0): Disruption | undefined => disruptions.find((span) => at >= span.from - slackMs && at <= span.to + slackMs);

      // Queue: every acknowledged publish ran; more than once only after a disruption, with rising attempts.
      const effects = await effectsOf();
      if (client instanceof Cluster) {
        const masters = client.nodes('master');
        note(`cluster reads: ${masters.length} masters, keys ${JSON.stringify(await retryPassing(() => Promise.all(masters.map((node) => node.dbsize()))))}`);
      }
      const lost = [...acknowledged].filter((id) => !effects.has(id));
      const reruns = [...effects].filter(([, runs]) => runs.length > 1);
      const badAttempts = reruns.filter(([, runs]) => new Set(runs.map((run) => run.attempt)).size !== runs.length);
      // A rerun is what a killed core or a failed acknowledgement leaves: its first run began in a disruption.
      const unexplained = reruns.filter(([, runs]) => !within(Math.min(...runs.map((run) => run.at)), 2_000)).map(([id, runs]) => `${id} ${JSON.stringify(runs)}`);
      const redelivered = [...effects].filter(([, runs]) => Math.max(...runs.map((run) => run.attempt)) > 1);
      note(
        `queue: ${acknowledged.size} acknowledged, ${effects.size} run, ${lost.length} lost, ${reruns.length} run more than once (${unexplained.length} outside a disruption), ${redelivered.length} redelivered (attempt > 1)`,
      );
      for (const id of lost.slice(0, 5)) {
        const once = `{${FLEET_PREFIX}queue:fleet:jobs}:once:${id}`;
        note(`lost ${id}: published at ${((publishedAt.get(id)! - started) / 1000).toFixed(1)} s, its once-only record ${JSON.stringify(await client.hgetall(once).catch((error: Error) => error.message))} (${await client.type(once)})`);
      }
      const dead = ((await adminJson(survivor, '/_uhlp/queues/fleet/jobs/dead')) as { deadLetters: Array<{ invocationId: string; attempts: number; reason: string; error?: string }> }).deadLetters;
      note(`dead letters: ${dead.length} ${JSON.stringify(dead.slice(0, 3).map((letter) => [letter.invocationId, letter.attempts, letter.reason, letter.error]))}`);
      expect(dead, 'dead letters').toEqual([]);
      expect(lost, 'acknowledged messages that never ran').toEqual([]);
      expect(badAttempts, 'a message run twice with the same attempt').toEqual([]);
      expect(unexplained, 'messages run again with nothing failing').toEqual([]);

      // Once-only: one answer per key; one execution per key unless a request for it was cut.
      const executions = countBy(await scanKeys(client, `${KV}mint:*`), (key) => key.slice(KV.length).split(':')[1]!);
      const twoAnswers = [...minted].filter(([, answers]) => new Set(answers.map((answer) => answer.id)).size > 1);
      const twice = [...executions].filter(([key, runs]) => runs.length > 1 && !cutKeys.has(key));
      const answeredRepeats = [...minted].filter(([, answers]) => answers.length === 2).length;
      note(`once-only: ${minted.size} keys answered (${answeredRepeats} answered twice, same answer), ${twoAnswers.length} with two answers, ${twice.length} executed twice, ${cutKeys.size} cut by the killed core`);
      expect(twoAnswers, 'keys answered twice with different answers').toEqual([]);
      expect(twice, 'keys executed twice').toEqual([]);
      for (const [key, answers] of minted) expect(executions.get(key)?.length ?? 0, `executions of ${key}`).toBeGreaterThanOrEqual(answers.length > 0 ? 1 : 0);

      // Cron: no slot fired twice — a slot's runs are one delivery (one invocation id), run again only with a higher
      // attempt after a first run inside a disruption; every slot of the load outside a disruption (and a second
      // either side) fired once.
      const fires = countBy(await scanKeys(client, `${KV}cron:*`), (key) => {
        const rest = key.slice(`${KV}cron:`.length);
        return rest.slice(0, rest.lastIndexOf(':a'));
      });
      const doubled: string[] = [];
      let rerunSlots = 0;
      for (const [slot, keys] of fires) {
        if (keys.length === 1) continue;
        const runs = await retryPassing(() => Promise.all(keys.map(async (key) => JSON.parse((await client.get(key)) ?? '{}') as { invocationId?: string; attempt?: number; at?: number })));
        const oneDelivery = new Set(runs.map((run) => run.invocationId)).size === 1 && new Set(runs.map((run) => run.attempt)).size === runs.length;
        if (oneDelivery && within(Math.min(...runs.map((run) => run.at ?? 0)), 2_000)) rerunSlots++;
        else doubled.push(`${slot} ${JSON.stringify(runs)}`);
      }
      const missing: string[] = [];
      const missingInDisruption: string[] = [];
      for (let slot = Math.ceil((started + 2_000) / 1000) * 1000; slot <= loadEnded - 2_000; slot += 1000) {
        const time = new Date(slot).toISOString();
        if (fires.has(time)) continue;
        if (within(slot, 2_000)) missingInDisruption.push(time);
        else missing.push(time);
      }
      note(`cron: ${fires.size} slots fired, ${doubled.length} twice, ${rerunSlots} run again (one delivery, inside a disruption), ${missingInDisruption.length} skipped during a disruption, ${missing.length} skipped outside one`);
      expect(doubled, 'cron slots fired twice').toEqual([]);
      expect(missing, 'cron slots skipped with nothing failing').toEqual([]);

      // Workflows: every run started completed once, with its result; each input started one run.
      const runIds = (await scanKeys(client, `{${FLEET_PREFIX}runs:active}:run:*`)).map((key) => key.slice(key.lastIndexOf(':run:') + 5));
      const records = await Promise.all(runIds.map(async (id) => (await fetch(`${survivor.url}/_uhlp/runs/${id}`)).json() as Promise<any>));
      const byInput = countBy(records, (record) => String(record.blackboard?.input?.id ?? record.id));
      const notCompleted = records.filter((record) => record.status !== 'completed').map((record) => `${record.id} ${record.status} ${JSON.stringify(record.error ?? {})}`);
      for (const record of records.filter((record) => record.status !== 'completed')) note(`not completed: ${await unsettledRun(client, cores, record.id, started)}`);
      const answered = [...flows].filter(([, flow]) => flow.outcome.status === 200);
      for (const [id, flow] of answered) {
        expect(flow.outcome.json, `the answer of ${id}`).toEqual({ id, one: { node: 'one' }, two: { node: 'two' }, three: { node: 'three' } });
        expect(runIds, `the run of ${id}`).toContain(flow.outcome.runId);
      }
      const doubledRuns = [...byInput].filter(([, runs]) => runs.length > 1);
      const steps = countBy(await scanKeys(client, `${KV}step:*`), (key) => key.slice(KV.length).split(':').slice(1, 3).join(':'));
      const stepReruns = [...steps].filter(([, keys]) => keys.length > 1).length;
      const resumed = records.filter((record) => record.status === 'completed' && flows.get(record.blackboard?.input?.id)?.outcome.status !== 200).length;
      note(`workflows: ${flows.size} started, ${answered.length} answered, ${records.length} runs, ${notCompleted.length} not completed, ${resumed} completed without their client (resumed or answered to a cut request), ${doubledRuns.length} inputs with two runs, ${stepReruns} steps run twice`);
      expect(notCompleted, 'runs that did not complete').toEqual([]);
      expect(doubledRuns.map(([id]) => id), 'inputs with two runs').toEqual([]);
      for (const record of records) for (const node of ['one', 'two', 'three']) expect(steps.get(`${record.blackboard?.input?.id}:${node}`)?.length ?? 0, `${record.id} ${node}`).toBeGreaterThanOrEqual(1);

      note(`refused or cut: ${JSON.stringify(Object.fromEntries(refusals))}`);
      note(`disruptions: ${disruptions.map((span) => `${span.what} ${((span.from - started) / 1000).toFixed(1)}–${((span.to - started) / 1000).toFixed(1)} s`).join('; ')}`);
      console.info(`${name}\n  ${lines.join('\n  ')}`);
      expect(unexpected, 'refusals with a code that is not retryable').toEqual([]);
    }, 240_000);
  });
}
