/**
 * The only module that reads environment variables and command-line flags. It
 * validates everything once, names the bad value, and returns a frozen object;
 * the rest of the core (and the CLI) takes a `CoreConfig`, or what one of the
 * loaders here gives, and never looks at process.env
 * (src/environment-boundary.test.ts says so).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { UhlpError } from './shared/errors.js';
import { DEFAULT_SEGMENT_BYTES, DEFAULT_SEGMENT_MS } from './ledger/file-ledger.js';
import { makeLedgerKey, readLedgerKeyFile, type LedgerKey } from './ledger/ledger-key.js';
import { parseRetentionSpec, parseSize, type RetentionLimits } from './ledger/ledger-retention.js';
import { LEDGER_DURABILITIES, type LedgerDurability } from './ledger/turn-ledger-thread.js';
import { parseModelMap } from './llm/model-map.js';
import { STRUCTURED_OUTPUT_MODES, type StructuredOutputMode } from './llm/openai-chat-wire.js';
import type { LogLevel } from './logger.js';
import { parseTracingConfig, type TracingConfig } from './tracing/tracing-config.js';
import { DEFAULT_CLAIM_AHEAD } from './sandbox/claim-reserve.js';
import { isRedisUrl, parseRedisUrl } from './state/redis-url.js';
import type { ReplicaAcks } from './state/replica-acks.js';
import { readConsoleTokens, type ConsoleToken } from './console/console-tokens.js';
import { npmEnvironment } from './mcp/federation/npm-environment.js';

export type DriverName = 'process' | 'docker' | 'pod';

export interface CoreConfig {
  /** Where apps come from: a definitions repository (`git`) or AppDefinition resources (`kubernetes`). @defaultValue `git` (`--registry`, `UHLP_REGISTRY`) */
  readonly registry: 'git' | 'kubernetes';
  /** Namespaces whose AppDefinitions are served in `kubernetes` mode; all when empty. (`--namespace`, repeatable; `UHLP_NAMESPACES`, comma-separated) */
  readonly namespaces: readonly string[];
  /** The definitions directory (a Git repository or a directory in one); `''` in `kubernetes` mode. */
  readonly definitionsDir: string;
  /** Interface to listen on. @defaultValue `127.0.0.1` (`UHLP_HOST`) */
  readonly host: string;
  /** Port to listen on; 0 picks a free one. @defaultValue 8080 (`UHLP_PORT`) */
  readonly port: number;
  /** Where the core keeps its state (materialized revisions, ledgers). @defaultValue `./.uhlp` (`UHLP_DATA_DIR`) */
  readonly dataDir: string;
  /** Sandbox driver: `process` (child processes), `docker` (hardened containers) or `pod` (pods claimed from the operator's warm pools). @defaultValue `process` (`--driver`, `UHLP_DRIVER`) */
  readonly driver: DriverName;
  /** Largest request body accepted at ingress, bytes. @defaultValue 1048576 (`UHLP_BODY_LIMIT_BYTES`) */
  readonly bodyLimitBytes: number;
  /**
   * Largest /execute answer body the core reads from a sandbox, bytes; a larger one is
   * `502 UHLP_SANDBOX_RESPONSE_TOO_LARGE` and its sandbox is destroyed.
   * @defaultValue 8388608 (`UHLP_MAX_SANDBOX_RESPONSE_BYTES`, 1024 - 268435456)
   */
  readonly maxSandboxResponseBytes: number;
  /** @defaultValue `info` (`UHLP_LOG_LEVEL`) */
  readonly logLevel: LogLevel;
  /** Identifies this core's sandboxes (the `uhlp.dev/instance` label). @defaultValue `i-<hash of the data directory>` (`UHLP_INSTANCE_ID`) */
  readonly instanceId: string;
  /** Runtime state: `memory`, a `redis://` URL, a `redis+sentinel://` or a `redis+cluster://` URL (state/redis-url.ts). @defaultValue `memory` (`UHLP_STATE`) */
  readonly state: string;
  /** Prefix of every runtime-state key, so cores can share one Redis. @defaultValue `uhlp` (`UHLP_STATE_PREFIX`) */
  readonly statePrefix: string;
  /**
   * Replicas that must hold a queue publish or acknowledgement, a once-only claim or answer, a cron fire, a lease or a
   * single-use mark before the core counts it as done (Redis `WAIT`; state/replica-acks.ts).
   * @defaultValue 0: do not wait (`UHLP_STATE_REPLICA_ACKS`; the wait's bound `UHLP_STATE_REPLICA_ACK_TIMEOUT_MS`, default 1000)
   */
  readonly stateReplicaAcks: ReplicaAcks;
  /** Where turn ledgers go: `files` under the data directory, or `off`. @defaultValue `files` (`UHLP_LEDGER`) */
  readonly ledger: 'files' | 'off';
  /**
   * Seals ledger entries and checkpoints with HMAC-SHA256 under this key, so that
   * rewriting a ledger file needs the key. At least 32 bytes: a file's bytes less a
   * trailing line break (`UHLP_LEDGER_KEY_FILE`, e.g. a mounted Kubernetes Secret) or
   * a string's UTF-8 bytes (`UHLP_LEDGER_KEY`). @defaultValue none: plain sha256 chains
   */
  readonly ledgerKey: LedgerKey | undefined;
  /**
   * When an answer may leave relative to its turn's ledger entries: `async`
   * (answer first, entries within milliseconds), `sync` (after the entries are
   * written, with group commit), `fsync` (after they are flushed to disk).
   * @defaultValue `async` (`--ledger-durability`, `UHLP_LEDGER_DURABILITY`)
   */
  readonly ledgerDurability: LedgerDurability;
  /** A ledger segment is closed once either of its files reaches this size, bytes. @defaultValue 64Mi (`UHLP_LEDGER_SEGMENT_SIZE`, 64Ki - 4Gi) */
  readonly ledgerSegmentBytes: number;
  /** ...or once it has been written to this long, seconds. @defaultValue 3600 (`UHLP_LEDGER_SEGMENT_SECONDS`, 1 - 604800) */
  readonly ledgerSegmentSeconds: number;
  /**
   * Ledger retention per plane (deployment mode): `plane=maxAge/maxSize`, `*`
   * for planes not named; apps add their own (`spec.ledger.retention`).
   * @defaultValue `*=24h/2Gi` in dev mode, none (keep everything) otherwise (`--ledger-retention`, `UHLP_LEDGER_RETENTION`; `none` keeps everything)
   */
  readonly ledgerRetention: Readonly<Record<string, RetentionLimits>>;
  /** How often the core applies retention, seconds; 0 never. @defaultValue 60 (`UHLP_LEDGER_PRUNE_INTERVAL_SECONDS`, 0 - 86400) */
  readonly ledgerPruneIntervalSeconds: number;
  /** Life of a session after its last turn, seconds. @defaultValue 3600 (`UHLP_SESSION_TTL_SECONDS`) */
  readonly sessionTtlSeconds: number;
  /** How long a completed Idempotency-Key answer is replayed, seconds. @defaultValue 86400 (`UHLP_IDEMPOTENCY_TTL_SECONDS`) */
  readonly idempotencyTtlSeconds: number;
  /** How often the definitions HEAD is read for hot reload, ms; 0 turns reloading off. @defaultValue 1000 (`UHLP_RELOAD_INTERVAL_MS`) */
  readonly reloadIntervalMs: number;
  /** Remote to `git pull --ff-only` from on an interval; none when unset. (`--pull`, `UHLP_GIT_PULL_REMOTE`) */
  readonly pullRemote: string | undefined;
  /** Time between pulls, ms. @defaultValue 30000 (`UHLP_GIT_PULL_INTERVAL_MS`) */
  readonly pullIntervalMs: number;
  /** Dev mode (`uhlp dev`) enables developer conveniences such as minting MCP tokens from the CLI. */
  readonly devMode: boolean;
  /**
   * Clients get a script exception's stack (the script's file, line and column) in
   * the error body's `details.stack`; operators always have it in the log. Dev mode
   * only: `uhlp serve` refuses it, so a production core never answers one.
   * @defaultValue false (`UHLP_DEV_ERROR_STACKS=true`)
   */
  readonly devErrorStacks: boolean;
  /** The endpoint spine's Unix socket. @defaultValue `<dataDir>/core.sock` (`UHLP_SPINE_SOCKET`) */
  readonly spineSocket: string;
  /** The LLM provider behind `core.llm.generate`. */
  readonly llm: LlmConfig;
  /**
   * Run process sandboxes without namespaces when bubblewrap cannot run on this
   * host (Node's permission model only). `uhlp dev` does so by default, loudly;
   * `uhlp serve` refuses to start without it.
   * @defaultValue `true` in dev mode, else `false` (`--unsafe-process-sandboxes`, `UHLP_UNSAFE_PROCESS_SANDBOXES=true`)
   */
  readonly unsafeProcessSandboxes: boolean;
  /** bubblewrap's executable, for process sandboxes. @defaultValue the first `bwrap` on PATH (`UHLP_BWRAP`) */
  readonly bwrapPath?: string;
  /** How the Git sources of Kubernetes apps (`spec.source.git`) are fetched. */
  readonly gitSources: GitSourcesConfig;
  /** MCP federation: community servers, secrets of remote servers, the package cache. */
  readonly mcpFederation: McpFederationConfig;
  /** Settings of the `pod` driver (and sandbox images of any container driver). */
  readonly pods: PodsConfig;
  /**
   * Signs callback URLs and queue tokens (HMAC-SHA256), at least 32 bytes: a file's
   * bytes less a trailing line break (`UHLP_SOURCES_KEY_FILE`) or a string's UTF-8
   * bytes (`UHLP_SOURCES_KEY`). Every core of one installation needs the same key.
   * Held like a ledger key, so that logging the configuration never shows it.
   * @defaultValue none: generated once into `<dataDir>/sources.key`
   */
  readonly sourcesKey: LedgerKey | undefined;
  /** Base URL that callback URLs are given under. @defaultValue the core's own URL (`UHLP_PUBLIC_URL`) */
  readonly publicUrl?: string;
  /** Workflow run records. */
  readonly runs: RunsConfig;
  /**
   * The environment the core was started with, frozen (hostEnvironment()): the host variables
   * an app's `shell.env` may name, and the PATH of the processes the core starts (the std-body
   * host, unisolated runners, bubblewrap's lookup).
   */
  readonly hostEnv: HostEnvironment;
  /** The optimization oracle (docs/oracle.md). */
  readonly oracle: OracleConfig;
  /** The web console at /_uhlp/console/ (docs/console.md). */
  readonly console: ConsoleConfig;
  /** The operator listener: the console and every other operator route, on an origin apps never answer on (docs/security.md). */
  readonly operator: OperatorConfig;
  /** OpenTelemetry tracing (the standard `OTEL_*` variables; docs/observability.md). @defaultValue off */
  readonly tracing: TracingConfig;
  /**
   * Which flag or variable gave `host`, `port` and `pullRemote` (`--port`, `UHLP_PORT`, or
   * `default`), so that a failure at start-up (a port in use, an address that is not this
   * machine's, a remote that cannot be pulled) names the setting to change.
   */
  readonly settingNames: Readonly<{ host: string; port: string; pull: string }>;
}

