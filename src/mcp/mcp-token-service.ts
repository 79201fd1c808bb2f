/**
 * MCP tokens: every execution (and every `uhlp mcp token` in dev mode) gets a
 * random bearer token bound to one app, component, request and revision, with
 * an expiry. The binding carries the app's capabilities and configuration as
 * they were at that revision, so a token can only ever reach its own app's
 * tools and state, and a definitions reload does not change what a running
 * execution may do. Tokens live in this process only: the core that minted a
 * token is the one named in the execution's `mcp_endpoint`.
 */
import { randomFillSync } from 'node:crypto';
import type { CapabilitiesSpec } from '../definitions/app-definition-schema.js';
import { UhlpError } from '../errors.js';
import { ToolCallRecorder } from './tool-call-recorder.js';

/** What a token is bound to. */
export interface GrantBinding {
  readonly appId: string;
  readonly componentId: string;
  readonly requestId: string;
  /** Definitions commit the execution runs at; file reads are pinned to it. */
  readonly revision: string;
  readonly capabilities: CapabilitiesSpec;
  readonly configuration: Readonly<Record<string, unknown>>;
  /** How many internal events led to the execution (core.trigger.emit cuts loops with it). @defaultValue 0 */
  readonly triggerDepth?: number;
}

/** A live token's binding and what the execution did with it. */
export interface ExecutionGrant extends GrantBinding {
  /** Epoch milliseconds after which the token is refused. */
  readonly expiresAt: number;
  readonly calls: ToolCallRecorder;
  /** The token was revoked or expired: a call still running must not start anything new. */
  readonly ended: boolean;
}

export interface McpTokenServiceOptions {
  /** Clock, epoch milliseconds. @defaultValue Date.now */
  readonly now?: () => number;
  /**
   * How often expired grants are dropped (and `onDrop` called) when nobody revokes them.
   * @defaultValue 30000
   */
  readonly sweepIntervalMs?: number;
  /** Called once for every grant that leaves the service, revoked or expired. @defaultValue no-op */
  readonly onDrop?: (grant: ExecutionGrant) => void;
}

const TOKEN_PREFIX = 'uhlp_mcp_';
/** 256 random bits per token: guessing one is not a plan. */
const TOKEN_BYTES = 32;
/**
 * Random bytes are drawn 128 tokens at a time: a token is minted on every
 * request, and one system call per request for 32 bytes is most of its cost.
 */
const entropy = Buffer.alloc(TOKEN_BYTES * 128);
let entropyOffset = entropy.length;

function randomToken(): string {
  if (entropyOffset === entropy.length) {
    randomFillSync(entropy);
    entropyOffset = 0;
  }
  const end = entropyOffset + TOKEN_BYTES;
  const token = TOKEN_PREFIX + entropy.toString('base64url', entropyOffset, end);
  // Used bytes are wiped, so no later reader of the buffer can recover a token.
  entropy.fill(0, entropyOffset, end);
  entropyOffset = end;
  return token;
}

export class McpTokenService {
  private readonly grants = new Map<string, ExecutionGrant>();
  private readonly now: () => number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: McpTokenServiceOptions = {}) {
    this.now = options.now ?? Date.now;
    this.sweeper = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 30_000);
    this.sweeper.unref();
  }

  /** Mints a token valid for `ttlMs` from now. */
  mint(binding: GrantBinding, ttlMs: number): string {
    const token = randomToken();
    // Field by field: an object spread here cost more than the rest of minting together.
    this.grants.set(token, {
      appId: binding.appId,
      componentId: binding.componentId,
      requestId: binding.requestId,
      revision: binding.revision,
      capabilities: binding.capabilities,
      configuration: binding.configuration,
      triggerDepth: binding.triggerDepth ?? 0,
      expiresAt: this.now() + ttlMs,
      calls: new ToolCallRecorder(),
      ended: false,
    });
    return token;
  }

  /** The token's grant; UHLP_MCP_UNAUTHORIZED when it is unknown, revoked or expired. */
  resolve(token: string | undefined): ExecutionGrant {
    if (token === undefined || token === '') throw new UhlpError('UHLP_MCP_UNAUTHORIZED', 'a bearer token is required');
    const grant = this.grants.get(token);
    if (grant === undefined) throw new UhlpError('UHLP_MCP_UNAUTHORIZED', 'the token is unknown or revoked');
    if (grant.expiresAt <= this.now()) {
      this.drop(token, grant);
      throw new UhlpError('UHLP_MCP_UNAUTHORIZED', 'the token has expired');
    }
    return grant;
  }

  /** Ends the token at once and returns its grant (undefined when it was already gone). */
  revoke(token: string): ExecutionGrant | undefined {
    const grant = this.grants.get(token);
    if (grant !== undefined) this.drop(token, grant);
    return grant;
  }

  /** Live tokens, for tests and status. */
  size(): number {
    return this.grants.size;
  }

  /** Stops the sweeper and drops every grant. */
  close(): void {
    clearInterval(this.sweeper);
    for (const [token, grant] of [...this.grants]) this.drop(token, grant);
  }

  private sweep(): void {
    const now = this.now();
    for (const [token, grant] of [...this.grants]) {
      if (grant.expiresAt <= now) this.drop(token, grant);
    }
  }

  private drop(token: string, grant: ExecutionGrant): void {
    this.grants.delete(token);
    (grant as { ended: boolean }).ended = true;
    this.options.onDrop?.(grant);
  }
}

/** The token of an `Authorization: Bearer <token>` header, if that is what it holds. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}
