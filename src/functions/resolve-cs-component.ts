/**
 * Which bundle a cs component runs at this turn: its sha256 as written, or
 * the version its function's ref names now (an alias moved by `uhlp fn alias
 * set` takes effect on the next turn). The result goes to the csjs runner as
 * `context.taskDetails.cs`.
 */
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import { UhlpError } from '../shared/errors.js';
import type { FunctionStore } from './function-store.js';
import type { CsTarget } from '../contract/cs-bundle/activation-context.js';
import { parseFunctionName, parseRef } from './function-ref.js';

export async function resolveCsComponent(store: FunctionStore, appId: string, cs: NonNullable<ComponentSpec['cs']>): Promise<CsTarget> {
  if (cs.sha256 !== undefined) return { tenant: appId, namespace: '', function: '', version: 0, sha256: cs.sha256 };
  const name = parseFunctionName(cs.function);
  const refText = cs.ref ?? 'latest';
  const found = await store.resolve(appId, name.namespace, name.function, parseRef(refText));
  if (found === undefined) {
    throw new UhlpError('UHLP_FN_NOT_FOUND', `app ${appId} has no version of ${cs.function} at ref ${refText}`, { function: cs.function, ref: refText });
  }
  return { tenant: appId, namespace: name.namespace, function: name.function, version: found.version, sha256: found.sha256, ref: refText };
}