/**
 * The operator listener (src/core/operator-server.ts). It is an origin of its own
 * so that no script in an app's answer runs as an operator page; it listens on
 * loopback unless told otherwise, and answers only under a Host it knows, so
 * that a DNS-rebinding page cannot borrow loopback trust.
 */
export interface OperatorConfig {
  /** Interface of the operator listener. @defaultValue `127.0.0.1` (`UHLP_OPERATOR_HOST`), whatever the core's `host` */
  readonly host: string;
  /** Port of the operator listener; 0 picks a free one. @defaultValue the core's port + 1, or 0 when that is 0 (`UHLP_OPERATOR_PORT`, 0 - 65535) */
  readonly port: number;
  /**
   * Host names (besides loopback addresses and `localhost`) the operator routes
   * answer under: the name of an Ingress or a port-forward alias in front of the
   * operator listener. Any other `Host` is refused with UHLP_HOST_NOT_ALLOWED.
   * @defaultValue none (`UHLP_OPERATOR_HOSTS`, comma-separated names, lower case, no port)
   */
  readonly hosts: readonly string[];
}

/**
 * The console: loopback-only unless tokens are configured; app views are served
 * from an origin of their own, a second listener that serves the views' sandbox
 * page and nothing else.
 */
export interface ConsoleConfig {
  /** Serve the console. @defaultValue true (`UHLP_CONSOLE`, on or off) */
  readonly enabled: boolean;
  /**
   * Who may use the console beyond loopback, and as what (console-tokens.ts); none:
   * loopback clients only. @defaultValue none (`UHLP_CONSOLE_TOKENS_FILE`, e.g. a mounted Kubernetes Secret)
   */
  readonly tokens: readonly ConsoleToken[];
  /** Interface of the views' sandbox origin. @defaultValue the core's `host` (`UHLP_CONSOLE_SANDBOX_HOST`) */
  readonly sandboxHost: string;
  /** Port of the views' sandbox origin; 0 picks a free one. @defaultValue 0 (`UHLP_CONSOLE_SANDBOX_PORT`, 0 - 65535) */
  readonly sandboxPort: number;
  /**
   * The sandbox origin as browsers reach it (behind an Ingress, its own host name).
   * @defaultValue the console page's host name with the sandbox port (`UHLP_CONSOLE_SANDBOX_URL`, an http(s) origin)
   */
  readonly sandboxUrl?: string;
  /**
   * Finished turns the requests page can show, per app: each core's ring of the app, and each core's list
   * of the app in a Redis runtime store (src/turns/turn-journal.ts); 0 keeps none. @defaultValue 1000 (`UHLP_TURN_JOURNAL_SIZE`, 0 - 100000)
   */
  readonly journalSize: number;
  /**
   * Where a turn's trace is shown, `{traceId}` standing for its id (e.g. `http://jaeger:16686/trace/{traceId}`);
   * none: turns get no trace link. @defaultValue none (`UHLP_TRACE_URL_TEMPLATE`, an http(s) URL with `{traceId}`)
   */
  readonly traceUrlTemplate?: string;
}

/**
 * Pods share no socket with the core: they reach it over the network, at an
 * address the core cannot know by itself (its Service, or its pod IP).
 */
