/**
 * `core.kv.get` / `set` / `del`: JSON values under the app's allowed key
 * prefixes. Keys are stored under the app's own namespace, so two apps that
 * both allow `ctr:` never see each other's counters.
 */
import { Type } from '@sinclair/typebox';
import type { KvOperation } from '../../apps/schema/app-definition-schema.js';
import { UhlpError } from '../../shared/errors.js';
import { checkKv, requireCapability } from '../capability-guard.js';
import type { ExecutionGrant } from '../mcp-token-service.js';
import { defineTool } from '../tool-definition.js';

/** Largest JSON text of one value. */
export const MAX_KV_VALUE_BYTES = 1024 * 1024;

const Key = Type.String({ minLength: 1, maxLength: 512 });

/** Where an app's key lives in the shared store. App ids are DNS labels, so `/` cannot be forged by one. */
export function namespacedKey(appId: string, key: string): string {
  return `app/${appId}/kv/${key}`;
}

function allowedKey(grant: ExecutionGrant, op: KvOperation, key: string): string {
  checkKv(requireCapability(grant.capabilities, 'kv'), op, key);
  return namespacedKey(grant.appId, key);
}

const opAvailable = (op: KvOperation) => (capabilities: { kv?: { ops: readonly KvOperation[] } }) => capabilities.kv?.ops.includes(op) === true;

export const kvGet = defineTool({
  name: 'core.kv.get',
  description: 'Reads a JSON value; null when the key is absent or expired.',
  capability: 'kv',
  available: opAvailable('get'),
  inputSchema: Type.Object({ key: Key }, { additionalProperties: false }),
  async run(args, { grant, services }) {
    const raw = await services.kv.kvGet(allowedKey(grant, 'get', args.key));
    return { content: { value: raw === undefined ? null : (JSON.parse(raw) as unknown) } };
  },
});

export const kvSet = defineTool({
  name: 'core.kv.set',
  description: 'Writes a JSON value, optionally expiring after ttlSeconds.',
  capability: 'kv',
  available: opAvailable('set'),
  inputSchema: Type.Object(
    { key: Key, value: Type.Unknown(), ttlSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 31536000 })) },
    { additionalProperties: false },
  ),
  async run(args, { grant, services }) {
    const key = allowedKey(grant, 'set', args.key);
    const text = JSON.stringify(args.value ?? null);
    if (Buffer.byteLength(text) > MAX_KV_VALUE_BYTES) {
      throw new UhlpError('UHLP_MCP_INVALID_ARGUMENTS', `value is over ${MAX_KV_VALUE_BYTES} bytes of JSON`, { field: 'value' });
    }
    await services.kv.kvSet(key, text, args.ttlSeconds !== undefined ? { ttlMs: args.ttlSeconds * 1000 } : {});
    return { content: { ok: true } };
  },
});

export const kvDel = defineTool({
  name: 'core.kv.del',
  description: 'Deletes a key; `deleted` says whether it existed.',
  capability: 'kv',
  available: opAvailable('del'),
  inputSchema: Type.Object({ key: Key }, { additionalProperties: false }),
  async run(args, { grant, services }) {
    return { content: { deleted: await services.kv.kvDelete(allowedKey(grant, 'del', args.key)) } };
  },
});
