/**
 * Turns an optimized LLM component's answers into samples: the inputs its
 * templates read (named by the orchestrator, valued from the core's own copy
 * of the request's variables: oracle-sample.ts), the output checked once more
 * against the output schema by the core, and the tokens the answer took (0
 * when it came from the answer cache: such a repeat says nothing about
 * stability). The sample goes to the component's reservoir for its llm
 * revision (bounded, in the runtime store); what became of it is counted.
 *
 * It also reads and keeps each component's llm definition per app revision
 * (its files, schema and revision hash), and the rate of sampled answers per
 * component on this core, which tells the oracle when a component is hot.
 */
import path from 'node:path';
import { readFile } from 'node:fs/promises';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { ExecuteResponse } from '../contract/execute-contract.js';
import type { ComponentSpec, OptimizeSpec } from '../apps/schema/app-definition-schema.js';
import { compileOutputSchema } from '../contract/output-schema.js';
import { linearRegExpEngine } from '../shared/linear-regexp.js';
import { appRevisionDir } from '../apps/revision-paths.js';
import { buildExecuteContext } from '../execution/execute-context.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { OracleSampleStats, OracleStore } from '../state/oracle-store.js';
import { readLlmDefinition, type LlmDefinition } from './llm-definition.js';
import { makeSample, projectInputs, readInputPaths, requestVariables } from './oracle-sample.js';

/** How long a revision's samples outlive its last one (a revision no longer served ages out). */
const SAMPLES_TTL_MS = 7 * 86_400_000;
/** The window the sampling rate is measured over. */
const RATE_WINDOW_MS = 60_000;

/** A component's llm definition at one app revision, with its output schema compiled. */
export interface ComponentDefinition extends LlmDefinition {
  readonly validate: ValidateFunction | undefined;
}

/** The turn a sampled answer belongs to. */
export interface SampledTurn {
  readonly app: LoadedApp;
  /** The component as its LLM answered (the llm view of a promoted component). */
  readonly component: ComponentSpec;
  readonly optimize: OptimizeSpec;
  readonly requestDataJson: string;
  readonly sessionId: string;
  readonly turnNumber: number;
}

export class SampleRecorder {
  private readonly definitions = new Map<string, Promise<ComponentDefinition>>();
  /** Times of the sampled answers of the last minute, per component. */
  private readonly recent = new Map<string, number[]>();

  constructor(
    private readonly deps: {
      readonly store: OracleStore;
      readonly metrics: Metrics;
      readonly logger: Logger;
      /** `<dataDir>/app-revisions`: the files of each app at each revision. */
      readonly revisionsRoot: string;
    },
  ) {}

  /** The component's llm definition at the app's revision, read once per revision. */
  definition(app: LoadedApp, component: ComponentSpec): Promise<ComponentDefinition> {
    const key = `${app.id}\0${app.revision}\0${component.id}`;
    let found = this.definitions.get(key);
    if (found === undefined) {
      const dir = appRevisionDir(this.deps.revisionsRoot, app.id, app.revision);
      found = readLlmDefinition(component.llm!, (file) => readAppFile(dir, file)).then((definition) => ({
        ...definition,
        validate: definition.schema !== undefined ? compileOutputSchema(definition.schema, linearRegExpEngine).validate : undefined,
      }));
      found.catch(() => this.definitions.delete(key));
      this.definitions.set(key, found);
      // One revision per app is served at a time; older ones go.
      for (const old of this.definitions.keys()) {
        if (this.definitions.size <= 256) break;
        this.definitions.delete(old);
      }
    }
    return found;
  }

  /** Sampled answers of the component on this core over the last minute. */
  ratePerMinute(appId: string, componentId: string): number {
    const times = this.recent.get(`${appId}\0${componentId}`);
    if (times === undefined) return 0;
    const since = Date.now() - RATE_WINDOW_MS;
    while (times.length > 0 && times[0]! < since) times.shift();
    return times.length;
  }

  /** Records one answer of the LLM; never throws (a sample lost costs nothing but a sample). */
  async observe(turn: SampledTurn, response: ExecuteResponse): Promise<OracleSampleStats | undefined> {
    const { app, component } = turn;
    const count = (outcome: string): void => this.deps.metrics.oracleSamples.inc({ app: app.id, component: component.id, outcome });
    try {
      if (response.resultType !== 'generic') return undefined;
      const paths = readInputPaths(response.metrics?.template_inputs);
      if ('problem' in paths) {
        count(response.metrics?.template_inputs === undefined ? 'no-inputs' : 'bad-inputs');
        return undefined;
      }
      const definition = await this.definition(app, component);
      if (definition.validate !== undefined && !definition.validate(response.data)) {
        count('invalid-output');
        return undefined;
      }
      const context = buildExecuteContext(app, component, { mcpEndpoint: '', timeoutMs: 1, sessionId: turn.sessionId, turnNumber: turn.turnNumber });
      const variables = requestVariables({ requestId: 'sample', requestData: JSON.parse(turn.requestDataJson), context });
      const tokens = (response.metrics?.mcp_calls ?? [])
        .filter((call) => call.tool === 'core.llm.generate')
        .reduce((sum, call) => sum + (call.token_usage?.prompt ?? 0) + (call.token_usage?.completion ?? 0), 0);
      const sample = makeSample(projectInputs(variables, paths), response.data, tokens, new Date());
      if ('problem' in sample) {
        count('too-large');
        return undefined;
      }
      const key = `${app.id}\0${component.id}`;
      const times = this.recent.get(key) ?? [];
      times.push(Date.now());
      if (times.length > 100_000) times.shift();
      this.recent.set(key, times);
      const { outcome, stats } = await this.deps.store.addOracleSample(
        { appId: app.id, componentId: component.id, revision: definition.revision },
        { inputHash: sample.inputHash, outputHash: sample.outputHash, json: JSON.stringify(sample), fresh: tokens > 0 },
        { limit: turn.optimize.maxSamples, ttlMs: SAMPLES_TTL_MS, pick: Math.floor(Math.random() * 0x7fff_ffff) },
      );
      count(outcome);
      await this.deps.store.incrOracleCounters(app.id, component.id, { samples: 1 });
      return stats;
    } catch (error) {
      count('error');
      this.deps.logger.warn({ err: error, app: app.id, component: component.id }, 'oracle sample not recorded');
      return undefined;
    }
  }
}

/** A file of the app at a materialized revision; undefined when it is not there or leaves the app. */
async function readAppFile(appDir: string, file: string): Promise<string | undefined> {
  const absolute = path.resolve(appDir, file);
  if (!absolute.startsWith(appDir + path.sep)) return undefined;
  return readFile(absolute, 'utf8').catch(() => undefined);
}