export interface PodsConfig {
  /**
   * The core's MCP URL as sandboxes reach it, sent to them as `context.mcp_endpoint`.
   * @defaultValue the core's own listening URL + `/mcp` (`UHLP_MCP_URL`, an http(s) URL)
   */
  readonly mcpUrl?: string;
  /**
   * Namespace of the SandboxPools whose pods the core claims.
   * @defaultValue the first of `namespaces`, else the core's own (the service account's), else `default` (`UHLP_POD_NAMESPACE`)
   */
  readonly namespace?: string;
  /**
   * The core's own pod, `<namespace>/<name>`, recorded on the sandbox pods it claims: the
   * operator deletes them once that pod is gone. @defaultValue none: a core outside the
   * cluster (`UHLP_CORE_POD`; the chart sets it)
   */
  readonly corePod?: string;
  /**
   * Warm pods each pool claims ahead of its requests, so that a request needing a new pod
   * waits for no API-server write; at most the pool's minWarm and its SandboxPool's current
   * replicas; 0 claims only on demand. @defaultValue 2 (`UHLP_POD_CLAIM_AHEAD`, 0 - 16)
   */
  readonly claimAhead: number;
  /** Runner images for pools that name none; the operator's must be the same. @defaultValue uhlp/jit-runner:latest, uhlp/llm-orchestrator:latest, uhlp/mcp-host:latest (`UHLP_IMAGE_JIT`, `UHLP_IMAGE_LLM`, `UHLP_IMAGE_MCP`) */
  readonly images: Readonly<{ jit?: string; llm?: string; mcp?: string }>;
  /**
   * The volume `runner: mcp` pods mount the MCP package cache from (read-only, a subPath
   * per package): the one the core installs into at `UHLP_MCP_PACKAGE_CACHE`. The operator
   * is given the same (`--mcp-package-volume`). @defaultValue none: such pools are refused
   * on the pod driver (`UHLP_MCP_PACKAGE_VOLUME`: `pvc:<claim>` or `hostPath:<absolute dir>`)
   */
  readonly packageVolume?: Readonly<{ claimName: string } | { hostPath: string }>;
}

/** Workflow run records in the runtime store. */
export interface RunsConfig {
  /** How long a run is kept after its last change (a paused run waits this long for its approval), seconds. @defaultValue 604800 (`UHLP_RUN_TTL_SECONDS`, 60 - 31536000) */
  readonly ttlSeconds: number;
  /** Largest run record (blackboard, trace, result), bytes; a checkpoint past it fails the run. @defaultValue 1048576 (`UHLP_RUN_MAX_BYTES`, 4096 - 67108864) */
  readonly maxBytes: number;
}

/** The optimization oracle: what it may spend and how often it looks. Per component settings are in `llm.optimize`. */
export interface OracleConfig {
  /** Run the oracle (components still opt in with llm.optimize). @defaultValue true (`UHLP_ORACLE`, on or off) */
  readonly enabled: boolean;
  /**
   * The model that writes candidates: a name the provider takes (UHLP_LLM_MODELS maps it like any).
   * @defaultValue UHLP_LLM_MODEL, else the component's own model (`UHLP_ORACLE_CODEGEN_MODEL`)
   */
  readonly codegenModel?: string;
  /** Completion tokens of one code-generation answer. @defaultValue 4096 (`UHLP_ORACLE_CODEGEN_MAX_TOKENS`, 256 - 200000) */
  readonly codegenMaxTokens: number;
  /** How often optimized components are checked for being hot and stable, ms. @defaultValue 5000 (`UHLP_ORACLE_INTERVAL_MS`, 50 - 3600000) */
  readonly intervalMs: number;
  /** Live comparisons of code and LLM running at once; more are skipped. @defaultValue 8 (`UHLP_ORACLE_MAX_COMPARISONS`, 1 - 1000) */
  readonly maxComparisons: number;
}

/**
 * Git sources are fetched through the same SSRF guard as `tool.web.fetch`: every
 * address a source host resolves to must be public unless listed here.
 */
export interface GitSourcesConfig {
  /**
   * `host:port` pairs (`[::1]:443` for IPv6) that may resolve to loopback, private or
   * link-local addresses: an in-cluster Git server, or a test server. A cloud-metadata
   * address is reachable only when listed as an address, never through a name.
   * @defaultValue [] (`UHLP_GIT_ALLOW_PRIVATE`, comma-separated)
   */
  readonly allowPrivate: readonly string[];
  /** PEM bundle of the CAs that https sources are checked against, instead of the system's. @defaultValue the system's (`UHLP_GIT_CA_FILE`) */
  readonly caFile?: string;
}

/**
 * With `baseUrl` the core talks to an OpenAI-compatible server; otherwise it
 * answers from `scriptFile`, and with neither every call fails
 * UHLP_LLM_NO_SCRIPTED_ANSWER (offline by default, never a surprise bill).
 */
export interface LlmConfig {
  /** OpenAI-compatible base URL, e.g. https://api.openai.com/v1. @defaultValue none (`UHLP_LLM_BASE_URL`) */
  readonly baseUrl?: string;
  /** Bearer key for `baseUrl`. @defaultValue none (`UHLP_LLM_API_KEY`) */
  readonly apiKey?: string;
  /** Model used when a call names none. @defaultValue none (`UHLP_LLM_MODEL`) */
  readonly model?: string;
  /**
   * Scripted answers file (YAML or JSON). @defaultValue `UHLP_LLM_SCRIPT_FILE`; else, with no
   * `UHLP_LLM_BASE_URL`, the definitions directory's `llm-answers.yaml` when it has one (so that
   * `uhlp dev examples` answers its LLM routes offline); else none
   */
  readonly scriptFile?: string;
  /** Where `scriptFile` was named, for messages about it: `UHLP_LLM_SCRIPT_FILE` or `<definitions-dir>/llm-answers.yaml`. */
  readonly scriptFileSetting?: string;
  /** Ask `baseUrl` for streamed answers (SSE) and assemble them. @defaultValue false (`UHLP_LLM_STREAM`, true or false) */
  readonly stream: boolean;
  /**
   * How a call's response schema reaches `baseUrl`: `json_schema` (OpenAI, vLLM,
   * Ollama, llama.cpp), `json_object` (JSON mode only), `none`.
   * @defaultValue `json_schema` (`UHLP_LLM_STRUCTURED_OUTPUT`)
   */
  readonly structuredOutput: StructuredOutputMode;
  /** Time one attempt at `baseUrl` may take, the whole answer included, ms. @defaultValue 60000 (`UHLP_LLM_TIMEOUT_MS`, 100 - 600000) */
  readonly timeoutMs: number;
  /** Retries of a 429, a 5xx or a connection error at `baseUrl`. @defaultValue 3 (`UHLP_LLM_MAX_RETRIES`, 0 - 10) */
  readonly maxRetries: number;
  /**
   * host:port pairs an app's own model endpoint (spec.llm.endpoint.url) may resolve to although
   * loopback or private; a metadata address only when listed as that address.
   * @defaultValue [] (`UHLP_LLM_ALLOW_PRIVATE`, comma-separated)
   */
  readonly appAllowPrivate: readonly string[];
  /**
   * An OpenAI-compatible `/embeddings` endpoint for core.llm.embed (lazy skills); without it the
   * local deterministic embedding answers. @defaultValue none (`UHLP_EMBEDDINGS_MODEL`, at
   * `UHLP_EMBEDDINGS_BASE_URL` or else `UHLP_LLM_BASE_URL`, with `UHLP_EMBEDDINGS_API_KEY` or else `UHLP_LLM_API_KEY`)
   */
  readonly embeddings?: { readonly baseUrl: string; readonly model: string; readonly apiKey?: string };
  /**
   * The server's name of each model an app's capability names, e.g. `{small: "llama3.2:3b"}`;
   * names not listed are sent as they are. @defaultValue {} (`UHLP_LLM_MODELS="small=llama3.2:3b,large=qwen2.5:14b"`)
   */
  readonly models: Readonly<Record<string, string>>;
}

