/**
 * A component's turn below the pipeline's limit and once-only stages, as a
 * seam: the base (turn-stages.ts) is session -> execution -> ledger -> answer;
 * a decorator wraps it for the components whose turn is more than one
 * execution or needs something settled before the turn begins (a WORKFLOW
 * component's turn is a run of one turn per execution, workflow-runs/workflow-run-turns.ts;
 * a cs component's runs the bundle its ref names now, functions/cs-bundle-turns.ts).
 * Decorators are chosen per component when its app loads (component-turns.ts).
 */
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import type { FinalResponse } from '../execution/result-interpreter.js';
import type { TurnEvent } from './turn-event.js';

/**
 * What the pipeline says about the turn beside its answer, as answer headers:
 * the session and turn (stored sessions only), Retry-After, a replay, a run.
 * The HTTP source sends them; other sources read what they need.
 */
export type TurnNotes = Record<string, string>;

export interface TurnRunner {
  /** Runs the event's turn; rejects with the UhlpError its caller answers (session, sandbox failures). */
  run(event: TurnEvent, notes: TurnNotes): Promise<FinalResponse>;
}

/** Wraps the turn of one component of a loaded app, or answers it as it is (most components). */
export interface TurnDecorator {
  decorate(app: LoadedApp, component: ComponentSpec, inner: TurnRunner): TurnRunner;
}
