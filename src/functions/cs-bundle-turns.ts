/**
 * The turn of a cs component runs the bundle its ref names at that turn (an
 * alias moved by `uhlp fn alias set` takes effect on the next turn). The
 * bundle is resolved before the turn begins: a ref that names no version is
 * refused (UHLP_FN_NOT_FOUND) with no session touched and nothing ledgered.
 * Other components' turns are left as they are when their app loads.
 */
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import type { FinalResponse } from '../execution/result-interpreter.js';
import type { TurnEvent } from '../turns/turn-event.js';
import type { TurnDecorator, TurnNotes, TurnRunner } from '../turns/turn-runner.js';
import type { FunctionStore } from './function-store.js';
import { resolveCsComponent } from './resolve-cs-component.js';

export class CsBundleTurns implements TurnDecorator {
  constructor(private readonly functions: FunctionStore) {}

  decorate(app: LoadedApp, component: ComponentSpec, inner: TurnRunner): TurnRunner {
    const cs = component.cs;
    if (cs === undefined) return inner;
    const { functions } = this;
    return {
      async run(event: TurnEvent, notes: TurnNotes): Promise<FinalResponse> {
        return inner.run({ ...event, cs: await resolveCsComponent(functions, app.id, cs) }, notes);
      },
    };
  }
}