export interface ConfigFlags {
  registry?: string;
  namespace?: string[];
  state?: string;
  pull?: string;
  ledger?: string;
  'ledger-durability'?: string;
  'ledger-retention'?: string;
  host?: string;
  port?: string;
  'data-dir'?: string;
  driver?: string;
  'log-level'?: string;
  'unsafe-process-sandboxes'?: boolean;
}

/** An environment as the process has it: variable names to values. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** The environment the core's child processes inherit of it, frozen. */
export type HostEnvironment = Readonly<Record<string, string>>;

/**
 * A frozen copy of the environment the process started with: what the child
 * processes the core starts inherit of it (Git commands, the std-body host,
 * unisolated runners) and what an app's `shell.env` passes on, by name. It is
 * not parsed: options are read from the environment by the loaders below.
 */
export function hostEnvironment(env: Environment = process.env): HostEnvironment {
  const copy: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) copy[name] = value;
  return Object.freeze(copy);
}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const DRIVERS: readonly DriverName[] = ['process', 'docker', 'pod'];

function invalid(name: string, expected: string, got: string): never {
  throw new UhlpError('UHLP_CONFIG_INVALID', `${name} must be ${expected}, got "${got}"`, { name, value: got });
}

function integer(name: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || value < min || value > max) invalid(name, `an integer ${min}-${max}`, raw);
  return value;
}

function oneOf<T extends string>(name: string, raw: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(raw)) invalid(name, `one of ${allowed.join(', ')}`, raw);
  return raw as T;
}

/**
 * The ledger key from `UHLP_LEDGER_KEY_FILE` or `UHLP_LEDGER_KEY` (not both), or
 * undefined. Shared by the core and `uhlp ledger verify`.
 */
export function loadLedgerKey(env: Environment = process.env): LedgerKey | undefined {
  const file = env.UHLP_LEDGER_KEY_FILE || undefined;
  const value = env.UHLP_LEDGER_KEY || undefined;
  if (file !== undefined && value !== undefined) invalid('UHLP_LEDGER_KEY_FILE', 'unset when UHLP_LEDGER_KEY is set (one key source)', file);
  if (file !== undefined) return readLedgerKeyFile(path.resolve(file));
  return value === undefined ? undefined : makeLedgerKey(Buffer.from(value, 'utf8'), 'UHLP_LEDGER_KEY');
}

/** The sources key from `UHLP_SOURCES_KEY_FILE` or `UHLP_SOURCES_KEY` (not both), or undefined. Shared by the core and `uhlp queues`. */
export function loadSourcesKeyConfig(env: Environment = process.env): LedgerKey | undefined {
  const file = env.UHLP_SOURCES_KEY_FILE || undefined;
  const value = env.UHLP_SOURCES_KEY || undefined;
  if (file !== undefined && value !== undefined) invalid('UHLP_SOURCES_KEY_FILE', 'unset when UHLP_SOURCES_KEY is set (one key source)', file);
  // The same rules as a ledger key: at least 32 bytes, a file less its trailing line break.
  if (file !== undefined) return readLedgerKeyFile(path.resolve(file), 'UHLP_SOURCES_KEY_FILE');
  return value === undefined ? undefined : makeLedgerKey(Buffer.from(value, 'utf8'), 'UHLP_SOURCES_KEY');
}

