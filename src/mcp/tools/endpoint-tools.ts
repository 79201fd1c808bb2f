/**
 * `core.linux.executeCommand` and `tool.web.fetch`: checked here against the
 * app's capabilities, then run by the std-body host through the endpoint spine
 * (`tool.shell.exec/cap.std.shell`, `tool.web.fetch/cap.std.web.fetch`). The
 * endpoint's outcome is answered as structured content, `rejected` ones
 * included (a non-zero exit is a result, not a failure of the tool); only the
 * guarded fetch's refusals become UHLP_CAPABILITY_DENIED, because they are the
 * web capability speaking from a later redirect hop or a resolved address.
 */
import { Type } from '@sinclair/typebox';
import { UhlpError } from '../../shared/errors.js';
import { bareHost, hostMatches } from '../../shared/host-pattern.js';
import { SHELL_AFFORDANCE, SHELL_CAPABILITY } from '../../std-body/shell-exec.js';
import { WEB_AFFORDANCE, WEB_CAPABILITY } from '../../std-body/web-fetch.js';
import { capabilityDenied, checkShellArgv, checkWebRequest, requireCapability, shellEnvironment, shellLimits } from '../capability-guard.js';
import type { EndpointInvoker, ToolServices } from '../tool-definition.js';
import { defineTool } from '../tool-definition.js';
import { resolveWebCredentials } from '../../secrets/web-credentials.js';
import { NO_SECRETS } from '../../secrets/secret-store.js';

/** Time the spine gives the host beyond the command's or fetch's own timeout, to report it. */
const ENDPOINT_GRACE_MS = 5_000;

export const executeCommand = defineTool({
  name: 'core.linux.executeCommand',
  description:
    "Runs a program by argv (no shell) in the execution's scratch directory, if an argv prefix of the shell capability allows it.",
  capability: 'shell',
  inputSchema: Type.Object(
    {
      argv: Type.Array(Type.String(), { minItems: 1, maxItems: 1024, description: 'Program and arguments; never interpreted by a shell.' }),
      timeoutMs: Type.Optional(Type.Integer({ minimum: 1, description: "Clamped to the capability's timeoutMs." })),
    },
    { additionalProperties: false },
  ),
  async run(args, { grant, services, signal }) {
    const shell = requireCapability(grant.capabilities, 'shell');
    checkShellArgv(shell, args.argv);
    const limits = shellLimits(shell, args.timeoutMs);
    const payload = {
      argv: args.argv,
      cwd: await services.scratchDir(grant),
      env: shellEnvironment(shell, services.hostEnv),
      ...limits,
    };
    const result = await spine(services).invoke(SHELL_AFFORDANCE, SHELL_CAPABILITY, payload, {
      timeoutMs: limits.timeoutMs + ENDPOINT_GRACE_MS,
      signal,
    });
    const observation = asRecord(result.observation);
    return {
      content: {
        outcome: result.outcome,
        ...(result.reason !== undefined ? { reason: result.reason } : {}),
        exitCode: typeof observation['exitCode'] === 'number' ? observation['exitCode'] : null,
        stdout: typeof observation['stdout'] === 'string' ? observation['stdout'] : '',
        stderr: typeof observation['stderr'] === 'string' ? observation['stderr'] : '',
        stdoutTruncated: observation['stdoutTruncated'] === true,
        stderrTruncated: observation['stderrTruncated'] === true,
        ...(typeof observation['durationMs'] === 'number' ? { durationMs: observation['durationMs'] } : {}),
        ...(typeof observation['message'] === 'string' ? { message: observation['message'] } : {}),
      },
    };
  },
});

