/**
 * cs-js functions over MCP. For agents (capability `functions`):
 * `core.fn.publish` (two files in, the canonical bundle stored, the next
 * version made, optionally an alias moved), `core.fn.versions` and
 * `core.fn.alias.set`, limited to the namespaces the capability lists. For the
 * csjs runner (every app): `core.fn.bundle` answers a bundle of the
 * execution's own app by sha256, and `core.fn.log` keeps the log lines of the
 * execution's own activation. The tenant is always the grant's app: no call
 * can reach another app's functions.
 */
import { Type } from '@sinclair/typebox';
import { topicMatches } from '../../contract/cs-bundle/function-manifest.js';
import { buildBundle } from '../../contract/cs-bundle/function-bundle.js';
import { checkAlias, checkSha256, parseFunctionName } from '../../functions/function-ref.js';
import { UhlpError } from '../../shared/errors.js';
import type { FunctionsCapability } from '../../apps/schema/app-definition-schema.js';
import type { FunctionStore } from '../../functions/function-store.js';
import { capabilityDenied, requireCapability } from '../capability-guard.js';
import type { ToolServices } from '../tool-definition.js';
import { defineTool } from '../tool-definition.js';

/** How long activation logs are kept after their last line. */
export const ACTIVATION_LOG_TTL_MS = 7 * 24 * 3600 * 1000;
/** Log lines one activation may send in one call. */
const MAX_LOG_LINES = 2000;

const FunctionNameArg = Type.String({ minLength: 3, maxLength: 127, description: 'namespace/function' });

function functions(services: ToolServices): FunctionStore {
  if (services.functions === undefined) throw new UhlpError('UHLP_STATE_UNAVAILABLE', 'this core has no function store');
  return services.functions;
}

function checkNamespace(capability: FunctionsCapability, namespace: string): void {
  if (!capability.namespaces.includes('*') && !capability.namespaces.includes(namespace)) {
    throw capabilityDenied('functions', 'namespaces', `namespace ${namespace} is not in the functions capability`, { namespace });
  }
}

export const fnPublish = defineTool({
  name: 'core.fn.publish',
  description:
    'Publishes a cs-js function version of this app: function.js (an ES module whose handler export takes (event, ctx)) and manifest.json (cs.function.script.v1). Answers the bundle sha256 and the version; publishing the newest bundle again makes no new version.',
  capability: 'functions',
  inputSchema: Type.Object(
    {
      function: FunctionNameArg,
      functionJs: Type.String({ maxLength: 1_048_576 }),
      manifestJson: Type.String({ maxLength: 65_536 }),
      alias: Type.Optional(Type.String({ maxLength: 63, description: 'Point this alias at the version too (prod, canary).' })),
      dryRun: Type.Optional(Type.Boolean({ description: 'Build and check the bundle, answer its sha256, store nothing.' })),
    },
    { additionalProperties: false },
  ),
  async run(args, { grant, services }) {
    const capability = requireCapability(grant.capabilities, 'functions');
    const name = parseFunctionName(args.function);
    checkNamespace(capability, name.namespace);
    const alias = args.alias === undefined ? undefined : checkAlias(args.alias);
    const bundle = buildBundle({ functionJs: args.functionJs, manifestJson: args.manifestJson });
    if (args.dryRun === true) return { content: { sha256: bundle.sha256, bytes: bundle.bytes.length, dryRun: true } };
    const store = functions(services);
    await store.putBundle(grant.appId, bundle.sha256, bundle.bytes);
    const version = await store.publishVersion(grant.appId, name.namespace, name.function, bundle.sha256);
    if (alias !== undefined) await store.setAlias(grant.appId, name.namespace, name.function, alias, version.version);
    return { content: { function: args.function, sha256: bundle.sha256, version: version.version, created: version.created, ...(alias !== undefined ? { alias } : {}) } };
  },
});