/** Flags win over environment variables; both are validated the same way. */
export function loadConfig(
  definitionsDir: string | undefined,
  flags: ConfigFlags,
  env: Environment = process.env,
  mode: { devMode: boolean } = { devMode: true },
): CoreConfig {
  const pick = (flag: Exclude<keyof ConfigFlags, 'namespace' | 'unsafe-process-sandboxes'>, variable: string): { name: string; raw: string } | undefined => {
    if (flags[flag] !== undefined) return { name: `--${flag}`, raw: flags[flag]! };
    if (env[variable] !== undefined && env[variable] !== '') return { name: variable, raw: env[variable]! };
    return undefined;
  };
  const port = pick('port', 'UHLP_PORT');
  const host = pick('host', 'UHLP_HOST');
  const dataDir = pick('data-dir', 'UHLP_DATA_DIR');
  const driver = pick('driver', 'UHLP_DRIVER');
  const logLevel = pick('log-level', 'UHLP_LOG_LEVEL');
  const registryPick = pick('registry', 'UHLP_REGISTRY');
  const registry = registryPick ? oneOf(registryPick.name, registryPick.raw, ['git', 'kubernetes'] as const) : 'git';
  if (registry === 'git' && !definitionsDir) throw new UhlpError('UHLP_CONFIG_INVALID', 'a definitions directory is required', { name: 'definitions-dir' });
  if (registry === 'kubernetes' && definitionsDir) invalid('definitions-dir', 'absent with --registry kubernetes (apps come from the cluster)', definitionsDir);
  const namespaces = flags.namespace ?? (env.UHLP_NAMESPACES ? env.UHLP_NAMESPACES.split(',').map((n) => n.trim()).filter(Boolean) : []);
  for (const ns of namespaces) if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(ns)) invalid('--namespace', 'a namespace name', ns);
  const state = pick('state', 'UHLP_STATE');
  const ledger = pick('ledger', 'UHLP_LEDGER');
  const durability = pick('ledger-durability', 'UHLP_LEDGER_DURABILITY');
  const retention = pick('ledger-retention', 'UHLP_LEDGER_RETENTION');
  const segmentSize = env.UHLP_LEDGER_SEGMENT_SIZE ? parseSize(env.UHLP_LEDGER_SEGMENT_SIZE, 'UHLP_LEDGER_SEGMENT_SIZE') : DEFAULT_SEGMENT_BYTES;
  if (segmentSize < 64 * 1024 || segmentSize > 4 * 1024 ** 3) invalid('UHLP_LEDGER_SEGMENT_SIZE', 'a size of 64Ki to 4Gi', env.UHLP_LEDGER_SEGMENT_SIZE ?? '');
  const pull = pick('pull', 'UHLP_GIT_PULL_REMOTE');
  const envInt = (name: string, fallback: number, min: number, max: number): number =>
    env[name] ? integer(name, env[name]!, min, max) : fallback;
  if (state && state.raw !== 'memory') {
    if (!isRedisUrl(state.raw)) invalid(state.name, 'memory or a redis://, rediss://, redis+sentinel://, rediss+sentinel:// or redis+cluster:// URL', state.raw);
    const target = parseRedisUrl(state.raw, state.name);
    if (target.kind !== 'node' && target.caFile !== undefined && !existsSync(target.caFile)) invalid(state.name, 'a caFile that exists (a PEM file of CAs)', target.caFile);
    // WAIT counts the replicas of the connection's own writes; a Cluster client sends it to any node, where it would count nothing.
    if (target.kind === 'cluster' && env.UHLP_STATE_REPLICA_ACKS && env.UHLP_STATE_REPLICA_ACKS !== '0') {
      invalid('UHLP_STATE_REPLICA_ACKS', '0 with a redis+cluster:// state (replica acknowledgements are not supported on Redis Cluster yet)', env.UHLP_STATE_REPLICA_ACKS);
    }
  }
  // `git pull` hands its remote to `git fetch` without --end-of-options, so a leading "-" would be an option there.
  if (pull && (pull.raw.startsWith('-') || /[\s\0]/.test(pull.raw))) invalid(pull.name, 'a remote name or URL (not starting with "-", no whitespace)', pull.raw);
  const statePrefix = statePrefixOf(env);
  const bodyLimit = env.UHLP_BODY_LIMIT_BYTES ? { name: 'UHLP_BODY_LIMIT_BYTES', raw: env.UHLP_BODY_LIMIT_BYTES } : undefined;
  // Derived from the data directory by default: stable across restarts (so a restarted core adopts
  // its own containers) and distinct for two cores on one machine (so neither takes the other's).
  const instanceId = env.UHLP_INSTANCE_ID ?? `i-${createHash('sha1').update(path.resolve(dataDir?.raw ?? '.uhlp')).digest('hex').slice(0, 12)}`;
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(instanceId)) invalid('UHLP_INSTANCE_ID', 'a DNS label', instanceId);
  if (host && !isHostName(host.raw)) invalid(host.name, 'an IP address or a host name', host.raw);
  const resolvedDataDir = path.resolve(dataDir?.raw ?? '.uhlp');
  const spineSocket = path.resolve(env.UHLP_SPINE_SOCKET || path.join(resolvedDataDir, 'core.sock'));
  // Unix socket paths are limited to 107 bytes.
  if (Buffer.byteLength(spineSocket) > 107) invalid('UHLP_SPINE_SOCKET', 'a socket path of at most 107 bytes (set it or use a shorter --data-dir)', spineSocket);

  const stacksEnv = env.UHLP_DEV_ERROR_STACKS;
  if (stacksEnv !== undefined && stacksEnv !== '' && stacksEnv !== 'true' && stacksEnv !== 'false') invalid('UHLP_DEV_ERROR_STACKS', 'true or false', stacksEnv);
  if (stacksEnv === 'true' && !mode.devMode) invalid('UHLP_DEV_ERROR_STACKS', 'unset or false outside uhlp dev (clients of a served core never get a stack)', stacksEnv);

  const unsafeEnv = env.UHLP_UNSAFE_PROCESS_SANDBOXES;
  if (unsafeEnv !== undefined && unsafeEnv !== '' && unsafeEnv !== 'true' && unsafeEnv !== 'false') invalid('UHLP_UNSAFE_PROCESS_SANDBOXES', 'true or false', unsafeEnv);
  const unsafeProcessSandboxes = flags['unsafe-process-sandboxes'] === true || unsafeEnv === 'true' || (mode.devMode && unsafeEnv !== 'false');

  const llmBaseUrl = env.UHLP_LLM_BASE_URL || undefined;
  if (llmBaseUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(llmBaseUrl)) invalid('UHLP_LLM_BASE_URL', 'an http(s) URL', llmBaseUrl);
  const embeddingsBaseUrl = env.UHLP_EMBEDDINGS_BASE_URL || llmBaseUrl;
  if (env.UHLP_EMBEDDINGS_BASE_URL && !/^https?:\/\/[^\s]+$/.test(env.UHLP_EMBEDDINGS_BASE_URL)) invalid('UHLP_EMBEDDINGS_BASE_URL', 'an http(s) URL', env.UHLP_EMBEDDINGS_BASE_URL);
  if (env.UHLP_EMBEDDINGS_MODEL && embeddingsBaseUrl === undefined) invalid('UHLP_EMBEDDINGS_MODEL', 'set with UHLP_EMBEDDINGS_BASE_URL or UHLP_LLM_BASE_URL', env.UHLP_EMBEDDINGS_MODEL);
  const embeddingsKey = env.UHLP_EMBEDDINGS_API_KEY || env.UHLP_LLM_API_KEY || undefined;
  const llm: LlmConfig = Object.freeze({
    ...(env.UHLP_EMBEDDINGS_MODEL && embeddingsBaseUrl !== undefined
      ? { embeddings: Object.freeze({ baseUrl: embeddingsBaseUrl, model: env.UHLP_EMBEDDINGS_MODEL, ...(embeddingsKey !== undefined ? { apiKey: embeddingsKey } : {}) }) }
      : {}),
    ...(llmBaseUrl !== undefined ? { baseUrl: llmBaseUrl } : {}),
    ...(env.UHLP_LLM_API_KEY ? { apiKey: env.UHLP_LLM_API_KEY } : {}),
    ...(env.UHLP_LLM_MODEL ? { model: env.UHLP_LLM_MODEL } : {}),
    ...scriptedAnswers(env, llmBaseUrl, registry === 'git' ? definitionsDir : undefined),
    stream: env.UHLP_LLM_STREAM ? oneOf('UHLP_LLM_STREAM', env.UHLP_LLM_STREAM, ['true', 'false'] as const) === 'true' : false,
    structuredOutput: env.UHLP_LLM_STRUCTURED_OUTPUT ? oneOf('UHLP_LLM_STRUCTURED_OUTPUT', env.UHLP_LLM_STRUCTURED_OUTPUT, STRUCTURED_OUTPUT_MODES) : 'json_schema',
    timeoutMs: envInt('UHLP_LLM_TIMEOUT_MS', 60_000, 100, 600_000),
    maxRetries: envInt('UHLP_LLM_MAX_RETRIES', 3, 0, 10),
    appAllowPrivate: hostPortList(env, 'UHLP_LLM_ALLOW_PRIVATE'),
    models: Object.freeze(env.UHLP_LLM_MODELS ? (parseModelMap(env.UHLP_LLM_MODELS) ?? invalid('UHLP_LLM_MODELS', 'comma-separated name=model pairs', env.UHLP_LLM_MODELS)) : {}),
  });

  const publicUrl = env.UHLP_PUBLIC_URL ? env.UHLP_PUBLIC_URL.replace(/\/+$/, '') : undefined;
  if (publicUrl !== undefined && !/^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(publicUrl)) invalid('UHLP_PUBLIC_URL', 'an http(s) URL', env.UHLP_PUBLIC_URL!);
  return Object.freeze({
    registry,
    namespaces: Object.freeze([...namespaces]),
    definitionsDir: definitionsDir ? path.resolve(definitionsDir) : '',
    host: host?.raw ?? '127.0.0.1',
    port: port ? integer(port.name, port.raw, 0, 65535) : 8080,
    dataDir: resolvedDataDir,
    driver: driver ? oneOf(driver.name, driver.raw, DRIVERS) : 'process',
    bodyLimitBytes: bodyLimit ? integer(bodyLimit.name, bodyLimit.raw, 1, 1024 * 1024 * 1024) : 1024 * 1024,
    // The answer becomes one string: past 256 MiB it nears V8's longest string.
    maxSandboxResponseBytes: envInt('UHLP_MAX_SANDBOX_RESPONSE_BYTES', 8 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    logLevel: logLevel ? oneOf(logLevel.name, logLevel.raw, LOG_LEVELS) : 'info',
    instanceId,
    devMode: mode.devMode,
    devErrorStacks: stacksEnv === 'true',
    state: state?.raw ?? 'memory',
    statePrefix,
    stateReplicaAcks: Object.freeze({ replicas: envInt('UHLP_STATE_REPLICA_ACKS', 0, 0, 16), timeoutMs: envInt('UHLP_STATE_REPLICA_ACK_TIMEOUT_MS', 1000, 10, 60_000) }),
    ledger: ledger ? oneOf(ledger.name, ledger.raw, ['files', 'off'] as const) : 'files',
    ledgerKey: loadLedgerKey(env),
    ledgerDurability: durability ? oneOf(durability.name, durability.raw, LEDGER_DURABILITIES) : 'async',
    ledgerSegmentBytes: segmentSize,
    ledgerSegmentSeconds: envInt('UHLP_LEDGER_SEGMENT_SECONDS', DEFAULT_SEGMENT_MS / 1000, 1, 604_800),
    // A dev core is a laptop's: it keeps a day of ledger, and never more than 2 GiB of it, unless told otherwise.
    ledgerRetention: Object.freeze(
      retention ? (retention.raw.trim() === 'none' ? {} : parseRetentionSpec(retention.raw, retention.name)) : mode.devMode ? parseRetentionSpec('*=24h/2Gi', 'default') : {},
    ),
    ledgerPruneIntervalSeconds: envInt('UHLP_LEDGER_PRUNE_INTERVAL_SECONDS', 60, 0, 86_400),
    sessionTtlSeconds: sessionTtlSecondsOf(env) ?? 3600,
    idempotencyTtlSeconds: envInt('UHLP_IDEMPOTENCY_TTL_SECONDS', 86400, 1, 30 * 86400),
    reloadIntervalMs: envInt('UHLP_RELOAD_INTERVAL_MS', 1000, 0, 3600_000),
    pullRemote: pull?.raw,
    pullIntervalMs: envInt('UHLP_GIT_PULL_INTERVAL_MS', 30_000, 100, 86400_000),
    spineSocket,
    llm,
    unsafeProcessSandboxes,
    ...(env.UHLP_BWRAP ? { bwrapPath: path.resolve(env.UHLP_BWRAP) } : {}),
    gitSources: gitSourcesConfig(env),
    mcpFederation: mcpFederationConfig(env, resolvedDataDir),
    pods: podsConfig(env),
    sourcesKey: loadSourcesKeyConfig(env),
    ...(publicUrl !== undefined ? { publicUrl } : {}),
    runs: Object.freeze({
      ttlSeconds: envInt('UHLP_RUN_TTL_SECONDS', 7 * 86400, 60, 365 * 86400),
      maxBytes: envInt('UHLP_RUN_MAX_BYTES', 1024 * 1024, 4096, 64 * 1024 * 1024),
    }),
    hostEnv: hostEnvironment(env),
    oracle: Object.freeze({
      enabled: env.UHLP_ORACLE ? oneOf('UHLP_ORACLE', env.UHLP_ORACLE, ['on', 'off'] as const) === 'on' : true,
      ...(env.UHLP_ORACLE_CODEGEN_MODEL ? { codegenModel: env.UHLP_ORACLE_CODEGEN_MODEL } : {}),
      codegenMaxTokens: envInt('UHLP_ORACLE_CODEGEN_MAX_TOKENS', 4096, 256, 200_000),
      intervalMs: envInt('UHLP_ORACLE_INTERVAL_MS', 5000, 50, 3600_000),
      maxComparisons: envInt('UHLP_ORACLE_MAX_COMPARISONS', 8, 1, 1000),
    }),
    console: consoleConfig(env, host?.raw ?? '127.0.0.1'),
    operator: operatorConfig(env, port ? integer(port.name, port.raw, 0, 65535) : 8080),
    tracing: parseTracingConfig(env, invalid),
    settingNames: Object.freeze({ host: host?.name ?? 'default', port: port?.name ?? 'default', pull: pull?.name ?? 'default' }),
  });
}

