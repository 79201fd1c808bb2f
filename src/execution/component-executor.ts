/**
 * Runs one component execution in a sandbox: lease from the pool, POST /execute,
 * check the answer against the contract, release (or destroy) the sandbox. Every
 * sandbox failure becomes a UhlpError with the status the issue asks for:
 * 502 broken, oversized answer or dead sandbox, 503 no sandbox, 504 past timeoutMs.
 */
import { validateExecuteResponse, type ExecuteResponse } from '../contract/execute-contract.js';
import { UhlpError } from '../shared/errors.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { SandboxTransportError } from '../sandbox/sandbox-client.js';
import type { SandboxManager } from '../sandbox/sandbox-manager.js';
import type { Lease, PoolStrategy, ReleaseOutcome } from '../sandbox/pool-strategy.js';
import type { ScriptRef } from '../sandbox/script-push.js';
import type { TurnEvidence } from '../ledger/turn-evidence.js';
import { surfaceMatches, TurnWriteSurface, type DeclaredOutput, type SurfaceCheck } from './write-surface.js';
import { askForWrites, checkReportedWrites } from './reported-writes.js';
import { activeTraceIds } from '../tracing/spans.js';
import { recordClaim } from '../tracing/claim-span.js';
import { observeWithTrace } from '../tracing/exemplars.js';
import { tracingActive } from '../tracing/tracing-active.js';
import { recordRunnerTimings } from '../tracing/runner-spans.js';

export interface ExecutionTarget {
  readonly appId: string;
  readonly poolName: string;
  readonly timeoutMs: number;
  /** The JIT script the execution runs; sent along to sandboxes that would read it through MCP (the pool's prepareRequest). */
  readonly script?: ScriptRef;
  /** Cuts the execution when it aborts (a cancelled workflow run): the connection is closed and the sandbox destroyed. @defaultValue none */
  readonly signal?: AbortSignal;
}

/** A valid answer of the sandbox, and its JSON text as it came. */
export interface ExecuteOutcome {
  readonly response: ExecuteResponse;
  readonly text: string;
}

/** The turn an execution is, for its write surface (write-surface.ts). */
export interface TurnWrites {
  readonly sessionId: string;
  /** What the turn declares it writes: the component's declaredOutputs and the request's. */
  readonly declared: readonly DeclaredOutput[];
  /** Where the declared outputs of a matching turn are kept (`<dataDir>/output`); undefined: not kept (ambient sessions). */
  readonly outputsRoot: string | undefined;
  /** Receives the realized writes and any mismatch. */
  readonly evidence: TurnEvidence;
}

/** Where one execution's time went, as the core saw it (logTiming). */
interface ExecutionTiming {
  readonly sandbox: string;
  /** Which use of the sandbox the execution was (1: its first). */
  readonly use: number;
  readonly acquireMs: number;
  readonly roundTripMs: number;
}

export class ComponentExecutor {
  constructor(
    private readonly sandboxes: Pick<SandboxManager, 'pool'>,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
  ) {}

  /** Runs the /execute request `body` (JSON of an ExecuteRequest whose requestId is `requestId`). */
  async execute(target: ExecutionTarget, requestId: string, body: string, traceId?: string, turn?: TurnWrites): Promise<ExecuteOutcome> {
    const pool = this.sandboxes.pool(target.appId, target.poolName);
    if (!pool) throw new UhlpError('UHLP_SANDBOX_UNAVAILABLE', `pool ${target.appId}/${target.poolName} is not running`);
    // A sandbox that died while idle refuses the connection before it saw the
    // request; that one attempt is retried on a fresh sandbox. A request that may
    // have reached the script is never sent twice.
    for (let attempt = 1; ; attempt++) {
      const acquiring = performance.now();
      const lease = this.hit(pool, target) ?? (await this.acquire(pool, target));
      const acquired = performance.now();
      const acquireMs = acquired - acquiring;
      if (tracingActive()) recordClaim(target.poolName, lease.hit === true, attempt, acquiring, acquired);
      try {
        return await this.call(pool, lease, target, requestId, body, traceId, turn, acquireMs);
      } catch (error) {
        if (attempt === 1 && error instanceof SandboxTransportError && error.failure === 'connect') continue;
        throw toUhlpError(error, target);
      }
    }
  }

  /** A sandbox with room at once, without a promise: most requests on a warm pool. */
  private hit(pool: PoolStrategy, target: ExecutionTarget): Lease | undefined {
    const started = performance.now();
    const lease = pool.tryAcquire();
    if (lease) this.metrics.sandboxAcquireSeconds.labels(target.appId, target.poolName, 'hit').observe((performance.now() - started) / 1000);
    return lease;
  }

  private async acquire(pool: PoolStrategy, target: ExecutionTarget): Promise<Lease> {
    const started = performance.now();
    try {
      const lease = await pool.acquire();
      this.metrics.sandboxAcquireSeconds
        .labels(target.appId, target.poolName, lease.hit ? 'hit' : 'miss')
        .observe((performance.now() - started) / 1000);
      return lease;
    } catch (error) {
      this.metrics.sandboxAcquireSeconds.labels(target.appId, target.poolName, 'error').observe((performance.now() - started) / 1000);
      throw error;
    }
  }

