/**
 * The oracle's scan loop (docs/oracle.md, step 2): on an interval, each
 * optimized LLM component is looked at. A new llm definition starts its
 * sampling from nothing; a component that is hot (sampled answers per
 * minute), has enough distinct samples and is stable (inputs seen again
 * answered the same) is claimed for generation by one core at a time (a
 * runtime-store lease) and handed to the candidate flow; a generation whose
 * core is gone goes back to sampling.
 */
import type { ComponentSpec, OptimizeSpec } from '../apps/schema/app-definition-schema.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import { activeOptimize } from '../contract/llm-component-schema.js';
import type { Logger } from '../logger.js';
import type { OracleSampleStats } from '../state/oracle-store.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import { GENERATION_LEASE_MS, generationLease, type CandidateFlow } from './candidate-flow.js';
import type { ComponentWork } from './component-work.js';
import { enterStage, newRecord, type OracleRecord } from './oracle-record.js';
import type { OracleRecords } from './oracle-records.js';
import { parseSample, type OracleSample } from './oracle-sample.js';
import type { SampleRecorder } from './sample-recorder.js';
import { MIN_HELD_BACK, splitSamples } from './sample-split.js';
import { isStable } from './stage-rules.js';

export interface OracleScanDeps {
  readonly registry: ApplicationRegistry;
  /** The oracle's state, and the generation lease that lets one core at a time make a candidate. */
  readonly store: Pick<RuntimeStore, 'oracle' | 'leases'>;
  readonly records: OracleRecords;
  readonly recorder: SampleRecorder;
  readonly flow: CandidateFlow;
  readonly work: ComponentWork;
  readonly logger: Logger;
  /** Time between scans, ms. */
  readonly intervalMs: number;
  /** Holder of the generation leases: this core. */
  readonly owner: string;
}

export class OracleScan {
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;

  constructor(private readonly deps: OracleScanDeps) {}

  /** Scans every interval until the oracle's work is closed. */
  start(): void {
    const tick = (): void => {
      this.scanning = this.scan()
        .catch((error: unknown) => this.deps.logger.warn({ err: error }, 'oracle scan failed'))
        .finally(() => {
          this.scanning = undefined;
          if (!this.deps.work.closed) this.timer = setTimeout(tick, this.deps.intervalMs).unref();
        });
    };
    this.timer = setTimeout(tick, this.deps.intervalMs).unref();
  }

  /** Resolves once no scan runs and none is due (the oracle's work is closed first). */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    await this.scanning;
  }

  /** One pass over the optimized components: new revisions start sampling, hot and stable ones get code. */
  async scan(): Promise<void> {
    for (const app of this.deps.registry.snapshot.apps.values()) {
      for (const component of app.components.values()) {
        if (this.deps.work.closed) return;
        const optimize = activeOptimize(component.llm);
        if (component.handler !== 'LLM' || optimize === undefined) continue;
        await this.scanComponent(app, component, optimize).catch((error: unknown) =>
          this.deps.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle scan of a component failed'),
        );
      }
    }
  }

  private async scanComponent(app: LoadedApp, component: ComponentSpec, optimize: OptimizeSpec): Promise<void> {
    const { store, records, recorder, work, owner } = this.deps;
    const definition = await recorder.definition(app, component);
    const { record } = await records.read(app.id, component.id);
    if (record === undefined || record.revision !== definition.revision) {
      // A new llm definition (or the first look): its samples start from nothing.
      const counters = await store.oracle.getOracleCounters(app.id, component.id);
      await records.update(app.id, component.id, (current) =>
        current === undefined || current.revision !== definition.revision ? newRecord(definition.revision, counters, new Date()) : undefined,
      );
      return;
    }
    if (record.stage === 'generating') return this.recoverGeneration(app, component, record);
    if (record.stage !== 'sampling' || work.has(app.id, component.id)) return;
    const scope = { appId: app.id, componentId: component.id, revision: definition.revision };
    const { samples, stats } = await store.oracle.getOracleSamples(scope);
    if (!this.ready(app, component, optimize, stats)) return;
    const parsed = samples.map(parseSample).filter((sample): sample is OracleSample => sample !== undefined);
    // The split is by input hash: with too few inputs on the held-back side no candidate could be judged, and
    // generation would end at once, back to sampling, on every scan. Sampling goes on, with no decision, until there are.
    if (splitSamples(parsed, optimize.holdout).heldBack.length < MIN_HELD_BACK) return;
    const lease = await store.leases.acquireLease(generationLease(app.id, component.id), owner, GENERATION_LEASE_MS);
    if (lease === undefined) return;
    const counters = await store.oracle.getOracleCounters(app.id, component.id);
    const claimed = await records.update(app.id, component.id, (current) =>
      current?.stage === 'sampling' && current.revision === definition.revision ? enterStage(current, 'generating', counters, new Date()) : undefined,
    );
    if (claimed === undefined) {
      await store.leases.releaseLease(generationLease(app.id, component.id), owner);
      return;
    }
    work.track(app.id, component.id, this.deps.flow.generate(app, component, optimize, claimed, parsed, stats));
  }

  /** Hot, enough samples, stable. */
  private ready(app: LoadedApp, component: ComponentSpec, optimize: OptimizeSpec, stats: OracleSampleStats): boolean {
    return (
      stats.stored >= optimize.minSamples &&
      this.deps.recorder.ratePerMinute(app.id, component.id) >= optimize.minRequestsPerMinute &&
      isStable(stats, optimize)
    );
  }

  /** A generation whose core is gone (its lease expired) goes back to sampling. */
  private async recoverGeneration(app: LoadedApp, component: ComponentSpec, record: OracleRecord): Promise<void> {
    const { store, records, work } = this.deps;
    if (work.has(app.id, component.id)) return;
    if ((await store.leases.getLease(generationLease(app.id, component.id))) !== undefined) return;
    const counters = await store.oracle.getOracleCounters(app.id, component.id);
    await records.update(app.id, component.id, (current) =>
      current?.stage === 'generating' && current.stageSince === record.stageSince ? enterStage(current, 'sampling', counters, new Date(), 'the core generating code stopped; sampling again') : undefined,
    );
  }
}