/**
 * An address or a name `listen` can take: an IPv4 or IPv6 address, or a DNS name
 * whose last label is not all digits (`999.1.1.1` is no address and no name).
 */
function isHostName(raw: string): boolean {
  if (net.isIP(raw) !== 0) return true;
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*\.?$/i.test(raw) || raw.length > 253) return false;
  return !/^\d+$/.test(raw.replace(/\.$/, '').split('.').pop()!);
}

/** The name of the scripted answers file a definitions directory may hold for offline runs. */
export const DEFINITIONS_LLM_ANSWERS = 'llm-answers.yaml';

/** The scripted answers: UHLP_LLM_SCRIPT_FILE, else (no model server) the definitions directory's own file. */
function scriptedAnswers(env: Environment, baseUrl: string | undefined, definitionsDir: string | undefined): { scriptFile?: string; scriptFileSetting?: string } {
  if (env.UHLP_LLM_SCRIPT_FILE) return { scriptFile: path.resolve(env.UHLP_LLM_SCRIPT_FILE), scriptFileSetting: 'UHLP_LLM_SCRIPT_FILE' };
  if (baseUrl !== undefined || definitionsDir === undefined) return {};
  const file = path.resolve(definitionsDir, DEFINITIONS_LLM_ANSWERS);
  return existsSync(file) ? { scriptFile: file, scriptFileSetting: `<definitions-dir>/${DEFINITIONS_LLM_ANSWERS}` } : {};
}

/** What the client commands (`uhlp status`, `stop`, `queues`, `runs`, `optimize`, `mcp token`) read: where a core is. */
export interface ClientConfig {
  /**
   * The core's URL when one is given: `--url`, else `UHLP_URL` (`UHLP_OPERATOR_URL` for a command of
   * the operator listener), with the name it came from.
   * @defaultValue none: the URL the data directory records, else http://127.0.0.1:8080 (8081 for the operator listener)
   */
  readonly url?: { readonly value: string; readonly name: string };
  /** Which of the core's listeners the command talks to (src/core/route-audience.ts). @defaultValue `app` */
  readonly listener: 'app' | 'operator';
  /** The data directory where `uhlp dev` and `uhlp start` record a running core (`runtime.json`). @defaultValue `./.uhlp` (`--data-dir`, `UHLP_DATA_DIR`) */
  readonly dataDir: string;
}

export function loadClientConfig(flags: { url?: string; 'data-dir'?: string }, env: Environment = process.env, listener: 'app' | 'operator' = 'app'): ClientConfig {
  const variable = listener === 'operator' ? 'UHLP_OPERATOR_URL' : 'UHLP_URL';
  const url = flags.url !== undefined ? { value: flags.url, name: '--url' } : env[variable] ? { value: env[variable], name: variable } : undefined;
  if (url !== undefined && !/^https?:\/\/[^\s/]+\/?$/.test(url.value)) invalid(url.name, "the core's base URL, e.g. http://127.0.0.1:8080", url.value);
  const dataDir = flags['data-dir'] ?? (env.UHLP_DATA_DIR || '.uhlp');
  return Object.freeze({ ...(url !== undefined ? { url: Object.freeze({ value: url.value.replace(/\/$/, ''), name: url.name }) } : {}), listener, dataDir: path.resolve(dataDir) });
}