  /**
   * Where an execution's time went, at debug level: waiting for a sandbox (a claim, on
   * the pod driver), the round trip to it, and of that the runner's own time, its first
   * load of the script and its MCP calls. The rest of the round trip is the connection
   * and the transfer.
   */
  private logTiming(target: ExecutionTarget, requestId: string, timing: ExecutionTiming, response: ExecuteResponse): void {
    const mcpMs = (response.metrics?.mcp_calls ?? []).reduce((sum, call) => sum + call.total_duration_ms, 0);
    const ms = (value: number): number => Math.round(value * 100) / 100;
    this.logger.debug(
      {
        app: target.appId,
        pool: target.poolName,
        sandbox: timing.sandbox,
        requestId,
        use: timing.use,
        acquireMs: ms(timing.acquireMs),
        roundTripMs: ms(timing.roundTripMs),
        runnerMs: ms(response.metrics?.execution_time_ms ?? 0),
        // The runner's first load of the script (kept, then imported), when this execution did it.
        ...(response.metrics?.script_load_ms !== undefined ? { scriptLoadMs: ms(response.metrics.script_load_ms) } : {}),
        mcpMs: ms(mcpMs),
        mcpCalls: response.metrics?.mcp_calls?.map((call) => call.tool),
      },
      'execution timing',
    );
  }

  private async call(
    pool: PoolStrategy,
    lease: Lease,
    target: ExecutionTarget,
    requestId: string,
    body: string,
    traceId: string | undefined,
    turn: TurnWrites | undefined,
    acquireMs: number,
  ): Promise<ExecuteOutcome> {
    const started = performance.now();
    let outcome: ReleaseOutcome = 'ok';
    let metricOutcome = 'ok';
    const tree = lease.sandbox.handle.workTree;
    const surface = turn !== undefined && tree !== undefined ? TurnWriteSurface.begin(tree, turn.sessionId) : undefined;
    // A turn on a sandbox whose tree the core cannot see (a pod): its runner walks the tree and reports (reported-writes.ts).
    const reported = turn !== undefined && tree === undefined;
    try {
      // What this pool's sandboxes need with the request (a script they cannot read yet); no promise when nothing.
      const prepared = pool.prepareRequest(lease, reported ? askForWrites(body) : body, target.script);
      const sent = typeof prepared === 'string' ? prepared : await prepared;
      const sentAt = performance.now();
      // A traced execution names its trace to the runner, which then sends back what it timed.
      const raw = await lease.sandbox.client.execute(sent, requestId, target.timeoutMs, traceId ?? (tracingActive() ? activeTraceIds()?.trace_id : undefined), target.signal);
      if (raw.status !== 200) {
        // The runner refused or failed the request itself (contract 400/429/500/503).
        metricOutcome = 'error';
        if (raw.status >= 500) outcome = 'bad-response';
        throw new UhlpError('UHLP_SANDBOX_ERROR', `the sandbox answered HTTP ${raw.status}`, {
          sandboxStatus: raw.status,
          sandboxError: safeRunnerError(raw.body),
        });
      }
      const text = raw.body.toString('utf8');
      const parsed = parseResponse(text, requestId);
      if ('violation' in parsed) {
        outcome = 'bad-response';
        metricOutcome = 'bad-response';
        throw new UhlpError('UHLP_SANDBOX_BAD_RESPONSE', `the sandbox answer breaks the /execute contract: ${parsed.violation}`);
      }
      if (tracingActive()) recordRunnerTimings(parsed.response.metrics?.timings, sentAt, performance.now());
      // Before the sandbox is released: no other turn writes in its tree while it is walked.
      if (surface !== undefined) {
        // No promise (and no wait) for a turn that wrote nothing: most turns.
        const settled = settleWrites(surface, turn!, parsed.response.resultType === 'error');
        if (settled !== undefined) await settled;
      } else if (reported) {
        // Set before the check can throw: a pod that wrote what it did not declare, or did not report, is deleted.
        outcome = 'recycled';
        const { check, recycle } = checkReportedWrites(parsed.response, turn!.declared);
        if (!recycle) outcome = 'ok';
        judgeWrites(turn!, parsed.response.resultType === 'error', check);
      }
      if (this.logger.isLevelEnabled('debug')) {
        const timing = { sandbox: lease.sandbox.handle.id, use: lease.sandbox.uses + 1, acquireMs, roundTripMs: performance.now() - started };
        // Logged once the answer is on its way: writing a log line (to a pipe, a terminal) is never in the request's time.
        setImmediate(() => this.logTiming(target, requestId, timing, parsed.response));
      }
      return { response: parsed.response, text };
    } catch (error) {
      if (error instanceof SandboxTransportError) {
        // Whatever sent an answer the core refused (malformed, or past the size limit) is not reused.
        const refused = error.failure === 'bad-response' || error.failure === 'too-large';
        outcome = error.failure === 'timeout' ? 'timeout' : refused ? 'bad-response' : 'crash';
        metricOutcome = error.failure === 'timeout' ? 'timeout' : refused ? 'bad-response' : 'died';
        if (error.failure !== 'connect') {
          this.logger.warn({ app: target.appId, pool: target.poolName, sandbox: lease.sandbox.handle.id, requestId, failure: error.failure }, error.message);
        }
      }
      throw error;
    } finally {
      // A sandbox about to be destroyed takes its tree with it; one kept is emptied for the next turn.
      if (surface !== undefined && outcome === 'ok') {
        const discarded = surface.discard();
        if (discarded !== undefined) await discarded;
      }
      pool.release(lease, outcome);
      observeWithTrace(this.metrics.sandboxExecuteSeconds.labels(target.appId, target.poolName, metricOutcome), (performance.now() - started) / 1000);
    }
  }
}

