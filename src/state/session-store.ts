/**
 * Sessions of the runtime store: a session groups the turns of one conversation
 * with an app, counts them, and expires unless touched. The turn keeper
 * (src/turns/turn-keeper.ts) and the session outputs route use it.
 */

export interface SessionRecord {
  id: string;
  appId: string;
  createdAt: number;
  lastSeenAt: number;
  /** When the session expires unless touched again. */
  expiresAt: number;
  /** Turns taken so far; `nextTurn` returns 1 for the first turn. */
  turns: number;
  /** Free JSON data the caller attached at creation. */
  data: Record<string, unknown>;
}

export interface CreateSessionInput {
  appId: string;
  ttlMs: number;
  /** The id to use; a fresh `SES-...` id when omitted. */
  id?: string;
  data?: Record<string, unknown>;
}

export interface SessionStore {
  /** Refuses an id that exists with `UHLP_STATE_INPUT_INVALID`, one that is no session id with `UHLP_SESSION_ID_INVALID`. */
  createSession(input: CreateSessionInput): Promise<SessionRecord>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  /** Marks the session seen now and extends its life to `ttlMs` from now; undefined when gone. */
  touchSession(id: string, ttlMs: number): Promise<SessionRecord | undefined>;
  /** Atomically counts one more turn; throws `UHLP_SESSION_NOT_FOUND` when the session is gone. */
  nextTurn(id: string): Promise<number>;
  deleteSession(id: string): Promise<boolean>;
}
