/**
 * The OptimizationOracle (docs/oracle.md): watches the LLM components that opt
 * in (`llm.optimize.mode: suggest | auto`) and, when it is safe, replaces one
 * with generated JIT code that gives the same answers without tokens.
 *
 * 1. Samples: every answer of an optimized component becomes an (inputs,
 *    output) sample in a bounded reservoir per component and llm revision
 *    (oracle-executions.ts, sample-recorder.ts).
 * 2. A scan on an interval finds components that are hot (sampled answers per
 *    minute), have enough distinct samples, and are stable (inputs seen again
 *    answered the same) (oracle-scan.ts). One core at a time (a runtime-store
 *    lease) then asks the code-generation model for candidates and judges them
 *    on held-back samples in a JIT sandbox of the app (candidate-flow.ts,
 *    code-generator.ts).
 * 3. A passing candidate is committed (git-promotion.ts): to the served branch
 *    (auto: the component enters shadow once hot reload serves it) or to a
 *    branch of its own (suggest: nothing served changes).
 * 4. Live comparisons (live-comparisons.ts) move a promoted component through
 *    shadow, canary and full, or roll it back with a revert commit
 *    (stage-rules.ts, stage-transitions.ts).
 *
 * Every decision is logged and written to the app's ledger (oracle-decisions.ts);
 * `uhlp optimize` reads the status (oracle-status.ts) and sends the operator's
 * commands (oracle-commands.ts). This class wires those parts.
 */
import type { OracleConfig } from '../config.js';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import { ComponentExecutor } from '../execution/component-executor.js';
import type { LlmProvider } from '../llm/llm-provider.js';
import type { Logger } from '../logger.js';
import type { McpExecutions } from '../mcp/mcp-executions.js';
import type { Metrics } from '../metrics.js';
import type { SandboxManager } from '../sandbox/sandbox-manager.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import type { TurnKeeper } from '../turns/turn-keeper.js';
import { CandidateFlow } from './candidate-flow.js';
import { ComponentWork } from './component-work.js';
import type { PromotionWriter } from './git-promotion.js';
import { LiveComparisons } from './live-comparisons.js';
import { OracleCommands, type OracleCommand } from './oracle-commands.js';
import { OracleDecisions } from './oracle-decisions.js';
import { OracleExecutions } from './oracle-executions.js';
import { OracleRecords } from './oracle-records.js';
import { OracleScan } from './oracle-scan.js';
import { OracleStatus, type ComponentStatus } from './oracle-status.js';
import { SampleRecorder } from './sample-recorder.js';
import { StageTransitions } from './stage-transitions.js';

export interface OptimizationOracleOptions {
  readonly config: OracleConfig;
  readonly registry: ApplicationRegistry;
  /** The oracle's state, and the leases that let one core at a time generate code for a component. */
  readonly store: Pick<RuntimeStore, 'oracle' | 'leases'>;
  readonly sandboxes: SandboxManager;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** The provider code generation calls (the core's, behind core.llm.generate too). */
  readonly provider: LlmProvider;
  /** `<dataDir>/app-revisions`. */
  readonly revisionsRoot: string;
  /** Tokens for the candidates' MCP calls. @defaultValue none: candidates get no tools */
  readonly mcp?: McpExecutions;
  mcpEndpoint(): string;
  /** Where promotions are committed; undefined when apps come from Kubernetes (promotions are refused). */
  readonly promotions?: PromotionWriter;
  /** The ledger's turns, for decisions. @defaultValue none: decisions are logged only */
  readonly turns?: TurnKeeper;
  /** Owner name of the generation lease. @defaultValue a random id */
  readonly instanceId?: string;
}

export class OptimizationOracle {
  /** Its part in turns: decorators of the execution stage of optimized and promoted components. */
  readonly executions: OracleExecutions;
  private readonly work = new ComponentWork();
  private readonly comparisons: LiveComparisons;
  private readonly scanner: OracleScan;
  private readonly statuses: OracleStatus;
  private readonly commands: OracleCommands;

  constructor(options: OptimizationOracleOptions) {
    const { store, metrics, logger, registry } = options;
    const records = new OracleRecords(store.oracle, metrics, logger);
    const recorder = new SampleRecorder({ store: store.oracle, metrics, logger, revisionsRoot: options.revisionsRoot });
    const decisions = new OracleDecisions(logger, options.turns);
    const owner = options.instanceId ?? `oracle-${Math.random().toString(36).slice(2)}`;
    const promotions = options.promotions !== undefined ? { promotions: options.promotions } : {};
    const transitions = new StageTransitions({ store: store.oracle, records, recorder, decisions, work: this.work, logger, ...promotions });
    const flow = new CandidateFlow({
      config: options.config,
      store,
      records,
      recorder,
      decisions,
      metrics,
      logger,
      provider: options.provider,
      executor: new ComponentExecutor(options.sandboxes, metrics, logger),
      ...(options.mcp !== undefined ? { mcp: options.mcp } : {}),
      mcpEndpoint: options.mcpEndpoint,
      ...promotions,
      owner,
    });
    this.comparisons = new LiveComparisons({
      records,
      recorder,
      store: store.oracle,
      metrics,
      logger,
      maxComparisons: options.config.maxComparisons,
      onVerdict: (app, component, stage, verdict) => transitions.onVerdict(app, component, stage, verdict),
    });
    this.executions = new OracleExecutions({ records, recorder, comparisons: this.comparisons, onUnknownPromotion: (app, component) => transitions.adopt(app, component) });
    this.scanner = new OracleScan({ registry, store, records, recorder, flow, work: this.work, logger, intervalMs: options.config.intervalMs, owner });
    this.statuses = new OracleStatus({ registry, store: store.oracle, records, recorder });
    this.commands = new OracleCommands({ registry, store: store.oracle, records, decisions, transitions, flow, status: this.statuses });
  }

  /** Starts the scans. */
  start(): void {
    this.scanner.start();
  }

  /** Stops scanning and waits for the work under way (generations, comparisons) to end. */
  async close(): Promise<void> {
    this.work.close();
    await this.scanner.stop();
    await this.work.settled();
    await this.comparisons.drain();
  }

  /** One pass over the optimized components: new revisions start sampling, hot and stable ones get code. */
  scan(): Promise<void> {
    return this.scanner.scan();
  }

  /** The status of every watched component, or of one app or component. */
  status(appId?: string, componentId?: string): Promise<ComponentStatus[]> {
    return this.statuses.of(appId, componentId);
  }

  /** An operator's command on a component; answers its status after it. */
  command(command: OracleCommand, appId: string, componentId: string): Promise<ComponentStatus> {
    return this.commands.run(command, appId, componentId);
  }
}