/**
 * Walks what the turn wrote into its evidence; publishes the declared outputs of
 * a matching turn, and refuses a mismatch (UHLP_WRITE_SURFACE_MISMATCH) with
 * nothing published. A turn that failed (resultType error) publishes nothing
 * either, and its writes are only recorded.
 */
function settleWrites(surface: TurnWriteSurface, turn: TurnWrites, failed: boolean): void | Promise<void> {
  const check = surface.check(turn.declared);
  return check instanceof Promise ? check.then((checked) => settleChecked(surface, turn, failed, checked)) : settleChecked(surface, turn, failed, check);
}

function settleChecked(surface: TurnWriteSurface, turn: TurnWrites, failed: boolean, check: SurfaceCheck): void | Promise<void> {
  if (judgeWrites(turn, failed, check)) return surface.publish(check, turn.outputsRoot).then(() => undefined);
}

/**
 * Records a turn's writes in its evidence, and refuses a mismatch of a turn that
 * did not fail. Answers whether there are declared outputs to publish.
 */
function judgeWrites(turn: TurnWrites, failed: boolean, check: SurfaceCheck): boolean {
  if (check.realized.length > 0) turn.evidence.realizedWrites.push(...check.realized);
  if (failed) return false;
  if (surfaceMatches(check)) return check.realized.length > 0;
  const timestamp = new Date().toISOString();
  for (const written of check.undeclared) {
    turn.evidence.capabilityViolations.push({ operation: `write ${written}`, capability: 'declared_outputs', detail: 'written but not declared', timestamp });
  }
  for (const declared of check.missing) {
    turn.evidence.capabilityViolations.push({ operation: `write ${declared}`, capability: 'declared_outputs', detail: 'declared but not written', timestamp });
  }
  throw new UhlpError(
    'UHLP_WRITE_SURFACE_MISMATCH',
    `the turn's writes do not match its declared outputs (${check.undeclared.length} undeclared, ${check.missing.length} missing); nothing was published`,
    { undeclared: check.undeclared.slice(0, 50), missing: check.missing.slice(0, 50) },
  );
}

function parseResponse(text: string, requestId: string): { response: ExecuteResponse } | { violation: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { violation: 'the body is not JSON' };
  }
  const violation = validateExecuteResponse(value);
  if (violation) return { violation: `${violation.path}: ${violation.message}` };
  const response = value as ExecuteResponse;
  if (response.requestId !== requestId) return { violation: `requestId "${response.requestId}" is not "${requestId}"` };
  return { response };
}

/** The runner's own error text, bounded, for the client's `details`. */
function safeRunnerError(raw: Buffer): string | undefined {
  try {
    const parsed = JSON.parse(raw.toString('utf8')) as { error?: unknown; details?: unknown };
    const text = [parsed.error, parsed.details].filter((v) => typeof v === 'string').join(': ');
    return text.slice(0, 500) || undefined;
  } catch {
    return undefined;
  }
}

function toUhlpError(error: unknown, target: ExecutionTarget): UhlpError {
  if (error instanceof UhlpError) return error;
  if (error instanceof SandboxTransportError) {
    if (error.failure === 'timeout') {
      return new UhlpError('UHLP_SANDBOX_TIMEOUT', `the component ran past its timeout of ${target.timeoutMs} ms; the sandbox was destroyed`, {
        timeoutMs: target.timeoutMs,
      });
    }
    if (error.failure === 'too-large') {
      return new UhlpError(
        'UHLP_SANDBOX_RESPONSE_TOO_LARGE',
        `the sandbox answer is over the limit of ${String(error.details?.['limitBytes'])} bytes (UHLP_MAX_SANDBOX_RESPONSE_BYTES); the sandbox was destroyed`,
        error.details,
      );
    }
    if (error.failure === 'bad-response') {
      return new UhlpError('UHLP_SANDBOX_BAD_RESPONSE', 'the sandbox answer is not HTTP/1.1 as the core reads it; the sandbox was destroyed');
    }
    return new UhlpError('UHLP_SANDBOX_DIED', `the sandbox died or dropped the connection (${error.failure})`);
  }
  return new UhlpError('UHLP_INTERNAL', 'unexpected failure while executing the component', undefined, { cause: error });
}