/** The client settings of a command that calls operator routes (`queues`, `optimize`, `mcp token`): the core's operator listener. */
export function loadOperatorClientConfig(flags: { url?: string; 'data-dir'?: string }, env: Environment = process.env): ClientConfig {
  return loadClientConfig(flags, env, 'operator');
}

function operatorConfig(env: NodeJS.ProcessEnv, corePort: number): OperatorConfig {
  const host = env.UHLP_OPERATOR_HOST || '127.0.0.1';
  if (!isHostName(host)) invalid('UHLP_OPERATOR_HOST', 'an IP address or a host name', host);
  const hosts = (env.UHLP_OPERATOR_HOSTS ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  // Compared with the Host header's name part as browsers send it: lower case, no port, no brackets.
  for (const name of hosts) if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(name)) invalid('UHLP_OPERATOR_HOSTS', 'comma-separated host names in lower case, without a port', name);
  return Object.freeze({
    host,
    // Beside the app port by default, so two cores on one machine with ports a few apart do not meet.
    port: env.UHLP_OPERATOR_PORT ? integer('UHLP_OPERATOR_PORT', env.UHLP_OPERATOR_PORT, 0, 65535) : corePort === 0 || corePort === 65535 ? 0 : corePort + 1,
    hosts: Object.freeze(hosts),
  });
}

function consoleConfig(env: NodeJS.ProcessEnv, coreHost: string): ConsoleConfig {
  const sandboxUrl = env.UHLP_CONSOLE_SANDBOX_URL ? env.UHLP_CONSOLE_SANDBOX_URL.replace(/\/+$/, '') : undefined;
  // An origin: a browser compares it with the messages' origin, so no path may follow.
  if (sandboxUrl !== undefined && !/^https?:\/\/[^\s/?#]+$/.test(sandboxUrl)) invalid('UHLP_CONSOLE_SANDBOX_URL', 'an http(s) origin (scheme, host, optional port; no path)', env.UHLP_CONSOLE_SANDBOX_URL!);
  const sandboxHost = env.UHLP_CONSOLE_SANDBOX_HOST || coreHost;
  if (sandboxHost.trim() === '') invalid('UHLP_CONSOLE_SANDBOX_HOST', 'a host name or address', sandboxHost);
  const tokensFile = env.UHLP_CONSOLE_TOKENS_FILE || undefined;
  const traceUrlTemplate = env.UHLP_TRACE_URL_TEMPLATE || undefined;
  if (traceUrlTemplate !== undefined && !/^https?:\/\/[^\s]*\{traceId\}[^\s]*$/.test(traceUrlTemplate)) {
    invalid('UHLP_TRACE_URL_TEMPLATE', 'an http(s) URL with {traceId} in it', traceUrlTemplate);
  }
  return Object.freeze({
    enabled: env.UHLP_CONSOLE ? oneOf('UHLP_CONSOLE', env.UHLP_CONSOLE, ['on', 'off'] as const) === 'on' : true,
    tokens: tokensFile !== undefined ? readConsoleTokens(path.resolve(tokensFile), 'UHLP_CONSOLE_TOKENS_FILE') : Object.freeze([]),
    sandboxHost,
    sandboxPort: env.UHLP_CONSOLE_SANDBOX_PORT ? integer('UHLP_CONSOLE_SANDBOX_PORT', env.UHLP_CONSOLE_SANDBOX_PORT, 0, 65535) : 0,
    ...(sandboxUrl !== undefined ? { sandboxUrl } : {}),
    journalSize: env.UHLP_TURN_JOURNAL_SIZE ? integer('UHLP_TURN_JOURNAL_SIZE', env.UHLP_TURN_JOURNAL_SIZE, 0, 100_000) : 1000,
    ...(traceUrlTemplate !== undefined ? { traceUrlTemplate } : {}),
  });
}

/** The key prefix of the runtime state (`UHLP_STATE_PREFIX`), shared by the core and `uhlp fn`. */
function statePrefixOf(env: Environment): string {
  const statePrefix = env.UHLP_STATE_PREFIX ?? 'uhlp';
  if (!/^[A-Za-z0-9:_-]{1,64}$/.test(statePrefix)) invalid('UHLP_STATE_PREFIX', 'up to 64 letters, digits, ":", "_" or "-"', statePrefix);
  return statePrefix;
}

/** `UHLP_SESSION_TTL_SECONDS`, when set: the core's session life, and the one `uhlp ledger prune` assumes. */
function sessionTtlSecondsOf(env: Environment): number | undefined {
  return env.UHLP_SESSION_TTL_SECONDS ? integer('UHLP_SESSION_TTL_SECONDS', env.UHLP_SESSION_TTL_SECONDS, 1, 30 * 86400) : undefined;
}

/** What `uhlp fn` reads of the environment: the cores' runtime state (`--state` wins over `UHLP_STATE`) and its key prefix. */
export interface StateTarget {
  /** `memory`, a `redis://` URL, or anything the command refuses; undefined when neither is set. */
  readonly state: string | undefined;
  readonly keyPrefix: string;
}

export function loadStateTarget(flag: string | undefined, env: Environment = process.env): StateTarget {
  return Object.freeze({ state: flag ?? env.UHLP_STATE, keyPrefix: statePrefixOf(env) });
}

/** What `uhlp ledger prune` reads of the environment beside the ledger key. */
export interface LedgerPruneEnv {
  /** The cores' session life (`UHLP_SESSION_TTL_SECONDS`), seconds, when set. */
  readonly sessionTtlSeconds: number | undefined;
}

export function loadLedgerPruneEnv(env: Environment = process.env): LedgerPruneEnv {
  return Object.freeze({ sessionTtlSeconds: sessionTtlSecondsOf(env) });
}

/** What `uhlp operator` reads of the environment. */
export interface OperatorEnv {
  /** `UHLP_LOG_LEVEL=debug` logs at debug; anything else at info. */
  readonly debug: boolean;
  /** Runner images of the warm pods (`UHLP_IMAGE_JIT`, `UHLP_IMAGE_LLM`, `UHLP_IMAGE_MCP`, as for the core); flags win. */
  readonly images: Readonly<{ jit?: string; llm?: string; mcp?: string }>;
}

export function loadOperatorEnv(env: Environment = process.env): OperatorEnv {
  return Object.freeze({ debug: env.UHLP_LOG_LEVEL === 'debug', images: runnerImages(env) });
}

const IMAGE_REFERENCE = /^[a-z0-9][a-z0-9._/:@-]{0,254}$/i;

/** Runner images from `UHLP_IMAGE_JIT`, `UHLP_IMAGE_LLM` and `UHLP_IMAGE_MCP` (the mcp-host), each an image reference. */
function runnerImages(env: Environment): Readonly<{ jit?: string; llm?: string; mcp?: string }> {
  const images: { jit?: string; llm?: string; mcp?: string } = {};
  for (const [name, runner] of [['UHLP_IMAGE_JIT', 'jit'], ['UHLP_IMAGE_LLM', 'llm'], ['UHLP_IMAGE_MCP', 'mcp']] as const) {
    const value = env[name] || undefined;
    if (value === undefined) continue;
    if (!IMAGE_REFERENCE.test(value)) invalid(name, 'an image reference', value);
    images[runner] = value;
  }
  return Object.freeze(images);
}

function podsConfig(env: Environment): PodsConfig {
  const mcpUrl = env.UHLP_MCP_URL || undefined;
  if (mcpUrl !== undefined && !/^https?:\/\/[^\s/]+\/\S*$/.test(mcpUrl)) invalid('UHLP_MCP_URL', 'an http(s) URL with a path, e.g. http://10.96.0.20:8080/mcp', mcpUrl);
  const namespace = env.UHLP_POD_NAMESPACE || undefined;
  if (namespace !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace)) invalid('UHLP_POD_NAMESPACE', 'a namespace name (DNS label)', namespace);
  const corePod = env.UHLP_CORE_POD || undefined;
  if (corePod !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\/[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$/.test(corePod)) {
    invalid('UHLP_CORE_POD', 'a pod as <namespace>/<name>', corePod);
  }
  const claimAhead = env.UHLP_POD_CLAIM_AHEAD ? integer('UHLP_POD_CLAIM_AHEAD', env.UHLP_POD_CLAIM_AHEAD, 0, 16) : DEFAULT_CLAIM_AHEAD;
  const volume = env.UHLP_MCP_PACKAGE_VOLUME || undefined;
  const packageVolume = volume === undefined ? undefined : parsePackageVolume(volume);
  if (volume !== undefined && packageVolume === undefined) invalid('UHLP_MCP_PACKAGE_VOLUME', 'pvc:<claim name> or hostPath:<absolute directory>', volume);
  return Object.freeze({
    ...(mcpUrl ? { mcpUrl } : {}),
    ...(namespace ? { namespace } : {}),
    ...(corePod ? { corePod } : {}),
    claimAhead,
    images: runnerImages(env),
    ...(packageVolume ? { packageVolume } : {}),
  });
}

/** `pvc:<claim>` or `hostPath:<absolute dir>`, as UHLP_MCP_PACKAGE_VOLUME and the operator's flag spell a package cache volume. */
export function parsePackageVolume(value: string): { claimName: string } | { hostPath: string } | undefined {
  const claim = /^pvc:([a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?)$/.exec(value);
  if (claim) return Object.freeze({ claimName: claim[1]! });
  const host = /^hostPath:(\/\S*)$/.exec(value);
  // An absolute, normalized directory: no `..` that would leave what the operator meant to share.
  if (host && path.posix.normalize(host[1]!) === host[1]) return Object.freeze({ hostPath: host[1]! });
  return undefined;
}

const HOST_PORT = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)):(\d{1,5})$/;

/** A comma-separated list of host:port pairs ([v6]:port for IPv6), lower case. */
function hostPortList(env: Environment, variable: string): readonly string[] {
  const list: string[] = [];
  for (const raw of (env[variable] ?? '').split(',')) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    const match = HOST_PORT.exec(entry);
    const port = Number(match?.[3]);
    if (!match || (match[1] !== undefined && !net.isIPv6(match[1])) || port < 1 || port > 65535) {
      invalid(variable, 'comma-separated host:port pairs ([v6]:port for IPv6)', raw.trim());
    }
    list.push(entry);
  }
  return Object.freeze(list);
}