export const fnVersions = defineTool({
  name: 'core.fn.versions',
  description: "Lists a cs-js function's versions (oldest first) and aliases.",
  capability: 'functions',
  inputSchema: Type.Object({ function: FunctionNameArg }, { additionalProperties: false }),
  async run(args, { grant, services }) {
    const capability = requireCapability(grant.capabilities, 'functions');
    const name = parseFunctionName(args.function);
    checkNamespace(capability, name.namespace);
    const store = functions(services);
    const versions = await store.listVersions(grant.appId, name.namespace, name.function);
    const aliases = await store.listAliases(grant.appId, name.namespace, name.function);
    return { content: { function: args.function, versions: versions.map((v) => ({ ...v })), aliases } };
  },
});

export const fnAliasSet = defineTool({
  name: 'core.fn.alias.set',
  description: 'Points an alias (prod, canary) of a cs-js function at one of its versions.',
  capability: 'functions',
  inputSchema: Type.Object({ function: FunctionNameArg, alias: Type.String({ maxLength: 63 }), version: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }),
  async run(args, { grant, services }) {
    const capability = requireCapability(grant.capabilities, 'functions');
    const name = parseFunctionName(args.function);
    checkNamespace(capability, name.namespace);
    const alias = checkAlias(args.alias);
    await functions(services).setAlias(grant.appId, name.namespace, name.function, alias, args.version);
    return { content: { function: args.function, alias, version: args.version } };
  },
});

export const fnBundle = defineTool({
  name: 'core.fn.bundle',
  description: 'The canonical tar (base64) of one cs-js bundle of this app, by sha256. Used by the csjs runner.',
  inputSchema: Type.Object({ sha256: Type.String({ maxLength: 64 }) }, { additionalProperties: false }),
  async run(args, { grant, services }) {
    const sha256 = checkSha256(args.sha256);
    const bytes = await functions(services).getBundle(grant.appId, sha256);
    if (bytes === undefined) throw new UhlpError('UHLP_FN_NOT_FOUND', `app ${grant.appId} has no bundle ${sha256.slice(0, 12)}`, { sha256 });
    return { content: { sha256, bundle: bytes.toString('base64') } };
  },
});

export const fnLog = defineTool({
  name: 'core.fn.log',
  description: "Keeps log lines of this execution's cs-js activation (read with `uhlp fn logs <activation>`). Used by the csjs runner.",
  inputSchema: Type.Object(
    {
      lines: Type.Array(
        Type.Object(
          { level: Type.Union([Type.Literal('info'), Type.Literal('warn'), Type.Literal('error')]), ts: Type.Number(), msg: Type.String({ maxLength: 20_000 }) },
          { additionalProperties: false },
        ),
        { maxItems: MAX_LOG_LINES },
      ),
    },
    { additionalProperties: false },
  ),
  async run(args, { grant, services }) {
    if (args.lines.length === 0) return { content: { kept: 0 } };
    // The activation is the execution: a caller can only ever add to its own logs.
    const chunk = JSON.stringify({ app: grant.appId, component: grant.componentId, lines: args.lines });
    await functions(services).appendLogs(grant.requestId, chunk, ACTIVATION_LOG_TTL_MS);
    return { content: { kept: args.lines.length, activation: grant.requestId } };
  },
});

/** Publishes onto the app's queues; connected by the core when it has queues. */
export interface CodeqPublisher {
  publish(appId: string, topic: string, payload: unknown): Promise<{ messageId: string }>;
}

export const codeqPublish = defineTool({
  name: 'core.codeq.publish',
  description: 'Publishes a JSON payload onto a queue topic the codeq capability allows.',
  capability: 'codeq',
  inputSchema: Type.Object({ topic: Type.String({ minLength: 1, maxLength: 200 }), payload: Type.Unknown() }, { additionalProperties: false }),
  async run(args, { grant, services }) {
    const codeq = requireCapability(grant.capabilities, 'codeq');
    if (!codeq.publishTopics.some((pattern) => topicMatches(args.topic, pattern))) {
      throw capabilityDenied('codeq', 'publishTopics', `topic ${args.topic.slice(0, 200)} matches none of the codeq capability's publishTopics`, { topic: args.topic.slice(0, 200) });
    }
    if (services.codeq === undefined) throw new UhlpError('UHLP_CODEQ_UNAVAILABLE', 'this core has no queue publisher connected');
    return { content: await services.codeq.publish(grant.appId, args.topic, args.payload ?? null) };
  },
});
