/**
 * Schemas of what the operator writes: the SandboxPool resource (one per pool an
 * AppDefinition declares) and the status of both resources. Like
 * app-definition-schema.ts, they are the single source of the CRDs in crds/.
 *
 * Replicas of a SandboxPool are its warm sandboxes: `spec.replicas` is the scale
 * subresource's target, so `kubectl scale sandboxpool` and an HPA set how many
 * sandboxes the pool keeps warm. The operator initialises it from the app's
 * `minWarm` and resets it only when the app's `minWarm` itself changes; between
 * such changes it belongs to whoever scales the pool.
 */
import { Type, type Static } from '@sinclair/typebox';
import { PoolSpec } from './app-definition-schema.js';

export const SANDBOX_POOL_KIND = 'SandboxPool';
export const APP_DEFINITION_PLURAL = 'appdefinitions';
export const SANDBOX_POOL_PLURAL = 'sandboxpools';

const NAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

/** A metav1.Condition, the shape `kubectl wait --for=condition=Ready` understands. */
export const Condition = Type.Object({
  type: Type.String({ minLength: 1, maxLength: 316, description: 'Condition type, e.g. Ready.' }),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, description: 'metadata.generation the condition was computed from.' })),
  lastTransitionTime: Type.String({ format: 'date-time', description: 'When status last changed.' }),
  reason: Type.String({ minLength: 1, maxLength: 1024, description: 'CamelCase reason of the last transition.' }),
  message: Type.String({ maxLength: 32768, description: 'Human-readable details.' }),
});
export type Condition = Static<typeof Condition>;

const Conditions = Type.Array(Condition, {
  description: 'Current state; Ready is True when the resource is valid and converged.',
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
});

export const AppDefinitionStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, description: 'metadata.generation the status describes.' })),
  conditions: Type.Optional(Conditions),
  pools: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), { description: 'Names of the SandboxPools the operator keeps for this app.' }),
  ),
});
export type AppDefinitionStatus = Static<typeof AppDefinitionStatus>;

const { name: _poolName, ...poolSettings } = PoolSpec.properties;

/**
 * How a `runner: mcp` pool's sandboxes start their stdio MCP server, as the core
 * resolved it once the server's package was installed: what the operator's warm pods
 * need to start the mcp-host with the server, exactly as the core's own pods do.
 */
export const McpServerLaunchSpec = Type.Object(
  {
    packageKey: Type.String({
      pattern: '^[0-9a-f]{16,128}$',
      description: "The package's directory in the package cache (the hash of its tarball): mounted read-only at /mcp-server, as a subPath of the cache volume.",
    }),
    entry: Type.String({ minLength: 1, maxLength: 1024, pattern: '^[^/]', description: "The server's entry module, relative to the package's directory." }),
    args: Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 64, description: 'Arguments after the entry; {work} stands for the sandbox tree.' }),
    env: Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*=', maxLength: 4096 }), { maxItems: 64, description: 'NAME=value variables of the server process; {work} as in args.' }),
  },
  {
    additionalProperties: false,
    description:
      'runner: mcp: the server its sandboxes run, written by the core once it installed the package (the operator keeps no warm pods before). Not mirrored from the AppDefinition.',
  },
);
export type McpServerLaunchSpec = Static<typeof McpServerLaunchSpec>;

export const SandboxPoolSpec = Type.Object(
  {
    appName: Type.String({ pattern: NAME_PATTERN, minLength: 1, maxLength: 63, description: 'The AppDefinition this pool belongs to.' }),
    poolName: Type.String({ pattern: NAME_PATTERN, minLength: 1, maxLength: 63, description: 'The pool name within the app.' }),
    replicas: Type.Integer({
      minimum: 0,
      maximum: 1000,
      description: 'Sandboxes kept warm; the scale subresource target. Initialised from minWarm; capped at maxSize.',
    }),
    ...poolSettings,
    mcpServer: Type.Optional(McpServerLaunchSpec),
  },
  { additionalProperties: false },
);
export type SandboxPoolSpec = Static<typeof SandboxPoolSpec>;

export const SandboxPoolStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, description: 'metadata.generation the status describes.' })),
  conditions: Type.Optional(Conditions),
  replicas: Type.Optional(
    Type.Integer({ minimum: 0, description: 'Warm sandboxes the pool is held at: spec.replicas capped at maxSize. Scale subresource status.' }),
  ),
  selector: Type.Optional(Type.String({ description: 'Label selector of the pool sandboxes, for the scale subresource and an HPA.' })),
  readyReplicas: Type.Optional(Type.Integer({ minimum: 0, description: 'Idle sandboxes ready to execute, as reported by the runtime that runs them.' })),
  busyReplicas: Type.Optional(Type.Integer({ minimum: 0, description: 'Sandboxes executing a request, as reported by the runtime that runs them.' })),
});
export type SandboxPoolStatus = Static<typeof SandboxPoolStatus>;
