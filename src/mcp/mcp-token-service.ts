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
import type { CapabilitiesSpec } from '../apps/schema/app-definition-schema.js';
import { UhlpError } from '../shared/errors.js';
import type { StreamPacket } from '../contract/workflow/stream-packets.js';
import { ToolCallRecorder } from './tool-call-recorder.js';
import type { Context } from '@opentelemetry/api';

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
  /** The workflow run the execution belongs to: it drives the run (owner), or runs one of its steps. @defaultValue none */
  readonly run?: {
    readonly id: string;
    readonly owner: boolean;
    /** Aborts when the run is cancelled: every call of the token in flight is aborted with it. @defaultValue none */
    readonly signal?: AbortSignal;
  };
  /** The stored session of the turn, continued by the components a workflow step runs. @defaultValue none: the ambient session */
  readonly sessionId?: string;
  /** Tools the app marks risk_level: critical (src/apps/critical-tools.ts). @defaultValue none */
  readonly criticalTools?: ReadonlySet<string>;
  /** Where the execution's stream packets and LLM tokens go (server-sent events). @defaultValue none: they are dropped */
  readonly stream?: StreamSink;
  /** The execution's trace context: its tool calls' spans are its children. @defaultValue none: tracing is off */
  readonly traceContext?: Context;
}

/** What an execution's stream takes (src/workflow-runs/execution-stream.ts). */
export interface StreamSink {
  packet(packet: StreamPacket): void;
  delta(streamId: string, node: string | undefined, text: string, contentType?: string): void;
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
    const grant: { -readonly [K in keyof ExecutionGrant]: ExecutionGrant[K] } = {
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
    };
    // Only executions of workflows (and SSE clients) have these: most grants stay small.
    if (binding.run !== undefined) grant.run = binding.run;
    if (binding.sessionId !== undefined) grant.sessionId = binding.sessionId;
    if (binding.criticalTools !== undefined) grant.criticalTools = binding.criticalTools;
    if (binding.stream !== undefined) grant.stream = binding.stream;
    if (binding.traceContext !== undefined) grant.traceContext = binding.traceContext;
    this.grants.set(token, grant);
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
