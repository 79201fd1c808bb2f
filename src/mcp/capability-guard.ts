/**
 * The checks an app's capabilities impose on tool calls, as pure functions.
 * The core runs them before anything is invoked; each refusal is a
 * UHLP_CAPABILITY_DENIED error whose details name the capability and the rule
 * that refused (`absent`, `allow`, `allowHosts`, `methods`, `prefixes`, `ops`,
 * `models`, `write`, `forbidden`, `protected`), so callers can count it and
 * write it to evidence.
 */
import type {
  CapabilitiesSpec,
  KvCapability,
  KvOperation,
  LlmCapability,
  ShellCapability,
  StateCapability,
  WebCapability,
} from '../apps/schema/app-definition-schema.js';
import { protectedPathReason } from '../apps/protected-paths.js';
import { UhlpError } from '../shared/errors.js';
import { bareHost, hostMatches } from '../shared/host-pattern.js';
import { compilePathGlob, type PathMatcher } from '../shared/path-glob.js';

export type CapabilityName = keyof CapabilitiesSpec;

export function capabilityDenied(capability: CapabilityName, rule: string, message: string, details: Record<string, unknown> = {}): UhlpError {
  return new UhlpError('UHLP_CAPABILITY_DENIED', message, { capability, rule, ...details });
}

/** The app's capability, or a refusal when the app does not have it. */
export function requireCapability<K extends CapabilityName>(capabilities: CapabilitiesSpec, name: K): NonNullable<CapabilitiesSpec[K]> {
  const capability = capabilities[name];
  if (capability === undefined) throw capabilityDenied(name, 'absent', `the app has no ${name} capability`);
  return capability as NonNullable<CapabilitiesSpec[K]>;
}

/** argv runs when one allowed prefix equals its first entries, word for word. */
export function checkShellArgv(shell: ShellCapability, argv: readonly string[]): void {
  const allowed = shell.allow.some((prefix) => prefix.length <= argv.length && prefix.every((word, index) => argv[index] === word));
  if (!allowed) {
    throw capabilityDenied('shell', 'allow', `argv ${JSON.stringify(argv.slice(0, 4))} matches no allowed prefix`, { argv0: argv[0] });
  }
}

export interface ShellLimits {
  readonly timeoutMs: number;
  readonly maxStdoutBytes: number;
  readonly maxStderrBytes: number;
}

/** The capability's limits; a call may ask for a shorter timeout, never a longer one. */
export function shellLimits(shell: ShellCapability, requestedTimeoutMs?: number): ShellLimits {
  return {
    timeoutMs: clamp(requestedTimeoutMs, shell.timeoutMs),
    maxStdoutBytes: shell.maxStdoutBytes,
    maxStderrBytes: shell.maxStderrBytes,
  };
}