/** A comma-separated list of environment variable names. */
function variableNames(env: Environment, variable: string): readonly string[] {
  const names = (env[variable] ?? '').split(',').map((name) => name.trim()).filter(Boolean);
  for (const name of names) if (!VARIABLE_NAME.test(name)) invalid(variable, 'comma-separated environment variable names', name);
  return names;
}

export interface McpFederationConfig {
  /** YAML file of the community servers every app may be granted (Helm: mcp.community). @defaultValue none (`UHLP_MCP_COMMUNITY_FILE`) */
  readonly communityFile?: string;
  /**
   * YAML or JSON file of the apps' secrets (web credentials, remote MCP servers' headers), each under its
   * owner: `{apps: {<appId>: {<secret>: {<key>: value}}}, community: {...}}`; re-read when it changes.
   * `UHLP_MCP_SECRETS_FILE`, its earlier name, still works for this release (with a warning).
   * @defaultValue none (`UHLP_SECRETS_FILE`)
   */
  readonly secretsFile?: string;
  /** Set when the secrets file was named by its earlier variable: the core warns at start. */
  readonly secretsFileDeprecatedName?: boolean;
  /** host:port pairs remote MCP servers may resolve to although private. @defaultValue [] (`UHLP_MCP_ALLOW_PRIVATE`) */
  readonly allowPrivate: readonly string[];
  /** Where npm packages of stdio servers are installed, by integrity. @defaultValue `<dataDir>/mcp-packages` (`UHLP_MCP_PACKAGE_CACHE`) */
  readonly packageCache: string;
  /**
   * The environment npm installs packages with (npm-environment.ts): PATH, HOME and TMPDIR,
   * proxies, the CA variables, `npm_config_*` settings, the machine's global npmrc, and the
   * variables `UHLP_MCP_NPM_ENV` names; never the core's own secrets.
   */
  readonly npmEnvironment: Readonly<Record<string, string>>;
}

/** A variable name `UHLP_MCP_NPM_ENV` may list. */
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function mcpFederationConfig(env: Environment, dataDir: string): McpFederationConfig {
  const file = (variable: string): string | undefined => {
    const value = env[variable] ? path.resolve(env[variable]!) : undefined;
    if (value !== undefined && !existsSync(value)) invalid(variable, 'an existing file', env[variable]!);
    return value;
  };
  const communityFile = file('UHLP_MCP_COMMUNITY_FILE');
  if (env.UHLP_SECRETS_FILE && env.UHLP_MCP_SECRETS_FILE) invalid('UHLP_MCP_SECRETS_FILE', 'unset: it is the earlier name of UHLP_SECRETS_FILE, which is set', env.UHLP_MCP_SECRETS_FILE);
  const deprecated = !env.UHLP_SECRETS_FILE && Boolean(env.UHLP_MCP_SECRETS_FILE);
  const secretsFile = file(deprecated ? 'UHLP_MCP_SECRETS_FILE' : 'UHLP_SECRETS_FILE');
  return Object.freeze({
    ...(communityFile !== undefined ? { communityFile } : {}),
    ...(secretsFile !== undefined ? { secretsFile } : {}),
    ...(deprecated ? { secretsFileDeprecatedName: true } : {}),
    allowPrivate: hostPortList(env, 'UHLP_MCP_ALLOW_PRIVATE'),
    packageCache: env.UHLP_MCP_PACKAGE_CACHE ? path.resolve(env.UHLP_MCP_PACKAGE_CACHE) : path.join(dataDir, 'mcp-packages'),
    npmEnvironment: Object.freeze(npmEnvironment(env, { extra: variableNames(env, 'UHLP_MCP_NPM_ENV') })),
  });
}

function gitSourcesConfig(env: Environment): GitSourcesConfig {
  const allowPrivate = hostPortList(env, 'UHLP_GIT_ALLOW_PRIVATE');
  const caFile = env.UHLP_GIT_CA_FILE ? path.resolve(env.UHLP_GIT_CA_FILE) : undefined;
  if (caFile !== undefined && !existsSync(caFile)) invalid('UHLP_GIT_CA_FILE', 'an existing PEM file', env.UHLP_GIT_CA_FILE!);
  return Object.freeze({ allowPrivate, ...(caFile !== undefined ? { caFile } : {}) });
}
