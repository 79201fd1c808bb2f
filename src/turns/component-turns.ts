/**
 * Chooses, once per component of a loaded app, what its turn is: the turn's
 * stages around the component's execution stage, each wrapped by the
 * decorators that take the component (a workflow run, a cs bundle, the
 * oracle's plan; turn-runner.ts, execution/execution-stage.ts). Apps are
 * composed when a snapshot loads them; an app the pipeline meets otherwise (a
 * workflow run's pinned revision) is composed at its first turn. Nothing is
 * decided per request here, and the pipeline knows no special component.
 */
import type { AppSnapshot, LoadedApp } from '../apps/app-snapshot.js';
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import type { ExecutionDecorator, ExecutionStage } from '../execution/execution-stage.js';
import { SandboxExecution, type SandboxExecutionDeps } from '../execution/sandbox-execution.js';
import { TurnStages, type TurnStagesDeps } from './turn-stages.js';
import type { TurnDecorator, TurnRunner } from './turn-runner.js';

export interface ComponentTurnsOptions {
  /** What the turn's session, ledger and answer stages use. */
  readonly stages: TurnStagesDeps;
  /** What every execution in a sandbox uses. */
  readonly sandbox: SandboxExecutionDeps;
  /** Wrappers of a component's turn, outermost first. @defaultValue none */
  readonly turnDecorators?: readonly TurnDecorator[];
  /** Wrappers of a component's execution stage, outermost first. @defaultValue none */
  readonly executionDecorators?: readonly ExecutionDecorator[];
}

export class ComponentTurns {
  private readonly apps = new WeakMap<LoadedApp, Map<ComponentSpec, TurnRunner>>();

  constructor(private readonly options: ComponentTurnsOptions) {}

  /** Composes the turns of every component of the snapshot's apps (the registry calls it on each load). */
  load(snapshot: Pick<AppSnapshot, 'apps'>): void {
    for (const app of snapshot.apps.values()) this.composed(app);
  }

  /** The turn of `component` of `app`. */
  of(app: LoadedApp, component: ComponentSpec): TurnRunner {
    const byComponent = this.apps.get(app) ?? this.composed(app);
    let turn = byComponent.get(component);
    if (turn === undefined) {
      // A component object the app does not list (built by a caller): composed once, like the app's own.
      turn = this.compose(app, component, new SandboxExecution(this.options.sandbox, app));
      byComponent.set(component, turn);
    }
    return turn;
  }

  private composed(app: LoadedApp): Map<ComponentSpec, TurnRunner> {
    let byComponent = this.apps.get(app);
    if (byComponent === undefined) {
      const sandbox = new SandboxExecution(this.options.sandbox, app);
      byComponent = new Map([...app.components.values()].map((component) => [component, this.compose(app, component, sandbox)]));
      this.apps.set(app, byComponent);
    }
    return byComponent;
  }

  private compose(app: LoadedApp, component: ComponentSpec, sandbox: ExecutionStage): TurnRunner {
    const { executionDecorators = [], turnDecorators = [] } = this.options;
    const execution = executionDecorators.reduceRight((inner, decorator) => decorator.decorate(app, component, inner), sandbox);
    const stages: TurnRunner = new TurnStages(this.options.stages, execution);
    return turnDecorators.reduceRight((inner, decorator) => decorator.decorate(app, component, inner), stages);
  }
}
