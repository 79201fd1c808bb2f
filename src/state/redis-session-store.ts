/**
 * Sessions on Redis: one hash per session (`session:<id>`) expiring with the
 * session; creating, touching and counting turns are Lua scripts
 * (session-create-1, session-touch-1, session-next-turn-1).
 */
import { UhlpError } from '../shared/errors.js';
import type { RedisStoreClient } from './redis-calls.js';
import { newSessionId } from './session-id.js';
import type { CreateSessionInput, SessionRecord, SessionStore } from './session-store.js';

export class RedisSessionStore implements SessionStore {
  constructor(private readonly client: RedisStoreClient) {}

  async createSession(input: CreateSessionInput): Promise<SessionRecord> {
    const id = input.id ?? newSessionId();
    const now = Date.now();
    const created = await this.client.script('sessionCreate', [this.client.keys.session(id)], [id, input.appId, now, input.ttlMs, JSON.stringify(input.data ?? {})]);
    if (created !== 1) throw new UhlpError('UHLP_STATE_INPUT_INVALID', `session ${id} already exists`, { field: 'id' });
    return { id, appId: input.appId, createdAt: now, lastSeenAt: now, expiresAt: now + input.ttlMs, turns: 0, data: structuredClone(input.data ?? {}) };
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const hash = await this.client.call(() => this.client.redis.hgetall(this.client.keys.session(id)));
    return parseSession(hash);
  }

  async touchSession(id: string, ttlMs: number): Promise<SessionRecord | undefined> {
    const flat = (await this.client.script('sessionTouch', [this.client.keys.session(id)], [Date.now(), ttlMs])) as string[];
    const hash: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
    return parseSession(hash);
  }

  async nextTurn(id: string): Promise<number> {
    const turn = Number(await this.client.script('sessionNextTurn', [this.client.keys.session(id)], []));
    if (turn < 0) throw new UhlpError('UHLP_SESSION_NOT_FOUND', `session ${id} does not exist or has expired`, { sessionId: id });
    return turn;
  }

  async deleteSession(id: string): Promise<boolean> {
    return (await this.client.call(() => this.client.redis.del(this.client.keys.session(id)))) === 1;
  }
}

function parseSession(hash: Record<string, string>): SessionRecord | undefined {
  if (!hash.id) return undefined;
  return {
    id: hash.id,
    appId: hash.appId ?? '',
    createdAt: Number(hash.createdAt),
    lastSeenAt: Number(hash.lastSeenAt),
    expiresAt: Number(hash.expiresAt),
    turns: Number(hash.turns ?? 0),
    data: JSON.parse(hash.data ?? '{}') as Record<string, unknown>,
  };
}