/** The listed variables that the core's environment has; nothing else. */
export function shellEnvironment(shell: ShellCapability, hostEnv: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of shell.env) {
    const value = hostEnv[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

export interface WebCheck {
  readonly method: string;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number;
}

/**
 * Checks the first hop of a fetch: method, then host. Only http(s) URLs are
 * host-checked here: any other scheme is answered `unsupported_scheme` by the
 * endpoint without touching the network. Later hops and resolved addresses are
 * checked by the guarded fetch against the same policy.
 */
export function checkWebRequest(web: WebCapability, url: URL, method: string, requestedTimeoutMs?: number): WebCheck {
  const upper = method.toUpperCase();
  if (!(web.methods as readonly string[]).includes(upper)) {
    throw capabilityDenied('web', 'methods', `method ${upper} is not allowed by the web capability`, { method: upper });
  }
  if ((url.protocol === 'http:' || url.protocol === 'https:') && !web.allowHosts.some((pattern) => hostMatches(url.hostname, pattern))) {
    throw capabilityDenied('web', 'allowHosts', `host ${bareHost(url.hostname)} is not allowed by the web capability`, { host: bareHost(url.hostname) });
  }
  return { method: upper, timeoutMs: clamp(requestedTimeoutMs, web.timeoutMs), maxBodyBytes: web.maxBodyBytes };
}

/** Checks an operation and a key against the kv capability. */
export function checkKv(kv: KvCapability, op: KvOperation, key: string): void {
  if (!kv.ops.includes(op)) throw capabilityDenied('kv', 'ops', `kv operation ${op} is not allowed`, { op });
  if (!kv.prefixes.some((prefix) => key.startsWith(prefix))) {
    throw capabilityDenied('kv', 'prefixes', `key "${key.slice(0, 64)}" is outside the allowed prefixes`, { op, prefixes: kv.prefixes });
  }
}

export interface LlmCheck {
  readonly model: string;
  readonly maxTokens: number;
}

/** The model (the first listed when none is named) and the token ceiling, clamped to the capability. */
export function checkLlm(llm: LlmCapability, model: string | undefined, requestedMaxTokens?: number): LlmCheck {
  const chosen = model ?? llm.models[0]!;
  if (!llm.models.includes(chosen)) throw capabilityDenied('llm', 'models', `model ${chosen} is not allowed by the llm capability`, { model: chosen });
  return { model: chosen, maxTokens: clamp(requestedMaxTokens, llm.maxTokens) };
}

const matchers = new WeakMap<StateCapability, { write: PathMatcher; forbidden: PathMatcher }>();

/**
 * The capability's globs, compiled once per capability object (one per loaded
 * app). The paths come from sandbox scripts: matching is linear in the path,
 * whatever stars the app's globs hold.
 */
function stateMatchers(state: StateCapability): { write: PathMatcher; forbidden: PathMatcher } {
  let compiled = matchers.get(state);
  if (compiled === undefined) {
    // Wildcards take leading dots (`data/**` covers `data/.cache`); forbidden ignores case, so it wins on any file system.
    const write = compilePathGlob(state.write);
    const forbidden = compilePathGlob(state.forbidden, { ignoreCase: true });
    compiled = { write, forbidden };
    matchers.set(state, compiled);
  }
  return compiled;
}

/**
 * Whether a sandbox may write `appPath` (normalized, app-relative): never a
 * protected file, never a forbidden one, and only what a write glob names.
 */
export function checkStateWrite(state: StateCapability, appPath: string): void {
  const protectedReason = protectedPathReason(appPath);
  if (protectedReason !== undefined) {
    throw capabilityDenied('state', 'protected', `${appPath} is never written from a sandbox: ${protectedReason}`, { path: appPath });
  }
  const { write, forbidden } = stateMatchers(state);
  if (forbidden(appPath)) throw capabilityDenied('state', 'forbidden', `${appPath} matches a forbidden glob of the state capability`, { path: appPath });
  if (!write(appPath)) throw capabilityDenied('state', 'write', `${appPath} matches no write glob of the state capability`, { path: appPath });
}

function clamp(requested: number | undefined, ceiling: number): number {
  return requested === undefined ? ceiling : Math.min(requested, ceiling);
}



/** A queue an app may publish to: `<name>` of its own queues, or `<appId>/<name>`; both spellings of its own queues match. */
export function checkQueuePublish(queue: NonNullable<CapabilitiesSpec['queue']>, appId: string, targetApp: string, name: string): void {
  const allowed = queue.publish.some((entry) => {
    const slash = entry.indexOf('/');
    return slash === -1 ? targetApp === appId && entry === name : entry.slice(0, slash) === targetApp && entry.slice(slash + 1) === name;
  });
  if (!allowed) throw capabilityDenied('queue', 'publish', `queue "${targetApp}/${name}" is not in queue.publish`, { queue: `${targetApp}/${name}` });
}

/** An internal event an app may emit. */
export function checkTriggerEmit(trigger: NonNullable<CapabilitiesSpec['trigger']>, event: string): void {
  if (!trigger.emit.includes(event)) throw capabilityDenied('trigger', 'emit', `event "${event}" is not in trigger.emit`, { event });
}

/** A callback route an app may make URLs for. */
export function checkCallbackCreate(callback: NonNullable<CapabilitiesSpec['callback']>, name: string): void {
  if (!callback.create.includes(name)) throw capabilityDenied('callback', 'create', `callback "${name}" is not in callback.create`, { callback: name });
}