export const webFetch = defineTool({
  name: 'tool.web.fetch',
  description:
    'Fetches an http(s) URL from an allowed host. Loopback, private, link-local and metadata addresses are refused after DNS resolution and on every redirect.',
  capability: 'web',
  inputSchema: Type.Object(
    {
      url: Type.String({ minLength: 1, maxLength: 8192 }),
      method: Type.Optional(Type.String({ pattern: '^[A-Za-z]{1,16}$', default: 'GET' })),
      headers: Type.Optional(Type.Record(Type.String(), Type.String())),
      body: Type.Optional(Type.String()),
      timeoutMs: Type.Optional(Type.Integer({ minimum: 1, description: "Clamped to the capability's timeoutMs." })),
      allowHosts: Type.Optional(
        Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
          minItems: 1,
          maxItems: 64,
          description:
            "Narrows the web capability's allowHosts for this fetch: the URL and every redirect hop must match both lists (a cs-js function's manifest http.allowHosts). It never allows a host the capability does not.",
        }),
      ),
    },
    { additionalProperties: false },
  ),
  async run(args, { grant, services, signal }) {
    const web = requireCapability(grant.capabilities, 'web');
    let url: URL;
    try {
      url = new URL(args.url);
    } catch {
      throw new UhlpError('UHLP_MCP_INVALID_ARGUMENTS', 'url is not a valid absolute URL', { field: 'url' });
    }
    const checked = checkWebRequest(web, url, args.method ?? 'GET', args.timeoutMs);
    if (args.allowHosts !== undefined && (url.protocol === 'http:' || url.protocol === 'https:') && !args.allowHosts.some((pattern) => hostMatches(url.hostname, pattern))) {
      throw capabilityDenied('web', 'allowHosts', `host ${bareHost(url.hostname)} is not in the allowHosts this fetch was narrowed to`, { host: bareHost(url.hostname), narrowed: true });
    }
    // The app's credentials for this fetch, read now: the std-body host adds each to the hops it matches,
    // after every check, and the script never sees one.
    const { credentials, uses } = resolveWebCredentials(grant.appId, web.inject, services.secrets ?? NO_SECRETS, { url, method: checked.method });
    const payload = {
      url: url.href,
      method: checked.method,
      ...(args.headers !== undefined ? { headers: args.headers } : {}),
      ...(credentials.length > 0 ? { inject: credentials } : {}),
      ...(args.body !== undefined ? { body: args.body } : {}),
      timeoutMs: checked.timeoutMs,
      maxBodyBytes: checked.maxBodyBytes,
      // The policy travels with the call: the host applies it to every redirect hop and resolved address,
      // the caller's narrower list too, so a redirect cannot take the fetch to a host the caller gave up.
      allowHosts: web.allowHosts,
      ...(args.allowHosts !== undefined ? { narrowHosts: args.allowHosts } : {}),
      methods: web.methods,
      allowPrivate: web.allowPrivate,
    };
    const result = await spine(services).invoke(WEB_AFFORDANCE, WEB_CAPABILITY, payload, { timeoutMs: checked.timeoutMs + ENDPOINT_GRACE_MS, signal });
    const observation = asRecord(result.observation);
    if (result.outcome === 'rejected' && result.reason === 'refused') {
      const code = typeof observation['code'] === 'string' ? observation['code'] : 'refused';
      throw capabilityDenied('web', REFUSAL_RULES[code] ?? 'address', typeof observation['message'] === 'string' ? observation['message'] : 'refused by the web capability', {
        refusal: code,
        ...asRecord(observation['details']),
        capability: 'web',
      });
    }
    if (result.outcome === 'rejected') {
      return {
        content: {
          outcome: 'rejected',
          reason: result.reason ?? 'network_error',
          status: null,
          headers: {},
          body: '',
          ...(typeof observation['code'] === 'string' ? { code: observation['code'] } : {}),
          ...(typeof observation['message'] === 'string' ? { message: observation['message'] } : {}),
        },
      };
    }
    const injected = Array.isArray(observation['injected']) ? (observation['injected'] as unknown[]) : [];
    return {
      ...(injected.length > 0 ? { secrets: injected.flatMap((index) => (typeof index === 'number' && uses[index] !== undefined ? [uses[index]] : [])) } : {}),
      content: {
        outcome: 'applied',
        status: observation['status'],
        headers: observation['headers'] ?? {},
        body: observation['body'] ?? '',
        bodyEncoding: observation['bodyEncoding'] ?? 'utf8',
        truncated: observation['truncated'] === true,
        url: observation['url'] ?? url.href,
        redirects: observation['redirects'] ?? [],
      },
    };
  },
});

const REFUSAL_RULES: Record<string, string> = {
  UHLP_WEB_HOST_NOT_ALLOWED: 'allowHosts',
  UHLP_WEB_METHOD_NOT_ALLOWED: 'methods',
  UHLP_WEB_ADDRESS_NOT_ALLOWED: 'address',
};

function spine(services: ToolServices): EndpointInvoker {
  if (services.spine === undefined) {
    throw new UhlpError('UHLP_ENDPOINT_UNAVAILABLE', 'this core runs no endpoint spine, so no endpoint host can serve the call');
  }
  return services.spine;
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
