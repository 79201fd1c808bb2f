/** Sessions in memory: records that expire unless touched. */
import { UhlpError } from '../shared/errors.js';
import { ExpiringMap } from './expiring-map.js';
import type { MemoryContext, SweptStore } from './memory-context.js';
import { newSessionId } from './session-id.js';
import type { CreateSessionInput, SessionRecord, SessionStore } from './session-store.js';

export class MemorySessionStore implements SessionStore, SweptStore {
  private readonly sessions: ExpiringMap<SessionRecord>;

  constructor(private readonly context: MemoryContext) {
    this.sessions = new ExpiringMap(context.now);
  }

  async createSession(input: CreateSessionInput): Promise<SessionRecord> {
    this.context.assertOpen();
    const id = input.id ?? newSessionId();
    if (this.sessions.live(id)) {
      throw new UhlpError('UHLP_STATE_INPUT_INVALID', `session ${id} already exists`, { field: 'id' });
    }
    const now = this.context.now();
    const record: SessionRecord = {
      id,
      appId: input.appId,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + input.ttlMs,
      turns: 0,
      data: structuredClone(input.data ?? {}),
    };
    this.sessions.set(id, record, record.expiresAt);
    return structuredClone(record);
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    this.context.assertOpen();
    const entry = this.sessions.live(id);
    return entry ? structuredClone(entry.value) : undefined;
  }

  async touchSession(id: string, ttlMs: number): Promise<SessionRecord | undefined> {
    this.context.assertOpen();
    const entry = this.sessions.live(id);
    if (!entry) return undefined;
    const now = this.context.now();
    entry.value.lastSeenAt = now;
    entry.value.expiresAt = now + ttlMs;
    entry.expiresAt = entry.value.expiresAt;
    return structuredClone(entry.value);
  }

  async nextTurn(id: string): Promise<number> {
    this.context.assertOpen();
    const entry = this.sessions.live(id);
    if (!entry) throw new UhlpError('UHLP_SESSION_NOT_FOUND', `session ${id} does not exist or has expired`, { sessionId: id });
    entry.value.turns += 1;
    return entry.value.turns;
  }

  async deleteSession(id: string): Promise<boolean> {
    this.context.assertOpen();
    const existed = this.sessions.live(id) !== undefined;
    this.sessions.delete(id);
    return existed;
  }

  sweep(): void {
    this.sessions.sweep();
  }
}
